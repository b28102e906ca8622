"""The agent's tools: read-only questions over our own objects (Profile, Diagnosis, Prediction).

Each tool returns a JSON object. Every string that came from the profile file (kernel names,
file paths, source text, raw metric names, units other than keet's own, stall reasons, the
profiler's rule ids, kinds, titles and messages) is fenced as data (keet/llm/fence.py). Each call
is recorded with its arguments and its result, because the verifier accepts a number the agent
saw in a tool result as supported.

Errors a model can make (an unknown kernel, a bad pattern, an unknown GPU) come back as
``{"error": ...}`` so the agent can correct itself instead of the run failing.

The model's arguments are untrusted too. The metrics tool takes a *pattern*, not a regular
expression: Python's ``re`` backtracks, has no timeout and holds the interpreter while it runs,
so a model's ``^(\\w+)+$`` over a long metric name would hang the run past any deadline. A pattern
is matched by ``name_matcher`` in time linear in the name.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from keet.diagnosis.fusion import ASSUMPTION, Fusion
from keet.explain import explain
from keet.llm.fence import fence
from keet.profile import Kernel, Profile
from keet.summary import kernel_summary, kernels_by_duration

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

MAX_METRIC_ROWS = 40
MAX_HOT_LINES = 8
MAX_LISTED_KERNELS = 50
MAX_PATTERN_CHARS = 200
# How much of a model's argument an error message or the run's record repeats.
ECHO_CHARS = 80
# Components of a prediction's breakdown for which the expected effect of halving is given.
EFFECT_COMPONENTS = 4


class ToolInputError(ValueError):
    """A tool argument the model got wrong; its message goes back to the model."""


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """A model's argument as an error message or a record repeats it: repr, cut to ``limit``."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


@functools.cache
def known_units() -> frozenset[str]:
    """keet's own unit names (its canonical vocabulary's and the base units of keet.units)."""
    from keet.canonical import vocabulary

    return frozenset({m.unit for m in vocabulary()} | {"", "%", "ns", "byte", "byte/second", "hz", "flop", "flop/second"})


def shown_unit(unit: object) -> object:
    """A unit as the model sees it: keet's own as it is, anything else (a profile's raw unit, or a
    canonical value whose unit keet did not recognise) fenced."""
    return unit if not isinstance(unit, str) or unit in known_units() else fence(unit)


PATTERN_HELP = ("a pattern is text to find in metric names (case-insensitive), with | between alternatives, * or .* for any "
                "characters, ^ and $ to anchor at the start or end, and \\ before a character to take it literally; "
                "e.g. dram|l2, ^sm__*pct$; regular expressions are not accepted")
_UNSUPPORTED = "()[]{}+?"


def name_matcher(pattern: str) -> Callable[[str], bool]:
    """A predicate for metric names from a pattern (see PATTERN_HELP). Each alternative is a
    glob: literal pieces between wildcards, found in order by str.find, so a match costs time
    linear in the name whatever the pattern. Raises ToolInputError for what it does not accept,
    rather than reading regular-expression syntax as text and matching nothing in silence."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolInputError(f"pattern of {len(pattern):,} characters; at most {MAX_PATTERN_CHARS}")
    return _matcher([_alternative(tokens) for tokens in _split_alternatives(_tokens(pattern.lower()))])


def _tokens(pattern: str) -> list[tuple[str, str]]:
    """("text", char) for a literal character, ("op", char) for | ^ $ and "*" for a wildcard."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(pattern):
        char = pattern[position]
        position += 1
        if char == "\\":
            if position == len(pattern):
                raise ToolInputError(f"the pattern ends with a lone \\; {PATTERN_HELP}")
            char = pattern[position]
            position += 1
            if char.isalnum():  # \w, \d, \b ...
                raise ToolInputError(f"\\{char} is regular-expression syntax; {PATTERN_HELP}")
            tokens.append(("text", char))
        elif char == "*" or (char == "." and pattern[position:position + 1] == "*"):
            position += char == "."
            tokens.append(("op", "*"))
        elif char in "|^$":
            tokens.append(("op", char))
        elif char in _UNSUPPORTED:
            raise ToolInputError(f"{char!r} in the pattern is not supported: {PATTERN_HELP}")
        else:
            tokens.append(("text", char))
    return tokens


