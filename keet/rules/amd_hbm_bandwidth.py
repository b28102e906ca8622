"""HBM bandwidth on AMD: the L2-fabric traffic near the GPU's peak memory bandwidth.

rocprof-compute's "L2-Fabric Read/Write BW" (canonical dram.*) counts what the L2 sends to and
receives from the Infinity Fabric: HBM, and on MI300 also the Infinity Cache (MALL), which the
counters do not separate. The ceiling is the GPU's peak HBM bandwidth from its hardware file
(perfmodel/hardware/mi*.toml) or, for a GPU we have no file of (MI100, MI210), the ``hbm_bw``
of the profile's own sysinfo.csv. Without either the rule says the ceiling is unknown.
"""

from __future__ import annotations

from keet.rules.amd_base import (
    DEVICE_COLLECT,
    DEVICE_FACT,
    Unassessed,
    amd_rule,
    hardware,
    hbm_peak,
    hbm_unknown,
    pmc,
)
from keet.rules.base import Evidence, Finding, KernelView, clamp

# At this share of peak the memory system sets the pace (as the NVIDIA rule). AMD's own
# empirical roofline agrees that sustained HBM tops out well below peak: the MI200
# roofline.csv of tests/data/rocprof measures HBMBw 1389 GB/s against sysinfo's 1638.4 GB/s
# (85%), so 60% of peak is already 70% of what the GPU sustains.
BOUND_SHARE = 0.6
# Confidence 0.9 from this share on (near the sustained ceiling).
SATURATED_SHARE = 0.75


@amd_rule(
    "amd-hbm-bandwidth",
    "dram_bandwidth",
    "AMD: L2-fabric (HBM) traffic near the GPU's peak memory bandwidth",
    needs=("dram.throughput", "dram.bytes_read", "dram.bytes_write"),
    # rocprof's derived FETCH_SIZE / WRITE_SIZE (KiB) exist on every CDNA arch; the TCC_EA*
    # request counters behind them differ between gfx908/gfx90a and gfx942/gfx950
    collect=pmc("FETCH_SIZE", "WRITE_SIZE", "TCC_HIT_sum", "TCC_MISS_sum"),
)
def apply(k: KernelView) -> Finding | Unassessed | None:
    peak = hbm_peak(k)
    if peak is None:
        missing = hbm_unknown(k)
        # a named GPU without a known peak: no profiler run provides it
        return Unassessed([missing], "" if missing != DEVICE_FACT else DEVICE_COLLECT)
    rate, read, write = (k.metric(n) for n in ("dram.throughput", "dram.bytes_read", "dram.bytes_write"))
    share = rate / peak.value
    if share < BOUND_SHARE:
        return None
    evidence = [
        Evidence("dram.throughput", rate, k.evidence("dram.throughput").unit, peak.value, "of peak"),
        k.evidence("dram.bytes_read"),
        k.evidence("dram.bytes_write"),
    ]
    detail = ""
    if k.has("l2.hit_rate_pct"):
        evidence.append(k.evidence("l2.hit_rate_pct"))
        detail += f" The L2 hit rate is {k.metric('l2.hit_rate_pct'):.1f}%, so most requests go to the fabric."
    hw = hardware(k)
    mall = hw.value("mall_bytes") if hw is not None else None
    suggestions = [
        "Move fewer bytes: fuse this kernel with its producer or consumer so intermediates stay in VGPRs or LDS instead of a round trip through HBM.",
        "Use narrower types where precision allows (bf16/fp16, and fp8 on gfx942): time falls in proportion to bytes.",
        "Load and store 16 bytes per lane (float4/double2, global_load_dwordx4) with consecutive lanes on consecutive addresses, so each wave64 request fills whole 128-byte lines.",
        "For data read once, use __builtin_nontemporal_load/__builtin_nontemporal_store so streaming traffic does not evict reused lines from the L2.",
    ]
    if mall and k.has("dram.bytes"):
        total = k.metric("dram.bytes")
        evidence.append(k.evidence("dram.bytes", mall, "Infinity Cache bytes"))
        if total <= mall:
            detail += (
                f" Its {total / 1e6:.4g} MB of fabric traffic fit the {mall / 1e6:.4g} MB Infinity Cache (MALL): "
                "data written by one kernel and read by the next can be served from it rather than from HBM."
            )
        suggestions.append(
            f"On MI300 keep the data passed between consecutive kernels under the {mall / 1e6:.4g} MB Infinity Cache "
            "(process the problem in chunks of that size through the whole pipeline), so the next kernel reads it from the MALL."
        )
    return Finding(
        category="dram_bandwidth",
        rule="amd-hbm-bandwidth",
        # impact = achieved fabric bandwidth / peak HBM bandwidth
        impact=clamp(share),
        confidence=0.9 if share >= SATURATED_SHARE else 0.7,
        evidence=evidence,
        explanation=(
            f"The kernel moves {read / 1e6:.4g} MB from and {write / 1e6:.4g} MB to device memory at {rate / 1e9:.4g} GB/s "
            f"against {peak.source} of {peak.value / 1e9:.4g} GB/s: its time is set by HBM bandwidth, not by "
            f"its arithmetic.{detail}"
        ),
        suggestions=suggestions,
    )
