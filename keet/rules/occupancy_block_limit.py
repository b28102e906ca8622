"""Block-slot-limited occupancy: blocks too small to fill the SM's warp slots within its block limit.

An SM holds at most a fixed number of blocks (32 on sm_80/sm_90), whatever their size, so
blocks of one or two warps leave warp slots empty even when registers and shared memory
would allow more. Fires for latency-bound kernels only, when the block-slot limit is the
unique binding limit (see :mod:`keet.rules.occupancy_registers`).
"""

from __future__ import annotations

import math

from keet.rules.base import Finding, KernelView, num, rule
from keet.rules.occupancy_registers import (
    OCCUPANCY_COLLECT,
    OCCUPANCY_NEEDS,
    assess,
    confidence,
    latency_text,
    next_text,
    warps_by_registers,
    warps_text,
)

# Block sizes worth suggesting: whole warps, the common 64-256 range (larger blocks make
# coarser scheduling units and raise the tail and barrier costs).
CANDIDATE_THREADS = (64, 128, 256)


@rule(
    "occupancy-block-limit",
    "occupancy_block_limit",
    "The per-SM block limit, not registers or shared memory, caps the resident warps of a latency-bound kernel",
    needs=(*OCCUPANCY_NEEDS, "launch.block_size"),
    collect=OCCUPANCY_COLLECT,
)
def apply(k: KernelView) -> Finding | None:
    h = assess(k, "blocks")
    if h is None:
        return None
    threads = k.metric("launch.block_size")
    evidence = [k.evidence("launch.block_size")] + h.evidence
    max_warps = k.attribute("max_warps_per_multiprocessor")
    # The smallest block (whole warps) whose block-slot limit reaches the warps the other limits allow.
    needed = math.ceil(h.next_warps / h.blocks) * 32
    suggestions = [
        (
            f"Use blocks of at least {needed} threads instead of {threads:.0f}, so that {h.blocks:.0f} block slots can carry "
            f"the {h.next_warps:.0f} warps per SM the other limits allow now; keep the total thread count by launching "
            f"{math.ceil(k.metric('launch.grid_size') * threads / needed):,} blocks, or give each thread more work."
        )
    ]
    registers = k.metric("launch.registers_per_thread")
    if registers is not None and max_warps is not None:
        options = []
        for size in CANDIDATE_THREADS:
            if size <= threads:
                continue
            per_block = size // 32
            limits = [h.blocks * per_block, max_warps // per_block * per_block]
            by_registers = warps_by_registers(k, registers, per_block)
            if by_registers is not None:
                limits.append(by_registers)
            warps = min(limits)
            options.append(f"{size} threads -> {warps:.0f} warps per SM ({warps / max_warps:.0%})")
        if options:
            suggestions.append(
                f"Theoretical occupancy by block size with {registers:.0f} registers per thread: "
                + "; ".join(options)
                + ". Past that point registers become the limit."
            )
    suggestions += [
        (
            "If the work really comes in warp-sized pieces, let each block process several of them (a loop over "
            "work items indexed by warp) rather than launching one tiny block per piece."
        ),
        "Alternatively hide latency within the warps you have: several independent loads in flight per thread.",
    ]
    return Finding(
        category="occupancy_block_limit",
        rule="occupancy-block-limit",
        impact=h.impact,
        confidence=confidence(k),
        evidence=evidence,
        explanation=(
            f"Blocks of only {num(threads)} threads hit the SM's block-slot limit of {num(h.blocks)} blocks per SM "
            f"({warps_text(k)}), {next_text(h)}. {latency_text(h)}"
        ),
        suggestions=suggestions,
        explains=("memory_latency",),
    )
