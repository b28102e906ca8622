"""Validate the model on the zoo: measured CUDA-event times vs predictions, per setting.

Settings: the same GPU the profile came from (h100 -> h100, h200 -> h200) and across GPUs
(h100 profile -> h200 time, h200 profile -> h100 time). Error is the absolute percentage
error |predicted - measured| / measured; beside it the naive roofline: spec peaks only,
max(DRAM bytes / peak bandwidth, FLOPs / peak FLOP rate) from the same counts.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from keet.errors import KeetError
from keet.ingest import load_profile
from keet.names import function_base_name
from perfmodel import published
from perfmodel.features import KernelFeatures, features, raw_metrics, source_request
from perfmodel.hardware import GPU, gpu, gpu_ids_in_listing_order
from perfmodel.model import Prediction, predict
from perfmodel.static import corpus as program_corpus
from perfmodel.terms.base import EVENT

SETTINGS = (("h100", "h100"), ("h200", "h200"), ("h100", "h200"), ("h200", "h100"))
# the zoo's targets: same-GPU median and p90, cross-GPU median, margin over the naive roofline
TARGETS = {"same_median": 0.10, "same_p90": 0.25, "cross_median": 0.12, "naive_factor": 5.0}
# the targets for predictions from source (no profile): median APE, margin over the naive roofline
STATIC_TARGETS = {"median": 0.20, "naive_factor": 4.0}
STATIC_GPUS = ("h100", "h200")
STATIC_FEATURES = "static/zoo_features.json"  # beside the manifest; written by `perfmodel validate --recount-static`
# counts compared between the interpreter and Nsight Compute (feature name -> column title)
COMPARED_COUNTS = {"instructions": "instructions", "global_load_sectors": "load sectors", "global_store_sectors": "store sectors",
                   "shared_load_wavefronts": "shared load wavefronts", "shared_bank_conflicts": "bank conflicts",
                   "l2_sectors_read": "L2 read sectors", "dram_bytes_read": "DRAM read bytes"}



# The zoo harness times each kernel with CUDA events around one launch after a clean L2 flush
# (profiles/src/zoo.h): the event context.
ZOO_CONTEXT = EVENT

def other_gpus() -> tuple[str, ...]:
    """The database's GPUs the zoo has no timings of (predicted from the reference profiles)."""
    timed = {gpu_id for setting in SETTINGS for gpu_id in setting}
    return tuple(gpu_id for gpu_id in gpu_ids_in_listing_order() if gpu_id not in timed)


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
    def signed_error(self) -> float:
        """< 0: predicted too fast."""
        return (self.predicted_ns - self.measured_ns) / self.measured_ns

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


def zoo_features(manifest: dict, root: Path) -> dict[str, dict[str, KernelFeatures]]:
    """GPU -> program -> features, from each GPU's combined zoo report (only the model's metrics read)."""
    out = {}
    for gpu_id, entry in manifest["gpus"].items():
        profile = load_profile(root / entry["combined_report"], metrics=raw_metrics(), read_ahead=source_request())
        out[gpu_id] = {k["program"]: features(profile, profile.kernels[k["measured"][gpu_id]["combined_report_id"]])
                       for k in manifest["kernels"] if gpu_id in k.get("measured", {})}
    return out


def rows(manifest: dict, zoo: dict[str, dict[str, KernelFeatures]]) -> list[Row]:
    result = []
    for source, target in SETTINGS:
        if source not in zoo or target not in manifest["gpus"]:
            continue
        hardware = gpu(target)
        for entry in manifest["kernels"]:
            work = zoo[source][entry["program"]]
            prediction = predict(hardware, work, ZOO_CONTEXT)
            result.append(Row(entry["program"], entry["kernel"], source, target, entry["measured"][target]["median_ms"] * 1e6,
                              prediction.predicted_ns, prediction.bound, naive_roofline_ns(hardware, work)))
    return result


def static_zoo_features(manifest: dict, root: Path, gpu_ids: tuple[str, ...] = STATIC_GPUS,
                        progress=None) -> dict[str, dict[str, dict]]:
    """GPU -> program -> {"features": KernelFeatures as a dict, "approximations", "seconds"} or
    {"error"}: every zoo program predicted from its source alone (compile, launch discovery,
    PTX interpretation), the manifest's kernel picked among the program's launches."""
    from perfmodel.static.source import StaticError, static_kernels

    out: dict[str, dict[str, dict]] = {}
    for gpu_id in gpu_ids:
        out[gpu_id] = {}
        for entry in manifest["kernels"]:
            start = time.perf_counter()
            try:
                found = [k for k in static_kernels(root / entry["source"], gpu_id)
                         if k.launch is not None and function_base_name(k.launch.name) == entry["kernel"]]
            except KeetError as exc:
                found = [StaticError(str(exc))]
            seconds = time.perf_counter() - start
            if not found:
                result = {"error": f"the program never launched {entry['kernel']}"}
            elif isinstance(found[0], StaticError):
                result = {"error": str(found[0]).replace(str(root) + "/", "")}
            else:
                result = {"features": found[0].features.as_dict(), "approximations": found[0].approximations,
                          "seconds": round(seconds, 1)}
            out[gpu_id][entry["program"]] = result
            if progress:
                progress(gpu_id, entry["program"], result)
    return out


