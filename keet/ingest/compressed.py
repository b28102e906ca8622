"""Transparent, bounded reading of profiles, gzip/xz/bz2-compressed or not (CI artifacts are
often compressed).

Every read goes through :class:`Content`, which refuses to yield more than
``limits.max_bytes()`` bytes: a 1 MB xz file can decompress to gigabytes, and must fail after
reading the bound, not after filling the memory or the temporary folder. Files are checked
to be regular files before they are opened (a FIFO blocks the open itself).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from keet.errors import ProfileError
from keet.ingest import limits

_OPENERS = {b"\x1f\x8b": gzip.open, b"\xfd7zXZ\x00": lzma.open, b"BZh": bz2.open}
_CORRUPT = (EOFError, OSError, lzma.LZMAError, zlib.error, ValueError)
_CHUNK = 1 << 20
_COMPRESSION_SUFFIXES = (".gz", ".xz", ".bz2")


def opener_for(head: bytes):
    """The stream opener for compressed bytes, or None for plain content."""
    return next((opener for magic, opener in _OPENERS.items() if head.startswith(magic)), None)


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of the (decompressed) content."""
    limits.regular_file(path)
    with Path(path).open("rb") as handle:
        head = handle.read(size)
        opener = opener_for(head)
        if opener is None:
            return head
        handle.seek(0)
        try:
            with opener(handle, "rb") as stream:
                return stream.read(size)
        except _CORRUPT:
            return b""  # undecodable: no reader will recognise it


class Content:
    """The (decompressed) content of one profile file, read forward, never past the byte bound.

    With a ``sink``, everything read (or skipped) is also written there: a reader can check
    the content's structure while it is being decompressed to a temporary copy, and stop at
    the first bad block instead of after decompressing everything.
    """

    def __init__(self, path: Path, stream: BinaryIO, compressed: bool) -> None:
        self.path = path
        self.compressed = compressed
        self.position = 0
        self.sink: BinaryIO | None = None
        self._stream = stream
        self._limit = limits.max_bytes()
        self._size: int | None = None  # of a plain file, once skip needs it

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all that is left with -1); fewer only at the end."""
        wanted = self._limit + 1 - self.position if size < 0 else min(size, self._limit + 1 - self.position)
        try:
            data = self._stream.read(wanted)
        except _CORRUPT as exc:
            raise ProfileError(self.path, f"compressed file is truncated or corrupt ({exc})") from None
        self.position += len(data)
        if self.position > self._limit:
            raise limits.over_limit(self.path, "KEET_MAX_DECOMPRESSED_BYTES",
                                    "decompresses to too much data" if self.compressed else "is too large")
        if self.sink is not None and data:
            try:
                self.sink.write(data)
            except OSError as exc:
                raise ProfileError(self.path, f"cannot be decompressed into the temporary folder {tempfile.gettempdir()} "
                                              f"({exc.strerror or exc})") from None
        return data

    def skip(self, size: int) -> int:
        """Move ``size`` bytes forward; the bytes actually passed (fewer at the end)."""
        if not self.compressed and self.sink is None:
            # A plain file's size is within the bound (limits.regular_file): seek, read nothing.
            if self._size is None:
                self._size = os.fstat(self._stream.fileno()).st_size
            target = min(self.position + size, self._size)
            self._stream.seek(target)
            passed, self.position = target - self.position, target
            return max(passed, 0)
        passed = 0
        while passed < size:
            data = self.read(min(_CHUNK, size - passed))
            if not data:
                break
            passed += len(data)
        return passed

    def at_end(self) -> bool:
        """Whether nothing is left (reads, and so copies, one more byte when something is)."""
        return not self.read(1)


@contextmanager
def open_content(path: Path) -> Iterator[Content]:
    """The file's content, decompressed when it is gzip/xz/bz2; only regular files are opened."""
    path = Path(path)
    limits.regular_file(path)
    with path.open("rb") as handle:
        opener = opener_for(handle.read(8))
        handle.seek(0)
        if opener is None:
            yield Content(path, handle, compressed=False)
            return
        try:
            stream = opener(handle, "rb")
        except _CORRUPT as exc:
            raise ProfileError(path, f"compressed file is truncated or corrupt ({exc})") from None
        with stream:
            yield Content(path, stream, compressed=True)


def read_all(path: Path) -> bytes:
    """The whole (decompressed) content, at most ``limits.max_bytes()`` of it."""
    with open_content(path) as content:
        return content.read()


def _copy_suffix(path: Path) -> str:
    name = path.name
    for suffix in _COMPRESSION_SUFFIXES:
        name = name.removesuffix(suffix)
    return Path(name).suffix or ".profile"


def plain_copy(path: Path, walk: Callable[[Content], None] | None = None) -> Path:
    """The path of an uncompressed version: ``path`` itself, or a temporary copy the caller removes.

    ``walk`` (a structure check that raises ProfileError) reads the content while it is being
    copied, so a bad file stops the copy at the point it goes wrong. The copy is removed on
    every way out of here that does not return it, Ctrl-C included.
    """
    path = Path(path)
    with open_content(path) as content:
        if not content.compressed:
            if walk is not None:
                walk(content)
            return path
        fd, tmp = tempfile.mkstemp(prefix="keet-", suffix=_copy_suffix(path))
        try:
            with os.fdopen(fd, "wb") as out:
                content.sink = out
                if walk is not None:
                    walk(content)
                while content.read(_CHUNK):
                    pass
        except BaseException:
            os.unlink(tmp)
            raise
    return Path(tmp)
