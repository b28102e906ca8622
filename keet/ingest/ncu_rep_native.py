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
import functools
import multiprocessing
import multiprocessing.util
import os
import sys
import tempfile
import threading
import weakref
from collections import deque
from collections.abc import Callable, Collection, Hashable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from pathlib import Path

import pandas as pd

from keet.errors import ProfileError
from keet.profile import SourceCounters, SourceRequest

FORK = multiprocessing.get_context("fork")
# PCs of per-instruction counters lie within this of the function start.
_MAX_FUNCTION_BYTES = 1 << 26
# A kept read of an action that has no per-instruction counters.
_ABSENT = object()
# A worker whose private memory is past this is ended after its answer (what the native reader
# decoded is never freed). Lower bounds keet's memory on a big report at the price of time: a new
# worker starts the native reader again (its first action costs ~125 MB and 80 ms) and decodes
# again what it is asked about (nothing, where the caller read ahead). On a 46-launch full-set
# H100 report (docs/benchmarks.md): 300 MB -> 0.75 GB in 4.0 s, 360 MB -> 0.83 GB in 3.4 s,
# 512 MB -> 1.2 GB in 3.5 s. KEET_NATIVE_WORKER_MB sets it (a positive whole number; anything
# else is ignored).
_WORKER_MB = os.environ.get("KEET_NATIVE_WORKER_MB", "")
WORKER_LIMIT_BYTES = (int(_WORKER_MB) if _WORKER_MB.isdigit() and int(_WORKER_MB) > 0 else 360) << 20
# What the disassembler takes when a process first reads SASS (measured: 96 MB and 0.43 s on an H100
# full-set report, ncu-report 2025.3): the worker that reads SASS (one per report, where it can) may
# grow past the limit by this much, rather than start it again in a new worker.
DISASSEMBLER_BYTES = 96 << 20
# Reads a worker holds at once: the next is there when one ends (no round trip through keet
# between them), and one worker past its limit grows by at most one more read.
IN_FLIGHT = 2


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


def _open_files() -> dict[int, tuple[int, int]]:
    """This process's open file descriptors, each with the (device, inode) it refers to (none
    where /proc does not list them: the workers then keep what they inherit)."""
    files: dict[int, tuple[int, int]] = {}
    names = os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []
    for name in names:
        try:
            status = os.fstat(int(name))
        except OSError:  # the descriptor listdir itself used, closed since
            continue
        files[int(name)] = (status.st_dev, status.st_ino)
    return files


def _start_worker(inherited: dict[int, tuple[int, int]]) -> None:
    """A worker's setup: no fault-handler dump on a native abort (pytest and PYTHONFAULTHANDLER
    enable one, inherited through fork): it is reported as a corrupt report; and none of the
    files its owner had open when the worker was made, but stdin/out/err, stays open in it.

    A worker lives as long as its report, and a pipe it inherited stays open that long: a host
    program's pipe to a child of its own (Playwright's to its browser driver, a shell's to a
    pager) would never see end-of-file, and that child would never exit. Each such descriptor is
    pointed at /dev/null (not closed, so that no Python object of the owner's that the worker
    holds can close a number reused for the worker's own pipes), and only while it still refers
    to the same file: a number closed and reused since, by the pool's pipes, is kept."""
    faulthandler.disable()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd, identity in inherited.items():
            if fd <= 2 or fd == null:
                continue
            try:
                status = os.fstat(fd)
            except OSError:
                continue
            if (status.st_dev, status.st_ino) == identity:
                os.dup2(null, fd)
    finally:
        os.close(null)


def worker_pool() -> ProcessPoolExecutor:
    """A forked worker for native reads (forked: the report and the reader need no pickling).
    Made right before its first task, so that the files open now are those open when it forks."""
    return ProcessPoolExecutor(1, mp_context=FORK, initializer=_start_worker, initargs=(_open_files(),))


