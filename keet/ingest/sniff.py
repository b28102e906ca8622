"""Which profile format a file is, from its first bytes (a folder, from the files in it).

Every reader's recognition lives here, apart from the reader: keet.ingest.detect runs these
tests and imports only the reader whose format matched (the readers load pandas and numpy;
this module needs the standard library only). The readers use the same functions to find
their tables, so recognising and reading cannot disagree.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from keet.ingest.compressed import read_head

SNIFF_BYTES = 64 * 1024  # what detection reads of a file (decompressed)

# ---------------------------------------------------------------- Nsight Compute report

NCU_REP_MAGIC = b"NVR\x00"


def ncu_rep(head: bytes) -> bool:
    return head.startswith(NCU_REP_MAGIC)


# ---------------------------------------------------------------- Nsight Compute CSV

DETAILS = "ncu-csv-details"
RAW = "ncu-csv-raw"

# Columns that say which launch a row belongs to (present in any subset, by ncu version).
IDENTITY_COLUMNS = frozenset(
    {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream",
     "Block Size", "Grid Size", "Device", "CC"}
)
# A header line starts with the ID and Process ID columns, quoted (as ncu writes them) or not.
_HEADER_START = re.compile(rb'^[ \t]*"?ID"?[ \t]*,[ \t]*"?Process ID"?[ \t]*,', re.MULTILINE)
NCU_MESSAGE = re.compile(rb"^==[A-Z]+==")  # ==PROF==, ==WARNING==, ==ERROR==


@dataclass(frozen=True)
class NcuCsvHeader:
    offset: int  # where the header line starts in the file (after any BOM)
    columns: list[str]
    layout: str  # DETAILS or RAW


def _layout(columns: list[str]) -> str | None:
    """Which page a header belongs to, or None when it is no ncu CSV header we read."""
    if not columns or columns[0] != "ID" or "Kernel Name" not in columns:
        return None
    if "Metric Name" in columns and "Metric Value" in columns:
        return DETAILS
    if "Metric Name" in columns or "Metric Value" in columns:
        return None  # a summary page (Minimum/Maximum/Average), not one value per launch
    if any(c and c not in IDENTITY_COLUMNS for c in columns):
        return RAW
    return None


def find_ncu_csv_header(data: bytes) -> NcuCsvHeader | None:
    """The first line that is an ncu CSV header (the line may be cut off at the data's end)."""
    for match in _HEADER_START.finditer(data):
        end = data.find(b"\n", match.start())
        line = data[match.start() : end if end >= 0 else len(data)].rstrip(b"\r")
        try:
            columns = [c.strip() for c in next(csv.reader([line.decode("utf-8", errors="replace")]), [])]
        except csv.Error:
            continue
        layout = _layout(columns)
        if layout is not None:
            return NcuCsvHeader(match.start(), columns, layout)
    return None


def utf8(data: bytes) -> bytes:
    """The bytes as UTF-8 without a byte-order mark.

    ncu writes UTF-8; a UTF-16 file with a BOM is what a Windows shell redirect makes of it.
    Undecodable bytes (program output) are replaced later, never fatal.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace").encode("utf-8")
    return data.removeprefix(b"\xef\xbb\xbf")


def has_ncu_messages(data: bytes) -> bool:
    return any(NCU_MESSAGE.match(line) for line in data.split(b"\n", 200)[:200])


def ncu_csv_details(head: bytes) -> bool:
    head = utf8(head)
    header = find_ncu_csv_header(head)
    if header is not None:
        return header.layout == DETAILS
    # ncu output whose table starts beyond the sniffed bytes (long program output), or
    # that has none at all: claim it, so read() finds the table or says why there is none.
    return has_ncu_messages(head)


def ncu_csv_raw(head: bytes) -> bool:
    header = find_ncu_csv_header(utf8(head))
    return header is not None and header.layout == RAW


# ---------------------------------------------------------------- rocprof CSV tables


def split_header(line: bytes) -> list[str]:
    """The cells of one CSV header line (quoted or not), stripped; [] when it is no CSV line."""
    try:
        text = line.decode("utf-8", errors="replace").rstrip("\r\n")
        return [cell.strip() for cell in next(csv.reader([text]), [])]
    except csv.Error:
        return []


def find_header(data: bytes, accepts: Callable[[list[str]], bool], limit: int = 400) -> tuple[int, list[str]] | None:
    """(offset, columns) of the first line, among the first ``limit``, whose cells ``accepts``.

    Program output may precede the table (rocprof prints to the same stream when its output
    is captured), so the header is searched for rather than assumed on line 1.
    """
    offset = 0
    for _ in range(limit):
        end = data.find(b"\n", offset)
        line = data[offset : end if end >= 0 else len(data)]
        columns = split_header(line) if b"," in line else []
        if columns and accepts(columns):
            return offset, columns
        if end < 0:
            return None
        offset = end + 1
    return None


def classify_header(columns: list[str]) -> str | None:
    """The kind of rocprof table a header line starts, or None.

    Kinds: v1 (rocprof results.csv), stats (results.stats.csv, rocprofv3 kernel_stats.csv),
    v3-trace (kernel_trace.csv), v3-counter (counter_collection.csv), agent-info, v2
    (rocprofv2 file plugin, and rocprof-compute per-pass files that carry Queue_ID/PID),
    pmc-perf (rocprof-compute's merged wide table), pmc-long (its rocpd long form),
    kernel-top, sysinfo, roofline.
    """
    lower = {c.strip().lower() for c in columns}
    if "kernelname" in lower and ("index" in lower or "gpu-id" in lower):
        return "v1"
    if {"name", "calls", "totaldurationns"} <= lower:
        return "stats"
    if {"kernel_name", "count", "sum(ns)"} <= lower:
        return "kernel-top"
    if {"counter_name", "counter_value", "kernel_name"} <= lower:
        return "v3-counter" if "agent_id" in lower else "pmc-long"
    if {"kernel_name", "dispatch_id", "agent_id"} <= lower:
        return "v3-trace"
    if {"node_id", "agent_type"} <= lower:
        return "agent-info"
    if {"workload_name", "gpu_arch"} <= lower or {"workload_name", "gpu_model"} <= lower or {"workload_name", "gpu_soc"} <= lower:
        return "sysinfo"
    if {"device", "hbmbw"} <= lower:
        return "roofline"
    if {"kernel_name", "dispatch_id", "gpu_id"} <= lower:
        return "v2" if {"queue_id", "pid"} <= lower else "pmc-perf"
    return None


def sniff_kind(head: bytes) -> str | None:
    """The kind of the first rocprof table header in these bytes (after any program output)."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        head = head.decode("utf-16", errors="replace").encode("utf-8")
    head = head.removeprefix(b"\xef\xbb\xbf")
    if b"\x00" in head[:4096]:
        return None  # binary (SQLite, .ncu-rep)
    found = find_header(head, lambda columns: classify_header(columns) is not None, limit=200)
    return None if found is None else classify_header(found[1])


# The table kinds each rocprof CSV reader reads.
ROCPROF_CSV_KINDS = frozenset({"v1", "stats", "v3-trace", "v3-counter", "agent-info", "v2"})
ROCPROF_COMPUTE_KINDS = frozenset({"pmc-perf", "pmc-long", "kernel-top", "sysinfo", "roofline"})


def rocprof_csv(head: bytes) -> bool:
    return sniff_kind(head) in ROCPROF_CSV_KINDS


def rocprof_compute(head: bytes) -> bool:
    return sniff_kind(head) in ROCPROF_COMPUTE_KINDS


def file_kind(path: Path) -> str | None:
    """The rocprof table kind of a file's first bytes; None for a missing or unreadable file."""
    if not path.is_file():
        return None
    try:
        return sniff_kind(read_head(path, SNIFF_BYTES))
    except OSError:
        return None


def _is_workload(path: Path) -> bool:
    return any(file_kind(path / name) is not None for name in ("pmc_perf.csv", "sysinfo.csv", "timestamps.csv")) or any(
        file_kind(p) is not None for p in sorted(path.glob("pmc_perf_*.csv"))
    )


def workload_folder(path: Path) -> Path | None:
    """The rocprof-compute workload folder at ``path``, or the only one directly below it.

    rocprof-compute writes ``workloads/<name>/<GPU>/``; ``workloads/<name>`` with a single
    GPU folder is as unambiguous as the GPU folder itself.
    """
    if _is_workload(path):
        return path
    try:
        children = [child for child in path.iterdir() if child.is_dir()]
    except OSError:
        return None
    found = [child for child in children if _is_workload(child)]
    return found[0] if len(found) == 1 else None


def rocprof_compute_directory(path: Path) -> bool:
    return workload_folder(path) is not None


# ---------------------------------------------------------------- rocprof databases and JSON

SQLITE_MAGIC = b"SQLite format 3\x00"
ROCPROF_SDK_TOOL_KEY = b'"rocprofiler-sdk-tool"'


def rocprof_db(head: bytes) -> bool:
    return head.startswith(SQLITE_MAGIC)


def rocprofv3_json(head: bytes) -> bool:
    return head.lstrip()[:1] == b"{" and ROCPROF_SDK_TOOL_KEY in head[:4096]
