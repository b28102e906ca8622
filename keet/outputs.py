"""Safe output files: never write over an input, through a link or onto a device, and never
leave half a file behind.

Every command that writes a file the user named (keet report -o, keet optimize's run folder,
and any other writer that adopts this module) checks the path first with
:func:`check_output_path`, builds the whole content in memory, and writes it with
:func:`atomic_write_bytes` / :func:`atomic_write_text`: a temporary file beside the target,
renamed over it only once complete, and removed on every failure (a full disk, a file-size
limit, an interrupt), so the target is either the old file or the new one.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from keet.errors import KeetError

_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _same(out: Path, source: Path) -> bool:
    """Whether ``out`` names the file ``source`` (same inode, or same path once links are resolved)."""
    try:
        if os.path.samefile(out, source):
            return True
    except OSError:  # either does not exist: compare the paths they would resolve to
        pass
    return os.path.realpath(out) == os.path.realpath(source)


def check_output_path(out: str | Path, inputs: Iterable[str | Path] = ()) -> Path:
    """``out`` as a Path, or KeetError (one line) when writing it would destroy something:
    it is one of ``inputs`` (same file, however named), or it exists and is not a regular
    file (a symbolic link, directory, device, FIFO or socket: replacing it with a regular file
    would remove what it was, e.g. /dev/null for the whole system)."""
    out = Path(out)
    try:
        mode = os.lstat(out).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise KeetError(f"{out}: cannot check the output path: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise KeetError(f"{out}: the output exists and is {_kind(mode)}; keet writes only new or regular files")
    for source in inputs:
        if _same(out, Path(source)):
            raise KeetError(f"{out}: is an input of this command ({source}); keet never writes over its inputs: choose another output path")
    return out


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def atomic_write_bytes(path: str | Path, data: bytes, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` whole or not at all (see the module docstring).

    mode: the file's permissions (default: what a new file gets, 0o666 less the umask; the
    temporary file is private until then). Errors become KeetError naming the path."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise KeetError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())  # a full disk may only say so here
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:  # ENOSPC, EFBIG (file-size limit; Python ignores SIGXFSZ), EACCES...
        _remove_quietly(tmp)
        raise KeetError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:  # an interrupt: no temporary file left behind either
        _remove_quietly(tmp)
        raise
    return path


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8", mode: int | None = None) -> Path:
    """:func:`atomic_write_bytes` for text."""
    return atomic_write_bytes(path, text.encode(encoding), mode)