class NativeReport:
    """One report's native reads, answered by worker processes of its own.

    The workers read the actions' metrics when the report loads, keep it loaded, and answer the
    kernels' later reads (source counters, SASS). Each action's later reads go to the worker that
    read its metrics (its slot, or for an action not read yet the next slot in turn), so that the
    native reader decodes it once (~12 MB); a worker reads the code of launches of one function
    (their file:line and SASS: ~17 MB of parsing per action) through the first of them it holds.
    A worker that has grown past WORKER_LIMIT_BYTES is ended after its answer and its slot starts
    a new one on the next request, once the old one has exited: the native reader's memory is
    bounded per worker, not per report. Kernels hold bound methods of this object; when
    the last of them goes, the workers end and the decompressed copy (if the reader made one) is
    removed.
    """

    def __init__(self, path: Path, plain: Path, workers: int) -> None:
        """At most `workers` worker processes (:meth:`use_workers` lowers it once the reader knows
        the report's size)."""
        self.path = path
        self.plain = plain
        # Each action's code (launches with the same key run the same SASS): its SASS is read
        # once, and a worker parses it once. The reader fills it in once it knows.
        self.code: dict[tuple[int, int], Hashable] = {}
        self._lock = threading.RLock()
        self._pools: list[ProcessPoolExecutor | None] = [None] * max(1, workers)  # the finalizer holds the list, not self
        self._queues: list[deque] = [deque() for _ in self._pools]  # per slot: (future, function, args) not yet handed over
        self._running: list[int] = [0] * len(self._pools)  # per slot: reads in its worker
        # per slot: its ended worker until that has exited (its reads answered): the slot's next
        # worker starts after it, so that a slot never holds two workers' memory at once
        self._ending: list[ProcessPoolExecutor | None] = [None] * len(self._pools)
        self._slots: dict[tuple[int, int], int] = {}
        # Reads asked for ahead, and reads answered, per action: later reads of the columns they hold are served from them.
        self._pending: dict[tuple[int, int], list[tuple[frozenset[str] | None, frozenset[str] | None, Future]]] = {}
        self._frames: dict[tuple[int, int], list[tuple[frozenset[str] | None, frozenset[str] | None, object]]] = {}
        # code whose SASS was asked for ahead -> the slot that read it (its worker has the
        # disassembler started: ~100 MB and 0.4 s per process): later SASS reads go there
        self._sass_read: dict[Hashable, int] = {}
        self._sass_ahead: dict[Hashable, Future] = {}  # code -> its SASS read ahead (read_sass_ahead)
        self._sass: dict[tuple[Hashable, int], str | None] = {}
        self._inline = False
        self._closer = weakref.finalize(self, _close, self._pools, self._queues, plain if plain != path else None, os.getpid())
        # A process that multiprocessing started (a site worker) joins its children before it
        # ends: the workers are ended first, whether or not the report was collected.
        multiprocessing.util.Finalize(None, _close, args=(self._pools, self._queues, None, os.getpid()), exitpriority=10)
        _LIVE.add(self)

    def _forget_workers(self) -> None:
        """In a process forked from the owner (a drawing or site worker): the owner's workers and
        their pending answers are not this process's (their executors' threads did not come
        along), and workers of its own would keep it from exiting (multiprocessing joins a
        process's children before it ends): its reads run in it, which ends with its task. Reads
        answered already (those read ahead) are kept."""
        self._lock = threading.RLock()
        self._pools = [None] * len(self._pools)
        self._queues = [deque() for _ in self._pools]
        self._running = [0] * len(self._pools)
        self._ending = [None] * len(self._pools)
        self._pending = {position: answered for position, reads in self._pending.items()
                         if (answered := [read for read in reads if read[2].done()])}
        self._sass_ahead = {code: read for code, read in self._sass_ahead.items() if read.done()}
        self._inline = True

    def close(self) -> None:
        """End the workers now and remove the decompressed copy."""
        self._closer()

    def release(self) -> None:
        """End the workers (and all the native reader decoded in them) once their reads are
        answered; a later read starts a new one."""
        for slot in range(len(self._pools)):
            self._retire(slot)

    def use_workers(self, count: int) -> None:
        """Use only the first `count` workers from now on (a small report needs no more)."""
        for slot in range(max(1, count), len(self._pools)):
            self._retire(slot)
        with self._lock:
            del self._pools[max(1, count):], self._queues[max(1, count):], self._running[max(1, count):], self._ending[max(1, count):]

    def submit(self, slot: int, function, *args) -> Future:
        """Run function(report path, *args) in a worker (which keeps what it loaded: :func:`loaded`);
        :meth:`result` takes the answer. Reads wait in the slot's queue and go to its worker
        IN_FLIGHT at a time (the next is there when one ends): a worker that has grown past
        WORKER_LIMIT_BYTES is ended after its answer and takes no more (reads queued in the
        worker itself would grow it further)."""
        done: Future = Future()
        if self._inline:
            try:
                done.set_result(_run(function, str(self.plain), *args))
            except Exception as exc:  # noqa: BLE001 - handed over as a worker's failure would be
                done.set_exception(exc)
            return done
        with self._lock:
            self._queues[slot].append((done, function, args))
        self._pump(slot)
        return done

    def _pump(self, slot: int) -> None:
        """Hand the slot's next queued reads to its worker (started if none) while fewer than
        IN_FLIGHT run there."""
        while self._pump_one(slot):
            pass

    def _pump_one(self, slot: int) -> bool:
        with self._lock:
            if slot >= len(self._pools) or self._running[slot] >= IN_FLIGHT or not self._queues[slot]:
                return False
            if self._pools[slot] is None and self._ending[slot] is not None:
                return False  # the slot's next worker starts once the ended one has exited
            done, function, args = self._queues[slot].popleft()
            pool = self._pools[slot]
            if pool is None:
                pool = self._pools[slot] = worker_pool()
            self._running[slot] += 1
            try:
                running = pool.submit(_run, function, str(self.plain), *args)
            except BrokenProcessPool as exc:  # its worker died before: the read fails, the next starts a new one
                self._running[slot] -= 1
                self._retire(slot, pool)
                done.set_exception(exc)
                return True
            except RuntimeError as exc:  # keet is exiting (reads asked ahead and never taken): no more reads
                self._running[slot] -= 1
                done.set_exception(exc)
                return True
        running.add_done_callback(functools.partial(self._answered_by_worker, slot, pool, done))
        return True

    def _answered_by_worker(self, slot: int, pool: ProcessPoolExecutor, done: Future, running: Future) -> None:
        """A worker's answer (in the pool's thread): end the worker if it broke or grew too large,
        pass the answer on, start the slot's next read."""
        exc = running.exception()
        answer = running.result() if exc is None else None
        if isinstance(exc, BrokenProcessPool) or (answer is not None and answer[1] > WORKER_LIMIT_BYTES):
            self._retire(slot, pool)
        with self._lock:
            if slot < len(self._running):
                self._running[slot] -= 1
        if exc is not None:
            done.set_exception(exc)
        else:
            done.set_result(answer)
        self._pump(slot)

    @staticmethod
    def result(future: Future):
        """A submitted read's answer."""
        return future.result()[0]

    def call(self, slot: int, function, *args):
        """:meth:`submit` and :meth:`result`."""
        return self.result(self.submit(slot, function, *args))

    def _retire(self, slot: int, pool: ProcessPoolExecutor | None = None) -> None:
        """End the slot's worker (only if it is still `pool`, when given); its next read starts a new one."""
        with self._lock:
            if slot >= len(self._pools) or (pool is not None and self._pools[slot] is not pool):
                return
            pool, self._pools[slot] = self._pools[slot], None
            if pool is not None:
                self._ending[slot] = pool
        if pool is not None:  # a read already asked of it is answered, then it ends
            _end_pool(pool, cancel=False, then=functools.partial(_ended, weakref.ref(self), slot, pool))

    def assign(self, position: tuple[int, int], slot: int) -> None:
        """Later reads of this action go to the worker that has decoded it."""
        with self._lock:
            self._slots.setdefault(position, slot)

    def _key(self, position: tuple[int, int]) -> Hashable:
        return self.code.get(position, position)

    def _slot(self, position: tuple[int, int]) -> int:
        with self._lock:
            return self._slots.setdefault(position, len(self._slots) % len(self._pools))

    def _submit_read(self, position: tuple[int, int], function, *args) -> Future:
        """A later read of one action, in its slot's worker, which reads its code through its first launch there."""
        return self.submit(self._slot(position), function, position, self._key(position), *args)

    def _ask(self, position: tuple[int, int], function, *args):
        """A later read of one action, answered, as one clear error when it fails."""
        return self._answered(self._submit_read(position, function, *args))

    def _answered(self, future: Future):
        try:
            answer, errors = self.result(future)
        except BrokenProcessPool:
            raise ProfileError(self.path, "report is corrupt (the Nsight Compute reader crashed on it)") from None
        except Exception as exc:  # noqa: BLE001 - the native reader fails in any way on a damaged payload
            errors = first_line(exc)
        if errors:
            raise ProfileError(self.path, f"report is corrupt: its source counters cannot be read ({errors})")
        return answer

    def prefetch(self, position: tuple[int, int], columns: frozenset[str] | None,
                 sass_for: Callable[[pd.DataFrame], list[int]] | None = None, locate: frozenset[str] | None = None) -> None:
        """Start reading an action's `columns` (None: all), with file:line where one of the `locate`
        columns is non-zero (None: nowhere; with columns None: everywhere), and the SASS at the pc
        offsets `sass_for` picks from those counters, without waiting. Later :meth:`source` reads
        of any subset of the columns (with locations: of the `locate` columns) take the answer.
        Callers prefetch in the order they read, so that the workers decode side by side ahead
        of them. The SASS of code already read for another launch is not read again. Failures
        surface on the read itself."""
        asked = (*self._pending.get(position, ()), *self._frames.get(position, ()))
        if any(_covers(read[0], read[1], columns, locate) for read in asked):
            return  # read ahead with the metrics, or prefetched before
        key = self._key(position)
        if key in self._sass_read:
            sass_for = None
        if sass_for is not None:
            self._sass_read[key] = self._slot(position)
        future = self._submit_read(position, _prefetch_in_worker, columns, locate, sass_for)
        self._pending.setdefault(position, []).append((columns, locate, future))

    def read_ahead(self, position: tuple[int, int], request: SourceRequest, answer) -> None:
        """Keep what a worker read of `request` with the action's metrics (:func:`read_ahead_in_worker`'s
        answer) as if prefetched: later reads take it, failures surface on them."""
        done: Future = Future()
        done.set_result((answer, None))
        self._pending.setdefault(position, []).append((request.columns, request.locate, done))

    def read_sass_ahead(self, position: tuple[int, int], code: Hashable, addresses: list[int], slot: int = 0) -> None:
        """Start reading the SASS at `addresses` of the action's code (once per code), in one
        slot's worker: starting the disassembler costs a process ~100 MB and 0.4 s, so a
        read-ahead reads all the SASS in one worker. :meth:`sass` takes the answer."""
        with self._lock:
            if code in self._sass_read:
                return
            self._sass_read[code] = slot
        self._sass_ahead[code] = self.submit(slot, _sass_in_worker, position, code, addresses)

    def sass_slots(self) -> set[int]:
        """The slots whose workers were asked to read SASS ahead."""
        with self._lock:
            return set(self._sass_read.values())

    def source(self, position: tuple[int, int], columns: Collection[str] | None = None, locations: bool = True
               ) -> SourceCounters | None:
        """Per-instruction counters of the action at (range, action): every instanced per-PC metric,
        or only `columns`; with `locations`, file:line and the embedded source files (for only
        `columns`: where one of them is non-zero). Served from what was prefetched or read before
        where that holds them."""
        wanted = frozenset(columns) if columns is not None else None
        for columns_read, located, future in self._pending.pop(position, []):
            answer, texts = self._answered(future)
            self._keep(position, columns_read, located, answer, texts)
        found = self._served(position, wanted, locations)
        if found is None:
            answer = self._ask(position, _source_in_worker, wanted, wanted if locations and wanted is not None else None)
            self._keep(position, wanted, wanted if locations else None, answer, {})
            found = self._served(position, wanted, locations)
        return found if found is not _ABSENT else None

    def _keep(self, position: tuple[int, int], columns: frozenset[str] | None, located: frozenset[str] | None,
              answer, texts: dict[int, str | None]) -> None:
        """Keep a read for later reads of the same action (its frame is small beside its cost)."""
        if answer is None:
            self._frames.setdefault(position, []).append((columns, located, _ABSENT))
            return
        frame, files, base = answer
        key = self._key(position)
        self._sass.update(((key, base + offset), text) for offset, text in texts.items())
        counters = SourceCounters(instructions=frame, files=files, sass_loader=_SassLoader(self, position, base))
        self._frames.setdefault(position, []).append((columns, located, counters))

    def _served(self, position: tuple[int, int], wanted: frozenset[str] | None, locations: bool):
        """Counters of `wanted` columns from a kept read that holds them (the columns alone), or
        _ABSENT when the action has no per-instruction counters, or None when no read holds them."""
        for columns, located, counters in self._frames.get(position, []):
            holds = columns is None or (wanted is not None and wanted <= columns)
            if holds and locations:
                # located None with columns None: a full read, located everywhere
                holds = (columns is None and located is None) or (located is not None and wanted is not None and wanted <= located)
            if not holds:
                continue
            if counters is _ABSENT or wanted is None or columns == wanted:
                return counters
            kept = ["pc", "file", "line", *(c for c in counters.instructions.columns if c in wanted)]
            return SourceCounters(instructions=counters.instructions[kept], files=counters.files, sass_loader=counters.sass_loader)
        return None

    def sass(self, position: tuple[int, int], addresses: list[int]) -> dict[int, str | None]:
        """SASS text at absolute addresses of an action (None where the report cannot disassemble)."""
        key = self._key(position)
        ahead = self._sass_ahead.pop(key, None)
        if ahead is not None:
            self._sass.update(((key, address), text) for address, text in self._answered(ahead).items())
        missing = [address for address in addresses if (key, address) not in self._sass]
        if missing:
            slot = self._sass_read.get(key, self._slot(position))
            texts = self._answered(self.submit(slot, _sass_in_worker, position, key, missing))
            self._sass.update(((key, address), text) for address, text in texts.items())
        return {address: self._sass[key, address] for address in addresses}


