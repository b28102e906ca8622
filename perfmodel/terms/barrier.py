"""Barriers: between two barriers a block issues its warps' instructions, then waits for the last
warp to arrive and the barrier to release (barrier_base_cycles + barrier_cycles_per_warp x warps
per block, measured) and, when it reads shared memory after the barrier, for that load
(shared_latency_cycles). The blocks of an SM hide each other's waits, which the issue bound
already counts; what no other block can hide is one block's chain:
rounds x intervals x (issue of one block + barrier + shared load)."""

from __future__ import annotations

from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("barrier_base_cycles", "barrier_cycles_per_warp", "barrier_cycles", "shared_latency_cycles", "schedulers_per_sm")


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    work, gpu, occ = k.work, k.gpu, k.occ
    if not work.barriers:
        return out
    base, per_warp = gpu.value("barrier_base_cycles"), gpu.value("barrier_cycles_per_warp")
    barrier = base + per_warp * occ.warps_per_block if base is not None and per_warp is not None else gpu.value("barrier_cycles")
    if not barrier:
        return out
    warps = work.grid_blocks * occ.warps_per_block
    intervals = work.barriers / warps  # barriers each warp passes
    block_issue = k.instructions / warps / intervals * occ.warps_per_block / gpu.require("schedulers_per_sm")
    shared_wait = gpu.value("shared_latency_cycles", 0.0) if work.counts.get("shared_load_wavefronts") else 0.0
    out.sm["barrier"] = k.rounds * intervals * (block_issue + barrier + shared_wait) / k.clock
    return out
