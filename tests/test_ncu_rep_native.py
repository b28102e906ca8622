"""The native reader's worker processes (keet/ingest/ncu_rep_native.py): they answer the kernels'
later reads, end with their report, are replaced when they grow too large, and hold none of
their owner's files open."""

from __future__ import annotations

import gc
import os
import select
import time
from collections import Counter
from pathlib import Path

import pytest

from keet import load_profile
from keet.ingest import ncu_rep_native

REPORT = Path(__file__).parent / "data" / "ncu" / "v100_miniweather_divtomult.ncu-rep.xz"


def _children() -> set[int]:
    tasks = Path(f"/proc/{os.getpid()}/task")
    found: set[int] = set()
    for task in tasks.iterdir():
        try:
            found |= {int(pid) for pid in (task / "children").read_text().split()}
        except FileNotFoundError:  # a thread that ended meanwhile (one ending a pool)
            continue
    return found


def _alive(pids: set[int]) -> set[int]:
    """Those of pids still running (not zombies waiting to be reaped)."""
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def test_a_pipe_the_host_holds_is_not_kept_open_by_the_workers():
    """A host program's pipe to a child of its own (Playwright's to its browser driver) must see
    end-of-file when the host closes it, while a report's workers live on."""
    read_end, write_end = os.pipe()
    try:
        profile = load_profile(REPORT)
        assert profile.kernels[0].source is not None  # a later read: the workers are running
        os.close(write_end)
        write_end = -1
        ready, _, _ = select.select([read_end], [], [], 10)
        assert ready and os.read(read_end, 1) == b"", "a report worker holds the host's pipe open"
        assert profile.kernels[0].source is not None  # and the workers still answer
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def test_workers_end_when_the_profile_is_collected():
    before = _children()
    profile = load_profile(REPORT)
    assert profile.kernels[0].source is not None
    workers = _children() - before
    assert workers, "the source read ran in no worker"
    del profile
    gc.collect()
    for _ in range(100):
        if not _alive(workers):
            break
        select.select([], [], [], 0.1)
    assert not _alive(workers)


def test_a_worker_past_its_memory_limit_is_replaced_and_reads_go_on(monkeypatch):
    monkeypatch.setattr(ncu_rep_native, "WORKER_LIMIT_BYTES", 0)  # every answer retires its worker
    profile = load_profile(REPORT)
    first = profile.kernels[0].source
    assert first is not None and len(first.instructions)
    before = _children()
    again = profile.kernels[-1].source
    assert again is not None and len(again.instructions)
    assert _children() - before, "no new worker answered after the old one was retired"


def _worker_pid(report: str) -> int:
    return os.getpid()


def test_reads_queued_behind_a_worker_past_its_limit_go_to_a_new_one(monkeypatch):
    """Reads wait in keet, not in the worker: one that grew too large takes no more of them."""
    monkeypatch.setattr(ncu_rep_native, "WORKER_LIMIT_BYTES", 0)
    profile = load_profile(REPORT)
    native = profile.releaser.__self__
    futures = [native.submit(0, _worker_pid) for _ in range(6)]
    answered_by = Counter(native.result(future) for future in futures)
    # a worker over its limit answers the reads it already holds (IN_FLIGHT at most), no more
    assert len(answered_by) >= 6 // ncu_rep_native.IN_FLIGHT and max(answered_by.values()) <= ncu_rep_native.IN_FLIGHT


def test_a_released_profile_ends_its_workers_and_still_reads():
    others = _children()  # workers of profiles other tests of this process keep
    profile = load_profile(REPORT)
    assert profile.kernels[0].source is not None
    workers = _alive(_children() - others)
    assert workers
    profile.release_reader()
    for _ in range(100):
        if not _alive(workers):
            break
        time.sleep(0.05)
    assert not _alive(workers), "the workers outlived release_reader()"
    assert profile.kernels[-1].source is not None  # a new worker answers


def _alive_siblings(report: str) -> int:
    """In a worker: how many of its owner's children are running (itself included)."""
    parent = os.getppid()
    siblings: set[int] = set()
    for task in Path(f"/proc/{parent}/task").iterdir():
        try:
            siblings |= {int(pid) for pid in (task / "children").read_text().split()}
        except FileNotFoundError:
            continue
    return len(_alive(siblings))


def test_a_slot_starts_its_next_worker_only_once_the_last_has_exited(monkeypatch):
    """A slot never holds two workers' memory: the one past its limit exits before the next starts."""
    monkeypatch.setattr(ncu_rep_native, "WORKER_LIMIT_BYTES", 0)  # every answer retires its worker
    before = _children()
    profile = load_profile(REPORT)
    native = profile.releaser.__self__
    assert len(native._pools) == 1  # a small report: one slot
    mine = _children() - before
    profile.release_reader()
    for _ in range(100):
        if not _alive(mine):
            break
        time.sleep(0.05)
    others = len(_alive(_children()))  # workers of profiles other tests of this process keep
    answers = [native.result(native.submit(0, _alive_siblings)) for _ in range(6)]
    assert max(answers) <= others + 1, f"{others} other workers; alive at each read: {answers}"


def _slow_pid(report: str) -> int:
    time.sleep(0.2)
    return os.getpid()


def test_reads_queued_when_the_report_closes_fail_and_start_no_worker():
    """Closing a report (as the reader does when a read task crashed its worker) fails the reads
    still queued in keet: an answer arriving afterwards must not hand them to a new worker."""
    before = _children()
    profile = load_profile(REPORT)
    native = profile.releaser.__self__
    futures = [native.submit(0, _slow_pid) for _ in range(2 * ncu_rep_native.IN_FLIGHT + 2)]
    native.close()
    queued = futures[ncu_rep_native.IN_FLIGHT:]
    for future in queued:
        with pytest.raises(RuntimeError, match="closed"):
            native.result(future)
    time.sleep(0.5)  # the reads that were in the worker have been answered by now
    for _ in range(100):
        if not _alive(_children() - before):
            break
        time.sleep(0.05)
    assert not _alive(_children() - before), "a worker was started or kept after the report closed"


def test_a_sass_read_runs_on_one_cpu_and_lets_go_after():
    """ncu-report hands each sass_by_pc to a thread of its own: a worker reading SASS keeps all
    its threads on one CPU (a handoff between CPUs costs most of the read), and only meanwhile."""
    import threading

    release = threading.Event()
    helper = threading.Thread(target=release.wait)  # a thread started before, as ncu-report's is
    helper.start()
    try:
        before = {int(tid): os.sched_getaffinity(int(tid)) for tid in os.listdir("/proc/self/task")}
        with ncu_rep_native._on_one_cpu():
            inside = {tid: os.sched_getaffinity(tid) for tid in before}
        after = {tid: os.sched_getaffinity(tid) for tid in before}
    finally:
        release.set()
        helper.join()
    assert len({frozenset(cpus) for cpus in inside.values()}) == 1 and len(next(iter(inside.values()))) == 1
    assert after == before
