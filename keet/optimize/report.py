"""The HTML page of one optimize run: summary, speedup per round, candidates, the diffs that gained.

Self-contained (inline CSS and SVG, no scripts); jinja2 autoescapes every kernel name, label,
reason and source line.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Path(__file__).resolve().parent / "templates"
CHART_HEIGHT = 180
BAR_WIDTH = 36


def diff_lines(before: str, after: str, name_before: str, name_after: str) -> list[dict[str, str]]:
    """Unified diff as lines tagged add / del / hunk / context for the template."""
    lines = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), name_before, name_after, lineterm=""):
        kind = "hunk" if line.startswith(("@@", "---", "+++")) else "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        lines.append({"kind": kind, "text": line + "\n"})
    return lines


def round_chart(run: dict[str, Any]) -> dict[str, Any]:
    """Bars of the best speedup after each round (round 0: the baseline)."""
    if not run["baseline_ms"]:
        return {"bars": []}
    usable = CHART_HEIGHT - 40
    rounds = sorted({c["round"] for c in run["candidates"]})
    best, points = 1.0, []
    for number in rounds:
        kept = [c["speedup"] for c in run["candidates"] if c["round"] == number and c["status"] == "kept" and c["speedup"]]
        best = max([best, *kept])
        points.append((number, best, bool(kept)))
    top = max(p[1] for p in points)
    bars = []
    for index, (number, speedup, gained) in enumerate(points):
        height = max(2.0, usable * speedup / top)
        bars.append({"x": 44 + index * (BAR_WIDTH + 8), "y": 20 + usable - height, "w": BAR_WIDTH, "h": height,
                     "round": number, "speedup": speedup, "gain": gained})
    return {"bars": bars, "width": 60 + len(bars) * (BAR_WIDTH + 8), "height": CHART_HEIGHT, "base": 20 + usable}


def _ms(value: float | None) -> str:
    return f"{value:.4f} ms" if value else "-"


def _times(value: float | None) -> str:
    return f"{value:.2f}x" if value else "-"


def _pct(value: float | None) -> str:
    return f"{value:.1%}" if value is not None else "-"


def render_run(run: dict[str, Any], sources: dict[str, str], explanations: dict[str, str]) -> str:
    environment = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]))
    gains = []
    for candidate in run["candidates"]:
        if candidate["status"] == "kept" and candidate["parent"]:
            parent = candidate["parent"]
            diff = diff_lines(sources.get(parent, ""), sources.get(candidate["id"], ""), f"{parent}/source.cu", f"{candidate['id']}/source.cu")
            gains.append({**candidate, "diff": diff})
    template = environment.get_template("run.html.j2")
    return template.render(run=run, chart=round_chart(run), gains=gains, explanations=sorted(explanations.items()),
                           ms=_ms, times=_times, pct=_pct)


def write_run_report(out_dir: Path, run: dict[str, Any], sources: dict[str, str], explanations: dict[str, str]) -> Path:
    from keet.outputs import atomic_write_text

    return atomic_write_text(out_dir / "report.html", render_run(run, sources, explanations))
