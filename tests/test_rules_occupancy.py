"""The occupancy, grid, launch, spill and latency rules on the real zoo captures (profiles/).

Each rule must rank its zoo kernel first (see the accuracy harness, keet/accuracy.py,
and test_tail_effect_fires) and must stay silent where its problem is absent, in particular on
kernels whose occupancy is low but which are not latency-bound (sgemm_tiled, gemm_wmma).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import shared_profiles
from grounding import NUMBER, grounded

from keet.diagnosis import diagnose_kernel
from keet.profile import Profile
from keet.rules import RULES, Finding, KernelView
from perfmodel.hardware import gpu as hardware_gpu

PROFILES = Path(__file__).resolve().parents[1] / "profiles"
MANIFEST = json.loads((PROFILES / "manifest.json").read_text())
GPUS = ("h100", "h200")
MINE = (
    "occupancy_registers", "occupancy_shared_memory", "occupancy_block_limit", "small_grid", "tail_effect",
    "launch_overhead", "register_spills", "memory_latency",
)  # fmt: skip
FIRST = [
    ("occupancy_regs_kernel", "occupancy_registers"),
    ("occupancy_smem_kernel", "occupancy_shared_memory"),
    ("occupancy_blocks_kernel", "occupancy_block_limit"),
    ("small_grid_saxpy_kernel", "small_grid"),
    ("pointer_chase_kernel", "memory_latency"),
    ("spill_kernel", "register_spills"),
    ("tiny_kernel", "launch_overhead"),
]
# kernel -> categories of these rules that must not fire on it
ABSENT = [
    ("sgemm_tiled_kernel", ("occupancy_registers", "occupancy_shared_memory", "occupancy_block_limit", "memory_latency")),
    ("gemm_wmma_kernel", ("occupancy_registers", "occupancy_shared_memory", "occupancy_block_limit", "memory_latency")),
    ("tail_effect_kernel", ("occupancy_registers", "memory_latency", "small_grid")),
    ("occupancy_regs_kernel", ("occupancy_shared_memory", "occupancy_block_limit", "memory_latency", "tail_effect")),
    ("occupancy_smem_kernel", ("occupancy_registers", "memory_latency")),
    ("occupancy_blocks_kernel", ("occupancy_registers", "occupancy_shared_memory", "tail_effect", "memory_latency")),
    ("tiny_kernel", ("small_grid", "occupancy_block_limit", "memory_latency")),
    ("small_grid_saxpy_kernel", ("memory_latency", "launch_overhead", "occupancy_registers")),
    ("atomic_hot_kernel", ("memory_latency",)),
    ("triad_kernel", ("memory_latency", "register_spills", "tail_effect")),
    ("tensor_mma_kernel", ("small_grid", "tail_effect")),
    ("l2_reread_kernel", ("tail_effect", "small_grid")),
    ("sgemm_naive_kernel", ("tail_effect",)),
    ("layernorm_kernel", ("occupancy_registers",)),
    ("pointer_chase_kernel", ("occupancy_registers", "occupancy_shared_memory", "occupancy_block_limit")),
]


@pytest.fixture(scope="module")
def zoo() -> dict[str, Profile]:
    return {gpu: shared_profiles.zoo(gpu) for gpu in GPUS}  # the manifest's combined reports


def ranked(profile: Profile, kernel: str) -> list[Finding]:
    return diagnose_kernel(profile, profile.kernel(kernel)).findings


def finding(profile: Profile, kernel: str, category: str) -> Finding:
    found = [f for f in ranked(profile, kernel) if f.category == category]
    assert found, f"no {category} finding for {kernel}"
    return found[0]


def evidence(f: Finding, metric: str):
    return next(e for e in f.evidence if e.metric == metric)


def test_rules_registered():
    assert {r.category for r in RULES} >= set(MINE)


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("kernel, category", FIRST)
def test_ranked_first(zoo, gpu, kernel, category):
    findings = ranked(zoo[gpu], kernel)
    assert findings and findings[0].category == category, [f.category for f in findings]
    assert 0 < findings[0].impact <= 1 and 0 < findings[0].confidence <= 1


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("kernel, categories", ABSENT)
def test_does_not_fire(zoo, gpu, kernel, categories):
    assert not {f.category for f in ranked(zoo[gpu], kernel)} & set(categories)


@pytest.mark.parametrize("gpu", GPUS)
def test_no_false_first_on_the_zoo(zoo, gpu):
    """Where one of these rules ranks first, it is the kernel's intended category."""
    for entry in MANIFEST["kernels"]:
        findings = diagnose_kernel(zoo[gpu], zoo[gpu].kernels[entry["measured"][gpu]["combined_report_id"]]).findings
        if findings and findings[0].category in MINE:
            assert findings[0].category == entry["category"], entry["kernel"]


@pytest.mark.parametrize("gpu", GPUS)
def test_explanation_numbers_are_evidence(zoo, gpu):
    checked = set()
    for kernel in zoo[gpu].kernels:
        view = KernelView(zoo[gpu], kernel)
        for f in diagnose_kernel(zoo[gpu], kernel).findings:
            if f.category not in MINE:
                continue
            checked.add(f.category)
            candidates = [e.value for e in f.evidence] + [e.compared_with for e in f.evidence if e.compared_with is not None]
            for text in NUMBER.findall(f.explanation):
                assert grounded(text, candidates), (f.category, text, f.explanation)
            for e in f.evidence:  # canonical metrics, as the profile holds them
                assert view.metric(e.metric) == e.value
    assert checked == set(MINE)


