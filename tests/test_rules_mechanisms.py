"""Mechanism checks (issue 21, item 4): each rule confirms the mechanism it names with the counters
that distinguish it, cites them, and says "not assessed" with what to collect when they are absent.

All on real reports: the H100 zoo (profiles/h100/zoo_all), two H100 corpus files of PyTorch, CUB,
cuBLAS and cuDNN kernels (profiles/corpus/h100: part2, partpairs) and an optimize-loop capture.
Where the data hold no kernel with the other mechanism (no real profile has a per-thread local
array), the negative case is the same real kernel with the distinguishing counter set to what
the other mechanism would show (marked "derived"); the "not assessed" cases drop the counter.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import shared_profiles
from grounding import explanation_numbers, grounded

from keet import load_profile
from keet.profile import Kernel, Profile
from keet.rules import RULES, Finding, KernelView
from keet.rules.atomic_contention import HOT, SPREAD, hot_slice
from keet.rules.base import NOT_ASSESSED, OPCODE_TABLE, Check, Mechanism
from keet.rules.checks import NO_MMA, WARP_LEVEL, WARPGROUP, matrix_path
from keet.rules.register_spills import LOCAL_ARRAY, SPILLS, spills_or_local_array
from keet.rules.shared_bank_conflicts import ATOMICS, LOADS_STORES, conflicts_or_atomics
from keet.rules.uncoalesced_global import (
    PARTLY_L1,
    REACHES_L2,
    SERVED_BY_L1,
    excess_reaches_l2,
)
from keet.rules.warp_divergence import DIVERGENT, IDLE_LANES, divergent_branches

PROFILES = Path(__file__).resolve().parents[1] / "profiles"
CORPUS = PROFILES / "corpus" / "h100"


@pytest.fixture(scope="module")
def zoo() -> Profile:
    return shared_profiles.zoo("h100")


@pytest.fixture(scope="module")
def part2() -> Profile:
    """PyTorch index/scatter/sort kernels, CUB radix sort, cuBLAS nvjet (HGMMA)."""
    return load_profile(CORPUS / "h100_part2.ncu-rep.xz", launches={13, 14, 16, 18, 44})  # the launches the tests take


@pytest.fixture(scope="module")
def pairs() -> Profile:
    """The corpus before/after pairs: layer norms, cuBLAS nvjet (HGMMA), cuDNN layout kernels."""
    return load_profile(CORPUS / "h100_partpairs.ncu-rep.xz", launches={6, 7, 8, 21})  # the launches the tests take


def kernel(profile: Profile, key: int | str, name: str = "") -> Kernel:
    found = profile.kernel(key)
    assert name in found.name, (key, found.name)
    return found


def findings(profile: Profile, k: Kernel) -> list[Finding]:
    """Every rule's finding on one kernel (rules with their needs met), without ranking."""
    view, found = KernelView(profile, k), []
    for r in RULES:
        if all(view.metric(n) is not None for n in r.needs) and (f := r.apply(view)) is not None and f.impact >= 0.02:
            found.append(f)
    return found


def finding(profile: Profile, k: Kernel, category: str) -> Finding:
    found = [f for f in findings(profile, k) if f.category == category]
    assert found, (k.name, [f.category for f in findings(profile, k)])
    return found[0]


def check(f: Finding, mechanism: Mechanism) -> Check:
    return next(c for c in f.checks if c.mechanism == mechanism.id)


def changed(profile: Profile, k: Kernel, **values: float | None) -> Profile:
    """The profile with canonical metrics of one kernel replaced (None: removed)."""
    metrics = profile.metrics
    for name, value in values.items():
        rows = (metrics["kernel"] == k.id) & (metrics["metric"] == name) & (metrics["origin"] == "canonical")
        assert rows.any(), name
        metrics = metrics[~rows] if value is None else metrics.assign(value=metrics["value"].where(~rows, value))
    return dataclasses.replace(profile, metrics=metrics)


def without_opcode_tables(k: Kernel) -> Kernel:
    return dataclasses.replace(k, attributes={n: v for n, v in k.attributes.items() if "per_opcode" not in n})


def cited(f: Finding, c: Check) -> None:
    """A check is cited: its counters in the evidence, its sentence in the explanation, its
    numbers grounded in evidence, and its collect option when not assessed."""
    assert c in f.checks and c.text in f.explanation
    assert {e.metric for e in c.evidence} <= {e.metric for e in f.evidence}
    values = [v for e in f.evidence for v in (e.value, e.compared_with) if v is not None]
    assert all(grounded(n, values) for n in explanation_numbers(f.explanation)), f.explanation
    if not c.assessed:
        assert "not assessed" in c.text and c.collect and c.collect in c.text and c.missing
    assert f.as_dict()["checks"][f.checks.index(c)]["verdict"] == c.verdict


