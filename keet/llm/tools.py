"""The agent's tools: read-only questions over our own objects (Profile, Diagnosis, Prediction).

Each tool returns a JSON object. Every string that came from the profile file (kernel names,
file paths, source text, raw metric names, the profiler's rule text) is fenced as data
(keet/llm/fence.py). Each call is recorded with its arguments and its result, because the
verifier accepts a number the agent saw in a tool result as supported.

Errors a model can make (an unknown kernel, a bad regular expression, an unknown GPU) come
back as ``{"error": ...}`` so the agent can correct itself instead of the run failing.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from keet.explain import explain
from keet.llm.fence import fence
from keet.profile import Kernel, Profile
from keet.summary import kernel_summary, kernels_by_duration

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

MAX_METRIC_ROWS = 40
MAX_HOT_LINES = 8
# Components of a prediction's breakdown for which the expected effect of halving is given.
EFFECT_COMPONENTS = 4


class ToolInputError(ValueError):
    """A tool argument the model got wrong; its message goes back to the model."""


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

    # ------------------------------------------------------------ shared look-ups

    def kernel(self, key: str | int | None, profile: Profile | None = None) -> Kernel:
        profile = profile or self.profile
        if key is None or str(key).strip() == "":
            return kernels_by_duration(profile)[0]
        found = profile.select(str(key).strip())
        if not found:
            names = ", ".join(f"{k.id}" for k in profile.kernels[:20])
            raise ToolInputError(f"no kernel matches {key!r}; kernel ids are {names} (list_kernels names them)")
        return found[0]

    def diagnosis_entry(self, kernel: Kernel, profile: Profile | None = None) -> dict[str, Any]:
        """keet explain's entry for a kernel (diagnoses are computed once per kernel)."""
        profile = profile or self.profile
        key = (id(profile), kernel.id)
        if key not in self._documents:
            self._documents[key] = explain(profile, [kernel])["kernels"][0]
        return self._documents[key]

    def work(self, kernel: Kernel, profile: Profile | None = None) -> tuple[Any, str | None]:
        from keet.report.sections import model_inputs

        return model_inputs(profile or self.profile, kernel)

    # ------------------------------------------------------------ the tools

    def list_kernels(self) -> dict[str, Any]:
        rows = []
        for kernel in kernels_by_duration(self.profile):
            summary = kernel_summary(self.profile, kernel)
            findings = self.diagnosis_entry(kernel)["diagnosis"]
            rows.append({
                "id": kernel.id, "name": fence(kernel.name), "duration_ns": kernel.duration_ns, "share": summary["share"],
                "grid": summary["grid"], "block": summary["block"],
                "top_finding": findings[0]["category"] if findings else None,
            })
        device = self.profile.device
        return {"device": fence(device.name), "sm_count": device.sm_count, "kernels": rows}

    def kernel_summary(self, kernel: str | None = None) -> dict[str, Any]:
        chosen = self.kernel(kernel)
        summary = kernel_summary(self.profile, chosen)
        return summary | {"name": fence(summary["name"]), "function_name": fence(summary["function_name"])}

    def metrics(self, kernel: str | None = None, pattern: str = "", origin: str = "canonical") -> dict[str, Any]:
        chosen = self.kernel(kernel)
        if origin not in ("canonical", "raw", "all"):
            raise ToolInputError("origin must be canonical, raw or all")
        try:
            regex = re.compile(pattern or ".", re.IGNORECASE)
        except re.error as exc:
            raise ToolInputError(f"not a regular expression: {exc}") from None
        table = self.profile.metrics[self.profile.metrics["kernel"] == chosen.id]
        if origin != "all":
            table = table[table["origin"] == origin]
        exact = table[table["metric"] == pattern]
        table = exact if not exact.empty else table[table["metric"].map(lambda name: bool(regex.search(name)))]
        rows = [
            {"metric": name if row_origin == "canonical" else fence(name), "value": value, "unit": unit, "origin": row_origin}
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
            "findings": [fenced_finding(f) for f in entry["diagnosis"]],
            "not_assessed": [{"category": n["category"], "missing": n["missing"]} for n in entry["not_assessed"]],
            "profiler_rules": [
                {"rule": fence(r.rule_id), "kind": r.kind, "title": fence(r.title), "message": fence(r.message),
                 "estimated_speedup_pct": r.estimated_speedup_pct}
                for r in chosen.rule_results if r.kind not in ("ok", "none")
            ],
        }

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
                 "value": h.value, "top_stall": h.top_stall}
                for h in lines
            ],
        }

    def predict(self, kernel: str | None = None, gpu: str = "") -> dict[str, Any]:
        from keet.report.sections import predictions
        from perfmodel.hardware import gpu as hardware
        from perfmodel.hardware import gpu_ids

        chosen = self.kernel(kernel)
        work, why_not = self.work(chosen)
        result = predictions(self.profile, chosen, work, why_not)
        wanted = gpu.strip().lower() or result.own_gpu or "h100"
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
        from keet.report.compare import delta, match

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
            "explanation": result.explanation,
        }

    def _side(self, profile: Profile, kernel: Kernel):
        from keet.report.compare import Side
        from keet.report.sections import predictions

        work, why_not = self.work(kernel, profile)
        prediction = predictions(profile, kernel, work, why_not).beside_measured()
        return Side(profile, kernel, "", self.diagnosis_entry(kernel, profile)["diagnosis"], prediction, work)

    # ------------------------------------------------------------ langchain

    def call(self, name: str, **args: Any) -> str:
        """Run a tool by name, record what it returned, and give the model its JSON."""
        try:
            result = getattr(self, name)(**args)
        except ToolInputError as exc:
            result = {"error": str(exc)}
        shown = rounded(result)
        self.calls.append(ToolCall(name, args, shown))
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

        def predict(kernel: str = "", gpu: str = "") -> str:
            return self.call("predict", kernel=kernel, gpu=gpu)

        def compare(kernel: str = "") -> str:
            return self.call("compare", kernel=kernel)

        which = "kernel: id or name ('' = the longest kernel)."
        tools = [
            make("list_kernels", "Every kernel of the profile, longest first: id, name, time, share, launch, top finding.", list_kernels),
            make("kernel_summary", f"Launch, resources, duration and headline metrics of one kernel. {which}", kernel_summary),
            make("metrics", f"Measured metrics of one kernel by exact name or regular expression. {which} "
                 "origin: canonical (keet's names, base units), raw (the profiler's names) or all.", metrics),
            make("findings", f"keet's rule findings with evidence (metric, value, threshold), impact and fixes; the "
                 f"profiler's own rule results. {which}", findings),
            make("source_hotspots", f"The hottest source lines (file, line, text, share of samples, top stall). {which}", source_hotspots),
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
        "evidence": finding["evidence"], "explanation": fence(finding["explanation"]), "suggestions": finding["suggestions"],
        "source_lines": [
            {"file": fence(s["file"]), "line": s["line"], "text": fence(s["text"].strip()) if s["text"] else None,
             "counter": s["counter"], "share": s["share"]}
            for s in finding["source_lines"]
        ],
    }


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
