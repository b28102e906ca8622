"""The analytical model: kernel time from work counts and a GPU's hardware file.

Every unit the kernel uses gets a time bound (work / sustained rate); SM-local bounds
(pipes, issue, L1/shared) are scaled by the SMs the grid can keep busy and by the wave
quantisation of the grid; a latency bound (Little's law: the requests a warp must wait for,
over the warps the SM holds) covers kernels too dependent to reach any bandwidth. The
predicted time is the largest bound, floored by the launch cost. docs/model.md has the
equations and where each parameter comes from.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from numbers import Real

from perfmodel import occupancy
from perfmodel.features import KernelFeatures
from perfmodel.hardware import GPU, SECTOR_BYTES, SHARED_WAVEFRONT_BYTES
from perfmodel.retarget import retarget, source_gpu

# Launches measured on our GPUs cost 3-4 us (microbench launch suite); without a measured launch
# cost the floor is unknown, which matters only for kernels predicted near that scale.
UNMEASURED_LAUNCH_MATTERS_NS = 10_000.0


@dataclass
class Prediction:
    gpu: str
    name: str
    predicted_ns: float
    bound: str
    breakdown: dict[str, float]  # component -> ns it would take alone
    inputs: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    missing_parameters: list[str] = field(default_factory=list)  # limits left out: the time is a lower bound

    def as_dict(self) -> dict:
        return {"name": self.name, "predicted_ns": self.predicted_ns, "bound": self.bound, "lower_bound": bool(self.missing_parameters),
                "breakdown": self.breakdown, "inputs": self.inputs, "notes": self.notes}


def tensor_flops_per_instruction(opcode: str) -> float:
    """FLOPs of one warp-level MMA instruction from its shape modifier: HMMA.16816 is
    m16 n8 k16 for the warp; HGMMA.64x128x16 is m64 n128 k16 for a warpgroup, whose four
    warps each count one executed instruction."""
    if match := re.search(r"\.(\d+)x(\d+)x(\d+)\b", opcode):
        m, n, k = (int(g) for g in match.groups())
        return 2.0 * m * n * k / 4
    if match := re.search(r"\.(\d{1,2})(\d)(\d{1,2})\b", opcode):
        m, n, k = (int(g) for g in match.groups())
        return 2.0 * m * n * k
    return 0.0


def _tensor_rate(gpu: GPU, opcode: str) -> float | None:
    """Sustained FLOPs per clock per SM of an MMA opcode: mma.sync (HMMA) and wgmma (HGMMA)
    run at different measured rates on Hopper; the vendor peak is the fallback."""
    bf16 = "BF16" in opcode
    kind = "wgmma" if opcode.startswith(("HGMMA", "UTC")) else "mma_sync"
    precision = "bf16" if bf16 else "fp16"
    return (gpu.value(f"tensor_{kind}_{precision}_flops_per_clk_per_sm") or gpu.value(f"tensor_{kind}_fp16_flops_per_clk_per_sm")
            or gpu.value(f"tensor_{precision}_flops_per_clk_per_sm") or gpu.value("tensor_fp16_flops_per_clk_per_sm"))


def _load_latency_cycles(gpu: GPU, counts: dict[str, float]) -> float | None:
    """Average cycles of one global load: L1 hits, L2 hits and DRAM misses weighted by how
    the kernel's load sectors were served (counts only: sectors requested, bytes L1 read
    from L2, bytes read from DRAM)."""
    dram = gpu.value("dram_latency_cycles")
    if not dram:
        return None
    l2 = gpu.value("l2_latency_cycles", dram)
    l1 = gpu.value("l1_latency_cycles", l2)
    requested = counts.get("global_load_sectors", 0.0) * SECTOR_BYTES
    from_l2 = counts.get("l1_to_l2_read_bytes", requested)
    from_dram = counts.get("dram_bytes_read", from_l2)
    if requested <= 0:
        return dram
    miss_l1 = min(1.0, from_l2 / requested)
    miss_l2 = min(1.0, from_dram / from_l2) if from_l2 > 0 else 0.0
    return (1 - miss_l1) * l1 + miss_l1 * ((1 - miss_l2) * l2 + miss_l2 * dram)


def _partial_store_sectors(counts: dict[str, float]) -> float:
    """L2 write sectors beyond the bytes actually stored: with b bytes stored per sector on
    average, a fraction 1 - b/32 of the store sectors are partial."""
    per_sector = counts.get("global_store_bytes_per_sector")
    writes = counts.get("l2_sectors_write", 0.0)
    if not per_sector or not writes or per_sector >= SECTOR_BYTES:
        return 0.0
    return min(writes, counts.get("global_store_sectors", writes)) * (1.0 - per_sector / SECTOR_BYTES)


def _atomic_bounds(gpu: GPU, counts: dict[str, float], atomics: float, clock: float) -> dict[str, float]:
    """Atomics are executed by the L2 slice that owns the address. Spread over the slices
    they go at the measured distinct-address rate; when one slice carries most of them
    (its sector count, l2.sectors_busiest_slice, is more than half of all atomic sectors,
    which a few addresses alone can cause on an L2 of tens of slices) they are serialised
    on a hot address and go at the measured same-address rate."""
    bounds = {}
    if rate := gpu.value("atomic_ops_per_clk"):
        bounds["atomics"] = atomics / (rate * clock)
    busiest = counts.get("l2_sectors_busiest_slice", 0.0)
    same_address = gpu.value("atomic_same_address_ops_per_clk")
    if same_address and busiest > atomics / 2:
        bounds["atomics_hot_address"] = min(atomics, busiest) / (same_address * clock)
    return bounds


# Components by where they run: the SM's pipes, issue and L1 (per-SM work), and the memory
# system beyond the SM. The two sides overlap imperfectly (docs/model.md, "Combining").
SM_SIDE = ("issue", "fma", "fp64", "alu", "sfu", "lsu", "tensor", "l1_shared", "barrier")
MEMORY_SIDE = ("l2", "dram", "atomics", "atomics_hot_address")


def combine(sm_side: float, memory_side: float, exponent: float | None) -> float:
    """Time of SM-side and memory-side work that overlap imperfectly: the p-norm
    (t_sm^p + t_mem^p)^(1/p), p = overlap_exponent fitted on the arithmetic-intensity sweep
    of our microbenchmarks (p -> infinity is perfect overlap: the larger of the two)."""
    if not exponent or sm_side <= 0 or memory_side <= 0:
        return max(sm_side, memory_side)
    # Scaled by the larger side: the same norm, but t^p cannot overflow for a huge t.
    larger = max(sm_side, memory_side)
    return float(larger * ((sm_side / larger) ** exponent + (memory_side / larger) ** exponent) ** (1.0 / exponent))


def check_work(work: KernelFeatures) -> None:
    """Refuse work no kernel can have (ValueError, which callers report as "not predicted"):
    a grid or block with no thread, negative resources, or a count that is negative, infinite
    or NaN. Readers drop such values (docs/ingest.md); features built by hand or by the static
    path get the same answer instead of a ZeroDivisionError deep in the model."""
    def at_least(value: object, low: float) -> bool:
        return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value) and value >= low

    if not at_least(work.grid_blocks, 1):
        raise ValueError(f"{work.name}: a grid of {work.grid_blocks} blocks launches nothing")
    if not at_least(work.threads_per_block, 1):
        raise ValueError(f"{work.name}: a block of {work.threads_per_block} threads launches nothing")
    for label, value in (("registers per thread", work.registers_per_thread), ("shared bytes per block", work.shared_bytes_per_block)):
        if value is not None and not at_least(value, 0):
            raise ValueError(f"{work.name}: {label} is {value}")
    tables = {"counts": work.counts, "warp_instructions_by_pipe": work.warp_instructions_by_pipe, "flops": work.flops,
              "tensor_instructions": work.tensor_instructions, "barriers": {"barriers": work.barriers or 0.0}}
    for table, values in tables.items():
        for key, value in values.items():
            if not at_least(value, 0):
                raise ValueError(f"{work.name}: {table} {key} is {value}, not a finite count")


def predict(gpu: GPU, work: KernelFeatures) -> Prediction:
    """Predicted time of the work on `gpu`; work counted on another GPU is retargeted first
    (perfmodel/retarget.py) and the notes say how.

    Raises ValueError when the work is impossible (:func:`check_work`), the launch cannot
    run on `gpu`, or the counts are too large for a finite time.
    """
    check_work(work)
    notes: list[str] = []
    source = source_gpu(work)
    if source is not None and source.id != gpu.id:
        work, notes = retarget(work, source, gpu)
    clock = gpu.require("clock_boost_hz")
    sms = int(gpu.require("sm_count"))
    warp = gpu.require("warp_size")

    occ = occupancy.for_gpu(gpu, work.threads_per_block, work.registers_per_thread or 0, work.shared_bytes_per_block or 0)
    if occ.blocks_per_sm == 0:
        raise ValueError(f"{work.name} cannot launch on {gpu.id}: a block exceeds a per-SM limit ({occ.limits})")
    waves = work.grid_blocks / (occ.blocks_per_sm * sms)
    rounds = math.ceil(waves) if waves >= 1 else 1
    busy_sms = min(sms, work.grid_blocks)
    # SM-local work runs in ceil(waves) rounds when the grid is a few waves; many waves even out.
    quantisation = rounds / waves if waves >= 1 else 1.0
    sm_seconds = quantisation / (busy_sms * clock)  # seconds per per-SM cycle of work, spread over busy SMs

    counts = work.counts
    pipes = work.warp_instructions_by_pipe
    bounds: dict[str, float] = {}
    missing: list[str] = []

    def rate(param: str, fallback: str | None = None) -> float | None:
        return gpu.value(param) or (gpu.value(fallback) if fallback else None)

    def bound(name: str, amount: float, per_second: float | None, param: str) -> None:
        if amount and per_second:
            bounds[name] = amount / per_second
        elif amount:
            missing.append(f"{name} ({param})")

    # Pipes (lanes per clock per SM): the FMA pipe executes FP32 arithmetic and integer
    # multiply-adds (IMAD); the ALU the other integer and logic operations.
    per_sm = 1.0 / sm_seconds
    for name, instructions, lanes, param in (
            ("fma", pipes.get("fp32", 0.0) + pipes.get("int_fma", 0.0), (gpu.value("fp32_flops_per_clk_per_sm") or 0) / 2, "fp32_flops_per_clk_per_sm"),
            ("fp64", pipes.get("fp64", 0.0), (gpu.value("fp64_flops_per_clk_per_sm") or 0) / 2, "fp64_flops_per_clk_per_sm"),
            ("alu", pipes.get("alu", 0.0), gpu.value("int32_ops_per_clk_per_sm"), "int32_ops_per_clk_per_sm"),
            ("sfu", pipes.get("xu", 0.0), gpu.value("sfu_ops_per_clk_per_sm"), "sfu_ops_per_clk_per_sm")):
        bound(name, instructions * warp, lanes * per_sm if lanes else None, param)
    if lsu := gpu.value("lsu_ops_per_clk_per_sm"):  # optional: the L1/shared bound covers the same data path
        bound("lsu", pipes.get("lsu", 0.0) * warp, lsu * per_sm, "lsu_ops_per_clk_per_sm")
    total_instructions = counts.get("instructions") or sum(pipes.values())
    bound("issue", total_instructions, gpu.require("schedulers_per_sm") * per_sm, "schedulers_per_sm")
    tensor_flops = {op: count * tensor_flops_per_instruction(op) for op, count in work.tensor_instructions.items()}
    tensor_clocks = sum(flops / r for op, flops in tensor_flops.items() if (r := _tensor_rate(gpu, op)))
    if tensor_clocks:
        bounds["tensor"] = tensor_clocks * sm_seconds
    if any(flops and not _tensor_rate(gpu, op) for op, flops in tensor_flops.items()):
        missing.append("tensor (tensor_*_flops_per_clk_per_sm)")

    shared_wavefronts = counts.get("shared_load_wavefronts", 0.0) + counts.get("shared_store_wavefronts", 0.0)
    l1_sectors = sum(counts.get(n, 0.0) for n in ("global_load_sectors", "global_store_sectors", "local_load_sectors", "local_store_sectors"))
    l1_rate = gpu.value("shared_bandwidth_bytes_per_clk_per_sm")
    bound("l1_shared", shared_wavefronts * SHARED_WAVEFRONT_BYTES + l1_sectors * SECTOR_BYTES, l1_rate * per_sm if l1_rate else None,
          "shared_bandwidth_bytes_per_clk_per_sm")
    if work.barriers:
        bounds.update(_barrier_bound(gpu, work, occ, total_instructions, rounds, clock))

    l2_sectors = sum(counts.get(n, 0.0) for n in ("l2_sectors_read", "l2_sectors_write", "l2_sectors_atomic"))
    l2_rate = gpu.value("l2_bandwidth_bytes_per_clk")
    if l2_sectors and l2_rate:
        # A sector written only in part (scattered 4-byte stores) costs the L2 a
        # read-modify-write: such sectors go at the measured scattered-store rate.
        partial = _partial_store_sectors(counts) if gpu.value("l2_scattered_store_sectors_per_clk") else 0.0
        bounds["l2"] = ((l2_sectors - partial) * SECTOR_BYTES / l2_rate
                        + (partial / gpu.value("l2_scattered_store_sectors_per_clk") if partial else 0.0)) / clock
    elif l2_sectors:
        missing.append("l2 (l2_bandwidth_bytes_per_clk)")

    # DRAM: reads and writes at their own measured rates where calibrated (HBM turns the bus
    # around between them), else both at the achievable (or vendor) bandwidth.
    dram_read, dram_write = counts.get("dram_bytes_read", 0.0), counts.get("dram_bytes_write", 0.0)
    any_rate = rate("dram_achievable_bytes_per_s", "dram_bandwidth_bytes_per_s")
    read_rate, write_rate = rate("dram_read_bytes_per_s") or any_rate, rate("dram_write_bytes_per_s") or any_rate
    if (dram_read or dram_write) and read_rate and write_rate:
        bounds["dram"] = dram_read / read_rate + dram_write / write_rate
    elif dram_read or dram_write:
        missing.append("dram (dram_bandwidth_bytes_per_s)")

    atomics = counts.get("l2_sectors_atomic", 0.0)
    if atomics:
        bounds.update(_atomic_bounds(gpu, counts, atomics, clock))
        if "atomics" not in bounds:
            missing.append("atomics (atomic_ops_per_clk)")

    latency = _latency_bound(gpu, work, occ, rounds, clock)
    if latency:
        bounds["latency"] = latency

    sm_time = max((bounds[n] for n in SM_SIDE if n in bounds), default=0.0)
    memory_time = max((bounds[n] for n in MEMORY_SIDE if n in bounds), default=0.0)
    overlap = gpu.value("overlap_exponent")
    seconds = max(combine(sm_time, memory_time, overlap), bounds.get("latency", 0.0))
    bound_name = max(bounds.items(), key=lambda item: item[1])[0] if bounds else "launch"
    predicted_ns = seconds * 1e9
    launch = gpu.value("launch_overhead_ns")
    if launch and predicted_ns < launch:
        bound_name, predicted_ns = "launch", launch
        notes.append("the kernel's work takes less than one launch: the launch cost is the floor")
    elif not launch and predicted_ns < UNMEASURED_LAUNCH_MATTERS_NS:
        missing.append("launch (launch_overhead_ns)")
    if missing:
        notes.append(f"{gpu.id} has no parameter for: {', '.join(missing)}; those limits are left out, so the "
                     "prediction is a lower bound")
    if not math.isfinite(predicted_ns):
        raise ValueError(f"{work.name}: the work counts are too large for a finite time on {gpu.id}")
    return Prediction(
        gpu=gpu.id,
        name=work.name,
        predicted_ns=predicted_ns,
        bound=bound_name,
        breakdown={name: value * 1e9 for name, value in sorted(bounds.items(), key=lambda item: -item[1])},
        inputs={"waves": waves, "blocks_per_sm": occ.blocks_per_sm, "theoretical_occupancy": occ.theoretical,
                "busy_sms": busy_sms, "dram_bytes": dram_read + dram_write, "l2_sectors": l2_sectors,
                "instructions": total_instructions, "sm_side_ns": sm_time * 1e9, "memory_side_ns": memory_time * 1e9},
        notes=notes,
        missing_parameters=missing,
    )


def _latency_bound(gpu: GPU, work: KernelFeatures, occ, rounds: int, clock: float) -> float | None:
    """Little's law at its worst: every warp waits for its loads one at a time, while the
    warps of a round overlap. A load's latency is the mix of L1, L2 and DRAM latencies in the
    proportions its sectors were served (hit fractions from the sector counts)."""
    counts = work.counts
    loads = counts.get("global_load_requests", 0.0) + counts.get("local_load_sectors", 0.0) / 4
    latency = _load_latency_cycles(gpu, counts)
    if not latency or not loads:
        return None
    loads_per_warp = loads / (work.grid_blocks * occ.warps_per_block)
    return rounds * loads_per_warp * latency / clock


def _barrier_bound(gpu: GPU, work: KernelFeatures, occ, instructions: float, rounds: int, clock: float) -> dict[str, float]:
    """Between two barriers a block issues its warps' instructions, then waits for the last
    warp to arrive and the barrier to release (barrier_base_cycles + barrier_cycles_per_warp x
    warps per block, measured) and, when it reads
    shared memory after the barrier, for that load (shared_latency_cycles). The blocks of an
    SM hide each other's waits, which the issue bound already counts; what no other block can
    hide is one block's chain: intervals x (issue of one block + barrier + shared load)."""
    base, per_warp = gpu.value("barrier_base_cycles"), gpu.value("barrier_cycles_per_warp")
    barrier = base + per_warp * occ.warps_per_block if base is not None and per_warp is not None else gpu.value("barrier_cycles")
    if not barrier:
        return {}
    warps = work.grid_blocks * occ.warps_per_block
    intervals = work.barriers / warps  # barriers each warp passes
    block_issue = instructions / warps / intervals * occ.warps_per_block / gpu.require("schedulers_per_sm")
    shared_wait = gpu.value("shared_latency_cycles", 0.0) if work.counts.get("shared_load_wavefronts") else 0.0
    return {"barrier": rounds * intervals * (block_issue + barrier + shared_wait) / clock}


