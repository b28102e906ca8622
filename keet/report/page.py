"""Render a built report to one self-contained HTML page with jinja2 (autoescaped).

The page loads nothing: styles are inline, figures are data: URIs, and its Content Security
Policy forbids scripts and any network fetch, so a profile string that got past escaping still
could not run or phone home. The site's index (keet.report.batch) has one script, its table
sorting, allowed by its hash and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from keet import __version__
from keet.explain import evidence_text, metric_value, not_assessed_lines
from keet.format import dims, si, source_path
from keet.report.assemble import PROFILE_SECTIONS, SECTIONS, Report
from keet.report.sections import FUSION_MIN_SHARE


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
    env.globals.update(SECTIONS=SECTIONS, PROFILE_SECTIONS=PROFILE_SECTIONS, FUSION_MIN_SHARE=FUSION_MIN_SHARE,
                       not_assessed_lines=not_assessed_lines)
    return env


def render(report: Report) -> str:
    """The report as an HTML document."""
    return _environment().get_template("report.html.j2").render(report=report)


def render_index(site: dict[str, Any]) -> str:
    """The site's index page: its sortable table of kernels (keet.report.batch.index_document
    gives ``site``). The sorting script is the page's only script, allowed by its hash in the
    Content Security Policy: no other script (say, one smuggled in by a kernel name that got
    past escaping) may run, and the page still fetches nothing."""
    env = _environment()
    script = env.loader.get_source(env, "sort.js")[0].strip()
    script_hash = "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return env.get_template("index.html.j2").render(site=site, script=Markup(script), script_hash=script_hash, version=__version__)


def _rate_unit(unit: str) -> str:
    """The symbol of a roof's unit: "B/s" or "FLOP/s"."""
    return {"byte/second": "B/s", "flop/second": "FLOP/s"}.get(unit, unit)