def _covers(columns: frozenset[str] | None, located: frozenset[str] | None,
            wanted: frozenset[str] | None, locate: frozenset[str] | None) -> bool:
    """Whether a read of `columns` located where `located` are non-zero holds a read of `wanted`
    located where `locate` are (None columns: all, located everywhere)."""
    if columns is None and located is None:
        return True
    if wanted is None or columns is None or not wanted <= columns:
        return False
    return locate is None or (located is not None and locate <= located)


class _SassLoader:
    """pc offsets -> SASS text for one action, through its report's worker."""

    def __init__(self, report: NativeReport, position: tuple[int, int], base: int) -> None:
        self.report, self.position, self.base = report, position, base

    def __call__(self, offsets: Iterable[int]) -> dict[int, str | None]:
        offsets = list(offsets)
        texts = self.report.sass(self.position, [self.base + offset for offset in offsets])
        return {offset: texts[self.base + offset] for offset in offsets}


_LIVE: weakref.WeakSet[NativeReport] = weakref.WeakSet()


def _forget_workers_in_child() -> None:
    for report in list(_LIVE):
        report._forget_workers()


os.register_at_fork(after_in_child=_forget_workers_in_child)


# Pools being ended, each by a thread of its own: ending one waits for its worker to exit (tens of
# milliseconds) and the caller need not. At interpreter exit they are waited for before
# concurrent.futures' own exit hook runs: that hook wakes every pool's manager thread, and a pool
# whose manager is closing at that moment raises EBADF from the hook (CPython 3.11's
# _ThreadWakeup has no lock), printed as "Exception ignored" on the user's terminal.
_ENDING: set[threading.Thread] = set()


