"""Uncoalesced global accesses: warps touch more 32-byte sectors than their bytes need.

The excess is counted where the warp's request is split into sectors, at the L1. Whether it
costs L2 and DRAM bandwidth depends on what the L1 serves: a small vector read by every warp
(a layer-norm weight, a lookup table) is requested sector by sector but hits in L1. The
mechanism check compares the sectors that reached the L2 (global load sectors the L1 missed,
plus every store sector: the L1 writes through) with the traffic an ideal pattern needs.
"""

from keet.rules.base import (
    Check,
    Finding,
    KernelView,
    cite,
    clamp,
    locations,
    mechanism,
    num,
    pct,
    rule,
)

# Excess sectors above this share of all global sectors waste enough bandwidth to matter.
EXCESS_SHARE = 0.25
# Excess sectors the L1 serves cost only L1 lookups: a finding when the L1/shared data path is as busy
# as the l1_shared_bandwidth rule calls bound.
L1_BOUND_PCT = 60.0
# At least this share of the excess reaching the L2 makes it L2 and DRAM traffic; below it the L1 absorbs most of it.
REACH_SHARE = 0.5
# Excess reaching the L2 that is at least this share of all global sectors still wastes L2 and DRAM
# bandwidth worth a finding when the L1 absorbs the rest.
MIN_WASTE_SHARE = 0.1
REACHES_L2 = "reaches L2"
PARTLY_L1 = "partly served by L1"
SERVED_BY_L1 = "served by L1"


def sectors(k: KernelView) -> tuple[float, float, float]:
    """Global load sectors, store sectors (0 when not measured) and excess sectors."""
    return k.metric("global.load_sectors"), k.metric("global.store_sectors") or 0.0, k.metric("global.excess_sectors")


def wasted_at_l2(k: KernelView) -> float | None:
    """Excess sectors that reached the L2: sectors the L2 saw beyond an ideal pattern's traffic
    (at most the excess), or None without the L1 miss count."""
    miss = k.metric("global.load_sectors_l1_miss")
    if miss is None:
        return None
    loads, stores, excess = sectors(k)
    return clamp(miss + stores - (loads + stores - excess), 0.0, excess)


@mechanism(
    "excess-reaches-l2",
    "excess sectors that reach the L2 and DRAM or sectors the L1 serves",
    counters=("global.load_sectors_l1_miss", "global.load_sectors", "global.store_sectors", "global.excess_sectors"),
    collect="--section MemoryWorkloadAnalysis_Tables",
)
def excess_reaches_l2(k: KernelView) -> Check:
    wasted = wasted_at_l2(k)
    if wasted is None:
        return excess_reaches_l2.not_assessed(["global.load_sectors_l1_miss (l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum)"])
    loads, stores, excess = sectors(k)
    miss = k.metric("global.load_sectors_l1_miss")
    evidence = [k.evidence("global.load_sectors_l1_miss")]
    if wasted >= REACH_SHARE * excess:
        return Check(excess_reaches_l2.id, REACHES_L2, evidence,
                     f"The L1 missed {num(miss)} of the {num(loads)} global load sectors, so the excess travels on to the L2"
                     f"{' (every store sector does: the L1 writes through)' if stores else ''}.")  # fmt: skip
    if wasted >= MIN_WASTE_SHARE * (loads + stores):
        return Check(excess_reaches_l2.id, PARTLY_L1, evidence,
                     f"The L1 served part of it: it missed {num(miss)} of the {num(loads)} global load sectors, so only part of the "
                     "excess reaches the L2, and the estimate of what is at stake counts only that part.")  # fmt: skip
    return Check(
        excess_reaches_l2.id, SERVED_BY_L1, evidence,
        f"But the L1 served all but {num(miss)} of the {num(loads)} global load sectors: most of the excess never reached the "
        "L2, so it costs L1 lookups, not L2 or DRAM bandwidth (data that every warp re-reads, such as a small weight vector, "
        "is served by the L1).",
    )  # fmt: skip


