"""Memory latency: enough warps are resident, yet each one mostly waits on its own loads.

The kernel is far from every throughput roofline and long-scoreboard stalls (waiting for
L1TEX results: global, local, texture loads) fill most of each warp's cycles, while
occupancy is already high, so more warps are not the fix: each warp must keep more loads
in flight (independent work, prefetching) or find its data closer.

The latency-bound test (:func:`latency_bound`) is shared with the occupancy rules, which
diagnose the same symptom when a resource limit keeps warps away.
"""

from __future__ import annotations

from dataclasses import dataclass

from keet.rules.base import Evidence, Finding, KernelView, clamp, num, pct, rule

# Below this share of peak on every unit (SM pipes, L1, L2, DRAM) the kernel is not
# throughput-bound: roofline rules start at 60%, and sustained peaks sit near 90%.
FAR_FROM_ROOFLINE_PCT = 60.0
# Long-scoreboard stalls above this share of the cycles between two issues of a warp
# mean warps spend most of their life waiting for memory results (latency, not work).
LATENCY_STALL_SHARE = 0.5
# At or above this achieved occupancy (38+ of 64 warps on Hopper) more resident warps
# cannot buy much more latency hiding; below it the occupancy/grid rules speak instead.
HIGH_OCCUPANCY_PCT = 60.0


@dataclass
class Latency:
    """A latency-bound kernel: stall share, the busiest roofline, and the evidence."""

    share: float  # long-scoreboard cycles over cycles per issue
    roofline_pct: float  # the busiest unit, % of its peak
    stall: float
    cpi: float
    evidence: list[Evidence]


def roofline_pct(k: KernelView) -> float:
    """The busiest throughput unit: SM pipes or memory (plus L2 on its own where measured)."""
    busiest = max(k.metric("sol.sm_pct"), k.metric("sol.memory_pct"))
    if k.metric("sol.l2_pct") is not None and k.metric("sol.l2_pct") <= 100.5:  # >100% is a short-kernel artifact
        busiest = max(busiest, k.metric("sol.l2_pct"))
    return busiest


def latency_bound(k: KernelView) -> Latency | None:
    """Far from every roofline and dominated by long-scoreboard stalls, or None."""
    if not k.has("sol.sm_pct", "sol.memory_pct", "stall.long_scoreboard", "issue.cycles_per_issue"):
        return None
    cpi = k.metric("issue.cycles_per_issue")
    stall = k.metric("stall.long_scoreboard")
    busiest = roofline_pct(k)
    if cpi <= 0 or busiest >= FAR_FROM_ROOFLINE_PCT or stall / cpi < LATENCY_STALL_SHARE:
        return None
    evidence = [
        k.evidence("sol.sm_pct", FAR_FROM_ROOFLINE_PCT, "<"),
        k.evidence("sol.memory_pct", FAR_FROM_ROOFLINE_PCT, "<"),
    ]
    if k.metric("sol.l2_pct") is not None:
        evidence.append(k.evidence("sol.l2_pct", FAR_FROM_ROOFLINE_PCT, "<"))
    evidence += [
        k.evidence("stall.long_scoreboard", LATENCY_STALL_SHARE * cpi, ">="),
        k.evidence("issue.cycles_per_issue"),
    ]
    return Latency(stall / cpi, busiest, stall, cpi, evidence)


def atomic_dominated(k: KernelView) -> bool:
    """Most global memory instructions are atomics: the waits are atomic round trips/queues."""
    if not k.has("global.atomic_instructions", "global.load_requests"):
        return False
    atomics = k.metric("global.atomic_instructions")
    return atomics > 0 and atomics >= k.metric("global.load_requests")


@rule(
    "memory-latency",
    "memory_latency",
    "Occupancy is high but warps wait on dependent loads: far from every roofline, long-scoreboard bound",
    needs=("sol.sm_pct", "sol.memory_pct", "stall.long_scoreboard", "issue.cycles_per_issue", "occupancy.achieved_pct"),
    collect="--section SpeedOfLight --section WarpStateStats --section Occupancy",
)
def apply(k: KernelView) -> Finding | None:
    latency = latency_bound(k)
    achieved = k.metric("occupancy.achieved_pct")
    if latency is None or achieved < HIGH_OCCUPANCY_PCT or atomic_dominated(k):
        return None
    # impact = long-scoreboard share of CPI x (1 - busiest roofline / 100): the stalled part
    # of the time, as far as the busiest unit leaves room before it becomes the limit.
    impact = clamp(latency.share * (1 - latency.roofline_pct / 100))
    evidence = latency.evidence + [k.evidence("occupancy.achieved_pct", HIGH_OCCUPANCY_PCT, ">=")]
    loads = ""
    if k.has("global.load_requests", "global.load_sectors_per_request"):
        evidence += [k.evidence("global.load_requests"), k.evidence("global.load_sectors_per_request")]
        per_request = k.metric("global.load_sectors_per_request")
        loads = (
            f" It issues {num(k.metric('global.load_requests'))} warp-level global loads averaging {num(per_request)} "
            f"sector{'' if per_request == 1 else 's'} per request: too few bytes in flight to keep the memory system busy."
        )
    # Little's law: to reach the busiest roofline a warp needs ~100/busiest x the loads in flight.
    in_flight = 100 / max(latency.roofline_pct, 1.0)
    return Finding(
        category="memory_latency",
        rule="memory-latency",
        impact=impact,
        confidence=0.85 if latency.share >= 0.75 else 0.7,
        evidence=evidence,
        explanation=(
            f"Warps wait for memory most of the time: {num(latency.stall)} of the {num(latency.cpi)} cycles between two "
            f"issues of a warp are long-scoreboard stalls (waiting on global/local load results), while the busiest unit "
            f"runs at only {pct(latency.roofline_pct)} of its peak (below {pct(FAR_FROM_ROOFLINE_PCT)}) and achieved "
            f"occupancy is already {pct(achieved)}. Neither bandwidth nor compute limits the kernel: each warp has too "
            f"little independent memory work in flight to cover the load latency, so more warps would not help.{loads}"
        ),
        suggestions=[
            (
                f"Give each warp more independent loads in flight: by Little's law it needs about {in_flight:.1f}x the "
                "current memory-level parallelism to reach the busiest roofline. Unroll loops so several iterations' loads "
                "are issued before their results are used, or process several independent elements/chains per thread."
            ),
            (
                "Break dependent load chains (pointer chasing, index -> value -> index): restructure the data (arrays of "
                "indices resolved in bulk, flattened trees) so addresses are known ahead of the loads."
            ),
            (
                "Prefetch the next tile while computing on the current one (register double-buffering, cp.async or TMA "
                "into shared memory) so the latency overlaps work."
            ),
            (
                "Improve locality so the waits are shorter: reorder accesses to hit L1/L2 (blocking, sorting indices), "
                "and keep hot read-only data small enough to stay cached."
            ),
        ],
    )
