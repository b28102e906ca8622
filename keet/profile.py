"""The vendor-neutral Profile every reader returns.

A Profile is a device, a list of kernels (one entry per profiled launch, or per kernel
when a reader aggregates dispatches) and one tidy metrics table. The table holds each
metric twice where we know its meaning: once under the vendor's raw name (``origin ==
"raw"``, in the unit the file used) and once under the canonical vocabulary of
docs/metrics.md (``origin == "canonical"``, in base units).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

METRIC_COLUMNS = ["kernel", "metric", "value", "unit", "origin"]


@dataclass
class Device:
    """The GPU the profile was captured on."""

    name: str
    vendor: str  # "nvidia" or "amd"
    arch: str | None = None  # "sm_90", "gfx942"
    compute_capability: tuple[int, int] | None = None
    sm_count: int | None = None  # SMs (NVIDIA) or CUs (AMD)
    sm_clock_hz: float | None = None  # clock the kernels ran at while profiled
    max_sm_clock_hz: float | None = None
    memory_clock_hz: float | None = None
    memory_bytes: int | None = None
    memory_bus_width_bits: int | None = None
    l2_bytes: int | None = None
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass
class RuleResult:
    """One result of the profiler's own guided-analysis rules, kept as evidence."""

    rule_id: str
    name: str
    section: str | None
    title: str
    message: str
    kind: str  # "optimization", "warning", "error", "ok", "none"
    speedup_type: str | None = None  # "local" / "global"
    estimated_speedup_pct: float | None = None
    focus_metrics: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Kernel:
    """One profiled kernel launch (or an aggregate of ``invocations`` dispatches)."""

    id: int
    name: str  # demangled, as the profiler shows it
    mangled_name: str | None = None
    function_name: str | None = None  # base name: no namespace parameters or templates
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers_per_thread: int | None = None
    static_shared_bytes: int | None = None
    dynamic_shared_bytes: int | None = None
    duration_ns: float | None = None
    device_id: int = 0
    stream: int | None = None
    invocations: int = 1
    process: str | None = None
    range_name: str | None = None  # NVTX range / report range it came from
    attributes: dict[str, Any] = field(default_factory=dict)  # non-numeric metrics
    rule_results: list[RuleResult] = field(default_factory=list)
    # Source/SASS counters are read on first use: they are the slow part of a report.
    source_loader: Callable[[], SourceCounters | None] | None = field(default=None, repr=False, compare=False)
    _source: SourceCounters | None = field(default=None, init=False, repr=False, compare=False)
    # Values derived from this kernel and its profile by a layer above (the model's work counts),
    # kept so that every consumer in one run derives them once; keyed by the deriving function.
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def source(self) -> SourceCounters | None:
        """Per-instruction counters with file:line attribution, when the profile has them."""
        if self._source is None and self.source_loader is not None:
            self._source = self.source_loader()
            self.source_loader = None
        return self._source

    def source_columns(self, columns: Collection[str], locations: bool = False) -> SourceCounters | None:
        """Per-instruction counters with at least `columns` (besides pc, file, line), read alone
        when nothing has read them all yet (a fraction of the cost) and not kept. file:line (and
        the embedded source files) come only with `locations`, and then only for the
        instructions where one of the columns is non-zero: attribution is the costly part."""
        if self._source is None and self.source_loader is not None and getattr(self.source_loader, "takes_columns", False):
            return self.source_loader(columns=frozenset(columns), locations=locations)
        return self.source

    def prefetch_source(self, columns: Collection[str] | None, sass_for: Callable[[pd.DataFrame], list[int]] | None = None,
                        locate: Collection[str] = ()) -> None:
        """Let the reader start reading `columns` (None: all, as :attr:`source`), with file:line
        where one of the `locate` columns is non-zero, and the SASS at the pc offsets `sass_for`
        picks from those counters, in the background where it can (Nsight Compute reports):
        later :meth:`source_columns` reads of any of those columns (with locations: of the
        `locate` ones) are served from it. A caller about to read several kernels prefetches them
        all first, in the order it reads them. `sass_for` must be a module-level function (it
        may run in a worker process)."""
        prefetch = getattr(self.source_loader, "prefetch", None)
        if self._source is None and prefetch is not None:
            prefetch(frozenset(columns) if columns is not None else None, sass_for, frozenset(locate) or None)

    @source.setter
    def source(self, counters: SourceCounters | None) -> None:
        self._source, self.source_loader = counters, None

    @property
    def threads_per_block(self) -> int | None:
        return None if self.block is None else self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int | None:
        return None if self.grid is None else self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def shared_bytes_per_block(self) -> int | None:
        if self.static_shared_bytes is None and self.dynamic_shared_bytes is None:
            return None
        return (self.static_shared_bytes or 0) + (self.dynamic_shared_bytes or 0)


@dataclass(frozen=True)
class SourceRequest:
    """The per-instruction counters a caller will read of every kernel, for a reader that can read
    them together with the kernels' metrics (Nsight Compute reports: what the native reader
    decodes for an action is kept, so one pass per action costs less than two). `columns`
    (None: all), with file:line where one of the `locate` columns is non-zero, and the SASS at the
    pc offsets `sass_for` (a module-level function of the counters) picks, as
    :meth:`Kernel.prefetch_source` takes them."""

    columns: frozenset[str] | None
    sass_for: Callable[[pd.DataFrame], list[int]] | None = None
    locate: frozenset[str] | None = None


