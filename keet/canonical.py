"""Canonical metric vocabulary: load it, and derive canonical metrics from raw ones.

The vocabulary is data (keet/data/canonical_metrics.toml); this module only evaluates
its small formulas. ``python -m keet.canonical`` prints docs/metrics.md.
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Mapping

import pandas as pd

from keet.units import to_base

Formula = str | list[Any]


@dataclass(frozen=True)
class CanonicalMetric:
    name: str
    unit: str
    meaning: str
    ncu: tuple[Formula, ...]
    ncu_labels: tuple[str, ...]


@lru_cache(maxsize=1)
def vocabulary() -> tuple[CanonicalMetric, ...]:
    """Every canonical metric, in the order of the data file."""
    text = resources.files("keet.data").joinpath("canonical_metrics.toml").read_text()
    return tuple(
        CanonicalMetric(
            name=entry["name"],
            unit=entry.get("unit", ""),
            meaning=entry["meaning"],
            ncu=tuple(entry.get("ncu", [])),
            ncu_labels=tuple(entry.get("ncu_labels", [])),
        )
        for entry in tomllib.loads(text)["metric"]
    )


def _evaluate(formula: Formula, wide: pd.DataFrame) -> pd.Series | float | None:
    """A formula over all kernels at once: ``wide`` is kernels x raw names, in base units.

    NaN marks a kernel whose profile lacks a needed term; None a term no kernel has.
    """
    if isinstance(formula, (int, float)):
        return float(formula)
    if isinstance(formula, str):
        return wide[formula] if formula in wide.columns else None
    op, *terms = formula
    values = [_evaluate(term, wide) for term in terms]
    if op == "+":
        # A sum needs its first term; optional extra terms (e.g. reductions) may be absent.
        if values[0] is None:
            return None
        total = values[0]
        for value in values[1:]:
            if value is not None:
                total = total + (value.fillna(0.0) if isinstance(value, pd.Series) else value)
        return total
    if any(v is None for v in values):
        return None
    if op == "*":
        product = values[0]
        for value in values[1:]:
            product = product * value
        return product
    if op == "/":
        numerator, denominator = values
        if isinstance(denominator, pd.Series):
            denominator = denominator.where(denominator != 0)
        elif denominator == 0:
            return None
        return numerator / denominator
    raise ValueError(f"unknown operator {op!r} in canonical formula {formula!r}")


def _names_in(formula: Formula) -> set[str]:
    if isinstance(formula, str):
        return {formula}
    if isinstance(formula, list):
        return set().union(*(_names_in(term) for term in formula[1:]))
    return set()


@lru_cache(maxsize=1)
def referenced_names() -> frozenset[str]:
    """Every raw name or label some canonical metric reads."""
    names: set[str] = set()
    for metric in vocabulary():
        for formula in metric.ncu:
            names |= _names_in(formula)
        names.update(metric.ncu_labels)
    return frozenset(names)


def derive_frame(raw: pd.DataFrame) -> pd.DataFrame:
    """Canonical rows (kernel, metric, value, unit) from raw rows (kernel, metric, value, unit).

    ``raw`` may hold metric names (reports, raw CSV pages, ``--metrics`` exports) and/or
    "Section / Label" keys (details CSV pages). Alternatives are tried in order per kernel:
    the first one that kernel's profile holds wins. Evaluated column-wise over all
    kernels at once, so a 1000-kernel export costs little more than one kernel.
    """
    wanted = raw[raw["metric"].isin(referenced_names())]
    factors = {unit: to_base(1.0, unit)[0] for unit in wanted["unit"].unique()}
    base = wanted.assign(value=wanted["value"] * wanted["unit"].map(factors).astype(float))
    kernels = pd.Index(raw["kernel"].unique(), name="kernel")
    wide = base.pivot_table(index="kernel", columns="metric", values="value", aggfunc="first").reindex(kernels)
    pieces = []
    for metric in vocabulary():
        found = pd.Series(float("nan"), index=kernels)
        for source in [*metric.ncu, *metric.ncu_labels]:
            value = _evaluate(source, wide)
            if value is not None:
                found = found.fillna(value)
        found = found.dropna()
        if not found.empty:
            pieces.append(pd.DataFrame({"kernel": found.index, "metric": metric.name, "value": found.to_numpy(), "unit": metric.unit}))
    if not pieces:
        return pd.DataFrame(columns=["kernel", "metric", "value", "unit"])
    return pd.concat(pieces, ignore_index=True).sort_values("kernel", kind="stable", ignore_index=True)


def derive(raw: Mapping[str, tuple[float, str]]) -> list[tuple[str, float, str]]:
    """Canonical (name, value, unit) rows for one kernel's raw {name: (value, unit)}."""
    frame = pd.DataFrame([(0, name, value, unit) for name, (value, unit) in raw.items()], columns=["kernel", "metric", "value", "unit"])
    return [(row.metric, row.value, row.unit) for row in derive_frame(frame).itertuples()]


def _formula_text(formula: Formula) -> str:
    if isinstance(formula, (int, float)):
        return f"{formula:g}"
    if isinstance(formula, str):
        return f"`{formula}`"
    op, *terms = formula
    return "(" + f" {op} ".join(_formula_text(t) for t in terms) + ")"


def markdown(metrics: Iterable[CanonicalMetric] | None = None) -> str:
    """The canonical vocabulary as the docs/metrics.md table."""
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
        "| canonical name | unit | meaning | Nsight Compute metric(s) | details-page label |",
        "|---|---|---|---|---|",
    ]
    for m in metrics or vocabulary():
        sources = "<br>or ".join(_formula_text(f) for f in m.ncu) or "—"
        labels = "<br>".join(m.ncu_labels) or "—"
        lines.append(f"| `{m.name}` | {m.unit or '—'} | {m.meaning} | {sources} | {labels} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - documentation generator
    sys.stdout.write(markdown())
