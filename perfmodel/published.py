"""Published kernel measurements on the GPUs we cannot run, beside the model's prediction for the
same work.

Each measurement in perfmodel/data/published_results.toml states the kernel it timed precisely
enough to count its work: a STREAM-type kernel (arrays, element size, elements, loads and stores
per element), a GEMM (M, N, K, precision), a 3D stencil (grid and the rocprof byte counts the
source reports), an FMA throughput loop. :func:`kernel_work` turns that statement into the model's
inputs (perfmodel.features.KernelFeatures: bytes and sectors per memory level, requests,
instructions per pipe, MMA opcodes, the launch) for the target GPU, and perfmodel.model.predict
gives its time in the measurement's launch context. Nothing here is fitted: the work follows from
the stated kernel by the counting rules below, and no figure of this file is a hardware parameter
(the hardware files cite which benchmark columns they took; those columns are not rows here).

Work counting rules (warp = the target's warp or wavefront size w):

- stream: N elements of E bytes; per element `loads` load instructions touching `reads` distinct
  arrays (a 3-point stencil loads 3 neighbours of one array), `writes` stores, `flops` FP
  instructions; one element per thread. DRAM reads reads x N x E and writes writes x N x E (the
  arrays exceed the last-level cache) unless `l2_resident`; L2 and L1-to-L2 traffic the same bytes;
  L1 sectors loads x N x E / 32; requests loads x N / w; instructions per thread: the loads,
  stores and FP instructions plus 7 for indexing and the bounds check (6 integer, 1 branch).
  A grid-stride `dot` (partial sums per block) has `grid_per_sm` blocks per SM.
- gemm: 2 M N K FLOPs on the tensor pipe as the target's own MMA opcode (HMMA.16816 on sm_80,
  HGMMA.64x256x16 on sm_90, UTCHMMA.128x256x16 on sm_100, rocprof's 512-FLOP MFMA MOPs on CDNA,
  issued as 32x32x8 MFMAs of 16384 FLOPs); output tiles of the library's usual size (128x128 on
  sm_80, 128x256 on sm_90/100, 256x256 on CDNA), one block each; DRAM reads each operand once
  (M K + K N elements) and writes M N; the L2 serves each operand panel once per tile row or
  column, of 256 x 256 on sm_90/sm_100 where a cluster of two blocks shares its panels by TMA
  multicast (M K x N / tile_n + K N x M / tile_m elements); shared-memory (LDS) traffic where the
  operands pass through registers (sm_80, CDNA): the panels stored once and read once per warp of a
  2 x 2 warp grid; loads are asynchronous copies, so no warp waits on a chain of them.
- stencil7: the 7-point Laplacian of an nx x ny x nz grid of doubles, 256-thread blocks, each
  thread computing m points along y (loads per point (5 m + 2) / m); DRAM bytes are the source's
  rocprof FETCH_SIZE / WRITE_SIZE (counts of work, not time), L2 requests FETCH_SIZE / (1 - the
  source's L2 hit rate).
- fma: independent FP32 FMA chains, no memory traffic.

The comparison is of time: model / published = predicted time / measured time (rates become
times through the work the benchmark itself counts: its bytes or FLOPs over its figure). Below 1
the model is faster than the hardware was. Rows outside 0.7-1.4 carry the reason.

perfmodel.validate.document() puts :func:`section` into docs/validation.md.
"""

from __future__ import annotations

import math
import statistics
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from perfmodel.features import KernelFeatures
from perfmodel.hardware import (
    GPU,
    SECTOR_BYTES,
    SHARED_WAVEFRONT_BYTES,
    gpu,
    gpu_ids_in_listing_order,
)

UNITS = {"GB/s": 1e9, "TFLOP/s": 1e12, "ms": 1e-3, "us": 1e-6}
RATE_UNITS = ("GB/s", "TFLOP/s")
BAND = (0.7, 1.4)  # ratios outside it need an explanation in the data file
KINDS = ("stream", "gemm", "stencil7", "fma")
CONTEXTS = ("event", "isolated", "back-to-back")


@dataclass(frozen=True)
class Source:
    title: str
    authors: str
    publisher: str
    year: str
    url: str
    where: str

    def citation(self) -> str:
        return f"{self.authors}, \"{self.title}\", {self.publisher}, {self.year}, <{self.url}>: {self.where}"


