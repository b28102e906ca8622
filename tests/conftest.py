"""Fixtures shared by the test modules: where the real data lives, and scratch files."""

from __future__ import annotations

import itertools
import os
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


REQUIRE_TOOLCHAINS = os.environ.get("MICROBENCH_REQUIRE_TOOLCHAINS") == "1"


def toolchain_missing(reason: str) -> None:
    """Skip a test whose compiler is absent; fail instead where MICROBENCH_REQUIRE_TOOLCHAINS=1
    (.ci/run sets it: CI must compile everything)."""
    if REQUIRE_TOOLCHAINS:
        pytest.fail(f"{reason} (MICROBENCH_REQUIRE_TOOLCHAINS=1: every toolchain must be present)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def missing_toolchain() -> Callable[[str], None]:
    """toolchain_missing, for test modules (conftest is not importable from them)."""
    return toolchain_missing


@pytest.fixture(scope="session")
def nvcc() -> str:
    """An nvcc ($NVCC, PATH, /usr/local/cuda or the PyPI wheel of the `test` extra)."""
    from keet.errors import KeetError
    from microbench.runner import find_nvcc

    try:
        return find_nvcc(None)
    except KeetError as exc:
        toolchain_missing(str(exc))


# ---------------------------------------------------------------- headless Chromium (report tests)
REQUIRE_BROWSER = os.environ.get("KEET_REQUIRE_BROWSER") == "1"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-quic", "--no-first-run"]


def _install_chromium() -> str | None:
    """Debian's chromium, installed with apt-get where the tests run as root (CI and a fresh
    developer machine); None where that is not possible."""
    import shutil
    import subprocess

    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]):
        if subprocess.run(command, check=False, env=environment, capture_output=True, timeout=900).returncode != 0:
            return None
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of a headless-capable Chromium, installed by the test setup when missing; skips
    where it cannot be had, and fails instead where KEET_REQUIRE_BROWSER=1 (.ci/run sets it)."""
    path = _install_chromium()
    if path is None:
        reason = "no Chromium, and apt-get could not install the Debian package"
        if REQUIRE_BROWSER:
            pytest.fail(f"{reason} (KEET_REQUIRE_BROWSER=1)")
        pytest.skip(reason)
    return path
