"""The analytical model: kernel time from work counts and a GPU's hardware file.

Each term of perfmodel/terms/ (one module per unit or effect: pipes, issue, tensor, L1/shared,
barriers, L2, DRAM, atomics, latency, launch) turns the work into the time it would take alone on
the target GPU. SM-side bounds (pipes, issue, L1) and memory-side bounds (L2, DRAM, atomics)
overlap imperfectly (`combine`), and with them the waits of asynchronous copy pipelines; a
warp's waits for its own loads overlap all that less (chain_overlap_exponent); limits no other
work overlaps (block dispatch) compete with that; the launch context's overheads (a kernel's
fixed cost, the memory pipeline's fill, dirty write-back) are added on top. docs/model.md has
the equations and where each parameter comes from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from numbers import Real

from perfmodel import occupancy
from perfmodel.features import KernelFeatures
from perfmodel.hardware import GPU
from perfmodel.retarget import retarget, source_gpu
from perfmodel.terms import TERMS
from perfmodel.terms.base import CONTEXTS, ISOLATED, Contribution, Launch
from perfmodel.terms.tensor import tensor_flops_per_instruction

__all__ = ["CONTEXTS", "Prediction", "check_work", "combine", "predict", "tensor_flops_per_instruction"]

# Launches measured on our GPUs: an empty kernel lasts about 0.6 us and a streaming kernel's memory
# pipeline fills in about 1 us (microbench/cupti); without those parameters a prediction under this
# scale is a lower bound, above it they hardly matter.
UNMEASURED_LAUNCH_MATTERS_NS = 10_000.0
# A term's caveat (Contribution.caveats) is noted where its component takes at least this share of
# the kernel's core time: a latency of half the core time has added about 30% to the throughput's
# through the chains' p-norm (chain_overlap_exponent 1.5-1.6 on H100/H200), one of a third 11%.
CAVEAT_SHARE = 0.5
# The sides of a term's Contribution (perfmodel.terms.base), as the prediction combines them.
SIDES = ("sm", "memory", "chains", "pipelined", "alone", "overheads")
# SM-side components that are shares of the one instruction stream the schedulers issue.
ISSUE_STREAM = ("issue", "fma", "fp64", "alu", "sfu", "lsu")
# Terms whose parameter matters only for kernels near that scale.
_LAUNCH_SCALE = ("launch", "block_dispatch", "dram_ramp", "dirty_writeback", "event")


@dataclass
class Prediction:
    gpu: str
    name: str
    predicted_ns: float
    bound: str
    breakdown: dict[str, float]  # component -> ns it would take alone, or ns it adds (overheads)
    inputs: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    missing_parameters: list[str] = field(default_factory=list)  # limits left out: the time is a lower bound
    context: str = ISOLATED
    terms: dict[str, dict] = field(default_factory=dict)  # term -> its bounds, overheads (ns) and inputs
    missing_counts: list[str] = field(default_factory=list)  # work the profile lacks: the time is a lower bound
    caveats: list[str] = field(default_factory=list)  # of the notes, what the profile leaves open about this answer

    @property
    def lower_bound(self) -> bool:
        return bool(self.missing_parameters or self.missing_counts)

    def as_dict(self) -> dict:
        return {"name": self.name, "predicted_ns": self.predicted_ns, "context": self.context, "bound": self.bound,
                "lower_bound": self.lower_bound, "breakdown": self.breakdown, "inputs": self.inputs, "terms": self.terms,
                "notes": self.notes, "caveats": self.caveats}


def pnorm(times: Iterable[float], exponent: float | None) -> float:
    """Time of work that overlaps imperfectly: the p-norm (t_1^p + t_2^p + ...)^(1/p) of the
    non-zero times, p = overlap_exponent fitted on the arithmetic-intensity sweep of our
    microbenchmarks (p -> infinity, or no p, is perfect overlap: the largest)."""
    present = [t for t in times if t > 0]
    if not present:
        return 0.0
    larger = max(present)
    if not exponent or math.isinf(larger):
        return larger
    # Scaled by the largest: the same norm, but t^p cannot overflow for a huge t.
    return float(larger * sum((t / larger) ** exponent for t in present) ** (1.0 / exponent))


def combine(sm_side: float, memory_side: float, exponent: float | None) -> float:
    """SM-side and memory-side time that overlap imperfectly: their p-norm."""
    return pnorm((sm_side, memory_side), exponent)


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


def predict(gpu: GPU, work: KernelFeatures, context: str = ISOLATED) -> Prediction:
    """Predicted time of the work on `gpu` in a launch context (perfmodel.terms.base.CONTEXTS);
    work counted on another GPU is retargeted first (perfmodel/retarget.py) and the notes say how.

    Raises ValueError when the work is impossible (:func:`check_work`), the context unknown, the
    launch cannot run on `gpu`, or the counts are too large for a finite time.
    """
    if context not in CONTEXTS:
        raise ValueError(f"unknown launch context {context!r}: one of {', '.join(CONTEXTS)}")
    check_work(work)
    notes: list[str] = []
    source = source_gpu(work)
    if source is not None and source.id != gpu.id:
        work, notes = retarget(work, source, gpu)
    launch = _launch(gpu, work, context)
    contributions = {name: term.evaluate(launch) for name, term in TERMS.items()}

    def merged(side: str) -> dict[str, float]:
        return {c: t for part in contributions.values() for c, t in getattr(part, side).items()}

    sm, memory, chains, pipelined, alone, overheads = (merged(side) for side in SIDES)
    overlap = gpu.value("overlap_exponent")
    # a warp's waits for its own loads overlap the other warps' throughput less than SM and
    # memory work do (the occupancy sweep against the mix sweep, perfmodel.fit); unfitted, the same p
    chain_overlap = gpu.value("chain_overlap_exponent", overlap)
    # The pipes execute what the schedulers issue: the issue bound and each pipe's are one stream
    # (the larger counts); the L1/shared data path, the tensor pipe and barrier waits are other
    # resources, which the SM overlaps with it only in part.
    stream = max((t for c, t in sm.items() if c in ISSUE_STREAM), default=0.0)
    sm_time = pnorm([stream, *(t for c, t in sm.items() if c not in ISSUE_STREAM)], overlap)
    memory_time = max(memory.values(), default=0.0)
    throughput = pnorm((combine(sm_time, memory_time, overlap), *pipelined.values()), overlap)
    core = max(pnorm((throughput, *chains.values()), chain_overlap), max(alone.values(), default=0.0))
    extra = sum(overheads.values())
    seconds = core + extra
    bounds = {**sm, **memory, **alone}
    for component, t in (*chains.items(), *pipelined.items()):  # a kernel's two kinds of load waits: one latency
        bounds[component] = bounds.get(component, 0.0) + t
    bound = max(bounds.items(), key=lambda item: item[1])[0] if bounds and core >= extra else "launch"
    if bound == "launch":
        notes.append("the kernel's work takes less time than what every launch costs (a kernel's fixed start and end, the "
                     "memory pipeline's fill): launch overheads bound it")
    missing = [m for part in contributions.values() for m in part.missing
               if core * 1e9 < UNMEASURED_LAUNCH_MATTERS_NS or m.split(" ", 1)[0] not in _LAUNCH_SCALE]
    if missing:
        notes.append(f"{gpu.id} has no parameter for: {', '.join(missing)}; those limits are left out, so the "
                     "prediction is a lower bound")
    caveats = [text for part in contributions.values() for component, text in part.caveats.items()
               if bounds.get(component, 0.0) >= CAVEAT_SHARE * core]
    notes.extend(caveats)
    missing_counts = list(getattr(work, "missing_counts", ()) or ())
    if missing_counts:
        notes.append(f"the profile lacks {', '.join(missing_counts)}; the work they count is left out, so the prediction is a "
                     "lower bound")
    predicted_ns = seconds * 1e9
    if not math.isfinite(predicted_ns):
        raise ValueError(f"{work.name}: the work counts are too large for a finite time on {gpu.id}")
    breakdown = {name: value * 1e9 for name, value in sorted({**bounds, **overheads}.items(), key=lambda item: -item[1])}
    inputs = {"waves": launch.waves, "blocks_per_sm": launch.occ.blocks_per_sm, "theoretical_occupancy": launch.occ.theoretical,
              "busy_sms": launch.busy_sms, "instructions": launch.instructions, "sm_side_ns": sm_time * 1e9,
              "memory_side_ns": memory_time * 1e9, "overheads_ns": extra * 1e9}
    for part in contributions.values():
        inputs.update(part.inputs)
    return Prediction(gpu=gpu.id, name=work.name, predicted_ns=predicted_ns, bound=bound, breakdown=breakdown, inputs=inputs,
                      notes=notes, missing_parameters=missing, context=context,
                      terms={name: _term_dict(part) for name, part in contributions.items() if _term_dict(part)},
                      missing_counts=missing_counts, caveats=caveats)


def _launch(gpu: GPU, work: KernelFeatures, context: str) -> Launch:
    clock = gpu.require("clock_boost_hz")
    sms = int(gpu.require("sm_count"))
    occ = occupancy.for_gpu(gpu, work.threads_per_block, work.registers_per_thread or 0, work.shared_bytes_per_block or 0)
    if occ.blocks_per_sm == 0:
        raise ValueError(f"{work.name} cannot launch on {gpu.id}: a block exceeds a per-SM limit ({occ.limits})")
    waves = work.grid_blocks / (occ.blocks_per_sm * sms)
    rounds = math.ceil(waves) if waves >= 1 else 1
    busy_sms = min(sms, work.grid_blocks)
    # SM-local work runs in ceil(waves) rounds when the grid is a few waves; many waves even out.
    quantisation = rounds / waves if waves >= 1 else 1.0
    return Launch(gpu=gpu, work=work, occ=occ, context=context, clock=clock, sms=sms, warp=gpu.require("warp_size"), waves=waves,
                  rounds=rounds, busy_sms=busy_sms, sm_seconds=quantisation / (busy_sms * clock),
                  instructions=work.counts.get("instructions") or sum(work.warp_instructions_by_pipe.values()))


def _term_dict(part: Contribution) -> dict:
    found = {side: {c: t * 1e9 for c, t in getattr(part, side).items()} for side in SIDES}
    found = {side: values for side, values in found.items() if values}
    if part.inputs:
        found["inputs"] = part.inputs
    if part.missing:
        found["missing"] = part.missing
    return found