@dataclass(frozen=True)
class Measurement:
    gpu: str
    kernel: str
    work: Mapping[str, object]
    measured: float
    unit: str
    context: str
    benchmark: str
    comparability: str
    source: Source
    outside: str = ""  # why the ratio falls outside BAND, where it does

    def counted(self) -> float:
        """What the benchmark divides by its time for a rate: its bytes or its FLOPs."""
        return counted_work(self.work)

    def seconds(self) -> float:
        """The measured time of one launch."""
        scale = UNITS[self.unit]
        if self.unit in RATE_UNITS:
            return self.counted() / (self.measured * scale)
        return self.measured * scale


@dataclass(frozen=True)
class Row:
    measurement: Measurement
    predicted_s: float | None
    lower_bound: bool = False
    bound: str = ""
    error: str = ""

    @property
    def gpu(self) -> str:
        return self.measurement.gpu

    @property
    def ratio(self) -> float | None:
        """Predicted time / measured time."""
        if self.predicted_s is None:
            return None
        return self.predicted_s / self.measurement.seconds()

    @property
    def predicted_in_unit(self) -> float | None:
        """The prediction in the measurement's unit (a rate over the benchmark's own work count)."""
        if self.predicted_s is None:
            return None
        m = self.measurement
        if m.unit in RATE_UNITS:
            return m.counted() / self.predicted_s / UNITS[m.unit]
        return self.predicted_s / UNITS[m.unit]


@dataclass
class Summary:
    gpu: str
    rows: int
    median: float | None
    low: float | None
    high: float | None
    q1: float | None = None
    q3: float | None = None
    outside: list[str] = field(default_factory=list)


def load(path: Path | None = None) -> list[Measurement]:
    text = path.read_text() if path else resources.files("perfmodel").joinpath("data/published_results.toml").read_text()
    data = tomllib.loads(text)
    out = []
    for entry in data.get("measurement", []):
        out.append(Measurement(gpu=entry["gpu"], kernel=entry["kernel"], work=dict(entry["work"]), measured=float(entry["measured"]),
                               unit=entry["unit"], context=entry["context"], benchmark=entry["benchmark"],
                               comparability=entry["comparability"], source=Source(**{k: str(v) for k, v in entry["source"].items()}),
                               outside=entry.get("outside", "")))
    return out


# ------------------------------------------------------------------ work counting

def counted_work(work: Mapping[str, object]) -> float:
    """The bytes or FLOPs the benchmark counts for its rate (its own convention)."""
    if "counted" in work:
        return float(work["counted"])
    kind = work["kind"]
    if kind == "stream":
        return float(work["streams"]) * float(work["elements"]) * float(work["element_bytes"])
    if kind == "gemm":
        return 2.0 * float(work["m"]) * float(work["n"]) * float(work["k"]) * float(work.get("batch", 1))
    if kind == "fma":
        return float(work["flops"])
    raise ValueError(f"{kind}: give the benchmark's own work count as work.counted")


def _warp(hardware: GPU) -> float:
    return hardware.require("warp_size")


def _stream(hardware: GPU, w: Mapping[str, object], name: str) -> KernelFeatures:
    warp = _warp(hardware)
    n = float(w["elements"])
    size = float(w["element_bytes"])
    loads, reads, writes = float(w.get("loads", w.get("reads", 0))), float(w.get("reads", 0)), float(w.get("writes", 0))
    flops = float(w.get("flops", 0))
    block = int(w["threads_per_block"])
    if "grid_per_sm" in w:
        grid = int(float(w["grid_per_sm"]) * hardware.require("sm_count"))
    else:
        grid = math.ceil(n / block)
    read_bytes, write_bytes = reads * n * size, writes * n * size
    resident = bool(w.get("l2_resident", False))
    counts = {
        "dram_bytes_read": 0.0 if resident else read_bytes, "dram_bytes_write": 0.0 if resident else write_bytes,
        "l2_sectors_read": read_bytes / SECTOR_BYTES, "l2_sectors_write": write_bytes / SECTOR_BYTES,
        "l1_to_l2_read_bytes": read_bytes, "l1_to_l2_write_bytes": write_bytes,
        "global_load_sectors": loads * n * size / SECTOR_BYTES, "global_store_sectors": write_bytes / SECTOR_BYTES,
        "global_load_requests": loads * n / warp, "global_store_requests": writes * n / warp,
        "global_store_bytes_per_sector": float(SECTOR_BYTES),
    }
    warps = n / warp
    precision = "fp64" if size == 8 else "fp32"
    pipes = {"lsu": (loads + writes) * warps, precision: flops * warps, "alu": 6 * warps, "branch": warps}
    pipes = {p: v for p, v in pipes.items() if v}
    counts["instructions"] = sum(pipes.values())
    return KernelFeatures(name=name, grid_blocks=grid, threads_per_block=block, registers_per_thread=int(w.get("registers", 32)),
                          shared_bytes_per_block=0, counts=counts, warp_instructions_by_pipe=pipes,
                          flops={precision: float(w.get("flop_count", 2 * flops)) * n})


