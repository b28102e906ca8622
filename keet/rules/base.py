"""What a rule is, what it returns, and the view of one kernel it reasons over.

A rule is a small registered module: an id, a bottleneck category (from the design
brief), a description, and ``apply(view) -> Finding | None``. Rules read metrics only
through :class:`KernelView`, which remembers which metrics a rule asked for and the
profile lacked, so a diagnosis can say what it could not assess instead of guessing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from keet import canonical
from keet.profile import Kernel, Profile

CATEGORIES = (
    "dram_bandwidth", "l2_bandwidth", "l1_shared_bandwidth", "uncoalesced_global", "shared_bank_conflicts",
    "atomic_contention", "warp_divergence", "fp32_compute", "fp64_compute", "sfu_compute", "int_compute",
    "tensor_compute", "instruction_issue", "register_spills", "occupancy_registers", "occupancy_shared_memory",
    "occupancy_block_limit", "small_grid", "tail_effect", "memory_latency", "barrier_sync", "launch_overhead",
)  # fmt: skip


@dataclass(frozen=True)
class Evidence:
    """One measured value behind a finding, and what it was compared with."""

    metric: str
    value: float
    unit: str
    compared_with: float | None = None  # the threshold or ceiling
    relation: str = ""  # how value relates to compared_with: ">=", "<", "of", ...

    def as_dict(self) -> dict[str, Any]:
        found = {"metric": self.metric, "value": self.value, "unit": self.unit}
        if self.compared_with is not None:
            found.update(compared_with=self.compared_with, relation=self.relation)
        return found


@dataclass(frozen=True)
class SourceLine:
    """A hot source line: where it is, its text, and the counter that makes it hot."""

    file: str
    line: int
    text: str | None
    counter: str
    value: float
    share: float  # of the kernel's total of that counter

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "text": self.text, "counter": self.counter, "value": self.value, "share": self.share}


def locations(lines: list[SourceLine], with_text: bool = False) -> str:
    """" The excess comes from a.cu:18; b.cu:3." for an explanation (empty without lines)."""
    if not lines:
        return ""
    places = [f"{s.file.rsplit('/', 1)[-1]}:{s.line}" + (f" `{s.text.strip()}`" if with_text and s.text else "") for s in lines]
    return " The excess comes from " + "; ".join(places) + "."


@dataclass
class Finding:
    category: str
    rule: str
    impact: float  # estimated fraction of the kernel's runtime at stake (docs/rules.md says how)
    confidence: float
    evidence: list[Evidence]
    explanation: str
    suggestions: list[str]
    explains: tuple[str, ...] = ()  # categories this finding is the cause of (symptoms)
    source_lines: list[SourceLine] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "rule": self.rule,
            "impact": round(self.impact, 4),
            "confidence": round(self.confidence, 2),
            "evidence": [e.as_dict() for e in self.evidence],
            "explanation": self.explanation,
            "suggestions": self.suggestions,
            "source_lines": [s.as_dict() for s in self.source_lines],
        }


class KernelView:
    """One kernel of a profile as rules see it: metrics by name, limits, hot lines."""

    def __init__(self, profile: Profile, kernel: Kernel) -> None:
        self.profile = profile
        self.kernel = kernel
        self.missing: set[str] = set()
        self._values = profile.values(kernel)
        self._raw = profile.values(kernel, origin="raw")
        self._units = {m.name: m.unit for m in canonical.vocabulary()}
        device = profile.devices.get(kernel.device_id, profile.device)
        self.device = device

    def metric(self, name: str) -> float | None:
        """A canonical metric, or None (remembered as missing evidence)."""
        found = self._values.get(name)
        if found is None:
            self.missing.add(name)
            return None
        return found[0]

    def has(self, *names: str) -> bool:
        return all(self.metric(name) is not None for name in names)

    def raw(self, name: str) -> float | None:
        found = self._raw.get(name)
        return None if found is None else found[0]

    def evidence(self, name: str, compared_with: float | None = None, relation: str = "") -> Evidence:
        """Evidence for a canonical metric the rule has already checked is present."""
        value, unit = self._values[name]
        return Evidence(name, value, unit, compared_with, relation)

    def attribute(self, name: str) -> float | None:
        """A device attribute (e.g. max_warps_per_multiprocessor), where the profile has it."""
        value = self.device.attributes.get(name)
        return float(value) if isinstance(value, (int, float)) else None

    def hot_lines(self, counter: str, top: int = 3, minimum_share: float = 0.05, ideal: str | None = None) -> list[SourceLine]:
        """Source lines ranked by a per-instruction counter (or its excess over ``ideal``)."""
        source = self.kernel.source
        if source is None or counter not in source.counter_names():
            return []
        lines = source.by_line()
        weight = lines[counter] - (lines[ideal] if ideal and ideal in lines else 0.0)
        total = float(weight.clip(lower=0).sum())
        if total <= 0:
            return []
        lines = lines.assign(weight=weight).nlargest(top, "weight")
        return [
            SourceLine(str(row.file), int(row.line), row.text, counter if not ideal else f"{counter} - {ideal}", float(row.weight), float(row.weight) / total)
            for row in lines.itertuples()
            if row.weight / total >= minimum_share
        ]


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    description: str
    apply: Callable[[KernelView], Finding | None]
    needs: tuple[str, ...] = ()  # canonical metrics without which the rule cannot judge
    collect: str = ""  # the ncu option that collects them


RULES: list[Rule] = []


def rule(id: str, category: str, description: str, needs: tuple[str, ...] = (), collect: str = "") -> Callable:
    """Register ``apply`` as a rule."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category}")

    def register(apply: Callable[[KernelView], Finding | None]) -> Callable[[KernelView], Finding | None]:
        RULES.append(Rule(id, category, description, apply, needs, collect))
        return apply

    return register


# Below this share of elapsed cycles with the SMs active, idle SMs cost runtime a pipe finding does not explain.
ACTIVE_NOTE = 0.9


def active_share(k: KernelView, evidence: list[Evidence], unit: str) -> tuple[float, str]:
    """Share of the elapsed cycles the SMs were active, and a sentence when idle SMs matter.

    Pipe utilisations are over active cycles; multiplied by this share they become a share
    of the kernel's runtime (a tail or idle SMs are not that pipe's time).
    """
    if not (k.has("sm_active_cycles", "cycles_elapsed") and k.metric("cycles_elapsed") > 0):
        return 1.0, ""
    active = clamp(k.metric("sm_active_cycles") / k.metric("cycles_elapsed"))
    evidence += [k.evidence("sm_active_cycles"), k.evidence("cycles_elapsed")]
    if active >= ACTIVE_NOTE:
        return active, ""
    return active, (
        f" The SMs were active for only {num(k.metric('sm_active_cycles'))} of {num(k.metric('cycles_elapsed'))} "
        f"elapsed cycles, so the {unit} bounds only that part of the runtime; the idle remainder has another cause."
    )


def clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def pct(value: float) -> str:
    """A percentage as rules print it (the explanation-number test reads it back)."""
    return f"{value:.1f}%"


def num(value: float) -> str:
    """A plain number as rules print it: 3 significant digits, thousands grouped."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"
