"""Ingestion: one reader per profiler format, all returning the same Profile.

:data:`FORMATS` lists the formats in the order detection tries them: each with the test that
recognises its content (never its name; keet.ingest.sniff, standard library only) and the
module of its reader. A reader module is imported when its format matches a file (or when
:func:`reader` asks for it), not before: the readers load pandas, and `import keet` or a
command that reads no profile must not pay for that (docs/benchmarks.md). Reader modules
register their reader class with :func:`register` when imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from keet.errors import ProfileError
from keet.ingest import sniff
from keet.ingest.compressed import read_head
from keet.ingest.sniff import SNIFF_BYTES

if TYPE_CHECKING:
    from keet.profile import Profile, SourceRequest


class Reader(Protocol):
    id: str
    description: str

    def sniff(self, head: bytes) -> bool:
        """True when the first bytes of a file are this reader's format."""

    def read(self, path: Path, metrics: Collection[str] | None = None) -> Profile:
        """Parse the file; raise ProfileError for anything wrong with it. With `metrics`,
        a reader may skip other raw metrics (launch and device attributes are always read)."""


@dataclass(frozen=True)
class Format:
    """A profile format keet reads: how to recognise it, and which module reads it."""

    id: str  # the reader's id (Profile.format of what it reads)
    module: str  # imported on the first match; it registers the reader with this id
    sniff: Callable[[bytes], bool]  # on the first SNIFF_BYTES of the (decompressed) file
    sniff_directory: Callable[[Path], bool] | None = None  # for formats that are a folder


# In the order detection tries them: the details-page test also claims ncu output whose table
# lies beyond the sniffed bytes, so it comes before the rocprof CSV tests.
FORMATS: tuple[Format, ...] = (
    Format("ncu-csv-details", "keet.ingest.ncu_csv", sniff.ncu_csv_details),
    Format("ncu-csv-raw", "keet.ingest.ncu_csv", sniff.ncu_csv_raw),
    Format("ncu-rep", "keet.ingest.ncu_rep", sniff.ncu_rep),
    Format("rocprof-compute", "keet.ingest.rocprof_compute", sniff.rocprof_compute, sniff.rocprof_compute_directory),
    Format("rocprof-csv", "keet.ingest.rocprof_csv", sniff.rocprof_csv),
    Format("rocprof-db", "keet.ingest.rocprof_db", sniff.rocprof_db),
    Format("rocprofv3-json", "keet.ingest.rocprof_json", sniff.rocprofv3_json),
)

_REGISTERED: dict[str, Reader] = {}  # reader id -> instance, filled as reader modules load


def register(reader_class: type) -> type:
    """Class decorator of a reader: make it the reader of its format's id.

    A reader that FORMATS does not list (a plug-in) is tried after them, with its own sniff.
    """
    _REGISTERED[reader_class.id] = reader_class()
    return reader_class


def reader(format_id: str) -> Reader:
    """The reader of one format, importing its module on first use."""
    found = next((f for f in FORMATS if f.id == format_id), None)
    if found is None:
        if format_id in _REGISTERED:
            return _REGISTERED[format_id]
        raise KeyError(f"no reader for format {format_id!r} (known: {', '.join(f.id for f in FORMATS)})")
    if format_id not in _REGISTERED:
        importlib.import_module(found.module)
    if format_id not in _REGISTERED:  # a FORMATS entry whose module registers another id
        raise ImportError(f"{found.module} did not register a reader with id {format_id!r}")
    return _REGISTERED[format_id]


def readers() -> list[Reader]:
    """Every reader, in detection order (imports all reader modules)."""
    listed = [reader(f.id) for f in FORMATS]
    return listed + [r for r in _REGISTERED.values() if r not in listed]


def _plugins() -> list[Reader]:
    known = {f.id for f in FORMATS}
    return [r for r in _REGISTERED.values() if r.id not in known]


def _head(path: Path) -> bytes:
    if not path.exists():
        raise ProfileError(path, "no such file")
    if path.is_dir():
        raise ProfileError(path, "is a directory, not a profile file")
    try:
        head = read_head(path, SNIFF_BYTES)
    except OSError as exc:
        raise ProfileError(path, f"cannot be read ({exc.strerror or exc})") from None
    if not head:
        raise ProfileError(path, "is empty" if path.stat().st_size == 0 else "is compressed but holds nothing readable")
    return head


def detect(path: str | Path) -> Reader:
    """The reader for this file, chosen from its content (or for a folder a reader recognises)."""
    path = Path(path)
    if path.is_dir():
        # Some profilers write a folder (a rocprof-compute workload): formats that are one say so.
        for candidate in FORMATS:
            if candidate.sniff_directory is not None and candidate.sniff_directory(path):
                return reader(candidate.id)
        for plugin in _plugins():
            sniff_directory = getattr(plugin, "sniff_directory", None)
            if sniff_directory is not None and sniff_directory(path):
                return plugin
    head = _head(path)
    for candidate in FORMATS:
        if candidate.sniff(head):
            return reader(candidate.id)
    for plugin in _plugins():
        if plugin.sniff(head):
            return plugin
    known = [f.id for f in FORMATS] + [r.id for r in _plugins()]
    raise ProfileError(path, "is not a profile format keet reads (" + ", ".join(known) + ")")


def load_profile(path: str | Path, metrics: Collection[str] | None = None, read_ahead: SourceRequest | None = None,
                 launches: Collection[int] | None = None) -> Profile:
    """Read any supported profile into a Profile.

    `metrics` (raw vendor names) lets a reader skip the others where that saves time (the
    .ncu-rep reader does): the model needs about 100 of an H100 full set's 2,200.
    `read_ahead`: per-instruction counters the caller will read of every kernel, read with the
    metrics by a reader that says it can (``reads_ahead``; the .ncu-rep reader: in one pass per
    action its workers stay small); other readers read them when asked.
    `launches` (kernel ids: places among the profile's launches): a reader that says it can
    (``reads_launches``; the .ncu-rep reader, where each launch costs ~60 ms to decode) reads
    those alone, keeping their ids; other readers read every launch.
    """
    path = Path(path)
    found = detect(path)
    options: dict[str, object] = {}
    if read_ahead is not None and getattr(found, "reads_ahead", False):
        options["read_ahead"] = read_ahead
    if launches is not None and getattr(found, "reads_launches", False):
        options["launches"] = launches
    return found.read(path, metrics, **options)


__all__ = ["FORMATS", "SNIFF_BYTES", "Format", "Reader", "detect", "load_profile", "reader", "readers", "register"]
