"""Every kernel's verdict, never a silence: one sentence naming what bounds it and how much of its
time can be won.

- a finding with recoverable time: its category, the time, how, and the speed of light;
- nothing to win (or no finding): the nearest limiter with its margin, "at speed of light: DRAM
  bandwidth 91%", or how far the kernel is from its attainable time when no rule names why;
- nothing the model can weigh: the top finding by the rules' impact, or "not assessed" with what
  to collect.

The score is graded, never a cliff: the share of the kernel's time the top finding (or library
lever) can win, 0..1. ``kind`` says which sentence was chosen: "finding" from
NOTABLE_SHARE of the time on, "speed_of_light" below it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keet.format import si

if TYPE_CHECKING:
    from keet.diagnosis import Diagnosis

# From this share of the kernel's time the top finding leads the verdict; below it the kernel is
# "at speed of light" with its limiter named (the findings stay listed, each with its time).
NOTABLE_SHARE = 0.05
# Below this ratio of the limiter's time to the next limit's, the two limit the kernel together
# (speeding up one alone wins at most that ratio): the verdict names both.
CLEAR_MARGIN = 1.25


@dataclass
class Verdict:
    kind: str  # "finding" | "speed_of_light" | "rules_only" | "not_assessed"
    category: str | None  # the top finding's category, or the limiter's
    text: str
    score: float | None  # share of the kernel's time the top change can win (None: not weighed)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "category": self.category, "text": self.text, "score": self.score}


def verdict(diagnosis: Diagnosis) -> Verdict:
    sol = diagnosis.speed_of_light
    library = diagnosis.library
    prefix = ""
    if library is not None:
        what = f" ({library.kind.what})" if library.kind else ""
        prefix = f"{library.library.name} library kernel{what}: "
    measured = diagnosis.kernel.duration_ns
    reported = diagnosis.reported()
    top, top_time = reported[0] if reported else (None, None)
    lever = diagnosis.lever
    if sol is None or not sol.assessed:
        if top is not None:
            reason = f"; recoverable time not assessed ({sol.not_assessed})" if sol is not None and sol.not_assessed else ""
            return Verdict("rules_only", top.category,
                           f"{prefix}{top.category} (impact {top.impact:.0%} of runtime, confidence {top.confidence:.0%}){reason}.", None)
        reason = sol.not_assessed if sol is not None else "the model was not asked"
        return Verdict("not_assessed", None, f"{prefix}No bottleneck can be named from the evidence this profile holds: no rule "
                       f"found one, and the speed of light is not assessed ({reason}).", None)
    best = max((r for r in (top_time, lever) if r is not None), key=lambda r: r.ns, default=None)
    score = (best.ns / measured) if best is not None and measured else 0.0
    margin = _margin(sol)
    if best is not None and score >= NOTABLE_SHARE:
        if top is not None and best is top_time:
            head = f"{top.category}: {si(best.ns, 'ns')} recoverable ({score:.0%} of its time) by {best.how}"
            category = top.category
        else:  # the library lever wins more than any finding
            head = f"{si(best.ns, 'ns')} recoverable ({score:.0%} of its time) by {best.how}"
            category = top.category if top is not None else sol.category
        return Verdict("finding", category, f"{prefix}{head}; {margin}.", round(score, 4))
    category = top.category if top is not None else sol.category
    rest = f"; top finding {top.category} ({si(top_time.ns if top_time else 0.0, 'ns')} recoverable)" if top is not None else ""
    if sol.fraction is not None and sol.fraction >= 0.8:
        return Verdict("speed_of_light", category,
                       f"{prefix}at speed of light: {sol.limiter} {min(sol.fraction, 1.0):.0%}{_close(sol)}{rest}.", round(score, 4))
    return Verdict("speed_of_light", category,
                   f"{prefix}{margin}; no rule names an inefficiency the model can weigh{rest}.", round(score, 4))


def _margin(sol) -> str:
    """How far the kernel runs from its speed of light, in a few words."""
    if sol.fraction is None:
        return "speed of light not assessed"
    if sol.fraction >= 1.0:
        return f"at speed of light ({sol.limiter}{_close(sol)})"
    if sol.fraction >= 0.5:
        return f"at {sol.fraction:.0%} of its {sol.limiter} speed of light{_close(sol)}"
    return f"{1 / sol.fraction:.1f}x from its attainable {si(sol.attainable_ns, 'ns')}, limited by {sol.limiter}{_close(sol)}"


def _close(sol) -> str:
    """", with L2 bandwidth close behind (1.08x)" when the next limit nearly binds too."""
    if sol.margin is None or sol.next_limiter is None or sol.margin >= CLEAR_MARGIN:
        return ""
    return f", with {sol.next_limiter} close behind ({sol.margin:.2f}x)"
