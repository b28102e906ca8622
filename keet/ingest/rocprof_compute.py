"""rocprof-compute (Omniperf) workload files and folders.

A workload folder (``workloads/<name>/<GPU>/``) holds:

* ``pmc_perf.csv``: every counter pass merged into one row per dispatch. Its layout follows
  the backend: rocprof v1 (Omniperf 2.x: per-channel ``TCC_X[n]`` columns beside ``TCC_X_sum``,
  repeats of fixed columns suffixed ``_1``, ``_2`` ... one per merged pass), rocprofv2
  (``Wave_Size``, ``Correlation_ID``, ``XCC_Index`` repeats), rocprofv3 in csv mode (adds
  ``Kernel_ID``, 0-based ``Dispatch_ID``) and the rocpd long form of rocprof-compute 3.2+
  (``...,Kernel_ID,Counter_Name,Counter_Value,`` with a trailing comma in the header only);
* per-pass files (``pmc_perf_N.csv`` with rocprofv3, ``SQ_*.csv``/``timestamps.csv`` before);
* ``sysinfo.csv`` (the device), ``roofline.csv`` (empirical peaks), ``pmc_kernel_top.csv``.

A folder, or any one of these files, loads; a single file reads ``sysinfo.csv`` and
``roofline.csv`` beside it when they are there.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection
from pathlib import Path

import pandas as pd

from keet.errors import ProfileError
from keet.ingest import register, sniff
from keet.ingest.rocprof_common import (
    READ_ERRORS,
    DeviceFacts,
    build_profile,
    classify_header,
    damaged,
    device_only_profile,
    dispatch_table,
    find_header,
    long_to_wide,
    merge_passes,
    numbers,
    parse_table,
    read_bytes,
    stats_profile,
    sysinfo_device,
)
from keet.ingest.sniff import ROCPROF_COMPUTE_KINDS as KINDS
from keet.ingest.sniff import file_kind, workload_folder
from keet.profile import Device, Profile

# Files whose tables are dispatch rows, in the order a folder is read.
_PER_PASS_KINDS = {"pmc-perf", "pmc-long", "v2", "v1", "v3-counter"}
_WHAT = {"pmc-perf": "rocprof-compute pmc_perf table", "pmc-long": "rocprof-compute pmc_perf table (rocpd long form)",
         "kernel-top": "rocprof-compute pmc_kernel_top table", "sysinfo": "rocprof-compute sysinfo table",
         "roofline": "rocprof-compute roofline table"}
TOOL = "rocprof-compute / Omniperf"


@register
class RocprofComputeReader:
    id = "rocprof-compute"
    description = "rocprof-compute / Omniperf workload: pmc_perf.csv (any backend, wide or rocpd long form), sysinfo.csv, roofline.csv, pmc_kernel_top.csv, or the workload folder"

    def sniff(self, head: bytes) -> bool:
        return sniff.rocprof_compute(head)

    def sniff_directory(self, path: Path) -> bool:
        return sniff.rocprof_compute_directory(path)

    def read(self, path: Path, metrics: Collection[str] | None = None) -> Profile:
        path = Path(path)
        if path.is_dir():
            return read_workload_folder(workload_folder(path) or path)
        data = read_bytes(path)
        found = find_header(data, lambda columns: classify_header(columns) in KINDS)
        if found is None:
            raise ProfileError(path, "has no rocprof-compute table header")
        kind = classify_header(found[1])
        assert kind is not None
        what = _WHAT[kind]
        frame = parse_table(path, data, found[0], found[1], what)
        try:
            return _read_file(path, kind, frame, what)
        except READ_ERRORS as exc:
            raise damaged(path, what, exc) from None


def _read_file(path: Path, kind: str, frame: pd.DataFrame, what: str) -> Profile:
    folder = path.parent
    if kind in ("sysinfo", "roofline"):
        if file_kind(folder / "pmc_perf.csv") in ("pmc-perf", "pmc-long"):
            return read_workload_folder(folder)  # the workload this file describes
        device = sysinfo_facts(path, frame).device if kind == "sysinfo" else Device(name="AMD GPU", vendor="amd")
        if kind == "roofline":
            device.attributes["roofline"] = roofline_peaks(frame)
        return device_only_profile(path, f"rocprof-compute-{kind}", TOOL, device)
    facts = _sibling_device(folder, exclude=path)
    if kind == "kernel-top":
        return kernel_top_profile(path, frame, facts.device if facts else None)
    if kind == "pmc-long":
        frame = long_to_wide(path, frame, what)
    table = merge_passes(dispatch_table(path, frame, what))
    format_id = "rocprof-compute-pmc-perf-long" if kind == "pmc-long" else "rocprof-compute-pmc-perf"
    return build_profile(path, format_id, TOOL, table, default_device=facts, what=what)


def read_workload_folder(folder: Path) -> Profile:
    """A workload folder: pmc_perf.csv (or the per-pass files merged by dispatch) with its device."""
    facts = _sibling_device(folder)
    main = folder / "pmc_perf.csv"
    kind = file_kind(main)
    sources: list[tuple[Path, str]] = []
    if kind in ("pmc-perf", "pmc-long"):
        sources = [(main, kind)]
    else:
        for candidate in sorted(folder.glob("*.csv")):
            candidate_kind = file_kind(candidate)
            if candidate_kind in _PER_PASS_KINDS:
                sources.append((candidate, candidate_kind))
    if not sources:
        top = folder / "pmc_kernel_top.csv"
        if file_kind(top) == "kernel-top":
            data = read_bytes(top)
            found = find_header(data, lambda columns: classify_header(columns) == "kernel-top")
            assert found is not None
            frame = parse_table(top, data, found[0], found[1], _WHAT["kernel-top"])
            return kernel_top_profile(folder, frame, facts.device if facts else None)
        if facts is not None:
            return device_only_profile(folder, "rocprof-compute-sysinfo", TOOL, facts.device)
        raise ProfileError(folder, "is a directory, not a profile file (nor a rocprof-compute workload folder with pmc_perf.csv)")
    tables = []
    for source, source_kind in sources:
        data = read_bytes(source)
        found = find_header(data, lambda columns, k=source_kind: classify_header(columns) == k)
        if found is None:
            continue
        what = f"{source.name}: " + _WHAT.get(source_kind, "rocprof table")
        frame = parse_table(source, data, found[0], found[1], what)
        try:
            if source_kind in ("pmc-long", "v3-counter"):
                frame = long_to_wide(source, frame, what)
            tables.append(dispatch_table(source, frame, what))
        except READ_ERRORS as exc:
            raise damaged(source, what, exc) from None
    if not tables:
        raise ProfileError(folder, "holds no readable rocprof-compute counter table")
    try:
        table = merge_passes(pd.concat(tables, ignore_index=True, sort=False))
        format_id = "rocprof-compute-pmc-perf-long" if sources[0][1] == "pmc-long" else "rocprof-compute-pmc-perf"
        return build_profile(folder, format_id, TOOL, table, default_device=facts, what="rocprof-compute workload")
    except READ_ERRORS as exc:
        raise damaged(folder, "rocprof-compute workload", exc) from None


def _sibling_device(folder: Path, exclude: Path | None = None) -> DeviceFacts | None:
    """The device of sysinfo.csv in this folder, with roofline.csv's peaks, when present."""
    facts: DeviceFacts | None = None
    sysinfo = folder / "sysinfo.csv"
    if sysinfo != exclude and file_kind(sysinfo) == "sysinfo":
        try:
            data = read_bytes(sysinfo)
            found = find_header(data, lambda columns: classify_header(columns) == "sysinfo")
            if found is not None:
                facts = sysinfo_facts(sysinfo, parse_table(sysinfo, data, found[0], found[1], _WHAT["sysinfo"]))
        except (ProfileError, *READ_ERRORS):
            facts = None  # a damaged sysinfo only costs the device description
    roofline = folder / "roofline.csv"
    if facts is not None and roofline != exclude and file_kind(roofline) == "roofline":
        try:
            data = read_bytes(roofline)
            found = find_header(data, lambda columns: classify_header(columns) == "roofline")
            if found is not None:
                facts.device.attributes["roofline"] = roofline_peaks(parse_table(roofline, data, found[0], found[1], _WHAT["roofline"]))
        except (ProfileError, *READ_ERRORS):
            pass
    return facts


