"""Occupancy calculators against Nsight Compute's own launch__occupancy_limit_* values."""

from __future__ import annotations

import pytest
import shared_profiles

from perfmodel import occupancy
from perfmodel.hardware import gpu


@pytest.mark.parametrize("gpu_id", ["h100", "h200"])
def test_nvidia_limits_match_nsight_compute_on_the_zoo(gpu_id):
    profile = shared_profiles.zoo(gpu_id)
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


def test_for_gpu_dispatches_by_vendor():
    for gpu_id in ("h100", "a100", "b200"):
        hardware = gpu(gpu_id)
        assert occupancy.for_gpu(hardware, 256, 64, 4096) == occupancy.nvidia(hardware, 256, 64, 4096)
    for gpu_id in ("mi300x", "mi300a", "mi250x"):
        hardware = gpu(gpu_id)
        assert occupancy.for_gpu(hardware, 256, 64, 4096) == occupancy.amd_cdna(hardware, 256, 64, 4096)


def test_same_launch_differs_between_an_sm_and_a_cu():
    """256 threads, 32 registers, 48 KiB shared: H100 fits 4 blocks per SM (shared limit, 50% of 64
    warps); a CDNA CU has 64 KiB of LDS, so 1 block = 4 of its 32 wave slots."""
    h100 = occupancy.for_gpu(gpu("h100"), 256, 32, 48 * 1024)
    cu = occupancy.for_gpu(gpu("mi300x"), 256, 32, 48 * 1024)
    assert (h100.blocks_per_sm, h100.limiter, h100.warps_per_block) == (4, "shared", 8)
    assert (cu.blocks_per_sm, cu.limiter, cu.warps_per_block) == (1, "shared", 4)
    assert cu.theoretical == pytest.approx(4 / 32)


def test_amd_wavefront_vgpr_granule_and_waves_per_simd():
    mi250x = gpu("mi250x")
    # 100 VGPRs round up to 104 (granule 8): 512 // 104 = 4 waves per SIMD, 16 per CU.
    occ = occupancy.for_gpu(mi250x, 64, 100, 0)
    assert occ.warps_per_block == 1 and occ.blocks_per_sm == 16 and occ.limiter == "registers"
    # AGPRs share the file: 64 VGPRs + 64 AGPRs allocate 128, 4 waves per SIMD.
    assert occupancy.for_gpu(mi250x, 256, 64, 0, agprs_per_thread=64).blocks_per_sm == 4
    # 1024 threads = 16 wavefronts: 2 workgroups fill the 32 wave slots.
    assert occupancy.for_gpu(mi250x, 1024, 32, 0).blocks_per_sm == 2


def test_single_wave_workgroups_use_no_barrier_slot():
    """LLVM AMDGPUBaseInfo getMaxWorkGroupsPerCU: one-wave workgroups are limited by wave slots (32),
    multi-wave ones also by the 16 barriers."""
    mi300x = gpu("mi300x")
    assert occupancy.for_gpu(mi300x, 64, 32, 0).blocks_per_sm == 32
    assert occupancy.for_gpu(mi300x, 32, 32, 0).blocks_per_sm == 32
    assert occupancy.for_gpu(mi300x, 128, 32, 0).blocks_per_sm == 16


def test_cdna_agprs_start_at_the_vgprs_aligned_to_the_accum_offset_granule():
    """Unified file (gfx90a/gfx942): AGPRs follow the VGPRs aligned to 4 (ACCUM_OFFSET granule),
    the sum allocated in granules of 8: 65 VGPRs + 60 AGPRs = 68 + 60 = 128, four waves per SIMD
    (rounding each to 8 first would give 72 + 64 = 136 and three)."""
    mi300x = gpu("mi300x")
    assert mi300x.value("agpr_offset_granule") == 4 and mi300x.value("agprs_unified") == 1
    occ = occupancy.for_gpu(mi300x, 64, 65, 0, agprs_per_thread=60)
    assert occ.limits["registers"] == 4 * 4


def test_cdna_sgpr_and_lds_granules_come_from_the_isa_file():
    mi300x = gpu("mi300x")
    # 90 SGPRs allocate 96 (granule 16): 800 // 96 = 8 waves per SIMD, the wave-slot limit
    assert occupancy.for_gpu(mi300x, 64, 16, 0, sgprs_per_wave=90).limits["sgprs"] == 32
    # 110 SGPRs allocate 112: 7 waves per SIMD, 28 single-wave workgroups per CU
    assert occupancy.for_gpu(mi300x, 64, 16, 0, sgprs_per_wave=110).limits["sgprs"] == 28
    # LDS in 512-byte granules: 8 KiB + 1 byte takes 8.5 KiB, 7 workgroups in 64 KiB
    assert mi300x.value("lds_alloc_granule_bytes") == 512
    assert occupancy.for_gpu(mi300x, 256, 16, 8 * 1024 + 1).limits["shared"] == 7


