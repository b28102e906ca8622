"""Render a built report to one self-contained HTML page with jinja2 (autoescaped).

The page loads nothing: styles are inline, figures are data: URIs, and its Content Security
Policy forbids scripts and any network fetch, so a profile string that got past escaping still
could not run or phone home.
"""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from keet.explain import evidence_text, metric_value, not_assessed_lines
from keet.format import dims, si, source_path
from keet.report.assemble import SECTIONS, Report


def _percent(fraction: float | None, digits: int = 0) -> str:
    return "n/a" if fraction is None else f"{fraction * 100:.{digits}f}%"


def _number(value: float | None) -> str:
    """Counts as people read them: 1,234 below a million, 1.23 M above."""
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if abs(value) < 1e6 and float(value).is_integer() else si(value)


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("keet.report", "templates"), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(si=si, percent=_percent, number=_number, dims=dims, evidence=evidence_text, metric_value=metric_value,
                       basename=source_path, rate_unit=_rate_unit)
    env.globals.update(SECTIONS=SECTIONS, not_assessed_lines=not_assessed_lines)
    return env


def render(report: Report) -> str:
    """The report as an HTML document."""
    return _environment().get_template("report.html.j2").render(report=report)


def render_index(reports: list[tuple[str, str, int]]) -> str:
    """A page linking reports: (title, relative path, kernels) each."""
    return _environment().get_template("index.html.j2").render(reports=reports)


def _rate_unit(unit: str) -> str:
    """The symbol of a roof's unit: "B/s" or "FLOP/s"."""
    return {"byte/second": "B/s", "flop/second": "FLOP/s"}.get(unit, unit)