def _split_alternatives(tokens: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    alternatives: list[list[tuple[str, str]]] = [[]]
    for token in tokens:
        if token == ("op", "|"):
            alternatives.append([])
        else:
            alternatives[-1].append(token)
    return alternatives


def _alternative(tokens: list[tuple[str, str]]) -> tuple[bool, list[str], bool]:
    """(anchored at the start, the literal pieces between wildcards, anchored at the end)."""
    start = bool(tokens) and tokens[0] == ("op", "^")
    tokens = tokens[1:] if start else tokens
    end = bool(tokens) and tokens[-1] == ("op", "$")
    tokens = tokens[:-1] if end else tokens
    pieces = [""]
    for kind, char in tokens:
        if kind == "text":
            pieces[-1] += char
        elif char == "*":
            pieces.append("")
        else:  # ^ or $ anywhere but at an end
            raise ToolInputError(f"{char!r} anchors only at the start (^) or the end ($) of an alternative; {PATTERN_HELP}")
    return start, pieces, end


def _matcher(alternatives: list[tuple[bool, list[str], bool]]) -> Callable[[str], bool]:
    def glob(name: str, start: bool, pieces: list[str], end: bool) -> bool:
        # unanchored ends are wildcards: "dram" is "*dram*"
        first, *middle = pieces
        last = middle.pop() if middle else None
        if last is None:  # no wildcard inside: one piece
            if start and end:
                return name == first
            if start:
                return name.startswith(first)
            if end:
                return name.endswith(first)
            return first in name
        low = len(first) if start else 0
        if start and not name.startswith(first):
            return False
        high = len(name) - len(last) if end else len(name)
        if end and (high < low or not name.endswith(last)):
            return False
        if not start:
            found = name.find(first, low, high)
            if found < 0:
                return False
            low = found + len(first)
        for piece in middle:  # leftmost match of each piece leaves the most room for the rest
            found = name.find(piece, low, high)
            if found < 0:
                return False
            low = found + len(piece)
        return end or name.find(last, low) >= 0

    def matches(name: str) -> bool:
        lowered = name.lower()
        return any(glob(lowered, start, pieces, end) for start, pieces, end in alternatives)

    return matches


@dataclass
class ToolCall:
    """One tool call the agent made, and what it saw."""

    name: str
    args: dict[str, Any]
    result: dict[str, Any]


@dataclass
class ProfileTools:
    """The tools over one profile (and optionally a baseline profile to compare it with)."""

    profile: Profile
    baseline: Profile | None = None
    calls: list[ToolCall] = field(default_factory=list)
    _documents: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict, repr=False)
    _run: dict[str, Any] | None = field(default=None, repr=False)

    # ------------------------------------------------------------ shared look-ups

    def kernel(self, key: str | int | None, profile: Profile | None = None) -> Kernel:
        profile = profile or self.profile
        if key is None or str(key).strip() == "":
            return kernels_by_duration(profile)[0]
        found = profile.select(str(key).strip())
        if not found:
            names = ", ".join(f"{k.id}" for k in profile.kernels[:20])
            raise ToolInputError(f"no kernel matches {echo(key)}; kernel ids are {names} (list_kernels names them)")
        return found[0]

    def diagnosis_entry(self, kernel: Kernel, profile: Profile | None = None) -> dict[str, Any]:
        """keet explain's entry for a kernel (diagnoses are computed once per kernel)."""
        profile = profile or self.profile
        key = (id(profile), kernel.id)
        if key not in self._documents:
            self._documents[key] = explain(profile, [kernel])["kernels"][0]
        return self._documents[key]

    def run_document(self) -> dict[str, Any]:
        """keet explain's document over every kernel of the profile (its groups of identical
        launches, fusions and where the most time can be won), computed once."""
        if self._run is None:
            self._run = explain(self.profile)
        return self._run

    def work(self, kernel: Kernel, profile: Profile | None = None) -> tuple[Any, str | None]:
        from keet.analysis.predictions import model_inputs

        return model_inputs(profile or self.profile, kernel)

    # ------------------------------------------------------------ the tools

    def list_kernels(self) -> dict[str, Any]:
        rows = []
        ranked = kernels_by_duration(self.profile)
        for kernel in ranked[:MAX_LISTED_KERNELS]:
            summary = kernel_summary(self.profile, kernel)
            findings = self.diagnosis_entry(kernel)["diagnosis"]
            entry = self.diagnosis_entry(kernel)
            sol = entry.get("speed_of_light") or {}
            rows.append({
                "id": kernel.id, "name": fence(kernel.name), "duration_ns": kernel.duration_ns, "share": summary["share"],
                "grid": summary["grid"], "block": summary["block"],
                "top_finding": findings[0]["category"] if findings else None,
                "recoverable_ns": entry.get("recoverable_ns"),
                "speed_of_light_pct": sol["fraction"] * 100 if sol.get("fraction") is not None else None,
            })
        device = self.profile.device
        listed = {"device": fence(device.name), "sm_count": device.sm_count, "kernels": rows}
        if len(ranked) > MAX_LISTED_KERNELS:
            listed["truncated"] = f"the {MAX_LISTED_KERNELS} longest of {len(ranked)} kernels; the others by id or name"
        return listed

    def kernel_summary(self, kernel: str | None = None) -> dict[str, Any]:
        chosen = self.kernel(kernel)
        summary = kernel_summary(self.profile, chosen)
        return summary | {"name": fence(summary["name"]), "function_name": fence(summary["function_name"])}

    def metrics(self, kernel: str | None = None, pattern: str = "", origin: str = "canonical") -> dict[str, Any]:
        chosen = self.kernel(kernel)
        if origin not in ("canonical", "raw", "all"):
            raise ToolInputError("origin must be canonical, raw or all")
        table = self.profile.metrics[self.profile.metrics["kernel"] == chosen.id]
        if origin != "all":
            table = table[table["origin"] == origin]
        exact = table[table["metric"] == pattern]
        if exact.empty:
            matches = name_matcher(pattern)  # before the table: a bad pattern is an error even where no metric is
            table = table[table["metric"].map(lambda name: matches(str(name)))]
        else:
            table = exact
        rows = [
            {"metric": name if row_origin == "canonical" else fence(name), "value": value, "unit": shown_unit(unit), "origin": row_origin}
            for name, value, unit, row_origin in zip(table["metric"], table["value"], table["unit"], table["origin"])
        ]
        result: dict[str, Any] = {"kernel": chosen.id, "metrics": rows[:MAX_METRIC_ROWS]}
        if len(rows) > MAX_METRIC_ROWS:
            result["truncated"] = f"{len(rows)} metrics match; give a narrower pattern to see the others"
        return result

    def findings(self, kernel: str | None = None) -> dict[str, Any]:
        chosen = self.kernel(kernel)
        entry = self.diagnosis_entry(chosen)
        return {
            "kernel": chosen.id,
            **v2_fields(entry),
            "findings": [fenced_finding(f) for f in entry["diagnosis"]],
            "not_assessed": [{"category": n["category"], "missing": n["missing"]} for n in entry["not_assessed"]],
            "profiler_rules": [
                {"rule": fence(r.rule_id), "kind": fence(r.kind), "title": fence(r.title), "message": fence(r.message),
                 "estimated_speedup_pct": r.estimated_speedup_pct}
                for r in chosen.rule_results if r.kind not in ("ok", "none")
            ],
        }

    def speed_of_light(self, kernel: str | None = None) -> dict[str, Any]:
        """Diagnosis v2 for one kernel: its speed of light (the model's attainable time for its
        own work, the limiter, the headroom to it), its verdict, each finding's recoverable time
        and, for a library kernel, the library and the caller's levers."""
        chosen = self.kernel(kernel)
        entry = self.diagnosis_entry(chosen)
        return {"kernel": chosen.id, "measured_ns": chosen.duration_ns, **v2_fields(entry),
                "recoverable": [{"category": f["category"], **recoverable_fields(f)} for f in entry["diagnosis"]]}

    def where_to_win(self) -> dict[str, Any]:
        """Above one kernel: where the most time of the whole profile can be won (groups of
        identical launches and fusions, by recoverable time), and every fusion keet found: a
        chain of launches one kernel could do, with its launches, range, measured time, the
        model's time for the fused work, the time it would recover and what that assumes."""
        document = self.run_document()
        total = document.get("total_ns")
        fusions = document.get("fusions") or []
        return {"total_ns": total, "where_to_win": [shown_win(item, fusions) for item in document.get("where_to_win") or []],
                "fusions": [shown_fusion(index, entry, total) for index, entry in enumerate(fusions)]}

    def source_hotspots(self, kernel: str | None = None, top: int = MAX_HOT_LINES) -> dict[str, Any]:
        from keet.report.sections import hotspots

        chosen = self.kernel(kernel)
        found = hotspots(chosen)
        if found is None:
            return {"kernel": chosen.id, "hotspots": [], "note": "the profile has no per-line source counters for this kernel"}
        lines = found.lines[: max(1, min(int(top), MAX_HOT_LINES))]
        return {
            "kernel": chosen.id,
            "counter": found.counter_label,
            "hotspots": [
                {"file": fence(h.file), "line": h.line, "text": fence(h.text.strip()) if h.text else None, "share": h.share,
                 "value": h.value, "top_stall": fence(h.top_stall)}  # a stall counter's name, from the file
                for h in lines
            ],
        }

    def predict(self, kernel: str | None = None, gpu: str = "") -> dict[str, Any]:
        from keet.analysis.predictions import predictions
        from perfmodel.hardware import gpu as hardware
        from perfmodel.hardware import gpu_ids, reference_gpu_id

        chosen = self.kernel(kernel)
        work, why_not = self.work(chosen)
        result = predictions(self.profile, chosen, work, why_not)
        # no GPU asked for: the profile's own, else the zoo's reference GPU (a hardware file's [gpu] reference)
        wanted = gpu.strip().lower() or result.own_gpu or reference_gpu_id()
        if wanted not in gpu_ids():
            raise ToolInputError(f"unknown GPU id {gpu!r}; known: {', '.join(gpu_ids())}")
        if result.error:
            return {"kernel": chosen.id, "gpu": wanted, "error": f"no model inputs for this kernel: {result.error}"}
        chosen_prediction = next(p for p in result.per_gpu if p.gpu == wanted)
        if wanted == result.own_gpu and result.at_profile_clock is not None:
            chosen_prediction = result.at_profile_clock
        answer = prediction_dict(chosen_prediction, hardware(wanted))
        if wanted == result.own_gpu:
            answer["measured_ns"] = result.measured_ns
        return {"kernel": chosen.id, **answer}

    def compare(self, kernel: str | None = None) -> dict[str, Any]:
        if self.baseline is None:
            return {"error": "no baseline profile was given (keet explain --llm --baseline PROFILE)"}
        from keet.analysis.compare import delta, match

        chosen = self.kernel(kernel)
        pairs, _unmatched = match(self.baseline.kernels, [chosen])
        if not pairs:
            return {"error": f"kernel {chosen.id} has no counterpart in the baseline profile"}
        before, after = pairs[0]
        result = delta(chosen.name, self._side(self.baseline, before), self._side(self.profile, after))
        return {
            "kernel": chosen.id, "baseline_kernel": before.id, "baseline_device": fence(self.baseline.device.name),
            "device": fence(self.profile.device.name), "baseline_ns": before.duration_ns, "ns": after.duration_ns,
            "speedup": result.speedup, "resolved": [f["category"] for f in result.resolved],
            "appeared": [f["category"] for f in result.appeared], "persisting": [f["category"] for f, _ in result.persisting],
            # keet's sentences, but they quote the profiles' units and evidence as read
            "explanation": [fence(sentence) for sentence in result.explanation],
        }

    def _side(self, profile: Profile, kernel: Kernel):
        from keet.analysis.compare import Side
        from keet.analysis.predictions import own_prediction

        work, _why_not = self.work(kernel, profile)
        prediction = own_prediction(profile, kernel, work)
        return Side(profile, kernel, "", self.diagnosis_entry(kernel, profile)["diagnosis"], prediction, work)

    # ------------------------------------------------------------ langchain

    def call(self, name: str, **args: Any) -> str:
        """Run a tool by name, record what it returned, and give the model its JSON."""
        try:
            result = getattr(self, name)(**args)
        except ToolInputError as exc:
            result = {"error": str(exc)}
        shown = rounded(result)
        # the record is printed with the answer: a model's megabyte argument is not
        recorded = {key: value if not isinstance(value, str) or len(value) <= ECHO_CHARS else echo(value) for key, value in args.items()}
        self.calls.append(ToolCall(name, recorded, shown))
        return json.dumps(shown, ensure_ascii=False, default=str)

    def langchain_tools(self) -> list[BaseTool]:
        """The tools as langchain StructuredTools (names and argument schemas the model sees)."""
        from langchain_core.tools import StructuredTool

        from perfmodel.hardware import gpu_ids

        def make(name: str, description: str, function) -> BaseTool:
            return StructuredTool.from_function(function, name=name, description=description)

        def list_kernels() -> str:
            return self.call("list_kernels")

        def kernel_summary(kernel: str = "") -> str:
            return self.call("kernel_summary", kernel=kernel)

        def metrics(kernel: str = "", pattern: str = "", origin: str = "canonical") -> str:
            return self.call("metrics", kernel=kernel, pattern=pattern, origin=origin)

        def findings(kernel: str = "") -> str:
            return self.call("findings", kernel=kernel)

        def source_hotspots(kernel: str = "", top: int = MAX_HOT_LINES) -> str:
            return self.call("source_hotspots", kernel=kernel, top=top)

        def speed_of_light(kernel: str = "") -> str:
            return self.call("speed_of_light", kernel=kernel)

        def predict(kernel: str = "", gpu: str = "") -> str:
            return self.call("predict", kernel=kernel, gpu=gpu)

        def where_to_win() -> str:
            return self.call("where_to_win")

        def compare(kernel: str = "") -> str:
            return self.call("compare", kernel=kernel)

        which = "kernel: id or name ('' = the longest kernel)."
        tools = [
            make("list_kernels", "Every kernel of the profile, longest first: id, name, time, share, launch, top finding, "
                 "recoverable time and the share of its speed of light it reaches.", list_kernels),
            make("kernel_summary", f"Launch, resources, duration and headline metrics of one kernel. {which}", kernel_summary),
            make("metrics", f"Measured metrics of one kernel by exact name or pattern. {which} pattern: {PATTERN_HELP}. "
                 "origin: canonical (keet's names, base units), raw (the profiler's names) or all.", metrics),
            make("findings", f"keet's rule findings with evidence (metric, value, threshold), impact and fixes; the "
                 f"profiler's own rule results. {which}", findings),
            make("source_hotspots", f"The hottest source lines (file, line, text, share of samples, top stall). {which}", source_hotspots),
            make("speed_of_light", f"The kernel against its speed of light (the model's attainable time for its own work, the "
                 f"limiter, the headroom), its verdict, the time each finding could recover and, for a library kernel, the "
                 f"caller's levers. {which}", speed_of_light),
            make("where_to_win", "The whole profile: where the most time can be won (groups of identical launches and fusions, "
                 "by recoverable time, with their share of the run), and every fusion found: a chain of launches one kernel "
                 "could do (its launches, NVTX range, measured time, the model's time fused, recoverable time, and its "
                 "assumption that nothing else reads the intermediates).", where_to_win),
            make("predict", f"The analytical model's predicted time and per-unit breakdown on a GPU ({', '.join(gpu_ids())}; "
                 f"'' = the profile's GPU), with the expected effect of halving each unit's time. {which}", predict),
        ]
        if self.baseline is not None:
            tools.append(make("compare", f"The kernel compared with the baseline profile: speedup, findings gone, new and kept, "
                              f"and the model's reading of the change. {which}", compare))
        return tools