@dataclass
class SourceCounters:
    """Per-instruction counters of one kernel, with their source attribution.

    ``instructions`` has one row per SASS instruction: ``pc`` (offset in the
    function), ``file``, ``line`` and one numeric column per counter
    (instructions executed, stall samples per reason, L2 sectors, ...).
    ``files`` maps a source path to its text when the report embedded it.
    """

    instructions: pd.DataFrame
    files: dict[str, str] = field(default_factory=dict)
    # pc offsets -> SASS text; disassembly is slow (ncu-report: 0.4 s to start, 0.04-0.13 ms an instruction), so
    # readers fetch it on demand, many instructions per request.
    sass_loader: Callable[[Iterable[int]], dict[int, str | None]] | None = field(default=None, repr=False, compare=False)
    _sass: dict[int, str | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    def sass_texts(self, pcs: Iterable[int]) -> dict[int, str | None]:
        """The SASS instructions at pc offsets (None where the report cannot disassemble one)."""
        pcs = [int(pc) for pc in pcs]
        missing = sorted({pc for pc in pcs if pc not in self._sass})
        if missing:
            self._sass.update(self.sass_loader(missing) if self.sass_loader is not None else dict.fromkeys(missing))
        return {pc: self._sass[pc] for pc in pcs}

    def sass(self, pc: int) -> str | None:
        """The SASS instruction at a pc offset, where the report can disassemble it."""
        return self.sass_texts([pc])[int(pc)]

    def counter_names(self) -> list[str]:
        fixed = {"pc", "file", "line"}
        return [c for c in self.instructions.columns if c not in fixed]

    def by_line(self) -> pd.DataFrame:
        """Counters summed per source line, with the line's text where known."""
        rows = self.instructions.dropna(subset=["file", "line"])
        if rows.empty:
            return pd.DataFrame(columns=["file", "line", "text", *self.counter_names()])
        lines = rows.groupby(["file", "line"], sort=True)[self.counter_names()].sum().reset_index()
        lines["line"] = lines["line"].astype(int)
        lines.insert(2, "text", [self.line_text(f, n) for f, n in zip(lines["file"], lines["line"])])
        return lines

    def line_text(self, file: str, line: int) -> str | None:
        text = self.files.get(file)
        if text is None:
            return None
        lines = text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else None


@dataclass
class Profile:
    """Everything one profile file says, in one vendor-neutral shape."""

    source: str  # path of the file it was read from
    format: str  # reader id, e.g. "ncu-rep", "ncu-csv-details"
    device: Device
    kernels: list[Kernel]
    metrics: pd.DataFrame  # METRIC_COLUMNS
    tool: str | None = None  # profiler and version where the file says
    devices: dict[int, Device] = field(default_factory=dict)  # when kernels ran on several
    # The reader's way to let go of what it holds for later reads (the ncu-rep reader's worker
    # processes and the report they decoded); later reads still work, and start them again.
    releaser: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_kernel: dict[tuple[int, str], dict[str, tuple[float, str]]] | None = None

    def release_reader(self) -> None:
        """Free what the reader holds for this profile's later reads (source counters, SASS)
        once the caller has read what it needs: a command that reads several big reports
        calls it before reading the next."""
        if self.releaser is not None:
            self.releaser()

    def kernel(self, key: int | str) -> Kernel:
        """A kernel by id, or by name (exact, then function name, then substring)."""
        for matches in self._kernel_matchers(key):
            found = [k for k in self.kernels if matches(k)]
            if found:
                return found[0]
        raise KeyError(f"no kernel {key!r} in {self.source}")

    def select(self, key: int | str | None) -> list[Kernel]:
        """Kernels matching ``key`` (all when None), as ``--kernel`` selects them."""
        if key is None:
            return list(self.kernels)
        for matches in self._kernel_matchers(key):
            found = [k for k in self.kernels if matches(k)]
            if found:
                return found
        return []

    @staticmethod
    def _kernel_matchers(key: int | str):
        if isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
            kid = int(key)
            yield lambda k: k.id == kid
        if isinstance(key, str):
            yield lambda k: k.name == key or k.mangled_name == key
            yield lambda k: k.function_name == key
            yield lambda k: key in k.name

    def _index(self) -> dict[tuple[int, str], dict[str, tuple[float, str]]]:
        if self._by_kernel is None:
            index: dict[tuple[int, str], dict[str, tuple[float, str]]] = {}
            columns = (self.metrics[c].tolist() for c in METRIC_COLUMNS)
            for kid, metric, value, unit, origin in zip(*columns):
                index.setdefault((kid, origin), {})[metric] = (value, unit)
            self._by_kernel = index
        return self._by_kernel

    def value(self, kernel: Kernel | int, metric: str, origin: str = "canonical") -> float | None:
        """One metric of one kernel, or None where the profile lacks it."""
        kid = kernel.id if isinstance(kernel, Kernel) else kernel
        found = self._index().get((kid, origin), {}).get(metric)
        return None if found is None else found[0]

    def values(self, kernel: Kernel | int, origin: str = "canonical") -> dict[str, tuple[float, str]]:
        """All metrics of one kernel as {name: (value, unit)}."""
        kid = kernel.id if isinstance(kernel, Kernel) else kernel
        return dict(self._index().get((kid, origin), {}))

    def total_duration_ns(self) -> float:
        """GPU time of every profiled launch (aggregated kernels count once per invocation)."""
        return sum((k.duration_ns or 0.0) * k.invocations for k in self.kernels)

    def kernel_table(self) -> pd.DataFrame:
        """One row per kernel: identity, launch configuration, resources and duration."""
        total = self.total_duration_ns()
        rows = [
            {
                "id": k.id,
                "name": k.name,
                "grid": k.grid,
                "block": k.block,
                "registers": k.registers_per_thread,
                "shared_bytes": k.shared_bytes_per_block,
                "duration_ns": k.duration_ns,
                "share": (k.duration_ns * k.invocations / total) if (k.duration_ns and total) else None,
                "invocations": k.invocations,
            }
            for k in self.kernels
        ]
        return pd.DataFrame(rows)
