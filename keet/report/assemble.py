"""Assemble a report: every kernel of every profile, its sections and figures, the comparison.

:func:`build` is the library API (notebooks can call it); :func:`render` turns its result
into one self-contained HTML page; :func:`write_report` does both for files on disk and
writes nothing when any input is bad.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from keet import __version__
from keet.analysis.compare import Comparison, Side, delta, match
from keet.explain import explain
from keet.ingest import load_profile
from keet.profile import Kernel, Profile, SourceRequest
from keet.report import figures, sections
from keet.summary import kernels_by_duration
from perfmodel.features import prefetch
from perfmodel.load_chains import sass_needed

# What a page reads of every kernel's per-instruction counters: all of them, located everywhere
# (the hotspots and the source view), with the model's SASS; a reader that can reads them with
# the kernels' metrics (load_profile).
READ_AHEAD = SourceRequest(columns=None, sass_for=sass_needed)

# Told what the report is working on (a status line on a terminal; see keet.cli_options).
Progress = Callable[[str], None] | None

# Section ids, in page order, with the heading each gets.
SECTIONS = {
    "summary": "Summary",
    "diagnosis": "Diagnosis",
    "roofline": "Roofline",
    "memory": "Memory chart",
    "stalls": "Warp states",
    "instruction-mix": "Instruction mix",
    "hotspots": "Source hotspots",
    "prediction": "Model prediction",
}
# Sections of a profile, above its kernels (ids p<profile>-<section>), with the heading each gets.
PROFILE_SECTIONS = {
    "fusion": "Fusion: launches one kernel could do",
}


@dataclass
class KernelParts:
    """Everything a kernel's sections show besides the diagnosis: computed (and drawn) in one
    job, which can run in a worker process because it returns plain data."""

    work: Any | None  # the model's inputs (perfmodel.features.KernelFeatures), None when it has none
    occupancy_limiter: str | None
    roofline: sections.Roofline | None
    memory: sections.MemoryChart | None
    stalls: list[sections.Stall] | None
    instruction_mix: dict[str, float] | None
    pipe_utilization: dict[str, float]
    hotspots: sections.Hotspots | None
    predictions: sections.Predictions
    figures: dict[str, list[figures.Image]] = field(default_factory=dict)
    absent: dict[str, str] = field(default_factory=dict)  # section -> why it shows nothing, and what to collect


@dataclass
class KernelReport(KernelParts):
    anchor: str = ""
    kernel: Kernel | None = None
    entry: dict[str, Any] = field(default_factory=dict)  # keet explain's entry: summary, diagnosis and not_assessed


@dataclass
class ProfileReport:
    index: int
    label: str
    profile: Profile
    document: dict[str, Any]  # keet explain's document (device, source, format)
    kernels: list[KernelReport]
    fusions: list[sections.FusedChain] = field(default_factory=list)  # chains of launches one kernel could do

    @property
    def vendor(self) -> str:
        return self.profile.device.vendor


@dataclass
class Report:
    title: str
    generated: str
    version: str
    profiles: list[ProfileReport]
    comparison: Comparison | None
    comparison_figures: dict[str, figures.Image] = field(default_factory=dict)  # compared profile's label -> chart


def _absent_reasons(vendor: str) -> dict[str, str]:
    """What to collect for each section a profile cannot fill."""
    if vendor == "amd":
        return {
            "roofline": "The profile has no FLOP counts or no HBM/L2 traffic for this kernel (or the kernel did no floating-point work). "
                        "Collect with rocprof-compute profile -n NAME -- ./app (its roofline counters).",
            "memory": "The profile has no memory counters. Collect with rocprofv3 --pmc TCC_HIT_sum TCC_MISS_sum TCC_EA0_RDREQ_sum "
                      "TCC_EA0_WRREQ_sum -- ./app, or rocprof-compute profile.",
            "stalls": "rocprof counters do not break wave time down by stall reason the way Nsight Compute does; "
                      "rocprof-compute's wavefront panels (SQ_WAIT_*) are not read yet.",
            "instruction-mix": "The profile has no instruction counters. Collect with rocprofv3 --pmc SQ_INSTS_VALU SQ_INSTS_SALU "
                               "SQ_INSTS_VMEM_RD SQ_INSTS_VMEM_WR SQ_INSTS_LDS -- ./app.",
            "hotspots": "rocprof does not attribute counters to source lines.",
        }
    return {
        "roofline": "No FLOPs or no memory traffic were counted for this kernel (it did no floating-point work, or the report lacks "
                    "them). Collect with ncu --section InstructionStats --section MemoryWorkloadAnalysis.",
        "memory": "The report has no memory-workload metrics. Collect with ncu --section MemoryWorkloadAnalysis "
                  "--section MemoryWorkloadAnalysis_Chart.",
        "stalls": "The report has no warp-state metrics. Collect with ncu --section WarpStateStats.",
        "instruction-mix": "The report has no per-opcode instruction counts. Collect with ncu --section InstructionStats.",
        "hotspots": "The report has no source counters. Build with -lineinfo and collect with ncu --section SourceCounters "
                    "--import-source yes.",
    }


def kernel_parts(profile: Profile, kernel: Kernel) -> KernelParts:
    """A kernel's sections (everything but the diagnosis) and their figures."""
    from perfmodel.hardware import gpu, gpu_id_for_device_name

    work, work_error = sections.model_inputs(profile, kernel)
    gpu_id = gpu_id_for_device_name(profile.device.name)
    parts = KernelParts(
        work=work,
        occupancy_limiter=sections.occupancy_limiter(profile, kernel),
        roofline=sections.roofline(profile, kernel, work, gpu(gpu_id) if gpu_id else None),
        memory=sections.memory_chart(profile, kernel, work),
        stalls=sections.stalls(profile, kernel),
        instruction_mix=sections.instruction_mix(profile, kernel, work),
        pipe_utilization=sections.pipe_utilization(profile, kernel),
        hotspots=sections.hotspots(kernel),
        predictions=sections.predictions(profile, kernel, work, work_error),
    )
    reasons = _absent_reasons(profile.device.vendor)
    if parts.roofline is None and _no_float_work(profile, kernel, work):
        reasons["roofline"] = ("The kernel executed no floating-point instructions (its FLOP counts are zero), so a roofline does "
                               "not apply; the memory chart and the diagnosis show what bounds it.")
    for section, data in (("roofline", parts.roofline), ("memory", parts.memory), ("stalls", parts.stalls),
                          ("instruction-mix", parts.instruction_mix), ("hotspots", parts.hotspots)):
        if data is None:
            parts.absent[section] = reasons[section]
    parts.figures = _draw(parts, kernel.name)
    return parts


