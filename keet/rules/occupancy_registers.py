"""Register-limited occupancy: registers per thread cap the resident warps of a latency-bound kernel.

Occupancy only matters when warps wait on latency: a kernel near a throughput roofline
gains nothing from more warps (a register-heavy GEMM at 25% occupancy can be FMA-bound).
So the occupancy rules fire only when the kernel is latency-bound (far from every roofline,
long-scoreboard stalls dominating, see :func:`keet.rules.memory_latency.latency_bound`) and
the resource is the unique binding limit, so that lifting it alone adds warps.

:func:`assess` and the register-allocation helpers are shared with the shared-memory and
block-slot occupancy rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from keet.rules.base import Evidence, Finding, KernelView, clamp, num, pct, rule
from keet.rules.memory_latency import FAR_FROM_ROOFLINE_PCT, Latency, latency_bound

# The limit metrics behind theoretical occupancy, in blocks per SM.
LIMITS = {
    "blocks": "occupancy.limit_blocks",
    "registers": "occupancy.limit_registers",
    "shared": "occupancy.limit_shared",
    "warps": "occupancy.limit_warps",
}
# What every occupancy rule must read (limits, warps, and the latency-bound test), and
# the sections that collect it.
OCCUPANCY_NEEDS = (
    "occupancy.limit_blocks", "occupancy.limit_registers", "occupancy.limit_shared", "occupancy.limit_warps",
    "occupancy.theoretical_warps", "sol.sm_pct", "sol.memory_pct", "stall.long_scoreboard", "issue.cycles_per_issue",
)  # fmt: skip
OCCUPANCY_COLLECT = "--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats"
# Achieved occupancy at least this share of theoretical: the resource limit is really what
# caps the resident warps (not a small grid, a tail or imbalance).
REACHED_SHARE = 0.8
# Registers are allocated per warp in units of 256 (8 per thread) on sm_70 to sm_90.
REGISTER_UNIT = 8
# The most registers a thread can address (ISA limit); nothing above is allocatable.
MAX_REGISTERS_PER_THREAD = 255
# Register files are split between the SM sub-partitions (4 warp schedulers on sm_70+),
# which is used when the profile lacks the device attribute.
DEFAULT_SCHEDULERS = 4


@dataclass
class Headroom:
    """How many more warps lifting one occupancy limit would give a latency-bound kernel."""

    resource: str
    blocks: float  # resident blocks per SM now (the binding limit)
    next_blocks: float  # blocks per SM with this limit lifted (the other limits, the grid)
    next_by: str  # what sets next_blocks: a LIMITS key or "grid"
    warps_per_block: float
    latency: Latency
    evidence: list[Evidence]

    @property
    def warps(self) -> float:
        return self.blocks * self.warps_per_block

    @property
    def next_warps(self) -> float:
        return self.next_blocks * self.warps_per_block

    @property
    def gain(self) -> float:
        """Share of the latency-bound time more warps remove (time ~ 1 / resident warps)."""
        return 1 - self.blocks / self.next_blocks

    @property
    def impact(self) -> float:
        # impact = long-scoreboard share of CPI x min(1 - warps now / warps after,
        #                                             1 - busiest roofline / 100):
        # latency-bound time falls with more resident warps (Little's law) until the busiest
        # unit reaches its roofline, which caps the speed-up at 100 / busiest %.
        return clamp(self.latency.share * min(self.gain, 1 - self.latency.roofline_pct / 100))


def shared_limit(k: KernelView) -> float:
    """Blocks per SM that shared memory allows at the largest carve-out.

    ncu's occupancy.limit_shared is computed for the carve-out the driver picked, which it
    sizes to what the other limits need, so it often ties with the real limiter; a block
    that uses no shared memory beyond the driver's reserve is not limited by it at all.
    """
    reported = k.metric("occupancy.limit_shared")
    static, dynamic = k.metric("launch.shared_static"), k.metric("launch.shared_dynamic")
    if static is None and dynamic is None:
        return reported
    used = (static or 0.0) + (dynamic or 0.0)
    if used <= 0:
        return math.inf
    per_sm = k.attribute("max_shared_memory_per_multiprocessor")
    driver = k.metric("launch.shared_driver") or k.attribute("reserved_shared_memory_per_block") or 0.0
    if per_sm is None:
        return reported
    return max(reported, math.floor(per_sm / (used + driver)))


def assess(k: KernelView, resource: str) -> Headroom | None:
    """The headroom of a latency-bound kernel whose occupancy ``resource`` uniquely limits, or None."""
    if not k.has(*LIMITS.values(), "occupancy.theoretical_warps"):
        return None
    latency = latency_bound(k)
    if latency is None:
        return None
    limits = {name: k.metric(metric) for name, metric in LIMITS.items()}
    if resource != "shared":
        limits["shared"] = shared_limit(k)  # as another limit: what the best carve-out allows
    elif shared_limit(k) == math.inf:
        return None  # the block uses no shared memory of its own
    blocks = limits[resource]
    if blocks <= 0:
        return None
    next_by = min((name for name in limits if name != resource), key=lambda name: limits[name])
    next_blocks = limits[next_by]
    if k.has("launch.grid_size", "launch.sm_count") and k.metric("launch.sm_count") > 0:
        per_sm = math.ceil(k.metric("launch.grid_size") / k.metric("launch.sm_count"))
        if per_sm < next_blocks:  # the grid cannot fill the extra slots
            next_blocks, next_by = per_sm, "grid"
    if next_blocks <= blocks:  # not the binding limit, tied with another, or no blocks to add
        return None
    evidence = [k.evidence(LIMITS[resource], next_blocks, "<")]
    if next_by == "grid":
        evidence += [k.evidence("launch.grid_size"), k.evidence("launch.sm_count")]
    elif next_blocks == k.metric(LIMITS[next_by]):  # else derived from the device's shared memory
        evidence.append(k.evidence(LIMITS[next_by]))
    evidence.append(k.evidence("occupancy.theoretical_warps"))
    if k.metric("occupancy.theoretical_pct") is not None:
        evidence.append(k.evidence("occupancy.theoretical_pct"))
    if k.metric("occupancy.achieved_pct") is not None:
        evidence.append(k.evidence("occupancy.achieved_pct"))
    if k.metric("launch.block_size") is not None:
        warps_per_block = math.ceil(k.metric("launch.block_size") / 32)
    else:
        warps_per_block = k.metric("occupancy.theoretical_warps") / min(k.metric(metric) for metric in LIMITS.values())
    return Headroom(resource, blocks, next_blocks, next_by, warps_per_block, latency, evidence + latency.evidence)


def confidence(k: KernelView) -> float:
    """Higher when the resident warps really sit at the theoretical limit."""
    theoretical, achieved = k.metric("occupancy.theoretical_pct"), k.metric("occupancy.achieved_pct")
    if theoretical and achieved is not None and achieved >= REACHED_SHARE * theoretical:
        return 0.85
    return 0.6


def warps_text(k: KernelView) -> str:
    """'8 warps, 12.5% theoretical occupancy, 12.4% achieved' from the evidence."""
    parts = [f"{num(k.metric('occupancy.theoretical_warps'))} warps"]
    if k.metric("occupancy.theoretical_pct") is not None:
        parts.append(f"{pct(k.metric('occupancy.theoretical_pct'))} theoretical occupancy")
    if k.metric("occupancy.achieved_pct") is not None:
        parts.append(f"{pct(k.metric('occupancy.achieved_pct'))} achieved")
    return ", ".join(parts)


def occupancy_text(k: KernelView, h: Headroom) -> str:
    """'1 block per SM (8 warps, 12.5% theoretical occupancy, 12.4% achieved)'."""
    return f"{num(h.blocks)} block{'s' if h.blocks != 1 else ''} per SM ({warps_text(k)})"


def next_text(h: Headroom) -> str:
    """What the other limits would allow, worded from the evidence."""
    if h.next_by == "grid":
        return f"while the grid has enough blocks for {num(h.next_blocks)} per SM"  # threshold of the limit's evidence
    names = {"blocks": "the block-slot limit", "registers": "registers", "shared": "shared memory", "warps": "the warp slots"}
    return f"while {names[h.next_by]} would allow {num(h.next_blocks)} blocks"


def latency_text(h: Headroom) -> str:
    return (
        f"The kernel is latency-bound: {num(h.latency.stall)} of the {num(h.latency.cpi)} cycles between two issues of a "
        f"warp are long-scoreboard stalls and the busiest unit runs at only {pct(h.latency.roofline_pct)} of peak "
        f"(below {pct(FAR_FROM_ROOFLINE_PCT)}), so the few resident warps leave memory latency exposed that more warps would overlap."
    )


def schedulers(k: KernelView) -> int:
    return int(k.attribute("num_schedulers_per_multiprocessor") or DEFAULT_SCHEDULERS)


def warps_by_registers(k: KernelView, registers: float, warps_per_block: float) -> float | None:
    """Resident warps per SM the register file allows at ``registers`` per thread, or None."""
    per_sm = k.attribute("max_registers_per_multiprocessor")
    if per_sm is None or registers <= 0:
        return None
    parts = schedulers(k)
    per_warp = math.ceil(registers / REGISTER_UNIT) * REGISTER_UNIT * 32
    warps = (per_sm / parts // per_warp) * parts
    return math.floor(warps / warps_per_block) * warps_per_block


def registers_for_blocks(k: KernelView, blocks: float, warps_per_block: float) -> int | None:
    """The most registers per thread that still fit ``blocks`` blocks per SM, or None."""
    per_sm = k.attribute("max_registers_per_multiprocessor")
    if per_sm is None:
        return None
    parts = schedulers(k)
    warps_per_part = math.ceil(blocks * warps_per_block / parts)
    per_warp = per_sm / parts // warps_per_part
    registers = int(per_warp // 32 // REGISTER_UNIT * REGISTER_UNIT)
    return min(registers, MAX_REGISTERS_PER_THREAD) if registers >= REGISTER_UNIT else None


@rule(
    "occupancy-registers",
    "occupancy_registers",
    "Registers per thread limit the resident warps of a latency-bound kernel",
    needs=(*OCCUPANCY_NEEDS, "launch.registers_per_thread"),
    collect=OCCUPANCY_COLLECT,
)
def apply(k: KernelView) -> Finding | None:
    h = assess(k, "registers")
    if h is None:
        return None
    registers = k.metric("launch.registers_per_thread")
    evidence = [k.evidence("launch.registers_per_thread")] + h.evidence
    threads = k.metric("launch.block_size") or h.warps_per_block * 32
    one_more = registers_for_blocks(k, h.blocks + 1, h.warps_per_block)
    full = registers_for_blocks(k, h.next_blocks, h.warps_per_block)
    suggestions = []
    if one_more is not None:
        text = (
            f"Cap registers with __launch_bounds__({threads:.0f}, {h.blocks + 1:.0f}) (or -maxrregcount={one_more} for the "
            f"whole file): at most {one_more} registers per thread instead of {registers:.0f} fits {h.blocks + 1:.0f} blocks "
            f"({(h.blocks + 1) * h.warps_per_block:.0f} warps) per SM"
        )
        if full is not None and h.next_blocks > h.blocks + 1:
            text += f"; all {h.next_blocks:.0f} blocks ({h.next_warps:.0f} warps) fit at {full} registers or fewer"
        suggestions.append(text + ".")
        if full is not None:
            suggestions.append(
                f"Watch for spills: squeezing {registers:.0f} registers down to {one_more} (or {full}) makes ptxas keep the rest in "
                "local memory. Check `ptxas -v` (spill stores/loads) and the local.* sectors of the next profile; a few "
                "L1-resident spills usually cost less than the latency exposed now, heavy spill traffic to L2 does not."
            )
    else:
        suggestions.append(
            f"Cap registers with __launch_bounds__({threads:.0f}, {h.blocks + 1:.0f}) so ptxas fits one more block per SM, "
            "and check `ptxas -v` for the spills this may cause."
        )
    suggestions += [
        (
            "Reduce live state per thread: recompute cheap values instead of keeping them, keep arrays out of fully "
            "unrolled loops, use narrower types (half/bf16, 16-bit indices), or split a long kernel into phases."
        ),
        (
            "Alternatively raise memory-level parallelism within the warps you have (several independent loads in flight "
            "per thread, prefetching), which hides latency without more warps."
        ),
    ]
    return Finding(
        category="occupancy_registers",
        rule="occupancy-registers",
        impact=h.impact,
        confidence=confidence(k),
        evidence=evidence,
        explanation=(
            f"Each thread uses {num(registers)} registers, so the register file holds only {occupancy_text(k, h)}, "
            f"{next_text(h)}. {latency_text(h)}"
        ),
        suggestions=suggestions,
        explains=("memory_latency",),
    )
