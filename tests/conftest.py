"""Fixtures shared by the test modules: where the real data lives, and scratch files."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Bytecode caches on, for this run and the commands it starts: the suite imports keet in two
# workers and ~120 command-line subprocesses, and where the environment says not to write them
# (PYTHONDONTWRITEBYTECODE, as some images set) each compiles every module again: the default
# tier took 171 s on 2 cores that way, 153 s with caches (docs/benchmarks.md).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

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
    from keet.toolchain import find_nvcc

    try:
        return find_nvcc(None)
    except KeetError as exc:
        toolchain_missing(str(exc))


# ---------------------------------------------------------------- headless Chromium (report tests)
REQUIRE_BROWSER = os.environ.get("KEET_REQUIRE_BROWSER") == "1"


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of Debian's headless Chromium. Tests install nothing: .ci/install-system-packages
    does (the README's full test command runs it). Skips where it is missing, and fails
    instead where KEET_REQUIRE_BROWSER=1 (.ci/run sets it)."""
    import shutil

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        reason = "no Chromium on PATH (bash .ci/install-system-packages installs Debian's)"
        if REQUIRE_BROWSER:
            pytest.fail(f"{reason} (KEET_REQUIRE_BROWSER=1)")
        pytest.skip(reason)
    return path


# ---------------------------------------------------------------- test tiers (markers in pyproject.toml)
# A test that uses one of these fixtures belongs to the tier named beside it, and must say so
# with the marker: the default run leaves those tiers out, so an unmarked compile or browser
# test would make it slow, or fail on a machine without the system packages.
TIER_OF_FIXTURE = {"nvcc": "toolchain", "missing_toolchain": "toolchain", "chromium": "browser"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects anything: every collected test is checked
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = sorted({f"{item.nodeid.split('[')[0]} uses the {fixture} fixture: mark it @pytest.mark.{tier}"
                       for item in items for fixture, tier in TIER_OF_FIXTURE.items()
                       if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(tier) is None})
    if unmarked:
        raise pytest.UsageError("tests outside their tier:\n  " + "\n  ".join(unmarked))


def pytest_report_header(config: pytest.Config) -> str:
    expression = config.getoption("markexpr")
    selected = f"-m {expression!r}" if expression else "every tier (-m '')"
    return f"tiers: {selected}; markers slow, toolchain, browser, llm_local (pyproject.toml)"


# ---------------------------------------------------------------- bubblewrap (keet.sandbox)
REQUIRE_SANDBOX = os.environ.get("KEET_REQUIRE_SANDBOX") == "1"


@pytest.fixture(scope="session")
def sandbox_required() -> None:
    """Skip a test that runs code in keet's bubblewrap sandbox where bwrap is missing or cannot
    create namespaces; fail instead where KEET_REQUIRE_SANDBOX=1 (CI must test the sandbox)."""
    from keet.sandbox import sandbox_problem

    problem = sandbox_problem()
    if problem:
        if REQUIRE_SANDBOX:
            pytest.fail(f"{problem} (KEET_REQUIRE_SANDBOX=1: the sandbox must be available)")
        pytest.skip(f"no sandbox on this machine: {problem}")
