"""Run the rules over each kernel, weigh what they find with the model, and rank it.

Diagnosis v2 (docs/rules.md, "Speed of light and recoverable time"): each kernel gets its speed
of light (keet.diagnosis.speed_of_light: the model's time for its own work, against the measured
duration), each finding its recoverable time (keet.diagnosis.recoverable: the model asked what
the kernel would take with that inefficiency removed, scaled to the measured time), library
kernels their library and the caller's levers (keet.diagnosis.libraries), and every kernel a
verdict, never a silence (keet.diagnosis.verdict).

Ranking: findings by recoverable time as a share of the kernel's time, graded (no threshold),
with the rules' order as a small tie-break weight: impact x confidence, then every finding that
*causes* another one ranked above it (uncoalesced accesses inflating DRAM traffic, bank conflicts
saturating shared memory, spills filling the L2, a register limit starving latency hiding) moved
in front of its symptom. Where the model cannot weigh a kernel, the rules' order stands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from keet.diagnosis.libraries import (
    TINY_LAUNCH_LEVER,
    TINY_LAUNCH_NS,
    LibraryKernel,
    classify,
)
from keet.diagnosis.recoverable import Recoverable, answers, lever, recoverable
from keet.diagnosis.speed_of_light import (
    SPEED_OF_LIGHT_RULE,
    ModelView,
    SpeedOfLight,
    below_speed_of_light,
    model_view,
    speed_of_light,
)
from keet.diagnosis.verdict import Verdict, verdict
from keet.profile import Kernel, Profile, SourceRequest
from keet.rules import AMD_RULES, RULES, Finding, KernelView, Rule
from keet.rules.amd_base import Unassessed
from perfmodel.features import prefetch, source_request

# A cause outranks its symptom when fixing it would remove at least this share of the
# symptom's load (e.g. excess sectors that are half of the saturated L2's traffic).
CAUSE_SHARE = 0.5
# Findings with less than this fraction of runtime at stake are not worth a reader's time.
MIN_IMPACT = 0.02
# Weight of the rules' own score (impact x confidence, 0..1) next to the recoverable share of the
# kernel's time (0..1) in the ranking: enough to order findings the model weighs alike (a bound
# finding at speed of light and an inefficiency with nothing to recover), too little to
# overturn a recoverable-time difference of more than a few percent of the kernel's time.
RULE_WEIGHT = 0.05


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
    speed_of_light: SpeedOfLight | None = None
    recoverable: list[Recoverable | None] = field(default_factory=list)  # per finding, in order
    library: LibraryKernel | None = None
    lever: Recoverable | None = None  # what the library kernel's lever is worth (model_lever)
    verdict: Verdict | None = None
    # where no rule speaks: the finding the speed of light makes (rule "speed-of-light"), reported
    # in the rules' place (``reported``) but kept apart from ``findings``, which are the rules' own
    below: tuple[Finding, Recoverable | None] | None = None
    view: ModelView | None = field(default=None, repr=False)  # the model applied to the kernel, where it could be

    def reported(self) -> list[tuple[Finding, Recoverable | None]]:
        """The findings a reader sees, ranked, each with its recoverable time: the rules', or
        the speed of light's where no rule found anything."""
        if self.findings:
            return list(zip(self.findings, self.recoverable or [None] * len(self.findings)))
        return [self.below] if self.below is not None else []

    def recoverable_of(self, finding: Finding) -> Recoverable | None:
        for f, r in zip(self.findings, self.recoverable):
            if f is finding:
                return r
        return None

    @property
    def recoverable_ns(self) -> float | None:
        """The most measured time one change could win: the top finding's recoverable time
        (findings overlap, so they do not add), or the library lever's where larger."""
        best = self.best_change()
        return best[1].ns if best else None

    def best_change(self) -> tuple[str, Recoverable] | None:
        """The one change that wins the most measured time, named so that the same change on
        several launches can be added up: the library lever ("lever:tf32", ...) where its time
        is the largest (a finding may carry it), else the top finding's category."""
        lever = f"lever:{self.library.model_lever}" if self.library is not None else None
        found = [(lever if r is self.lever else f.category, r) for f, r in self.reported() if r is not None]
        if self.lever is not None:
            found.append((lever, self.lever))
        return max(found, key=lambda item: item[1].ns, default=None)

    def finding_dicts(self) -> list[dict[str, Any]]:
        """The findings as the JSON contract has them, each with its recoverable time. A library
        kernel's suggestions are the caller's levers; the rule's code changes stay beside them
        (code_suggestions), for whoever maintains the library."""
        out = []
        for finding, found in self.reported():
            entry = finding.as_dict()
            entry.update(found.as_dict() if found is not None else {"recoverable_ns": None})
            if self.library is not None and self.levers():
                if finding.rule != SPEED_OF_LIGHT_RULE:  # the rule's code changes, for the library's maintainers
                    entry["code_suggestions"] = entry["suggestions"]
                entry["suggestions"] = self.levers()
            out.append(entry)
        return out

    def as_dict(self) -> dict[str, Any]:
        """The diagnosis v2 fields of a kernel's JSON entry (besides its findings)."""
        return {
            "speed_of_light": self.speed_of_light.as_dict() if self.speed_of_light else None,
            "recoverable_ns": self.recoverable_ns,
            "verdict": self.verdict.as_dict() if self.verdict else None,
            "library": self._library_dict(),
        }

    def _library_dict(self) -> dict[str, Any] | None:
        if self.library is None:
            return None
        found = self.library.as_dict()
        found["levers"] = self.levers()
        found["lever_recoverable"] = self.lever.as_dict() if self.lever else None
        return found

    def levers(self) -> list[str]:
        """The caller's levers of a library kernel (CUDA graphs first for a tiny launch)."""
        if self.library is None:
            return []
        tiny = self.kernel.duration_ns is not None and self.kernel.duration_ns < TINY_LAUNCH_NS
        return [*([TINY_LAUNCH_LEVER] if tiny else []), *self.library.levers]


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


