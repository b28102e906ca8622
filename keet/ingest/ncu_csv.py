"""Nsight Compute CSV exports: the details page (long) and the raw page (wide).

``ncu --csv [--page details] [--metrics ...]`` prints one row per metric (or per rule
result) of each kernel; ``ncu --csv --page raw`` prints one row per kernel with one column
per metric, after a row of units. Both are usually captured from stdout, so the table can
be preceded by program output and ``==PROF==`` lines and followed by ``==PROF==`` /
``==WARNING==`` lines. The table itself is located by its header, parsed with pandas (never
split by hand: kernel names hold commas, quotes and parentheses), and its values parsed
column-wise.
"""

from __future__ import annotations

import csv
import io
import math
import re
import warnings
from collections.abc import Collection
from pathlib import Path

import numpy as np
import pandas as pd

from keet.errors import ProfileError
from keet.ingest import limits, register, sniff
from keet.ingest.assemble import assemble
from keet.ingest.compressed import read_all
from keet.ingest.sniff import (
    DETAILS,
    IDENTITY_COLUMNS,
    NCU_MESSAGE,
    RAW,
    find_ncu_csv_header,
    has_ncu_messages,
    utf8,
)
from keet.names import function_base_name
from keet.profile import Device, Kernel, Profile, RuleResult
from keet.units import to_base

COMMAND_LINE_SECTION = "Command line profiler metrics"

_METRIC_NAME = re.compile(r"^[A-Za-z0-9]+__[A-Za-z0-9_.:@]+$")  # sm__throughput.avg.pct_of_peak...
_GROUPED_NUMBER = re.compile(r"^[+-]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?$")  # 12,319,469 or 1,024.5
_DIM3 = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$", re.ASCII)  # (256, 1, 1)
_COMPUTE_CAPABILITY = re.compile(r"^(\d+)\.(\d+)$", re.ASCII)  # 9.0
_MISSING = frozenset({"", "n/a", "nan", "-nan"})
_SPARE_COLUMNS = 4  # rows may carry trailing (empty) fields beyond the header
_MAX_ID = 2**53  # IDs are counters; anything larger is not an ncu kernel ID
_RULE_KINDS = {"OPT": "optimization", "WRN": "warning", "INF": "info", "ERR": "error", "OK": "ok"}


# ---------------------------------------------------------------- readers


@register
class NcuCsvDetailsReader:
    id = DETAILS
    description = "Nsight Compute CSV, details page (ncu --csv [--page details] [--metrics ...])"

    def sniff(self, head: bytes) -> bool:
        return sniff.ncu_csv_details(head)

    def read(self, path: Path, metrics: Collection[str] | None = None) -> Profile:
        return read_ncu_csv(path)


@register
class NcuCsvRawReader:
    id = RAW
    description = "Nsight Compute CSV, raw page (ncu --csv --page raw)"

    def sniff(self, head: bytes) -> bool:
        return sniff.ncu_csv_raw(head)

    def read(self, path: Path, metrics: Collection[str] | None = None) -> Profile:
        return read_ncu_csv(path)


def read_ncu_csv(path: Path) -> Profile:
    """Read either page; the layout is decided by the header found in the file."""
    path = Path(path)
    try:
        data = utf8(read_all(path))
    except OSError as exc:
        raise ProfileError(path, f"cannot be read ({exc.strerror or exc})") from None
    header = find_ncu_csv_header(data)
    if header is None:
        if has_ncu_messages(data):
            raise ProfileError(
                path, "holds Nsight Compute output but no CSV table (was ncu run with --csv, and did it profile any kernel?)"
            )
        raise ProfileError(path, "has no Nsight Compute CSV header (\"ID\",\"Process ID\",...)")
    table = _parse_table(path, data[header.offset :], header.columns)
    if header.layout == DETAILS:
        return _details_profile(path, table)
    return _raw_page_profile(path, table)


# ---------------------------------------------------------------- parsing the table


def _without_ncu_messages(table: bytes) -> bytes:
    """Drop ==PROF==/==WARNING== lines that ncu interleaves with or appends to the table."""
    if b"\n==" not in table:
        return table
    return b"\n".join(line for line in table.split(b"\n") if not NCU_MESSAGE.match(line))


