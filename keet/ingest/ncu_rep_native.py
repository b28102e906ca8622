"""The native Nsight Compute reader (PyPI ncu-report) kept out of keet's own process.

Two facts of ncu-report shape this module:
- it aborts the whole process on some damaged reports (a protobuf CHECK failure, found by
  flipping bits), so every native read runs in a forked worker, where an abort is a corrupt
  report and not the end of keet;
- it never gives back what it decodes for an action's source view: reading the per-instruction
  counters or the SASS of the 34 kernels of profiles/h100/zoo_all.ncu-rep.xz grows a process by
  about 380 MB, and by as much again at every later load of the report, the report object long
  gone (measured with ncu-report 2025.3: malloc_trim returns 11 MB of it). A process that reads
  many reports (keet report over a folder, the test suite) would grow without end.

So the lazy reads of one report (source counters, SASS) go to worker processes of its own,
started on the first such read and ended, with all they hold, when the report's Profile is
collected or when one has grown too large. Workers answer plain data: frames, dictionaries,
strings.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import sys
import tempfile
import threading
import weakref
from collections.abc import Collection, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from keet.errors import ProfileError
from keet.profile import SourceCounters

FORK = multiprocessing.get_context("fork")
# PCs of per-instruction counters lie within this of the function start.
_MAX_FUNCTION_BYTES = 1 << 26
# Workers per report: decoding actions side by side pays on 2 cores; more cost memory.
MAX_WORKERS = 2
# A worker past this is ended after its answer (what the native reader decoded is never freed).
WORKER_RSS_LIMIT_BYTES = 768 << 20


class CorruptReport(RuntimeError):
    """The native reader could not parse part of the report (raised in workers, mapped to ProfileError)."""


@contextmanager
def native_errors():
    """Capture what the native reader prints on stderr (protobuf parse errors) while it runs.

    Those messages are the only sign of a damaged payload, and must not reach the user's
    terminal as noise: the caller turns them into one clear error.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    captured: list[str] = []
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.append(sink.read().decode("utf-8", errors="replace"))


def raise_on(errors: list[str]) -> None:
    """Raise CorruptReport when the native reader printed a parse error."""
    parse_errors = [line for line in "".join(errors).splitlines() if "Can't parse message" in line]
    if parse_errors:
        raise CorruptReport(parse_errors[0].split("] ", 1)[-1])


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def quiet_worker() -> None:
    """A worker's native abort is reported as a corrupt report: no fault-handler dump (pytest and
    PYTHONFAULTHANDLER enable one, inherited through fork) on the user's terminal."""
    faulthandler.disable()


def worker_pool(workers: int = 1) -> ProcessPoolExecutor:
    """Forked workers for native reads (forked: the report and the reader need no pickling)."""
    return ProcessPoolExecutor(workers, mp_context=FORK, initializer=quiet_worker)


class NativeReport:
    """The lazy reads of one report, answered by worker processes of its own.

    Each action is read by one worker (its slot, given in the order actions are first asked
    for or warmed), so that what the native reader decoded for it is decoded once. A worker
    that has grown past WORKER_RSS_LIMIT_BYTES is ended after its answer and the slot starts a
    new one on its next request: the native reader's memory is bounded per worker, not per
    report. Kernels hold bound methods of this object; when the last of them goes, the workers
    end and the decompressed copy of the report (if the reader made one) is removed.
    """

    def __init__(self, path: Path, plain: Path, workers: int | None = None) -> None:
        self.path = path
        self.plain = plain
        self._lock = threading.Lock()
        count = workers or max(1, min(MAX_WORKERS, os.cpu_count() or 1))
        self._pools: list[ProcessPoolExecutor | None] = [None] * count  # the finalizer holds the list, not self
        self._slots: dict[tuple[int, int], int] = {}
        weakref.finalize(self, _close, self._pools, plain if plain != path else None, os.getpid())

    def _slot(self, position: tuple[int, int]) -> int:
        with self._lock:
            return self._slots.setdefault(position, len(self._slots) % len(self._pools))

    def _submit(self, slot: int, position: tuple[int, int], function, *args) -> Future:
        with self._lock:
            pool = self._pools[slot]
            if pool is None:
                pool = self._pools[slot] = worker_pool()
            return pool.submit(function, str(self.plain), position, *args)

    def _ask(self, position: tuple[int, int], function, *args):
        slot = self._slot(position)
        try:
            answer, errors, rss = self._submit(slot, position, function, *args).result()
        except BrokenProcessPool:
            self._retire(slot)  # the next read starts a new worker
            raise ProfileError(self.path, "report is corrupt (the Nsight Compute reader crashed on it)") from None
        except Exception as exc:  # noqa: BLE001 - the native reader fails in any way on a damaged payload
            raise ProfileError(self.path, f"report is corrupt: its source counters cannot be read ({first_line(exc)})") from None
        if rss > WORKER_RSS_LIMIT_BYTES:
            self._retire(slot)
        if errors:
            raise ProfileError(self.path, f"report is corrupt: its source counters cannot be read ({errors})")
        return answer

    def _retire(self, slot: int) -> None:
        with self._lock:
            pool, self._pools[slot] = self._pools[slot], None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def warm(self, positions: Iterable[tuple[int, int]]) -> None:
        """Start decoding these actions' per-instruction views in the workers, in this order,
        without waiting: reads that follow in the same order find them ready, and the workers
        decode side by side while the caller works. Failures surface on the reads themselves."""
        for position in positions:
            try:
                self._submit(self._slot(position), position, _warm_in_worker)
            except BrokenProcessPool:
                self._retire(self._slot(position))

    def source(self, position: tuple[int, int], columns: Collection[str] | None = None, locations: bool = True
               ) -> SourceCounters | None:
        """Per-instruction counters of the action at (range, action): every instanced per-PC metric,
        or only `columns`; with `locations`, file:line and the embedded source files (for only
        `columns`: where one of them is non-zero)."""
        wanted = frozenset(columns) if columns is not None else None
        answer = self._ask(position, _source_in_worker, wanted, locations)
        if answer is None:
            return None
        frame, files, base = answer
        return SourceCounters(instructions=frame, files=files, sass_loader=_SassLoader(self, position, base))

    def sass(self, position: tuple[int, int], addresses: list[int]) -> dict[int, str | None]:
        """SASS text at absolute addresses of an action (None where the report cannot disassemble)."""
        return self._ask(position, _sass_in_worker, addresses)


