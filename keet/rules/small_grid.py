"""Small grid: fewer blocks than SMs, so part of the GPU has nothing to run.

A block runs on one SM, so a grid of fewer blocks than SMs leaves the rest idle for the
whole kernel. What the idle SMs could add is bounded by the memory system the busy ones
already share, and for a kernel of launch-overhead size (a few microseconds) the launch,
not the grid, is the problem: this rule then defers to the launch-overhead rule.
"""

from __future__ import annotations

import math

from keet.rules.base import Finding, KernelView, clamp, num, pct, rule
from keet.rules.launch_overhead import launch_cost_ns, launch_share, max_duration_ns

# Below this share of the GPU's SMs left idle the loss is within run-to-run noise of block
# scheduling (e.g. 126 blocks on 132 SMs), not worth a finding.
MIN_IDLE_SHARE = 0.1


@rule(
    "small-grid",
    "small_grid",
    "Fewer blocks than SMs: the idle SMs do nothing for the whole kernel",
    needs=("launch.grid_size", "launch.sm_count", "duration"),
    collect="--section LaunchStats --section SpeedOfLight",
)
def apply(k: KernelView) -> Finding | None:
    grid, sms, duration = k.metric("launch.grid_size"), k.metric("launch.sm_count"), k.metric("duration")
    cost = launch_cost_ns(k)
    if sms <= 0 or grid >= sms or duration <= cost:
        return None  # a full GPU's worth of blocks, or so short that launch overhead dominates
    idle = 1 - grid / sms
    if idle < MIN_IDLE_SHARE:
        return None
    evidence = [k.evidence("launch.grid_size", sms, "<"), k.evidence("launch.sm_count"), k.evidence("duration", cost, ">")]
    headroom, memory_text = 1.0, ""
    if k.has("sol.memory_pct"):
        memory = k.metric("sol.memory_pct")
        headroom = clamp(1 - memory / 100)
        evidence.append(k.evidence("sol.memory_pct"))
        memory_text = (
            f" Memory throughput is {pct(memory)} of peak, so the busy SMs leave the shared memory system "
            f"{'mostly idle too' if memory < 50 else 'partly busy'}; the idle SMs could add that much more."
        )
    # impact = min(1 - blocks / SMs, 1 - memory throughput / 100) x duration / (duration + L):
    # the idle SM share, capped by what the shared memory system can still absorb, discounted
    # by the launch cost L (launch_cost_ns) that a fuller grid would not remove.
    impact = clamp(min(idle, headroom) * (1 - launch_share(duration, cost)))
    waves = ""
    if k.has("launch.waves_per_sm"):
        evidence.append(k.evidence("launch.waves_per_sm"))
        waves = f" ({num(k.metric('launch.waves_per_sm'))} waves)"

    suggestions = []
    per_sm = None
    if k.has("occupancy.theoretical_warps", "launch.block_size"):
        per_sm = max(1, math.floor(k.metric("occupancy.theoretical_warps") / math.ceil(k.metric("launch.block_size") / 32)))
    if per_sm is not None:
        suggestions.append(
            f"Launch at least {sms:.0f} blocks (one per SM), better {sms * per_sm:.0f}: one full wave at the "
            f"{per_sm} blocks of {k.metric('launch.block_size'):.0f} threads each SM holds, or a whole multiple of it. "
            "With a grid-stride loop, size the grid as SMs x cudaOccupancyMaxActiveBlocksPerMultiprocessor instead of a constant."
        )
    else:
        suggestions.append(f"Launch at least {sms:.0f} blocks (one per SM), better a whole multiple of the blocks one wave holds.")
    suggestions += [
        (
            "If the problem itself is small, split it finer: smaller blocks (e.g. 256 instead of 1024 threads gives four "
            "times the blocks), or split a long loop or reduction dimension across blocks (split-K, per-block partial "
            "results combined afterwards)."
        ),
        "If it cannot be split, run independent work concurrently in other streams so the idle SMs are used.",
    ]
    return Finding(
        category="small_grid",
        rule="small-grid",
        impact=impact,
        confidence=0.9 if duration > max_duration_ns(cost) else 0.7,
        evidence=evidence,
        explanation=(
            f"The grid has only {num(grid)} blocks for the GPU's {num(sms)} SMs{waves}: a block runs on one SM, so "
            f"every SM without a block sits idle for the kernel's whole {num(duration / 1000)} us.{memory_text}"
        ),
        suggestions=suggestions,
        explains=("memory_latency",),
    )
