"""Plots of microbenchmark calibration files (microbench/runner.py output) for docs/microbench.md.

    python -m microbench.plots microbench/calib/*.json --out docs/img

Writes SVG files named microbench_<figure>.svg. Files of another layout that lie in the same
folder (the L2 fetch-granularity probes, one number each: they have no sweep to draw) are
skipped with a one-line note on stderr. Every series is told apart by its marker and line
style as well as its colour; points the runner rejected (spread above its limit, failed check)
are drawn hollow, never hidden. Needs matplotlib (not a dependency of the package: pip install
matplotlib).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

STYLES = [  # per calibration file (GPU): colour, marker, line style
    ("#1f77b4", "o", "-"), ("#d62728", "s", "--"), ("#2ca02c", "^", ":"), ("#9467bd", "D", "-."),
]
SERIES = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-."), ("v", (0, (5, 1))), ("P", (0, (3, 1, 1, 1)))]
MiB, GiB = 2**20, 2**30


# The suites the figures draw (each figure reads one: _results(doc, bench)).
PLOTTED_BENCHES = frozenset({"l2", "dram", "latency", "shared", "barrier", "mix"})


class NotCalibration(ValueError):
    """A JSON file that is not `microbench run` output (no list of results to plot)."""


def load_one(path: str | Path) -> tuple[str, dict]:
    """(label, document) of one calibration file; the label is the GPU name without 'NVIDIA '."""
    try:
        doc = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        keys = ", ".join(list(doc)[:3]) if isinstance(doc, dict) else type(doc).__name__
        raise NotCalibration(f"{path}: not a `microbench run` calibration file (no 'results'; it holds {keys})")
    if isinstance(doc.get("suite"), str):  # microbench/cupti/*.py writes one suite's file: derive.py reads it
        raise NotCalibration(f"{path}: a CUPTI suite's file ({doc['suite']}), not `microbench run` output; "
                             "python -m microbench.cupti.derive reads it")
    benches = {r.get("bench") for r in doc["results"] if isinstance(r, dict)}
    if not benches & PLOTTED_BENCHES:  # a run of other suites only (atomic_types): no column of empty plots
        raise NotCalibration(f"{path}: a `microbench run` of suites the figures do not draw ({', '.join(sorted(map(str, benches)))})")
    device = doc.get("device")
    name = (device.get("name") if isinstance(device, dict) else None) or Path(path).stem
    return name.replace("NVIDIA ", ""), doc


def load(paths: list[str | Path], note: Callable[[str], None] | None = None) -> list[tuple[str, dict]]:
    """(label, document) per calibration file. A file of another layout is passed to ``note``
    (one line) and left out; without ``note`` it is an error."""
    out = []
    for p in paths:
        try:
            out.append(load_one(p))
        except NotCalibration as exc:
            if note is None:
                raise
            note(f"skipped {exc}")
    return out


def _results(doc: dict, bench: str) -> list[dict]:
    return [r for r in doc.get("results", []) if r.get("bench") == bench]


def _med(r: dict, key: str = "stats") -> float | None:
    return (r.get(key) or {}).get("median")


def _point(ax, x, y, rejected: bool, color, marker, **kw):
    ax.plot([x], [y], marker=marker, linestyle="none", color=color, markerfacecolor="white" if rejected else color, **kw)


def _series(ax, xs, ys, rejected, color, marker, ls, label):
    """A line through all points with filled markers; rejected points redrawn hollow."""
    ax.plot(xs, ys, linestyle=ls, color=color, marker=marker, markersize=5, label=label)
    for x, y, rej in zip(xs, ys, rejected):
        if rej:
            _point(ax, x, y, True, color, marker, markersize=5)


def _bytes_axis(ax) -> None:
    ticks = [2**k for k in range(10, 38, 2)]
    ax.set_xscale("log", base=2)
    lo, hi = ax.get_xlim()
    ax.set_xticks([t for t in ticks if lo <= t <= hi])
    ax.set_xticklabels([_fmt(t) for t in ticks if lo <= t <= hi], rotation=45, ha="right")


def _fmt(n: float) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"


def _finish(fig, ax, title: str, out: Path, name: str, legend_title: str | None = None) -> Path:
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", linestyle=":", linewidth=0.6)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, title=legend_title, title_fontsize=8)
    fig.tight_layout()
    path = out / f"microbench_{name}.svg"
    fig.savefig(path, format="svg", metadata={"Date": None})
    return path


def plot_bandwidth(docs, out, plt) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (label, doc), (color, marker, ls) in zip(docs, STYLES):
        l2 = sorted((r for r in _results(doc, "l2") if r.get("bytes_per_s") or _med(r)), key=lambda r: r["footprint_bytes"])
        xs = [r["footprint_bytes"] for r in l2]
        ys = [r["bytes"] / (_med(r) * 1e-3) / 1e12 for r in l2]
        _series(ax, xs, ys, [r["stats"]["rejected"] for r in l2], color, marker, ls, f"{label}: __ldcg reads, footprint swept")
        dram = {r["name"]: r for r in _results(doc, "dram")}
        if "read" in dram:
            r = dram["read"]
            ax.plot([r.get("buffer_bytes", r["bytes"])], [r["bytes"] / (_med(r) * 1e-3) / 1e12], marker=marker, color=color, linestyle="none",
                    markersize=9, markerfacecolor="none", markeredgewidth=1.5, label=f"{label}: DRAM read stream, 2 GiB buffer")
        l2_bytes = ((doc.get("device") or {}).get("cuda") or {}).get("l2_bytes")
        if l2_bytes:
            ax.axvline(l2_bytes, color=color, linestyle=ls, linewidth=0.8, alpha=0.6)
    ax.set_ylim(bottom=0)
    _bytes_axis(ax)
    ax.set_xlabel("footprint (bytes, log scale; vertical lines: L2 size)")
    ax.set_ylabel("read bandwidth (TB/s)")
    return _finish(fig, ax, "L2 and DRAM read bandwidth vs footprint (whole GPU)", out, "bandwidth")


def plot_latency(docs, out, plt) -> Path:
    fig, axes = plt.subplots(1, len(docs), figsize=(5.2 * len(docs), 4.2), sharey=True, squeeze=False)
    for ax, (label, doc) in zip(axes[0], docs):
        lat = _results(doc, "latency")
        groups = [
            ("128 B stride, ld.global.ca", lambda r: r.get("stride_bytes", 128) == 128 and r.get("variant") == "ca"),
            ("128 B stride, __ldcg (L2 only)", lambda r: r.get("stride_bytes", 128) == 128 and r.get("variant") == "cg"),
            ("TLB: 2 MiB stride, __ldcg", lambda r: r.get("sweep") == "tlb" and r.get("stride_bytes") == 2 * MiB),
            ("TLB: 64 KiB stride, __ldcg", lambda r: r.get("sweep") == "tlb" and r.get("stride_bytes") == 64 * 1024),
        ]
        for (name, pred), (marker, ls), color in zip(groups, SERIES, ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")):
            pts = sorted((r for r in lat if pred(r)), key=lambda r: r["footprint_bytes"])
            if pts:
                _series(ax, [r["footprint_bytes"] for r in pts], [_med(r, "cycles_stats") for r in pts],
                        [r["stats"]["rejected"] for r in pts], color, marker, ls, name)
        _bytes_axis(ax)
        ax.set_xlabel("footprint (bytes, log scale)")
        ax.set_title(label, fontsize=9)
        ax.grid(True, linestyle=":", linewidth=0.6)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("cycles per dependent load (median)")
    fig.suptitle("Pointer-chase latency vs footprint (one thread; TLB sweeps keep their nodes in L2)", fontsize=10)
    fig.tight_layout()
    path = out / "microbench_latency.svg"
    fig.savefig(path, format="svg", metadata={"Date": None})
    return path


def plot_bank_conflicts(docs, out, plt) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (label, doc), (color, marker, ls) in zip(docs, STYLES):
        rs = [r for r in _results(doc, "shared") if r["name"].startswith("conflict_")]
        for kind, what, kls in (("throughput", "cycles per warp access at full issue (32 warps/SM)", ls),
                                ("latency", "dependent access latency (1 warp)", ":")):
            pts = sorted((r for r in rs if r.get("kind") == kind), key=lambda r: r["ways"])
            if pts:
                _series(ax, [r["ways"] for r in pts], [_med(r, "cycles_stats") for r in pts], [r["stats"]["rejected"] for r in pts],
                        color, marker if kind == "throughput" else "x", kls, f"{label}: {what}")
    ax.set_xlabel("ways of the bank conflict (lanes per bank, distinct words)")
    ax.set_ylabel("cycles")
    ax.set_xlim(0, 33)
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, "Shared memory: cost of a W-way bank conflict (ld.shared.u32)", out, "bank_conflicts")


def plot_barrier(docs, out, plt) -> Path:
    fig, axes = plt.subplots(1, len(docs), figsize=(5.2 * len(docs), 4.2), sharey=True, squeeze=False)
    for ax, (label, doc) in zip(axes[0], docs):
        rs = _results(doc, "barrier")
        for bps, (marker, ls), color in zip(sorted({r["blocks_per_sm"] for r in rs}), SERIES, ("#1f77b4", "#d62728", "#2ca02c")):
            pts = sorted((r for r in rs if r["blocks_per_sm"] == bps), key=lambda r: r["warps_per_block"])
            xs = [r["warps_per_block"] for r in pts]
            ys = [_med(r, "cycles_stats") for r in pts]
            err = [[y - r["cycles_stats"]["p10"] for y, r in zip(ys, pts)], [r["cycles_stats"]["p90"] - y for y, r in zip(ys, pts)]]
            ax.errorbar(xs, ys, yerr=err, linestyle=ls, color=color, capsize=3, linewidth=1,
                        label=f"{bps} block(s) per SM (bars: p10-p90 over blocks)")
            for x, y, r in zip(xs, ys, pts):
                _point(ax, x, y, r["stats"]["rejected"], color, marker, markersize=5)
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8, 16, 32])
        ax.set_xticklabels(["1", "2", "4", "8", "16", "32"])
        ax.set_xlabel("warps per block")
        ax.set_title(label, fontsize=9)
        ax.grid(True, linestyle=":", linewidth=0.6)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("cycles per __syncthreads() (median over blocks)")
    fig.suptitle("Barrier cost vs warps per block and resident blocks per SM (hollow: rejected, spread > 10%)", fontsize=10)
    fig.tight_layout()
    path = out / "microbench_barrier.svg"
    fig.savefig(path, format="svg", metadata={"Date": None})
    return path


def plot_mix(docs, out, plt) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax2 = ax.twinx()
    for (label, doc), (color, marker, ls) in zip(docs, STYLES):
        pts = sorted(_results(doc, "mix"), key=lambda r: r["fma_per_element"])
        pts = [r for r in pts if r["fma_per_element"] > 0]
        xs = [r["flops"] / r["bytes"] for r in pts]
        secs = [_med(r) * 1e-3 for r in pts]
        rej = [r["stats"]["rejected"] for r in pts]
        _series(ax, xs, [r["flops"] / s / 1e12 for r, s in zip(pts, secs)], rej, color, marker, ls, f"{label}: FP32 TFLOP/s (left)")
        _series(ax2, xs, [r["bytes"] / s / 1e12 for r, s in zip(pts, secs)], rej, color, "x", ":", f"{label}: TB/s moved (right)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax2.set_yscale("log")
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    for axis, ticks in ((ax, [0.5, 1, 2, 5, 10, 20, 50]), (ax2, [0.5, 1, 2, 3, 4, 5])):
        axis.yaxis.set_major_locator(FixedLocator(ticks))
        axis.yaxis.set_minor_locator(NullLocator())
        axis.yaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("arithmetic intensity (flop per byte of DRAM traffic; 8 B per element)")
    ax.set_ylabel("achieved FP32 TFLOP/s (FFMA)")
    ax2.set_ylabel("achieved DRAM TB/s (read + write)")
    handles = ax.get_legend_handles_labels()
    h2 = ax2.get_legend_handles_labels()
    ax.legend(handles[0] + h2[0], handles[1] + h2[1], fontsize=7, loc="center left")
    ax.set_title("Arithmetic-intensity sweep: load, N FMAs, store (N = 1 .. 512)", fontsize=10)
    ax.grid(True, which="major", linestyle=":", linewidth=0.6)
    fig.tight_layout()
    path = out / "microbench_mix.svg"
    fig.savefig(path, format="svg", metadata={"Date": None})
    return path


def plot_dram_occupancy(docs, out, plt) -> Path:
    fig, axes = plt.subplots(1, len(docs), figsize=(5.2 * len(docs), 4.6), squeeze=False)
    for ax, (label, doc) in zip(axes[0], docs):
        rs = [r for r in _results(doc, "dram") if r.get("sweep") == "occupancy_vector"]
        combos = [(k, b) for k in ("read", "copy", "write") for b in (32, 64, 128)]
        styles = {32: ":", 64: "--", 128: "-"}
        markers = {"read": "o", "copy": "s", "write": "^"}
        colors = {"read": "#1f77b4", "copy": "#d62728", "write": "#2ca02c"}
        for kind, bits in combos:
            pts = sorted((r for r in rs if r["kind"] == kind and r["vector_bits"] == bits), key=lambda r: r["warps_per_sm"])
            if pts:
                _series(ax, [r["warps_per_sm"] for r in pts], [r["bytes"] / (_med(r) * 1e-3) / 1e12 for r in pts],
                        [r["stats"]["rejected"] for r in pts], colors[kind], markers[kind], styles[bits], f"{kind}, {bits}-bit")
        ax.set_xscale("log", base=2)
        ax.set_xticks([8, 16, 32, 64])
        ax.set_xticklabels(["8", "16", "32", "64"])
        ax.set_xlabel("warps per SM (blocks of 256 threads)")
        ax.set_title(label, fontsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(True, linestyle=":", linewidth=0.6)
        ax.legend(fontsize=7, ncol=3, loc="lower right")
    axes[0][0].set_ylabel("DRAM bandwidth (TB/s, read + write bytes)")
    fig.suptitle("DRAM bandwidth vs occupancy and access width (2 GiB buffers)", fontsize=10)
    fig.tight_layout()
    path = out / "microbench_dram_occupancy.svg"
    fig.savefig(path, format="svg", metadata={"Date": None})
    return path


def plot_tlb(docs, out, plt) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (label, doc), (color, marker, ls) in zip(docs, STYLES):
        lat = [r for r in _results(doc, "latency") if r.get("sweep") == "tlb"]
        for stride, smarker, sls in ((2 * MiB, marker, ls), (64 * 1024, "x", ":")):
            pts = sorted((r for r in lat if r.get("stride_bytes") == stride), key=lambda r: r["footprint_bytes"])
            if pts:
                _series(ax, [r["footprint_bytes"] for r in pts], [_med(r, "cycles_stats") for r in pts],
                        [r["stats"]["rejected"] for r in pts], color, smarker, sls, f"{label}: {_fmt(stride)} stride")
    _bytes_axis(ax)
    ax.set_xlabel("footprint (bytes, log scale): nodes one stride apart, random order")
    ax.set_ylabel("cycles per dependent load (median)")
    return _finish(fig, ax, "TLB sweep: page-granular pointer chase, nodes resident in L2 (__ldcg)", out, "tlb")


PLOTS = (plot_bandwidth, plot_latency, plot_tlb, plot_bank_conflicts, plot_barrier, plot_mix, plot_dram_occupancy)


def make_plots(paths: list[str | Path], out: str | Path, note: Callable[[str], None] | None = None) -> list[Path]:
    """Draw every figure from the calibration files among ``paths`` into ``out``; files of
    another layout go to ``note`` (see load)."""
    docs = load(paths, note)
    if not docs:
        raise ValueError("no `microbench run` calibration file among the inputs")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "microbench"  # stable element ids: reproducible SVG files
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fn in PLOTS:
        written.append(fn(docs, out, plt))
        plt.close("all")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m microbench.plots", description=__doc__.split("\n\n")[0])
    ap.add_argument("calib", nargs="+", help="calibration JSON files (microbench run output)")
    ap.add_argument("--out", required=True, help="directory for the SVG files")
    args = ap.parse_args(argv)

    def note(line: str) -> None:
        print(f"microbench.plots: {line}", file=sys.stderr)

    try:
        for path in make_plots(args.calib, args.out, note):
            print(path)
    except ImportError:
        print("microbench.plots: error: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"microbench.plots: error: {exc}", file=sys.stderr)
        return 2
    except (KeyError, TypeError) as exc:  # a calibration file with results of another shape
        print(f"microbench.plots: error: a calibration file's results lack what the figures need ({type(exc).__name__}: {exc})",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
