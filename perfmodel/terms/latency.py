"""Latency (Little's law): every warp waits for its dependent loads one after the other, while the
warps of a round overlap: rounds x load waits per warp x load latency. Waits for a warp's own
loads are `chains`, those at asynchronous copy pipelines' barriers `pipelined` (the model
combines the two differently: perfmodel/model.py). A wait is a chain of
dependent global loads in one basic block (perfmodel.load_chains, from the SASS where the report
has it); without the SASS, UNTRACED_WAITS_PER_REQUEST of the load requests (at least one per warp
that loads, at most all of them) are taken as waits. A load's latency is the mix of
L1, L2 and DRAM latencies in the proportions its sectors were served (hit fractions from the sector
counts: sectors requested, bytes L1 read from L2, bytes read from DRAM)."""

from __future__ import annotations

from perfmodel.hardware import GPU, SECTOR_BYTES
from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("dram_latency_cycles", "l2_latency_cycles", "l1_latency_cycles")
# Waits per global load request where the profile has no SASS to trace the chains: the median,
# over the corpus dev split's H100 kernels whose loads were traced (synchronous loads only: 159
# kernels), of traced waits per request (perfmodel.validate_corpus.traced_waits_per_request;
# p10 0.20, p90 1.0). A statistic of compiled code, not of time: two independent loads per wait
# is the common case (a pair of vector loads, an unrolled loop's loads issued together). On the
# dev split's kernels of 5 us or more it predicts nearer the measured times than taking every
# request as a wait (H100 reports with their SASS left out: median error 6.8% and p90 26.1%
# against 7.6% and 39.0%; H200 reports, which have none: 8.4% and 25.7% against 9.3% and 32.4%).
UNTRACED_WAITS_PER_REQUEST = 0.5


def load_latency_cycles(gpu: GPU, counts: dict[str, float]) -> float | None:
    """Average cycles of one global load, weighted by where the kernel's load sectors were served."""
    dram = gpu.value("dram_latency_cycles")
    if not dram:
        return None
    l2 = gpu.value("l2_latency_cycles", dram)
    l1 = gpu.value("l1_latency_cycles", l2)
    requested = counts.get("global_load_sectors", 0.0) * SECTOR_BYTES
    from_l2 = counts.get("l1_to_l2_read_bytes", requested)
    from_dram = counts.get("dram_bytes_read", from_l2)
    if requested <= 0:
        return dram
    miss_l1 = min(1.0, from_l2 / requested)
    miss_l2 = min(1.0, from_dram / from_l2) if from_l2 > 0 else 0.0
    return (1 - miss_l1) * l1 + miss_l1 * ((1 - miss_l2) * l2 + miss_l2 * dram)


def untraced_waits_per_warp(requests_per_warp: float) -> float:
    """Load waits of a warp whose chains the profile cannot trace: UNTRACED_WAITS_PER_REQUEST of its
    requests, at least one (a warp waits for what it loads) and at most every request."""
    return min(requests_per_warp, max(1.0, UNTRACED_WAITS_PER_REQUEST * requests_per_warp))


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    counts = k.work.counts
    warps = k.work.grid_blocks * k.occ.warps_per_block
    traced = bool(counts.get("global_load_waits"))
    # dependent waits where the SASS tells (independent loads of one block are waited for once),
    # else the typical share of the load requests
    global_waits = (counts["global_load_waits"] if traced
                    else warps * untraced_waits_per_warp(counts.get("global_load_requests", 0.0) / warps))
    loads = global_waits + counts.get("local_load_sectors", 0.0) / 4
    latency = load_latency_cycles(k.gpu, counts)
    if latency and loads:
        per_warp = loads / warps
        seconds = k.rounds * per_warp * latency / k.clock
        # Chains overlap the other warps' throughput work only in part (the p-norm of
        # perfmodel.model.combine), a warp's waits for its own loads (chain_overlap_exponent,
        # measured on such loads) less than the waits of asynchronous copy pipelines, which are
        # built to overlap it (the SM/memory overlap_exponent).
        pipelined = min(1.0, counts.get("global_load_async_waits", 0.0) / loads)  # local loads: synchronous
        if pipelined < 1.0:
            out.chains["latency"] = seconds * (1.0 - pipelined)
        if pipelined > 0.0:
            out.pipelined["latency"] = seconds * pipelined
        if not traced:
            out.caveats["latency"] = (
                "the profile has no per-instruction SASS (Nsight Compute's SourceCounters section), so which loads wait "
                f"on each other is unknown: {UNTRACED_WAITS_PER_REQUEST:.0%} of the load requests (at least one per warp) "
                "were taken as waits, the typical share in compiled code, and the kernel may run faster or slower than "
                "this (collect with ncu --section SourceCounters)")
        out.inputs["load_waits_per_warp"] = per_warp
    return out
