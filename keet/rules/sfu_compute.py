"""SFU compute: the XU pipe (MUFU transcendentals, conversions) runs near its peak."""

from keet.rules.base import Finding, KernelView, active_share, clamp, num, pct, rule

# Above this share of peak over active cycles the XU pipe, at 1/8 of the FP32 lane count, is the
# SM's busiest unit: the kernel sits within 1.7x of its special-function throughput.
BOUND_PCT = 60.0
# At and above this the pipe is saturated: only fewer XU instructions help.
SATURATED_PCT = 80.0


@rule(
    "sfu-compute",
    "sfu_compute",
    "XU (special-function) pipe near its peak: time is transcendentals and conversions over the SFU throughput",
    needs=("pipe.xu_pct",),
    collect="--section ComputeWorkloadAnalysis --section SpeedOfLight",
)
def apply(k: KernelView) -> Finding | None:
    xu = k.metric("pipe.xu_pct")
    if xu < BOUND_PCT:
        return None
    evidence = [k.evidence("pipe.xu_pct", BOUND_PCT, ">=")]

    active, idle_note = active_share(k, evidence, "XU pipe")
    issue = ""
    if k.has("issue.active_pct"):
        evidence.append(k.evidence("issue.active_pct"))
        issue = (
            f" The schedulers issue in only {pct(k.metric('issue.active_pct'))} of the cycles: each special-function "
            "instruction occupies the narrow XU pipe for several cycles, so the other pipes starve behind it."
        )
    queue = ""
    if k.has("stall.mio_throttle", "issue.cycles_per_issue"):
        evidence += [k.evidence("stall.mio_throttle"), k.evidence("issue.cycles_per_issue")]
        queue = (
            f" Warps wait {num(k.metric('stall.mio_throttle'))} of their {num(k.metric('issue.cycles_per_issue'))} cycles "
            "between issues on the full MIO queue that feeds it."
        )

    # impact = XU pipe utilisation (share of peak over active cycles) x SM active cycles / elapsed cycles
    return Finding(
        category="sfu_compute",
        rule="sfu-compute",
        impact=clamp(xu / 100 * active),
        confidence=0.9 if xu >= SATURATED_PCT else 0.7,
        evidence=evidence,
        explanation=(
            f"The XU (special-function) pipe is busy {pct(xu)} of the active cycles (bound at {pct(BOUND_PCT)} and above). "
            f"It executes the MUFU transcendentals (sin, cos, exp2, log2, rsqrt, rcp) and int/float conversions at an "
            f"eighth of the FP32 rate, so these instructions set the kernel's pace.{issue}{queue}{idle_note}"
        ),
        suggestions=[
            "Move part of the transcendental work to the FMA pipe, which has 8x the lanes: a short minimax polynomial (a few FFMAs after range reduction) for exp, sin or cos on a share of the elements balances the two pipes.",
            "Call fewer special functions: sincosf instead of sinf and cosf, exp2f on pre-scaled arguments instead of expf, rsqrtf instead of 1.0f/sqrtf, and reuse results (e.g. exp(a+b) = exp(a)*exp(b) in recurrences).",
            "Check for int<->float conversions (I2F/F2I also run on the XU pipe): keep loop counters and indices integer, convert once outside the loop, or use __int_as_float tricks for powers of two.",
            f"The pipe is at {xu:.0f}% of peak: {'it is saturated, so only fewer XU instructions help.' if xu >= SATURATED_PCT else f'more independent work per thread could still gain up to {90 / xu:.2g}x.'}",
        ],
    )