def _end_pool(pool: ProcessPoolExecutor, cancel: bool, then: Callable[[], None] | None = None) -> None:
    def end() -> None:
        try:
            pool.shutdown(wait=True, cancel_futures=cancel)
        finally:
            _ENDING.discard(thread)
            if then is not None:
                then()

    thread = threading.Thread(target=end, name="keet-native-end", daemon=True)
    _ENDING.add(thread)
    thread.start()


def _ended(owner: weakref.ref, slot: int, pool: ProcessPoolExecutor) -> None:
    """A retired worker has exited: its slot may start the next (the owner may be gone)."""
    report = owner()
    if report is None:
        return
    with report._lock:
        if slot >= len(report._ending) or report._ending[slot] is not pool:
            return
        report._ending[slot] = None
    report._pump(slot)


def _wait_for_ending_pools() -> None:
    for thread in list(_ENDING):
        thread.join()


# Registered after concurrent.futures.process's hook (imported above), so run before it: a private
# threading function, the only exit hook that runs before that one.
threading._register_atexit(_wait_for_ending_pools)


def _close(pools: list[ProcessPoolExecutor | None], queues: list[deque], copy: Path | None, owner: int) -> None:
    """End a report's workers and remove its decompressed copy, only in the process that made them:
    forked workers hold copies of the objects, and collecting those must not touch the parent's.
    Reads still queued in keet fail: an answer arriving meanwhile must not hand them to a new
    worker (a read task that crashed its worker on a damaged report closes it, others queued)."""
    if os.getpid() != owner:
        return
    for queue in queues:
        while queue:
            try:
                done, _, _ = queue.popleft()
            except IndexError:  # taken by a pump meanwhile
                break
            if not done.done():
                done.set_exception(RuntimeError("the report was closed"))
    for index, pool in enumerate(pools):
        if pool is not None:
            _end_pool(pool, cancel=True)
            pools[index] = None
    if copy is not None:
        copy.unlink(missing_ok=True)


