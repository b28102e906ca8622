"""What every rocprof reader shares: CSV tables, column generations, devices, aggregation.

rocprof v1, rocprofv2, rocprofv3 and rocprof-compute name the same launch facts differently
(``grd`` / ``Grid_Size``, ``KernelName`` / ``Kernel_Name``, ``BeginNs`` / ``Start_Timestamp``,
...). Each reader turns its file into one *dispatch table*: a DataFrame with one row per
kernel dispatch, the launch facts under the internal names of :data:`IDENTITY_ALIASES`'
values and one float column per hardware counter under its rocprof name. ``build_profile``
then aggregates dispatches of the same kernel into one :class:`Kernel` and assembles the
Profile the Nsight Compute readers return.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from keet.errors import ProfileError
from keet.ingest import limits
from keet.ingest.assemble import assemble
from keet.ingest.compressed import read_all
from keet.ingest.ncu_csv import unique_column_names
from keet.ingest.sniff import classify_header, find_header, sniff_kind, split_header  # noqa: F401 (the readers import them from here)
from keet.names import function_base_name
from keet.profile import METRIC_COLUMNS, Device, Kernel, Profile

# Column name (lower case) -> internal name, over every generation we know.
IDENTITY_ALIASES: dict[str, str] = {
    "index": "dispatch", "dispatch_id": "dispatch", "dispatch-id": "dispatch",
    "kernelname": "name", "kernel_name": "name", "kernel-name": "name",
    "gpu-id": "gpu", "gpu_id": "gpu", "agent_id": "gpu", "dev-id": "gpu",
    "queue-id": "queue", "queue_id": "queue",
    "pid": "pid", "process_id": "pid", "tid": "tid", "thread_id": "tid",
    "grd": "grid_items", "grid_size": "grid_items",
    "wgr": "workgroup_items", "workgroup_size": "workgroup_items",
    "grid_size_x": "grid_x", "grid_size_y": "grid_y", "grid_size_z": "grid_z",
    "workgroup_size_x": "wg_x", "workgroup_size_y": "wg_y", "workgroup_size_z": "wg_z",
    "lds": "lds", "lds_per_workgroup": "lds", "lds_block_size": "lds", "group_segment_size": "lds",
    "scr": "scratch", "scratch_per_workitem": "scratch", "scratch_size": "scratch", "private_segment_size": "scratch",
    "arch_vgpr": "arch_vgpr", "vgpr_count": "arch_vgpr", "arch_vgpr_count": "arch_vgpr", "vgpr": "vgpr",
    "accum_vgpr": "accum_vgpr", "accum_vgpr_count": "accum_vgpr",
    "sgpr": "sgpr", "sgpr_count": "sgpr",
    "wave_size": "wave_size", "wave_front_size": "wave_size",
    "beginns": "start", "start_timestamp": "start", "endns": "end", "end_timestamp": "end",
    "durationns": "duration",
    "correlation_id": "correlation", "kernel_id": "kernel_id",
}
# Fixed columns that are neither launch facts we keep nor counters.
IGNORED_COLUMNS = frozenset(
    {"queue-index", "sig", "obj", "fbar", "dispatchns", "completens", "kind", "stream_id", "xcc_index", "node_id",
     "node", "correlation-id", "host", "hostname"}
)
IDENTITY = frozenset(IDENTITY_ALIASES.values())

# Raw names the launch facts are stored under (rocprofv2 / rocprof-compute spelling, one
# vocabulary for every generation), with their units.
LAUNCH_RAW: dict[str, tuple[str, str]] = {
    "grid_items": ("Grid_Size", "work-item"),
    "workgroup_items": ("Workgroup_Size", "work-item"),
    "lds": ("LDS_Per_Workgroup", "byte"),
    "scratch": ("Scratch_Per_Workitem", "byte"),
    "arch_vgpr": ("Arch_VGPR", "register"),
    "accum_vgpr": ("Accum_VGPR", "register"),
    "sgpr": ("SGPR", "register"),
    "wave_size": ("Wave_Size", "thread"),
    "duration": ("DurationNs", "ns"),
}

_INSTANCE = re.compile(r"^(?P<base>.+)\[(?P<index>\d+)\]$")  # TCC_HIT[12]
_REPEAT = re.compile(r"^(?P<base>.+)_(?P<n>\d+)$")  # wave_size_1, SQ_WAVES_13 (one per extra pass)
_AGENT = re.compile(r"(-?\d+)")  # "Agent 2" -> 2
_MISSING = frozenset({"", "none", "nan", "n/a", "null", "-"})


def counter_unit(name: str) -> str:
    """The unit of a rocprof counter, where its name says it (most are plain event counts)."""
    if name in ("FETCH_SIZE", "WRITE_SIZE"):
        return "KiB"  # rocprof's derived metrics: kilobytes of 1024 bytes
    if name.endswith(("_CYCLES", "_CYCLES_sum")) or name in ("GRBM_GUI_ACTIVE", "GRBM_COUNT", "SQ_WAVE_CYCLES",
                                                                "SQ_BUSY_CYCLES", "SQ_BUSY_CU_CYCLES", "TCC_CYCLE_sum"):
        return "cycle"
    return ""


# ---------------------------------------------------------------- reading CSV text


def read_bytes(path: Path) -> bytes:
    try:
        data = read_all(path)
    except OSError as exc:
        raise ProfileError(path, f"cannot be read ({exc.strerror or exc})") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        data = data.decode("utf-16", errors="replace").encode("utf-8")
    return data.removeprefix(b"\xef\xbb\xbf")


def parse_table(path: Path, data: bytes, offset: int, columns: list[str], what: str,
                name_first: bool = False) -> pd.DataFrame:
    """The table after its header as strings; rows must have the header's fields.

    name_first: the first column is a kernel name and every other one a number (results.stats.csv).
    ROCm 4.x wrote those names unquoted, commas and all: a longer row is then split from the
    right, its leading fields joined back into the name.

    Parsed with the csv module into one object block: pandas' parser builds one Series per
    column, which dominates on rocprof-compute tables of 1,000-2,700 columns and 1-6 rows.
    """
    # A header may end with a comma its rows lack (rocprof-compute's rocpd-form pmc_perf.csv).
    while columns and columns[-1] == "":
        columns = columns[:-1]
    if not columns:
        raise ProfileError(path, f"{what} header has no columns")
    names = unique_column_names(columns)
    width = len(names)
    max_rows = limits.max_rows()
    text = data[offset:].decode("utf-8", errors="replace")
    rows: list[list[str]] = []
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        next(reader, None)  # the header itself
        for number, row in enumerate(reader, start=1):
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank line
            if len(row) > width and name_first:
                row = [",".join(row[: len(row) - width + 1]), *row[len(row) - width + 1 :]]
            if len(row) > width:
                if any(cell.strip() for cell in row[width:]):
                    raise ProfileError(path, f"{what} data row {number} has more fields than the header")
                row = row[:width]
            elif len(row) < width:
                # rocprof writes every field of every row: a row that ends early was cut off.
                raise ProfileError(path, f"{what} data row {number} has fewer fields than the header "
                                         "(the file is truncated or damaged)")
            rows.append(row)
            if len(rows) > max_rows:
                raise limits.too_many_rows(path, what)
    except csv.Error as exc:
        raise ProfileError(path, f"{what} rows cannot be parsed ({exc})") from None
    cells = np.array(rows, dtype=object).reshape(len(rows), width)
    frame = pd.DataFrame(cells, columns=names)
    dropped = [c for c in names if "__repeat_" in c or c.startswith("__unnamed_")]
    return frame.drop(columns=dropped) if dropped else frame


def numbers(column: pd.Series) -> pd.Series:
    """Text as float64; NaN where it is missing (None, empty, nan), no number, or infinite
    (no count, size or timestamp is: "inf" in a file is damage, kept out like a missing value)."""
    values = pd.to_numeric(column, errors="coerce").astype("float64")
    return values.where(np.isfinite(values))


def agent_numbers(column: pd.Series) -> pd.Series:
    """Agent ids as numbers: rocprofv3 7.x writes "Agent 2", older versions 2."""
    values = numbers(column)
    if values.isna().any():
        text = column.astype(str)
        extracted = pd.to_numeric(text.str.extract(_AGENT, expand=False), errors="coerce")
        values = values.fillna(extracted)
    return values.astype("float64")


# ---------------------------------------------------------------- the dispatch table


def dispatch_table(path: Path, frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """One row per dispatch: launch facts under internal names, counters as float columns.

    Duplicated columns of merged passes (``wave_size_1``, ``SQ_WAVES_13``: rocprof-compute
    suffixes a repeat of column X with _N) are dropped where X itself is present, and a
    counter collected per instance (``TCC_HIT[0]``...) without its ``_sum`` gets one.
    """
    present = set(frame.columns)
    keep = [c for c in frame.columns if not ((m := _REPEAT.match(c)) and m["base"] in present)]
    table: dict[str, pd.Series] = {}
    counter_sources: list[str] = []
    for column in keep:
        key = column.strip().lower()
        internal = IDENTITY_ALIASES.get(key)
        if internal == "name":
            table["name"] = frame[column].astype(str).str.strip()
        elif internal == "gpu":
            table["gpu"] = agent_numbers(frame[column])
        elif internal is not None:
            if internal not in table:
                table[internal] = numbers(frame[column])
        elif key not in IGNORED_COLUMNS:
            counter_sources.append(column)
    if "name" not in table:
        raise ProfileError(path, f"{what} has no kernel name column")
    result = pd.DataFrame(table, index=frame.index)
    if "arch_vgpr" not in result and "vgpr" in result:  # ROCm < 5.3 header: one vgpr column
        result["arch_vgpr"] = result["vgpr"]
    result = result.drop(columns=["vgpr"], errors="ignore")
    # All counters converted at once: wide rocprof-compute tables have ~1000-2700 columns.
    cells = frame[counter_sources].to_numpy(dtype=object)
    flat = pd.to_numeric(pd.Series(cells.ravel(), dtype=object), errors="coerce").to_numpy(dtype="float64")
    flat = np.where(np.isfinite(flat), flat, np.nan)  # as numbers(): an infinite counter is damage, not a count
    counter_frame = pd.DataFrame(flat.reshape(cells.shape), index=frame.index,
                                 columns=[c.strip() for c in counter_sources])
    counter_frame = counter_frame.loc[:, ~counter_frame.columns.duplicated()]
    counter_frame = with_instance_sums(counter_frame)
    return pd.concat([result, counter_frame], axis=1)


def with_instance_sums(counters: pd.DataFrame) -> pd.DataFrame:
    """Add X_sum for every per-instance counter X[n] whose sum the file does not hold."""
    groups: dict[str, list[str]] = {}
    for column in counters.columns:
        match = _INSTANCE.match(column)
        if match:
            groups.setdefault(match["base"], []).append(column)
    sums = {
        f"{base}_sum": counters[columns].sum(axis=1, min_count=1)
        for base, columns in groups.items()
        if f"{base}_sum" not in counters
    }
    return pd.concat([counters, pd.DataFrame(sums, index=counters.index)], axis=1) if sums else counters


def counter_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c not in IDENTITY]


def merge_passes(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of the same dispatch (several pmc passes of rocprof v1/v2) merged into one.

    Each pass writes its own row per dispatch with its own counters; the launch facts agree.
    The first non-empty value of each column wins.
    """
    if "dispatch" not in table or table["dispatch"].isna().all():
        return table
    keys = ["dispatch", "gpu"] if "gpu" in table else ["dispatch"]
    if not table.duplicated(subset=keys + ["name"], keep=False).any():
        return table
    order = table.assign(__order=np.arange(len(table)))
    merged = order.groupby(keys + ["name"], sort=False, dropna=False).first()
    return merged.reset_index().sort_values("__order").drop(columns="__order").reset_index(drop=True)


