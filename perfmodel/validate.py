"""Validate the model on the zoo: measured CUDA-event times vs predictions, per setting.

Settings: the same GPU the profile came from (h100 -> h100, h200 -> h200) and across GPUs
(h100 profile -> h200 time, h200 profile -> h100 time). Error is the absolute percentage
error |predicted - measured| / measured; beside it the naive roofline: spec peaks only,
max(DRAM bytes / peak bandwidth, FLOPs / peak FLOP rate) from the same counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from keet.ingest import load_profile
from perfmodel.features import features
from perfmodel.hardware import GPU, gpu
from perfmodel.model import predict

SETTINGS = (("h100", "h100"), ("h200", "h200"), ("h100", "h200"), ("h200", "h100"))


@dataclass
class Row:
    program: str
    kernel: str
    source: str  # GPU the profile came from
    target: str  # GPU predicted
    measured_ns: float
    predicted_ns: float
    bound: str
    naive_ns: float

    @property
    def error(self) -> float:
        return abs(self.predicted_ns - self.measured_ns) / self.measured_ns

    @property
    def naive_error(self) -> float:
        return abs(self.naive_ns - self.measured_ns) / self.measured_ns


def naive_roofline_ns(target: GPU, work) -> float:
    """Spec-sheet roofline: the larger of DRAM bytes over peak bandwidth and FLOPs over peak rate."""
    dram = work.counts.get("dram_bytes_read", 0.0) + work.counts.get("dram_bytes_write", 0.0)
    times = [dram / target.require("dram_bandwidth_bytes_per_s")]
    peaks = {"fp32": "fp32_peak_flops", "fp64": "fp64_peak_flops", "fp16": "fp32_peak_flops"}
    for precision, flops in work.flops.items():
        peak = target.value(peaks.get(precision, "fp32_peak_flops"))
        if peak:
            times.append(flops / peak)
    return max(times) * 1e9


def rows(manifest_path: Path) -> list[Row]:
    manifest = json.loads(manifest_path.read_text())
    profiles = {g: load_profile(manifest_path.parent / manifest["gpus"][g]["combined_report"]) for g in manifest["gpus"]}
    result = []
    for source, target in SETTINGS:
        if source not in profiles or target not in manifest["gpus"]:
            continue
        hardware = gpu(target)
        for entry in manifest["kernels"]:
            profile = profiles[source]
            kernel = profile.kernels[entry["measured"][source]["combined_report_id"]]
            work = features(profile, kernel)
            prediction = predict(hardware, work)
            result.append(Row(entry["program"], entry["kernel"], source, target, entry["measured"][target]["median_ms"] * 1e6,
                              prediction.predicted_ns, prediction.bound, naive_roofline_ns(hardware, work)))
    return result


def summary(all_rows: list[Row]) -> list[dict]:
    out = []
    for source, target in SETTINGS:
        chosen = [r for r in all_rows if r.source == source and r.target == target]
        if not chosen:
            continue
        errors = np.array([r.error for r in chosen])
        naive = np.array([r.naive_error for r in chosen])
        out.append({"setting": f"{source} profile -> {target}", "kernels": len(chosen),
                    "median_ape": float(np.median(errors)), "p90_ape": float(np.percentile(errors, 90)),
                    "naive_median_ape": float(np.median(naive)), "naive_p90_ape": float(np.percentile(naive, 90))})
    return out


def markdown(all_rows: list[Row]) -> str:
    lines = ["| setting | kernels | median APE | p90 APE | naive roofline median APE | naive p90 |", "|---|---|---|---|---|---|"]
    for s in summary(all_rows):
        lines.append(f"| {s['setting']} | {s['kernels']} | {s['median_ape']:.1%} | {s['p90_ape']:.1%} | {s['naive_median_ape']:.1%} | {s['naive_p90_ape']:.1%} |")
    lines += ["", "| program | profile -> target | measured | predicted | APE | bound | naive | naive APE |", "|---|---|---|---|---|---|---|---|"]
    for r in all_rows:
        lines.append(f"| {r.program} | {r.source} -> {r.target} | {r.measured_ns / 1e3:.1f} us | {r.predicted_ns / 1e3:.1f} us | {r.error:.1%} | {r.bound} | {r.naive_ns / 1e3:.1f} us | {r.naive_error:.1%} |")
    return "\n".join(lines)