@rule(
    "uncoalesced-global",
    "uncoalesced_global",
    "Global loads/stores move sectors the threads do not use",
    needs=("global.excess_sectors", "global.load_sectors", "sol.l2_pct"),
    collect="--section SourceCounters --section MemoryWorkloadAnalysis_Tables",
    checks=(excess_reaches_l2,),
    lines=("memory_l2_theoretical_sectors_global", "memory_l2_theoretical_sectors_global_ideal"),
)
def apply(k: KernelView) -> Finding | None:
    loads, stores, excess = sectors(k)
    total = loads + stores
    if total <= 0 or excess / total < EXCESS_SHARE:
        return None
    check = excess_reaches_l2(k)
    memory = max(k.metric("sol.l2_pct"), k.metric("sol.dram_pct") or 0.0)
    evidence = [k.evidence("global.excess_sectors"), k.evidence("global.load_sectors"), k.evidence("sol.l2_pct")]
    if k.metric("global.store_sectors") is not None:
        evidence.append(k.evidence("global.store_sectors"))
    if k.metric("sol.dram_pct") is not None:
        evidence.append(k.evidence("sol.dram_pct"))
    per_request = []
    for kind in ("load", "store"):
        name = f"global.{kind}_sectors_per_request"
        if k.metric(name) is not None:
            evidence.append(k.evidence(name))
            per_request.append(f"{num(k.metric(name))} sectors per {kind} request")
    lines = k.hot_lines("memory_l2_theoretical_sectors_global", ideal="memory_l2_theoretical_sectors_global_ideal")
    where = locations(lines, with_text=True)
    moved = f"{num(excess)} of the global-memory sectors the kernel moves ({num(loads)} loaded{', ' + num(stores) + ' stored' if stores else ''}) are excess"
    pattern = (f"the threads of a warp address scattered or strided locations, so most of every sector fetched is never used "
               f"({', '.join(per_request)})")  # fmt: skip
    if check.verdict == SERVED_BY_L1:
        # The excess costs L1 lookups only: worth a finding only where the L1/shared data path is
        # itself near its bound, and then for the global accesses' part of its work.
        l1 = k.metric("sol.l1_pct")
        if l1 is None or l1 < L1_BOUND_PCT or l1 > 100.5:  # above 100%: a short-kernel artefact
            return None
        evidence.append(k.evidence("sol.l1_pct", L1_BOUND_PCT, ">="))
        others = (k.metric("shared.wavefronts") or 0.0) + (k.metric("local.load_sectors") or 0.0) + (k.metric("local.store_sectors") or 0.0)
        for name in ("shared.wavefronts", "local.load_sectors", "local.store_sectors"):
            if k.metric(name):
                evidence.append(k.evidence(name))
        # impact = excess share of global sectors x L1 % / 100 x global sectors' share of the L1's
        # sectors and wavefronts (shared and local work is not the excess's)
        finding = Finding(
            category="uncoalesced_global",
            rule="uncoalesced-global",
            impact=clamp(excess / total * l1 / 100 * total / (total + others)),
            confidence=0.5,
            evidence=evidence,
            explanation=f"{moved}: {pattern}. The L1/shared data path runs at {pct(l1)} of peak.{where}",
            suggestions=[
                "The excess is L1 work only: it matters as far as the L1/shared data path is busy. Coalescing the accesses (consecutive threads on consecutive addresses) or vector loads of the re-read data reduce the lookups.",
                "Data that every warp reads (weights, tables) can be loaded once per block into shared memory or registers, or read through __ldg/constant memory when all lanes read the same address.",
                "Do not expect a DRAM or L2 gain from coalescing here: those sectors never left the SM.",
            ],
            source_lines=lines,
        )
        return cite(finding, check)
    # impact = share of sectors wasted at the L2 (the whole excess when the L1 misses are unknown) x max(L2 %, DRAM %)
    wasted = wasted_at_l2(k)
    share = (wasted if wasted is not None else excess) / total
    finding = Finding(
        category="uncoalesced_global",
        rule="uncoalesced-global",
        impact=clamp(share * min(memory, 100.0) / 100),
        confidence=0.9 if check.assessed else 0.7,
        evidence=evidence,
        explanation=(
            f"{moved}: {pattern}. That waste lands on the L2 ({pct(k.metric('sol.l2_pct'))} of peak)"
            f"{' and DRAM (' + pct(k.metric('sol.dram_pct')) + ')' if k.metric('sol.dram_pct') is not None else ''}.{where}"
        ),
        suggestions=[
            "Make consecutive threads (threadIdx.x) access consecutive addresses: swap the roles of the loop/thread indices, or transpose the data layout (structure of arrays instead of array of structures).",
            "For strided patterns that cannot change (e.g. a transpose), read coalesced tiles into shared memory and write them out coalesced from there (with the tile padded against bank conflicts).",
            "For gathers through an index array, sort or bucket the indices so that a warp's lanes fall into few 128-byte lines.",
            "Re-profile and compare memory_l2_theoretical_sectors_global with its _ideal value on the lines listed.",
        ],
        explains=("l2_bandwidth", "dram_bandwidth", "memory_latency", "l1_shared_bandwidth"),
        source_lines=lines,
    )
    return cite(finding, check)
