"""Memory latency on AMD: waves mostly wait on their loads while no unit is near its peak.

rocprof-compute's Wavefront Runtime Stats (panel 0701) split a wave's life (SQ_WAVE_CYCLES)
into dependency waits (SQ_WAIT_ANY: waiting on s_waitcnt for outstanding vector/scalar memory
and LDS results), issue waits and active cycles; both counters are in the same (quad-)cycle
units, so their ratio is the share of the waves' time spent waiting on data: the AMD
counterpart of NVIDIA's long-scoreboard share.
"""

from __future__ import annotations

from keet.rules.amd_base import Unassessed, amd_rule, hbm_peak, pmc
from keet.rules.base import Evidence, Finding, KernelView, clamp, num

# Waves waiting on dependencies for at least half their cycles (the NVIDIA memory-latency
# rule's long-scoreboard share).
WAIT_SHARE = 0.5
# A unit at this utilization is near its roofline: then the wait is a bandwidth symptom.
FAR_FROM_ROOFLINE_PCT = 60.0
# Dispatches of one kernel this many times apart: the slow ones pay a one-time cost (page
# migration or first touch of unified/managed memory, e.g. on the MI300A APU, code object
# loading), which aggregated counters blend into "waiting on memory".
ONE_TIME_RATIO = 10.0
# Without any utilization (no device facts) the kernel may be bandwidth-bound instead: half
# the wait share is counted and confidence is low.
UNKNOWN_DISCOUNT = 0.5


@amd_rule(
    "amd-memory-latency",
    "memory_latency",
    "AMD: waves wait on memory most of their time while no unit is near its peak",
    needs=("amd.waves",),
    collect=pmc("SQ_WAIT_ANY", "SQ_WAVE_CYCLES", "SQ_WAVES"),
)
def apply(k: KernelView) -> Finding | Unassessed | None:
    wait, cycles = k.raw("SQ_WAIT_ANY"), k.raw("SQ_WAVE_CYCLES")
    if wait is None or not cycles:
        return Unassessed(["SQ_WAIT_ANY", "SQ_WAVE_CYCLES"], pmc("SQ_WAIT_ANY", "SQ_WAVE_CYCLES"))
    share = wait / cycles
    if share < WAIT_SHARE:
        return None
    evidence = [Evidence("SQ_WAIT_ANY", wait, "cycle"), Evidence("SQ_WAVE_CYCLES", cycles, "cycle")]
    busy: list[tuple[float, str]] = []
    for name, label in (("amd.valu_util_pct", "VALU"), ("pipe.tensor_pct", "MFMA")):
        if k.metric(name) is not None:
            evidence.append(k.evidence(name, FAR_FROM_ROOFLINE_PCT, "<"))
            busy.append((k.metric(name), f"{label} {k.metric(name):.1f}%"))
    peak = hbm_peak(k)
    if peak is not None and k.metric("dram.throughput") is not None:
        rate = k.metric("dram.throughput")
        evidence.append(Evidence("dram.throughput", rate, "byte/second", peak.value, "of peak"))
        busy.append((100 * rate / peak.value, f"HBM {rate / 1e9:.4g} of {peak.value / 1e9:.4g} GB/s"))
    if busy and max(b for b, _ in busy) >= FAR_FROM_ROOFLINE_PCT:
        return None  # a unit near its peak: the waits are its symptom, another rule names it
    if k.metric("amd.fabric_read_latency") is not None:
        evidence.append(k.evidence("amd.fabric_read_latency"))
        fabric = f" A read that misses the L2 takes {num(k.metric('amd.fabric_read_latency'))} cycles on average."
    else:
        fabric = ""
    if peak is None:
        # impact = wait share x UNKNOWN_DISCOUNT: HBM may be near its peak, unknown here
        impact, confidence = share * UNKNOWN_DISCOUNT, 0.4
        units = (" No HBM peak is known for this GPU (the profile names none, or keet has no figure for it), so "
                 "whether HBM bandwidth is near its peak cannot be told; if it is, this is a bandwidth limit rather than latency.")
    else:
        busiest = max(b for b, _ in busy)
        # impact = wait share x (1 - busiest unit / 100): more bytes in flight help until a unit saturates
        impact, confidence = share * (1 - busiest / 100), 0.7
        units = f" No unit is near its peak ({', '.join(text for _, text in busy)})."
    suggestions = [
        "Put more bytes in flight per work-item: 16-byte loads (float4/double2, global_load_dwordx4), and several independent loads issued before their first use (unroll the loop by 2-4 and load all iterations first).",
        "Keep more waves resident per CU (fewer VGPRs, smaller LDS tiles) and launch enough workgroups to fill every CU several times.",
        "For a short kernel (tens of microseconds) much of the time is ramp-up and drain: fuse it with its neighbours or batch several problems into one launch.",
    ]
    low, high = k.kernel.attributes.get("duration_ns_min"), k.kernel.attributes.get("duration_ns_max")
    if k.kernel.invocations > 1 and low and high and high >= ONE_TIME_RATIO * low:
        evidence += [Evidence("kernel.duration_ns_min", float(low), "ns"), Evidence("kernel.duration_ns_max", float(high), "ns")]
        units += (
            f" Its dispatches took from {num(low / 1000)} to {num(high / 1000)} us: the slow one pays a "
            "one-time cost (page migration or first touch of unified memory, as on an MI300A APU, or code loading) that the "
            "aggregated counters show as waiting on memory."
        )
        confidence = min(confidence, 0.5)
        suggestions.insert(0, (
            "Take the one-time cost out of the timed loop: touch or initialise the data on the GPU first (first-touch "
            "placement), prefetch managed memory with hipMemPrefetchAsync, or allocate with hipMalloc instead of relying "
            "on page migration; then profile the steady-state dispatches."
        ))
    return Finding(
        category="memory_latency",
        rule="amd-memory-latency",
        impact=clamp(impact),
        confidence=confidence,
        evidence=evidence,
        explanation=(
            f"Waves spent {num(wait)} of their {num(cycles)} cycles waiting on dependencies (s_waitcnt on outstanding "
            f"memory and LDS results): the kernel waits on memory latency with too few requests in flight.{fabric}{units}"
        ),
        suggestions=suggestions,
    )
