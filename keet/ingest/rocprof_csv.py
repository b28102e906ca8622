"""rocprof CSV files: v1 results.csv and results.stats.csv, rocprofv2 results, rocprofv3 CSV.

* rocprof v1 ``results.csv``: one row per dispatch. Two header generations: ROCm < 5.3
  (``...,lds,scr,vgpr,sgpr,fbar,sig,obj``) and ROCm >= 5.3 (``...,lds,scr,arch_vgpr,
  accum_vgpr,sgpr,wave_size,sig,obj``); then the counters of ``-i input.txt`` (counter mode)
  and/or ``DispatchNs,BeginNs,EndNs,CompleteNs[,DurationNs]`` (``--stats``/``--timestamp on``).
  Several ``pmc:`` passes write a row per dispatch and pass; rows of one dispatch are merged.
* ``results.stats.csv`` / rocprofv3 ``kernel_stats.csv``: one row per kernel (Calls, total and
  average ns).
* rocprofv2 ``--plugin file`` results: ``Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,...``.
* rocprofv3 ``kernel_trace.csv`` (ROCm 6.2: 18 columns, Private/Group_Segment_Size; 6.4+/7.x:
  Stream_Id, LDS_Block_Size, Scratch_Size, VGPR/Accum_VGPR/SGPR counts, "Agent N" ids),
  ``counter_collection.csv`` (long: one row per counter per dispatch) and ``agent_info.csv``.
  A kernel_trace/counter_collection file reads its sibling ``<prefix>agent_info.csv`` for the
  device when one is there.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path

import pandas as pd

from keet.errors import ProfileError
from keet.ingest import register, sniff
from keet.ingest.rocprof_common import (
    READ_ERRORS,
    DeviceFacts,
    agent_info_device,
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
)
from keet.ingest.sniff import ROCPROF_CSV_KINDS as KINDS
from keet.profile import Profile

_FORMATS = {
    "v1": ("rocprof-v1-csv", "rocprof v1 (results.csv)"),
    "v2": ("rocprofv2-csv", "rocprofv2 (file plugin CSV)"),
    "v3-trace": ("rocprofv3-kernel-trace", "rocprofv3 (kernel_trace.csv)"),
    "v3-counter": ("rocprofv3-counter-collection", "rocprofv3 (counter_collection.csv)"),
    "agent-info": ("rocprofv3-agent-info", "rocprofv3 (agent_info.csv)"),
}
_WHAT = {
    "v1": "rocprof v1 table", "v2": "rocprofv2 table", "v3-trace": "rocprofv3 kernel trace",
    "v3-counter": "rocprofv3 counter collection", "agent-info": "rocprofv3 agent info", "stats": "rocprof kernel statistics",
}
_SIBLING_SUFFIXES = ("kernel_trace.csv", "counter_collection.csv", "kernel_stats.csv")


@register
class RocprofCsvReader:
    id = "rocprof-csv"
    description = ("rocprof v1 results.csv / results.stats.csv, rocprofv2 results CSV, rocprofv3 CSV "
                   "(kernel_trace, counter_collection, kernel_stats, agent_info)")

    def sniff(self, head: bytes) -> bool:
        return sniff.rocprof_csv(head)

    def read(self, path: Path, metrics: Collection[str] | None = None) -> Profile:
        path = Path(path)
        data = read_bytes(path)
        found = find_header(data, lambda columns: classify_header(columns) in KINDS)
        if found is None:
            raise ProfileError(path, "has no rocprof CSV header (KernelName/Kernel_Name, Index/Dispatch_Id, ...)")
        offset, columns = found
        kind = classify_header(columns)
        assert kind is not None
        what = _WHAT[kind]
        name_first = kind == "stats" and columns[0].strip().lower() == "name"
        frame = parse_table(path, data, offset, columns, what, name_first=name_first)
        try:
            return _profile(path, kind, frame, what)
        except READ_ERRORS as exc:
            raise damaged(path, what, exc) from None


def _profile(path: Path, kind: str, frame: pd.DataFrame, what: str) -> Profile:
    if kind == "stats":
        return read_stats(path, frame)
    if kind == "agent-info":
        devices = agent_devices(frame)
        if not devices:
            raise ProfileError(path, "rocprofv3 agent info lists no GPU agent")
        format_id, tool = _FORMATS[kind]
        return device_only_profile(path, format_id, tool, next(iter(devices.values())).device)
    if kind == "v3-counter":
        frame = long_to_wide(path, frame, what)
    table = merge_passes(dispatch_table(path, frame, what))
    devices = sibling_agent_devices(path) if kind in ("v3-trace", "v3-counter") else {}
    format_id, tool = _FORMATS[kind]
    return build_profile(path, format_id, tool, table, devices=devices, what=what)


def read_stats(path: Path, frame: pd.DataFrame) -> Profile:
    """results.stats.csv (Name, Calls, TotalDurationNs, AverageNs, Percentage) or kernel_stats.csv."""
    columns = {c.strip().lower(): c for c in frame.columns}
    calls = numbers(frame[columns["calls"]])
    total = numbers(frame[columns["totaldurationns"]])
    average = numbers(frame[columns["averagens"]]) if "averagens" in columns else total / calls
    rows = []
    for name, count, sum_ns, mean_ns in zip(frame[columns["name"]].astype(str), calls, total, average):
        if not name.strip():
            continue
        rows.append((name.strip(), int(count) if not math.isnan(count) and count >= 0 else 0,
                     None if math.isnan(sum_ns) else float(sum_ns), None if math.isnan(mean_ns) else float(mean_ns)))
    format_id = "rocprofv3-kernel-stats" if "minns" in columns else "rocprof-v1-stats"
    tool = "rocprofv3 (kernel_stats.csv)" if "minns" in columns else "rocprof v1 (results.stats.csv)"
    return stats_profile(path, format_id, tool, rows)


def agent_devices(frame: pd.DataFrame) -> dict[float, DeviceFacts]:
    """GPU agents of an agent_info table by Node_Id (what rocprofv3's Agent_Id refers to)."""
    devices: dict[float, DeviceFacts] = {}
    for row in frame.to_dict("records"):
        lower = {str(k).lower(): v for k, v in row.items()}
        if str(lower.get("agent_type", "")).strip().upper() != "GPU":
            continue
        node = numbers(pd.Series([lower.get("node_id")])).iloc[0]
        key = -1.0 if math.isnan(node) else float(node)
        devices[key] = agent_info_device(row)
    return devices


def sibling_agent_devices(path: Path) -> dict[float, DeviceFacts]:
    """Devices from the agent_info.csv rocprofv3 wrote beside this file (same prefix), if any."""
    for suffix in _SIBLING_SUFFIXES:
        if path.name.endswith(suffix):
            sibling = path.with_name(path.name[: -len(suffix)] + "agent_info.csv")
            break
    else:
        return {}
    if not sibling.is_file():
        return {}
    try:
        data = read_bytes(sibling)
        found = find_header(data, lambda columns: classify_header(columns) == "agent-info")
        if found is None:
            return {}
        frame = parse_table(sibling, data, found[0], found[1], "rocprofv3 agent info")
        return agent_devices(frame)
    except (ProfileError, *READ_ERRORS):
        return {}  # a damaged sibling only costs the device description