def suggests(f: Finding, *words: str) -> bool:
    return any(all(w in s for w in words) for s in f.suggestions)


# ---------------------------------------------------------------- declared checks


def test_rules_declare_their_mechanism_checks():
    declared = {r.id: r.checks for r in RULES}
    for rule_id, mechanism in [
        ("register-spills", spills_or_local_array), ("shared-bank-conflicts", conflicts_or_atomics),
        ("shared-atomics", conflicts_or_atomics), ("uncoalesced-global", excess_reaches_l2),
        ("tensor-compute", matrix_path), ("fp32-compute", matrix_path), ("fp64-compute", matrix_path),
        ("l1-shared-bandwidth", matrix_path), ("atomic-contention", hot_slice), ("warp-divergence", divergent_branches),
    ]:  # fmt: skip
        assert mechanism in declared[rule_id], rule_id
    for r in RULES:
        for m in r.checks:
            assert isinstance(m, Mechanism) and m.counters and m.collect.startswith("--") and m.question


# ---------------------------------------------------------------- spills vs local arrays


def test_spills_confirmed_by_ptxas_spill_counter(zoo):
    spill = kernel(zoo, "spill_kernel")
    f = finding(zoo, spill, "register_spills")
    c = check(f, spills_or_local_array)
    assert c.verdict == SPILLS and "local.spill_instructions" in {e.metric for e in c.evidence}
    assert next(e.value for e in c.evidence if e.metric == "local.spill_instructions") > 0
    cited(f, c)
    assert suggests(f, "__launch_bounds__(256, 4)") and f.confidence == 0.9


def test_spills_at_the_register_ceiling_get_no_cap_advice(zoo):
    """Derived: the spill kernel as if compiled to 255 registers, the most a thread can have."""
    spill = kernel(zoo, "spill_kernel")
    f = finding(changed(zoo, spill, **{"launch.registers_per_thread": 255.0}), spill, "register_spills")
    assert check(f, spills_or_local_array).verdict == SPILLS
    assert suggests(f, "the most a thread can have") and not suggests(f, "__launch_bounds__")


def test_spills_of_a_register_capped_kernel_in_the_optimize_loop():
    """A second real capture: occupancy_regs at a 128-register cap spills (ptxas marks 7.8 M)."""
    profile = load_profile(PROFILES / "optimize" / "h100" / "occupancy_regs" / "candidates" / "c001" / "profile.ncu-rep.xz")
    f = finding(profile, profile.kernels[0], "register_spills")
    assert check(f, spills_or_local_array).verdict == SPILLS


def test_local_array_is_not_called_spills(zoo):
    """Derived: the spill kernel with ptxas's spill count at 0, as a local array reports."""
    spill = kernel(zoo, "spill_kernel")
    profile = changed(zoo, spill, **{"local.spill_instructions": 0.0})
    f = finding(profile, spill, "register_spills")
    c = check(f, spills_or_local_array)
    assert c.verdict == LOCAL_ARRAY
    cited(f, c)
    assert "register spills" not in f.explanation.split(". ")[0] and "per-thread array" in f.explanation
    assert not suggests(f, "__launch_bounds__") and not suggests(f, "compiler more registers")
    assert suggests(f, "Do not raise the register cap") and suggests(f, "shared memory")


def test_spills_not_assessed_without_the_spill_counter(zoo):
    spill = kernel(zoo, "spill_kernel")
    profile = changed(zoo, spill, **{"local.spill_instructions": None})
    f = finding(profile, spill, "register_spills")
    c = check(f, spills_or_local_array)
    assert c.verdict == NOT_ASSESSED and "sass__inst_executed_register_spilling" in c.text
    cited(f, c)
    assert f.confidence <= 0.7 and suggests(f, "If `nvcc -Xptxas -v` reports spill stores")


def test_spill_check_without_local_memory(zoo):
    c = spills_or_local_array(KernelView(zoo, kernel(zoo, "triad_kernel")))
    assert c.verdict == "no local memory"


# ---------------------------------------------------------------- shared atomics vs bank conflicts


def test_bank_conflicts_of_loads_are_bank_conflicts(zoo):
    k = kernel(zoo, "bank_conflict_kernel")
    f = finding(zoo, k, "shared_bank_conflicts")
    c = check(f, conflicts_or_atomics)
    assert c.verdict == LOADS_STORES and next(e.value for e in c.evidence if e.metric == "shared.bank_conflicts_atomic") == 0
    cited(f, c)
    assert suggests(f, "tile[32][33]") and "atomic_contention" not in [x.category for x in findings(zoo, k)]