class _SassLoader:
    """pc offsets -> SASS text for one action, through its report's worker."""

    def __init__(self, report: NativeReport, position: tuple[int, int], base: int) -> None:
        self.report, self.position, self.base = report, position, base

    def __call__(self, offsets: Iterable[int]) -> dict[int, str | None]:
        offsets = list(offsets)
        texts = self.report.sass(self.position, [self.base + offset for offset in offsets])
        return {offset: texts[self.base + offset] for offset in offsets}


def _close(pools: list[ProcessPoolExecutor | None], copy: Path | None, owner: int) -> None:
    """End a report's workers and remove its decompressed copy, only in the process that made them:
    forked workers hold copies of the objects, and collecting those must not touch the parent's."""
    if os.getpid() != owner:
        return
    for index, pool in enumerate(pools):
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
            pools[index] = None
    if copy is not None:
        copy.unlink(missing_ok=True)


# --- in the worker ---------------------------------------------------------------------------

_OPEN: dict[str, object] = {}  # report path -> the native report, loaded once per worker


def _action(report: str, position: tuple[int, int]):
    import ncu_report

    context = _OPEN.get(report)
    if context is None:
        context = _OPEN[report] = ncu_report.load_report(report)
    return context.range_by_idx(position[0]).action_by_idx(position[1])


def _answer(read, *args):
    """(answer, parse error or None, this worker's resident bytes): what a worker sends back."""
    with native_errors() as errors:
        answer = read(*args)
    try:
        raise_on(errors)
    except CorruptReport as exc:
        return None, str(exc), _resident_bytes()
    return answer, None, _resident_bytes()


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _source_in_worker(report: str, position: tuple[int, int], wanted: frozenset[str] | None, locations: bool):
    return _answer(lambda: _read_source(_action(report, position), wanted, locations))


def _sass_in_worker(report: str, position: tuple[int, int], addresses: list[int]):
    def read() -> dict[int, str | None]:
        action = _action(report, position)
        return {address: _sass_text(action.sass_by_pc(address)) for address in addresses}

    return _answer(read)


def _warm_in_worker(report: str, position: tuple[int, int]):
    """Decode an action's per-instruction view: the first disassembly costs 50-600 ms an action,
    every later one about 25 us (ncu-report 2025.3, H100 reports)."""
    def read() -> None:
        action = _action(report, position)
        function_pcs = action.metric_by_name("launch__function_pcs")
        if function_pcs is not None and function_pcs.num_instances():
            action.sass_by_pc(function_pcs.as_uint64(0))

    return _answer(read)


def _sass_text(text: str) -> str | None:
    return None if text in ("", "???", "N/A") else text


def _read_source(action, wanted: frozenset[str] | None, locations: bool) -> tuple[pd.DataFrame, dict[str, str], int] | None:
    """Per-PC counters (source/SASS view) of one action, the `wanted` ones or all, with file:line
    attribution where asked (for wanted columns: only where one of them is non-zero); the frame's
    pc is an offset from the function start (`base`).

    Instanced metrics are keyed by PCs, but also by block size, link, SM, sample...: keep
    those whose keys all fall inside the kernel's code (launch__function_pcs gives its start).
    """
    import ncu_report

    function_pcs = action.metric_by_name("launch__function_pcs")
    if function_pcs is None or function_pcs.num_instances() == 0:
        return None
    base = min(function_pcs.as_uint64(i) for i in range(function_pcs.num_instances()))

    def per_pc(pc: int) -> bool:
        return base <= pc < base + _MAX_FUNCTION_BYTES

    integer_ids = (ncu_report.IMetric.ValueKind_UINT64, ncu_report.IMetric.ValueKind_UINT32)
    columns: dict[str, dict[int, float]] = {}
    for name in action.metric_names():
        if wanted is not None and name not in wanted:
            continue
        metric = action.metric_by_name(name)
        if metric.num_instances() == 0 or not metric.has_correlation_ids():
            continue
        ids = metric.correlation_ids()
        if ids.kind() not in integer_ids or not per_pc(ids.as_uint64(0)):
            continue
        keys = [ids.as_uint64(i) for i in range(metric.num_instances())]
        if all(per_pc(pc) for pc in keys):
            columns[name] = dict(zip(keys, (metric.as_double(i) for i in range(len(keys)))))
    if not columns:
        return None
    pcs = sorted(set().union(*columns.values()))
    # file:line attribution is the costly part (~35 us per PC): a reader of a few columns asks
    # for it where its counters have something to attribute
    def located(pc: int) -> bool:
        return locations and (wanted is None or any(values.get(pc) for values in columns.values()))

    where = [action.source_info(pc) if located(pc) else None for pc in pcs]
    frame = pd.DataFrame(
        {
            "pc": [pc - base for pc in pcs],
            "file": [info.file_name() if info is not None else None for info in where],
            "line": [info.line() if info is not None else None for info in where],
            **{name: [values.get(pc, 0.0) for pc in pcs] for name, values in columns.items()},
        }
    )
    files = dict(action.source_files().items()) if locations else {}
    return frame, files, base