def rounded(value: Any) -> Any:
    """A result as the model sees it: whole floats as integers, others to 4 significant digits
    (fewer tokens; the verifier knows both these and the full values)."""
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(item) for item in value]
    if isinstance(value, float) and math.isfinite(value):
        return int(value) if value.is_integer() and abs(value) < 2**53 else float(f"{value:.4g}")
    return value


def fenced_finding(finding: dict[str, Any]) -> dict[str, Any]:
    """A finding as the model sees it: evidence and suggestions as they are (keet's own text);
    the explanation (it quotes kernel names) and the source files and lines fenced."""
    return {
        "category": finding["category"], "impact": finding["impact"], "confidence": finding["confidence"],
        **recoverable_fields(finding),
        "evidence": [shown_evidence(e) for e in finding["evidence"]], "explanation": fence(finding["explanation"]),
        "suggestions": finding["suggestions"],
        "source_lines": [
            {"file": fence(s["file"]), "line": s["line"], "text": fence(s["text"].strip()) if s["text"] else None,
             "counter": s["counter"], "share": s["share"]}
            for s in finding["source_lines"]
        ],
    }


def recoverable_fields(finding: dict[str, Any]) -> dict[str, Any]:
    """A finding's recoverable time as the model sees it: ns, percent of the kernel's time, and
    what removing the inefficiency means (keet's words; numbers only from the counters)."""
    if finding.get("recoverable_ns") is None:
        return {"recoverable_ns": None}
    share = finding.get("recoverable_fraction")
    return {"recoverable_ns": finding["recoverable_ns"], "recoverable_pct": share * 100 if share is not None else None,
            "recoverable_by": finding.get("recoverable_how")}