def test_cdna1_has_separate_vgpr_and_agpr_files():
    """gfx908 (CDNA1): VGPRs and AGPRs live in two 256-entry files, each limiting on its own. An
    MI100-like CU: the MI250X file's launch limits over the gfx908 ISA's register facts."""
    import dataclasses

    from perfmodel.hardware import isa

    mi250x = gpu("mi250x")
    register_facts = ("agprs_unified", "vgprs_per_simd", "max_vgprs_per_wave", "register_alloc_unit_per_warp", "max_warps_per_sm",
                      "agprs_per_simd")
    cdna1 = dataclasses.replace(mi250x, arch="gfx908", isa=isa("gfx908"),
                                params={k: v for k, v in mi250x.params.items() if k not in register_facts})
    assert cdna1.value("agprs_unified") == 0 and cdna1.value("vgprs_per_simd") == 256
    occ = occupancy.amd_cdna(cdna1, 64, 64, 0, agprs_per_thread=128)
    # 64 VGPRs: 4 waves per SIMD of the VGPR file; 128 AGPRs: 2 of the AGPR file, which binds
    assert occ.limits["registers"] == 4 * 4 and occ.limits["agprs"] == 2 * 4 and occ.blocks_per_sm == 8


def test_the_cdna_calculator_runs_on_an_isa_file_alone():
    """A profile that names its gfx arch but no GPU of the database: the arch's ISA file sizes the
    occupancy; on a GPU of that arch the GPU file gives the same limits."""
    for gpu_id in ("mi300x", "mi300a", "mi250x"):
        hardware = gpu(gpu_id)
        for launch in ((256, 64, 4096), (64, 100, 0), (1024, 32, 0), (128, 65, 8193)):
            on_isa = occupancy.amd_cdna(hardware.isa, *launch, sgprs_per_wave=100, agprs_per_thread=32)
            assert on_isa == occupancy.amd_cdna(hardware, *launch, sgprs_per_wave=100, agprs_per_thread=32), (gpu_id, launch)


def test_amd_isa_is_the_profiles_arch_else_the_assumed_one():
    from perfmodel.hardware import assumed_isa, isa

    assert occupancy.amd_isa("gfx90a:sramecc+:xnack-") == (isa("gfx90a"), True)
    assert occupancy.amd_isa("gfx940") == (isa("gfx942"), True)  # an alias of the gfx942 file
    assumed = assumed_isa("amd")
    assert occupancy.amd_isa(None) == (assumed, False) and occupancy.amd_isa("gfx1100") == (assumed, False)
    # gfx950's file holds no occupancy facts (yet): assumed, not half-known
    assert "gfx950" not in occupancy.amd_occupancy_isas() and occupancy.amd_isa("gfx950") == (assumed, False)
    assert {"gfx908", "gfx90a", "gfx942"} <= set(occupancy.amd_occupancy_isas())


def test_what_if_budgets_fit_exactly_one_more_wave_or_workgroup():
    from perfmodel.hardware import isa

    gfx942, gfx908 = isa("gfx942"), isa("gfx908")
    # 512 VGPRs per lane shared by 3 waves, granule 8: 168; gfx908's 256 by 3, granule 4: 84
    assert occupancy.amd_vgpr_budget(gfx942, 3) == 168 and occupancy.amd_vgpr_budget(gfx908, 3) == 84
    assert occupancy.amd_vgpr_budget(gfx942, 9) == 0 and occupancy.amd_vgpr_budget(gfx908, 10) == 24  # 8 and 10 slots
    assert occupancy.amd_sgpr_budget(gfx942, 8) == 96  # 800 // 8 = 100, down to the granule of 16
    assert occupancy.amd_lds_budget(gfx942, 3) == 21504  # 65536 // 3 = 21845, down to 512-byte blocks
    # the budget is the edge: at it the waves fit, one register more and they do not
    for waves in range(1, 9):
        budget = occupancy.amd_vgpr_budget(gfx942, waves)
        assert occupancy.amd_cdna(gfx942, 64, budget, 0).waves_per_simd["registers"] >= waves
        assert occupancy.amd_cdna(gfx942, 64, budget + 1, 0).waves_per_simd["registers"] < waves
    for workgroups in range(1, 9):
        budget = occupancy.amd_lds_budget(gfx942, workgroups)
        assert occupancy.amd_cdna(gfx942, 256, 32, budget).limits["shared"] >= workgroups
        assert occupancy.amd_cdna(gfx942, 256, 32, budget + 1).limits["shared"] < workgroups
    with pytest.raises(ValueError):
        occupancy.amd_vgpr_budget(gfx942, 0)


def test_lifted_is_the_occupancy_without_a_limit():
    from perfmodel.hardware import isa

    # 128 VGPRs + 64 AGPRs allocate 192 of 512: 2 waves per SIMD, two 4-wave workgroups per CU
    occ = occupancy.amd_cdna(isa("gfx942"), 256, 128, 0, agprs_per_thread=64)
    assert occ.limiter == "registers" and occ.warps_per_sm == 8 and occ.waves_per_simd == {"registers": 2}
    lifted = occ.lifted("registers")
    assert "registers" not in lifted.limits and lifted.warps_per_sm == 32 and lifted.limiter == "warps"
    heavy = occupancy.nvidia(gpu("h100"), 256, 255, 0)
    assert heavy.lifted("registers").blocks_per_sm == 8  # then the 64 warp slots of an SM
    with pytest.raises(ValueError):
        occ.lifted("warps")