def load_static_features(root: Path) -> dict[str, dict[str, KernelFeatures | str]]:
    """The committed static features: GPU -> program -> KernelFeatures, or the error text."""
    return static_features_of(json.loads((root / STATIC_FEATURES).read_text()))


def static_features_of(data: dict) -> dict[str, dict[str, KernelFeatures | str]]:
    """GPU -> program -> KernelFeatures (or the error text) from static_zoo_features' output."""
    return {g: {p: KernelFeatures(**r["features"]) if "features" in r else r["error"] for p, r in progs.items()}
            for g, progs in data.items()}


def static_rows(manifest: dict, static: dict[str, dict[str, KernelFeatures | str]]) -> list[Row]:
    """Predictions from source vs the measured times, on the GPU the work was counted for."""
    result = []
    for gpu_id, programs in static.items():
        hardware = gpu(gpu_id)
        for entry in manifest["kernels"]:
            work = programs.get(entry["program"])
            if isinstance(work, KernelFeatures):
                p = predict(hardware, work, ZOO_CONTEXT)
                result.append(Row(entry["program"], entry["kernel"], "source", gpu_id, entry["measured"][gpu_id]["median_ms"] * 1e6,
                                  p.predicted_ns, p.bound, naive_roofline_ns(hardware, work)))
    return result


def other_gpu_predictions(zoo: dict[str, KernelFeatures], gpu_ids: tuple[str, ...] | None = None) -> dict[tuple[str, str], Prediction | str]:
    """(program, gpu) -> the prediction from the H100 profile, or why the launch cannot run there."""
    gpu_ids = other_gpus() if gpu_ids is None else gpu_ids
    out: dict[tuple[str, str], Prediction | str] = {}
    for gpu_id in gpu_ids:
        hardware = gpu(gpu_id)
        for program, work in zoo.items():
            try:
                out[(program, gpu_id)] = predict(hardware, work)
            except ValueError as exc:
                out[(program, gpu_id)] = str(exc)
    return out


def error_stats(chosen: list[Row]) -> dict:
    """Median and p90 APE, median signed error, and the naive roofline's APE, over some rows."""
    errors = np.array([r.error for r in chosen])
    naive = np.array([r.naive_error for r in chosen])
    return {"kernels": len(chosen), "median_ape": float(np.median(errors)), "p90_ape": float(np.percentile(errors, 90)),
            "median_signed": float(np.median([r.signed_error for r in chosen])),
            "naive_median_ape": float(np.median(naive)), "naive_p90_ape": float(np.percentile(naive, 90))}


def summary(all_rows: list[Row]) -> list[dict]:
    out = []
    settings = list(dict.fromkeys((r.source, r.target) for r in all_rows))
    for source, target in settings:
        chosen = [r for r in all_rows if r.source == source and r.target == target]
        if chosen:
            out.append({"setting": f"{source} profile -> {target}", "source": source, "target": target, **error_stats(chosen)})
    return out


def targets_status(summaries: list[dict]) -> list[str]:
    """One line per zoo target: met or not, with the figures."""
    same = [s for s in summaries if s["source"] == s["target"]]
    cross = [s for s in summaries if s["source"] != s["target"]]
    lines = []
    for label, group, key, limit in (("same-GPU median APE", same, "median_ape", TARGETS["same_median"]),
                                     ("same-GPU p90 APE", same, "p90_ape", TARGETS["same_p90"]),
                                     ("cross-GPU median APE", cross, "median_ape", TARGETS["cross_median"])):
        worst = max(s[key] for s in group)
        figures = ", ".join(f"{s['setting']} {s[key]:.1%}" for s in group)
        lines.append(f"- {label} <= {limit:.0%}: {'met' if worst <= limit else 'NOT met'} ({figures})")
    factor = min(s["naive_median_ape"] / s["median_ape"] for s in summaries if s["median_ape"] > 0)
    lines.append(f"- median error at least {TARGETS['naive_factor']:g}x below the naive roofline's: "
                 f"{'met' if factor >= TARGETS['naive_factor'] else 'NOT met'} (smallest ratio {factor:.1f}x)")
    return lines


