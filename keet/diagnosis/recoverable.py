"""Recoverable time of a finding: what the kernel would save with that inefficiency removed.

Each finding category has one function here (a registry keyed by category, apart from the rules,
which only judge): it changes a copy of the kernel's work counts (perfmodel.features) the way the
fix would (ideal sectors per request, no bank-conflict wavefronts, no local-memory traffic, whole
waves, all SMs busy, ...) and asks the model for the new time. The saving is the model's relative
gain applied to the measured duration, so that it is in the kernel's real time:

    recoverable_ns = measured x (1 - predicted with the fix / predicted as is)

A finding that names the unit the kernel is bound by (DRAM, L2, a pipe, issue) is not an
inefficiency to remove: what can be won there is the kernel's distance from its speed of light,
measured - attainable (keet.diagnosis.speed_of_light: the slowest unit alone), when the model
agrees that unit binds, and nothing when it says another one does. Library kernels add the caller's lever where the model can weigh it (keet/data/
libraries.toml model_lever): TF32 for FP32 matrix products, FP8 for 16-bit ones, a row
normalisation that reads its rows once, and avoiding a layout conversion altogether.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from keet.diagnosis.speed_of_light import (
    LIMITERS,
    SPEED_OF_LIGHT_RULE,
    ModelView,
    attainable_ns,
)
from keet.format import si
from keet.rules import Finding
from perfmodel.features import KernelFeatures, pipe_of
from perfmodel.hardware import SECTOR_BYTES
from perfmodel.model import tensor_flops_per_instruction

SECTOR = float(SECTOR_BYTES)


@dataclass
class Recoverable:
    """Measured time a fix would save (``ns``), the model's time with it (``fixed_ns``), what
    the fix is (``how``) and where the number comes from (``basis``: "model" = the work changed
    and re-predicted, "speed_of_light" = measured - attainable, "lever" = a library lever)."""

    ns: float
    fraction: float  # of the measured duration
    how: str
    basis: str
    fixed_ns: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"recoverable_ns": self.ns, "recoverable_fraction": self.fraction, "recoverable_how": self.how,
                "recoverable_basis": self.basis, "fixed_ns": self.fixed_ns}


# category -> function(view) -> (changed work, what changed) | None (nothing to change)
Change = tuple[KernelFeatures, str]
FIXES: dict[str, Callable[[ModelView], Change | None]] = {}
# categories naming the unit that binds (its recoverable time is the headroom when the model agrees)
BOUND_CATEGORIES = frozenset({"dram_bandwidth", "l2_bandwidth", "l1_shared_bandwidth", "fp32_compute", "fp64_compute",
                              "sfu_compute", "int_compute", "tensor_compute", "instruction_issue"})


def fix(category: str) -> Callable:
    def register(function: Callable[[ModelView], Change | None]) -> Callable[[ModelView], Change | None]:
        FIXES[category] = function
        return function

    return register


def recoverable(view: ModelView, finding: Finding) -> Recoverable | None:
    """The finding's recoverable time, or None when no function knows its category."""
    category = finding.category
    if finding.rule == SPEED_OF_LIGHT_RULE:  # the model's own limiter: the distance to its speed of light
        return _headroom(view, LIMITERS.get(view.base.bound, ("", None))[1])
    if category in BOUND_CATEGORIES:
        return _headroom(view, category)
    if category == "launch_overhead":
        return _launch(view)
    function = FIXES.get(category)
    if function is None:
        return None
    try:
        change = function(view)
        if change is None:
            return Recoverable(0.0, 0.0, "nothing to remove: the counters show none of this inefficiency", "model",
                               view.base.predicted_ns)
        work, how = change
        fixed = view.predict(work)
    except (ValueError, KeyError, ZeroDivisionError):
        return None
    saved = view.scaled(fixed)
    return Recoverable(saved, saved / view.measured_ns, how, "model", fixed.predicted_ns)