def sysinfo_facts(path: Path, frame: pd.DataFrame) -> DeviceFacts:
    if frame.empty:
        raise ProfileError(path, "rocprof-compute sysinfo table has a header but no row")
    return sysinfo_device({str(k): str(v) for k, v in frame.iloc[0].items()})


def roofline_peaks(frame: pd.DataFrame) -> dict[str, float]:
    """Median over the measured devices of each empirical peak (GB/s for *Bw, GFLOP/s or GOP/s otherwise)."""
    peaks: dict[str, float] = {}
    for column in frame.columns:
        if column.strip().lower() == "device":
            continue
        values = [v for v in numbers(frame[column]).tolist() if not math.isnan(v)]
        if values:
            peaks[column.strip()] = float(statistics.median(values))
    return peaks


def kernel_top_profile(path: Path, frame: pd.DataFrame, device: Device | None) -> Profile:
    """pmc_kernel_top.csv: Kernel_Name, Count, Sum(ns), Mean(ns), Median(ns), Pct."""
    columns = {c.strip().lower(): c for c in frame.columns}
    counts = numbers(frame[columns["count"]])
    sums = numbers(frame[columns["sum(ns)"]])
    means = numbers(frame[columns["mean(ns)"]]) if "mean(ns)" in columns else sums / counts
    rows = [
        (str(name).strip(), int(count) if not math.isnan(count) and count >= 0 else 0,
         None if math.isnan(total) else float(total), None if math.isnan(mean) else float(mean))
        for name, count, total, mean in zip(frame[columns["kernel_name"]], counts, sums, means)
        if str(name).strip()
    ]
    return stats_profile(path, "rocprof-compute-kernel-top", TOOL, rows, device=device)