@dataclass(frozen=True)
class _Mma:
    opcode: str  # as the tensor term reads it
    flops: float  # FLOPs of one counted opcode
    issued: float  # FLOPs of one issued instruction
    tile: tuple[int, int]  # output tile of one block
    traffic_tile: tuple[int, int]  # output tile whose operand panels the L2 serves once
    through_registers: bool


def _mma(hardware: GPU, dtype: str) -> _Mma:
    """The target's MMA as the profiler counts it: the opcode the tensor term rates and its FLOPs,
    the FLOPs of one issued instruction, the library's usual output tile per block, the tile whose
    operand panels the L2 serves once (a cluster sharing them by TMA multicast on sm_90/sm_100) and
    whether the operands pass through registers (shared-memory or LDS reads per warp)."""
    bf16 = dtype == "bf16"
    if hardware.vendor == "amd":
        # rocprof counts MFMA work in 512-FLOP MOPs; one v_mfma_f32_32x32x8_{f16,bf16} issues 16384 FLOPs.
        return _Mma(f"MFMA_MOPS.{'BF16' if bf16 else 'F16'}.16x8x8", 512.0, 2.0 * 32 * 32 * 8, (256, 256), (256, 256), True)
    suffix = ".BF16" if bf16 else ""
    if hardware.arch.startswith("sm_8"):
        return _Mma("HMMA.16816.F32" + suffix, 2.0 * 16 * 8 * 16, 2.0 * 16 * 8 * 16, (128, 128), (128, 128), True)
    if hardware.arch.startswith("sm_9"):
        flops = 2.0 * 64 * 256 * 16 / 4  # a warpgroup instruction, counted once per warp
        return _Mma("HGMMA.64x256x16.F32" + suffix, flops, flops, (128, 256), (256, 256), False)
    flops = 2.0 * 128 * 256 * 16 / 4
    return _Mma("UTCHMMA.128x256x16.F32" + suffix, flops, flops, (128, 256), (256, 256), False)


def _gemm(hardware: GPU, w: Mapping[str, object], name: str) -> KernelFeatures:
    m, n, k = (float(w[d]) for d in ("m", "n", "k"))
    batch = float(w.get("batch", 1))
    size = 2.0  # fp16 / bf16 operands and output
    mma = _mma(hardware, str(w["dtype"]))
    tile_m, tile_n = mma.tile
    share_m, share_n = mma.traffic_tile
    flops = 2.0 * m * n * k * batch
    grid = int(math.ceil(m / tile_m) * math.ceil(n / tile_n) * batch)
    panels = (m * k * math.ceil(n / share_n) + k * n * math.ceil(m / share_m)) * size * batch
    written = m * n * size * batch
    counts = {
        "dram_bytes_read": (m * k + k * n) * size * batch, "dram_bytes_write": written,
        "l2_sectors_read": panels / SECTOR_BYTES, "l2_sectors_write": written / SECTOR_BYTES,
        "l1_to_l2_read_bytes": panels, "l1_to_l2_write_bytes": written,
        "global_load_sectors": panels / SECTOR_BYTES, "global_store_sectors": written / SECTOR_BYTES,
        "global_store_bytes_per_sector": float(SECTOR_BYTES),
    }
    warp = _warp(hardware)
    pipes = {"tensor": flops / mma.issued}
    if mma.through_registers:
        # 2 x 2 warps per tile: each reads its (tile_m/2 + tile_n/2) x K operand slices once.
        lds_reads = grid * 4 * (tile_m / 2 + tile_n / 2) * k * size
        counts["shared_store_wavefronts"] = panels / SHARED_WAVEFRONT_BYTES
        counts["shared_load_wavefronts"] = lds_reads / SHARED_WAVEFRONT_BYTES
        pipes["lsu"] = (2 * panels + lds_reads) / (warp * 16)  # 16-byte accesses per lane: global loads, stores and reads of the staging buffer
    counts["instructions"] = sum(pipes.values())
    shared = int((tile_m + tile_n) * (32 if mma.through_registers else 64) * size * (2 if hardware.vendor == "amd" else 4))
    return KernelFeatures(name=name, grid_blocks=grid, threads_per_block=256, registers_per_thread=128,
                          shared_bytes_per_block=shared, counts=counts, warp_instructions_by_pipe=pipes,
                          flops={"tensor": flops}, tensor_instructions={mma.opcode: flops / mma.flops})


