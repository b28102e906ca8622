"""Ingestion: one reader per profiler format, all returning the same Profile.

Readers register themselves with :func:`register`; :func:`load_profile` picks the one
whose ``sniff`` recognises the file's content (never its name).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Protocol

from keet.errors import ProfileError
from keet.ingest.compressed import read_head
from keet.profile import Profile

SNIFF_BYTES = 64 * 1024


class Reader(Protocol):
    id: str
    description: str

    def sniff(self, head: bytes) -> bool:
        """True when the first bytes of a file are this reader's format."""

    def read(self, path: Path, metrics: Collection[str] | None = None) -> Profile:
        """Parse the file; raise ProfileError for anything wrong with it. With `metrics`,
        a reader may skip other raw metrics (launch and device attributes are always read)."""


READERS: list[Reader] = []


def register(reader_class: type) -> type:
    READERS.append(reader_class())
    return reader_class


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
        # Some profilers write a folder (a rocprof-compute workload): readers that read one say so.
        for reader in READERS:
            sniff_directory = getattr(reader, "sniff_directory", None)
            if sniff_directory is not None and sniff_directory(path):
                return reader
    head = _head(path)
    for reader in READERS:
        if reader.sniff(head):
            return reader
    raise ProfileError(path, "is not a profile format keet reads (" + ", ".join(r.id for r in READERS) + ")")


def load_profile(path: str | Path, metrics: Collection[str] | None = None) -> Profile:
    """Read any supported profile into a Profile.

    `metrics` (raw vendor names) lets a reader skip the others where that saves time (the
    .ncu-rep reader does): the model needs about 100 of an H100 full set's 2,200.
    """
    path = Path(path)
    return detect(path).read(path, metrics)


# Readers register on import; keep these imports after READERS exists.
from keet.ingest import (
    ncu_csv,  # noqa: F401
    ncu_rep,  # noqa: F401
    rocprof_compute,  # noqa: F401
    rocprof_csv,  # noqa: F401
    rocprof_db,  # noqa: F401
    rocprof_json,  # noqa: F401
)

__all__ = ["READERS", "Reader", "detect", "load_profile", "register"]
