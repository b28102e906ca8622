"""The report's figures: matplotlib drawings of keet/report/sections.py data, as embedded SVG.

Every figure has a title, axis labels with units, and a text alternative; series differ by
marker, line style or a printed label as well as by colour, so none needs colour to be read.
Figures are made with the object API (no pyplot state) and returned as data: URIs, so the
report stays one self-contained file; an SVG in an <img> cannot run scripts.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # before anything imports pyplot: no display here or in CI

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Rectangle
from matplotlib.text import Annotation
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator
from matplotlib.transforms import Affine2D

from keet.format import si
from keet.report.sections import (
    GPUPrediction,
    MemoryChart,
    Predictions,
    Roofline,
    Stall,
)

# Colour-blind-safe (Okabe-Ito) colours; shapes and labels carry the same information.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
LEVEL_MARKERS = {"DRAM": "o", "L2": "s", "L1/shared": "^"}
LINE_STYLES = ("-", "--", ":", "-.")
STYLE = {
    "svg.fonttype": "none",  # text stays text: smaller files, selectable labels
    "svg.hashsalt": "keet",  # stable ids: the same profile gives the same report
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


@dataclass
class Image:
    """One embedded figure: what it shows (title), its text alternative, and the image."""

    title: str
    alt: str
    uri: str


def _axes(width: float, height: float, title: str, left: float = 0.75, bottom: float = 0.45, top: float = 0.32,
          right: float = 0.15) -> tuple[Figure, Axes]:
    """A figure of one axes with fixed margins in inches and its title as figure text: a layout
    engine, or an axes title placed around the tick labels, would lay everything out twice."""
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((left / width, bottom / height, 1 - (left + right) / width, 1 - (bottom + top) / height))
    fig.text(0.5, 1 - 0.06 / height, title, ha="center", va="top", fontsize=10)
    return fig, ax


def _log_axis(axis) -> None:
    """Decade ticks labelled with SI prefixes (mathtext labels cost tens of ms each)."""
    axis.set_major_locator(LogLocator(base=10, numticks=6))
    axis.set_major_formatter(FuncFormatter(lambda value, _pos: si(value)))
    axis.set_minor_locator(NullLocator())  # minor ticks: a hundred Tick objects for nothing read


def _label_margin(labels: list[str]) -> float:
    """Left margin in inches wide enough for the longest category label of a bar chart."""
    return 0.25 + 0.062 * max((len(label) for label in labels), default=4)



def _image(fig: Figure, title: str, alt: str) -> Image:
    buffer = io.BytesIO()  # saved under the report style: every drawing function runs inside _styled
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Title": title})
    return Image(title, alt, "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"))


def _styled(draw):
    """Run a drawing function under the report's matplotlib style."""

    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            return draw(*args, **kwargs)

    wrapper.__doc__ = draw.__doc__
    return wrapper


@_styled
def roofline_figure(data: Roofline, kernel_name: str) -> Image:
    """Hierarchical roofline: roofs per memory level and precision, the kernel's points. Roofs
    and points are named by text beside them (a legend costs more to lay out than the plot)."""
    title = f"Roofline of {_short(kernel_name)}"
    fig, ax = _axes(6.4, 4.0, title, left=0.7)
    intensities = [p.intensity for p in data.points]
    performances = [p.performance for p in data.points]
    peak = max([c.value for c in data.compute] + performances) * 2
    ridges = [c.value / m.value for c in data.compute for m in data.memory]
    lo, hi = min(intensities + ridges) / 8, max(intensities + ridges) * 8
    bottom = min(performances + [r.value * lo for r in data.memory]) / 2
    for index, roof in enumerate(data.memory):
        ceiling = max((c.value for c in data.compute), default=peak)
        ax.plot([lo, ceiling / roof.value], [roof.value * lo, ceiling], color="0.35", linestyle=LINE_STYLES[index % 4], linewidth=1.2)
        ax.text(lo * 1.3, roof.value * lo * 1.3 * 1.25, f"{roof.label} {si(roof.value, 'B/s')}", fontsize=7.5, color="0.2",
                rotation=22, rotation_mode="anchor")
    for index, roof in enumerate(data.compute):
        ax.axhline(roof.value, color="0.55", linestyle=LINE_STYLES[index % 4], linewidth=1.0)
        # Named at the left end, where the memory roofs run far below it and the points rarely are.
        ax.text(lo * 1.3, roof.value * 1.12, f"{roof.label} peak {si(roof.value, 'FLOP/s')}", fontsize=8, color="0.25")
    precisions = list(dict.fromkeys(p.precision for p in data.points))
    for point in data.points:
        colour = COLOURS[precisions.index(point.precision) % len(COLOURS)]
        ax.plot([point.intensity], [point.performance], marker=LEVEL_MARKERS.get(point.level, "D"), markersize=7, color=colour,
                markeredgecolor="black", markeredgewidth=0.6, linestyle="none", zorder=3)
        ax.text(point.intensity * 1.25, point.performance, f"{point.level} {point.precision}", va="center", fontsize=7.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _log_axis(ax.xaxis)
    _log_axis(ax.yaxis)
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom, peak)
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("Performance (FLOP/s)")
    points = "; ".join(f"{p.level} {p.precision}: {p.intensity:.3g} FLOP/byte at {si(p.performance, 'FLOP/s')}" for p in data.points)
    roofs = ", ".join(f"{r.label} {si(r.value, 'B/s' if r.unit == 'byte/second' else 'FLOP/s')}" for r in data.memory + data.compute)
    alt = f"Log-log roofline. Points: {points}. Roofs: {roofs or 'none (GPU not in the hardware database)'}."
    return _image(fig, title, alt)