def static_targets_status(summaries: list[dict], failed: list[str]) -> list[str]:
    """One line per target of the prediction from source."""
    worst = max(s["median_ape"] for s in summaries)
    figures = ", ".join(f"{s['target']} {s['median_ape']:.1%}" for s in summaries)
    factor = min(s["naive_median_ape"] / s["median_ape"] for s in summaries if s["median_ape"] > 0)
    return [(f"- median APE <= {STATIC_TARGETS['median']:.0%}: {'met' if worst <= STATIC_TARGETS['median'] and not failed else 'NOT met'} "
            f"({figures}{'; not predicted: ' + ', '.join(failed) if failed else ''})"),
            (f"- median error at least {STATIC_TARGETS['naive_factor']:g}x below the naive roofline's from the same static counts: "
            f"{'met' if factor >= STATIC_TARGETS['naive_factor'] else 'NOT met'} (smallest ratio {factor:.1f}x)")]


def count_comparison_table(static: dict[str, KernelFeatures | str], measured: dict[str, KernelFeatures]) -> list[str]:
    """Static counts over Nsight Compute's for each program (1.00 = equal)."""
    lines = ["| program | " + " | ".join(COMPARED_COUNTS.values()) + " |", "|---|" + "---|" * len(COMPARED_COUNTS)]
    for program, work in static.items():
        if not isinstance(work, KernelFeatures):
            lines.append(f"| {program} | " + " | ".join("not counted" for _ in COMPARED_COUNTS) + " |")
            continue
        cells = []
        for name in COMPARED_COUNTS:
            ours, theirs = work.counts.get(name, 0.0), measured[program].counts.get(name, 0.0)
            cells.append("-" if not ours and not theirs else f"{ours / theirs:.2f}" if theirs else f"{ours:,.0f} vs 0")
        lines.append(f"| {program} | " + " | ".join(cells) + " |")
    return lines


def error_table(all_rows: list[Row]) -> list[str]:
    lines = ["| setting | kernels | median APE | p90 APE | naive roofline median APE | naive p90 |", "|---|---|---|---|---|---|"]
    for s in summary(all_rows):
        lines.append(f"| {s['setting']} | {s['kernels']} | {s['median_ape']:.1%} | {s['p90_ape']:.1%} | {s['naive_median_ape']:.1%} | {s['naive_p90_ape']:.1%} |")
    lines += ["", "| program | profile -> target | measured | predicted | APE | bound | naive | naive APE |", "|---|---|---|---|---|---|---|---|"]
    for r in all_rows:
        lines.append(f"| {r.program} | {r.source} -> {r.target} | {r.measured_ns / 1e3:.1f} us | {r.predicted_ns / 1e3:.1f} us | {r.error:.1%} | {r.bound} | {r.naive_ns / 1e3:.1f} us | {r.naive_error:.1%} |")
    return lines


def other_gpus_table(predictions: dict[tuple[str, str], Prediction | str], programs: list[str], gpu_ids: tuple[str, ...] | None = None) -> list[str]:
    gpu_ids = other_gpus() if gpu_ids is None else gpu_ids
    lines = ["| program | " + " | ".join(gpu_ids) + " |", "|---|" + "---|" * len(gpu_ids)]
    for program in programs:
        cells = []
        for gpu_id in gpu_ids:
            p = predictions[(program, gpu_id)]
            if not isinstance(p, Prediction):
                cells.append("cannot launch")
            else:
                cells.append(f"{'>= ' if p.lower_bound else ''}{p.predicted_ns / 1e3:.1f} us ({p.bound})")
        lines.append(f"| {program} | " + " | ".join(cells) + " |")
    return lines


def corpus_section(manifest_path: Path, zoo_rows: list[Row], progress=None) -> list[str]:
    """The real-world corpus beside the zoo: validation split first (the headline), dev split,
    then the zoo as development figures."""
    from keet.project_data import corpus_manifest
    from perfmodel import validate_corpus as vc

    corpus = corpus_manifest(manifest_path)
    if corpus is None:
        return ["## Real-world corpus", "", "Not assessed: no corpus/manifest.json beside the zoo manifest.", ""]
    work = vc.corpus_features(corpus, progress)
    corpus_rows = vc.corpus_rows(corpus, work)
    missing = vc.not_predicted(corpus, work)
    kernels = corpus["kernels"]
    intro = (f"{len(kernels)} kernels from {len(corpus['cases'])} PyTorch operator calls (ATen, cuBLAS, cuDNN, CUB, "
             "flash attention, torch.compile's Triton), none written in this project (profiles/corpus/README.md). "
             "Measured: CUPTI kernel duration, isolated cold-L2 launch, default clocks. The validation split "
             f"({sum(k['split'] == 'validation' for k in kernels)} kernels) is fixed by a hash of the operator and dtype "
             "(profiles/corpus/split.py) and nothing is tuned on it: its rows are the headline. The zoo rows are "
             "development figures (the rules and the model were shaped on the zoo). Median signed error < 0 means "
             "the model predicts too fast. Across GPUs, the "
             f"{sum(vc.launched_differently(k) for k in kernels)} kernels whose call launched another kernel or grid "
             "on the other GPU (library heuristics) are left out.")
    return ["## Real-world corpus: validation split (headline), dev split, zoo", "", intro, "",
            *vc.summary_table(vc.corpus_summary(corpus_rows), summary(zoo_rows)), "",
            "Validation split, H100 profile -> H100, by the library that made the kernel:", "", *vc.by_library_table(corpus_rows), "",
            *([f"Not predicted ({len(missing)}): {'; '.join(missing[:20])}{' ...' if len(missing) > 20 else ''}.", ""]
              if missing else [])]


