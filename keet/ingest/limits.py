"""Bounds on what keet reads from one profile, so that a hostile file fails fast.

A 1 MB compressed file can hold gigabytes, a FIFO never ends, a tiny SQLite database can
define a view that never stops producing rows. Every reader reads through these bounds; each
has a default large enough for real profiles (the largest in profiles/ decompresses to 47 MB)
and an environment variable to raise it (docs/ingest.md, "Bounded reading").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from keet.errors import KeetError, ProfileError

# name -> (default, what it bounds, as the error message says it)
_LIMITS = {
    "KEET_MAX_DECOMPRESSED_BYTES": (512 * 1024**2, "bytes of content (decompressed or not)"),
    "KEET_MAX_ROWS": (1_000_000, "rows (table rows, database rows, report blocks)"),
    "KEET_MAX_SQLITE_STEPS": (200_000_000, "SQLite virtual-machine steps"),
}
# No rocprof database value (a kernel name, an agent's JSON) comes near this; a view that
# builds a gigabyte string in one step fails at once instead.
SQLITE_MAX_VALUE_BYTES = 1024**2


def _limit(name: str) -> int:
    default = _LIMITS[name][0]
    text = os.environ.get(name, "").strip().replace("_", "")
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise KeetError(f"{name}={os.environ[name]!r} is not a positive whole number")
    return int(text)


def max_bytes() -> int:
    """Most bytes of one profile's content read or decompressed (KEET_MAX_DECOMPRESSED_BYTES)."""
    return _limit("KEET_MAX_DECOMPRESSED_BYTES")


def max_rows() -> int:
    """Most rows of one table, database query or report framing (KEET_MAX_ROWS)."""
    return _limit("KEET_MAX_ROWS")


def max_sqlite_steps() -> int:
    """Most SQLite virtual-machine instructions spent on one database (KEET_MAX_SQLITE_STEPS)."""
    return _limit("KEET_MAX_SQLITE_STEPS")


def over_limit(path: str | Path, name: str, problem: str) -> ProfileError:
    """The error for a file beyond one bound, saying how to raise it."""
    return ProfileError(path, f"{problem}: more than the {_limit(name):,} {_LIMITS[name][1]} keet reads "
                              f"(set {name} to read more)")


def too_many_rows(path: str | Path, what: str) -> ProfileError:
    return over_limit(path, "KEET_MAX_ROWS", f"{what} has too many rows")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def regular_file(path: str | Path) -> int:
    """The size of ``path``, which must be a regular file (after symlinks).

    Checked with stat before any open: opening a FIFO blocks until a writer comes, a device
    such as /dev/zero never ends. Raises ProfileError for anything else, and for a file whose
    size alone exceeds the byte bound.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ProfileError(path, "no such file") from None
    except OSError as exc:
        raise ProfileError(path, f"cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise ProfileError(path, f"is {_kind(info.st_mode)}, not a profile file")
    if info.st_size > max_bytes():
        raise over_limit(path, "KEET_MAX_DECOMPRESSED_BYTES", f"is {info.st_size:,} bytes")
    return info.st_size
