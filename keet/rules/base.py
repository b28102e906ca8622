"""What a rule is, what it returns, and the view of one kernel it reasons over.

A rule is a small registered module: an id, a bottleneck category (from the design
brief), a description, and ``apply(view) -> Finding | None``. Rules read metrics only
through :class:`KernelView`, which remembers which metrics a rule asked for and the
profile lacked, so a diagnosis can say what it could not assess instead of guessing.

A rule that names a mechanism (register spills, bank conflicts, uncoalesced accesses that
reach L2, ...) declares a :class:`Mechanism` check next to its ``needs``: the counters that
tell that mechanism from its look-alikes and the ncu options that collect them. Its
:class:`Check` is cited in the finding (evidence, one sentence of the explanation, and
``checks`` in the JSON), and says "not assessed" with what to collect when they are absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from keet import canonical
from keet.profile import Kernel, Profile

# The per-opcode SASS instruction counts (InstructionStats / SourceCounters sections), read
# from the kernel's attributes rather than as one metric; named so in evidence and "missing".
OPCODE_TABLE = "sass__inst_executed_per_opcode"
OPCODE_COLLECT = "--section InstructionStats"

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
    checks: list[Check] = field(default_factory=list)  # the mechanism checks it cites

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
            "checks": [c.as_dict() for c in self.checks],
        }


NOT_ASSESSED = "not assessed"


@dataclass
class Check:
    """What one mechanism check found on one kernel: a verdict and the counters behind it.

    ``verdict`` is a short answer among the mechanism's outcomes (e.g. "register spills" or
    "local array"), or ``NOT_ASSESSED`` with the ``missing`` counters and how to ``collect``
    them. ``text`` is the sentence the finding's explanation carries; every number in it is
    the value of one of ``evidence``.
    """

    mechanism: str  # Mechanism.id
    verdict: str
    evidence: list[Evidence]
    text: str
    missing: list[str] = field(default_factory=list)
    collect: str = ""

    @property
    def assessed(self) -> bool:
        return self.verdict != NOT_ASSESSED

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"mechanism": self.mechanism, "verdict": self.verdict, "evidence": [e.metric for e in self.evidence]}
        if not self.assessed:
            found.update(missing=self.missing, collect=self.collect)
        return found


@dataclass(frozen=True)
class Mechanism:
    """A rule's declared check of the mechanism it names (as Nsight Compute rule files declare
    the metrics they read): the ``counters`` that distinguish it from look-alikes, the ncu
    options that ``collect`` them, and ``assess(view) -> Check``."""

    id: str
    question: str  # what the check decides, e.g. "register spills or a local array"
    counters: tuple[str, ...]  # canonical metrics, or OPCODE_TABLE for the per-opcode SASS counts
    collect: str
    assess: Callable[[KernelView], Check]

    def __call__(self, k: KernelView) -> Check:
        return self.assess(k)

    def not_assessed(self, missing: list[str], evidence: list[Evidence] | None = None, known: str = "") -> Check:
        """The check's answer when the profile lacks its counters: what to collect."""
        text = (
            f"{known}Whether this is {self.question} is not assessed: the profile lacks {', '.join(missing)}"
            f"; collect {'it' if len(missing) == 1 else 'them'} with ncu {self.collect}."
        )
        return Check(self.id, NOT_ASSESSED, list(evidence or []), text, list(missing), self.collect)


def mechanism(id: str, question: str, counters: tuple[str, ...], collect: str) -> Callable[[Callable[[KernelView], Check]], Mechanism]:
    """Declare ``assess`` as a mechanism check: ``@mechanism(id, question, counters, collect)``."""

    def declare(assess: Callable[[KernelView], Check]) -> Mechanism:
        return Mechanism(id, question, counters, collect, assess)

    return declare


def cite(finding: Finding, *checks: Check) -> Finding:
    """Add checks to a finding: their counters to its evidence, their sentences to its explanation."""
    for check in checks:
        finding.checks.append(check)
        known = {(e.metric, e.value) for e in finding.evidence}
        finding.evidence.extend(e for e in check.evidence if (e.metric, e.value) not in known)
        finding.explanation = f"{finding.explanation} {check.text}".strip()
    return finding


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

    def opcodes(self) -> dict[str, float] | None:
        """Warp-level instructions executed per SASS opcode (ncu's sass__inst_executed_per_opcode,
        or its _with_modifier table summed per opcode), or None where the profile has neither."""
        table = self.kernel.attributes.get("inst_executed_per_opcode")
        if not isinstance(table, dict) or not table:
            modified = self.kernel.attributes.get("inst_executed_per_opcode_with_modifier")
            if not isinstance(modified, dict) or not modified:
                self.missing.add(OPCODE_TABLE)
                return None
            table = {}
            for name, count in modified.items():
                base = str(name).split(".", 1)[0]
                table[base] = table.get(base, 0.0) + float(count)
        return {str(name): float(count) for name, count in table.items() if isinstance(count, (int, float))}

    def opcode_evidence(self, opcode: str, count: float) -> Evidence:
        """Evidence for one opcode's count from the per-opcode table."""
        return Evidence(f"{OPCODE_TABLE}[{opcode}]", count, "inst")

    def attribute(self, name: str) -> float | None:
        """A device attribute (e.g. max_warps_per_multiprocessor), where the profile has it."""
        value = self.device.attributes.get(name)
        return float(value) if isinstance(value, (int, float)) else None

    def hot_lines(self, counter: str, top: int = 3, minimum_share: float = 0.05, ideal: str | None = None) -> list[SourceLine]:
        """Source lines ranked by a per-instruction counter (or its excess over ``ideal``); a rule
        declares the counters it ranks by (``rule(lines=...)``)."""
        source = self.kernel.source_columns([counter, *([ideal] if ideal else [])], locations=True)
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
    checks: tuple[Mechanism, ...] = ()  # mechanism checks its findings cite (run inside apply)
    lines: tuple[str, ...] = ()  # per-instruction counters its findings rank source lines by (hot_lines)


RULES: list[Rule] = []


def rule(id: str, category: str, description: str, needs: tuple[str, ...] = (), collect: str = "",
         checks: tuple[Mechanism, ...] = (), lines: tuple[str, ...] = ()) -> Callable:  # fmt: skip
    """Register ``apply`` as a rule (with the mechanism checks its findings cite, and the
    per-instruction counters it ranks source lines by: a reader may read them ahead)."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category}")

    def register(apply: Callable[[KernelView], Finding | None]) -> Callable[[KernelView], Finding | None]:
        RULES.append(Rule(id, category, description, apply, needs, collect, checks, lines))
        return apply

    return register


# Tensor-core instructions by SASS opcode: Hopper's warpgroup MMA (wgmma: HGMMA fp16/bf16/tf32,
# QGMMA fp8, IGMMA int8, BGMMA binary), Blackwell's tcgen05 (UTC*MMA), warp-level mma.sync.
WARPGROUP_MMA = ("HGMMA", "QGMMA", "IGMMA", "BGMMA")
WARP_MMA = ("HMMA", "IMMA", "DMMA", "BMMA", "QMMA", "OMMA")


def matrix_instructions(k: KernelView) -> dict[str, float] | None:
    """Tensor-core instructions executed, by opcode (only those that ran), or None without the
    per-opcode table."""
    table = k.opcodes()
    if table is None:
        return None
    return {
        op: count for op, count in sorted(table.items())
        if count > 0 and (op in WARPGROUP_MMA or op in WARP_MMA or (op.startswith("UTC") and op.endswith("MMA")))
    }  # fmt: skip


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