def document(manifest_path: Path, progress=None) -> str:
    """docs/validation.md: the corpus and zoo error tables, predictions from source, predictions
    on the GPUs we have no timings for and the published measurements beside them, then the
    open-source programs predicted from source (perfmodel/static/corpus.toml)."""
    manifest = json.loads(Path(manifest_path).read_text())
    zoo = zoo_features(manifest, Path(manifest_path).parent)
    all_rows = rows(manifest, zoo)
    programs = [k["program"] for k in manifest["kernels"]]
    others = other_gpu_predictions(zoo["h100"])
    unlaunchable = sorted({f"{program} on {g}: {p}" for (program, g), p in others.items() if not isinstance(p, Prediction)})
    intro = ("Generated by `perfmodel validate --format markdown > docs/validation.md` from profiles/manifest.json: the CUDA-event medians "
             "(25 cold-L2 runs, default clocks) of the zoo on H100 and H200 against the model's predictions from each GPU's "
             "combined zoo report, with the H100/H200 parameters calibrated by our microbenchmarks (microbench/calib/). "
             "APE = |predicted - measured| / measured. The naive roofline uses the vendor peaks only: "
             "max(DRAM bytes / peak bandwidth, FLOPs / peak FP rate). No zoo timing sets a model parameter "
             "(tests/test_hardware_files.py).")
    others_intro = ("From the H100 zoo report, retargeted (docs/model.md, Retargeting) to each GPU. No timings of these "
                    "GPUs exist here; the published measurements below are the only check. A missing hardware parameter "
                    "drops its bound and the prediction is then marked >= (a lower bound; `perfmodel predict --format json` "
                    "names the missing parameters).")
    counted = json.loads((Path(manifest_path).parent / STATIC_FEATURES).read_text())
    static = static_features_of(counted)
    static_all = static_rows(manifest, static)
    failed = sorted({f"{p} ({g})" for g, progs in static.items() for p, w in progs.items() if not isinstance(w, KernelFeatures)})
    times = [r["seconds"] for progs in counted.values() for r in progs.values() if "seconds" in r]
    static_intro = ("`perfmodel predict SOURCE.cu --gpu G` with no profile and no flags: each zoo program compiled with the "
                    "PyPI nvcc, its launches found by running its host code against the recording runtime, each kernel's PTX "
                    "interpreted on a sample of blocks (docs/ptx_interpreter.md), then the same model as above. Counts from "
                    f"`perfmodel validate --recount-static` (profiles/{STATIC_FEATURES}); per program {min(times):.1f}-{max(times):.1f} s "
                    f"on this project's 2-core machine (median {float(np.median(times)):.1f} s), compile and discovery included. "
                    "The naive roofline uses the same static counts.")
    return "\n".join([
        "# Validation", "", *corpus_section(manifest_path, all_rows, progress),
        "## The zoo (development set)", "", intro, "",
        "### Targets", "", *targets_status(summary(all_rows)), "",
        "### Errors on H100 and H200", "", *error_table(all_rows), "",
        "## Predictions from source, with no GPU", "", static_intro, "",
        *static_targets_status(summary(static_all), failed), "",
        *error_table(static_all), "",
        *([f"Not predicted: {'; '.join(f'{p} on {g}: {w}' for g, progs in static.items() for p, w in progs.items() if not isinstance(w, KernelFeatures))}.", ""]
          if failed else []),
        "Static counts over the Nsight Compute counts of the same kernel (H100 zoo report):", "",
        *count_comparison_table(static.get("h100", {}), zoo["h100"]), "",
        "## Predictions on the other GPUs", "", others_intro, "",
        *other_gpus_table(others, programs), "",
        *([f"Cannot launch: {'; '.join(unlaunchable)}.", ""] if unlaunchable else []),
        *published.section(),
        *program_corpus.section(),
    ])
