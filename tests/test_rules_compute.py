"""The compute, issue, divergence, barrier and atomic rules on the real kernel zoo.

Each rule must rank its own zoo kernel first (on both GPUs), stay silent on kernels whose
bottleneck lies elsewhere, and explain itself only with numbers from its evidence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import shared_profiles
from grounding import NUMBER, grounded

from keet import load_profile
from keet.diagnosis import diagnose_kernel
from keet.rules import RULES, Evidence, KernelView

PROFILES = Path(__file__).resolve().parents[1] / "profiles"
MANIFEST = json.loads((PROFILES / "manifest.json").read_text())
GPUS = ("h100", "h200")
MINE = ("fp32_compute", "fp64_compute", "sfu_compute", "int_compute", "tensor_compute", "instruction_issue",
        "warp_divergence", "barrier_sync", "atomic_contention")  # fmt: skip

# category -> (its zoo kernel, the evidence it must show, a kernel it must stay silent on)
CASES = {
    "fp32_compute": ("fp32_fma_kernel", "pipe.fma_pct", "triad_kernel"),
    "fp64_compute": ("fp64_fma_kernel", "pipe.fp64_pct", "fp32_fma_kernel"),
    "sfu_compute": ("sfu_kernel", "pipe.xu_pct", "softmax_kernel"),
    "int_compute": ("int_hash_kernel", "pipe.alu_pct", "fp32_fma_kernel"),
    "tensor_compute": ("tensor_mma_kernel", "pipe.tensor_pct", "gemm_wmma_kernel"),
    "instruction_issue": ("issue_mix_kernel", "issue.active_pct", "fp32_fma_kernel"),
    "warp_divergence": ("divergent_kernel", "warp.active_threads", "fp32_fma_kernel"),
    "barrier_sync": ("barrier_kernel", "stall.barrier", "transpose_smem_conflict_kernel"),
    "atomic_contention": ("atomic_hot_kernel", "global.atomic_instructions", "pointer_chase_kernel"),
}


@pytest.fixture(scope="module")
def zoo():
    """The combined zoo report of each GPU, loaded once for the module."""
    return {gpu: shared_profiles.zoo(gpu) for gpu in GPUS}


def rule_for(category: str):
    return next(r for r in RULES if r.category == category)


def view(zoo, gpu: str, name: str) -> KernelView:
    profile = zoo[gpu]
    return KernelView(profile, profile.kernel(name))


def ranked(zoo, gpu: str, name: str) -> list:
    profile = zoo[gpu]
    return diagnose_kernel(profile, profile.kernel(name)).findings


def test_every_rule_is_registered_once_with_what_it_needs():
    for category in MINE:
        rules = [r for r in RULES if r.category == category]
        # one rule per category, named after it; atomic_contention also has shared-atomics
        # (ATOMS replays that Nsight Compute counts as bank conflicts: test_rules_mechanisms.py)
        assert [r.id for r in rules if r.id != "shared-atomics"] == [category.replace("_", "-")], category
        assert all(r.needs and r.collect.startswith("--section") for r in rules), category


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("category", MINE)
def test_rule_ranks_its_zoo_kernel_first(zoo, gpu, category):
    kernel, metric, _ = CASES[category]
    findings = ranked(zoo, gpu, kernel)
    assert findings and findings[0].category == category, [f.category for f in findings]
    top = findings[0]
    assert metric in {e.metric for e in top.evidence}
    assert 0 < top.impact <= 1 and 0 < top.confidence <= 1
    assert top.suggestions and top.explanation


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("category", MINE)
def test_rule_stays_silent_where_the_bottleneck_is_elsewhere(zoo, gpu, category):
    _, _, other = CASES[category]
    assert rule_for(category).apply(view(zoo, gpu, other)) is None


@pytest.mark.parametrize("gpu", GPUS)
def test_no_false_findings_outrank_the_intended_bottleneck(zoo, gpu):
    """On zoo kernels of other categories, none of these rules is ranked first."""
    profile = zoo[gpu]
    for entry in MANIFEST["kernels"]:
        if entry["category"] in MINE or entry["category"] == "tail_effect":
            continue  # tail_effect is FP32-bound while it runs: see the tail test below
        kernel = profile.kernels[entry["measured"][gpu]["combined_report_id"]]
        findings = diagnose_kernel(profile, kernel).findings
        assert not findings or findings[0].category not in MINE, (entry["kernel"], findings[0].category)


@pytest.mark.parametrize("gpu", GPUS)
def test_explanations_print_only_evidence(zoo, gpu):
    profile = zoo[gpu]
    checked = 0
    for kernel in profile.kernels:
        for finding in diagnose_kernel(profile, kernel).findings:
            if finding.category not in MINE:
                continue
            assert all(isinstance(e, Evidence) for e in finding.evidence)
            candidates = [e.value for e in finding.evidence] + [e.compared_with for e in finding.evidence if e.compared_with is not None]
            text = re.sub(r"\S+\.(cu|cuh|h|cpp|hpp):\d+", "", finding.explanation)
            text = re.sub(r"`[^`]*`", "", text)
            for token in NUMBER.findall(text):
                assert grounded(token, candidates), (kernel.name, finding.category, token, finding.explanation)
                checked += 1
    assert checked > 40


@pytest.mark.parametrize("gpu", GPUS)
def test_divergence_is_ranked_before_the_fp32_pipe_it_keeps_busy(zoo, gpu):
    findings = ranked(zoo, gpu, "divergent_kernel")
    categories = [f.category for f in findings]
    assert categories.index("warp_divergence") < categories.index("fp32_compute")
    divergence = findings[categories.index("warp_divergence")]
    assert "fp32_compute" in divergence.explains
    threads = next(e for e in divergence.evidence if e.metric == "warp.active_threads")
    assert threads.value < 8 and threads.relation == "<"
    # impact = idle lanes x SM throughput share
    sm = next(e.value for e in divergence.evidence if e.metric == "sol.sm_pct")
    assert divergence.impact == pytest.approx((1 - threads.value / 32) * sm / 100)
    assert any(line.line == 38 for line in divergence.source_lines)


@pytest.mark.parametrize("gpu", GPUS)
def test_issue_bound_mix_is_not_a_pipe_bottleneck(zoo, gpu):
    findings = ranked(zoo, gpu, "issue_mix_kernel")
    assert findings[0].category == "instruction_issue"
    issue = findings[0]
    busiest = next(e for e in issue.evidence if e.metric.startswith("pipe."))
    assert busiest.value < busiest.compared_with  # no pipe saturated
    assert {f.category for f in findings[1:]} <= {"int_compute", "fp32_compute"}
    assert all(f.impact * f.confidence < issue.impact * issue.confidence for f in findings[1:])


@pytest.mark.parametrize("gpu", GPUS)
def test_fp32_impact_scales_with_the_active_share_under_a_tail(zoo, gpu):
    """tail_effect_kernel: FMA pipe ~95% while active, but the SMs are idle ~45% of the time."""
    finding = rule_for("fp32_compute").apply(view(zoo, gpu, "tail_effect_kernel"))
    assert finding is not None
    values = {e.metric: e.value for e in finding.evidence}
    assert values["pipe.fma_pct"] > 90
    assert finding.impact == pytest.approx(values["pipe.fma_pct"] / 100 * values["sm_active_cycles"] / values["cycles_elapsed"])
    assert finding.impact < 0.6
    # a fully active FP32 kernel keeps nearly all of its pipe share
    full = rule_for("fp32_compute").apply(view(zoo, gpu, "fp32_fma_kernel"))
    assert full.impact > 0.88


@pytest.mark.parametrize("gpu", GPUS)
def test_realistic_sgemm_is_fp32_bound(zoo, gpu):
    findings = ranked(zoo, gpu, "sgemm_tiled_kernel")
    assert findings[0].category == "fp32_compute"
    assert 0.6 < findings[0].impact < 0.75


@pytest.mark.parametrize("gpu", GPUS)
def test_atomic_contention_reads_the_memory_waits(zoo, gpu):
    finding = ranked(zoo, gpu, "atomic_hot_kernel")[0]
    values = {e.metric: e.value for e in finding.evidence}
    waits = values["stall.long_scoreboard"] + values["stall.lg_throttle"] + values["stall.drain"]
    assert finding.impact == pytest.approx(min(1.0, waits / values["issue.cycles_per_issue"]))
    assert values["sol.memory_pct"] < 5 and values["global.atomic_instructions"] > 0
    assert "memory_latency" in finding.explains
    assert finding.source_lines and finding.source_lines[0].file.endswith("atomic_contention.cu")


@pytest.mark.parametrize("gpu", GPUS)
def test_barrier_impact_is_the_barrier_share_of_cpi(zoo, gpu):
    finding = ranked(zoo, gpu, "barrier_kernel")[0]
    values = {e.metric: e.value for e in finding.evidence}
    assert finding.impact == pytest.approx(values["stall.barrier"] / values["issue.cycles_per_issue"])
    assert 0.5 < finding.impact < 0.65


@pytest.mark.parametrize("gpu", GPUS)
def test_negligible_divergence_is_not_reported(zoo, gpu):
    # tiny_kernel: a third of a warp active, but the SMs are essentially idle
    assert rule_for("warp_divergence").apply(view(zoo, gpu, "tiny_kernel")) is None


def test_reduced_capture_is_not_assessed_instead_of_guessed():
    profile = load_profile(PROFILES / "h100" / "reduced" / "zoo_all_sol.ncu-rep.xz")
    diagnosis = diagnose_kernel(profile, profile.kernel("fp32_fma_kernel"))
    assert not {f.category for f in diagnosis.findings} & set(MINE)
    not_assessed = {n.category: n for n in diagnosis.not_assessed}
    assert set(MINE) <= set(not_assessed)
    assert all(not_assessed[c].missing and not_assessed[c].collect.startswith("--section") for c in MINE)