def v2_fields(entry: dict[str, Any]) -> dict[str, Any]:
    """A kernel's speed of light, verdict, recoverable time and library as the model sees them
    (keet's own text: limiter and library names come from keet's tables, not the profile)."""
    sol = dict(entry.get("speed_of_light") or {})
    if sol.get("fraction") is not None:
        sol["fraction_pct"] = sol.pop("fraction") * 100
    library = entry.get("library")
    return {
        "speed_of_light": sol or None,
        "verdict": (entry.get("verdict") or {}).get("text"),
        "recoverable_ns": entry.get("recoverable_ns"),
        "library": {key: library[key] for key in ("id", "name", "kind", "what", "levers")} if library else None,
    }


def _pct(fraction: float | None) -> float | None:
    return fraction * 100 if fraction is not None else None


def shown_win(item: dict[str, Any], fusions: list[dict[str, Any]]) -> dict[str, Any]:
    """One entry of keet explain's ``where_to_win`` as the model sees it: a group (its kernel's
    names fenced; its ``how`` is keet's words) or a fusion (its range fenced; ``fusions[index]``
    in the same result has the rest)."""
    shared = {"count": item["count"], "recoverable_ns": item["recoverable_ns"], "recoverable_share_of_run_pct": _pct(item.get("share_of_run")),
              "category": item["category"]}
    if "fusion" in item:
        fusion = Fusion.from_dict(fusions[item["fusion"]])
        return {"fusion": item["fusion"], "range": fence(fusion.range), "launches": fusion.launches, **shared}
    return {"group": item["group"], "kernel": item["representative"], "name": fence(item["name"]), "function": fence(item["function"]),
            **shared, "recoverable_by": item.get("how")}


