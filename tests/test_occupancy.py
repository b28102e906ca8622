"""Occupancy calculators against Nsight Compute's own launch__occupancy_limit_* values."""

from __future__ import annotations

from pathlib import Path

import pytest

from keet import load_profile
from perfmodel import occupancy
from perfmodel.hardware import gpu

PROFILES = Path(__file__).resolve().parents[1] / "profiles"


@pytest.mark.parametrize("gpu_id", ["h100", "h200"])
def test_nvidia_limits_match_nsight_compute_on_the_zoo(gpu_id):
    profile = load_profile(PROFILES / gpu_id / "zoo_all.ncu-rep.xz")
    hardware = gpu(gpu_id)
    checked = 0
    for kernel in profile.kernels:
        def value(name: str, kernel=kernel) -> float:
            return profile.value(kernel, name)

        computed = occupancy.nvidia(
            hardware, kernel.threads_per_block, kernel.registers_per_thread, kernel.shared_bytes_per_block or 0,
            shared_carveout_bytes=int(value("launch.shared_config")),
        )
        assert computed.limits["warps"] == value("occupancy.limit_warps"), kernel.name
        assert computed.limits["blocks"] == value("occupancy.limit_blocks"), kernel.name
        assert computed.limits["registers"] == value("occupancy.limit_registers"), kernel.name
        assert computed.limits["shared"] == value("occupancy.limit_shared"), kernel.name
        assert computed.theoretical * 100 == pytest.approx(value("occupancy.theoretical_pct")), kernel.name
        checked += 1
    assert checked == 34


def test_register_and_shared_limits_bind():
    h100 = gpu("h100")
    heavy = occupancy.nvidia(h100, 256, 255, 0)
    assert heavy.limiter == "registers" and heavy.blocks_per_sm == 1 and heavy.theoretical == pytest.approx(0.125)
    big_smem = occupancy.nvidia(h100, 256, 32, 128 * 1024)
    assert big_smem.limiter == "shared" and big_smem.blocks_per_sm == 1
    tiny_blocks = occupancy.nvidia(h100, 32, 32, 0)
    assert tiny_blocks.limiter == "blocks" and tiny_blocks.theoretical == pytest.approx(0.5)
    assert occupancy.nvidia(h100, 256, 256, 0).blocks_per_sm == 0  # more registers than a thread can address


def test_amd_cdna_vgpr_and_lds_limits():
    mi300x = gpu("mi300x")
    full = occupancy.amd_cdna(mi300x, 256, 64, 0)
    assert full.theoretical == pytest.approx(1.0)
    vgpr_heavy = occupancy.amd_cdna(mi300x, 256, 256, 0)
    assert vgpr_heavy.limiter == "registers" and vgpr_heavy.theoretical == pytest.approx(0.25)
    lds_heavy = occupancy.amd_cdna(mi300x, 256, 32, 64 * 1024)
    assert lds_heavy.limiter == "shared" and lds_heavy.blocks_per_sm == 1
