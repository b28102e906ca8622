"""Check every claim of an LLM answer against what keet knows: the verifier.

A *claim* is a number (with its unit, SI prefix or percent sign), a metric name, a source line
reference or a quoted piece of source code found in the answer. Each is checked against the
*facts*: the profile's kernels and canonical metrics, the diagnosis (findings, evidence,
thresholds, source lines), the model's predictions and hardware figures, and every number the
agent saw in a tool result. docs/llm.md states the rules; in short:

* a number matches a fact of the same dimension when the fact, rounded (or truncated) to the
  claim's last stated digit, equals it; integer trailing zeros count as stated digits unless
  the claim is hedged ("~400 us", "about 400 us"); K/M/G/T bytes may be decimal or binary;
* a number bound to a metric name ("sol.dram_pct = 91%") must match *that* metric;
* a time, bandwidth, clock, throughput or ratio in a sentence that names a GPU (H100, H200, ...)
  must match a figure of a GPU that sentence names;
* a metric name must exist in the profile or keet's canonical vocabulary; a source line must
  exist in the profile's source; a quoted code span with numbers must be in the source;
* exempt: list ordinals and "step N", single-digit counts without a unit, and digits inside
  names (H100, sm_90, float4, fp32).

Numbers inside fenced profile strings (kernel names, the profiler's rule text) are never facts:
a kernel named "say 42" does not make 42 supported.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from typing import Any

from keet.canonical import vocabulary
from keet.llm.fence import CLOSE, OPEN
from keet.profile import Kernel, Profile
from keet.units import to_base

# ------------------------------------------------------------------ units

# A unit as written in prose -> (dimension, factor to the dimension's base unit).
# Base units: time ns, bytes B, rates B/s, clocks Hz, work flop, throughput flop/s, percent %,
# ratio x, counts (instructions, sectors, cycles, registers, ...) 1.
_TIME = {"ns": 1.0, "nsec": 1.0, "nanosecond": 1.0, "nanoseconds": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "usec": 1e3,
         "microsecond": 1e3, "microseconds": 1e3, "ms": 1e6, "msec": 1e6, "millisecond": 1e6, "milliseconds": 1e6,
         "s": 1e9, "sec": 1e9, "second": 1e9, "seconds": 1e9}
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_COUNT_WORDS = ("registers", "register", "threads", "thread", "blocks", "block", "warps", "warp", "sms", "sm", "cus",
                "sectors", "sector", "wavefronts", "wavefront", "instructions", "instruction", "inst", "cycles", "cycle",
                "requests", "request", "elements", "element", "lanes", "banks", "bank", "bits", "waves", "wave",
                "launches", "kernels", "lines", "samples", "transactions", "clk", "clocks", "ops", "operations")
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}

# Dimensions whose figures belong to one GPU: a sentence naming a GPU restricts them to it.
GPU_DIMENSIONS = {"time", "rate", "freq", "flop_rate", "ratio"}
GPU_NAMES = {"h100": "h100", "h200": "h200", "b200": "b200", "a100": "a100", "mi300x": "mi300x", "mi300a": "mi300a", "mi250x": "mi250x"}
HEDGES = ("~", "≈", "about", "approximately", "approx.", "roughly", "around", "nearly", "almost", "some", "over", "under",
          "up to", "close to")
# Numbers a reader knows from the architecture, with what they are (unitless or with these units).
ARCHITECTURE_CONSTANTS = {16: "bytes of a 16-byte vector access", 32: "threads per warp / shared-memory banks / bytes per sector",
                          64: "threads per AMD wavefront", 128: "bytes per cache line"}
CONSTANT_UNITS = {None, "threads", "thread", "lanes", "banks", "bank", "bytes", "byte", "B", "bits"}

_NUMBER = r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+)"
_UNIT = (r"(?P<unit>%|percent|x\b|×|times\b|"
         r"(?:[kKMGTP]i?)?(?:B|bytes?)(?:/s(?:ec)?\b|ps\b)?|"
         r"(?:[kKMGTP])?(?:FLOP/s|FLOPS|flop/s|FLOPs?|flops?)\b|"
         r"(?:[kKMG])?Hz\b|"
         r"(?:n|u|µ|μ|m)?s(?:ec)?\b|(?:nano|micro|milli)?seconds?\b|"
         r"(?:" + "|".join(_COUNT_WORDS) + r")\b|"
         r"(?:" + "|".join(_SCALE_WORDS) + r")\b|[KMG]\b)")
# A number not glued to a name on its left (H100, sm_90, fp32, float4, v2.1) and not the start of
# one; after a digit and a hyphen it is the second end of a range ("1.3-1.5x").
_CLAIM = re.compile(r"(?:(?<![\w.\-/])|(?<=\d-))(?P<sign>[-+−])?" + _NUMBER + r"(?![\w.]*[A-Za-z_][\w]*\()(?P<gap>[ \u00a0\-]?)" + _UNIT + "?",
                    re.UNICODE)
_ORDINAL = re.compile(r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:step\s+)?\d+[.)]\s|^\s*#+\s*\d+[.)]?\s", re.IGNORECASE)
_STEP = re.compile(r"\b(?:step|phase|stage|option|change|priority|finding|item)\s+#?$", re.IGNORECASE)
_SOURCE_REF = re.compile(r"(?P<file>[\w./\-]+\.(?:cu|cuh|h|hpp|cpp|cc|c|hip|cl|py|f90))(?::|\s+line\s+)(?P<line>\d+)"
                         r"|\blines?\s+(?P<bare>\d+)(?:\s*(?:-|–|to|and)\s*(?P<bare_end>\d+))?", re.IGNORECASE)
_CODE_SPAN = re.compile(r"```[\w+-]*\n(?P<block>.*?)```|`(?P<span>[^`\n]+)`", re.DOTALL)
_METRIC = re.compile(r"(?<![\w/])[A-Za-z][A-Za-z0-9_]*(?:(?:__|\.)[A-Za-z0-9_]+)+(?![\w(])")
_FILE_SUFFIX = re.compile(r"\.(cu|cuh|h|hpp|cpp|cc|c|hip|cl|py|f90|md|json|txt|xz|ncu-rep)$", re.IGNORECASE)
_GPU_MENTION = re.compile(r"\b(H100|H200|B200|A100|MI300X|MI300A|MI250X)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
_LINE_ORDINAL = re.compile(r"^\s*(?:[-*]\s+)?(?:\*\*)?\d+[.)]\s+")


def unit_dimension(unit: str | None) -> tuple[str | None, list[float]]:
    """The dimension of a unit as written in prose and its candidate factors to base units
    (two for K/M/G/T bytes: decimal and binary)."""
    if not unit:
        return None, [1.0]
    if unit in ("%", "percent"):
        return "percent", [1.0]
    if unit in ("x", "×", "times"):
        return "ratio", [1.0]
    if unit in _TIME:
        return "time", [_TIME[unit]]
    if unit.lower() in _SCALE_WORDS:
        return "count", [_SCALE_WORDS[unit.lower()]]
    if unit in ("K", "M", "G"):
        return "count", [_PREFIX[unit]]
    if unit.lower() in _COUNT_WORDS:
        return "count", [1.0]
    if match := re.fullmatch(r"([kKMGTP]?)Hz", unit):
        return "freq", [_PREFIX[match.group(1)]]
    if match := re.fullmatch(r"([kKMGTP]?)(FLOP/s|FLOPS|flop/s|FLOPs?|flops?)", unit):
        rate = match.group(2) in ("FLOP/s", "FLOPS", "flop/s")
        return ("flop_rate" if rate else "flop"), [_PREFIX[match.group(1)]]
    if match := re.fullmatch(r"([kKMGTP]i?)?(B|bytes?)(/s|/sec|ps)?", unit):
        prefix = match.group(1) or ""
        factors = [_BINARY[prefix]] if prefix in _BINARY else sorted({_PREFIX[prefix], 1024.0 ** "kKMGTP".find(prefix) if prefix else 1.0})
        if prefix.lower() == "k" and not prefix.endswith("i"):
            factors = [1e3, 1024.0]
        return ("rate" if match.group(3) else "bytes"), factors
    return None, [1.0]


def fact_dimension(unit: str) -> tuple[str, float]:
    """The dimension of a fact's unit (keet's canonical and the profilers' raw units) and the
    factor to its base unit."""
    value, base = to_base(1.0, unit or "")
    if base == "ns":
        return "time", value
    if base in ("%",):
        return "percent", 1.0
    if base in ("byte",):
        return "bytes", value
    if base in ("byte/second", "byte/s"):
        return "rate", value
    if base == "hz":
        return "freq", value
    if base == "flop":
        return "flop", 1.0
    if base in ("flop/second", "flop/s"):
        return "flop_rate", 1.0
    if base in ("x", "ratio"):
        return "ratio", 1.0
    return "count", 1.0


# ------------------------------------------------------------------ facts


@dataclass(frozen=True)
class Fact:
    """A value keet knows, in the base unit of its dimension, and where it came from."""

    value: float
    dimension: str
    origin: str
    gpus: frozenset[str] = frozenset()
    metric: str | None = None


@dataclass
class FactBook:
    """Everything an answer's numbers may be checked against."""

    facts: list[Fact] = field(default_factory=list)
    metric_names: set[str] = field(default_factory=set)
    source_lines: dict[str, set[int]] = field(default_factory=dict)  # file basename -> lines that exist
    source_texts: list[str] = field(default_factory=list)

    def add(self, value: Any, unit: str, origin: str, gpus: tuple[str | None, ...] = (), metric: str | None = None) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return
        dimension, factor = fact_dimension(unit)
        tags = frozenset(g for g in gpus if g)
        self.facts.append(Fact(float(value) * factor, dimension, origin, tags, metric))

    def add_fraction(self, value: Any, origin: str, gpus: tuple[str | None, ...] = ()) -> None:
        """A share (0..1) is said as a percent."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.add(value * 100.0, "%", origin, gpus)

    def add_text(self, text: str, origin: str, gpus: tuple[str | None, ...] = ()) -> None:
        """The numbers of a text keet wrote (a finding's explanation, a model note)."""
        for claim in extract_numbers(text, 0, 0):
            for factor in claim.factors:
                self.facts.append(Fact(claim.magnitude * factor, claim.dimension or "count", f"{origin}: {claim.text!r}", frozenset(g for g in gpus if g)))

    def add_source(self, file: str, text: str | None, lines: list[int]) -> None:
        name = file.rsplit("/", 1)[-1]
        known = self.source_lines.setdefault(name, set())
        known.update(lines)
        if text:
            known.update(range(1, len(text.splitlines()) + 1))
            self.source_texts.append(text)

    def add_ratio(self, a: float | None, b: float | None, origin: str, gpus: tuple[str | None, ...] = ()) -> None:
        """a / b and b / a as ratios, and the differences as percents (30% faster, 23% less time)."""
        if not a or not b:
            return
        for ratio in (a / b, b / a):
            self.add(ratio, "x", origin, gpus)
            self.add(abs(ratio - 1) * 100, "%", f"{origin} (percent difference)", gpus)


def profile_facts(book: FactBook, profile: Profile, kernels: list[Kernel], own_gpu: str | None) -> None:
    """The kernels' launch, resources, time and canonical metrics; raw and canonical metric
    names; the source files the profile holds."""
    book.metric_names.update(m.name for m in vocabulary())
    book.metric_names.update(profile.metrics["metric"].unique().tolist())
    device = profile.device
    for name in ("sm_count", "sm_clock_hz", "max_sm_clock_hz", "memory_clock_hz", "memory_bytes", "memory_bus_width_bits", "l2_bytes"):
        unit = "hz" if name.endswith("_hz") else ("byte" if name.endswith("_bytes") else "")
        book.add(getattr(device, name), unit, f"device {name}", (own_gpu,))
    total = profile.total_duration_ns()
    for kernel in kernels:
        where = f"kernel {kernel.id}"
        book.add(kernel.duration_ns, "ns", f"{where} duration", (own_gpu,))
        if kernel.duration_ns and total:
            book.add_fraction(kernel.duration_ns * kernel.invocations / total, f"{where} share of GPU time")
        for name, dims in (("grid", kernel.grid), ("block", kernel.block)):
            for value in dims or ():
                book.add(value, "", f"{where} {name} dimension")
        for name in ("blocks", "threads_per_block", "registers_per_thread", "shared_bytes_per_block", "invocations",
                     "static_shared_bytes", "dynamic_shared_bytes"):
            book.add(getattr(kernel, name), "byte" if "bytes" in name else "", f"{where} {name}")
        if kernel.blocks and kernel.threads_per_block:
            book.add(kernel.blocks * kernel.threads_per_block, "", f"{where} threads launched")
        for metric, (value, unit) in profile.values(kernel).items():
            book.add(value, unit, f"{where} {metric}", (own_gpu,), metric)
        source = kernel.source
        if source is not None:
            lines = source.by_line()
            for file in set(lines["file"]) | set(source.files):
                book.add_source(str(file), source.files.get(file), [int(n) for n, f in zip(lines["line"], lines["file"]) if f == file])
    ranked = sorted((k for k in kernels if k.duration_ns), key=lambda k: -k.duration_ns)[:10]
    for a, b in combinations(ranked, 2):
        book.add_ratio(a.duration_ns, b.duration_ns, f"kernels {a.id} and {b.id} durations")


def finding_facts(book: FactBook, document: dict[str, Any], own_gpu: str | None) -> None:
    """Findings of keet explain's document: impact, confidence, evidence and thresholds, the
    numbers of keet's explanations and suggestions, the hot source lines."""
    for entry in document["kernels"]:
        where = f"kernel {entry['id']}"
        for finding in entry["diagnosis"]:
            origin = f"{where} finding {finding['category']}"
            book.add_fraction(finding["impact"], f"{origin} impact")
            book.add_fraction(finding["confidence"], f"{origin} confidence")
            if entry.get("duration_ns"):
                book.add(finding["impact"] * entry["duration_ns"], "ns", f"{origin} time at stake", (own_gpu,))
            for evidence in finding["evidence"]:
                book.add(evidence["value"], evidence["unit"], f"{origin} evidence {evidence['metric']}", (own_gpu,), evidence["metric"])
                if "compared_with" in evidence:
                    book.add(evidence["compared_with"], evidence["unit"], f"{origin} threshold for {evidence['metric']}", (own_gpu,))
            book.add_text(finding["explanation"], f"{origin} explanation", (own_gpu,))
            for suggestion in finding["suggestions"]:
                book.add_text(suggestion, f"{origin} suggestion", (own_gpu,))
            for line in finding["source_lines"]:
                book.add_fraction(line["share"], f"{origin} share of {line['file']}:{line['line']}")
                book.add(line["value"], "", f"{origin} {line['counter']} at {line['file']}:{line['line']}")
                book.add_source(line["file"], None, [line["line"]])


def prediction_facts(book: FactBook, profile: Profile, kernels: list[Kernel], own_gpu: str | None) -> None:
    """The model's prediction and breakdown of each kernel on every GPU of the database, the
    GPUs' hardware figures, and the ratios a reader states (measured vs predicted, GPU vs GPU)."""
    from keet.llm.tools import prediction_dict
    from keet.report.sections import model_inputs, predictions
    from perfmodel.hardware import gpu, gpu_ids

    for gpu_id in gpu_ids():
        hardware = gpu(gpu_id)
        for name, param in hardware.params.items():
            book.add(param.value, param.unit, f"{gpu_id} hardware {name}", (gpu_id,))
    for kernel in kernels:
        work, why_not = model_inputs(profile, kernel)
        found = predictions(profile, kernel, work, why_not)
        shown = [p for p in (*found.per_gpu, found.at_profile_clock) if p is not None and p.predicted_ns is not None]
        for prediction in shown:
            walk_result(book, prediction_dict(prediction, gpu(prediction.gpu)), f"kernel {kernel.id} model on {prediction.gpu}", (prediction.gpu,))
            book.add_ratio(kernel.duration_ns, prediction.predicted_ns, f"kernel {kernel.id} measured vs model on {prediction.gpu}",
                           (prediction.gpu, own_gpu))
        for a, b in combinations([p for p in found.per_gpu if p.predicted_ns], 2):
            book.add_ratio(a.predicted_ns, b.predicted_ns, f"kernel {kernel.id} model {a.gpu} vs {b.gpu}", (a.gpu, b.gpu))


_KEY_UNITS = (("_bytes_per_s", "byte/second"), ("_ns", "ns"), ("_hz", "hz"), ("_pct", "%"), ("_bytes", "byte"))
_FRACTION_KEYS = {"share", "impact", "confidence"}
_RATIO_KEYS = {"speedup", "speedup_if_halved"}


def walk_result(book: FactBook, result: Any, origin: str, gpus: tuple[str | None, ...] = (), key: str = "") -> None:
    """Every number of a tool result, with its unit from a sibling ``unit`` or from its key;
    keet's own strings give their numbers too, fenced profile strings do not."""
    if isinstance(result, dict):
        if "value" in result and "unit" in result:
            book.add(result["value"], result["unit"], f"{origin} {result.get('metric', key)}", gpus, result.get("metric"))
            if "compared_with" in result:
                book.add(result["compared_with"], result["unit"], f"{origin} threshold of {result.get('metric', key)}", gpus)
        tags = (*gpus, result.get("gpu")) if isinstance(result.get("gpu"), str) else gpus
        for name, value in result.items():
            if name not in ("value", "compared_with") or "unit" not in result:
                walk_result(book, value, origin, tags, name if key != "breakdown_ns" else f"{name}_ns")
    elif isinstance(result, list):
        for item in result:
            walk_result(book, item, origin, gpus, key)
    elif isinstance(result, str):
        if OPEN not in result:
            book.add_text(result, f"{origin} {key}", gpus)
    elif isinstance(result, (int, float)):
        if key in _FRACTION_KEYS:
            book.add_fraction(result, f"{origin} {key}", gpus)
        elif key in _RATIO_KEYS:
            book.add(result, "x", f"{origin} {key}", gpus)
        else:
            unit = next((unit for suffix, unit in _KEY_UNITS if key.endswith(suffix)), "")
            book.add(result, unit, f"{origin} {key}", gpus)


# ------------------------------------------------------------------ claims


@dataclass
class Claim:
    """One checkable statement of the answer and its verdict."""

    kind: str  # "number", "metric", "source_line", "code"
    text: str
    sentence: int  # index of the sentence it is in
    start: int  # offset in the answer
    magnitude: float = 0.0
    dimension: str | None = None
    factors: list[float] = field(default_factory=lambda: [1.0])
    tolerance: float = 0.0  # in the claim's own unit
    metric: str | None = None  # the metric a number is bound to
    gpus: frozenset[str] = frozenset()  # GPUs its sentence names
    verdict: str = "unchecked"  # supported, unsupported, exempt
    support: str = ""  # the fact that supports it, or why it is exempt
    reason: str = ""  # why it is unsupported

    def as_dict(self) -> dict[str, Any]:
        found = {"kind": self.kind, "text": self.text, "verdict": self.verdict}
        if self.verdict == "unsupported":
            found["reason"] = self.reason
        else:
            found["support"] = self.support
        return found


def _stated_tolerance(number: str, hedged: bool) -> float:
    """Half a unit of the last stated digit (trailing integer zeros are stated unless hedged)."""
    digits = number.replace(",", "")
    if "e" in digits.lower():
        mantissa = digits.lower().split("e")[0]
        exponent = int(digits.lower().split("e")[1])
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return 0.5 * 10.0 ** (exponent - decimals)
    if "." in digits:
        return 0.5 * 10.0 ** -len(digits.split(".")[1])
    zeros = len(digits) - len(digits.rstrip("0")) if hedged and digits.strip("0") else 0
    return 0.5 * 10.0**zeros


def extract_numbers(text: str, offset: int, sentence: int) -> list[Claim]:
    """The numbers of a piece of text with their units; ordinals and digits inside names are skipped."""
    claims = []
    for match in _CLAIM.finditer(text):
        before = text[: match.start()]
        if _ORDINAL.match(text[: match.end("num") + 2]) and not before.strip().strip("-*#").strip():
            continue
        if _STEP.search(before):
            continue
        unit = match.group("unit")
        if unit and match.group("gap") == "-" and unit not in _COUNT_WORDS and not unit.endswith(("byte", "bytes")):
            unit = None  # "2-way", "16-bit": a hyphen joins words, not a number and its unit
        if unit and unit[0].isalpha() and match.end() < len(text) and (text[match.end()].isalnum() or text[match.end()] == "_"):
            unit = None
        number = match.group("num")
        hedged = any(before.rstrip().lower().endswith(h) for h in HEDGES)
        dimension, factors = unit_dimension(unit)
        claims.append(Claim("number", match.group(0).strip() if unit else number, sentence, offset + match.start("num"),
                            abs(float(number.replace(",", ""))), dimension, factors, _stated_tolerance(number, hedged)))
    return claims


def _range_units(claims: list[Claim], text: str, offset: int) -> None:
    """"1.3-1.5x", "between 60 and 70%": the unit after the second number applies to the first."""
    for first, second in pairwise(claims):
        between = text[first.start - offset + len(first.text): second.start - offset]
        if first.dimension is None and second.dimension is not None and re.fullmatch(r"\s*(?:-|–|to|and)\s*", between):
            first.dimension, first.factors = second.dimension, second.factors


def sentences(answer: str) -> list[tuple[int, str]]:
    """The answer cut into sentences, each with its offset: a line ends a sentence, and so does
    [.!?] before whitespace, except after a list item's number ("1. Use ...")."""
    found = []
    position = 0
    for line in answer.splitlines(keepends=True):
        content = line.rstrip("\r\n")
        head = _LINE_ORDINAL.match(content)
        start = 0
        for end in _SENTENCE_END.finditer(content, head.end() if head else 0):
            if content[start:end.end()].strip():
                found.append((position + start, content[start:end.end()]))
            start = end.end()
        if content[start:].strip():
            found.append((position + start, content[start:]))
        position += len(line)
    return found


def extract_claims(answer: str, book: FactBook) -> list[Claim]:
    """Every claim of the answer, sentence by sentence."""
    claims: list[Claim] = []
    prefixes = {name.split(".")[0] for name in book.metric_names if "." in name and "__" not in name}
    for index, (offset, sentence) in enumerate(sentences(answer)):
        gpus = frozenset(GPU_NAMES[m.lower()] for m in _GPU_MENTION.findall(sentence))
        taken: list[tuple[int, int]] = []
        found: list[Claim] = []
        for match in _SOURCE_REF.finditer(sentence):
            taken.append(match.span())
            found.append(Claim("source_line", match.group(0), index, offset + match.start()))
        for match in _CODE_SPAN.finditer(sentence):
            code = match.group("block") or match.group("span")
            if any(ch.isdigit() for ch in code) and not _METRIC.fullmatch(code.strip()):
                taken.append(match.span())
                found.append(Claim("code", code.strip(), index, offset + match.start()))
        for match in _METRIC.finditer(sentence):
            name = match.group(0)
            if _FILE_SUFFIX.search(name) or any(s <= match.start() < e for s, e in taken):
                continue
            if "__" in name or name.split(".")[0] in prefixes or name in book.metric_names:
                taken.append(match.span())
                found.append(Claim("metric", name, index, offset + match.start()))
                binding = _leading_binding(sentence[match.end():])
                bound = _CLAIM.match(sentence, match.end() + len(binding))
                if bound:
                    number = extract_numbers(sentence[bound.start():bound.end()], offset + bound.start(), index)
                    for claim in number[:1]:
                        claim.metric = name
                        if any(binding.lower().rstrip().endswith(h) for h in HEDGES):  # "is about 70%"
                            claim.tolerance = _stated_tolerance(bound.group("num"), hedged=True)
                        found.append(claim)
                        taken.append(bound.span())
        numbers = [c for c in extract_numbers(sentence, offset, index) if not any(s <= c.start - offset < e for s, e in taken)]
        _range_units(numbers, sentence, offset)
        for claim in found + numbers:
            claim.gpus = gpus
        claims.extend(sorted(found + numbers, key=lambda c: c.start))
    return claims


def _leading_binding(rest: str) -> str:
    """The words between a metric name and the number it is said to have ("= ", " is about ")."""
    match = re.match(r"(?:\s*(?:=|:|is|was|of|at|reads|shows|reached|reaches|equals)\s*(?:about|around|roughly|~|≈)?\s*)", rest,
                     re.IGNORECASE)
    return match.group(0) if match else ""


# ------------------------------------------------------------------ checking


def _matches(claim: Claim, fact: Fact, factor: float) -> bool:
    """The fact, rounded or truncated to the claim's last stated digit, equals the claim."""
    said = fact.value / factor
    difference = abs(said) - claim.magnitude
    slack = 1e-9 * max(abs(said), 1.0)
    return abs(difference) <= claim.tolerance + slack or 0 <= difference < 2 * claim.tolerance


def _compatible(claim: Claim, fact: Fact) -> bool:
    if claim.metric is not None and fact.metric != claim.metric:
        return False
    if claim.dimension is None:
        return fact.dimension in ("count", "percent", "ratio") or claim.metric is not None
    if claim.dimension == "count" and fact.dimension in ("count", "flop"):
        return True
    if claim.dimension != fact.dimension:
        return False
    if claim.gpus and fact.dimension in GPU_DIMENSIONS:
        return bool(fact.gpus & claim.gpus)
    return True


def _closest(claim: Claim, book: FactBook) -> str:
    candidates = [(abs(f.value / claim.factors[0] - claim.magnitude) / max(claim.magnitude, 1e-12), f) for f in book.facts
                  if _compatible(claim, f)]
    if not candidates:
        return ""
    _gap, fact = min(candidates, key=lambda item: item[0])
    return f" (closest known: {fact.value / claim.factors[0]:.4g} from {fact.origin})"


def check_number(claim: Claim, book: FactBook) -> None:
    for fact in book.facts:
        if _compatible(claim, fact) and any(_matches(claim, fact, factor) for factor in claim.factors):
            claim.verdict, claim.support = "supported", fact.origin
            return
    if claim.metric is None and claim.dimension is None and float(claim.magnitude).is_integer() and claim.magnitude < 10:
        claim.verdict, claim.support = "exempt", "a single-digit count without a unit, not a measurement"
        return
    constant = ARCHITECTURE_CONSTANTS.get(int(claim.magnitude)) if float(claim.magnitude).is_integer() else None
    unit = claim.text[len(claim.text.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")):] or None
    if constant and claim.metric is None and (unit in CONSTANT_UNITS or claim.dimension in (None, "bytes")):
        claim.verdict, claim.support = "exempt", f"architecture constant: {constant}"
        return
    if claim.dimension in (None, "count") and claim.metric is None and _in_source(str(int(claim.magnitude)) if float(claim.magnitude).is_integer() else claim.text, book):
        claim.verdict, claim.support = "supported", "a number written in the kernel's source"
        return
    where = f" for {claim.metric}" if claim.metric else ""
    gpus = f" on {', '.join(sorted(claim.gpus))}" if claim.gpus and claim.dimension in GPU_DIMENSIONS else ""
    claim.verdict = "unsupported"
    claim.reason = f"no value{where}{gpus} in the profile, findings, tool results or model predictions rounds to {claim.text}{_closest(claim, book)}"


def _in_source(token: str, book: FactBook) -> bool:
    pattern = re.compile(rf"(?<![\w.]){re.escape(token)}(?![\w.])")
    return any(pattern.search(text) for text in book.source_texts)


def check_metric(claim: Claim, book: FactBook) -> None:
    if claim.text in book.metric_names:
        claim.verdict, claim.support = "supported", "a metric of the profile or of keet's canonical vocabulary"
    else:
        claim.verdict, claim.reason = "unsupported", f"no metric named {claim.text} in the profile or keet's vocabulary"


def check_source_line(claim: Claim, book: FactBook) -> None:
    match = _SOURCE_REF.search(claim.text)
    if match.group("file"):
        name = match.group("file").rsplit("/", 1)[-1]
        lines = [int(match.group("line"))]
        files = {name: book.source_lines.get(name)}
    else:
        start = int(match.group("bare"))
        end = int(match.group("bare_end") or start)
        lines = [start, end]
        files = book.source_lines
    for name, known in files.items():
        if known and all(line in known for line in lines):
            claim.verdict, claim.support = "supported", f"{name} has line{'s' if len(set(lines)) > 1 else ''} {'-'.join(map(str, dict.fromkeys(lines)))}"
            return
    if not book.source_lines:
        claim.verdict, claim.reason = "unsupported", "the profile holds no source lines"
    else:
        claim.verdict, claim.reason = "unsupported", f"no such line in the profile's source ({', '.join(sorted(book.source_lines))})"


def check_code(claim: Claim, book: FactBook) -> None:
    """A code span with numbers is a quote of the source, or each of its numbers must hold."""
    quoted = " ".join(claim.text.split())
    if any(quoted in " ".join(text.split()) for text in book.source_texts):
        claim.verdict, claim.support = "supported", "quoted from the kernel's source"
        return
    inner = [c for c in extract_numbers(claim.text, 0, claim.sentence)]
    for number in inner:
        number.gpus = claim.gpus
        check_number(number, book)
    failed = [n for n in inner if n.verdict == "unsupported"]
    if failed:
        claim.verdict = "unsupported"
        claim.reason = f"code that is not in the kernel's source, with numbers keet cannot support: {', '.join(n.text for n in failed)}"
    else:
        claim.verdict, claim.support = "supported", "every number in it is supported"


CHECKS = {"number": check_number, "metric": check_metric, "source_line": check_source_line, "code": check_code}


def check(answer: str, book: FactBook) -> list[Claim]:
    """Every claim of the answer with its verdict."""
    claims = extract_claims(answer, book)
    for claim in claims:
        CHECKS[claim.kind](claim, book)
    return claims


def remove_unsupported(answer: str, claims: list[Claim]) -> str:
    """The answer without the sentences that hold an unsupported claim (the rest as written)."""
    bad = {c.sentence for c in claims if c.verdict == "unsupported"}
    spans = [(offset, offset + len(text)) for index, (offset, text) in enumerate(sentences(answer)) if index in bad]
    kept, position = [], 0
    for start, end in spans:
        kept.append(answer[position:start])
        position = end
    kept.append(answer[position:])
    lines = [line.rstrip() for line in "".join(kept).splitlines()]
    lines = [line for line in lines if not _LINE_ORDINAL.fullmatch(line + " ") and line.strip() not in ("-", "*")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def sentence_of(answer: str, claim: Claim) -> str:
    found = sentences(answer)
    return found[claim.sentence][1].strip() if claim.sentence < len(found) else ""


def strip_fences(text: str) -> str:
    """An answer that copied fenced data shows it without the markers."""
    return text.replace(OPEN, "").replace(CLOSE, "")
