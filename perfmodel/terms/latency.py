"""Latency (Little's law): every warp waits for its dependent loads one after the other, while the
warps of a round overlap: rounds x load waits per warp x load latency. Waits for a warp's own
loads are `chains`, those at asynchronous copy pipelines' barriers `pipelined` (the model
combines the two differently: perfmodel/model.py). A wait is a chain of
dependent global loads in one basic block (perfmodel.load_chains, from the SASS where the report
has it); without the SASS every load request counts as a wait (the worst case). A load's latency is the mix of
L1, L2 and DRAM latencies in the proportions its sectors were served (hit fractions from the sector
counts: sectors requested, bytes L1 read from L2, bytes read from DRAM)."""

from __future__ import annotations

from perfmodel.hardware import GPU, SECTOR_BYTES
from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("dram_latency_cycles", "l2_latency_cycles", "l1_latency_cycles")


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


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    counts = k.work.counts
    # dependent waits where the SASS tells (independent loads of one block are waited for once),
    # else every load request one after the other
    global_waits = counts.get("global_load_waits") or counts.get("global_load_requests", 0.0)
    loads = global_waits + counts.get("local_load_sectors", 0.0) / 4
    latency = load_latency_cycles(k.gpu, counts)
    if latency and loads:
        per_warp = loads / (k.work.grid_blocks * k.occ.warps_per_block)
        seconds = k.rounds * per_warp * latency / k.clock
        # Known chains overlap the other warps' throughput work only in part (the p-norm of
        # perfmodel.model.combine), a warp's waits for its own loads (chain_overlap_exponent,
        # measured on such loads) less than the waits of asynchronous copy pipelines, which are
        # built to overlap it (the SM/memory overlap_exponent). Without the SASS every request
        # is taken as a wait, the most there can be, and combined as pipeline waits are: on the
        # corpus's dev split (kernels of 5 us or more) that is nearer the measured times than
        # comparing it with the rest only (H100 reports with their SASS left out: median error
        # 8.3% against 9.1%; the H200 reports, which have none: 9.3% against 10.0%) or combining
        # it as known chains (10.5% and 11.6%, 7-10% long).
        if counts.get("global_load_waits"):
            pipelined = min(1.0, counts.get("global_load_async_waits", 0.0) / loads)  # local loads: synchronous
            if pipelined < 1.0:
                out.chains["latency"] = seconds * (1.0 - pipelined)
            if pipelined > 0.0:
                out.pipelined["latency"] = seconds * pipelined
        else:
            out.pipelined["latency"] = seconds
            out.caveats["latency"] = (
                "the profile has no per-instruction SASS (Nsight Compute's SourceCounters section), so which loads wait "
                "on each other is unknown: every load request was taken as a wait, the most there can be, and the "
                "kernel may run faster or slower than this (collect with ncu --section SourceCounters)")
        out.inputs["load_waits_per_warp"] = per_warp
    return out
