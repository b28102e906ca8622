"""rocprof SQLite databases: rocprof v1 ``results.db`` and rocprofv3's rocpd database.

* rocprof v1 (``-o results.db``, ``--hip-trace``): tables ``HIP`` (API calls), ``OPS`` (GPU
  operations: kernel dispatches with BeginNs/EndNs/DurationNs and dev-id), ``COPY`` (memory
  copies) and ``KERN``; a table with a ``KernelName`` column is a results.csv written as a
  table. Kernels come from the results table when there is one, else from ``OPS``.
* rocpd (rocprofv3 ``--output-format rocpd``, the default from ROCm 7.0): read only through
  its documented views, ``kernels`` (one row per dispatch, work-item grid, workgroup size,
  LDS/scratch, registers, start/end) and ``pmc_events`` (counter values by event id), and
  the agent table ``rocpd_info_agent`` for the devices. No real rocpd file was available
  to us: the reader follows the view definitions of rocprofiler-sdk's
  ``source/share/rocprofiler-sdk-rocpd/data_views.sql`` and is tested on databases built
  from those column lists.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Collection
from pathlib import Path

import pandas as pd

from keet.errors import ProfileError
from keet.ingest import register
from keet.ingest.compressed import plain_copy
from keet.ingest.rocprof_common import (
    READ_ERRORS,
    DeviceFacts,
    agent_info_device,
    build_profile,
    damaged,
    dispatch_table,
    merge_passes,
)
from keet.profile import Profile

SQLITE_MAGIC = b"SQLite format 3\x00"
# rocpd `kernels` view columns -> the rocprofv3 CSV spelling dispatch_table knows.
_ROCPD_KERNEL_COLUMNS = {
    "dispatch_id": "Dispatch_Id", "name": "Kernel_Name", "agent_id": "Agent_Id", "queue_id": "Queue_Id",
    "pid": "Process_Id", "tid": "Thread_Id", "start": "Start_Timestamp", "end": "End_Timestamp",
    "grid_x": "Grid_Size_X", "grid_y": "Grid_Size_Y", "grid_z": "Grid_Size_Z",
    "workgroup_x": "Workgroup_Size_X", "workgroup_y": "Workgroup_Size_Y", "workgroup_z": "Workgroup_Size_Z",
    "lds_size": "LDS_Block_Size", "scratch_size": "Scratch_Size", "sgpr_count": "SGPR_Count",
    "arch_vgpr_count": "VGPR_Count", "accum_vgpr_count": "Accum_VGPR_Count", "correlation_id": "Correlation_Id",
    "kernel_id": "Kernel_Id",
}


@register
class RocprofDbReader:
    id = "rocprof-db"
    description = "rocprof v1 SQLite results.db and rocprofv3 rocpd SQLite database (through its views)"

    def sniff(self, head: bytes) -> bool:
        return head.startswith(SQLITE_MAGIC)

    def read(self, path: Path, metrics: Collection[str] | None = None) -> Profile:
        path = Path(path)
        plain = plain_copy(path)
        try:
            connection = sqlite3.connect(f"file:{plain}?mode=ro", uri=True)
            try:
                return _read(path, connection)
            finally:
                connection.close()
        except sqlite3.Error as exc:
            raise ProfileError(path, f"SQLite database cannot be read ({exc})") from None
        except READ_ERRORS as exc:
            raise damaged(path, "rocprof database", exc) from None
        finally:
            if plain != path:
                os.unlink(plain)


def _objects(connection: sqlite3.Connection) -> dict[str, str]:
    """Tables and views by lower-case name."""
    rows = connection.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
    return {str(name).lower(): str(name) for name, _ in rows}


def _columns(connection: sqlite3.Connection, name: str) -> list[str]:
    return [row[1] for row in connection.execute(f'PRAGMA table_info("{name}")').fetchall()]


def _frame(connection: sqlite3.Connection, query: str) -> pd.DataFrame:
    cursor = connection.execute(query)
    names = [d[0] for d in cursor.description]
    return pd.DataFrame.from_records(cursor.fetchall(), columns=names)


def _read(path: Path, connection: sqlite3.Connection) -> Profile:
    objects = _objects(connection)
    if "kernels" in objects and any(name.startswith("rocpd_") for name in objects):
        return _read_rocpd(path, connection, objects)
    for name in objects.values():
        if "kernelname" in {c.lower() for c in _columns(connection, name)}:
            frame = _frame(connection, f'SELECT * FROM "{name}"').astype(str)
            if frame.empty:
                continue  # --hip-trace writes an empty KERN table beside OPS
            table = merge_passes(dispatch_table(path, frame, "rocprof v1 results table"))
            return build_profile(path, "rocprof-v1-db", "rocprof v1 (results.db)", table, what="rocprof v1 results table")
    if "ops" in objects:
        return _read_v1_ops(path, connection, objects["ops"])
    if any(name.startswith("rocpd_") for name in objects):
        raise ProfileError(path, "is a rocpd database without a `kernels` view (no kernel dispatch was traced)")
    raise ProfileError(path, "is an SQLite database but not one rocprof wrote (no OPS table, results table or rocpd views)")


def _read_v1_ops(path: Path, connection: sqlite3.Connection, table_name: str) -> Profile:
    """Kernel dispatches of a rocprof v1 --hip-trace/--hsa-trace database (its OPS table)."""
    frame = _frame(connection, f'SELECT * FROM "{table_name}"')
    if frame.empty:
        raise ProfileError(path, "rocprof v1 database traced no GPU operation (its OPS table is empty)")
    lower = {c.lower(): c for c in frame.columns}
    names = frame[lower.get("name", frame.columns[0])].astype(str)
    # OPS lists kernels; copies and barriers go to COPY or carry these names.
    kernels = frame[~names.str.match(r"^(Copy|Fill|Barrier|Marker)", case=False)]
    if kernels.empty:
        raise ProfileError(path, "rocprof v1 database has no kernel dispatch in its OPS table (only copies)")
    renamed = pd.DataFrame({
        "KernelName": kernels[lower["name"]].astype(str),
        "gpu-id": kernels[lower["dev-id"]] if "dev-id" in lower else 0,
        "queue-id": kernels[lower["queue-id"]] if "queue-id" in lower else None,
        "Index": kernels[lower["index"]] if "index" in lower else range(len(kernels)),
        "BeginNs": kernels[lower["beginns"]], "EndNs": kernels[lower["endns"]],
    }).astype(str)
    table = dispatch_table(path, renamed, "rocprof v1 OPS table")
    return build_profile(path, "rocprof-v1-db", "rocprof v1 (results.db, --hip-trace/--hsa-trace)", table, what="rocprof v1 OPS table")


def _read_rocpd(path: Path, connection: sqlite3.Connection, objects: dict[str, str]) -> Profile:
    kernels = _frame(connection, f'SELECT * FROM "{objects["kernels"]}"')
    if kernels.empty:
        raise ProfileError(path, "rocpd database has no kernel dispatch (its kernels view is empty)")
    columns = {c: _ROCPD_KERNEL_COLUMNS[c] for c in kernels.columns if c in _ROCPD_KERNEL_COLUMNS}
    frame = kernels[list(columns)].rename(columns=columns).astype(str)
    if "pmc_events" in objects and "event_id" in kernels.columns:
        events = _frame(connection, f'SELECT event_id, name, value FROM "{objects["pmc_events"]}"')
        if not events.empty:
            counters = events.pivot_table(index="event_id", columns="name", values="value", aggfunc="sum")
            counters = counters.reindex(kernels["event_id"].to_numpy())
            counters.index = frame.index
            frame = pd.concat([frame, counters.astype(str).replace("nan", "")], axis=1)
    devices = _rocpd_devices(connection, objects)
    table = dispatch_table(path, frame, "rocpd kernels view")
    return build_profile(path, "rocpd", "rocprofv3 (rocpd database)", table, devices=devices, what="rocpd kernels view")


def _rocpd_devices(connection: sqlite3.Connection, objects: dict[str, str]) -> dict[float, DeviceFacts]:
    """GPU agents by id: name (gfx arch), product name, and the agent properties in extdata."""
    if "rocpd_info_agent" not in objects:
        return {}
    agents = _frame(connection, f'SELECT * FROM "{objects["rocpd_info_agent"]}"')
    devices: dict[float, DeviceFacts] = {}
    for row in agents.to_dict("records"):
        if str(row.get("type", "")).upper() != "GPU":
            continue
        properties: dict[str, object] = {}
        try:
            extdata = json.loads(row.get("extdata") or "{}")
            if isinstance(extdata, dict):
                properties.update(extdata)
        except (TypeError, ValueError):
            pass
        properties.update({k: v for k, v in row.items() if k not in ("extdata",) and v is not None})
        try:
            devices[float(row["id"])] = agent_info_device(properties)
        except (TypeError, ValueError, KeyError):
            continue
    return devices