def shown_fusion(index: int, entry: dict[str, Any], total_ns: float | None) -> dict[str, Any]:
    """A fusion (keet.diagnosis.fusion) as the model sees it: its launches (kernel ids), NVTX
    range (fenced; None for consecutive library launches), the chain's measured time, the
    model's time for its launches as they are and fused, the intermediate bytes that would stay
    on chip, the recoverable time (ns, percent of the chain's time and of the run's), how it is
    won in keet's words without the range's name, its assumption, and the caller's lever (a
    fusion, or a fused attention kernel: keet.diagnosis.attention) with keet's suggestion."""
    fusion = Fusion.from_dict(entry)
    return {
        "fusion": index, "range": fence(fusion.range), "launches": fusion.launches, "count": len(fusion.launches),
        "measured_ns": fusion.measured_ns, "predicted_ns": fusion.predicted_ns, "fused_predicted_ns": fusion.fused_ns,
        "intermediate_bytes": fusion.intermediate_bytes, "recoverable_ns": fusion.recoverable_ns, "recoverable_pct": _pct(fusion.share),
        "recoverable_share_of_run_pct": _pct(fusion.recoverable_ns / total_ns) if total_ns else None,
        "recoverable_by": fusion.describe(named=False), "assumption": ASSUMPTION,
        "lever": fusion.lever, "suggestion": fusion.suggestion,
    }