def _no_float_work(profile: Profile, kernel: Kernel, work) -> bool:
    """True when the profile counted FLOPs for the kernel and every count is zero."""
    counted = [profile.value(kernel, f"flop.{p}") for p in ("fp32", "fp64", "fp16")]
    return any(c is not None for c in counted) and not sections.kernel_flops(profile, kernel, work)


def _draw(parts: KernelParts, name: str) -> dict[str, list[figures.Image]]:
    """Every figure of a kernel, by section."""
    drawn: dict[str, list[figures.Image]] = {}
    for section, data, draw in (("roofline", parts.roofline, figures.roofline_figure), ("memory", parts.memory, figures.memory_figure),
                                ("stalls", parts.stalls, figures.stalls_figure),
                                ("instruction-mix", parts.instruction_mix, figures.instruction_mix_figure)):
        if data is not None:
            drawn[section] = [draw(data, name)]
    predictions = parts.predictions
    if (own := predictions.beside_measured()) is not None:
        drawn.setdefault("prediction", []).append(figures.breakdown_figure(own, predictions.measured_ns, name))
    if any(p.predicted_ns is not None for p in predictions.per_gpu):
        drawn.setdefault("prediction", []).append(figures.gpus_figure(predictions, name))
    return drawn


# Below this many kernels, starting drawing workers costs more than it saves.
PARALLEL_KERNELS = 4
# The profiles of the report being built, for drawing workers forked while it is built: they
# inherit them (diagnoses, work counts and source counters already read) instead of pickles.
_PROFILES: list[Profile] = []