@pytest.mark.parametrize("gpu", GPUS)
def test_occupancy_registers_numbers(zoo, gpu):
    f = finding(zoo[gpu], "occupancy_regs_kernel", "occupancy_registers")
    limit = evidence(f, "occupancy.limit_registers")
    assert (limit.value, limit.compared_with, limit.relation) == (1, 8, "<")
    assert evidence(f, "launch.registers_per_thread").value == 255
    # 8 -> 64 warps hides 7/8 of the long-scoreboard time; the roofline is far (< 5%).
    latency = evidence(f, "stall.long_scoreboard").value / evidence(f, "issue.cycles_per_issue").value
    assert f.impact == pytest.approx(latency * 7 / 8, rel=1e-6)
    assert f.explains == ("memory_latency",)
    text = " ".join(f.suggestions)
    assert "__launch_bounds__(256, 2)" in text and "-maxrregcount=128" in text and "32 registers or fewer" in text


@pytest.mark.parametrize("gpu", GPUS)
def test_occupancy_shared_memory_numbers(zoo, gpu):
    f = finding(zoo[gpu], "occupancy_smem_kernel", "occupancy_shared_memory")
    assert evidence(f, "occupancy.limit_shared").value == 1
    assert evidence(f, "launch.shared_dynamic").value == 131072
    # 233,472 B per SM / 2 blocks - 1,024 B driver reserve = 115,712 B: save 15,360 B of 131,072.
    assert "saving 15,360 B" in " ".join(f.suggestions)


@pytest.mark.parametrize("gpu", GPUS)
def test_occupancy_block_limit_numbers(zoo, gpu):
    f = finding(zoo[gpu], "occupancy_blocks_kernel", "occupancy_block_limit")
    limit = evidence(f, "occupancy.limit_blocks")
    assert (limit.value, limit.compared_with) == (32, 48)  # registers (40 per thread) allow 48 one-warp blocks
    assert evidence(f, "launch.block_size").value == 32
    assert "at least 64 threads" in f.suggestions[0]


@pytest.mark.parametrize("gpu", GPUS)
def test_small_grid_numbers(zoo, gpu):
    f = finding(zoo[gpu], "small_grid_saxpy_kernel", "small_grid")
    assert evidence(f, "launch.grid_size").value == 8 and evidence(f, "launch.sm_count").value == 132
    assert f.impact <= 1 - 8 / 132
    assert "at least 132 blocks" in f.suggestions[0] and "264" in f.suggestions[0]


@pytest.mark.parametrize("gpu", GPUS)
def test_launch_overhead_numbers(zoo, gpu):
    f = finding(zoo[gpu], "tiny_kernel", "launch_overhead")
    duration = evidence(f, "duration")
    # the launch cost measured on that GPU (its hardware file), not one constant for every GPU
    cost = hardware_gpu(gpu).require("launch_overhead_ns")
    assert duration.compared_with == cost and duration.relation == "<"
    assert f.impact == pytest.approx(cost / (cost + duration.value))


@pytest.mark.parametrize("gpu", GPUS)
def test_register_spills_numbers(zoo, gpu):
    findings = ranked(zoo[gpu], "spill_kernel")
    f = findings[0]
    assert f.category == "register_spills" and "l2_bandwidth" in f.explains
    assert "l2_bandwidth" in [g.category for g in findings[1:]]  # the symptom is still reported, after its cause
    assert evidence(f, "local.load_sectors").value > 100 * evidence(f, "global.load_sectors").value
    assert f.source_lines and f.source_lines[0].file.endswith("register_spill.cu") and f.source_lines[0].line == 29
    assert "__launch_bounds__(256, 4) allows 64 registers" in " ".join(f.suggestions)


@pytest.mark.parametrize("gpu", GPUS)
def test_memory_latency_numbers(zoo, gpu):
    f = finding(zoo[gpu], "pointer_chase_kernel", "memory_latency")
    share = evidence(f, "stall.long_scoreboard").value / evidence(f, "issue.cycles_per_issue").value
    busiest = max(e.value for e in f.evidence if e.metric.startswith("sol."))
    assert share > 0.9 and f.impact == pytest.approx(share * (1 - busiest / 100))
    assert evidence(f, "occupancy.achieved_pct").value > 90


@pytest.mark.parametrize("gpu", GPUS)
def test_tail_effect_fires(zoo, gpu):
    """1.106 waves: the second wave's time is spent on 0.106 waves of work.

    The kernel is FP32-bound while it runs, and the fp32 rule claims its active time
    (FMA pipe x SM active share, ~0.52) above the tail's idle share (~0.45), so the tail
    ranks second here; see the report for the ranking question this leaves open.
    """
    findings = ranked(zoo[gpu], "tail_effect_kernel")
    f = finding(zoo[gpu], "tail_effect_kernel", "tail_effect")
    waves = evidence(f, "launch.waves_per_sm").value
    assert waves == pytest.approx(1.106, abs=1e-3)
    assert f.impact == pytest.approx((2 - waves) / 2)
    assert f.confidence == 0.9  # the measured SM active share confirms the idle tail
    assert "tail_effect" in [g.category for g in findings[:2]]
    assert "launch 132 blocks" in f.suggestions[0]


def without_attributes(profile: Profile, kernel: str) -> KernelView:
    view = KernelView(profile, profile.kernel(kernel))
    view.device = dataclasses.replace(view.device, attributes={})
    return view


@pytest.mark.parametrize(
    "kernel, category",
    [*FIRST, ("tail_effect_kernel", "tail_effect")],
)
def test_degrades_without_device_attributes(zoo, kernel, category):
    """CSV exports may lack device attributes: the rules still judge, with plainer suggestions."""
    rule = next(r for r in RULES if r.category == category)
    f = rule.apply(without_attributes(zoo["h100"], kernel))
    assert f is not None and f.category == category and f.suggestions
    assert not math.isnan(f.impact)