def unique_column_names(columns: list[str]) -> list[str]:
    """Column names made unique (pandas refuses duplicates); repeats get a suffix and are ignored.
    Shared with the rocprof readers."""
    seen: dict[str, int] = {}
    unique = []
    for index, column in enumerate(columns):
        name = column or f"__unnamed_{index}"
        if name in seen:
            seen[name] += 1
            name = f"{name}__repeat_{seen[name]}"
        else:
            seen[name] = 0
        unique.append(name)
    return unique


def _is_placeholder(column: str) -> bool:
    return column.startswith("__unnamed_") or "__repeat_" in column


def _parse_table(path: Path, table: bytes, columns: list[str]) -> pd.DataFrame:
    """The table as strings, header applied, with spare columns for trailing commas."""
    names = unique_column_names(columns) + [f"__spare_{i}" for i in range(_SPARE_COLUMNS)]
    max_rows = limits.max_rows()
    try:
        with warnings.catch_warnings():
            # pandas only warns when a row has more fields than the names, dropping the rest.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.BytesIO(_without_ncu_messages(table)),
                encoding="utf-8",
                encoding_errors="replace",  # program output may hold any bytes
                header=None,
                skiprows=1,  # the header line, whose columns are given as names
                names=names,
                dtype=object,  # plain Python strings: faster .str methods than pandas' str dtype
                na_filter=False,
                index_col=False,
                skip_blank_lines=True,
                engine="c",
                nrows=max_rows + 1,  # one past the bound: enough to know the file exceeds it
            )
    except pd.errors.ParserWarning:
        raise ProfileError(path, "Nsight Compute CSV rows have more fields than the header") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, csv.Error, OverflowError) as exc:
        problem = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ProfileError(path, f"Nsight Compute CSV rows cannot be parsed ({problem})") from None
    if len(frame) > max_rows:
        raise limits.too_many_rows(path, "Nsight Compute CSV")
    spare = [c for c in names if c.startswith("__spare_")]
    if (frame[spare].notna() & (frame[spare] != "")).any().any():
        raise ProfileError(path, "Nsight Compute CSV rows have more fields than the header")
    frame = frame.drop(columns=spare)
    # Rows shorter than the header (metric rows lack the rule fields) leave NaN behind.
    for column in frame.columns:
        if frame[column].hasnans:
            frame[column] = frame[column].fillna("")
    return frame


def _stripped(column: pd.Series) -> pd.Series:
    """Whitespace-stripped strings, computed once per distinct value (columns repeat a lot)."""
    codes, uniques = pd.factorize(column, sort=False)
    stripped = np.array([str(u).strip() for u in uniques] + [""], dtype=object)
    return pd.Series(stripped[codes], index=column.index)  # code -1 (missing) picks the ""


def _numbers(text: pd.Series) -> pd.Series:
    """Text as float64, NaN where it is no number; thousands separators allowed."""
    numbers = pd.to_numeric(text, errors="coerce")  # plain numbers, the common case
    retry = numbers.isna()
    if retry.any():
        rest = text[retry].str.strip()
        # Only digit groups of three lose their commas: "1,2,3" stays text.
        # the pattern text, not the compiled object: pandas 3 rejects compiled patterns with flags
        grouped = rest.str.match(_GROUPED_NUMBER.pattern)
        if grouped.any():
            rest = rest.where(~grouped, rest.str.replace(",", "", regex=False))
            numbers = numbers.astype("float64")
            numbers[retry] = pd.to_numeric(rest, errors="coerce")
    return numbers.astype("float64")