# --- in the worker ---------------------------------------------------------------------------

_OPEN: dict[str, object] = {}  # report path -> the native report, loaded once per worker


def loaded(report: str):
    """The native report at this path, loaded once per worker process."""
    import ncu_report

    context = _OPEN.get(report)
    if context is None:
        context = _OPEN[report] = ncu_report.load_report(report)
    return context


_ACTIONS: dict[tuple[str, tuple[int, int]], object] = {}  # (report path, position) -> its native action


def loaded_action(report: str, position: tuple[int, int]):
    """The action at (range, action) of a report, decoded once per worker process: each
    action_by_idx decodes the action again (~10-20 MB for a full-set action) and the native
    reader never frees it."""
    action = _ACTIONS.get((report, position))
    if action is None:
        action = _ACTIONS[report, position] = loaded(report).range_by_idx(position[0]).action_by_idx(position[1])
    return action


_CODE: dict[tuple[str, Hashable], tuple[int, int]] = {}  # (report path, code) -> the position of its first launch read here


def code_action(report: str, position: tuple[int, int], code: Hashable):
    """The action through which this worker reads the code of `position` (file:line, SASS): the
    first launch of the same code it was asked about. The native reader parses an action's code
    on its first source_info or sass_by_pc (~17 MB, kept) and launches of one function share it."""
    return loaded_action(report, _CODE.setdefault((report, code), position))


