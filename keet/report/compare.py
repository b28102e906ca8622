"""Several profiles side by side: the same kernels matched, their deltas explained by the rules.

The first profile is the baseline (before a change, or one GPU); every other profile is
compared with it. Kernels match by exact name, then by function name (a template argument or
a parameter changed), then, for two profiles of one kernel each, with each other (a renamed
kernel). A delta is explained by what the rules found on each side: bottlenecks that went
away, appeared or stayed, each with its evidence metric before and after, and by the model's
breakdown: which unit's time changed most, and what the hardware alone would predict when
the GPUs differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from keet.explain import metric_value
from keet.format import si
from keet.profile import Kernel, Profile

# Findings smaller than this on both sides are noise for a comparison.
MIN_SHOWN_IMPACT = 0.05
# Durations within this fraction of each other are reported as the same time: a single profiled
# launch varies by about that much from run to run.
SAME_TIME = 0.02


@dataclass
class Side:
    """One kernel of one profile, as the comparison needs it."""

    profile: Profile
    kernel: Kernel
    anchor: str
    findings: list[dict[str, Any]]  # keet explain's diagnosis entries
    prediction: Any | None  # GPUPrediction on the profile's own GPU
    work: Any | None  # the model's features


@dataclass
class KernelDelta:
    name: str
    baseline: Side
    other: Side
    speedup: float | None  # baseline time / other time
    resolved: list[dict[str, Any]] = field(default_factory=list)
    appeared: list[dict[str, Any]] = field(default_factory=list)
    persisting: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    explanation: list[str] = field(default_factory=list)


@dataclass
class Comparison:
    baseline: str  # label of the baseline profile
    others: list[str]
    deltas: list[list[KernelDelta]]  # per other profile
    unmatched: list[list[str]]  # per other profile: kernels without a partner (either side)


def match(base: list[Kernel], other: list[Kernel]) -> tuple[list[tuple[Kernel, Kernel]], list[str]]:
    """Pairs of the same kernel in two profiles, and the names left without a partner."""
    pairs: list[tuple[Kernel, Kernel]] = []
    left, right = list(base), list(other)
    for key in (lambda k: k.name, lambda k: k.function_name or k.name):
        for kernel in list(left):
            partner = next((o for o in right if key(o) == key(kernel)), None)
            if partner is not None:
                pairs.append((kernel, partner))
                left.remove(kernel)
                right.remove(partner)
    if len(base) == len(other) == 1 and left and right:
        pairs.append((left.pop(), right.pop()))
    return pairs, [k.name for k in left] + [k.name for k in right]


def _evidence_change(finding: dict[str, Any], side: Side, found_before: bool = True) -> str:
    """"metric a -> b" for a finding's first evidence metric, read on the other side too
    (`side` is the side the finding was not found on)."""
    evidence = finding["evidence"][0] if finding["evidence"] else None
    if evidence is None:
        return ""
    read = side.profile.value(side.kernel, evidence["metric"])
    found = metric_value(evidence["value"], evidence["unit"])
    read_text = metric_value(read, evidence["unit"]) if read is not None else "not measured"
    before, after = (found, read_text) if found_before else (read_text, found)
    return f"{evidence['metric']} {before} -> {after}"


def _model_sentence(base: Side, other: Side) -> str | None:
    """Which unit's predicted time changed most, and (across GPUs) what the hardware alone
    would give: the baseline's work predicted on the other GPU."""
    from perfmodel.hardware import gpu, gpu_id_for_device_name
    from perfmodel.model import predict

    a, b = base.prediction, other.prediction
    if a is None or b is None or a.predicted_ns is None or b.predicted_ns is None:
        return None
    components = set(a.breakdown) | set(b.breakdown)
    biggest = max(components, key=lambda c: abs(a.breakdown.get(c, 0.0) - b.breakdown.get(c, 0.0)))
    sentence = (f"Model: {si(a.predicted_ns, 'ns')} ({a.bound}-bound) -> {si(b.predicted_ns, 'ns')} ({b.bound}-bound); "
                f"the largest change is the {biggest} time, {si(a.breakdown.get(biggest, 0.0), 'ns')} -> "
                f"{si(b.breakdown.get(biggest, 0.0), 'ns')}.")
    other_gpu = gpu_id_for_device_name(other.profile.device.name)
    if base.work is not None and other_gpu and other_gpu != a.gpu:
        try:
            moved = predict(gpu(other_gpu), base.work)
        except ValueError:
            return sentence
        sentence += (f" The baseline's work on {other_gpu} predicts {si(moved.predicted_ns, 'ns')} "
                     f"({a.predicted_ns / moved.predicted_ns:.2f}x from the hardware alone).")
    return sentence


def delta(name: str, base: Side, other: Side) -> KernelDelta:
    """The comparison of one kernel: speedup, findings gone / new / kept, and why."""
    speedup = (base.kernel.duration_ns / other.kernel.duration_ns) if base.kernel.duration_ns and other.kernel.duration_ns else None
    shown = lambda findings: {f["category"]: f for f in findings if f["impact"] >= MIN_SHOWN_IMPACT}
    before, after = shown(base.findings), shown(other.findings)
    result = KernelDelta(name, base, other, speedup)
    result.resolved = [f for c, f in before.items() if c not in after]
    result.appeared = [f for c, f in after.items() if c not in before]
    result.persisting = [(f, after[c]) for c, f in before.items() if c in after]
    if speedup is not None:
        times = f"{si(base.kernel.duration_ns, 'ns')} -> {si(other.kernel.duration_ns, 'ns')}"
        if abs(speedup - 1) < SAME_TIME:
            result.explanation.append(f"About the same time: {times}.")
        else:
            verb, factor = ("faster", speedup) if speedup > 1 else ("slower", 1 / speedup)
            result.explanation.append(f"{factor:.2f}x {verb}: {times}.")
    for f in result.resolved:
        result.explanation.append(f"No longer found: {f['category']} (impact {f['impact']:.0%} before); {_evidence_change(f, other)}.")
    for f in result.appeared:
        result.explanation.append(f"Newly found: {f['category']} (impact {f['impact']:.0%}); {_evidence_change(f, base, found_before=False)}.")
    for f, g in result.persisting:
        result.explanation.append(f"Still found: {f['category']} (impact {f['impact']:.0%} -> {g['impact']:.0%}); {_evidence_change(f, other)}.")
    if (model := _model_sentence(base, other)) is not None:
        result.explanation.append(model)
    return result
