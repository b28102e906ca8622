"""Knobs a kernel exposes as preprocessor macros, and the `tune` strategy that searches them.

A knob is a macro with a default that a -D flag could override:

    #ifndef TILE_PAD
    #define TILE_PAD 0  // knob: 0, 1
    #endif

The `// knob:` comment lists the values to try; without it, KNOB_VALUES gives defaults for
well-known names. A candidate is the source with the defaults rewritten (so its diff against
the best shows exactly which knob moved), plus the equivalent -D flags for the record.

The diagnosis decides the order: each finding's category maps to the knobs that address it
(KNOB_CATEGORIES), so the knobs for the largest finding are searched first. The search is a
coordinate search: one knob per round, all its untried values, the others at their best.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from perfmodel.hardware import gpu, reference_gpu_id

# Which knob names address which diagnosis categories (the category ids of docs/rules.md).
KNOB_CATEGORIES: dict[str, tuple[str, ...]] = {
    "TILE_PAD": ("shared_bank_conflicts", "l1_shared_bandwidth"),
    "MIN_BLOCKS": ("occupancy_registers", "memory_latency", "register_spills"),
    "BLOCK_SIZE": ("small_grid", "tail_effect", "occupancy_block_limit", "occupancy_registers"),
    "GRID_BLOCKS": ("small_grid", "tail_effect", "launch_overhead"),
    "BLOCK_ROWS": ("shared_bank_conflicts", "memory_latency", "instruction_issue"),
    "VEC_WIDTH": ("uncoalesced_global", "dram_bandwidth", "instruction_issue"),
    "STAGED": ("uncoalesced_global", "l2_bandwidth", "dram_bandwidth"),
    "UNROLL": ("instruction_issue", "memory_latency", "fp32_compute"),
    "TILE": ("l1_shared_bandwidth", "fp32_compute", "l2_bandwidth", "instruction_issue"),
    "THREAD_M": ("l1_shared_bandwidth", "fp32_compute", "instruction_issue", "memory_latency"),
}
KNOB_VALUES: dict[str, tuple[str, ...]] = {
    "TILE_PAD": ("0", "1"),
    "MIN_BLOCKS": ("1", "2", "3", "4", "8"),
    "BLOCK_SIZE": ("64", "128", "256", "512", "1024"),
    # 1 to 16 blocks per SM of the reference GPU (its hardware file's sm_count)
    "GRID_BLOCKS": tuple(str(int(gpu(reference_gpu_id()).require("sm_count")) * per_sm) for per_sm in (1, 2, 4, 8, 16)),
    "VEC_WIDTH": ("1", "2", "4"),
    "STAGED": ("0", "1"),
    "UNROLL": ("1", "2", "4", "8"),
}
KNOB_PATTERN = re.compile(
    r"^[ \t]*#[ \t]*ifndef[ \t]+(?P<name>[A-Z][A-Z0-9_]*)[ \t]*\n"
    r"(?P<define>[ \t]*#[ \t]*define[ \t]+(?P=name)[ \t]+)(?P<value>[^\s/]+)(?P<rest>[^\n]*)\n"
    r"[ \t]*#[ \t]*endif",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Knob:
    name: str
    default: str
    values: tuple[str, ...]
    categories: tuple[str, ...]


@dataclass
class Proposal:
    """One candidate a strategy wants evaluated."""

    label: str
    source: str | None  # None: the strategy produced no code (recorded as a failed proposal)
    knobs: dict[str, str] = field(default_factory=dict)
    rationale: str = ""
    defines: list[str] = field(default_factory=list)
    prompt: str = ""  # llm strategy: what the model was asked...
    reply: str = ""  # ...and its whole answer (both kept in the candidate's folder)


def discover_knobs(source: str) -> list[Knob]:
    """Every `#ifndef NAME / #define NAME value / #endif` knob, with the values to search."""
    knobs = []
    for match in KNOB_PATTERN.finditer(source):
        name, default = match["name"], match["value"]
        listed = re.search(r"knob:\s*([^\n]*)", match["rest"])
        values = tuple(v for v in re.split(r"[,\s]+", listed.group(1)) if v) if listed else KNOB_VALUES.get(name, ())
        if default not in values:
            values = (default, *values)
        if len(values) > 1:
            knobs.append(Knob(name, default, values, KNOB_CATEGORIES.get(name, ())))
    return knobs


def apply_knobs(source: str, settings: dict[str, str]) -> str:
    """The source with the knobs' defaults set to ``settings`` (other text unchanged)."""

    def replace(match: re.Match) -> str:
        value = settings.get(match["name"], match["value"])
        return match.group(0).replace(match["define"] + match["value"], match["define"] + value, 1)

    return KNOB_PATTERN.sub(replace, source)


def rank_knobs(knobs: list[Knob], categories: list[str]) -> list[Knob]:
    """Knobs that address the diagnosis' categories first (in the findings' order of impact),
    then the rest in source order."""

    def position(knob: Knob) -> int:
        hits = [categories.index(c) for c in knob.categories if c in categories]
        return min(hits) if hits else len(categories)

    return sorted(knobs, key=position)  # sorted is stable: ties keep source order


class TuneStrategy:
    """Coordinate search over the kernel's knobs, ordered by the diagnosis."""

    name = "tune"

    def __init__(self, source: str) -> None:
        self.source = source
        self.knobs = discover_knobs(source)
        self.searched: set[str] = set()  # knobs searched in the current pass
        self.tried: set[tuple[tuple[str, str], ...]] = set()
        self.improved_in_pass = False

    def settings_key(self, settings: dict[str, str]) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(settings.items()))

    def defaults(self) -> dict[str, str]:
        return {k.name: k.default for k in self.knobs}

    def notice(self, kept: bool) -> None:
        """Told after each round whether the best changed."""
        self.improved_in_pass |= kept

    def propose(self, best_knobs: dict[str, str], categories: list[str]) -> list[Proposal]:
        current = {**self.defaults(), **best_knobs}
        self.tried.add(self.settings_key(current))
        for attempt in range(2):
            for knob in rank_knobs(self.knobs, categories):
                if knob.name in self.searched:
                    continue
                self.searched.add(knob.name)
                proposals = self._sweep(knob, current, categories)
                if proposals:
                    return proposals
            if attempt == 0 and self.improved_in_pass:  # another pass: a knob's best may have moved
                self.searched.clear()
                self.improved_in_pass = False
            else:
                break
        return []

    def _sweep(self, knob: Knob, current: dict[str, str], categories: list[str]) -> list[Proposal]:
        reason = next((c for c in categories if c in knob.categories), None)
        why = f"diagnosis {reason} -> {knob.name}" if reason else f"{knob.name} (no finding names it; searched after those that do)"
        proposals = []
        for value in knob.values:
            settings = {**current, knob.name: value}
            key = self.settings_key(settings)
            if key in self.tried:
                continue
            self.tried.add(key)
            proposals.append(
                Proposal(
                    label=f"{knob.name}={value}",
                    source=apply_knobs(self.source, settings),
                    knobs=settings,
                    rationale=why,
                    defines=[f"-D{k}={v}" for k, v in sorted(settings.items())],
                )
            )
        return proposals