def _headroom(view: ModelView, category: str) -> Recoverable:
    binding = LIMITERS.get(view.base.bound, ("", None))[1]
    if binding != category:
        label = LIMITERS.get(view.base.bound, (view.base.bound, None))[0]
        return Recoverable(0.0, 0.0, f"the model says {label}, not this unit, bounds the kernel's work", "speed_of_light",
                           view.base.predicted_ns)
    attainable = attainable_ns(view.base)
    saved = max(0.0, view.measured_ns - attainable)
    return Recoverable(saved, saved / view.measured_ns,
                       f"running at the model's attainable {si(attainable, 'ns')} for this work (its speed of light)",
                       "speed_of_light", attainable)


def _launch(view: ModelView) -> Recoverable:
    overheads = view.base.inputs.get("overheads_ns", 0.0) or 0.0
    fixed = max(0.0, view.base.predicted_ns - overheads)
    saved = view.scaled(fixed)
    return Recoverable(saved, saved / view.measured_ns,
                       "no launch of its own: fused into a neighbour or replayed in a CUDA graph (the model's fixed per-launch cost removed)",
                       "model", fixed)


# ---------------------------------------------------------------- helpers


def _counts(view: ModelView) -> dict[str, float]:
    return dict(view.work.counts)


def _metric(view: ModelView, name: str) -> float | None:
    return view.profile.value(view.kernel, name)


def _opcodes(view: ModelView) -> dict[str, float]:
    table = view.kernel.attributes.get("inst_executed_per_opcode") or {}
    return table if isinstance(table, dict) else {}


def _cap_dram(counts: dict[str, float]) -> None:
    """DRAM cannot move more than the L2 is asked for (reads) or writes back (writes)."""
    if "dram_bytes_read" in counts and "l2_sectors_read" in counts:
        counts["dram_bytes_read"] = min(counts["dram_bytes_read"], counts["l2_sectors_read"] * SECTOR)
    if "dram_bytes_write" in counts and "l2_sectors_write" in counts:
        counts["dram_bytes_write"] = min(counts["dram_bytes_write"], counts["l2_sectors_write"] * SECTOR)


def _l1_miss_share(counts: dict[str, float], sectors: float) -> float:
    """Share of L1 sectors that went on to the L2 (reads), from L1->L2 bytes where counted."""
    if sectors <= 0:
        return 1.0
    to_l2 = counts.get("l1_to_l2_read_bytes")
    return 1.0 if to_l2 is None else min(1.0, to_l2 / SECTOR / sectors)


def _remove_l1_traffic(counts: dict[str, float], loads: float, stores: float, miss: float) -> None:
    """Take L1 load/store sectors off the L2 (and L1->L2 bytes): loads at the L1 miss share,
    stores whole (L1 writes through), then cap DRAM by what the L2 still moves."""
    read_off, write_off = loads * miss, stores
    if "l2_sectors_read" in counts:
        counts["l2_sectors_read"] = max(0.0, counts["l2_sectors_read"] - read_off)
    if "l2_sectors_write" in counts:
        counts["l2_sectors_write"] = max(0.0, counts["l2_sectors_write"] - write_off)
    if "l1_to_l2_read_bytes" in counts:
        counts["l1_to_l2_read_bytes"] = max(0.0, counts["l1_to_l2_read_bytes"] - read_off * SECTOR)
    if "l1_to_l2_write_bytes" in counts:
        counts["l1_to_l2_write_bytes"] = max(0.0, counts["l1_to_l2_write_bytes"] - write_off * SECTOR)
    _cap_dram(counts)


def _line_sectors(view: ModelView) -> float:
    """Sectors per cache line (an ideal request reads whole lines), from the hardware file."""
    line = view.gpu.value("cache_line_bytes")
    return line / SECTOR if line else 4.0


def _scale_requests(counts: dict[str, float], old_reads: float, floor: float | None = None) -> None:
    """L2 read requests after the L2 reads changed: in proportion, or down to ``floor`` (whole
    lines per request) where given."""
    requests, reads = counts.get("l2_read_requests"), counts.get("l2_sectors_read", 0.0)
    if not requests or old_reads <= 0:
        return
    counts["l2_read_requests"] = min(requests, floor if floor is not None else requests * reads / old_reads)


