"""Canonical metric vocabulary: load it, and derive canonical metrics from raw ones.

The vocabulary is data (keet/data/canonical_metrics.toml); this module only evaluates
its small formulas. ``python -m keet.canonical`` prints docs/metrics.md.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from keet.units import to_base

Formula = str | list[Any]


@dataclass(frozen=True)
class CanonicalMetric:
    name: str
    unit: str
    meaning: str
    ncu: tuple[Formula, ...]
    ncu_labels: tuple[str, ...]
    amd: tuple[Formula, ...] = ()  # rocprof counter names / formulas, tried in order
    amd_source: str = ""  # where the AMD formula comes from (rocprof-compute panel, rocprof docs)


def _metric(entry: dict[str, Any]) -> CanonicalMetric:
    return CanonicalMetric(
        name=entry["name"],
        unit=entry.get("unit", ""),
        meaning=entry["meaning"],
        ncu=tuple(entry.get("ncu", [])),
        ncu_labels=tuple(entry.get("ncu_labels", [])),
        amd=tuple(entry.get("amd", [])),
        amd_source=entry.get("amd_source", ""),
    )


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return tomllib.loads(resources.files("keet.data").joinpath("canonical_metrics.toml").read_text())


@lru_cache(maxsize=1)
def vocabulary() -> tuple[CanonicalMetric, ...]:
    """Every cross-vendor canonical metric, in the order of the data file."""
    return tuple(_metric(entry) for entry in _data()["metric"])


@lru_cache(maxsize=1)
def amd_only() -> tuple[CanonicalMetric, ...]:
    """Metrics AMD GPUs have and NVIDIA ones have no counterpart of (VALU/SALU utilization, ...).

    Named ``amd.*`` and kept apart from the cross-vendor vocabulary so that a canonical name
    always means the same thing on both vendors.
    """
    return tuple(_metric(entry) for entry in _data().get("amd_metric", []))


def all_metrics() -> tuple[CanonicalMetric, ...]:
    return vocabulary() + amd_only()


def _evaluate(formula: Formula, wide: Mapping[str, np.ndarray]) -> np.ndarray | float | None:
    """A formula over all kernels at once: ``wide`` maps raw names to per-kernel values in
    base units (NaN where a kernel's profile lacks the metric); None when no kernel has a term."""
    if isinstance(formula, (int, float)):
        return float(formula)
    if isinstance(formula, str):
        return wide.get(formula)
    op, *terms = formula
    values = [_evaluate(term, wide) for term in terms]
    if op == "+":
        # A sum needs its first term; optional extra terms (e.g. reductions) may be absent.
        if values[0] is None:
            return None
        total = values[0]
        for value in values[1:]:
            if value is not None:
                total = total + np.nan_to_num(value, nan=0.0)
        return total
    if any(v is None for v in values):
        return None
    if op == "sum":  # a sum that needs every term (denominators: hit + miss)
        total = values[0]
        for value in values[1:]:
            total = total + value
        return total
    if op == "-":
        difference = values[0]
        for value in values[1:]:
            difference = difference - value
        return difference
    if op == "*":
        product = values[0]
        for value in values[1:]:
            product = product * value
        return product
    if op == "/":
        numerator, denominator = values
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a huge ratio is inf, as a damaged file gives
            return np.where(np.asarray(denominator) != 0, np.divide(numerator, denominator), np.nan)
    raise ValueError(f"unknown operator {op!r} in canonical formula {formula!r}")


def names_in(formula: Formula) -> set[str]:
    """Raw metric names a formula reads."""
    if isinstance(formula, str):
        return {formula}
    if isinstance(formula, list):
        return set().union(*(names_in(term) for term in formula[1:]))
    return set()


@lru_cache(maxsize=1)
def referenced_names() -> frozenset[str]:
    """Every raw name or label some canonical metric reads."""
    names: set[str] = set()
    for metric in all_metrics():
        for formula in (*metric.ncu, *metric.amd):
            names |= names_in(formula)
        names.update(metric.ncu_labels)
    return frozenset(names)


def derive_all(raw: Mapping[int, Mapping[str, tuple[float, str]]]) -> list[tuple[int, str, float, str]]:
    """Canonical (kernel, name, value, unit) rows from each kernel's raw {name: (value, unit)}.

    ``raw`` may hold metric names (reports, raw CSV pages, ``--metrics`` exports) and/or
    "Section / Label" keys (details CSV pages). Alternatives are tried in order per kernel:
    the first one that kernel's profile holds wins. Evaluated over all kernels at once as
    numpy arrays, so a 1000-kernel export costs little more than one kernel.
    """
    kernels = list(raw)
    if not kernels:
        return []
    names = {name for metrics in raw.values() for name in metrics.keys() & referenced_names()}
    wide = {}
    for name in names:
        column = [raw[k].get(name) for k in kernels]
        wide[name] = np.array([np.nan if cell is None else to_base(cell[0], cell[1])[0] for cell in column], dtype=float)
    found_rows: list[tuple[int, str, float, str]] = []
    for metric in all_metrics():
        found = np.full(len(kernels), np.nan)
        # Raw names differ by vendor, so one profile only ever matches one vendor's alternatives.
        for source in [*metric.ncu, *metric.ncu_labels, *metric.amd]:
            value = _evaluate(source, wide)
            if value is not None:
                found = np.where(np.isnan(found), value, found)
        for index in np.flatnonzero(~np.isnan(found)):
            found_rows.append((kernels[index], metric.name, float(found[index]), metric.unit))
    return found_rows


def derive(raw: Mapping[str, tuple[float, str]]) -> list[tuple[str, float, str]]:
    """Canonical (name, value, unit) rows for one kernel's raw {name: (value, unit)}."""
    return [(name, value, unit) for _, name, value, unit in derive_all({0: raw})]


def _formula_text(formula: Formula) -> str:
    if isinstance(formula, (int, float)):
        return f"{formula:g}"
    if isinstance(formula, str):
        return f"`{formula}`"
    op, *terms = formula
    symbol = "+" if op == "sum" else op
    return "(" + f" {symbol} ".join(_formula_text(t) for t in terms) + ")"


def markdown(metrics: Iterable[CanonicalMetric] | None = None) -> str:
    """The canonical vocabulary as the docs/metrics.md tables."""
    lines = [
        "# Canonical metrics",
        "",
        "Generated by `python -m keet.canonical` from `keet/data/canonical_metrics.toml`; edit that file, not this one.",
        "",
        "Every reader stores each metric under its raw vendor name (origin `raw`, the unit the file used) and,",
        "where its meaning is known, under the canonical name below (origin `canonical`, base units: ns, byte,",
        "hz, cycle, byte/second, %). Nsight Compute alternatives are tried left to right; the first one the",
        "profile holds is used. `Section / Label` entries match the rows of `ncu --csv --page details`",
        "exports, which carry display labels instead of metric names. Scaled units in CSV exports",
        "(Kbyte, usecond, Ghz, ...) use decimal prefixes and are converted to base units.",
        "",
        "AMD alternatives read rocprof counter names (per-dispatch means; `X_sum` sums a counter over its",
        "instances) and the launch facts every rocprof reader stores under rocprofv2 names (`Grid_Size`,",
        "`Workgroup_Size`, `LDS_Per_Workgroup`, `Arch_VGPR`, `DurationNs`, ...), plus device constants",
        "(`cu_per_gpu`, `num_xcd`, `max_waves_per_cu`) where sysinfo.csv or agent_info.csv gives them. In a",
        "formula a `+` needs its first term and counts a missing later term as 0 (optional extras, such",
        "as MI300's `TCC_BUBBLE_sum`); a `-`, `*`, `/` and a denominator sum need every term. Sources are",
        "rocprof-compute's analysis panels (`src/rocprof_compute_soc/analysis_configs/<arch>/*.yaml`,",
        "ROCm/rocprofiler-compute), read for their formulas, and the rocprof documentation.",
        "",
        "| canonical name | unit | meaning | Nsight Compute metric(s) | details-page label | AMD rocprof counter(s) |",
        "|---|---|---|---|---|---|",
    ]
    for m in metrics or vocabulary():
        sources = "<br>or ".join(_formula_text(f) for f in m.ncu) or "—"
        labels = "<br>".join(m.ncu_labels) or "—"
        amd = "<br>or ".join(_formula_text(f) for f in m.amd) or "—"
        if m.amd_source:
            amd += f"<br>*source: {m.amd_source}*"
        lines.append(f"| `{m.name}` | {m.unit or '—'} | {m.meaning} | {sources} | {labels} | {amd} |")
    if metrics is None and amd_only():
        lines += [
            "",
            "## AMD-only metrics",
            "",
            "Metrics of AMD GPUs that NVIDIA GPUs have no counterpart of; named `amd.*` so that a canonical",
            "name always means the same thing on both vendors.",
            "",
            "| name | unit | meaning | AMD rocprof counter(s) | source |",
            "|---|---|---|---|---|",
        ]
        for m in amd_only():
            amd = "<br>or ".join(_formula_text(f) for f in m.amd) or "—"
            lines.append(f"| `{m.name}` | {m.unit or '—'} | {m.meaning} | {amd} | {m.amd_source or '—'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - documentation generator
    sys.stdout.write(markdown())
