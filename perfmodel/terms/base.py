"""What every model term reads (the launch as it runs on the target GPU) and what it returns.

A term is one module of perfmodel/terms/ (registered in perfmodel/terms/__init__.py) with
PARAMETERS, the hardware parameters it reads (names of perfmodel/hardware/parameters.toml), and
evaluate(launch) -> Contribution. docs/model.md has each term's equation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the contexts are read by the command line, which must not load pandas for them
    from perfmodel.features import KernelFeatures
    from perfmodel.hardware import GPU
    from perfmodel.occupancy import Occupancy

# Launch contexts: the measurement a prediction is for (docs/model.md, "Launch context").
ISOLATED = "isolated"  # one launch after the caches were flushed by writing (triton do_bench, the corpus)
ISOLATED_CLEAN = "isolated-clean"  # one launch after a clean flush (Nsight Compute's cache control)
BACK_TO_BACK = "back-to-back"  # the launch repeated on a stream: warm caches
EVENT = "event"  # CUDA events around one launch after a clean flush (the zoo harness): launch latency included
NCU = "ncu"  # one launch replayed by Nsight Compute after its clean flush: its gpu__time_duration
CONTEXTS = {
    ISOLATED: "one launch, caches flushed by writing a large buffer (triton.testing.do_bench): CUPTI kernel duration",
    ISOLATED_CLEAN: "one launch, caches flushed clean (Nsight Compute --cache-control all): CUPTI kernel duration",
    BACK_TO_BACK: "the launch repeated back to back on a stream, caches warm: CUPTI kernel duration",
    EVENT: "one launch after a clean flush, timed by CUDA events around it: launch latency included",
    NCU: ("one launch profiled by Nsight Compute (--cache-control all): its gpu__time_duration, which spans more "
          "than the CUPTI duration of the same launch"),
}


@dataclass
class Launch:
    """The kernel's work on the target GPU: the occupancy, the waves it runs in and the clock."""

    gpu: GPU
    work: KernelFeatures
    occ: Occupancy
    context: str
    clock: float  # SM cycles per second
    sms: int
    warp: float  # threads per warp
    waves: float  # grid blocks / (blocks per SM x SMs)
    rounds: int  # ceil(waves), 1 below one wave
    busy_sms: int
    sm_seconds: float  # seconds per cycle of per-SM work, spread over the busy SMs and quantised
    instructions: float  # warp instructions of the whole kernel

    @property
    def per_sm(self) -> float:
        return 1.0 / self.sm_seconds


@dataclass
class Contribution:
    """Seconds a term adds to the prediction: bounds on the SM side (pipes, issue, L1), on the
    memory side (L2, DRAM, atomics), chains (a warp's dependent waits for its own loads, traced
    or estimated, which the throughput work of other warps hides only in part), pipelined (waits
    at the barriers of asynchronous copy pipelines, cp.async and TMA, built to overlap the
    throughput work), alone (a limit compared with everything else: block dispatch),
    and overheads added on top (a kernel's fixed start and end, memory pipeline fill, write-back
    of dirty lines); with the limits left out for want of a parameter, and the inputs it read."""

    sm: dict[str, float] = field(default_factory=dict)
    memory: dict[str, float] = field(default_factory=dict)
    chains: dict[str, float] = field(default_factory=dict)
    pipelined: dict[str, float] = field(default_factory=dict)  # waits of asynchronous copy pipelines
    alone: dict[str, float] = field(default_factory=dict)
    overheads: dict[str, float] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    inputs: dict[str, float] = field(default_factory=dict)
    # caveats about one of its components, for the prediction's notes where that component's time
    # is at least CAVEAT_SHARE of the kernel's (elsewhere it does not change the answer)
    caveats: dict[str, str] = field(default_factory=dict)
