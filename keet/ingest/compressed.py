"""Transparent reading of gzip/xz/bz2-compressed profiles (CI artifacts are often compressed)."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
import tempfile
import zlib
from pathlib import Path

from keet.errors import ProfileError

_OPENERS = {b"\x1f\x8b": gzip.open, b"\xfd7zXZ\x00": lzma.open, b"BZh": bz2.open}
_CORRUPT = (EOFError, OSError, lzma.LZMAError, zlib.error, ValueError)


def opener_for(head: bytes):
    """The stream opener for compressed bytes, or None for plain content."""
    return next((opener for magic, opener in _OPENERS.items() if head.startswith(magic)), None)


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of the (decompressed) content."""
    with path.open("rb") as handle:
        head = handle.read(size)
    opener = opener_for(head)
    if opener is None:
        return head
    try:
        with opener(path, "rb") as stream:
            return stream.read(size)
    except _CORRUPT:
        return b""  # undecodable: no reader will recognise it


def read_all(path: Path) -> bytes:
    """The whole (decompressed) content."""
    data = path.read_bytes()
    opener = opener_for(data[:8])
    if opener is None:
        return data
    try:
        with opener(path, "rb") as stream:
            return stream.read()
    except _CORRUPT as exc:
        raise ProfileError(path, f"compressed file is truncated or corrupt ({exc})") from None


def plain_copy(path: Path) -> Path:
    """The path of an uncompressed version: ``path`` itself, or a temporary copy the caller removes."""
    with path.open("rb") as handle:
        opener = opener_for(handle.read(8))
    if opener is None:
        return path
    fd, tmp = tempfile.mkstemp(suffix=path.suffix or ".profile")
    try:
        with os.fdopen(fd, "wb") as out, opener(path, "rb") as stream:
            shutil.copyfileobj(stream, out)
    except _CORRUPT as exc:
        os.unlink(tmp)
        raise ProfileError(path, f"compressed file is truncated or corrupt ({exc})") from None
    return Path(tmp)