def _stencil7(hardware: GPU, w: Mapping[str, object], name: str) -> KernelFeatures:
    warp = _warp(hardware)
    nx, ny, nz = (float(w[d]) for d in ("nx", "ny", "nz"))
    m = float(w.get("tile", 1))
    points = (nx - 2) * (ny - 2) * (nz - 2)
    loads = points * (5 * m + 2) / m
    fetch, write = float(w["fetch_bytes"]), float(w["write_bytes"])
    l2_reads = fetch / (1.0 - float(w["l2_hit"]))
    counts = {
        "dram_bytes_read": fetch, "dram_bytes_write": write,
        "l2_sectors_read": l2_reads / SECTOR_BYTES, "l2_sectors_write": write / SECTOR_BYTES,
        "l1_to_l2_read_bytes": l2_reads, "l1_to_l2_write_bytes": write,
        "global_load_sectors": loads * 8 / SECTOR_BYTES, "global_store_sectors": points * 8 / SECTOR_BYTES,
        "global_load_requests": loads / warp, "global_store_requests": points / warp,
        "global_store_bytes_per_sector": float(SECTOR_BYTES),
    }
    threads = nx * ny * nz / m
    pipes = {"lsu": (loads + points) / warp, "fp64": 10 * points / warp, "alu": 12 * threads / warp, "branch": threads / warp}
    counts["instructions"] = sum(pipes.values())
    block = 256
    return KernelFeatures(name=name, grid_blocks=int(threads / block), threads_per_block=block,
                          registers_per_thread=int(w.get("registers", 32)), shared_bytes_per_block=0, counts=counts,
                          warp_instructions_by_pipe=pipes, flops={"fp64": 10 * points})


def _fma(hardware: GPU, w: Mapping[str, object], name: str) -> KernelFeatures:
    warp = _warp(hardware)
    flops = float(w["flops"])
    block = int(w.get("threads_per_block", 256))
    grid = int(float(w.get("grid_per_sm", 8)) * hardware.require("sm_count"))
    fma = flops / 2 / warp
    pipes = {"fp32": fma, "alu": fma / 16, "branch": fma / 16}  # an unrolled loop: 16 FMAs per iteration
    return KernelFeatures(name=name, grid_blocks=grid, threads_per_block=block, registers_per_thread=32, shared_bytes_per_block=0,
                          counts={"instructions": sum(pipes.values())}, warp_instructions_by_pipe=pipes, flops={"fp32": flops})


BUILDERS = {"stream": _stream, "gemm": _gemm, "stencil7": _stencil7, "fma": _fma}


def kernel_work(measurement: Measurement, hardware: GPU | None = None) -> KernelFeatures:
    """The model's inputs for the measured kernel on its GPU (counted there: no retargeting)."""
    hardware = hardware or gpu(measurement.gpu)
    return BUILDERS[str(measurement.work["kind"])](hardware, measurement.work, measurement.kernel)


# ------------------------------------------------------------------ comparison

