"""DRAM (HBM) bandwidth: the kernel streams device memory near its sustained peak."""

from keet.rules.base import Finding, KernelView, clamp, pct, rule

# Above this share of peak DRAM throughput the memory system, not the SMs, sets the pace
# (sustained HBM bandwidth tops out near 90-93% of the theoretical peak on H100/H200).
BOUND_PCT = 60.0


@rule(
    "dram-bandwidth",
    "dram_bandwidth",
    "DRAM throughput near its peak: time is bytes moved over HBM bandwidth",
    needs=("sol.dram_pct",),
    collect="--section SpeedOfLight --section MemoryWorkloadAnalysis",
)
def apply(k: KernelView) -> Finding | None:
    dram = k.metric("sol.dram_pct")
    if dram < BOUND_PCT:
        return None
    evidence = [k.evidence("sol.dram_pct", BOUND_PCT, ">=")]
    detail = ""
    if k.has("dram.bytes_read", "dram.bytes_write", "dram.throughput"):
        evidence += [k.evidence("dram.bytes_read"), k.evidence("dram.bytes_write"), k.evidence("dram.throughput")]
        read, write, rate = (k.metric(n) for n in ("dram.bytes_read", "dram.bytes_write", "dram.throughput"))
        detail = (
            f" It reads {read / 1e6:.3g} MB and writes {write / 1e6:.3g} MB of device memory at "
            f"{rate / 1e9:.4g} GB/s."
        )
    return Finding(
        category="dram_bandwidth",
        rule="dram-bandwidth",
        impact=clamp(dram / 100),
        confidence=0.9 if dram >= 75 else 0.7,
        evidence=evidence,
        explanation=(
            f"DRAM throughput is {pct(dram)} of peak (bound at {pct(BOUND_PCT)} and above): the kernel's time is "
            f"set by the bytes it moves through device memory, not by its arithmetic.{detail}"
        ),
        suggestions=[
            "Move fewer bytes: fuse this kernel with its producer or consumer so intermediates stay in registers or shared memory instead of a round trip through DRAM.",
            "Use narrower data types where precision allows (bf16/fp16/fp8 inputs, int8 indices): time falls in proportion to bytes.",
            "Reuse what is loaded: tile the loop so each byte fetched from DRAM is used several times from shared memory or L2 before eviction.",
            "If the access pattern is already one pass over the data, the kernel is at its roofline; speed-ups must come from doing less work or from faster memory (e.g. an H200's HBM3e).",
        ],
    )