def _per_wave(view: ModelView) -> int | None:
    per_sm = view.base.inputs.get("blocks_per_sm")
    sms = view.gpu.value("sm_count")
    return int(per_sm * sms) if per_sm and sms else None


def _warps(threads: int, warp: float) -> int:
    return math.ceil(threads / warp)


# ---------------------------------------------------------------- one function per category


@fix("uncoalesced_global")
def _ideal_sectors(view: ModelView) -> Change | None:
    """Ideal sectors per request: the excess sectors (Nsight Compute's theoretical minus ideal,
    global.excess_sectors) are not fetched or written, in L1, L2 and DRAM."""
    counts = _counts(view)
    loads, stores = counts.get("global_load_sectors", 0.0), counts.get("global_store_sectors", 0.0)
    excess = _metric(view, "global.excess_sectors")
    if excess is None:  # from bytes per sector: the share of each sector the threads use
        wasted = [(s * (1 - min(SECTOR, b) / SECTOR)) if (b := counts.get(f"global_{k}_bytes_per_sector")) else 0.0
                  for k, s in (("load", loads), ("store", stores))]
        excess = sum(wasted)
    else:
        excess = min(excess, loads + stores)
        waste_load = loads * (1 - min(SECTOR, counts.get("global_load_bytes_per_sector", SECTOR)) / SECTOR)
        waste_store = stores * (1 - min(SECTOR, counts.get("global_store_bytes_per_sector", SECTOR)) / SECTOR)
        weights = (waste_load, waste_store) if waste_load + waste_store > 0 else (loads, stores)
        share = weights[0] / (weights[0] + weights[1]) if sum(weights) > 0 else 0.0
        wasted = [excess * share, excess * (1 - share)]
    if excess <= 0:
        return None
    miss = _l1_miss_share(counts, loads)
    old_reads = counts.get("l2_sectors_read", 0.0)
    counts["global_load_sectors"] = max(0.0, loads - wasted[0])
    if "global_store_sectors" in counts:
        counts["global_store_sectors"] = max(0.0, stores - wasted[1])
    line = _line_sectors(view)
    for kind in ("load", "store"):
        if f"global_{kind}_bytes_per_sector" in counts:
            counts[f"global_{kind}_bytes_per_sector"] = SECTOR
        # the L1 handles a request in one wavefront per line it touches: whole lines now
        if (wavefronts := counts.get(f"global_{kind}_wavefronts")) is not None:
            requests = counts.get(f"global_{kind}_requests", 0.0)
            counts[f"global_{kind}_wavefronts"] = min(wavefronts, max(requests, counts.get(f"global_{kind}_sectors", 0.0) / line))
    _remove_l1_traffic(counts, wasted[0], wasted[1], miss)
    _scale_requests(counts, old_reads, counts.get("l2_sectors_read", 0.0) / line)
    return replace(view.work, counts=counts), f"ideal sectors per request: {excess:,.0f} excess global sectors not moved"


@fix("shared_bank_conflicts")
def _no_conflicts(view: ModelView) -> Change | None:
    """No bank conflicts: shared wavefronts down to the ideal (one per 128 B a warp accesses)."""
    counts = _counts(view)
    loads, stores = counts.get("shared_load_wavefronts", 0.0), counts.get("shared_store_wavefronts", 0.0)
    total = loads + stores
    ideal = _metric(view, "shared.ideal_wavefronts")
    excess = (total - ideal) if ideal is not None else (counts.get("shared_bank_conflicts") or _metric(view, "shared.excess_wavefronts") or 0.0)
    excess = min(max(0.0, excess), total)
    if excess <= 0 or total <= 0:
        return None
    keep = 1 - excess / total
    counts["shared_load_wavefronts"], counts["shared_store_wavefronts"] = loads * keep, stores * keep
    if "shared_bank_conflicts" in counts:
        counts["shared_bank_conflicts"] = 0.0
    return replace(view.work, counts=counts), f"no bank conflicts: {excess:,.0f} excess shared wavefronts removed"


