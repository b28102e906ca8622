"""Fixtures shared by the test modules: where the real data lives, and scratch files."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
NCU_DATA = DATA / "ncu"


@pytest.fixture(scope="session")
def ncu_data() -> Path:
    """tests/data/ncu: real Nsight Compute exports (see tests/data/SOURCES.md)."""
    return NCU_DATA


@pytest.fixture(scope="session")
def scratch_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[bytes | str, str], Path]:
    """Write bytes (or UTF-8 text) to a fresh file and return its path.

    Session-scoped so hypothesis tests, which must not use function-scoped fixtures, can
    write many files; every call gets a new name.
    """
    directory = tmp_path_factory.mktemp("scratch")
    counter = itertools.count()

    def write(content: bytes | str, suffix: str = ".csv") -> Path:
        path = directory / f"file{next(counter)}{suffix}"
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    return write