def shown_evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    """A finding's evidence with its unit as the model may see it (``shown_unit``)."""
    return evidence | {"unit": shown_unit(evidence.get("unit"))}


def prediction_dict(prediction, hardware) -> dict[str, Any]:
    """A GPUPrediction as the model sees it, with the GPU's headline figures and, per unit of
    the breakdown, the model's upper bound on the speedup if that unit's time were halved
    (the predicted time is the largest bound, so halving one unit leaves the others)."""
    if prediction.predicted_ns is None:
        return {"gpu": hardware.id, "error": prediction.error}
    breakdown = {name: ns for name, ns in sorted(prediction.breakdown.items(), key=lambda item: -item[1]) if ns > 0}
    effects = []
    for name in list(breakdown)[:EFFECT_COMPONENTS]:
        others = max((ns for other, ns in breakdown.items() if other != name), default=0.0)
        after = max(breakdown[name] / 2, others)
        if after > 0:
            effects.append({"component": name, "predicted_ns_if_halved": after, "speedup_if_halved": prediction.predicted_ns / after})
    figures = {name: hardware.value(name) for name in ("sm_count", "clock_boost_hz", "dram_bandwidth_bytes_per_s", "l2_bytes")
               if hardware.value(name) is not None}
    return {
        "gpu": hardware.id, "gpu_name": hardware.name, "predicted_ns": prediction.predicted_ns, "bound": prediction.bound,
        "lower_bound": prediction.lower_bound, "clock_hz": prediction.clock_hz, "breakdown_ns": breakdown,
        "expected_effects": effects, "notes": prediction.notes, "hardware": figures,
    }