def test_shared_atomics_on_data_dependent_bins_are_atomic_contention(part2):
    """CUB's radix-sort histogram: 131,072 ATOMS, and the extra wavefronts are theirs."""
    k = kernel(part2, 16, "DeviceRadixSortHistogramKernel")
    found = findings(part2, k)
    assert "shared_bank_conflicts" not in [f.category for f in found]
    f = next(f for f in found if f.rule == "shared-atomics")
    assert f.category == "atomic_contention"
    c = check(f, conflicts_or_atomics)
    assert c.verdict == ATOMICS and f"{OPCODE_TABLE}[ATOMS]" not in c.text
    assert {"shared.bank_conflicts_atomic", "shared.atomic_instructions"} <= {e.metric for e in c.evidence}
    cited(f, c)
    assert suggests(f, "__match_any_sync") and not suggests(f, "Pad")


def test_mixed_conflicts_say_which_part_is_atomics(part2):
    """CUB's onesweep: 39% of the extra wavefronts are ATOMS, the rest stores: bank conflicts,
    weighed by the part padding can remove."""
    k = kernel(part2, 18, "DeviceRadixSortOnesweepKernel")
    f = finding(part2, k, "shared_bank_conflicts")
    c = check(f, conflicts_or_atomics)
    assert c.verdict == LOADS_STORES and "ATOMS" in c.text and "replays" in c.text
    cited(f, c)
    view = KernelView(part2, k)
    layout = view.metric("shared.bank_conflicts") - view.metric("shared.bank_conflicts_atomic")
    assert f.impact == pytest.approx(layout / view.metric("shared.wavefronts") * view.metric("sol.l1_pct") / 100)


def test_conflicts_not_assessed_when_atomics_ran_but_the_split_is_missing(part2):
    k = kernel(part2, 16, "DeviceRadixSortHistogramKernel")
    profile = changed(part2, k, **{"shared.bank_conflicts_atomic": None})
    found = findings(profile, k)
    assert "atomic_contention" not in [f.category for f in found]
    f = next(f for f in found if f.category == "shared_bank_conflicts")
    c = check(f, conflicts_or_atomics)
    assert c.verdict == NOT_ASSESSED and "ATOMS" in c.text and "op_atom" in c.text
    cited(f, c)
    assert f.confidence == 0.7 and suggests(f, "__match_any_sync")


def test_no_atomics_in_the_opcode_table_settles_it_without_the_split(zoo):
    k = kernel(zoo, "bank_conflict_kernel")
    profile = changed(zoo, k, **{"shared.bank_conflicts_atomic": None, "shared.atomic_instructions": None})
    f = finding(profile, k, "shared_bank_conflicts")
    c = check(f, conflicts_or_atomics)
    assert c.verdict == LOADS_STORES and f"{OPCODE_TABLE}[ATOMS]" in {e.metric for e in c.evidence}
    cited(f, c)


# ---------------------------------------------------------------- L1-served loads vs L2/DRAM waste


def test_uncoalesced_excess_that_misses_l1_is_l2_and_dram_waste(zoo):
    k = kernel(zoo, "uncoalesced_gather_kernel")
    f = finding(zoo, k, "uncoalesced_global")
    c = check(f, excess_reaches_l2)
    assert c.verdict == REACHES_L2
    cited(f, c)
    assert "lands on the L2" in f.explanation and "dram_bandwidth" in f.explains and f.impact > 0.7


@pytest.mark.parametrize("kid", [6, 7, 8])
def test_layer_norm_weights_served_by_l1_are_not_dram_waste(pairs, kid):
    """PyTorch's vectorized layer norm: 50-63% of its global sectors are "excess", but the L1
    serves them (the weight and bias vectors every row reads): no L2/DRAM waste is claimed."""
    k = kernel(pairs, kid, "vectorized_layer_norm_kernel")
    assert excess_reaches_l2(KernelView(pairs, k)).verdict == SERVED_BY_L1
    view = KernelView(pairs, k)
    assert view.metric("global.excess_sectors") >= 0.25 * (view.metric("global.load_sectors") + view.metric("global.store_sectors"))
    categories = [f.category for f in findings(pairs, k)]
    assert "uncoalesced_global" not in categories and "dram_bandwidth" in categories


def test_excess_partly_served_by_l1_counts_only_what_reaches_l2(part2):
    k = kernel(part2, 14, "_scatter_gather_elementwise_kernel")
    f = finding(part2, k, "uncoalesced_global")
    c = check(f, excess_reaches_l2)
    assert c.verdict == PARTLY_L1
    cited(f, c)
    view = KernelView(part2, k)
    total = view.metric("global.load_sectors") + view.metric("global.store_sectors")
    assert f.impact < view.metric("global.excess_sectors") / total * view.metric("sol.dram_pct") / 100 / 2