@fix("register_spills")
def _no_local(view: ModelView) -> Change | None:
    """No local-memory traffic (spills or a local array kept in registers): local sectors and
    the LDL/STL instructions gone, and their share of the L2 traffic."""
    counts = _counts(view)
    loads, stores = counts.get("local_load_sectors", 0.0), counts.get("local_store_sectors", 0.0)
    if loads + stores <= 0:
        return None
    miss = _l1_miss_share(counts, loads + counts.get("global_load_sectors", 0.0))
    old_reads = counts.get("l2_sectors_read", 0.0)
    counts["local_load_sectors"] = counts["local_store_sectors"] = 0.0
    for name in ("local_load_wavefronts", "local_store_wavefronts"):
        if name in counts:
            counts[name] = 0.0
    _remove_l1_traffic(counts, loads, stores * miss, miss)  # local stores are cached in L1 (write-back)
    _scale_requests(counts, old_reads)
    pipes = dict(view.work.warp_instructions_by_pipe)
    local = sum(c for op, c in _opcodes(view).items() if op.split(".")[0] in ("LDL", "STL"))
    if local:
        pipes["lsu"] = max(0.0, pipes.get("lsu", 0.0) - local)
        if "instructions" in counts:
            counts["instructions"] = max(0.0, counts["instructions"] - local)
    return replace(view.work, counts=counts, warp_instructions_by_pipe=pipes), (
        f"no local-memory traffic: {loads + stores:,.0f} local sectors and {local:,.0f} LDL/STL instructions removed")


@fix("warp_divergence")
def _converged(view: ModelView) -> Change | None:
    """Converged warps: each pipe's warp instructions down to its thread instructions / 32 (the
    work done with every lane active)."""
    threads = view.kernel.attributes.get("thread_inst_executed_per_opcode") or {}
    warps = _opcodes(view)
    if not threads or not warps:
        return None
    lanes = view.gpu.value("warp_size") or 32.0
    thread_by_pipe: dict[str, float] = {}
    warp_by_pipe: dict[str, float] = {}
    for op, c in threads.items():
        thread_by_pipe[pipe_of(op)] = thread_by_pipe.get(pipe_of(op), 0.0) + c
    for op, c in warps.items():
        warp_by_pipe[pipe_of(op)] = warp_by_pipe.get(pipe_of(op), 0.0) + c
    pipes = dict(view.work.warp_instructions_by_pipe)
    removed = 0.0
    for pipe, count in warp_by_pipe.items():
        ideal = min(count, math.ceil(thread_by_pipe.get(pipe, 0.0) / lanes))
        if pipe in pipes and count > 0:
            pipes[pipe] = pipes[pipe] * ideal / count
        removed += count - ideal
    if removed <= 0:
        return None
    counts = _counts(view)
    if "instructions" in counts:
        counts["instructions"] = max(0.0, counts["instructions"] - removed)
    return replace(view.work, counts=counts, warp_instructions_by_pipe=pipes), (
        f"converged warps: {removed:,.0f} warp instructions fewer (every lane active)")


@fix("tail_effect")
def _whole_waves(view: ModelView) -> Change | None:
    """Whole waves: the same work spread over a whole number of waves (a grid-stride loop)."""
    per_wave, waves = _per_wave(view), view.base.inputs.get("waves")
    if not per_wave or not waves or waves < 1:
        return None
    whole = max(1, round(waves))
    if abs(waves - whole) < 1e-6:
        return None
    blocks = whole * per_wave
    return replace(view.work, grid_blocks=blocks), (
        f"the same work in {whole} whole wave{'s' if whole > 1 else ''} of {per_wave:,} blocks instead of {waves:.2f} waves")


