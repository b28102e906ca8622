"""What each section of a kernel's report shows, as plain data computed from a Profile (and the
profile's own sections above its kernels: the fusions of its launches).

Figures (keet/report/figures.py) and the HTML template only draw what these functions return,
so the numbers a reader sees are testable without a browser. A section whose data the profile
does not hold returns None; :func:`missing_note` says what to collect instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

# The model's predictions live in the analysis layer, which every presenter shares; the report's
# figures and assembly (and code written against this module) still name them from here.
from keet.analysis.predictions import (  # noqa: F401 - re-exported
    CLOCK_MISMATCH,
    GPUPrediction,
    Predictions,
    model_inputs,
    predictions,
)
from keet.canonical import vocabulary
from keet.diagnosis.fusion import ASSUMPTION, MIN_SHARE, Fusion
from keet.profile import Kernel, Profile
from perfmodel.hardware import SECTOR_BYTES, SHARED_WAVEFRONT_BYTES

HOT_LINES = 8
EXCERPT_CONTEXT = 2
EXCERPT_MAX_LINES = 80
PC_SAMPLES = "smsp__pcsamp_sample_count"
# A precision with less than this share of a kernel's FLOPs (a stray HFMA2 in an FP32 GEMM) is
# left off its roofline: its point would sit decades below and say nothing.
ROOFLINE_MIN_FLOP_SHARE = 0.01
STALL_SAMPLE_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
# The least share of its time a chain's fusion wins to be shown (keet.diagnosis.fusion)
FUSION_MIN_SHARE = MIN_SHARE


@dataclass
class Ceiling:
    """A roof: a bandwidth (byte/second) or a compute peak (flop/second), and where it came from."""

    label: str
    value: float
    unit: str
    origin: str


@dataclass
class RooflinePoint:
    level: str  # "DRAM", "L2", "L1/shared"
    precision: str  # "fp32", "fp64", "fp16", "tensor"
    flops: float
    bytes: float
    seconds: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def performance(self) -> float:
        return self.flops / self.seconds


@dataclass
class Roofline:
    gpu: str | None  # hardware id of the ceilings (None: the database does not describe the GPU)
    clock_hz: float | None
    clock_origin: str
    memory: list[Ceiling]
    compute: list[Ceiling]
    points: list[RooflinePoint]


@dataclass
class MemoryLink:
    """Traffic between two levels of the hierarchy in one direction."""

    source: str
    target: str
    bytes: float
    per_second: float | None
    what: str  # "reads", "writes", "requests"


@dataclass
class MemoryChart:
    links: list[MemoryLink]
    hit_rates: dict[str, float]  # level -> percent
    shared: dict[str, float]  # wavefronts, ideal wavefronts, bank conflicts (when the kernel uses shared memory)
    rows: list[tuple[str, float, str]]  # every figure as (label, value, unit) for the table beside the chart


@dataclass
class Stall:
    metric: str
    reason: str
    meaning: str
    cycles_per_instruction: float


@dataclass
class Hotspot:
    file: str
    line: int
    text: str | None
    share: float  # of the kernel's samples (or executed instructions)
    value: float
    top_stall: str | None


@dataclass
class Excerpt:
    file: str
    lines: list[tuple[int, str, float]]  # (line number, text, share of the counter)


@dataclass
class Hotspots:
    counter: str
    counter_label: str
    lines: list[Hotspot]
    excerpts: list[Excerpt]


# ---------------------------------------------------------------- summary


def occupancy_limiter(profile: Profile, kernel: Kernel) -> str | None:
    """What caps the blocks per SM (the smallest of Nsight Compute's limits), or None."""
    limits = {name: profile.value(kernel, f"occupancy.limit_{name}") for name in ("registers", "shared", "warps", "blocks")}
    known = {name: value for name, value in limits.items() if value is not None}
    if not known:
        return None
    smallest = min(known.values())
    labels = {"registers": "registers", "shared": "shared memory", "warps": "warps per SM", "blocks": "blocks per SM"}
    return " and ".join(labels[name] for name, value in known.items() if value == smallest) + f" ({smallest:.0f} blocks/SM)"


# ---------------------------------------------------------------- roofline


def _clock(profile: Profile, kernel: Kernel, gpu) -> tuple[float | None, str]:
    measured = profile.value(kernel, "sm_clock") or profile.device.sm_clock_hz
    if measured:
        return measured, "the SM clock the profile ran at"
    if gpu is not None and gpu.value("clock_boost_hz"):
        return gpu.value("clock_boost_hz"), f"{gpu.id} boost clock (the profile does not say its clock)"
    return None, "unknown"


def _param_origin(gpu, name: str) -> str:
    param = gpu.params[name]
    return f"{param.source}: {param.ref}"


def ceilings(gpu, clock_hz: float) -> tuple[list[Ceiling], list[Ceiling]]:
    """Memory and compute roofs of a GPU at an SM clock: per-clock rates times the clock (the
    DRAM roof is the measured achievable bandwidth where calibrated, else the vendor's)."""
    sms = gpu.value("sm_count") or 0
    memory: list[Ceiling] = []
    for label, name in (("DRAM", "dram_achievable_bytes_per_s"), ("DRAM", "dram_bandwidth_bytes_per_s")):
        if gpu.value(name):
            memory.append(Ceiling(label, gpu.value(name), "byte/second", _param_origin(gpu, name)))
            break
    if gpu.value("l2_bandwidth_bytes_per_clk"):
        memory.append(Ceiling("L2", gpu.value("l2_bandwidth_bytes_per_clk") * clock_hz, "byte/second",
                              _param_origin(gpu, "l2_bandwidth_bytes_per_clk")))
    if gpu.value("shared_bandwidth_bytes_per_clk_per_sm") and sms:
        memory.append(Ceiling("L1/shared", gpu.value("shared_bandwidth_bytes_per_clk_per_sm") * sms * clock_hz, "byte/second",
                              _param_origin(gpu, "shared_bandwidth_bytes_per_clk_per_sm")))
    compute: list[Ceiling] = []
    for label, per_clock in (("fp64", ("fp64_flops_per_clk_per_sm",)), ("fp32", ("fp32_flops_per_clk_per_sm",)),
                             ("tensor fp16", ("tensor_mma_sync_fp16_flops_per_clk_per_sm", "tensor_fp16_flops_per_clk_per_sm"))):
        name = next((n for n in per_clock if gpu.value(n)), None)
        if name and sms:
            compute.append(Ceiling(label, gpu.value(name) * sms * clock_hz, "flop/second", _param_origin(gpu, name)))
    return memory, compute


def work_counts(profile: Profile, kernel: Kernel, work) -> dict[str, float]:
    """The kernel's traffic and work counts as the model reads them (perfmodel.features: from
    the canonical metrics on NVIDIA, from the rocprof counters on AMD); the canonical metrics
    alone where the model has no features for the kernel."""
    from perfmodel.features import WORK_COUNTS

    if work is not None:
        return dict(work.counts)
    return {feature: value for feature, metric in WORK_COUNTS.items() if (value := profile.value(kernel, metric)) is not None}


def level_bytes(counts: dict[str, float]) -> dict[str, float]:
    """Bytes each level of the hierarchy moved for the kernel (only levels the profile counts)."""
    sectors = lambda *names: sum(counts.get(n, 0.0) for n in names) * SECTOR_BYTES
    found = {
        "L1/shared": sectors("global_load_sectors", "global_store_sectors", "local_load_sectors", "local_store_sectors")
        + (counts.get("shared_load_wavefronts", 0.0) + counts.get("shared_store_wavefronts", 0.0)) * SHARED_WAVEFRONT_BYTES,
        "L2": sectors("l2_sectors_read", "l2_sectors_write", "l2_sectors_atomic"),
        "DRAM": counts.get("dram_bytes_read", 0.0) + counts.get("dram_bytes_write", 0.0),
    }
    return {level: amount for level, amount in found.items() if amount > 0}


def kernel_flops(profile: Profile, kernel: Kernel, work) -> dict[str, float]:
    """FLOPs per precision: from the model's per-opcode counts where the profile has them, else
    the canonical flop.* metrics; tensor FLOPs from the MMA shapes."""
    from perfmodel.model import tensor_flops_per_instruction

    flops = dict(work.flops) if work is not None and work.flops else {}
    if not flops:
        for precision in ("fp32", "fp64", "fp16"):
            if (count := profile.value(kernel, f"flop.{precision}")) is not None:
                flops[precision] = count
    if work is not None and work.tensor_instructions:
        flops["tensor"] = sum(n * tensor_flops_per_instruction(op) for op, n in work.tensor_instructions.items())
    return {precision: count for precision, count in flops.items() if count > 0}


def roofline(profile: Profile, kernel: Kernel, work, gpu) -> Roofline | None:
    """The kernel's points per memory level and precision, under the GPU's roofs; None when the
    kernel did no floating-point work or moved no counted bytes (a roofline says nothing then)."""
    flops = kernel_flops(profile, kernel, work)
    flops = {p: n for p, n in flops.items() if n >= ROOFLINE_MIN_FLOP_SHARE * sum(flops.values())}
    moved = level_bytes(work_counts(profile, kernel, work))
    if not flops or not moved or not kernel.duration_ns:
        return None
    seconds = kernel.duration_ns * 1e-9
    points = [RooflinePoint(level, precision, count, amount, seconds) for precision, count in flops.items() for level, amount in moved.items()]
    clock, origin = _clock(profile, kernel, gpu)
    memory, compute = ceilings(gpu, clock) if gpu is not None and clock else ([], [])
    return Roofline(gpu.id if gpu is not None else None, clock, origin, memory, compute, points)


# ---------------------------------------------------------------- memory chart


def memory_chart(profile: Profile, kernel: Kernel, work) -> MemoryChart | None:
    """Traffic between the SMs, L1, L2 and DRAM, with hit rates and shared-memory wavefronts."""
    counts = work_counts(profile, kernel, work)
    seconds = (kernel.duration_ns or 0.0) * 1e-9
    links: list[MemoryLink] = []
    for source, target, what, amount in (
            ("SM", "L1", "reads", (counts.get("global_load_sectors", 0.0) + counts.get("local_load_sectors", 0.0)) * SECTOR_BYTES),
            ("SM", "L1", "writes", (counts.get("global_store_sectors", 0.0) + counts.get("local_store_sectors", 0.0)) * SECTOR_BYTES),
            ("L1", "L2", "reads", counts.get("l1_to_l2_read_bytes", counts.get("l2_sectors_read", 0.0) * SECTOR_BYTES)),
            ("L1", "L2", "writes", counts.get("l1_to_l2_write_bytes", counts.get("l2_sectors_write", 0.0) * SECTOR_BYTES)),
            ("L2", "DRAM", "reads", counts.get("dram_bytes_read", 0.0)),
            ("L2", "DRAM", "writes", counts.get("dram_bytes_write", 0.0))):
        if amount:
            links.append(MemoryLink(source, target, amount, amount / seconds if seconds else None, what))
    value = lambda metric: profile.value(kernel, metric)
    if not counts.get("dram_bytes_read") and not counts.get("dram_bytes_write") and value("dram.bytes"):
        links.append(MemoryLink("L2", "DRAM", value("dram.bytes"), value("dram.bytes") / seconds if seconds else None, "reads + writes"))
    hit_rates = {level: rate for level, metric in (("L1", "l1.hit_rate_pct"), ("L2", "l2.hit_rate_pct")) if (rate := value(metric)) is not None}
    shared = {name: amount for name, metric in (("wavefronts", "shared.wavefronts"), ("ideal wavefronts", "shared.ideal_wavefronts"),
                                                ("bank conflicts", "shared.bank_conflicts")) if (amount := value(metric))}
    if not links and not hit_rates and not shared:
        return None
    rows = [(f"{link.source} to {link.target} {link.what}", link.bytes, "byte") for link in links]
    rows += [(f"{level} hit rate", rate, "%") for level, rate in hit_rates.items()]
    rows += [(f"shared memory {name}", amount, "wavefront") for name, amount in shared.items()]
    if spill := (counts.get("local_load_sectors", 0.0) + counts.get("local_store_sectors", 0.0)) * SECTOR_BYTES:
        rows.append(("local memory (spills) traffic", spill, "byte"))
    return MemoryChart(links, hit_rates, shared, rows)


# ---------------------------------------------------------------- stalls


def stalls(profile: Profile, kernel: Kernel) -> list[Stall] | None:
    """Warp cycles per issued instruction by stall reason, largest first (None without them)."""
    meanings = {m.name: m.meaning for m in vocabulary()}
    found = [Stall(name, name.removeprefix("stall.").replace("_", " "), meanings.get(name, ""), value)
             for name, (value, _unit) in profile.values(kernel).items() if name.startswith("stall.")]
    found = [s for s in found if s.cycles_per_instruction > 0]
    return sorted(found, key=lambda s: -s.cycles_per_instruction) or None


# ---------------------------------------------------------------- instruction mix


def instruction_mix(profile: Profile, kernel: Kernel, work) -> dict[str, float] | None:
    """Warp-level instructions per pipe (the model's grouping of the profile's opcodes)."""
    pipes = {pipe: count for pipe, count in (work.warp_instructions_by_pipe if work is not None else {}).items() if count > 0}
    if not pipes:
        fallback = {pipe: profile.value(kernel, f"inst.{pipe}") for pipe in ("fp32", "fp64", "tensor", "xu", "lsu")}
        pipes = {pipe: count for pipe, count in fallback.items() if count}
    return dict(sorted(pipes.items(), key=lambda item: -item[1])) or None


def pipe_utilization(profile: Profile, kernel: Kernel) -> dict[str, float]:
    """Busy percentage of each pipe the profile reports (pipe.*_pct)."""
    return {name.removeprefix("pipe.").removesuffix("_pct"): value for name, (value, _unit) in profile.values(kernel).items()
            if name.startswith("pipe.") and name.endswith("_pct")}


# ---------------------------------------------------------------- source hotspots


def hotspots(kernel: Kernel) -> Hotspots | None:
    """The hottest source lines by sampled warps (else executed instructions), with the stall
    reason most sampled there and an excerpt of the source around them."""
    source = kernel.source
    if source is None:
        return None
    lines = source.by_line()
    counter = PC_SAMPLES if PC_SAMPLES in lines.columns else ("inst_executed" if "inst_executed" in lines.columns else None)
    if counter is None or lines.empty or not lines[counter].sum():
        return None
    total = float(lines[counter].sum())
    stall_columns = [c for c in lines.columns if c.startswith(STALL_SAMPLE_PREFIX) and not c.endswith("_not_issued")]
    top = lines[lines[counter] > 0].nlargest(HOT_LINES, counter)
    hot = [Hotspot(row.file, int(row.line), row.text, float(row[counter]) / total, float(row[counter]), _top_stall(row, stall_columns))
           for _, row in top.iterrows()]
    label = "warp samples" if counter == PC_SAMPLES else "executed warp instructions"
    return Hotspots(counter, label, hot, _excerpts(source, lines, counter, total, hot))


def _top_stall(row: pd.Series, columns: list[str]) -> str | None:
    if not columns:
        return None
    column = max(columns, key=lambda c: row[c])
    return column.removeprefix(STALL_SAMPLE_PREFIX).replace("_", " ") if row[column] > 0 else None


def _excerpts(source, lines: pd.DataFrame, counter: str, total: float, hot: list[Hotspot]) -> list[Excerpt]:
    """The source from a little before the first hot line to a little after the last, per file
    whose text the report embedded (at most EXCERPT_MAX_LINES lines, centred on the hottest)."""
    shares = {(f, int(n)): v / total for f, n, v in zip(lines["file"], lines["line"], lines[counter])}
    excerpts = []
    for file in dict.fromkeys(h.file for h in hot):
        text = source.files.get(file)
        if text is None:
            continue
        numbers = [h.line for h in hot if h.file == file]
        first, last = max(1, min(numbers) - EXCERPT_CONTEXT), max(numbers) + EXCERPT_CONTEXT
        if last - first + 1 > EXCERPT_MAX_LINES:
            first = max(1, numbers[0] - EXCERPT_MAX_LINES // 2)
            last = first + EXCERPT_MAX_LINES - 1
        source_lines = text.splitlines()
        excerpts.append(Excerpt(file, [(n, source_lines[n - 1], shares.get((file, n), 0.0))
                                       for n in range(first, min(last, len(source_lines)) + 1)]))
    return excerpts


# ------------------------------------------------------------------ above one kernel


@dataclass
class FusedChain:
    """A chain of launches one kernel could do (keet.diagnosis.fusion), as the profile's fusion
    section shows it: the estimate, its launches' ids and names, and its share of the run."""

    fusion: Fusion
    kernels: list[tuple[int, str]]  # (kernel id, its function name or name), launch order
    share_of_run: float | None  # the recoverable time over the profile's GPU time
    assumption: str = ASSUMPTION

    @property
    def count(self) -> int:
        return len(self.fusion.launches)


def fused_chains(profile: Profile, document: dict) -> list[FusedChain]:
    """The profile's fusions (keet explain's ``fusions``: by recoverable time), with the names of
    their launches. Every string here is the profile's: the page escapes it."""
    names = {kernel.id: kernel.function_name or kernel.name for kernel in profile.kernels}
    total = document.get("total_ns")
    chains = []
    for entry in document.get("fusions") or []:
        fusion = Fusion.from_dict(entry)
        chains.append(FusedChain(fusion, [(kid, names.get(kid, "?")) for kid in fusion.launches],
                                 fusion.recoverable_ns / total if total else None))
    return chains
