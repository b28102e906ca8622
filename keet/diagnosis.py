"""Run the rules over each kernel and rank what they find: the dominant bottleneck first.

Ranking (docs/rules.md): findings are ordered by impact x confidence, then every finding
that *causes* another one ranked above it (uncoalesced accesses inflating DRAM traffic,
bank conflicts saturating shared memory, spills filling the L2, a register limit starving
latency hiding) is moved in front of its symptom, because fixing the cause is what helps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from keet.profile import Kernel, Profile
from keet.rules import AMD_RULES, RULES, Finding, KernelView, Rule
from keet.rules.amd_base import Unassessed

# A cause outranks its symptom when fixing it would remove at least this share of the
# symptom's load (e.g. excess sectors that are half of the saturated L2's traffic).
CAUSE_SHARE = 0.5
# Findings with less than this fraction of runtime at stake are not worth a reader's time.
MIN_IMPACT = 0.02


@dataclass
class NotAssessed:
    """A rule that could not judge this kernel: what it needed and how to collect it."""

    category: str
    rule: str
    missing: list[str]
    collect: str

    def as_dict(self) -> dict[str, Any]:
        return {"category": self.category, "rule": self.rule, "missing": self.missing, "collect": self.collect}


@dataclass
class Diagnosis:
    kernel: Kernel
    findings: list[Finding]
    not_assessed: list[NotAssessed] = field(default_factory=list)


def rank(findings: list[Finding]) -> list[Finding]:
    """Impact x confidence, then causes moved before the symptoms they explain."""
    ordered = sorted(findings, key=lambda f: (-(f.impact * f.confidence), f.category))
    moved = True
    while moved:
        moved = False
        for index, cause in enumerate(ordered):
            symptom_index = next(
                (i for i, s in enumerate(ordered[:index]) if s.category in cause.explains and cause.impact >= CAUSE_SHARE * s.impact),
                None,
            )
            if symptom_index is not None:
                ordered.insert(symptom_index, ordered.pop(index))
                moved = True
                break
    return ordered


def applies(rule: Rule, vendor: str) -> bool:
    """AMD rules (ids ``amd-*``) judge AMD profiles only, the others every other profile."""
    return rule.id.startswith("amd-") == (vendor == "amd")


def diagnose_kernel(profile: Profile, kernel: Kernel) -> Diagnosis:
    view = KernelView(profile, kernel)
    findings: list[Finding] = []
    not_assessed: list[NotAssessed] = []
    for rule in (*RULES, *AMD_RULES):
        if not applies(rule, view.device.vendor):
            continue
        absent = [name for name in rule.needs if view.metric(name) is None]
        if absent:
            not_assessed.append(NotAssessed(rule.category, rule.id, absent, rule.collect))
            continue
        finding = rule.apply(view)
        if isinstance(finding, Unassessed):  # metrics present, the device fact to judge them by is not
            not_assessed.append(NotAssessed(rule.category, rule.id, finding.missing, finding.collect))
            continue
        if finding is not None and finding.impact >= MIN_IMPACT:
            findings.append(finding)
    return Diagnosis(kernel, rank(findings), not_assessed)


def diagnose(profile: Profile, kernels: list[Kernel] | None = None) -> list[Diagnosis]:
    """A diagnosis per kernel (all kernels when none are given), in the order given."""
    return [diagnose_kernel(profile, kernel) for kernel in (profile.kernels if kernels is None else kernels)]
