"""Decompression and query bombs against keet's default bounds (issue 19; slow tier).

Each test builds a bomb that expands to more than 1 GB (compressed files of a few MB, an SQLite
file of a few KB) in tmp_path, runs `keet explain` on it as a user would, with TMPDIR pointed
at a fresh folder, and checks: exit status 2 with one line on stderr, under 30 s, and nothing
left in the temporary folder. The bounds are the defaults (docs/ingest.md, "Bounded
reading"), not lowered: these are the numbers a user gets.

Bombs are built from concatenated gzip/xz/bz2 members (every reader accepts them, as gzip,
xz and bzip2 do), so that writing one costs milliseconds rather than compressing 1 GB.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ncu_rep_framing import ncu_rep_block

pytestmark = pytest.mark.slow

GB = 10**9
CHUNK = 1 << 20
COMPRESSORS = {"gzip": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress}
NCU_REP_START = b"NVR\x00" + struct.pack("<I", 2) + b"\x08\x01"
DETAILS_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
                  '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')
DETAILS_ROW = '"0","1","app","host","k","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","","dram__bytes_read.sum","byte","4096"\n'


def bomb(path: Path, start: bytes, filler: bytes, compress, size: int = GB) -> Path:
    """``start`` then ``filler`` repeated to more than ``size`` bytes, as concatenated members."""
    chunk = filler * max(1, CHUNK // len(filler))
    member = compress(chunk)
    with path.open("wb") as handle:
        handle.write(compress(start))
        for _ in range(size // len(chunk) + 1):
            handle.write(member)
    return path


def explain_bomb(path: Path, tmp_path: Path) -> None:
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    began = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "keet.cli", "explain", str(path)], capture_output=True, text=True,
                            timeout=120, check=False, env={**os.environ, "TMPDIR": str(temp)})
    took = time.monotonic() - began
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("keet: error: ") and "Traceback" not in result.stderr
    assert took < 30, f"{took:.1f} s"
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_compressed_report_of_zeros(tmp_path, kind):
    path = bomb(tmp_path / f"zeros.ncu-rep.{kind}", NCU_REP_START, b"\x00", COMPRESSORS[kind])
    explain_bomb(path, tmp_path)


def test_compressed_report_whose_one_block_claims_a_terabyte(tmp_path):
    # The framing is valid until the payload: the copy must stop at the byte bound (512 MiB).
    path = bomb(tmp_path / "block.ncu-rep.xz", NCU_REP_START + ncu_rep_block(2**40), b"\x00", lzma.compress)
    explain_bomb(path, tmp_path)


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_compressed_csv(tmp_path, kind):
    path = bomb(tmp_path / f"rows.csv.{kind}", DETAILS_HEADER.encode(), DETAILS_ROW.encode(), COMPRESSORS[kind])
    explain_bomb(path, tmp_path)


def test_sqlite_view_of_a_gigabyte_of_rows(tmp_path):
    path = tmp_path / "cte.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE rocpd_info_agent (id, type, name)")
        db.execute("CREATE VIEW kernels AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 2000000) "
                   "SELECT x AS dispatch_id, printf('%.1000c', 'k') AS name, 0 AS agent_id, x AS start, x + 1 AS end FROM c")
    db.close()
    assert path.stat().st_size < 100_000
    explain_bomb(path, tmp_path)


def test_sqlite_view_that_never_returns_a_row(tmp_path):
    path = tmp_path / "spin.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE rocpd_info_agent (id, type, name)")
        db.execute("CREATE VIEW kernels AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                   "SELECT count(*) AS dispatch_id, 'k' AS name FROM c")
    db.close()
    explain_bomb(path, tmp_path)