LEVEL_X = {"SM": 0.0, "L1": 1.0, "L2": 2.0, "DRAM": 3.0}


@_styled
def memory_figure(data: MemoryChart, kernel_name: str) -> Image:
    """Boxes for the SMs, L1, L2 and DRAM; arrows with the bytes moved each way; hit rates."""
    title = f"Memory traffic of {_short(kernel_name)}"
    fig = Figure(figsize=(7.0, 3.0))
    fig.text(0.5, 1 - 0.06 / 3.0, title, ha="center", va="top", fontsize=10)
    # Drawn in chart units (levels at x = 0..3, y from -1.25 to 1) mapped onto the figure's
    # inches below the title, without an Axes (see _bar_figure).
    chart = Affine2D().translate(0.5, 1.25).scale(6.9 / 4.0, 2.63 / 2.25).translate(0.05, 0.05) + fig.dpi_scale_trans
    names = {"SM": "SMs", "L1": "L1 / TEX", "L2": "L2", "DRAM": "DRAM"}
    for level, x in LEVEL_X.items():
        fig.add_artist(FancyBboxPatch((x - 0.24, -0.3), 0.48, 0.6, boxstyle="round,pad=0.02", facecolor="#eef3f8", edgecolor="#345",
                                      transform=chart))
        rate = data.hit_rates.get(level)
        label = names[level] + (f"\nhit {rate:.1f}%" if rate is not None else "")
        fig.text(x, 0.0, label, transform=chart, ha="center", va="center", fontsize=9)
    for link in data.links:
        x0, x1 = LEVEL_X[link.source] + 0.26, LEVEL_X[link.target] - 0.26
        reads = link.what.startswith("read")
        y = 0.16 if reads else -0.16
        start, end = ((x1, y), (x0, y)) if reads else ((x0, y), (x1, y))  # data flows towards the SMs on reads
        fig.add_artist(Annotation("", xy=end, xytext=start, xycoords=chart,
                                  arrowprops={"arrowstyle": "-|>", "color": "#222", "linestyle": "-" if reads else "--"}))
        rate = f"\n{si(link.per_second, 'B/s')}" if link.per_second else ""
        fig.text((x0 + x1) / 2, 0.62 if reads else -0.62, f"{link.what}\n{si(link.bytes, 'B')}{rate}", transform=chart, ha="center",
                 va="center", fontsize=7.5)
    if data.shared:
        text = "Shared memory: " + ", ".join(f"{name} {si(value)}" for name, value in data.shared.items())
        fig.text(LEVEL_X["L1"], -1.05, text, transform=chart, ha="center", va="center", fontsize=8,
                 bbox={"boxstyle": "round", "facecolor": "#f6f0e6", "edgecolor": "#864"})
    alt = "Memory chart. " + "; ".join(f"{label}: {_plain(value, unit)}" for label, value, unit in data.rows) + "."
    return _image(fig, title, alt)


