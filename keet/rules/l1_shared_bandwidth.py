"""L1/shared-memory bandwidth: the SM's L1TEX data path (shared memory and L1 hits) is saturated."""

from keet.rules.base import Finding, KernelView, cite, clamp, pct, rule
from keet.rules.checks import NO_MMA, WARP_LEVEL, WARPGROUP, matrix_path

# At this share of peak L1/shared throughput and above, the L1TEX data path sets the pace.
BOUND_PCT = 60.0


@rule(
    "l1-shared-bandwidth",
    "l1_shared_bandwidth",
    "L1/shared-memory throughput near its peak",
    needs=("sol.l1_pct",),
    collect="--section SpeedOfLight --section MemoryWorkloadAnalysis_Tables",
    checks=(matrix_path,),
)
def apply(k: KernelView) -> Finding | None:
    l1 = k.metric("sol.l1_pct")
    if l1 < BOUND_PCT or l1 > 100.5:  # above 100% is a short-kernel measurement artifact
        return None
    evidence = [k.evidence("sol.l1_pct", BOUND_PCT, ">=")]
    shared = k.metric("shared.wavefronts") or 0.0
    global_sectors = (k.metric("global.load_sectors") or 0.0) + (k.metric("global.store_sectors") or 0.0)
    if shared > 0:
        evidence.append(k.evidence("shared.wavefronts"))
    if global_sectors > 0 and k.has("global.load_sectors"):
        evidence.append(k.evidence("global.load_sectors"))
    if k.has("l1.hit_rate_pct"):
        evidence.append(k.evidence("l1.hit_rate_pct"))
    # Which traffic dominates is said only when the profile measured both kinds: without
    # shared-memory data (a --metrics export, a SOL-only section set) 0 >= 0 is no evidence.
    if k.has("shared.wavefronts") and (k.has("global.load_sectors") or k.has("global.store_sectors")):
        busy = ", busy mostly with " + ("shared-memory wavefronts" if shared >= global_sectors else "global loads served by L1") + ","
    else:
        busy = ""
    check = matrix_path(k)
    tensor = {
        NO_MMA: "For GEMM-like loops, move the inner product to tensor cores (mma/wgmma), which read operands in far fewer shared-memory wavefronts per FLOP.",
        WARPGROUP: "The inner product already runs as warpgroup MMA, which reads its operands from shared memory directly: fewer wavefronts per FLOP now come from wider instruction tiles (larger N per wgmma) and swizzled, conflict-free operand layouts (TMA).",
        WARP_LEVEL: (
            "The inner product already runs on tensor cores with warp-level mma.sync, whose operands are staged through registers with "
            "LDSM: on Hopper, warpgroup wgmma reads them from shared memory without that traffic; elsewhere, larger warp tiles reuse each LDSM more."
        ),
    }.get(check.verdict, "For GEMM-like loops without HMMA/HGMMA in their SASS, move the inner product to tensor cores (mma/wgmma), which read operands in far fewer shared-memory wavefronts per FLOP.")
    finding = Finding(
        category="l1_shared_bandwidth",
        rule="l1-shared-bandwidth",
        impact=clamp(l1 / 100),
        confidence=0.8 if l1 >= 75 else 0.6,
        evidence=evidence,
        explanation=(
            f"L1/shared-memory throughput is {pct(l1)} of peak (bound at {pct(BOUND_PCT)} and above): the SM's "
            f"L1TEX data path{busy} limits the kernel rather than its arithmetic or device memory."
        ),
        suggestions=[
            "Load more per instruction: 16-byte vector accesses (float4, ld.shared.v4) move the same bytes in a quarter of the wavefront requests.",
            "Keep values that each thread reuses in registers (register blocking: compute a small tile of outputs per thread) instead of re-reading shared memory or L1 in the inner loop.",
            "Check for bank conflicts and uncoalesced accesses first: both multiply wavefronts for the same bytes.",
            tensor,
        ],
    )
    return cite(finding, check)
