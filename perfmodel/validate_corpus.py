"""Validate the model on the real-world corpus (profiles/corpus/manifest.json), dev and
validation splits apart.

The corpus holds kernels written by others (PyTorch's ATen, cuBLAS, cuDNN, CUB, flash
attention, torch.compile's Triton), timed with CUPTI at default clocks on H100 and H200 and
profiled with Nsight Compute. Each kernel's measured time is its CUPTI duration as an
isolated cold-L2 launch (the GPU's execution of the kernel, no launch latency: a model that
floors at the launch cost reads high on kernels under a few microseconds, and the figures say
so). The validation split is fixed by a hash (profiles/corpus/split.py); nothing is tuned on
it, so its figures are the headline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from keet.ingest import load_profile
from perfmodel.features import KernelFeatures, features, raw_metrics, source_request
from perfmodel.hardware import gpu
from perfmodel.model import predict
from perfmodel.terms.base import ISOLATED
from perfmodel.validate import Row, error_stats, naive_roofline_ns

SETTINGS = (("h100", "h100"), ("h200", "h200"), ("h100", "h200"), ("h200", "h100"))
# The corpus times each kernel with CUPTI as one launch after a 256 MiB buffer was written (zero_).
CORPUS_CONTEXT = ISOLATED
SHORT_NS = 5_000.0  # kernels under 5 us are reported apart: launch and ramp dominate them


@dataclass
class CorpusRow(Row):
    """A Row whose program is the corpus case, its kernel the corpus id (case#ordinal)."""

    split: str
    library: str


def corpus_features(manifest: dict, progress: Callable[[str], None] | None = None
                    ) -> dict[str, dict[str, KernelFeatures | str]]:
    """GPU -> kernel id -> the model's inputs from that GPU's report (or why there are none).
    Each report is read once, with only the metrics the model reads."""
    root = Path(manifest["root"])
    out: dict[str, dict[str, KernelFeatures | str]] = {}
    for gpu_id, facts in manifest["gpus"].items():
        out[gpu_id] = {}
        for report in facts["reports"]:
            if progress:
                progress(f"reading {report}")
            profile = load_profile(root / report, metrics=raw_metrics(), read_ahead=source_request())
            for entry in manifest["kernels"]:
                measured = entry["measured"].get(gpu_id)
                if not measured or measured.get("report") != report:
                    continue
                try:
                    out[gpu_id][entry["id"]] = features(profile, profile.kernels[measured["report_id"]])
                except ValueError as exc:
                    out[gpu_id][entry["id"]] = str(exc)
    return out


def corpus_rows(manifest: dict, work: dict[str, dict[str, KernelFeatures | str]]) -> list[CorpusRow]:
    rows = []
    for source, target in SETTINGS:
        if source not in work:
            continue
        hardware = gpu(target)
        for entry in manifest["kernels"]:
            kernel_work = work[source].get(entry["id"])
            measured = entry["measured"].get(target)
            if not isinstance(kernel_work, KernelFeatures) or not measured:
                continue
            if source != target and launched_differently(entry):
                continue  # the library ran another kernel or grid there: not the same work
            try:
                prediction = predict(hardware, kernel_work, CORPUS_CONTEXT)
            except ValueError:
                continue
            rows.append(CorpusRow(entry["case"], entry["id"], source, target, measured["isolated_ns"], prediction.predicted_ns,
                                  prediction.bound, naive_roofline_ns(hardware, kernel_work), entry["split"], entry["library"]))
    return rows


def traced_waits_per_request(manifest: dict, work: dict[str, dict[str, KernelFeatures | str]], gpu_id: str = "h100",
                             split: str = "dev") -> tuple[float, int]:
    """The median, over a split's kernels whose load chains the SASS traced (synchronous loads
    only: no asynchronous copy waits), of load waits per global load request, and how many
    kernels: perfmodel.terms.latency.UNTRACED_WAITS_PER_REQUEST is the dev split's on H100."""
    in_split = {entry["id"] for entry in manifest["kernels"] if entry["split"] == split}
    ratios = [w.counts["global_load_waits"] / w.counts["global_load_requests"] for kid, w in work[gpu_id].items()
              if kid in in_split and isinstance(w, KernelFeatures) and w.counts.get("global_load_waits")
              and w.counts.get("global_load_requests") and not w.counts.get("global_load_async_waits")]
    return float(np.median(ratios)), len(ratios)


def launched_differently(entry: dict) -> bool:
    """Whether the call launched another kernel or configuration on one of the GPUs."""
    return any("launch" in m or "cupti_name" in m for m in entry["measured"].values())


def corpus_summary(rows: list[CorpusRow]) -> list[dict]:
    """Per split, setting and size class (all kernels; kernels of at least 5 us measured)."""
    out = []
    for split in ("validation", "dev"):
        for source, target in SETTINGS:
            for size, keep in (("all", lambda r: True), (">= 5 us", lambda r: r.measured_ns >= SHORT_NS)):
                chosen = [r for r in rows if r.split == split and r.source == source and r.target == target and keep(r)]
                if chosen:
                    out.append({"split": split, "setting": f"{source} profile -> {target}", "source": source,
                                "target": target, "size": size, **error_stats(chosen)})
    return out


def summary_table(summaries: list[dict], zoo: list[dict]) -> list[str]:
    """The three sets side by side: zoo (development), corpus dev, corpus validation (headline)."""
    lines = ["| set | setting | kernels | median APE | p90 APE | median signed error | naive roofline median APE | naive p90 |",
             "|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        if s["split"] == "validation":
            lines.append(_summary_line(f"**corpus validation** ({s['size']})", s))
    for s in summaries:
        if s["split"] == "dev":
            lines.append(_summary_line(f"corpus dev ({s['size']})", s))
    for s in zoo:
        lines.append(_summary_line("zoo (development)", s))
    return lines


def _summary_line(label: str, s: dict) -> str:
    return (f"| {label} | {s['setting']} | {s['kernels']} | {s['median_ape']:.1%} | {s['p90_ape']:.1%} | "
            f"{s['median_signed']:+.1%} | {s['naive_median_ape']:.1%} | {s['naive_p90_ape']:.1%} |")


def by_library_table(rows: list[CorpusRow]) -> list[str]:
    """Validation split, H100 profile -> H100: where the error lives, by the library that made
    the kernel."""
    lines = ["| library | kernels | median APE | median signed error |", "|---|---|---|---|"]
    chosen = [r for r in rows if r.split == "validation" and r.source == r.target == "h100"]
    for library in sorted({r.library for r in chosen}):
        s = error_stats([r for r in chosen if r.library == library])
        lines.append(f"| {library} | {s['kernels']} | {s['median_ape']:.1%} | {s['median_signed']:+.1%} |")
    return lines


def not_predicted(manifest: dict, work: dict[str, dict[str, KernelFeatures | str]]) -> list[str]:
    return sorted(f"{k} ({g}): {w}" for g, kernels in work.items() for k, w in kernels.items() if not isinstance(w, KernelFeatures))
