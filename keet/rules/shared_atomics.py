"""Shared-memory atomic contention: ATOMS on data-dependent bins serialise within a warp.

A shared-memory atomic whose lanes update the same address (or addresses in one bank) is
replayed once per collision; Nsight Compute counts those replays as bank conflicts of the
atomic instructions (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom). With histogram or
counting bins chosen by the data, the replays follow the data's distribution, not the array's
layout, so padding the array (the bank-conflict remedy) does not remove them; aggregating equal
bins within the warp, or privatising the bins per warp, does.
"""

from keet.rules.base import Finding, KernelView, cite, clamp, num, pct, rule
from keet.rules.shared_bank_conflicts import (
    ATOMICS,
    CONFLICT_SHARE,
    conflicts_or_atomics,
)


@rule(
    "shared-atomics",
    "atomic_contention",
    "Shared-memory atomics replayed on colliding addresses multiply shared-memory wavefronts",
    needs=("shared.bank_conflicts", "shared.wavefronts", "sol.l1_pct"),
    collect="--section MemoryWorkloadAnalysis_Tables --section SpeedOfLight",
    checks=(conflicts_or_atomics,),
)
def apply(k: KernelView) -> Finding | None:
    conflicts, wavefronts, l1 = (k.metric(n) for n in ("shared.bank_conflicts", "shared.wavefronts", "sol.l1_pct"))
    atomic = k.metric("shared.bank_conflicts_atomic")  # absent: shared-bank-conflicts says it was not assessed
    if atomic is None or wavefronts <= 0 or conflicts / wavefronts < CONFLICT_SHARE:
        return None
    check = conflicts_or_atomics(k)
    if check.verdict != ATOMICS:
        return None  # mostly loads' and stores' conflicts: shared-bank-conflicts reports them
    share = atomic / wavefronts
    evidence = [k.evidence("shared.bank_conflicts_atomic"), k.evidence("shared.bank_conflicts"), k.evidence("shared.wavefronts"), k.evidence("sol.l1_pct")]
    if k.has("shared.atomic_wavefronts"):
        evidence.append(k.evidence("shared.atomic_wavefronts"))
    # impact = atomic replay share of shared wavefronts x L1/shared throughput share (as for bank conflicts)
    finding = Finding(
        category="atomic_contention",
        rule="shared-atomics",
        impact=clamp(share * min(l1, 100.0) / 100),
        confidence=0.9 if check.verdict == ATOMICS else 0.7,
        evidence=evidence,
        explanation=(
            f"{num(atomic)} of the kernel's {num(wavefronts)} shared-memory wavefronts replay atomic instructions: lanes of a "
            f"warp that update the same bin, or bins in one bank, are serialised, once per collision, while the L1/shared data "
            f"path runs at {pct(l1)} of peak. When the bins are chosen by the data (a histogram, radix-sort digit counts), the "
            "number of replays follows the data's distribution, not the array's layout: padding does not remove them."
        ),
        suggestions=[
            "Aggregate equal bins within the warp before the atomic: __match_any_sync(__activemask(), bin) gives each lane the set of lanes with its bin; one leader per set adds __popc(set) (or the set's sum), so a warp issues one update per distinct bin.",
            "Privatise the bins per warp: one copy of the histogram per warp in shared memory (bins x warps, each copy padded to start in another bank), merged once at the end, so only lanes of one warp collide and never across warps.",
            "For skewed data with a few hot bins, count those bins in registers (or warp-reduce them with __reduce_add_sync) and add them once per warp; or partition the keys first so that a warp's lanes hit distinct bins.",
            "Re-profile and check shared.bank_conflicts_atomic against shared.atomic_wavefronts: replays per atomic instruction fall toward zero when lanes no longer collide.",
        ],
        explains=("l1_shared_bandwidth", "instruction_issue", "memory_latency"),
    )
    return cite(finding, check)
