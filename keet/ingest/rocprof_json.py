"""rocprofv3 JSON (``--output-format json``): ``{"rocprofiler-sdk-tool": [{...}, ...]}``.

One object per profiled process, with ``agents``, ``kernel_symbols``, ``counters`` (counter
ids to names), ``buffer_records.kernel_dispatch`` (start/end timestamps and ``dispatch_info``:
agent, queue, kernel id, dispatch id, work-item grid and workgroup sizes, segment sizes) and
``callback_records.counter_collection`` (or ``buffer_records.counter_collection``: per
dispatch, ``dispatch_data.dispatch_info`` and ``records`` of counter id and value, summed per
name as rocprofv3's CSV output does).

No real rocprofv3 JSON file was available to us: the shape follows the fields rocprof-compute's
own converter reads (``v3_json_to_csv`` in ROCm/rocprofiler-compute) and is tested on files
built from them.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from keet.errors import ProfileError
from keet.ingest import limits, register, sniff
from keet.ingest.rocprof_common import (
    READ_ERRORS,
    DeviceFacts,
    agent_info_device,
    build_profile,
    damaged,
    dispatch_table,
    read_bytes,
)
from keet.profile import Profile


@register
class RocprofJsonReader:
    id = "rocprofv3-json"
    description = "rocprofv3 JSON output (rocprofiler-sdk-tool)"

    def sniff(self, head: bytes) -> bool:
        return sniff.rocprofv3_json(head)

    def read(self, path: Path, metrics: Collection[str] | None = None) -> Profile:
        path = Path(path)
        try:
            document = json.loads(read_bytes(path).decode("utf-8", errors="replace"))
        except (ValueError, RecursionError) as exc:
            raise ProfileError(path, f"rocprofv3 JSON cannot be parsed ({str(exc)[:120]})") from None
        try:
            return _profile(path, document)
        except READ_ERRORS as exc:
            raise damaged(path, "rocprofv3 JSON", exc) from None


def _handle(value: Any) -> Any:
    """rocprofiler ids are {"handle": n} objects in some places and plain numbers in others."""
    return value.get("handle") if isinstance(value, Mapping) else value


def _profile(path: Path, document: Any) -> Profile:
    if not isinstance(document, Mapping) or not isinstance(document.get("rocprofiler-sdk-tool"), list):
        raise ProfileError(path, 'is JSON but has no "rocprofiler-sdk-tool" list (not rocprofv3 output)')
    rows: list[dict[str, Any]] = []
    devices: dict[float, DeviceFacts] = {}
    for process in document["rocprofiler-sdk-tool"]:
        if not isinstance(process, Mapping):
            continue
        rows.extend(_process_rows(process, devices))
        if len(rows) > limits.max_rows():
            raise limits.too_many_rows(path, "rocprofv3 JSON")
    if not rows:
        raise ProfileError(path, "rocprofv3 JSON holds no kernel dispatch (run rocprofv3 with --kernel-trace or --pmc)")
    frame = pd.DataFrame(rows).astype(object).where(lambda f: f.notna(), "").astype(str)
    table = dispatch_table(path, frame, "rocprofv3 JSON")
    return build_profile(path, "rocprofv3-json", "rocprofv3 (JSON)", table, devices=devices, what="rocprofv3 JSON")


def _process_rows(process: Mapping[str, Any], devices: dict[float, DeviceFacts]) -> list[dict[str, Any]]:
    agents = {}
    for agent in process.get("agents") or []:
        if not isinstance(agent, Mapping):
            continue
        handle = _handle(agent.get("id"))
        if isinstance(handle, bool) or not isinstance(handle, (int, float)):
            continue
        agents[handle] = agent
        if str(agent.get("type")).upper() in ("2", "GPU"):
            devices[float(handle)] = agent_info_device(dict(agent))
    symbols = {s.get("kernel_id"): s for s in process.get("kernel_symbols") or [] if isinstance(s, Mapping)}
    counter_names = {
        (_handle(c.get("agent_id")), _handle(c.get("id"))): c.get("name")
        for c in process.get("counters") or [] if isinstance(c, Mapping)
    }
    buffers = process.get("buffer_records") or {}
    callbacks = process.get("callback_records") or {}
    by_correlation: dict[Any, dict[str, Any]] = {}
    order: list[Any] = []
    for record in buffers.get("kernel_dispatch") or []:
        if not isinstance(record, Mapping):
            continue
        info = record.get("dispatch_info") or {}
        key = _handle((record.get("correlation_id") or {}).get("internal")) if isinstance(record.get("correlation_id"), Mapping) \
            else record.get("correlation_id")
        key = key if key is not None else ("dispatch", info.get("dispatch_id"))
        row = _dispatch_row(info, symbols)
        row["Start_Timestamp"] = record.get("start_timestamp")
        row["End_Timestamp"] = record.get("end_timestamp")
        by_correlation[key] = row
        order.append(key)
    collections = (callbacks.get("counter_collection") or []) + (buffers.get("counter_collection") or [])
    for record in collections:
        if not isinstance(record, Mapping):
            continue
        dispatch_data = record.get("dispatch_data") or {}
        info = dispatch_data.get("dispatch_info") or {}
        correlation = dispatch_data.get("correlation_id")
        key = _handle(correlation.get("internal")) if isinstance(correlation, Mapping) else correlation
        key = key if key is not None else ("dispatch", info.get("dispatch_id"))
        row = by_correlation.get(key)
        if row is None:
            row = _dispatch_row(info, symbols)
            by_correlation[key] = row
            order.append(key)
        for field, column in (("arch_vgpr_count", "Arch_VGPR"), ("accum_vgpr_count", "Accum_VGPR"), ("sgpr_count", "SGPR"),
                              ("lds_block_size_v", "LDS_Per_Workgroup")):
            if record.get(field) is not None:
                row[column] = record[field]
        agent = _handle(info.get("agent_id"))
        for counter in record.get("records") or []:
            if not isinstance(counter, Mapping):
                continue
            name = counter_names.get((agent, _handle(counter.get("counter_id"))))
            if name is None:
                continue
            value = counter.get("value")
            if isinstance(value, (int, float)):
                row[name] = row.get(name, 0.0) + float(value)
    return [by_correlation[key] for key in order]


def _dispatch_row(info: Mapping[str, Any], symbols: Mapping[Any, Mapping[str, Any]]) -> dict[str, Any]:
    symbol = symbols.get(info.get("kernel_id")) or {}
    grid = info.get("grid_size") or {}
    block = info.get("workgroup_size") or {}
    row: dict[str, Any] = {
        "Dispatch_Id": info.get("dispatch_id"),
        "Agent_Id": _handle(info.get("agent_id")),
        "Queue_Id": _handle(info.get("queue_id")),
        "Kernel_Id": info.get("kernel_id"),
        "Kernel_Name": symbol.get("formatted_kernel_name") or symbol.get("demangled_kernel_name") or symbol.get("kernel_name") or "",
        "Grid_Size_X": grid.get("x"), "Grid_Size_Y": grid.get("y"), "Grid_Size_Z": grid.get("z"),
        "Workgroup_Size_X": block.get("x"), "Workgroup_Size_Y": block.get("y"), "Workgroup_Size_Z": block.get("z"),
        "Group_Segment_Size": info.get("group_segment_size", symbol.get("group_segment_size")),
        "Private_Segment_Size": info.get("private_segment_size", symbol.get("private_segment_size")),
    }
    for field, column in (("arch_vgpr_count", "Arch_VGPR"), ("accum_vgpr_count", "Accum_VGPR"), ("sgpr_count", "SGPR")):
        if symbol.get(field) is not None:
            row[column] = symbol[field]
    return row