def compare(measurements: Iterable[Measurement] | None = None) -> list[Row]:
    """Every measurement with the model's prediction of the same work on the same GPU."""
    from perfmodel.model import predict

    rows = []
    for m in (load() if measurements is None else measurements):
        try:
            p = predict(gpu(m.gpu), kernel_work(m), m.context)
        except ValueError as exc:
            rows.append(Row(m, None, error=str(exc)))
            continue
        rows.append(Row(m, p.predicted_ns * 1e-9, lower_bound=p.lower_bound, bound=p.bound))
    order = gpu_ids_in_listing_order()
    rows.sort(key=lambda r: (order.index(r.gpu) if r.gpu in order else 99))
    return rows


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summaries(rows: Iterable[Row]) -> list[Summary]:
    """Per GPU: rows, median ratio, its range and interquartile range, the rows outside BAND."""
    by_gpu: dict[str, list[Row]] = {}
    for row in rows:
        by_gpu.setdefault(row.gpu, []).append(row)
    out = []
    for gpu_id, group in by_gpu.items():
        ratios = [r.ratio for r in group if r.ratio is not None]
        if not ratios:
            out.append(Summary(gpu_id, len(group), None, None, None))
            continue
        outside = [r.measurement.kernel for r in group if r.ratio is not None and not BAND[0] <= r.ratio <= BAND[1]]
        out.append(Summary(gpu_id, len(group), statistics.median(ratios), min(ratios), max(ratios),
                           _quantile(ratios, 0.25), _quantile(ratios, 0.75), outside))
    return out


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:,.3g} {unit}"


def summary_markdown(rows: list[Row]) -> list[str]:
    lines = ["| GPU | rows | median model / published | range | interquartile range | rows outside 0.7-1.4 |",
             "|---|---|---|---|---|---|"]
    for s in summaries(rows):
        if s.median is None:
            lines.append(f"| {s.gpu} | {s.rows} | — | — | — | — |")
            continue
        lines.append(f"| {s.gpu} | {s.rows} | {s.median:.2f} | {s.low:.2f}-{s.high:.2f} | {s.q1:.2f}-{s.q3:.2f} | {len(s.outside)} |")
    return lines


def comparison_markdown(rows: Iterable[Row]) -> str:
    """One line per measurement: the kernel, the published figure, the model's figure for the same
    work (>= where the prediction is a lower bound), their time ratio, the binding limit, the reason
    for a ratio outside 0.7-1.4, and the source."""
    lines = ["| GPU | kernel (work) | published | model | model / published (time) | model's bound | note | source |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        m = row.measurement
        predicted = _number(row.predicted_in_unit, m.unit)
        if row.lower_bound and row.predicted_in_unit is not None:
            # a lower bound on time: an upper bound on a rate
            predicted = ("<= " if m.unit in RATE_UNITS else ">= ") + predicted
        ratio = f"{row.ratio:.2f}" if row.ratio is not None else "—"
        note = m.outside if (row.ratio is not None and not BAND[0] <= row.ratio <= BAND[1]) else ""
        if row.error:
            note = f"not predicted: {row.error}"
        cells = [m.gpu, f"{m.kernel}: {m.benchmark}", _number(m.measured, m.unit), predicted, ratio, row.bound or "—",
                 note, m.source.citation()]
        lines.append("| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines)


def section(rows: list[Row] | None = None) -> list[str]:
    """docs/validation.md's published-measurements section."""
    rows = compare() if rows is None else rows
    intro = ("Published measurements of kernels whose work the source states (perfmodel/data/published_results.toml, "
             "each with its source and where in it), predicted by the model on the same GPU from that work "
             "(perfmodel/published.py counts it: bytes, requests, instructions, MMA opcodes and launch of the stated kernel). "
             "model / published is predicted time over measured time (rates turned into times by the benchmark's own byte or "
             "FLOP count): below 1 the model is faster than the hardware was. No figure here sets a hardware parameter; the "
             "benchmark columns the hardware files cite are not rows here. A model figure marked <= or >= is a lower bound "
             "on time (a parameter is missing: docs/model.md, 'Parameters no source gives').")
    return ["## Published measurements beside the predictions", "", intro, "",
            "Per GPU (model / published time):", "", *summary_markdown(rows), "",
            comparison_markdown(rows), ""]