_DISASSEMBLING = False  # this process has read SASS: the disassembler is started


def _run(function, report: str, *args):
    """A worker runs a read: (its answer, the worker's own bytes after it, less its
    disassembler's, which WORKER_LIMIT_BYTES does not count)."""
    answer = function(report, *args)
    return answer, private_bytes() - (DISASSEMBLER_BYTES if _DISASSEMBLING else 0)


def private_bytes() -> int:
    """This process's private memory (resident pages no other process shares): a worker forked
    from a large process (a test session, a site build) starts with that process's pages, shared
    until written, which are not the worker's to count."""
    with open("/proc/self/smaps_rollup") as rollup:
        return sum(int(line.split()[1]) for line in rollup if line.startswith(("Private_Clean:", "Private_Dirty:"))) << 10


@contextmanager
def _on_one_cpu():
    """Keep this worker's threads on the CPU it runs on while it reads SASS, then let them go.

    ncu-report hands every sass_by_pc to a thread of its own and waits for its answer; a handoff
    between two CPUs costs most of the read. Measured with ncu-report 2026.3 on a 2-core machine:
    1,700 reads of one function's SASS in 0.20-0.21 s, on one CPU in 0.063 s (the disassembler's
    start and every other read are as fast either way). The pin is released after the read: the
    worker's later reads may run wherever there is room.
    """
    try:
        allowed = os.sched_getaffinity(0)
        # /proc/thread-self/stat: after "(comm)", field 39 (the CPU it last ran on) is the 37th
        cpu = int(Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()[36])
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except (OSError, ValueError, IndexError):  # not Linux
        yield
        return
    for tid in threads:
        with suppress(OSError):  # a thread that has ended since, or a CPU set it may not take
            os.sched_setaffinity(tid, {cpu})
    try:
        yield
    finally:
        for tid in threads:
            with suppress(OSError):  # a thread that has ended since
                os.sched_setaffinity(tid, allowed)


