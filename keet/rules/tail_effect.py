"""Tail effect: the last, partial wave of blocks keeps a few SMs busy while the rest idle.

A grid runs in waves of (SMs x blocks per SM) blocks. With W = launch.waves_per_sm waves and
blocks of equal length, the kernel takes ceil(W) wave times for W waves of work, so the
SMs idle for (ceil(W) - W) / ceil(W) of it. That matters when W is small: with many waves
the partial one is a small share. The measured share of elapsed cycles the SMs were active
confirms (or not) that the tail blocks really run as long as the others.
"""

from __future__ import annotations

import math

from keet.rules.base import Finding, KernelView, clamp, num, rule

# Below one wave there is no tail (all blocks run at once; fewer blocks than SMs is the
# small-grid rule's case).
MIN_WAVES = 1.0
# From four waves on, the partial wave is at most a fifth of the time and usually less, as
# blocks of later waves start staggered; the tail is no longer a first-order cost.
MAX_WAVES = 4.0
# Below this idle share of the runtime the tail is not worth a finding.
MIN_IMPACT = 0.1
# The measured idle share (1 - SM active cycles / elapsed cycles) must reach this part of
# the predicted one to confirm the tail blocks last as long as full-wave blocks.
CONFIRM_SHARE = 0.5
# Granularity factors to suggest: split each block's work this many times finer.
FINER = (4, 8)


def idle_share(waves: float) -> float:
    """(ceil(W) - W) / ceil(W): the idle share of ceil(W) wave times for W waves of work."""
    whole = math.ceil(waves - 1e-6)
    return (whole - waves) / whole if whole > 0 else 0.0


@rule(
    "tail-effect",
    "tail_effect",
    "A partial last wave of blocks leaves most SMs idle for a whole block time",
    needs=("launch.waves_per_sm",),
    collect="--section LaunchStats --section Occupancy --section SpeedOfLight",
)
def apply(k: KernelView) -> Finding | None:
    waves = k.metric("launch.waves_per_sm")
    if waves < MIN_WAVES or waves >= MAX_WAVES:
        return None
    # impact = (ceil(W) - W) / ceil(W), W = launch.waves_per_sm: the SMs' idle share of the
    # ceil(W) wave times spent on W waves of work.
    impact = clamp(idle_share(waves))
    if impact < MIN_IMPACT:
        return None
    evidence = [k.evidence("launch.waves_per_sm", MAX_WAVES, "<")]
    whole = math.ceil(waves - 1e-6)
    measured, confidence = "", 0.7
    if k.has("sm_active_cycles", "cycles_elapsed") and k.metric("cycles_elapsed") > 0:
        active, elapsed = k.metric("sm_active_cycles"), k.metric("cycles_elapsed")
        evidence += [k.evidence("sm_active_cycles"), k.evidence("cycles_elapsed")]
        confirmed = 1 - active / elapsed >= CONFIRM_SHARE * impact
        confidence = 0.9 if confirmed else 0.5
        measured = (
            f" The measurement {'confirms' if confirmed else 'does not confirm'} it: the SMs were active for "
            f"{num(active)} of {num(elapsed)} elapsed cycles on average."
        )
    grid_text, per_wave = "", None
    if k.has("launch.grid_size"):
        grid = k.metric("launch.grid_size")
        evidence.append(k.evidence("launch.grid_size"))
        per_wave = round(grid / waves)
        grid_text = f"'s {num(grid)} blocks"
    explanation = (
        f"The grid{grid_text} make{'s' if not grid_text else ''} {num(waves)} waves (a wave is the blocks all SMs hold at once), so the last wave is "
        f"partial: if blocks take equally long, the kernel spends the time of whole waves on a fraction of a wave's "
        f"work, and most SMs idle while the last blocks finish.{measured}"
    )

    suggestions = []
    if per_wave:
        target = max(1, round(waves)) * per_wave
        suggestions.append(
            f"Size the grid to whole waves: one wave holds {per_wave} blocks, so launch {target} blocks "
            f"({max(1, round(waves))} full wave{'s' if round(waves) > 1 else ''}) and spread the same work over them, "
            f"e.g. a grid-stride loop or a persistent kernel taking work items from a counter; the runtime would drop "
            f"from {whole} to about {waves:.3g} wave times."
        )
    finer = [f"{f}x finer -> {idle_share(waves * f):.0%} idle" for f in FINER]
    suggestions += [
        (
            "Or make the blocks smaller and more numerous so the partial wave is a small share: with the work per block "
            f"split {', '.join(finer)} (the last partial wave's share of the runtime)."
        ),
        (
            "If blocks take unequal time, give the longest work to the first blocks (sort work items by cost) so the "
            "stragglers do not form the tail."
        ),
        "Run independent work concurrently in another stream to fill the SMs the tail leaves idle.",
    ]
    return Finding(
        category="tail_effect",
        rule="tail-effect",
        impact=impact,
        confidence=confidence,
        evidence=evidence,
        explanation=explanation,
        suggestions=suggestions,
        # While the tail runs most SMs idle, so a compute unit that is saturated while busy is
        # busy for less of the runtime: when the idle share is at least half the compute
        # finding's impact, evening out the waves is the first fix (ranking: cause first).
        explains=("fp32_compute", "fp64_compute", "int_compute", "sfu_compute", "tensor_compute", "instruction_issue"),
    )