def test_uncoalesced_not_assessed_without_l1_misses(zoo):
    k = kernel(zoo, "uncoalesced_gather_kernel")
    profile = changed(zoo, k, **{"global.load_sectors_l1_miss": None})
    f = finding(profile, k, "uncoalesced_global")
    c = check(f, excess_reaches_l2)
    assert c.verdict == NOT_ASSESSED and "lookup_miss" in c.text
    cited(f, c)
    assert f.confidence == 0.7


# ---------------------------------------------------------------- wgmma / tensor cores


def test_hgmma_kernel_is_not_told_to_move_to_wgmma(part2):
    """cuBLAS nvjet at 95% of the tensor pipe on 17 M HGMMA: already on warpgroup MMA."""
    k = kernel(part2, 44, "nvjet_sm90")
    f = finding(part2, k, "tensor_compute")
    c = check(f, matrix_path)
    assert c.verdict == WARPGROUP and f"{OPCODE_TABLE}[HGMMA]" in {e.metric for e in c.evidence}
    cited(f, c)
    assert not suggests(f, "move from warp-level") and not suggests(f, "move to warpgroup")
    assert suggests(f, "already issues warpgroup MMA")
    l1 = finding(part2, k, "l1_shared_bandwidth")
    assert not suggests(l1, "move the inner product to tensor cores") and suggests(l1, "already runs as warpgroup MMA")


def test_hmma_kernel_on_hopper_is_told_to_move_to_wgmma(zoo):
    k = kernel(zoo, "tensor_mma_kernel")
    f = finding(zoo, k, "tensor_compute")
    c = check(f, matrix_path)
    assert c.verdict == WARP_LEVEL and "HGMMA" in c.text
    cited(f, c)
    assert suggests(f, "move from warp-level mma.sync/WMMA to warpgroup wgmma")


def test_kernel_without_mma_is_told_about_tensor_cores(zoo):
    f = finding(zoo, kernel(zoo, "fp32_fma_kernel"), "fp32_compute")
    assert check(f, matrix_path).verdict == NO_MMA
    assert suggests(f, "move it to tensor cores")


def test_wgmma_advice_not_assessed_without_the_opcode_table(part2):
    k = without_opcode_tables(kernel(part2, 44, "nvjet_sm90"))
    f = finding(part2, k, "tensor_compute")
    c = check(f, matrix_path)
    assert c.verdict == NOT_ASSESSED and OPCODE_TABLE in c.text
    cited(f, c)
    assert suggests(f, "If the kernel's SASS", "HGMMA") and not suggests(f, "On Hopper, move from warp-level")


# ---------------------------------------------------------------- global atomics: one hot slice or spread


def test_one_hot_l2_slice_confirms_same_address_contention(zoo):
    f = finding(zoo, kernel(zoo, "atomic_hot_kernel"), "atomic_contention")
    c = check(f, hot_slice)
    assert c.verdict == HOT and "serialised by the L2 slice" in f.explanation
    cited(f, c)


def test_index_add_atomics_spread_over_the_l2(part2):
    """PyTorch index_add (131,072 RED) spreads its updates: no hot slice."""
    c = hot_slice(KernelView(part2, kernel(part2, 13, "indexFuncLargeIndex")))
    assert c.verdict == SPREAD


def test_hot_slice_not_assessed_without_slice_counters(zoo):
    k = kernel(zoo, "atomic_hot_kernel")
    profile = changed(zoo, k, **{"l2.sectors_busiest_slice": None})
    f = finding(profile, k, "atomic_contention")
    c = check(f, hot_slice)
    assert c.verdict == NOT_ASSESSED and "lts__t_sectors.max" in c.text
    cited(f, c)


# ---------------------------------------------------------------- divergence: branches or idle lanes


def test_divergent_branches_confirm_divergence(zoo):
    f = finding(zoo, kernel(zoo, "divergent_kernel"), "warp_divergence")
    c = check(f, divergent_branches)
    assert c.verdict == DIVERGENT
    cited(f, c)
    assert suggests(f, "Make the branch condition uniform")


def test_idle_lanes_without_divergent_branches_are_not_called_branch_divergence(pairs):
    """cuDNN's NCHW->NHWC copy: 22.5 of 32 lanes active and no divergent branch target."""
    f = finding(pairs, kernel(pairs, 21, "nchwToNhwcKernel"), "warp_divergence")
    c = check(f, divergent_branches)
    assert c.verdict == IDLE_LANES
    cited(f, c)
    assert "take different paths" not in f.explanation and not suggests(f, "Make the branch condition uniform")