def _parts_job(profile_index: int, kernel_index: int) -> KernelParts:
    profile = _PROFILES[profile_index]
    return kernel_parts(profile, profile.kernels[kernel_index])


def _all_parts(loaders: list[Callable[[], Profile]], explain_one: Callable[[Profile], dict], progress: Progress = None
               ) -> tuple[list[Profile], dict[tuple[int, int], KernelParts], list[dict]]:
    """Each profile's diagnosis (`explain_one`), then every kernel's parts (its sections and
    figures); returns the profiles (each loaded here by its loader), the parts and the
    diagnoses. One profile after the other is loaded, diagnosed and its source counters read,
    through its reader's own workers (keet/ingest/ncu_rep_native.py), which are let go before
    the next is loaded: two big reports' workers never hold their decoded reports at once. The
    figures, pure Python, are drawn in forked workers when there are enough kernels and cores
    to pay for them. ``progress`` hears of each kernel drawn (a report of many kernels takes
    minutes)."""
    tell = progress or (lambda message: None)
    profiles, explained = [], []
    for number, load in enumerate(loaders, 1):
        profile = load()
        profiles.append(profile)
        tell(f"diagnosing profile {number}/{len(loaders)}")
        explained.append(explain_one(profile))
        # Everything read from the report is read here, where the reader's workers are (the
        # diagnosis derived the model's work counts; the hotspots need the source counters):
        # the drawing workers inherit it and only draw.
        prefetch(profile.kernels)
        for kernel in profile.kernels:
            kernel.prefetch_source(None)
        for done, kernel in enumerate(profile.kernels):
            tell(f"reading source counters {done}/{len(profile.kernels)}")
            sections.model_inputs(profile, kernel)
            kernel.source  # noqa: B018 - read now: the drawing workers inherit it
        profile.release_reader()
    keys = [(p, k) for p, profile in enumerate(profiles) for k in range(len(profile.kernels))]
    drawn = lambda done: tell(f"drawing kernel sections {done}/{len(keys)}")
    workers = min(os.cpu_count() or 1, len(keys))
    if len(keys) < PARALLEL_KERNELS or workers < 2:
        parts = {}
        for done, (p, k) in enumerate(keys):
            drawn(done)
            parts[p, k] = kernel_parts(profiles[p], profiles[p].kernels[k])
        return profiles, parts, explained
    _PROFILES[:] = profiles
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = {pool.submit(_parts_job, *key): key for key in keys}
            parts = {}
            for done, future in enumerate(as_completed(futures), 1):
                parts[futures[future]] = future.result()
                drawn(done)
            return profiles, parts, explained
    finally:
        _PROFILES.clear()


def _profile_label(profile: Profile, index: int, name: str | None = None) -> str:
    return f"{index + 1}: {name or Path(profile.source).name} ({profile.device.name})"


def distinct_names(sources: list[str]) -> list[str]:
    """The shortest path tails that tell the profiles apart: file names when they differ, else
    with as many parent folders as it takes (profiles/h100/zoo_all.ncu-rep.xz and
    profiles/h200/zoo_all.ncu-rep.xz -> h100/zoo_all.ncu-rep.xz, h200/zoo_all.ncu-rep.xz)."""
    parts = [Path(source).parts or (str(source),) for source in sources]
    depth = 1
    while depth < max(map(len, parts)):
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names):
            break
        depth += 1
    return ["/".join(p[-depth:]) for p in parts]


