"""The issue term: NVIDIA's one warp instruction per scheduler per clock, and the CDNA wave64
scheduler (a SIMD every 4 cycles, up to 5 instructions of different categories from different
waves), plus the MFMA bound by precision (perfmodel/terms/issue.py, docs/model.md)."""

from __future__ import annotations

import pytest

from perfmodel.features import KernelFeatures
from perfmodel.hardware import gpu
from perfmodel.model import _launch, predict
from perfmodel.terms import issue
from perfmodel.terms.base import ISOLATED


def work(pipes: dict[str, float], *, blocks: int = 304 * 8, threads: int = 256, counts: dict | None = None,
         flops: dict | None = None) -> KernelFeatures:
    counts = dict(counts or {})
    counts.setdefault("instructions", sum(pipes.values()))
    return KernelFeatures(name="k", grid_blocks=blocks, threads_per_block=threads, registers_per_thread=32, shared_bytes_per_block=0,
                          counts=counts, warp_instructions_by_pipe=pipes, flops=flops or {})


def issue_seconds(gpu_id: str, features: KernelFeatures) -> float:
    return issue.evaluate(_launch(gpu(gpu_id), features, ISOLATED)).sm["issue"]


def test_nvidia_issue_is_one_instruction_per_scheduler_per_clock():
    h100 = gpu("h100")
    features = work({"fp32": 1e9, "alu": 1e9}, blocks=132 * 8)
    launch = _launch(h100, features, ISOLATED)
    assert issue.evaluate(launch).sm["issue"] == pytest.approx(2e9 / 4 * launch.sm_seconds)


def test_cdna_valu_issue_takes_four_cycles_per_wave_instruction_like_the_pipe():
    """A wave64 VALU instruction holds its 16-lane SIMD 4 cycles: the issue bound of VALU-only work
    equals the FP32 pipe bound (64 lanes per CU per clock)."""
    mi300x = gpu("mi300x")
    features = work({"fp32": 1e9})
    launch = _launch(mi300x, features, ISOLATED)
    per_cu = issue.issue_cycles(launch)
    assert per_cu == pytest.approx(4 * 1e9 / 4)
    p = predict(mi300x, features)
    assert p.breakdown["issue"] == pytest.approx(p.breakdown["fma"])


def test_cdna_co_issues_up_to_five_categories_from_different_waves():
    mixed = {"fp32": 1e9, "uniform": 1e9, "branch": 1e9, "lsu": 2e9}
    counts = {"global_load_requests": 1e9}  # half the load/store pipe is VMEM, the rest LDS
    full = work(mixed, counts=counts)  # 8 waves per SIMD resident
    assert issue.categories(_launch(gpu("mi300x"), full, ISOLATED)) == {"valu": 1e9, "vmem": 1e9, "lds": 1e9, "salu": 1e9, "branch": 1e9}
    # five categories, equal counts, from different waves: one issue slot carries one of each
    assert issue.issue_cycles(_launch(gpu("mi300x"), full, ISOLATED)) == pytest.approx(4 * 1e9 / 4)
    # one wave per SIMD (a 4-wave workgroup per CU): a wave issues one instruction per slot
    lonely = work(mixed, counts=counts, blocks=304, threads=256)
    assert issue.issue_cycles(_launch(gpu("mi300x"), lonely, ISOLATED)) == pytest.approx(4 * 5e9 / 4)


def test_cdna_co_issue_needs_several_categories():
    """Work of one category cannot co-issue: the VALU category alone sets the bound."""
    valu = work({"fp32": 3e9, "alu": 2e9})
    assert issue.issue_cycles(_launch(gpu("mi300x"), valu, ISOLATED)) == pytest.approx(4 * 5e9 / 4)


def test_mfma_bound_by_precision():
    mi300x = gpu("mi300x")
    flops = {"mfma_f64": 256e9 * 304, "mfma_f32": 256e9 * 304, "mfma_f16": 1e12}
    features = work({"tensor": 1e6}, flops=flops)
    launch = _launch(mi300x, features, ISOLATED)
    out = issue.evaluate(launch)
    # FP64 and FP32 MFMA at 256 FLOPs/clk/CU each: 2e9 cycles on each of the 304 CUs (2e9 / 2.1 GHz);
    # FP16 is left to the tensor term
    assert out.sm["mfma"] == pytest.approx(2e9 / 2.1e9)
    assert not out.missing
    gfx950_work = work({"tensor": 1e6}, flops={"mfma_f6f4": 1e12})
    assert issue.evaluate(_launch(mi300x, gfx950_work, ISOLATED)).missing == ["mfma (mfma_f6f4 rate)"]


def test_the_issue_parameters_come_from_the_isa_files():
    for gpu_id in ("mi300x", "mi300a", "mi250x"):
        hardware = gpu(gpu_id)
        assert hardware.value("issue_interval_cycles") == 4 and hardware.value("issue_categories_per_cycle") == 5
    for gpu_id in ("h100", "h200", "b200", "a100"):
        assert gpu(gpu_id).value("issue_interval_cycles") is None