def _sass_at(action, address: int) -> str | None:
    """The SASS text at an absolute address of an action (None where the report cannot disassemble)."""
    global _DISASSEMBLING
    _DISASSEMBLING = True
    text = action.sass_by_pc(address)
    return None if text in ("", "???", "N/A") else text


def _answer(read) -> tuple[object, str | None]:
    """(answer, the parse error the native reader printed, or None)."""
    with native_errors() as errors:
        answer = read()
    try:
        raise_on(errors)
    except CorruptReport as exc:
        return None, str(exc)
    return answer, None


def _source_in_worker(report: str, position: tuple[int, int], code: Hashable, wanted: frozenset[str] | None,
                      locate: frozenset[str] | None):
    return _answer(lambda: _read_source(loaded_action(report, position), code_action(report, position, code), wanted, locate))


def _sass_in_worker(report: str, position: tuple[int, int], code: Hashable, addresses: list[int]):
    def read() -> dict[int, str | None]:
        action = code_action(report, position, code)
        with _on_one_cpu():
            return {address: _sass_at(action, address) for address in addresses}

    return _answer(read)


def start_sass(report: str, position: tuple[int, int], code: Hashable, address: int) -> None:
    """Read the SASS at one address of an action, for the disassembler's start (~0.4 s, once per
    process): later SASS reads in this worker go without it."""
    _sass_at(code_action(report, position, code), address)


def _prefetch_in_worker(report: str, position: tuple[int, int], code: Hashable, columns: frozenset[str] | None,
                        locate: frozenset[str] | None, sass_for: Callable[[pd.DataFrame], list[int]] | None,
                        locating: bool = True):
    """((frame, files, base) or None, {pc offset: SASS text}) of the columns and the pcs sass_for
    picks; without `locating`, no file:line anywhere."""
    def read():
        coded = code_action(report, position, code)
        source = _read_source(loaded_action(report, position), coded, columns, locate, locating)
        if source is None or sass_for is None:
            return source, {}
        frame, _, base = source
        with _on_one_cpu():
            return source, {pc: _sass_at(coded, base + pc) for pc in sass_for(frame)}

    answer, errors = _answer(read)
    return (answer if answer is not None else (None, {})), errors


def read_ahead_in_worker(report: str, position: tuple[int, int], code: Hashable, request: SourceRequest,
                         unlocated: Collection[Hashable] = ()):
    """`request`'s counters of one action, in the worker that has just read its metrics (answered
    as :func:`_prefetch_in_worker`), without SASS (:meth:`NativeReport.read_sass_ahead`), and
    without file:line for the code in `unlocated` (keet knows it has none: finding out parses
    the action's code, ~17 MB)."""
    return _prefetch_in_worker(report, position, code, request.columns, request.locate, None, locating=code not in unlocated)


def _read_source(action, coded, wanted: frozenset[str] | None, locate: frozenset[str] | None, locating: bool = True
                 ) -> tuple[pd.DataFrame, dict[str, str], int] | None:
    """Per-PC counters (source/SASS view) of one action, the `wanted` ones or all, with file:line
    where one of the `locate` columns is non-zero (None: nowhere; for all columns: everywhere;
    nowhere without `locating`) and then the embedded source files, those two read through
    `coded` (a launch of the same code);
    the frame's pc is an offset from the function start (`base`).

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
    everywhere = wanted is None  # all columns: the full source view, located everywhere
    deciding = [values for name, values in columns.items() if locate is not None and name in locate]

    def located(pc: int) -> bool:
        return locating and (everywhere or any(values.get(pc) for values in deciding))

    where = [coded.source_info(pc) if located(pc) else None for pc in pcs]
    frame = pd.DataFrame(
        {
            "pc": [pc - base for pc in pcs],
            "file": [info.file_name() if info is not None else None for info in where],
            "line": [info.line() if info is not None else None for info in where],
            **{name: [values.get(pc, 0.0) for pc in pcs] for name, values in columns.items()},
        }
    )
    files = dict(coded.source_files().items()) if locating and (everywhere or locate) else {}
    return frame, files, base
