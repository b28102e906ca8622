"""Big reports (issue 23): a PyTorch step profiled with --set full, as users have them.

Targets on 2 cores: `keet explain` <= 5 s and <= 1 GB; `keet report` comparing two such reports
<= 30 s and <= 1.5 GB; `perfmodel predict` <= 3 s. Each is the command as a user runs it (a cold
process: imports included) on the plain .ncu-rep files:

- profiles/step/h100_step.ncu-rep (76 MB, 46 launches of a transformer's forward step, NVTX ranges,
  identical launches) and h100_step_run2.ncu-rep (the same step captured again);
- profiles/corpus/h100/h100_partpairs.ncu-rep (98 MB, 34 launches of before/after operator pairs).

Memory is the peak of the proportional resident memory (PSS) of the command's process tree (the
command and the workers that read the report; pages forked workers share with their parent
counted once), sampled every 20 ms, recorded in the benchmark's extra_info.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_bench import plain_report

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tree_pss(root: int) -> int:
    """Proportional resident bytes (PSS: pages shared between processes, as forked workers share
    their parent's, counted once in all) of a process and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(parent, []).append(int(entry.name))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                total += next(int(line.split()[1]) * 1024 for line in rollup if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
    return total


def run_measured(command: list[str]) -> dict[str, float]:
    """Run a command; its wall time and the peak proportional resident memory of its process tree."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_pss(process.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, err = process.communicate()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    assert process.returncode == 0, err.decode()
    return {"seconds": seconds, "peak_tree_pss_mb": peak / 2**20}


@pytest.fixture(scope="module")
def step(tmp_path_factory) -> Path:
    return plain_report(tmp_path_factory, ROOT / "profiles/step/h100_step.ncu-rep.xz")


@pytest.fixture(scope="module")
def step_run2(tmp_path_factory) -> Path:
    return plain_report(tmp_path_factory, ROOT / "profiles/step/h100_step_run2.ncu-rep.xz")


@pytest.fixture(scope="module")
def partpairs(tmp_path_factory) -> Path:
    return plain_report(tmp_path_factory, ROOT / "profiles/corpus/h100/h100_partpairs.ncu-rep.xz")


def _bench(benchmark, command: list[str], rounds: int = 3) -> None:
    measured: list[dict[str, float]] = []
    benchmark.pedantic(lambda: measured.append(run_measured(command)), rounds=rounds, iterations=1)
    benchmark.extra_info["peak_tree_pss_mb"] = max(m["peak_tree_pss_mb"] for m in measured)


def test_explain_step_report(benchmark, step):
    """keet explain on the 46-launch step: target <= 5 s, <= 1 GB."""
    _bench(benchmark, [str(BIN / "keet"), "explain", str(step)])


def test_explain_partpairs_report(benchmark, partpairs):
    """keet explain on the 98 MB, 34-launch before/after report."""
    _bench(benchmark, [str(BIN / "keet"), "explain", str(partpairs)])


def test_predict_step_report(benchmark, step):
    """perfmodel predict on the 46-launch step: target <= 3 s."""
    _bench(benchmark, [str(BIN / "perfmodel"), "predict", str(step), "--gpu", "h200"])


def test_report_comparing_two_step_reports(benchmark, step, step_run2, tmp_path):
    """keet report of two runs of the step, compared: target <= 30 s, <= 1.5 GB."""
    _bench(benchmark, [str(BIN / "keet"), "report", str(step), str(step_run2), "-o", str(tmp_path / "step.html")], rounds=2)
