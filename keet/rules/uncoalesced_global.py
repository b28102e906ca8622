"""Uncoalesced global accesses: warps touch more 32-byte sectors than their bytes need."""

from keet.rules.base import Finding, KernelView, clamp, locations, num, pct, rule

# Excess sectors above this share of all global sectors waste enough bandwidth to matter.
EXCESS_SHARE = 0.25


@rule(
    "uncoalesced-global",
    "uncoalesced_global",
    "Global loads/stores move sectors the threads do not use",
    needs=("global.excess_sectors", "global.load_sectors", "sol.l2_pct"),
    collect="--section SourceCounters --section MemoryWorkloadAnalysis_Tables",
)
def apply(k: KernelView) -> Finding | None:
    excess = k.metric("global.excess_sectors")
    sectors = k.metric("global.load_sectors") + (k.metric("global.store_sectors") or 0.0)
    if sectors <= 0 or excess / sectors < EXCESS_SHARE:
        return None
    share = excess / sectors
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
    return Finding(
        category="uncoalesced_global",
        rule="uncoalesced-global",
        impact=clamp(share * min(memory, 100.0) / 100),
        confidence=0.9,
        evidence=evidence,
        explanation=(
            f"{num(excess)} of the global-memory sectors the kernel moves ({num(k.metric('global.load_sectors'))} loaded"
            f"{', ' + num(k.metric('global.store_sectors')) + ' stored' if k.metric('global.store_sectors') else ''}) are excess: the threads of "
            f"a warp address scattered or strided locations, so most of every sector fetched is never used "
            f"({', '.join(per_request)}). That waste lands on the L2 ({pct(k.metric('sol.l2_pct'))} of peak)"
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