def build(profiles: list[Profile | Callable[[], Profile]], title: str | None = None, progress: Progress = None) -> Report:
    """The report's content for one or more profiles (the first is the comparison's baseline),
    each given loaded or as a function that loads it (then loaded when its turn comes, after
    the previous one is read: see _all_parts). Each profile's reader is released once the report
    has read it (Profile.release_reader): a caller's later reads of it still work, more slowly."""
    loaders = [p if callable(p) else (lambda p=p: p) for p in profiles]
    profiles, parts, documents = _all_parts(loaders, lambda p: explain(p, kernels_by_duration(p)), progress)
    names = distinct_names([str(p.source) for p in profiles])
    profile_reports: list[ProfileReport] = []
    for index, (profile, document) in enumerate(zip(profiles, documents)):
        entries = {entry["id"]: entry for entry in document["kernels"]}
        position = {id(kernel): number for number, kernel in enumerate(profile.kernels)}
        kernels = [KernelReport(**vars(parts[index, position[id(kernel)]]), anchor=f"p{index}-k{kernel.id}", kernel=kernel,
                                entry=entries[kernel.id]) for kernel in kernels_by_duration(profile)]
        profile_reports.append(ProfileReport(index, _profile_label(profile, index, names[index]), profile, document, kernels,
                                             sections.fused_chains(profile, document)))
    comparison = compare(profile_reports) if len(profile_reports) > 1 else None
    comparison_figures = _comparison_figures(comparison) if comparison is not None else {}
    # two profiles of one name (the same program on two GPUs) are told apart by their folders
    report_title = title or ("keet report: " + ", ".join(dict.fromkeys(names)))
    return Report(report_title, datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), __version__, profile_reports, comparison,
                  comparison_figures)


def _side(report: ProfileReport, kernel: KernelReport) -> Side:
    return Side(report.profile, kernel.kernel, kernel.anchor, kernel.entry["diagnosis"], kernel.predictions.beside_measured(), kernel.work)


def compare(reports: list[ProfileReport]) -> Comparison:
    """Every other profile's kernels matched with the baseline's and their deltas explained."""
    base = reports[0]
    by_kernel = {id(k.kernel): k for r in reports for k in r.kernels}
    deltas, unmatched = [], []
    for other in reports[1:]:
        pairs, alone = match([k.kernel for k in base.kernels], [k.kernel for k in other.kernels])
        deltas.append([delta(a.name, _side(base, by_kernel[id(a)]), _side(other, by_kernel[id(b)])) for a, b in pairs])
        unmatched.append(alone)
    return Comparison(base.label, [r.label for r in reports[1:]], deltas, unmatched)


def _comparison_figures(comparison: Comparison) -> dict[str, figures.Image]:
    """One duration chart per compared profile (baseline and that profile), by its label."""
    # each bar named by its own profile's kernel: a renamed kernel (matched as the only one of
    # each profile) must not carry the baseline's name
    return {label: figures.comparison_figure([[d.baseline.kernel.name, d.other.kernel.name] for d in deltas],
                                             [comparison.baseline, label],
                                             [[d.baseline.kernel.duration_ns, d.other.kernel.duration_ns] for d in deltas])
            for label, deltas in zip(comparison.others, comparison.deltas) if deltas}


def write_report(paths: list[str | Path], out: str | Path, title: str | None = None, progress: Progress = None) -> Report:
    """Read the profiles, build and render the report, and write it in one step at the end
    (a bad input raises before anything is written; the file appears whole or not at all).
    The output is checked first: never an input, a link, a device or a directory."""
    from keet.outputs import atomic_write_text, check_output_path
    from keet.report.page import render

    out = check_output_path(out, paths)
    tell = progress or (lambda message: None)

    def loader(number: int, path: str | Path) -> Callable[[], Profile]:
        def load() -> Profile:
            tell(f"reading profile {number}/{len(paths)}: {Path(path).name}")
            return load_profile(path, read_ahead=READ_AHEAD)
        return load

    report = build([loader(number, path) for number, path in enumerate(paths, 1)], title, progress)
    tell(f"writing {Path(out).name}")
    atomic_write_text(out, render(report))
    return report
