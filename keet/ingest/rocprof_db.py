"""rocprof SQLite databases: rocprof v1 ``results.db`` and rocprofv3's rocpd database.

* rocprof v1 (``-o results.db``, ``--hip-trace``): tables ``HIP`` (API calls), ``OPS`` (GPU
  operations: kernel dispatches with BeginNs/EndNs/DurationNs and dev-id), ``COPY`` (memory
  copies) and ``KERN``; a table with a ``KernelName`` column is a results.csv written as a
  table. Kernels come from the results table when there is one, else from ``OPS``.
* rocpd (rocprofv3 ``--output-format rocpd``, the default from ROCm 7.0): read only through
  its documented views, ``kernels`` (one row per dispatch, work-item grid, workgroup size,
  LDS/scratch, registers, start/end) and ``pmc_events`` (counter values by event id), and
  the agent table ``rocpd_info_agent`` for the devices. The column names are those of
  rocprofiler-sdk's ``source/share/rocprofiler-sdk-rocpd/versions/3.0.3/data_views.sql``
  (ROCm 7.0: agent_abs_index, vgpr_count, corr_id, counter_name/counter_value), with the
  earlier documented spellings still accepted. No real rocpd file was found in a public
  repository (tests/data/SOURCES.md): tests build databases with those columns.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from pathlib import Path

import pandas as pd

from keet.errors import ProfileError
from keet.ingest import limits, register, sniff
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

# rocpd `kernels` view columns -> the rocprofv3 CSV spelling dispatch_table knows.
_ROCPD_KERNEL_COLUMNS = {
    "dispatch_id": "Dispatch_Id", "name": "Kernel_Name", "agent_id": "Agent_Id", "queue_id": "Queue_Id",
    "pid": "Process_Id", "tid": "Thread_Id", "start": "Start_Timestamp", "end": "End_Timestamp",
    "grid_x": "Grid_Size_X", "grid_y": "Grid_Size_Y", "grid_z": "Grid_Size_Z",
    "workgroup_x": "Workgroup_Size_X", "workgroup_y": "Workgroup_Size_Y", "workgroup_z": "Workgroup_Size_Z",
    "lds_size": "LDS_Block_Size", "scratch_size": "Scratch_Size", "sgpr_count": "SGPR_Count",
    "arch_vgpr_count": "VGPR_Count", "accum_vgpr_count": "Accum_VGPR_Count", "correlation_id": "Correlation_Id",
    "kernel_id": "Kernel_Id",
    # The `kernels` view rocprofv3 of ROCm 7.0 writes (rocpd schema 3.0.x) names these
    # differently from the documentation we first followed: the agent is its absolute index,
    # the VGPRs are vgpr_count and the correlation id is corr_id.
    "agent_abs_index": "Agent_Id", "vgpr_count": "VGPR_Count", "corr_id": "Correlation_Id",
}


@register
class RocprofDbReader:
    id = "rocprof-db"
    description = "rocprof v1 SQLite results.db and rocprofv3 rocpd SQLite database (through its views)"

    def sniff(self, head: bytes) -> bool:
        return sniff.rocprof_db(head)

    def read(self, path: Path, metrics: Collection[str] | None = None) -> Profile:
        path = Path(path)
        plain = plain_copy(path)
        connection: _BoundedConnection | None = None
        try:
            connection = _connect(path, plain)
            try:
                return _read(path, connection)
            finally:
                connection.close()
        except sqlite3.Error as exc:
            if connection is not None and connection.exhausted:
                raise limits.over_limit(path, "KEET_MAX_SQLITE_STEPS", "SQLite database queries take too long") from None
            raise ProfileError(path, f"SQLite database cannot be read ({exc})") from None
        except READ_ERRORS as exc:
            raise damaged(path, "rocprof database", exc) from None
        finally:
            if plain != path:
                plain.unlink(missing_ok=True)


_STEP_GRAIN = 10_000  # SQLite instructions between two calls of the progress handler


class _BoundedConnection(sqlite3.Connection):
    """A connection that knows its file and stops a query beyond the bounds of keet.ingest.limits.

    A database is code: a 12 KB file can define a `kernels` view as a recursive CTE that never
    stops producing rows, or computes for hours before the first. The progress handler aborts
    any statement once the database has used its budget of virtual-machine steps.
    """

    path: Path
    exhausted: bool = False

    def bound(self, path: Path) -> None:
        self.path = path
        self.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.SQLITE_MAX_VALUE_BYTES)
        budget, spent = limits.max_sqlite_steps(), 0

        def progress() -> int:
            nonlocal spent
            spent += _STEP_GRAIN
            self.exhausted = spent > budget
            return int(self.exhausted)  # nonzero interrupts the statement

        self.set_progress_handler(progress, _STEP_GRAIN)


def _connect(path: Path, plain: Path) -> _BoundedConnection:
    """Open read-only through a file: URI built by pathlib, which percent-quotes the path: a
    `#`, `?` or `%` in a name pasted into the URI would end it early or change it, and open
    (and create) another file."""
    connection = sqlite3.connect(plain.resolve().as_uri() + "?mode=ro", uri=True, factory=_BoundedConnection)
    connection.bound(path)
    return connection


def _objects(connection: sqlite3.Connection) -> dict[str, str]:
    """Tables and views by lower-case name."""
    rows = connection.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
    return {str(name).lower(): str(name) for name, _ in rows}


def _quoted(name: str) -> str:
    """An SQL identifier: the database's own object names may hold quotes."""
    return '"' + name.replace('"', '""') + '"'


