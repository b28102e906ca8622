"""The same kernels in two profiles: matched, their time changes judged against the noise, and
each change explained by the rules and the model.

Used by `keet compare` and `keet explain --baseline` (keet.compare renders it), by the HTML
report's comparison of several profiles (keet.report) and by the LLM agent's `compare` tool
(keet.llm.tools): one matching, one verdict, one explanation for all of them.

Matching (:func:`pair_up`). A kernel is identified by its name, its function name, its launch
configuration (grid, block) and the NVTX range it ran in. Pairs are made in tiers, each only
among what the earlier tiers left:

1. same name, grid, block and NVTX range;
2. same name (the launch configuration changed, e.g. a tuned block size, or another GPU's
   library heuristic);
3. same function name with the same launch, then the same function name alone (template
   arguments or parameters changed);
4. the only kernel left on each side (a renamed kernel).

Tiers 2-4 stay inside an NVTX range that both profiles have: a launch in a range the other
profile also ran is only paired within that range. Outside shared ranges (no NVTX, or a range
renamed), the whole profile is the scope. Tier 1 pairs identical identities in profile order;
tiers 2 and 3 pair only when both sides hold the same number of candidates for a key (then in
profile order), so that an ambiguous name is left unpaired rather than guessed.

Time and noise. `keet compare` groups identical launches of one kernel (same name, grid, block
and NVTX range) and takes their median time; a timings file (repeated CUPTI runs, as the corpus
captures them) replaces the profile's durations where it covers a launch. The noise of one side
is the spread of its repeated measurements, (max - min) / median, where it has two or more;
a single measurement gets DEFAULT_NOISE. A change is "unchanged" within the larger of the two
sides' noise, "faster" or "slower" beyond it, and a "regression" when it is slower beyond both
the noise and the threshold.

NVTX ranges. A fusion or a split changes the kernels so that they do not pair one to one: every
range both profiles ran whose launches do not all pair within it is compared by the total time
of its launches, with the same verdicts.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from keet.format import metric_value, si
from keet.profile import Kernel, Profile

# Findings smaller than this on both sides are noise for a comparison.
MIN_SHOWN_IMPACT = 0.05
# A single profiled launch varies by about this much from run to run (Nsight Compute on the
# zoo's repeated captures): durations closer than this are the same time when nothing was
# measured more than once.
DEFAULT_NOISE = 0.02
# The relative slowdown `keet compare` calls a regression when not told otherwise.
DEFAULT_THRESHOLD = 0.05
# The model terms (breakdown components) a kernel change lists, largest change first.
TOP_TERMS = 3

# Verdicts, from worst to best; "untimed": a side has no duration to compare.
STATUSES = ("regression", "slower", "untimed", "unchanged", "faster")

T = TypeVar("T")


# ---------------------------------------------------------------- identities and matching


@dataclass(frozen=True)
class Identity:
    """What tells a kernel launch apart for matching."""

    name: str
    function: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    nvtx: str | None


def kernel_identity(kernel: Kernel, nvtx: str | None = None) -> Identity:
    """A launch's identity; ``nvtx`` replaces the NVTX range the profile recorded (a range
    renamed for the comparison)."""
    return Identity(kernel.name, kernel.function_name or kernel.name, kernel.grid, kernel.block,
                    nvtx if nvtx is not None else kernel.attributes.get("nvtx"))


def differences(a: Identity, b: Identity) -> list[str]:
    """What differs between two matched identities, in words used by every output."""
    found = []
    if a.name != b.name:
        found.append("name")
    if (a.grid, a.block) != (b.grid, b.block):
        found.append("launch configuration")
    if a.nvtx != b.nvtx:
        found.append("NVTX range")
    return found


def _grouped(indices: list[int], items: Sequence, key: Callable[..., Hashable]) -> dict[Hashable, list[int]]:
    """The indices grouped by the key of their item, in their order within each group."""
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for index in indices:
        groups[key(items[index])].append(index)
    return groups


def pair_up(left: Sequence[T], right: Sequence[T], identity: Callable[[T], Identity]) -> tuple[list[tuple[T, T, str]], list[T], list[T]]:
    """The tiered matching of the module docstring: (left, right, tier) pairs in left's order,
    then what is left on each side. The tier is "name", "function" or "alone"."""
    ids_left, ids_right = [identity(x) for x in left], [identity(x) for x in right]
    shared = {i.nvtx for i in ids_left if i.nvtx} & {i.nvtx for i in ids_right if i.nvtx}

    def scope(i: Identity) -> str | None:
        return i.nvtx if i.nvtx in shared else None

    tiers: list[tuple[str, Callable[[Identity], tuple], bool]] = [
        ("name", lambda i: (i.name, i.grid, i.block, i.nvtx), True),
        ("name", lambda i: (i.name, scope(i)), False),
        ("function", lambda i: (i.function, i.grid, i.block, scope(i)), False),
        ("function", lambda i: (i.function, scope(i)), False),
    ]
    free_left, free_right = list(range(len(left))), list(range(len(right)))
    pairs: list[tuple[int, int, str]] = []
    for tier, key, in_order in tiers:
        on_left = _grouped(free_left, ids_left, key)
        on_right = _grouped(free_right, ids_right, key)
        for value, lefts in on_left.items():
            rights = on_right.get(value, [])
            if not rights or (not in_order and len(lefts) != len(rights)):
                continue
            for a, b in zip(lefts, rights):
                pairs.append((a, b, tier))
                free_left.remove(a)
                free_right.remove(b)
    scopes_left = _grouped(free_left, ids_left, scope)
    scopes_right = _grouped(free_right, ids_right, scope)
    for where, lefts in scopes_left.items():
        rights = scopes_right.get(where, [])
        if len(lefts) == 1 and len(rights) == 1:
            pairs.append((lefts[0], rights[0], "alone"))
            free_left.remove(lefts[0])
            free_right.remove(rights[0])
    pairs.sort()
    return ([(left[a], right[b], tier) for a, b, tier in pairs], [left[i] for i in free_left], [right[i] for i in free_right])


def match(base: list[Kernel], other: list[Kernel]) -> tuple[list[tuple[Kernel, Kernel]], list[str]]:
    """Pairs of the same kernel launch in two profiles (the tiers of :func:`pair_up`), and the
    names left without a partner (either side)."""
    pairs, left, right = pair_up(base, other, kernel_identity)
    return [(a, b) for a, b, _tier in pairs], [k.name for k in left] + [k.name for k in right]


# ---------------------------------------------------------------- launches, timing and noise


@dataclass
class Timing:
    """Repeated measurements of one kernel launch configuration."""

    median_ns: float
    min_ns: float
    max_ns: float
    count: int
    source: str  # "profile": its launches' durations; "timings": a timings file's runs
    # The spread when it is not (max - min) / median: several timed launches, each with its own
    # repeated runs, spread as much as the noisiest of them (their medians differ by the work);
    # a profile's launches, as much as those that repeat the same work (_repeat_spread).
    runs_spread: float | None = None

    @property
    def spread(self) -> float | None:
        """(max - min) / median over the repetitions; None for a single measurement."""
        if self.runs_spread is not None or self.source == "profile":
            return self.runs_spread
        if self.count < 2 or self.median_ns <= 0:
            return None
        return (self.max_ns - self.min_ns) / self.median_ns

    def as_dict(self) -> dict[str, Any]:
        return {"median_ns": self.median_ns, "min_ns": self.min_ns, "max_ns": self.max_ns, "count": self.count,
                "source": self.source, "spread": self.spread}


# A timings file's measurement of one launch of a profile, or None where it has none.
TimingSource = Callable[[Profile, Kernel], "Timing | None"]


@dataclass
class Launches:
    """The identical launches of one kernel in one profile: same name, grid, block and NVTX range."""

    profile: Profile
    kernels: list[Kernel]  # profile order
    nvtx: str | None  # the range as compared (a baseline range renamed by the comparison's map)
    timing: Timing | None  # None: no launch has a duration

    @property
    def first(self) -> Kernel:
        return self.kernels[0]

    @property
    def identity(self) -> Identity:
        return kernel_identity(self.first, self.nvtx)

    @property
    def representative(self) -> Kernel:
        """The launch of median duration: its counters stand for the group's diagnosis."""
        timed = sorted(self.kernels, key=lambda k: (k.duration_ns or 0.0, k.id))
        return timed[(len(timed) - 1) // 2]

    @property
    def launches(self) -> int:
        return sum(k.invocations for k in self.kernels)

    @property
    def time_ns(self) -> float | None:
        return self.timing.median_ns if self.timing else None

    @property
    def total_ns(self) -> float | None:
        return self.timing.median_ns * self.launches if self.timing else None

    def as_dict(self) -> dict[str, Any]:
        # the range as the profile recorded it (a baseline range compared under a new name keeps its own)
        return {"name": self.first.name, "function": self.first.function_name, "ids": [k.id for k in self.kernels],
                "grid": list(self.first.grid) if self.first.grid else None,
                "block": list(self.first.block) if self.first.block else None, "nvtx": self.first.attributes.get("nvtx"),
                "launches": self.launches, "time_ns": self.time_ns,
                "timing": self.timing.as_dict() if self.timing else None}


def in_range(stack: str | None, name: str) -> bool:
    """Whether a launch whose NVTX stack is ``stack`` ("a > b", "domain: a > b", stacks of
    several domains joined by " | ", as keet.ingest records them) ran inside range ``name``."""
    if not stack:
        return False
    if stack == name:
        return True
    for piece in stack.split(" | "):
        candidates = [piece, *piece.split(" > ")]
        if ": " in piece:
            candidates += piece.split(": ", 1)[1].split(" > ")
        if name in candidates:
            return True
    return False


def _timing(kernels: list[Kernel], profile: Profile, timings: TimingSource | None) -> Timing | None:
    """The group's timing: a timings file's runs where it covers every launch, else the median
    and spread of the launches' durations in the profile."""
    if timings is not None:
        found = [timings(profile, k) for k in kernels]
        if found and all(t is not None for t in found):
            timed = [t for t in found if t is not None]
            if len(timed) == 1:
                return timed[0]
            spreads = [t.spread for t in timed if t.spread is not None]
            return Timing(statistics.median(t.median_ns for t in timed), min(t.min_ns for t in timed),
                          max(t.max_ns for t in timed), sum(t.count for t in timed), "timings",
                          max(spreads) if spreads else None)
    timed = [k for k in kernels if k.duration_ns and k.duration_ns > 0]
    if not timed:
        return None
    durations = [k.duration_ns for k in timed]
    return Timing(statistics.median(durations), min(durations), max(durations), len(durations), "profile",
                  _repeat_spread(profile, timed))


# Launches whose executed instructions agree within this did the same work (a repeat).
SAME_WORK = 0.01


def _repeat_spread(profile: Profile, kernels: list[Kernel]) -> float | None:
    """The spread of the launches that repeat the same work: a group of one name and launch
    configuration can hold different work (two GEMMs of one tile shape: 31 and 51 us), whose
    difference is not noise. The largest (max - min) / median over sets of launches whose
    executed instructions agree within SAME_WORK; None when no launch repeats another's work
    (the default noise then applies). Without instruction counts, every launch is a repeat."""
    sets: list[tuple[float | None, list[float]]] = []
    for kernel in kernels:
        work = profile.value(kernel, "inst.executed")
        for signature, durations in sets:
            if signature == work or (signature and work and abs(work - signature) <= SAME_WORK * signature):
                durations.append(kernel.duration_ns)
                break
        else:
            sets.append((work, [kernel.duration_ns]))
    spreads = [(max(d) - min(d)) / statistics.median(d) for _, d in sets if len(d) > 1]
    return max(spreads) if spreads else None


def group_launches(profile: Profile, kernels: list[Kernel] | None = None, ranges: dict[str, str] | None = None,
                   timings: TimingSource | None = None) -> list[Launches]:
    """Identical launches together (same name, grid, block and NVTX range), in order of first
    launch. With ``ranges`` (range -> the name it is compared under), only launches inside one
    of those NVTX ranges count, under that name."""
    buckets: dict[tuple, tuple[str | None, list[Kernel]]] = {}
    for kernel in profile.kernels if kernels is None else kernels:
        nvtx = kernel.attributes.get("nvtx")
        if ranges is not None:
            chosen = next((as_name for name, as_name in ranges.items() if in_range(nvtx, name)), None)
            if chosen is None:
                continue
            nvtx = chosen
        # Not the work counts (keet explain groups by them too): they differ between GPUs (the
        # L2's size changes the DRAM traffic) and are what a change changes, so launches that
        # match across profiles would split into groups that no longer pair in order.
        key = (kernel.name, kernel.grid, kernel.block, nvtx)
        buckets.setdefault(key, (nvtx, []))[1].append(kernel)
    return [Launches(profile, members, nvtx, _timing(members, profile, timings)) for nvtx, members in buckets.values()]


def _side_noise(timing: Timing | None, default: float) -> dict[str, Any]:
    spread = timing.spread if timing is not None else None
    if spread is None:
        return {"value": default, "from": "default", "count": timing.count if timing else 0}
    return {"value": spread, "from": "timings" if timing.source == "timings" else "launches", "count": timing.count}


def verdict(change: float | None, noise: float, threshold: float) -> str:
    """One of STATUSES for a relative time change (new / base - 1; positive is slower)."""
    if change is None:
        return "untimed"
    if abs(change) <= noise:
        return "unchanged"
    if change < 0:
        return "faster"
    return "regression" if change > threshold else "slower"


def relative_change(base_ns: float | None, new_ns: float | None) -> float | None:
    if not base_ns or not new_ns or base_ns <= 0 or new_ns <= 0:
        return None
    return new_ns / base_ns - 1.0


# ---------------------------------------------------------------- explanations


@dataclass
class Side:
    """One kernel of one profile, as an explanation of a change needs it."""

    profile: Profile
    kernel: Kernel
    anchor: str  # where a presenter shows this kernel (the report's HTML id); "" where none
    findings: list[dict[str, Any]]  # the diagnosis' finding dicts (keet explain's "diagnosis" entries)
    prediction: Any | None  # keet.analysis.predictions.GPUPrediction on the profile's own GPU
    work: Any | None  # the model's features


@dataclass
class ModelChange:
    """The model's reading of a change: its time and bound on each side, the terms that changed
    most, and (across GPUs) the baseline's work predicted on the other GPU: the hardware alone."""

    base: Any  # GPUPrediction
    other: Any  # GPUPrediction
    terms: list[tuple[str, float, float]]  # (term, base ns, other ns), largest change first
    moved: Any | None = None  # GPUPrediction of the baseline's work on the other GPU

    def as_dict(self) -> dict[str, Any]:
        def side(p: Any) -> dict[str, Any]:
            return {"gpu": p.gpu, "predicted_ns": p.predicted_ns, "bound": p.bound, "clock_hz": p.clock_hz,
                    "lower_bound": p.lower_bound, "breakdown": dict(p.breakdown)}

        moved = None
        if self.moved is not None and self.moved.predicted_ns:
            moved = {"gpu": self.moved.gpu, "predicted_ns": self.moved.predicted_ns,
                     "speedup": self.base.predicted_ns / self.moved.predicted_ns}
        return {"base": side(self.base), "new": side(self.other),
                "terms": [{"term": t, "base_ns": a, "new_ns": b} for t, a, b in self.terms], "hardware_alone": moved}


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
    model: ModelChange | None = None

    def findings_dict(self) -> dict[str, list[dict[str, Any]]]:
        """The findings that went away, appeared and stayed, each with its first evidence
        metric read on both sides (None where a side did not measure it)."""
        def entry(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
            finding = before or after or {}
            found_on, other = (self.baseline, self.other) if before is not None else (self.other, self.baseline)
            return {"category": finding.get("category"), "impact_before": before["impact"] if before else None,
                    "impact_after": after["impact"] if after else None,
                    "evidence": evidence_change(finding, found_on, other, found_on_base=before is not None)}

        return {"resolved": [entry(f, None) for f in self.resolved], "appeared": [entry(None, f) for f in self.appeared],
                "persisting": [entry(f, g) for f, g in self.persisting]}


def evidence_change(finding: dict[str, Any], found_on: Side, other: Side, found_on_base: bool = True) -> dict[str, Any] | None:
    """A finding's first evidence metric before and after: its value where the finding was
    found, and the same metric read on the other side (None where that side lacks it)."""
    evidence = finding["evidence"][0] if finding.get("evidence") else None
    if evidence is None:
        return None
    read = other.profile.value(other.kernel, evidence["metric"])
    found = evidence["value"]
    before, after = (found, read) if found_on_base else (read, found)
    return {"metric": evidence["metric"], "unit": evidence["unit"], "before": before, "after": after}


def _evidence_text(change: dict[str, Any] | None) -> str:
    """"metric a -> b" (a side that lacks the metric reads "not measured")."""
    if change is None:
        return ""
    shown = [metric_value(v, change["unit"]) if v is not None else "not measured" for v in (change["before"], change["after"])]
    return f"{change['metric']} {shown[0]} -> {shown[1]}"


def model_change(base: Side, other: Side) -> ModelChange | None:
    """The model's reading of the change between two sides, or None where a side has no prediction."""
    from keet.analysis.predictions import predict_on
    from perfmodel.hardware import gpu, gpu_id_for_device_name

    a, b = base.prediction, other.prediction
    if a is None or b is None or a.predicted_ns is None or b.predicted_ns is None:
        return None
    components = sorted(set(a.breakdown) | set(b.breakdown))
    ranked = sorted(components, key=lambda c: -abs(a.breakdown.get(c, 0.0) - b.breakdown.get(c, 0.0)))
    terms = [(c, a.breakdown.get(c, 0.0), b.breakdown.get(c, 0.0)) for c in ranked[:TOP_TERMS]]
    moved = None
    other_gpu = gpu_id_for_device_name(other.profile.device.name)
    if base.work is not None and other_gpu and other_gpu != a.gpu:
        found = predict_on(gpu(other_gpu), base.work)
        moved = found if found.predicted_ns else None
    return ModelChange(a, b, terms, moved)


def _model_sentence(change: ModelChange) -> str:
    a, b = change.base, change.other
    sentence = f"Model: {si(a.predicted_ns, 'ns')} ({a.bound}-bound) -> {si(b.predicted_ns, 'ns')} ({b.bound}-bound)"
    if change.terms:
        term, before, after = change.terms[0]
        sentence += f"; the largest change is the {term} time, {si(before, 'ns')} -> {si(after, 'ns')}"
        # a runner-up worth naming: at least a tenth of the largest change
        if len(change.terms) > 1 and abs(change.terms[1][2] - change.terms[1][1]) >= 0.1 * abs(after - before) > 0:
            term, before, after = change.terms[1]
            sentence += f", then the {term} time, {si(before, 'ns')} -> {si(after, 'ns')}"
    sentence += "."
    if change.moved is not None:
        sentence += (f" The baseline's work on {change.moved.gpu} predicts {si(change.moved.predicted_ns, 'ns')} "
                     f"({a.predicted_ns / change.moved.predicted_ns:.2f}x from the hardware alone).")
    return sentence


def time_sentence(base_ns: float | None, other_ns: float | None, noise: float = DEFAULT_NOISE) -> str | None:
    """"1.79x faster: 333 us -> 185 us." (or "About the same time" within the noise)."""
    if not base_ns or not other_ns:
        return None
    speedup = base_ns / other_ns
    times = f"{si(base_ns, 'ns')} -> {si(other_ns, 'ns')}"
    if abs(other_ns / base_ns - 1) <= noise:
        return f"About the same time: {times}."
    verb, factor = ("faster", speedup) if speedup > 1 else ("slower", 1 / speedup)
    return f"{factor:.2f}x {verb}: {times}."


def delta(name: str, base: Side, other: Side, *, base_ns: float | None = None, other_ns: float | None = None,
          noise: float = DEFAULT_NOISE, top: int | None = None) -> KernelDelta:
    """The comparison of one kernel: speedup, findings gone / new / kept (at most ``top``
    finding sentences), and the model's reading. The times are the sides' launch durations
    unless given (a group's median, a timings file's)."""
    base_ns = base.kernel.duration_ns if base_ns is None else base_ns
    other_ns = other.kernel.duration_ns if other_ns is None else other_ns
    speedup = base_ns / other_ns if base_ns and other_ns else None

    def shown(findings: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {f["category"]: f for f in findings if f["impact"] >= MIN_SHOWN_IMPACT}

    before, after = shown(base.findings), shown(other.findings)
    result = KernelDelta(name, base, other, speedup)
    result.resolved = [f for c, f in before.items() if c not in after]
    result.appeared = [f for c, f in after.items() if c not in before]
    result.persisting = [(f, after[c]) for c, f in before.items() if c in after]
    if (times := time_sentence(base_ns, other_ns, noise)) is not None:
        result.explanation.append(times)
    # The slower side's diagnosis ranks its causes first: a slowdown is explained by what the new
    # side found (in its order), a speedup by what the baseline found, then the rest.
    rank_base = {f["category"]: n for n, f in enumerate(base.findings)}
    rank_other = {f["category"]: n for n, f in enumerate(other.findings)}
    slower = speedup is not None and speedup < 1
    findings: list[tuple[tuple[int, int], str]] = []
    for f in result.resolved:
        findings.append(((1 if slower else 0, rank_base[f["category"]]),
                         (f"No longer found: {f['category']} (impact {f['impact']:.0%} before); "
                         f"{_evidence_text(evidence_change(f, base, other))}.")))
    for f in result.appeared:
        findings.append(((0 if slower else 1, rank_other[f["category"]]),
                         (f"Newly found: {f['category']} (impact {f['impact']:.0%}); "
                         f"{_evidence_text(evidence_change(f, other, base, found_on_base=False))}.")))
    for f, g in result.persisting:
        findings.append(((0, rank_other[g["category"]] if slower else rank_base[f["category"]]),
                         (f"Still found: {f['category']} (impact {f['impact']:.0%} -> {g['impact']:.0%}); "
                         f"{_evidence_text(evidence_change(f, base, other))}.")))
    ordered = [sentence for _key, sentence in sorted(findings, key=lambda item: item[0])]
    result.explanation += ordered[:top] if top else ordered
    result.model = model_change(base, other)
    if result.model is not None:
        result.explanation.append(_model_sentence(result.model))
    return result


def side(profile: Profile, kernel: Kernel, anchor: str = "") -> Side:
    """A kernel as an explanation needs it: the rules' findings and the model's prediction on
    the profile's own GPU (the rules and the model run here)."""
    from keet.analysis.predictions import model_inputs, own_prediction
    from keet.diagnosis import diagnose_kernel

    work, _why_not = model_inputs(profile, kernel)
    return Side(profile, kernel, anchor, diagnose_kernel(profile, kernel).finding_dicts(), own_prediction(profile, kernel, work), work)


# ---------------------------------------------------------------- comparing two profiles


@dataclass
class KernelChange:
    """One kernel (its group of identical launches) in both profiles, and the verdict."""

    base: Launches
    new: Launches
    matched_by: str  # "name", "function" or "alone" (pair_up's tiers)
    differs: list[str]  # what differs between the two: name, launch configuration, NVTX range
    change: float | None  # new time / base time - 1 (positive: slower)
    noise: dict[str, Any]  # {"value", "base": side noise, "new": side noise}
    status: str  # one of STATUSES
    delta: KernelDelta | None = None  # the rules' and the model's reading (changed kernels only)

    @property
    def name(self) -> str:
        return self.new.first.name

    @property
    def speedup(self) -> float | None:
        return None if self.change is None else 1.0 / (1.0 + self.change)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.new.first.name, "base_name": self.base.first.name, "function": self.new.first.function_name,
                "base": self.base.as_dict(), "new": self.new.as_dict(), "matched_by": self.matched_by,
                "differs": self.differs, "change": self.change, "speedup": self.speedup, "noise": self.noise,
                "status": self.status, "findings": self.delta.findings_dict() if self.delta else None,
                "model": self.delta.model.as_dict() if self.delta and self.delta.model else None,
                "explanation": self.delta.explanation if self.delta else []}


@dataclass
class RangeChange:
    """The launches of one NVTX range in both profiles, compared by their total time: what a
    fusion, a split or another library path changes when the kernels do not pair one to one."""

    name: str  # as compared (the new profile's name)
    base_name: str  # the baseline's name for it
    base_ns: float | None
    new_ns: float | None
    base_launches: int
    new_launches: int
    change: float | None
    noise: dict[str, Any]
    status: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "base_name": self.base_name, "base_ns": self.base_ns, "new_ns": self.new_ns,
                "base_launches": self.base_launches, "new_launches": self.new_launches, "change": self.change,
                "speedup": None if self.change is None else 1.0 / (1.0 + self.change), "noise": self.noise,
                "status": self.status}


@dataclass
class ProfileComparison:
    """One baseline profile and one new profile compared."""

    base: Profile
    new: Profile
    threshold: float
    default_noise: float
    kernels: list[KernelChange]
    ranges: list[RangeChange]
    only_base: list[Launches]
    only_new: list[Launches]

    def regressions(self) -> list[KernelChange | RangeChange]:
        return [c for c in (*self.kernels, *self.ranges) if c.status == "regression"]

    def counts(self) -> dict[str, int]:
        """Kernels per verdict, plus those without a partner and the ranges compared."""
        found = {status: sum(k.status == status for k in self.kernels) for status in STATUSES}
        return {"kernels": len(self.kernels), **found, "only_base": len(self.only_base), "only_new": len(self.only_new),
                "ranges": len(self.ranges), "range_regressions": sum(r.status == "regression" for r in self.ranges)}


def _weighted_noise(groups: list[Launches], default: float) -> dict[str, Any]:
    """A range's noise on one side: its groups' noise weighted by their time."""
    timed = [(g.total_ns, _side_noise(g.timing, default)) for g in groups if g.total_ns]
    total = sum(t for t, _ in timed)
    if not total:
        return {"value": default, "from": "default", "count": 0}
    value = sum(t * n["value"] for t, n in timed) / total
    sources = {n["from"] for _, n in timed}
    return {"value": value, "from": sources.pop() if len(sources) == 1 else "mixed", "count": sum(n["count"] for _, n in timed)}


def _range_changes(base: list[Launches], new: list[Launches], paired: list[tuple[int, int]], default_noise: float,
                   threshold: float, base_names: dict[str, str]) -> list[RangeChange]:
    """Every NVTX range both profiles ran whose launches do not pair one to one (``base_names``:
    the baseline's name of a range compared under another)."""
    on_base: dict[str, list[Launches]] = defaultdict(list)
    on_new: dict[str, list[Launches]] = defaultdict(list)
    for group in base:
        if group.nvtx:
            on_base[group.nvtx].append(group)
    for group in new:
        if group.nvtx:
            on_new[group.nvtx].append(group)
    partner = dict(paired) | {b: a for a, b in paired}
    changes = []
    for name, before in on_base.items():
        after = on_new.get(name)
        inside = {id(g) for g in (*before, *(after or []))}
        if not after or all(partner.get(id(g)) in inside for g in (*before, *after)):
            continue  # every launch pairs with one of the same range: the kernels say it all
        base_ns = sum(g.total_ns or 0.0 for g in before) if all(g.total_ns for g in before) else None
        new_ns = sum(g.total_ns or 0.0 for g in after) if all(g.total_ns for g in after) else None
        a, b = _weighted_noise(before, default_noise), _weighted_noise(after, default_noise)
        noise = {"value": max(a["value"], b["value"]), "base": a, "new": b}
        change = relative_change(base_ns, new_ns)
        changes.append(RangeChange(name, base_names.get(name, name), base_ns, new_ns, sum(g.launches for g in before),
                                   sum(g.launches for g in after), change, noise, verdict(change, noise["value"], threshold)))
    return changes


def compare_profiles(base: Profile, new: Profile, *, threshold: float = DEFAULT_THRESHOLD, default_noise: float = DEFAULT_NOISE,
                     ranges: dict[str, str] | None = None, base_timings: TimingSource | None = None,
                     new_timings: TimingSource | None = None, new_kernels: list[Kernel] | None = None, explain: bool = True,
                     top: int | None = None, progress: Callable[[str], None] | None = None) -> ProfileComparison:
    """``new`` compared with ``base``: identical launches grouped, groups matched, each change
    judged against the noise and ``threshold``, and each changed kernel explained by the rules
    and the model (``explain``; at most ``top`` finding sentences each).

    ranges: NVTX ranges to compare, baseline name -> new name (the same name when a range kept
    it): only their launches are compared, a baseline range under its new name.
    new_kernels: report only these kernels of ``new`` (see :func:`restricted`).
    """
    tell = progress or (lambda message: None)
    base_groups = group_launches(base, ranges=ranges, timings=base_timings)
    new_groups = group_launches(new, ranges={v: v for v in ranges.values()} if ranges is not None else None, timings=new_timings)
    pairs, only_base, only_new = pair_up(base_groups, new_groups, lambda g: g.identity)
    kernels = []
    for before, after, tier in pairs:
        change = relative_change(before.time_ns, after.time_ns)
        a, b = _side_noise(before.timing, default_noise), _side_noise(after.timing, default_noise)
        noise = {"value": max(a["value"], b["value"]), "base": a, "new": b}
        kernels.append(KernelChange(before, after, tier, differences(before.identity, after.identity), change, noise,
                                    verdict(change, noise["value"], threshold)))
    paired = [(id(a), id(b)) for a, b, _tier in pairs]
    renamed = {as_name: name for name, as_name in (ranges or {}).items()}
    range_changes = _range_changes(base_groups, new_groups, paired, default_noise, threshold, renamed)
    result = ProfileComparison(base, new, threshold, default_noise, kernels, range_changes, only_base, only_new)
    if new_kernels is not None:
        result = restricted(result, new_kernels)
    changed = [c for c in result.kernels if c.status not in ("unchanged", "untimed")] if explain else []
    for number, found in enumerate(changed):
        tell(f"explaining kernel {number + 1}/{len(changed)}")
        found.delta = delta(found.new.first.name, side(base, found.base.representative), side(new, found.new.representative),
                            base_ns=found.base.time_ns, other_ns=found.new.time_ns, noise=found.noise["value"], top=top)
    return result


def restricted(comparison: ProfileComparison, new_kernels: list[Kernel]) -> ProfileComparison:
    """The comparison of a few kernels of the new profile (``keet explain --kernel``): their
    changes, the ranges they ran in and those of them without a partner. The matching was made
    on the whole profiles, so each kernel's entry is the one the full comparison gives."""
    ids = {k.id for k in new_kernels}
    ranges = {k.attributes.get("nvtx") for k in new_kernels}

    def chosen(group: Launches) -> bool:
        return any(k.id in ids for k in group.kernels)

    return ProfileComparison(comparison.base, comparison.new, comparison.threshold, comparison.default_noise,
                             [c for c in comparison.kernels if chosen(c.new)],
                             [r for r in comparison.ranges if any(in_range(n, r.name) for n in ranges)], [],
                             [g for g in comparison.only_new if chosen(g)])


@dataclass
class CompareResult:
    """`keet compare BASE NEW`: one comparison per pair of profiles (two files, or the files of
    two folders paired by name), and the files of either folder that found no partner."""

    base: str  # the paths as given
    new: str
    threshold: float
    default_noise: float
    profiles: list[ProfileComparison]
    only_base_files: list[str] = field(default_factory=list)
    only_new_files: list[str] = field(default_factory=list)

    def regressions(self) -> list[KernelChange | RangeChange]:
        return [r for p in self.profiles for r in p.regressions()]

    @property
    def exit_status(self) -> int:
        """1 when a kernel or an NVTX range is slower beyond the threshold and the noise, else 0."""
        return 1 if self.regressions() else 0

    def counts(self) -> dict[str, int]:
        """ProfileComparison.counts summed over the pairs of profiles."""
        total: dict[str, int] = defaultdict(int)
        for p in self.profiles:
            for key, value in p.counts().items():
                total[key] += value
        return dict(total)


# ---------------------------------------------------------------- several profiles (keet report)


@dataclass
class Comparison:
    """The HTML report's comparison: every other profile's launches matched with the first's."""

    baseline: str  # label of the baseline profile
    others: list[str]
    deltas: list[list[KernelDelta]]  # per other profile
    unmatched: list[list[str]]  # per other profile: kernels without a partner (either side)