def long_to_wide(path: Path, frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """A long table (one row per counter per dispatch) pivoted to one row per dispatch."""
    name_column = next((c for c in frame.columns if c.lower() == "counter_name"), None)
    value_column = next((c for c in frame.columns if c.lower() == "counter_value"), None)
    if name_column is None or value_column is None:
        raise ProfileError(path, f"{what} has no Counter_Name/Counter_Value columns")
    identity = [c for c in frame.columns if c not in (name_column, value_column)]
    dispatch_column = next((c for c in identity if IDENTITY_ALIASES.get(c.lower()) == "dispatch"), None)
    keys = [dispatch_column] if dispatch_column else identity
    agent_column = next((c for c in identity if IDENTITY_ALIASES.get(c.lower()) == "gpu"), None)
    if agent_column and dispatch_column:
        keys = [dispatch_column, agent_column]
    frame = frame[frame[name_column].astype(str).str.strip() != ""]
    if frame.empty:
        return pd.DataFrame(columns=identity)
    key_ids = frame.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    first_positions = pd.Series(np.arange(len(frame))).groupby(key_ids).min().to_numpy()
    first_rows = frame.iloc[first_positions][identity].reset_index(drop=True)
    # rocprofv3 sums the dimensions of a counter into one row; a repeat (several instances
    # written out) is summed the same way. A missing value ("None") stays missing.
    long = pd.DataFrame({"key": key_ids, "counter": frame[name_column].astype(str).str.strip().to_numpy(),
                         "value": numbers(frame[value_column]).to_numpy()})
    wide = long.groupby(["key", "counter"], sort=False)["value"].sum(min_count=1).unstack("counter")
    wide = wide.reindex(range(len(first_rows)))
    wide.columns = [str(c) for c in wide.columns]
    wide.index = first_rows.index
    return pd.concat([first_rows, wide], axis=1)


# ---------------------------------------------------------------- devices


@dataclass
class DeviceFacts:
    """A device and the constants canonical AMD formulas need (cu_per_gpu, num_xcd, ...)."""

    device: Device
    raw: dict[str, tuple[float, str]] = field(default_factory=dict)


# The XCD count is recorded only where the file says it. A reader knows no GPU (keet.ingest sits
# below the hardware database), so it never infers a count from the arch: what the file leaves
# out, the rules take from the hardware file of the GPU (keet.rules.amd_base.xcd_count). One
# case is the file's own statement: rocprof-compute defines num_xcd as "the total number of
# accelerator complex dies in a compute partition ... For accelerators without partitioning
# (i.e., pre-MI300), this is considered to be one" (ROCm/rocprofiler-compute, src/utils/specs.py,
# MachineSpecs.num_xcd), and a sysinfo.csv that says the device is not partitioned (Omniperf 1.x,
# which predates partitioned devices and has no partition column, or compute_partition "NA")
# therefore counts one XCD by the tool's own definition, as its formulas divide by it.
UNPARTITIONED = "NA"


def _float(value: object) -> float | None:
    try:
        number = float(str(value).strip())
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def _int(value: object) -> int | None:
    number = _float(value)
    return None if number is None or not number.is_integer() else int(number)


# Omniperf 1.x sysinfo.csv columns -> the Omniperf 2.x names (gpu_soc is the gfx arch, name the
# model in lower case, "mi100").
_SYSINFO_V1 = {"gpu_soc": "gpu_arch", "name": "gpu_model", "numCU": "cu_per_gpu", "sclk": "max_sclk",
               "mclk": "max_mclk", "L2": "gpu_l2", "numSIMD": "simd_per_cu", "waveSize": "wave_size",
               "maxWavesPerCU": "max_waves_per_cu", "hbmBW": "hbm_bw", "numSE": "se_per_gpu"}


def sysinfo_device(row: Mapping[str, str]) -> DeviceFacts:
    """The device of rocprof-compute's sysinfo.csv (Omniperf 1.x, 2.x and rocprof-compute 3.x layouts).

    Clocks are in MHz, gpu_l2 in KiB, hbm_bw in GB/s.
    """
    omniperf1 = "gpu_soc" in row and "gpu_arch" not in row and "gpu_model" not in row
    if omniperf1:
        row = {**row, **{new: row[old] for old, new in _SYSINFO_V1.items() if old in row}}
        if not str(row.get("gpu_arch", "")).strip().startswith("gfx"):  # some 1.x releases put the model there
            row["gpu_model"], row["gpu_arch"] = row.get("gpu_model") or row.get("gpu_arch", ""), ""
        row["gpu_model"] = str(row.get("gpu_model", "")).strip().upper()
    model = str(row.get("gpu_model", "")).strip()
    arch = str(row.get("gpu_arch", "")).strip() or None
    cus = _int(row.get("cu_per_gpu"))
    max_sclk, cur_sclk, max_mclk = (_float(row.get(k)) for k in ("max_sclk", "cur_sclk", "max_mclk"))
    l2_kib = _float(row.get("gpu_l2"))
    device = Device(
        name=f"AMD Instinct {model}" if model and not model.lower().startswith("amd") else (model or "AMD GPU"),
        vendor="amd",
        arch=arch,
        sm_count=cus,
        sm_clock_hz=cur_sclk * 1e6 if cur_sclk else None,
        max_sm_clock_hz=max_sclk * 1e6 if max_sclk else None,
        memory_clock_hz=max_mclk * 1e6 if max_mclk else None,
        l2_bytes=int(l2_kib * 1024) if l2_kib else None,
        attributes={k: v for k, v in row.items() if str(v).strip() != ""},
    )
    unpartitioned = omniperf1 or str(row.get("compute_partition", "")).strip().upper() == UNPARTITIONED
    xcds = row.get("num_xcd") if _int(row.get("num_xcd")) else (1 if unpartitioned else None)
    return DeviceFacts(device, device_constants(device, xcds, row.get("max_waves_per_cu"), row.get("simd_per_cu"),
                                                row.get("wave_size")))


def agent_info_device(row: Mapping[str, str]) -> DeviceFacts:
    """The GPU of a rocprofv3 agent_info.csv row (or a rocprofv3 JSON agent); clocks in MHz."""
    lower = {str(k).lower(): v for k, v in row.items()}
    arch = str(lower.get("name", "")).strip() or None
    product = str(lower.get("product_name", "") or lower.get("model_name", "")).strip()
    clock = _float(lower.get("max_engine_clk_fcompute"))
    lds_kib = _float(lower.get("lds_size_in_kb"))
    device = Device(
        name=product or (f"AMD GPU ({arch})" if arch else "AMD GPU"),
        vendor="amd",
        arch=arch if arch and arch.startswith("gfx") else None,
        sm_count=_int(lower.get("cu_count")),
        max_sm_clock_hz=clock * 1e6 if clock else None,
        attributes={k: v for k, v in row.items() if str(v).strip() != ""},
    )
    if lds_kib:
        device.attributes["lds_bytes_per_cu"] = int(lds_kib * 1024)
    return DeviceFacts(device, device_constants(device, lower.get("num_xcc"), lower.get("max_waves_per_cu"),
                                                lower.get("simd_per_cu"), lower.get("wave_front_size")))


def device_constants(device: Device, xcds: object, max_waves: object, simds: object, wave_size: object) -> dict[str, tuple[float, str]]:
    """Device facts as raw metrics of every kernel, as Nsight Compute's device__attribute_* are."""
    raw: dict[str, tuple[float, str]] = {}
    if device.sm_count:
        raw["cu_per_gpu"] = (float(device.sm_count), "CU")
    xcd_count = _int(xcds)
    if xcd_count:
        raw["num_xcd"] = (float(xcd_count), "XCD")
    for name, value in (("max_waves_per_cu", max_waves), ("simd_per_cu", simds), ("wave_size", wave_size)):
        number = _int(value)
        if number:
            raw[name] = (float(number), "")
    if device.max_sm_clock_hz:
        raw["max_sclk"] = (device.max_sm_clock_hz, "hz")
    return raw


def unknown_device(gpu: float | None) -> DeviceFacts:
    label = "" if gpu is None or math.isnan(gpu) else f" (gpu-id {int(gpu)})"
    return DeviceFacts(Device(name=f"AMD GPU{label}", vendor="amd"))


# ---------------------------------------------------------------- kernels and the Profile


def _dims(row: Mapping[str, float], prefix: str) -> tuple[int, int, int] | None:
    values = [row.get(f"{prefix}_{axis}") for axis in "xyz"]
    if any(v is None or math.isnan(v) for v in values):
        return None
    return int(values[0]), int(values[1]), int(values[2])  # type: ignore[arg-type]


def _launch_shape(row: Mapping[str, float]) -> tuple[tuple[int, int, int] | None, tuple[int, int, int] | None]:
    """Grid in workgroups and block in work-items.

    rocprof's Grid_Size counts work-items (HSA's grid), not workgroups: the grid in
    workgroups is ceil(items / workgroup) per dimension. Files with totals only give (n, 1, 1).
    """
    grid_items, block = _dims(row, "grid"), _dims(row, "wg")
    if grid_items is None:
        total = row.get("grid_items")
        grid_items = None if total is None or math.isnan(total) else (int(total), 1, 1)
    if block is None:
        total = row.get("workgroup_items")
        block = None if total is None or math.isnan(total) or total <= 0 else (int(total), 1, 1)
    if grid_items is None or block is None or 0 in block:
        return None, block
    return tuple(-(-items // size) for items, size in zip(grid_items, block)), block  # type: ignore[return-value]


def _function_name(name: str) -> str:
    stripped = re.sub(r"\s*(\[clone \.kd\]|\(\.kd\))\s*$", "", name).removesuffix(".kd")
    return function_base_name(stripped) if stripped else name


def _aggregation_keys(table: pd.DataFrame) -> pd.DataFrame:
    """Columns that make dispatches "the same kernel": device, name and launch shape."""
    keys = pd.DataFrame({"name": table["name"]}, index=table.index)
    for column in ("gpu", "grid_items", "workgroup_items", "grid_x", "grid_y", "grid_z", "wg_x", "wg_y", "wg_z"):
        if column in table:
            keys[column] = table[column].fillna(-1.0)
    return keys


def build_profile(
    path: Path,
    format_id: str,
    tool: str,
    table: pd.DataFrame,
    devices: Mapping[float, DeviceFacts] | None = None,
    default_device: DeviceFacts | None = None,
    what: str = "rocprof table",
) -> Profile:
    """Aggregate a dispatch table into kernels (one per name and launch shape) and assemble the Profile.

    Counters and duration are averaged per dispatch (the Profile's duration_ns is per
    launch, times ``invocations`` for the total); total, minimum and maximum duration and
    the dispatch count are kept in ``Kernel.attributes``.
    """
    devices = dict(devices or {})
    table = table[table["name"].astype(str).str.strip().str.lower().map(lambda v: v not in _MISSING)]
    if table.empty:
        raise ProfileError(path, f"{what} has a header but no dispatch rows")
    table = table.reset_index(drop=True)
    if "duration" not in table and "start" in table and "end" in table:
        table["duration"] = table["end"] - table["start"]
    elif "duration" in table and "start" in table and "end" in table:
        table["duration"] = table["duration"].fillna(table["end"] - table["start"])
    if "duration" in table:
        # clock glitches and damaged rows; an end of 1e308 minus a start of -1e308 is infinite
        table.loc[~(np.isfinite(table["duration"]) & (table["duration"] >= 0)), "duration"] = np.nan
    for total, prefix in (("grid_items", "grid"), ("workgroup_items", "wg")):
        axes = [f"{prefix}_{axis}" for axis in "xyz"]
        if total not in table and all(a in table for a in axes):  # rocprofv3 traces give per-axis sizes only
            table[total] = table[axes[0]] * table[axes[1]] * table[axes[2]]
    counters = counter_columns(table)
    facts = [c for c in LAUNCH_RAW if c in table]
    keys = _aggregation_keys(table)
    group_ids = keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy()
    values = table[facts + counters].astype("float64")
    means = values.groupby(group_ids, sort=True).mean()
    counts = pd.Series(group_ids).value_counts().sort_index()
    # ngroup(sort=False) numbers kernels in the order of their first dispatch.
    first_positions = pd.Series(np.arange(len(table))).groupby(group_ids).min()
    durations = table["duration"].groupby(group_ids).agg(["sum", "min", "max", "count"]) if "duration" in table else None
    dispatch_ids = table["dispatch"].groupby(group_ids).agg(["min", "max"]) if "dispatch" in table else None

    kernels: list[Kernel] = []
    raw: dict[int, dict[str, tuple[float, str]]] = {}
    used_devices: dict[int, Device] = {}
    units = {c: counter_unit(c) for c in counters}
    mean_columns = list(means.columns)
    mean_array = means.to_numpy(dtype="float64")
    identity_columns = [c for c in table.columns if c in IDENTITY]
    first_identity = table.iloc[first_positions.to_numpy()][identity_columns].to_dict("records")
    for group, row in enumerate(first_identity):
        kernel_id = group
        row_values = {k: (float(v) if isinstance(v, (int, float, np.floating, np.integer)) else v) for k, v in row.items()}
        name = str(row["name"]).strip()
        grid, block = _launch_shape(row_values)
        gpu = row_values.get("gpu")
        device_key = -1 if gpu is None or (isinstance(gpu, float) and math.isnan(gpu)) else int(gpu)
        facts_for_device = devices.get(device_key) or default_device or unknown_device(gpu)
        devices.setdefault(device_key, facts_for_device)
        used_devices[device_key] = facts_for_device.device
        mean = dict(zip(mean_columns, mean_array[group].tolist()))
        metrics: dict[str, tuple[float, str]] = {}
        for fact in facts:
            value = mean.get(fact)
            if value is not None and not math.isnan(value):
                metrics[LAUNCH_RAW[fact][0]] = (value, LAUNCH_RAW[fact][1])
        for counter in counters:
            value = mean.get(counter)
            if value is not None and not math.isnan(value):
                metrics[counter] = (value, units[counter])
        for name_, value in facts_for_device.raw.items():
            metrics.setdefault(name_, value)
        raw[kernel_id] = metrics
        attributes: dict[str, object] = {"dispatches": int(counts.loc[group])}
        if durations is not None and durations.loc[group, "count"] > 0:
            attributes.update(duration_ns_total=float(durations.loc[group, "sum"]), duration_ns_min=float(durations.loc[group, "min"]),
                              duration_ns_max=float(durations.loc[group, "max"]))
        if dispatch_ids is not None and not math.isnan(dispatch_ids.loc[group, "min"]):
            attributes.update(first_dispatch=int(dispatch_ids.loc[group, "min"]), last_dispatch=int(dispatch_ids.loc[group, "max"]))
        for fact, attribute in (("scratch", "scratch_bytes_per_work_item"), ("arch_vgpr", "arch_vgpr"), ("accum_vgpr", "accum_vgpr"),
                                ("sgpr", "sgpr"), ("wave_size", "wave_size")):
            value = mean.get(fact)
            if value is not None and not math.isnan(value):
                attributes[attribute] = int(value) if float(value).is_integer() else float(value)
        lds = mean.get("lds")
        kernel = Kernel(
            id=kernel_id,
            name=name,
            function_name=_function_name(name),
            grid=grid,
            block=block,
            static_shared_bytes=None if lds is None or math.isnan(lds) else int(lds),
            duration_ns=_optional(mean.get("duration")),
            device_id=max(device_key, 0),
            stream=None,
            invocations=int(counts.loc[group]),
            attributes=attributes,
        )
        kernels.append(kernel)
    by_device = {max(k, 0): d for k, d in used_devices.items()}
    first = by_device[kernels[0].device_id]
    return assemble(str(path), format_id, first, kernels, raw, tool=tool, devices=by_device if len(by_device) > 1 else None)


def _optional(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def device_only_profile(path: Path, format_id: str, tool: str, device: Device) -> Profile:
    """A Profile of a file that describes a device but no kernel (sysinfo, roofline, agent_info)."""
    return Profile(source=str(path), format=format_id, device=device, kernels=[],
                   metrics=pd.DataFrame({c: [] for c in METRIC_COLUMNS}), tool=tool)


def stats_profile(path: Path, format_id: str, tool: str, rows: Iterable[tuple[str, int, float | None, float | None]],
                  device: Device | None = None) -> Profile:
    """A Profile of a per-kernel summary: (name, calls, total ns, average ns) per row."""
    kernels: list[Kernel] = []
    raw: dict[int, dict[str, tuple[float, str]]] = {}
    for kernel_id, (name, calls, total, average) in enumerate(rows):
        if average is None and total is not None and calls:
            average = total / calls
        attributes: dict[str, object] = {"dispatches": calls}
        if total is not None:
            attributes["duration_ns_total"] = total
        kernels.append(Kernel(id=kernel_id, name=name, function_name=_function_name(name), duration_ns=average,
                              invocations=max(calls, 1), attributes=attributes))
        raw[kernel_id] = {"DurationNs": (average, "ns")} if average is not None else {}
    if not kernels:
        raise ProfileError(path, "kernel summary has a header but no kernel rows")
    return assemble(str(path), format_id, device or Device(name="AMD GPU", vendor="amd"), kernels, raw, tool=tool)


# ---------------------------------------------------------------- which rocprof table a header is


READ_ERRORS = (ValueError, KeyError, TypeError, IndexError, OverflowError, ZeroDivisionError, AttributeError)


def damaged(path: Path, what: str, exc: BaseException) -> ProfileError:
    """The ProfileError for a file whose content broke a reader's assumptions."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return ProfileError(path, f"{what} is damaged or of an unexpected layout ({detail[:160]})")