# Bar charts are drawn on the figure itself, in inches (fig.dpi_scale_trans), without an Axes:
# an Axes and its tick machinery cost more than everything a directly labelled bar chart shows.
BAR_PITCH = 0.2  # inches per bar
BAR_RIGHT, BAR_BOTTOM = 0.15, 0.4  # margins, inches
MARKER_LABEL_STEP = 0.13  # inches between the texts of several marker lines above the bars


@dataclass
class Marker:
    """A vertical line across the bars at value x, named above them."""

    x: float
    label: str
    colour: str
    style: str


def _bar_figure(title: str, names: list[str], values: list[float], text: list[str], xlabel: str, colours: list[str],
                markers: list[Marker] = (), hatches: list[str] | None = None, width: float = 6.4) -> Figure:
    """Horizontal bars, each named with its value on its left; the quantity and unit in the
    label below; marker lines (predicted, measured) named above the bars, their text running
    away from the nearer edge."""
    left = _bar_margin(names, text)
    plot_width, plot_height = width - left - BAR_RIGHT, BAR_PITCH * len(names) + 0.1
    top = 0.36 + MARKER_LABEL_STEP * len(markers)
    fig = Figure(figsize=(width, BAR_BOTTOM + plot_height + top))
    inches = fig.dpi_scale_trans
    fig.text(0.5, 1 - 0.06 / fig.get_figheight(), title, ha="center", va="top", fontsize=10)
    scale = plot_width / (max([*values, *(m.x for m in markers)], default=1.0) * 1.05 or 1.0)
    for index, (name, value, label) in enumerate(zip(names, values, text)):
        centre = BAR_BOTTOM + 0.05 + (len(names) - index - 0.5) * BAR_PITCH
        fig.add_artist(Rectangle((left, centre - 0.4 * BAR_PITCH), value * scale, 0.8 * BAR_PITCH, transform=inches,
                                 facecolor=colours[index % len(colours)], edgecolor="black", linewidth=0.4,
                                 hatch=hatches[index] if hatches else None))
        fig.text(left - 0.05, centre, f"{name}  {label}", transform=inches, ha="right", va="center", fontsize=8)
    fig.add_artist(Line2D([left, left + plot_width], [BAR_BOTTOM, BAR_BOTTOM], transform=inches, color="black", linewidth=0.8))
    fig.text(width / 2, BAR_BOTTOM - 0.08, xlabel, transform=inches, ha="center", va="top", fontsize=9)  # centred on the figure: long labels fit
    for index, marker in enumerate(markers):
        x = left + marker.x * scale
        fig.add_artist(Line2D([x, x], [BAR_BOTTOM, BAR_BOTTOM + plot_height], transform=inches, color=marker.colour,
                              linestyle=marker.style, linewidth=1.4))
        right_half = x > left + plot_width / 2
        fig.text(x, BAR_BOTTOM + plot_height + 0.03 + MARKER_LABEL_STEP * index, marker.label, transform=inches,
                 ha="right" if right_half else "left", va="bottom", fontsize=7.5, color=marker.colour)
    return fig


def _bar_margin(labels: list[str], text: list[str]) -> float:
    return _label_margin([f"{name}  {label}" for name, label in zip(labels, text)]) * 0.92


@_styled
def stalls_figure(data: list[Stall], kernel_name: str) -> Image:
    """Warp cycles per issued instruction, per stall reason."""
    shown = data[:12]
    total = sum(s.cycles_per_instruction for s in data)
    title = f"Warp states of {_short(kernel_name)}"
    values = [s.cycles_per_instruction for s in shown]
    names, text = [s.reason for s in shown], [f"{v:.2f} ({v / total:.0%})" for v in values]
    fig = _bar_figure(title, names, values, text, "Warp cycles per issued instruction, cycles (each bar's value beside its name)",
                      [COLOURS[0]])
    alt = "Bar chart of warp cycles per issued instruction by stall reason: " + ", ".join(
        f"{s.reason} {s.cycles_per_instruction:.2f}" for s in shown) + "."
    return _image(fig, title, alt)


@_styled
def instruction_mix_figure(data: dict[str, float], kernel_name: str) -> Image:
    """Warp-level instructions executed per pipe."""
    total = sum(data.values())
    title = f"Instruction mix of {_short(kernel_name)}"
    text = [f"{si(v)} ({v / total:.0%})" for v in data.values()]
    fig = _bar_figure(title, list(data), list(data.values()), text, "Warp instructions executed (each bar's count beside its name)",
                      [COLOURS[2]])
    alt = "Bar chart of warp instructions per pipe: " + ", ".join(f"{pipe} {si(v)}" for pipe, v in data.items()) + "."
    return _image(fig, title, alt)


