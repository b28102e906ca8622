"""L2 bandwidth: SM requests served by the L2 saturate it (data reused in L2, not streamed)."""

from keet.rules.base import Finding, KernelView, clamp, pct, rule

# At this share of peak L2 throughput and above, the L2 slices set the pace.
BOUND_PCT = 60.0
# Nsight Compute's L2 throughput also counts the fills and write-backs of DRAM traffic, so a
# kernel streaming DRAM shows a busy L2 too. Only the part of the SM<->L2 traffic that does
# not go on to DRAM is L2's own load; below this share the L2 is a symptom of DRAM traffic.
OWN_SHARE = 0.5


@rule(
    "l2-bandwidth",
    "l2_bandwidth",
    "L2 throughput near its peak with most SM traffic served by the L2 itself",
    needs=("sol.l2_pct",),
    collect="--section SpeedOfLight --section MemoryWorkloadAnalysis_Tables",
)
def apply(k: KernelView) -> Finding | None:
    l2 = k.metric("sol.l2_pct")
    if l2 < BOUND_PCT or l2 > 100.5:  # above 100% is a short-kernel measurement artifact
        return None
    evidence = [k.evidence("sol.l2_pct", BOUND_PCT, ">=")]
    own_share, detail = 1.0, ""
    if k.has("l2.bytes_from_l1", "dram.bytes"):
        sm_bytes = k.metric("l2.bytes_from_l1") + (k.metric("l2.bytes_to_l1") or 0.0)
        dram_bytes = k.metric("dram.bytes")
        own_share = clamp(1 - dram_bytes / sm_bytes) if sm_bytes > 0 else 0.0
        evidence += [k.evidence("l2.bytes_from_l1"), k.evidence("dram.bytes")]
        if k.metric("l2.bytes_to_l1") is not None:
            evidence.append(k.evidence("l2.bytes_to_l1"))
        written = k.metric("l2.bytes_to_l1")
        detail = (
            f" The SMs read {k.metric('l2.bytes_from_l1') / 1e6:.3g} MB from the L2"
            + (f" and write {written / 1e6:.3g} MB to it" if written is not None else "")
            + f" while only {dram_bytes / 1e6:.3g} MB cross to device memory, so the L2 itself carries the traffic."
        )
        if own_share < OWN_SHARE:
            return None  # the busy L2 is carrying DRAM traffic: the DRAM rule speaks for it
    if k.has("l2.hit_rate_pct"):
        evidence.append(k.evidence("l2.hit_rate_pct"))
    return Finding(
        category="l2_bandwidth",
        rule="l2-bandwidth",
        impact=clamp(l2 / 100 * own_share),
        confidence=0.85 if l2 >= 75 else 0.65,
        evidence=evidence,
        explanation=(
            f"L2 throughput is {pct(l2)} of peak (bound at {pct(BOUND_PCT)} and above).{detail} "
            "Each SM request for data that misses L1 costs L2 bandwidth, so the kernel runs at the speed of the L2 slices."
        ),
        suggestions=[
            "Keep reused data closer: stage tiles that several warps or iterations read in shared memory (or registers) instead of re-reading them from L2.",
            "Raise reuse per L2 access with larger tiles (each loaded element used by more FMAs), e.g. a bigger block tile in a GEMM-like loop.",
            "Let L1 cache global loads that are re-read within a block (plain loads or __ldg rather than __ldcg / ld.global.cg), and avoid the L1-bypassing cache hints where data is reused.",
            "Check that accesses are coalesced: partially used 32-byte sectors waste L2 bandwidth as well.",
        ],
    )