def weigh(ordered: list[Finding], found: list[Recoverable | None], measured: float | None) -> list[int]:
    """Positions of the findings ranked by recoverable share of the kernel's time plus the rules'
    score (RULE_WEIGHT); findings keep the rules' order where none has a recoverable time."""
    if not measured or all(r is None for r in found):
        return list(range(len(ordered)))
    count = len(ordered)

    def key(index: int) -> tuple[float, int]:
        share = (found[index].ns / measured) if found[index] is not None else 0.0
        # the rules' order (causes before symptoms) as a graded bonus: first gets the most
        order = (count - index) / count
        f = ordered[index]
        return (-(share + RULE_WEIGHT * (f.impact * f.confidence + order) / 2), index)

    return sorted(range(count), key=key)


def diagnose_kernel(profile: Profile, kernel: Kernel, model: bool = True) -> Diagnosis:
    """The rules' findings on one kernel, weighed by the model (speed of light, recoverable
    time: ``model=False`` leaves them out), ranked, with the kernel's library and verdict."""
    diagnosis = _rules(profile, kernel)
    diagnosis.library = classify(kernel.name)
    if not model:
        diagnosis.verdict = verdict(diagnosis)
        return diagnosis
    view = model_view(profile, kernel)
    diagnosis.view = view if isinstance(view, ModelView) else None
    diagnosis.speed_of_light = speed_of_light(view)
    if isinstance(view, ModelView) and not diagnosis.findings:  # no silence: the nearest limiter speaks
        found = below_speed_of_light(diagnosis.speed_of_light)
        if found is not None:
            diagnosis.below = (found, recoverable(view, found))
    if isinstance(view, ModelView):
        found = [recoverable(view, f) for f in diagnosis.findings]
        if diagnosis.library is not None:
            name = diagnosis.library.model_lever
            diagnosis.lever = lever(view, name)
            if diagnosis.lever is not None:  # a finding the lever answers takes its time where larger
                found = [diagnosis.lever if answers(name, f.category) and (r is None or diagnosis.lever.ns > r.ns) else r
                         for f, r in zip(diagnosis.findings, found)]
        order = weigh(diagnosis.findings, found, view.measured_ns)
        diagnosis.findings = [diagnosis.findings[i] for i in order]
        diagnosis.recoverable = [found[i] for i in order]
    else:
        diagnosis.recoverable = [None] * len(diagnosis.findings)
    diagnosis.verdict = verdict(diagnosis)
    return diagnosis


def _rules(profile: Profile, kernel: Kernel) -> Diagnosis:
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


_RULE_LINES = frozenset(counter for rule in RULES for counter in rule.lines)


def read_ahead() -> SourceRequest:
    """The per-instruction counters :func:`diagnose` reads of every kernel, for a reader to read
    with the kernels' metrics (``load_profile(path, read_ahead=read_ahead())``)."""
    return source_request(_RULE_LINES)


def diagnose(profile: Profile, kernels: list[Kernel] | None = None, model: bool = True) -> list[Diagnosis]:
    """A diagnosis per kernel (all kernels when none are given), in the order given."""
    kernels = profile.kernels if kernels is None else kernels
    if model:  # the reader reads the model's and the rules' per-instruction counters ahead
        prefetch(kernels, also=_RULE_LINES)
    return [diagnose_kernel(profile, kernel, model) for kernel in kernels]