@_styled
def breakdown_figure(prediction: GPUPrediction, measured_ns: float | None, kernel_name: str) -> Image:
    """Each unit's time alone (the model's bounds) beside the predicted and measured times."""
    parts = dict(list(prediction.breakdown.items())[:10])
    clock = f" at {prediction.clock_hz / 1e9:.2f} GHz" if prediction.clock_hz else ""
    title = f"Model breakdown on {prediction.gpu}{clock}: {_short(kernel_name)}"
    text = [si(v, "ns") for v in parts.values()]
    markers = [Marker(prediction.predicted_ns / 1e3, f"predicted {si(prediction.predicted_ns, 'ns')}", "black", "--")]
    if measured_ns:
        markers.append(Marker(measured_ns / 1e3, f"measured {si(measured_ns, 'ns')}", COLOURS[5], "-"))
    fig = _bar_figure(title, list(parts), [v / 1e3 for v in parts.values()], text, "Time, us (each bar's value beside its name)",
                      [COLOURS[4]], markers)
    alt = (f"Bar chart of the time each unit would take alone on {prediction.gpu}: "
           + ", ".join(f"{name} {si(v, 'ns')}" for name, v in parts.items())
           + f". Predicted {si(prediction.predicted_ns, 'ns')}" + (f", measured {si(measured_ns, 'ns')}." if measured_ns else "."))
    return _image(fig, title, alt)


@_styled
def gpus_figure(data: Predictions, kernel_name: str) -> Image:
    """Predicted time on each GPU of the hardware database (lower bounds marked)."""
    shown = [p for p in data.per_gpu if p.predicted_ns is not None]
    labels = [p.gpu + (" (profiled)" if p.gpu == data.own_gpu else "") for p in shown]
    title = f"Predicted time per GPU: {_short(kernel_name)}"
    text = [(">= " if p.lower_bound else "") + f"{si(p.predicted_ns, 'ns')} {p.bound}" for p in shown]
    markers = ([Marker(data.measured_ns / 1e3, f"measured on {data.own_gpu} {si(data.measured_ns, 'ns')}", COLOURS[5], "-")]
               if data.measured_ns and data.own_gpu else [])
    fig = _bar_figure(title, labels, [p.predicted_ns / 1e3 for p in shown], text,
                      "Predicted time, us (each bar's value beside its name)", [COLOURS[0]], markers)
    alt = "Bar chart of predicted time per GPU: " + ", ".join(f"{label} {t}" for label, t in zip(labels, text)) + "."
    return _image(fig, title, alt)


@_styled
def comparison_figure(names: list[list[str]], labels: list[str], durations: list[list[float | None]]) -> Image:
    """Measured duration of each matched kernel in each profile: one bar per kernel and
    profile, named "kernel [profile]" with its time, hatched by profile. ``names[i][j]`` is
    the name of pair i's kernel in profile j: a matched pair can be two differently named
    kernels, and each bar carries its own."""
    rows = [(f"{_short(pair[index], 36)} [{index + 1}]", row[index] or 0.0, index) for pair, row in zip(names, durations)
            for index in range(len(labels))]
    text = [si(value, "ns") for _name, value, _index in rows]
    title = "Duration of matched kernels per profile"
    fig = _bar_figure(title, [r[0] for r in rows], [r[1] / 1e3 for r in rows], text,
                      "Measured duration, us (each bar's value beside its name; [n] is the profile number)",
                      [COLOURS[index % len(COLOURS)] for _name, _value, index in rows], width=6.8,
                      hatches=[("", "//", "..", "xx")[index % 4] for _name, _value, index in rows])
    alt = "Bar chart of durations: " + "; ".join(
        ", ".join(f"{pair[i]} in {label} {si(row[i], 'ns')}" for i, label in enumerate(labels)) for pair, row in zip(names, durations)) + "."
    return _image(fig, title, alt)


def _short(name: str, limit: int = 48) -> str:
    """A kernel name short enough for a figure title (the page shows it whole)."""
    base = name.split("(", 1)[0] if "(" in name else name
    return base if len(base) <= limit else base[: limit - 3] + "..."


def _plain(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.1f}%"
    return si(value, "B") if unit == "byte" else f"{si(value)} {unit}s"