@fix("small_grid")
def _full_wave(view: ModelView) -> Change | None:
    """All SMs busy: the same work over one full wave of blocks."""
    per_wave = _per_wave(view)
    if not per_wave or view.work.grid_blocks >= per_wave:
        return None
    return replace(view.work, grid_blocks=per_wave), (
        f"the same work over {per_wave:,} blocks (one full wave on every SM) instead of {view.work.grid_blocks:,}")


@fix("occupancy_registers")
def _fewer_registers(view: ModelView) -> Change | None:
    """Registers no longer limit occupancy: at most the count that lets every warp slot fill."""
    regs = view.work.registers_per_thread
    per_sm, max_warps, lanes = view.gpu.value("registers_per_sm"), view.gpu.value("max_warps_per_sm"), view.gpu.value("warp_size") or 32
    if not regs or not per_sm or not max_warps:
        return None
    cap = int(per_sm // (max_warps * lanes) // 8 * 8) or 8
    if regs <= cap:
        return None
    return replace(view.work, registers_per_thread=cap), f"registers capped at {cap} per thread (from {regs}): full occupancy"


@fix("occupancy_shared_memory")
def _less_shared(view: ModelView) -> Change | None:
    """Shared memory no longer limits occupancy: the blocks that fill the warp slots fit."""
    shared = view.work.shared_bytes_per_block
    per_sm, max_warps = view.gpu.value("shared_per_sm_bytes"), view.gpu.value("max_warps_per_sm")
    lanes = view.gpu.value("warp_size") or 32
    if not shared or not per_sm or not max_warps:
        return None
    blocks = max(1, int(max_warps // _warps(view.work.threads_per_block, lanes)))
    blocks = min(blocks, int(view.gpu.value("max_blocks_per_sm") or blocks))
    reserved = view.gpu.value("shared_reserved_per_block_bytes") or 0
    fits = int(per_sm // blocks - reserved)
    if shared <= fits:
        return None
    return replace(view.work, shared_bytes_per_block=max(0, fits)), (
        f"shared memory per block cut to {max(0, fits):,} B (from {shared:,} B): {blocks} blocks per SM")


@fix("occupancy_block_limit")
def _bigger_blocks(view: ModelView) -> Change | None:
    """Blocks large enough that the blocks-per-SM limit no longer caps the warps: the same
    threads in fewer, larger blocks."""
    gpu = view.gpu
    lanes = gpu.value("warp_size") or 32
    max_blocks, max_warps, max_threads = gpu.value("max_blocks_per_sm"), gpu.value("max_warps_per_sm"), gpu.value("max_threads_per_block")
    if not max_blocks or not max_warps:
        return None
    warps = _warps(view.work.threads_per_block, lanes)
    factor = math.ceil(max_warps / (max_blocks * warps))
    if max_threads:
        factor = min(factor, int(max_threads // view.work.threads_per_block))
    if factor <= 1:
        return None
    return replace(view.work, threads_per_block=view.work.threads_per_block * factor,
                   grid_blocks=max(1, math.ceil(view.work.grid_blocks / factor))), (
        f"blocks of {view.work.threads_per_block * factor} threads instead of {view.work.threads_per_block}: the blocks-per-SM limit no longer caps the warps")


@fix("memory_latency")
def _latency_hidden(view: ModelView) -> Change | None:
    """Latency hidden: enough independent loads in flight that no warp waits a round trip per
    load (the model's latency chain gone; bandwidth and the other limits remain)."""
    counts = _counts(view)
    if not (counts.get("global_load_requests") or counts.get("global_load_waits") or counts.get("local_load_sectors")):
        return None
    for name in ("global_load_requests", "global_load_waits"):
        if name in counts:
            counts[name] = 0.0
    return replace(view.work, counts=counts), "enough loads in flight to cover the memory latency (no warp waits on each load)"


@fix("barrier_sync")
def _no_barriers(view: ModelView) -> Change | None:
    """No block-wide barriers on the critical path (warp-level exchange instead)."""
    barriers = view.work.barriers
    if not barriers:
        return None
    pipes = dict(view.work.warp_instructions_by_pipe)
    pipes["barrier"] = max(0.0, pipes.get("barrier", 0.0) - barriers)
    counts = _counts(view)
    if "instructions" in counts:
        counts["instructions"] = max(0.0, counts["instructions"] - barriers)
    return replace(view.work, barriers=0.0, counts=counts, warp_instructions_by_pipe=pipes), (
        f"no block-wide barriers ({barriers:,.0f} BAR instructions removed)")


@fix("atomic_contention")
def _spread_atomics(view: ModelView) -> Change | None:
    """Atomics spread over addresses (privatised per block or warp, combined once): none
    serialised on one L2 slice."""
    counts = _counts(view)
    if not counts.get("l2_sectors_atomic") or not counts.get("l2_sectors_busiest_slice"):
        return None
    slices = _metric(view, "l2.slices") or 2 * (view.gpu.value("l2_partitions") or 1)
    counts["l2_sectors_busiest_slice"] = counts["l2_sectors_atomic"] / max(2.0, slices)
    return replace(view.work, counts=counts), "atomics spread over many addresses (privatised per block, combined once)"


# ---------------------------------------------------------------- library levers


def lever(view: ModelView, name: str | None) -> Recoverable | None:
    """What a library kernel's lever (keet/data/libraries.toml model_lever) is worth, or None."""
    function = LEVERS.get(name or "")
    if function is None:
        return None
    try:
        change = function(view)
        if change is None:
            return None
        if isinstance(change, str):  # the kernel goes away
            return Recoverable(view.measured_ns, 1.0, change, "lever", 0.0)
        work, how = change
        fixed = view.predict(work)
    except (ValueError, KeyError, ZeroDivisionError):
        return None
    saved = view.scaled(fixed)
    return Recoverable(saved, saved / view.measured_ns, how, "lever", fixed.predicted_ns)


# A wgmma of the model's measured FP16 rate stands for tensor work of another precision: its
# count is scaled by the ratio of the vendor's dense rates (hardware file tensor_*_flops_per_clk_per_sm).
_STAND_IN = "HGMMA.64x128x16.F32.F16"


def _tensor_stand_in(view: ModelView, flops: float, precision: str) -> float:
    """Warp instructions of the stand-in wgmma that take as long as `flops` at `precision`."""
    fp16 = view.gpu.value("tensor_fp16_flops_per_clk_per_sm")
    rate = view.gpu.value(f"tensor_{precision}_flops_per_clk_per_sm")
    if not fp16 or not rate:
        raise ValueError(f"{view.gpu.id} has no {precision} tensor rate")
    return flops * (fp16 / rate) / tensor_flops_per_instruction(_STAND_IN)


def _tf32(view: ModelView) -> Change | None:
    """The FP32 product on the tensor cores at the TF32 rate. That is another kernel: the library
    picks a tensor-core one (cuBLAS, cuDNN), with its own tiles and main loop, so the FFMA
    kernel's instruction stream (the FFMAs, the shared-memory operand loads that fed them, the
    address arithmetic and the barriers of its small k-steps) does not carry over; what does is
    the operation's work: its FLOPs, on a wgmma stand-in that reads its operands from shared
    memory at the rate the tensor microbenchmark measured, and the global memory traffic as
    counted (the new kernel's larger tiles would read less: the estimate stays conservative).
    Keeping the old kernel's address arithmetic left a convolution ALU-bound at twice the time
    cuDNN's TF32 kernel took (the corpus's 32x256x14x14 case)."""
    flops = view.work.flops.get("fp32", 0.0)
    if flops <= 0 or view.work.warp_instructions_by_pipe.get("fp32", 0.0) <= 0:
        return None
    stand_in = _tensor_stand_in(view, flops, "tf32")
    tensor = dict(view.work.tensor_instructions)
    tensor[_STAND_IN] = tensor.get(_STAND_IN, 0.0) + stand_in
    counts = _counts(view)
    counts["instructions"] = sum(tensor.values())
    for name in ("shared_load_wavefronts", "shared_store_wavefronts", "shared_bank_conflicts"):
        counts.pop(name, None)
    flop_table = dict(view.work.flops)
    flop_table.pop("fp32", None)
    return replace(view.work, counts=counts, warp_instructions_by_pipe={"tensor": counts["instructions"]}, tensor_instructions=tensor,
                   flops=flop_table, barriers=0.0), (
        f"a TF32 tensor-core kernel for its {flops / 1e9:,.3g} GFLOP of FP32 FFMA work (allow_tf32)")


def _fp8(view: ModelView) -> Change | None:
    """16-bit tensor work at the FP8 rate, and half the operand bytes read."""
    tensor = dict(view.work.tensor_instructions)
    flops = sum(c * tensor_flops_per_instruction(op) for op, c in tensor.items())
    if flops <= 0:
        return None
    fp16, fp8 = view.gpu.value("tensor_fp16_flops_per_clk_per_sm"), view.gpu.value("tensor_fp8_flops_per_clk_per_sm")
    if not fp16 or not fp8:
        return None
    scale = fp16 / fp8
    tensor = {op: c * scale for op, c in tensor.items()}
    pipes = dict(view.work.warp_instructions_by_pipe)
    if "tensor" in pipes:
        pipes["tensor"] *= scale
    counts = _counts(view)
    for name in ("dram_bytes_read", "l2_sectors_read", "l1_to_l2_read_bytes", "global_load_sectors"):
        if name in counts:
            counts[name] *= 0.5
    return replace(view.work, counts=counts, tensor_instructions=tensor, warp_instructions_by_pipe=pipes), (
        "FP8 inputs: the tensor work at the FP8 rate and half the operand bytes")


def _read_once(view: ModelView) -> Change | None:
    """A row normalisation (softmax, layer or RMS norm) writes a tensor of its input's shape and
    type, so the sectors it writes to the L2 are the sectors it must read. The L2 reads beyond
    that are rows read again after they left L1 (ATen's layer norm reads each row once for its
    statistics and once to normalise it), and DRAM reads beyond it rows that also left the L2:
    a one-pass kernel that keeps its row on chip (torch.compile's) does not make them."""
    counts = _counts(view)
    reads, written = counts.get("l2_sectors_read", 0.0), counts.get("l2_sectors_write", 0.0)
    excess = reads - written
    if written <= 0 or excess <= 0:
        return None
    _remove_l1_traffic(counts, excess, 0.0, 1.0)  # the re-read sectors were L1 misses, all of them
    _scale_requests(counts, reads)
    if "global_load_sectors" in counts:
        counts["global_load_sectors"] = max(0.0, counts["global_load_sectors"] - excess)
    return replace(view.work, counts=counts), (
        f"each row read once ({si(excess * SECTOR, 'B')} of re-reads through the L2 removed: one-pass torch.compile kernel)")


def _remove(view: ModelView) -> str:
    return "avoiding the layout conversion altogether (channels_last end to end)"


LEVERS: dict[str, Callable[[ModelView], Change | str | None]] = {"tf32": _tf32, "fp8": _fp8, "read_once": _read_once,
                                                                  "remove": _remove}
# The findings a lever answers (None: every finding, the kernel itself goes away): a finding of
# these categories on a library kernel takes the lever's recoverable time where it is larger.
LEVER_CATEGORIES: dict[str, frozenset[str] | None] = {
    "tf32": frozenset({"fp32_compute", "instruction_issue", "l1_shared_bandwidth", "int_compute", "memory_latency"}),
    "fp8": frozenset({"tensor_compute", "l2_bandwidth", "dram_bandwidth", "l1_shared_bandwidth"}),
    "read_once": frozenset({"dram_bandwidth", "l2_bandwidth", "l1_shared_bandwidth", "memory_latency"}),
    "remove": None,
}


def answers(name: str | None, category: str) -> bool:
    """Whether a library lever answers a finding of this category."""
    if name not in LEVER_CATEGORIES:
        return False
    categories = LEVER_CATEGORIES[name]
    return categories is None or category in categories