def _columns(connection: sqlite3.Connection, name: str) -> list[str]:
    return [row[1] for row in connection.execute(f"PRAGMA table_info({_quoted(name)})").fetchall()]


def _frame(connection: _BoundedConnection, query: str) -> pd.DataFrame:
    """The query's rows, refused beyond the row and byte bounds (counted as they arrive)."""
    cursor = connection.execute(query)
    names = [d[0] for d in cursor.description]
    max_rows, max_bytes = limits.max_rows(), limits.max_bytes()
    rows: list[tuple] = []
    size = 0
    for row in cursor:
        rows.append(row)
        size += sum(len(value) for value in row if isinstance(value, (str, bytes)))
        if len(rows) > max_rows:
            raise limits.too_many_rows(connection.path, "SQLite query")
        if size > max_bytes:
            raise limits.over_limit(connection.path, "KEET_MAX_DECOMPRESSED_BYTES", "SQLite query returns too much data")
    return pd.DataFrame.from_records(rows, columns=names)


def _read(path: Path, connection: sqlite3.Connection) -> Profile:
    objects = _objects(connection)
    if "kernels" in objects and any(name.startswith("rocpd_") for name in objects):
        return _read_rocpd(path, connection, objects)
    for name in objects.values():
        if "kernelname" in {c.lower() for c in _columns(connection, name)}:
            frame = _frame(connection, f"SELECT * FROM {_quoted(name)}").astype(str)
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
    frame = _frame(connection, f"SELECT * FROM {_quoted(table_name)}")
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
    kernels = _frame(connection, f"SELECT * FROM {_quoted(objects['kernels'])}")
    if kernels.empty:
        raise ProfileError(path, "rocpd database has no kernel dispatch (its kernels view is empty)")
    columns = {c: _ROCPD_KERNEL_COLUMNS[c] for c in kernels.columns if c in _ROCPD_KERNEL_COLUMNS}
    # Both agent columns in one view: the absolute index is what rocpd_info_agent is keyed by below.
    if "agent_abs_index" in columns and "agent_id" in columns:
        del columns["agent_id"]
    frame = kernels[list(columns)].rename(columns=columns).astype(str)
    events = _pmc_events(connection, objects) if "event_id" in kernels.columns else None
    if events is not None and not events.empty:
        counters = events.pivot_table(index="event_id", columns="counter", values="value", aggfunc="sum")
        counters = counters.reindex(kernels["event_id"].to_numpy())
        counters.index = frame.index
        frame = pd.concat([frame, counters.astype(str).replace("nan", "")], axis=1)
    devices = _rocpd_devices(connection, objects, by_absolute_index="agent_abs_index" in kernels.columns)
    table = dispatch_table(path, frame, "rocpd kernels view")
    return build_profile(path, "rocpd", "rocprofv3 (rocpd database)", table, devices=devices, what="rocpd kernels view")


def _pmc_events(connection: _BoundedConnection, objects: dict[str, str]) -> pd.DataFrame | None:
    """(event_id, counter, value) rows of the `pmc_events` view, or None without one.

    rocprofv3 (ROCm 7) names the columns counter_name/counter_value, `name` being the kernel's;
    the documentation we first followed had name/value.
    """
    if "pmc_events" not in objects:
        return None
    view = objects["pmc_events"]
    present = {c.lower() for c in _columns(connection, view)}
    if {"counter_name", "counter_value"} <= present:
        counter, value = "counter_name", "counter_value"
    elif {"name", "value"} <= present:
        counter, value = "name", "value"
    else:
        return None
    return _frame(connection, f"SELECT event_id, {counter} AS counter, {value} AS value FROM {_quoted(view)}")


def _rocpd_devices(connection: sqlite3.Connection, objects: dict[str, str],
                   by_absolute_index: bool = False) -> dict[float, DeviceFacts]:
    """GPU agents by id (or by absolute_index, what the ROCm 7 `kernels` view gives as
    agent_abs_index): name (gfx arch), product name, and the agent properties in extdata."""
    if "rocpd_info_agent" not in objects:
        return {}
    agents = _frame(connection, f"SELECT * FROM {_quoted(objects['rocpd_info_agent'])}")
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
            key = row["absolute_index"] if by_absolute_index and row.get("absolute_index") is not None else row["id"]
            devices[float(key)] = agent_info_device(properties)
        except (TypeError, ValueError, KeyError):
            continue
    return devices