def _kernel_ids(path: Path, frame: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows that belong to a kernel, and each row's kernel ID.

    Rows without an integer ID after the last kernel row are output that followed the
    table and are dropped; such rows anywhere else mean the table is damaged.
    """
    if frame.empty:
        raise ProfileError(path, "has an Nsight Compute CSV header but no kernel rows")
    ids = _numbers(frame["ID"])
    valid = (ids.notna() & (ids >= 0) & (ids < _MAX_ID)).to_numpy()
    valid = valid & (np.mod(np.where(valid, ids.to_numpy(), 0.0), 1) == 0)
    if not valid.any():
        raise ProfileError(
            path, "has an Nsight Compute CSV header but no row with a kernel ID (no kernel rows, or rows that cannot be parsed)"
        )
    last = int(np.flatnonzero(valid)[-1])
    inner_bad = np.flatnonzero(~valid[: last + 1])
    if inner_bad.size:
        row = int(inner_bad[0])
        cell = str(frame["ID"].iat[row])
        cell = cell if len(cell) <= 40 else cell[:40] + "..."
        raise ProfileError(path, f"Nsight Compute CSV data row {row + 1} has no kernel ID (ID is {cell!r})")
    return frame.iloc[: last + 1], ids.to_numpy()[: last + 1].astype("int64")


# ---------------------------------------------------------------- values


def _metric_values(long: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split (kernel, key, unit, text) rows into numeric rows (with ``value``) and string rows.

    Missing values (empty, n/a) are dropped; numbers may carry thousands separators.
    Non-finite numbers ("inf") stay text: no count or launch fact is infinite.
    """
    numbers = _numbers(long["text"])
    numeric = pd.Series(np.isfinite(numbers.to_numpy()), index=numbers.index)
    others = long[~numeric]
    text = others["text"].str.strip()
    strings = others.assign(text=text)[~text.str.lower().isin(_MISSING)]
    return long[numeric].assign(value=numbers[numeric]), strings


def _grouped_metrics(numeric: pd.DataFrame) -> dict[int, dict[str, tuple[float, str]]]:
    """{kernel: {key: (value, unit)}}; a key repeated within a kernel keeps its first value."""
    raw: dict[int, dict[str, tuple[float, str]]] = {}
    columns = (numeric[c].tolist() for c in ("kernel", "key", "value", "unit"))
    for kernel, key, value, unit in reversed(list(zip(*columns))):
        raw.setdefault(kernel, {})[key] = (value, unit)
    # Reversed insertion keeps first values but reverses the order; restore file order.
    return {kernel: dict(reversed(metrics.items())) for kernel, metrics in reversed(raw.items())}


def _grouped_strings(strings: pd.DataFrame) -> dict[int, dict[str, str]]:
    grouped: dict[int, dict[str, str]] = {}
    for kernel, key, text in zip(strings["kernel"].tolist(), strings["key"].tolist(), strings["text"].tolist()):
        grouped.setdefault(kernel, {}).setdefault(key, text)
    return grouped


# ---------------------------------------------------------------- details page


def _details_profile(path: Path, frame: pd.DataFrame) -> Profile:
    rows, kernel_ids = _kernel_ids(path, frame)
    empty = pd.Series("", index=rows.index, dtype=object)
    metric_name = _stripped(rows["Metric Name"])
    section = _stripped(rows["Section Name"]) if "Section Name" in rows else empty
    unit = _stripped(rows["Metric Unit"]) if "Metric Unit" in rows else empty
    # --metrics exports (and metric-named rows anywhere) keep the metric name; the rows of
    # the sections carry display labels, keyed "Section / Label" as the vocabulary expects.
    names = metric_name.unique()
    looks_like_metric = dict(zip(names, (bool(_METRIC_NAME.match(n)) for n in names)))
    by_metric_name = metric_name.map(looks_like_metric).astype(bool) | (section == COMMAND_LINE_SECTION) | (section == "")
    key = metric_name.where(by_metric_name, section + " / " + metric_name)
    is_metric = (metric_name != "").to_numpy()
    long = pd.DataFrame(
        {"kernel": kernel_ids, "key": key.to_numpy(), "unit": unit.to_numpy(), "text": rows["Metric Value"].to_numpy()}
    )[is_metric]
    numeric, strings = _metric_values(long)
    rules = _rule_results(rows, kernel_ids, section) if "Rule Name" in rows else {}
    return _build_profile(path, DETAILS, rows, kernel_ids, _grouped_metrics(numeric), _grouped_strings(strings), rules)


def _optional_float(text: str) -> float | None:
    text = text.strip()
    if _GROUPED_NUMBER.match(text):
        text = text.replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _rule_results(rows: pd.DataFrame, kernel_ids: np.ndarray, section: pd.Series) -> dict[int, list[RuleResult]]:
    """Rule rows (empty metric fields, a Rule Name) as RuleResults per kernel, in file order."""
    is_rule = (_stripped(rows["Rule Name"]) != "").to_numpy()
    rule_rows = rows[is_rule]

    def column(name: str) -> list[str]:
        return rule_rows[name].tolist() if name in rule_rows else [""] * len(rule_rows)

    results: dict[int, list[RuleResult]] = {}
    for kernel, section_name, name, kind, description, speedup_type, speedup in zip(
        kernel_ids[is_rule].tolist(),
        section[is_rule].tolist(),
        column("Rule Name"),
        column("Rule Type"),
        column("Rule Description"),
        column("Estimated Speedup Type"),
        column("Estimated Speedup"),
    ):
        name, kind, speedup_type = name.strip(), kind.strip(), speedup_type.strip()
        results.setdefault(kernel, []).append(
            RuleResult(
                rule_id=name,
                name=name,
                section=section_name or None,
                title=name,
                message=description.strip(),
                kind=_RULE_KINDS.get(kind.upper(), kind.lower() or "none"),
                speedup_type=speedup_type.lower() or None,
                estimated_speedup_pct=_optional_float(speedup),
            )
        )
    return results


# ---------------------------------------------------------------- raw page


def _raw_page_profile(path: Path, frame: pd.DataFrame) -> Profile:
    # The row after the header gives the units: its identity cells are empty.
    units: dict[str, str] = {}
    if not frame.empty and frame["ID"].iat[0].strip() == "":
        units = {column: cell.strip() for column, cell in frame.iloc[0].items()}
        frame = frame.iloc[1:]
    rows, kernel_ids = _kernel_ids(path, frame)
    metric_columns = [c for c in rows.columns if c not in IDENTITY_COLUMNS and not _is_placeholder(c)]
    values = rows[metric_columns].to_numpy(dtype=object)
    long = pd.DataFrame(
        {
            "kernel": np.repeat(kernel_ids, len(metric_columns)),
            "key": np.tile(np.array(metric_columns, dtype=object), len(rows)),
            "unit": np.tile(np.array([units.get(c, "") for c in metric_columns], dtype=object), len(rows)),
            "text": values.ravel(),
        }
    )
    numeric, strings = _metric_values(long)
    return _build_profile(path, RAW, rows, kernel_ids, _grouped_metrics(numeric), _grouped_strings(strings), {})


# ---------------------------------------------------------------- kernels and devices


def _dim3(text: str) -> tuple[int, int, int] | None:
    match = _DIM3.match(text.strip())
    return None if match is None else (int(match[1]), int(match[2]), int(match[3]))


def _launch_dims(raw: dict[str, tuple[float, str]], kind: str) -> tuple[int, int, int] | None:
    """Grid or block from launch__ metrics or the Launch Statistics rows.

    Only launch__{kind}_dim_{x,y,z} give the shape; launch__{kind}_size and the details
    page's total give the count alone, which is kept as (count, 1, 1).
    """
    def count(key: str, default: float | None = None) -> int | None:
        value = raw[key][0] if key in raw else default
        return int(value) if value is not None and value >= 0 and float(value).is_integer() else None

    if f"launch__{kind}_dim_x" in raw:
        dims = tuple(count(f"launch__{kind}_dim_{axis}", 1.0) for axis in "xyz")
        return None if None in dims else dims  # type: ignore[return-value]
    label = "Grid Size" if kind == "grid" else "Block Size"
    for key in (f"launch__{kind}_size", f"Launch Statistics / {label}"):
        if count(key) is not None:
            return count(key), 1, 1  # type: ignore[return-value]
    return None


def _optional_int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def _kernel(
    kernel_id: int,
    identity: dict[str, str],
    raw: dict[str, tuple[float, str]],
    strings: dict[str, str],
    rules: list[RuleResult],
) -> Kernel:
    def cell(column: str) -> str:
        return identity.get(column, "").strip()

    name = identity.get("Kernel Name", "")
    attributes: dict[str, object] = {k: v for k, v in strings.items() if not k.startswith("device__attribute_")}
    identity_attributes = (("Process ID", "process_id"), ("Host Name", "host"), ("Context", "context"), ("Kernel Time", "kernel_time"))
    for column, attribute in identity_attributes:
        if cell(column):
            attributes[attribute] = cell(column)
    return Kernel(
        id=kernel_id,
        name=name,
        function_name=function_base_name(name) if name.strip() else None,
        grid=_dim3(cell("Grid Size")) or _launch_dims(raw, "grid"),
        block=_dim3(cell("Block Size")) or _launch_dims(raw, "block"),
        device_id=_optional_int(cell("Device")) or 0,
        stream=_optional_int(cell("Stream")),
        process=cell("Process Name") or None,
        attributes=attributes,
        rule_results=rules,
    )


def _compute_capability(text: str) -> tuple[int, int] | None:
    match = _COMPUTE_CAPABILITY.match(text.strip())
    return None if match is None else (int(match[1]), int(match[2]))


def _device(identity: dict[str, str], raw: dict[str, tuple[float, str]], strings: dict[str, str]) -> Device:
    """The device of a kernel from what the CSV says; most fields need a raw page's device__ metrics."""

    def attribute(name: str) -> float | None:
        found = raw.get(f"device__attribute_{name}")
        return None if found is None else found[0]

    def in_base(name: str, default_factor: float) -> float | None:
        found = raw.get(f"device__attribute_{name}")
        if found is None:
            return None
        value, unit = found
        converted, base_unit = to_base(value, unit)
        return converted if base_unit in ("hz", "byte") else value * default_factor

    def whole(value: float | None) -> int | None:
        return None if value is None or not math.isfinite(value) else int(value)  # 1e308 Mbyte is inf bytes

    cc = _compute_capability(identity.get("CC", ""))
    major, minor = attribute("compute_capability_major"), attribute("compute_capability_minor")
    if cc is None and major is not None and minor is not None:
        cc = (int(major), int(minor))
    device_cell = identity.get("Device", "").strip()
    if "device__attribute_display_name" in strings:
        name = strings["device__attribute_display_name"]
    elif device_cell and not device_cell.isdigit():
        name = device_cell  # some exports name the device instead of numbering it
    else:
        name = f"NVIDIA GPU (CC {cc[0]}.{cc[1]})" if cc else "NVIDIA GPU"
    prefix = "device__attribute_"
    attributes: dict[str, object] = {k.removeprefix(prefix): v for k, (v, _) in raw.items() if k.startswith(prefix)}
    attributes.update({k.removeprefix(prefix): v for k, v in strings.items() if k.startswith(prefix)})
    return Device(
        name=name,
        vendor="nvidia",
        arch=f"sm_{cc[0]}{cc[1]}" if cc else None,
        compute_capability=cc,
        max_sm_clock_hz=in_base("max_gpu_frequency_khz", 1e3) or in_base("clock_rate", 1e3),
        memory_clock_hz=in_base("max_mem_frequency_khz", 1e3) or in_base("memory_clock_rate", 1e3),
        memory_bytes=whole(in_base("total_memory", 1.0)),
        memory_bus_width_bits=whole(attribute("global_memory_bus_width")),
        l2_bytes=whole(in_base("l2_cache_size", 1.0)),
        attributes=attributes,
    )


def _build_profile(
    path: Path,
    layout: str,
    rows: pd.DataFrame,
    kernel_ids: np.ndarray,
    raw: dict[int, dict[str, tuple[float, str]]],
    strings: dict[int, dict[str, str]],
    rules: dict[int, list[RuleResult]],
) -> Profile:
    identity_columns = [c for c in rows.columns if c in IDENTITY_COLUMNS]
    first_row = ~pd.Series(kernel_ids).duplicated(keep="first").to_numpy()
    kernels: list[Kernel] = []
    devices: dict[int, Device] = {}
    for kernel_id, cells in zip(kernel_ids[first_row].tolist(), rows.loc[first_row, identity_columns].to_dict("records")):
        kernel_raw, kernel_strings = raw.get(kernel_id, {}), strings.get(kernel_id, {})
        kernel = _kernel(kernel_id, cells, kernel_raw, kernel_strings, rules.get(kernel_id, []))
        kernels.append(kernel)
        if kernel.device_id not in devices:
            devices[kernel.device_id] = _device(cells, kernel_raw, kernel_strings)
    page = "details" if layout == DETAILS else "raw"
    return assemble(str(path), layout, devices[kernels[0].device_id], kernels, raw,
                    tool=f"Nsight Compute (ncu --csv, {page} page)", devices=devices)
