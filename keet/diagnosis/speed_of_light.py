"""Speed of light of one kernel: the model's time for the kernel's own work on the profiled GPU,
its units overlapped perfectly.

The model (perfmodel.model.predict on the profiled GPU at the clock it was profiled at, the
kernel's work counts, "isolated-clean": one launch after Nsight Compute's clean cache flush, which
is what its gpu__time_duration measures) gives the time each unit would take alone; its
prediction overlaps them imperfectly, as typical code does (the p-norm of perfmodel.model.combine).
A kernel can do better than typical: torch.compile's softmax runs 14% under the model's
prediction for its work (profiles/corpus). What a kernel can reach is its slowest unit alone:

    attainable = the largest of the model's unit times + the fixed costs of a launch

The model reads work only (perfmodel.features), never the measured time; measured = the
profile's duration. headroom = measured - attainable, fraction = attainable / measured (1 = the
kernel runs at the model's ceiling for its work). The limiter is the model's binding term.

When the model cannot predict (the profile lacks the work counts it needs, or the GPU has no
hardware file) the speed of light is "not assessed", with what is missing and how to collect it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from keet.format import si
from keet.profile import Kernel, Profile
from keet.rules import Evidence, Finding
from perfmodel.features import KernelFeatures, NotPredicted, features
from perfmodel.hardware import GPU, Param, gpu, gpu_id_for_device
from perfmodel.model import Prediction, predict
from perfmodel.terms.base import ISOLATED_CLEAN

# The profiled clock replaces the hardware file's boost clock when they differ by more than this
# share (keet.report.sections does the same for its per-GPU predictions): Nsight Compute's
# default --clock-control base locks the SM clock below boost, and a kernel that heats the GPU
# runs below it too; the kernel's time scales with the clock it ran at.
CLOCK_MISMATCH = 0.02

# The model's terms (Prediction.bound / breakdown keys) as a reader names them, with the
# bottleneck category that names the same limit. A term the table does not know (the model
# grows) is shown by its own name, with no category.
LIMITERS: dict[str, tuple[str, str | None]] = {
    "dram": ("DRAM bandwidth", "dram_bandwidth"),
    "l2": ("L2 bandwidth", "l2_bandwidth"),
    "l1_shared": ("L1/shared bandwidth", "l1_shared_bandwidth"),
    "lsu": ("load/store unit", "l1_shared_bandwidth"),
    "sm_port": ("per-SM memory bandwidth (too few busy SMs)", "small_grid"),
    "fma": ("FP32 pipe", "fp32_compute"),
    "fp32": ("FP32 pipe", "fp32_compute"),
    "fp64": ("FP64 pipe", "fp64_compute"),
    "alu": ("integer ALU pipe", "int_compute"),
    "sfu": ("SFU (special functions) pipe", "sfu_compute"),
    "xu": ("SFU (special functions) pipe", "sfu_compute"),
    "tensor": ("tensor cores", "tensor_compute"),
    "issue": ("instruction issue", "instruction_issue"),
    "latency": ("memory latency", "memory_latency"),
    "barrier": ("barrier synchronisation", "barrier_sync"),
    "atomics": ("L2 atomics", "atomic_contention"),
    "atomics_hot_address": ("atomics on one address", "atomic_contention"),
    "block_dispatch": ("block dispatch", "launch_overhead"),
    "launch": ("launch overhead", "launch_overhead"),
}
# Limiters of memory bandwidth and of compute throughput (the label-free checks of keet.accuracy_corpus).
MEMORY_BANDWIDTH = frozenset({"dram"})
COMPUTE = frozenset({"fma", "fp32", "fp64", "alu", "sfu", "xu", "tensor", "issue"})


def limiter_label(component: str) -> str:
    return LIMITERS.get(component, (component.replace("_", " "), None))[0]


def limiter_category(component: str) -> str | None:
    return LIMITERS.get(component, (None, None))[1]


@dataclass
class ModelView:
    """The model applied to one profiled kernel: its GPU (at the profiled clock), its work, and
    the prediction of that work; keet.diagnosis.recoverable asks it about changed work."""

    gpu: GPU
    work: KernelFeatures
    base: Prediction
    measured_ns: float
    clock_hz: float | None  # the profiled clock where it replaced the boost clock, else None
    profile: Profile = field(repr=False)
    kernel: Kernel = field(repr=False)

    def predict(self, work: KernelFeatures) -> Prediction:
        return predict(self.gpu, work, ISOLATED_CLEAN)

    def scaled(self, fixed: Prediction | float) -> float:
        """Measured time the change saves: measured x (1 - predicted fixed / predicted now),
        the model's relative gain applied to the kernel's real time (never negative)."""
        fixed_ns = fixed.predicted_ns if isinstance(fixed, Prediction) else fixed
        if self.base.predicted_ns <= 0:
            return 0.0
        return max(0.0, self.measured_ns * (1.0 - fixed_ns / self.base.predicted_ns))


@dataclass
class SpeedOfLight:
    """The kernel against the model's time for its own work (module docstring)."""

    attainable_ns: float | None
    limiter: str | None  # the model's binding term, as a reader names it
    headroom_ns: float | None
    fraction: float | None
    component: str | None = None  # the model's term name (Prediction.bound)
    category: str | None = None  # the bottleneck category naming the same limit
    measured_ns: float | None = None
    gpu: str | None = None
    clock_hz: float | None = None
    lower_bound: bool = False  # the model left work or a limit out: attainable is a lower bound
    next_limiter: str | None = None  # the model's second-slowest limit, as a reader names it
    margin: float | None = None  # the limiter's time over the next limit's (>= 1): how clearly it binds
    not_assessed: str | None = None  # why there is no speed of light
    collect: str | None = None  # what to collect for one
    notes: list[str] = field(default_factory=list)

    @property
    def assessed(self) -> bool:
        return self.attainable_ns is not None

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"attainable_ns": self.attainable_ns, "limiter": self.limiter, "headroom_ns": self.headroom_ns,
                                 "fraction": self.fraction}
        if self.assessed:
            found.update(limiter_term=self.component, limiter_category=self.category, next_limiter=self.next_limiter,
                         margin=self.margin, gpu=self.gpu, context=ISOLATED_CLEAN, clock_hz=self.clock_hz,
                         lower_bound=self.lower_bound)
        else:
            found.update(not_assessed=self.not_assessed, collect=self.collect)
        return found

    def sentence(self) -> str:
        """One line: "at 91% of its DRAM bandwidth speed of light" / "2.6x from its attainable 2.1 ms: limited by ..."."""
        if not self.assessed:
            return f"Speed of light not assessed: {self.not_assessed}" + (f" ({self.collect})" if self.collect else "")
        bound = " (a lower bound: the model leaves some work out)" if self.lower_bound else ""
        if self.fraction is None or self.fraction >= 1.0:
            return (f"At its speed of light: the model's {self.limiter}-bound time for this work is {si(self.attainable_ns, 'ns')}"
                    f"{bound}, and the kernel takes {si(self.measured_ns, 'ns')}.")
        if self.fraction >= 0.5:
            return f"At {self.fraction:.0%} of its {self.limiter} speed of light (attainable {si(self.attainable_ns, 'ns')}{bound})."
        return (f"{1 / self.fraction:.1f}x from its attainable {si(self.attainable_ns, 'ns')}{bound}: limited by "
                f"{self.limiter} in the model.")


def own_gpu(profile: Profile, kernel: Kernel) -> GPU | None:
    """The hardware file of the GPU a kernel was profiled on, or None where there is none."""
    device = profile.devices.get(kernel.device_id, profile.device)
    gpu_id = gpu_id_for_device(device.name, device.arch, device.sm_count)
    return gpu(gpu_id) if gpu_id else None


def profiled_clock(profile: Profile, kernel: Kernel) -> float | None:
    """The SM clock the kernel ran at while profiled (the profile's sm_clock), where known."""
    device = profile.devices.get(kernel.device_id, profile.device)
    return profile.value(kernel, "sm_clock") or device.sm_clock_hz


def at_clock(hardware: GPU, clock_hz: float) -> GPU:
    """The GPU's hardware file with its SM clock set to the one a profile ran at."""
    params = dict(hardware.params)
    params["clock_boost_hz"] = Param("clock_boost_hz", clock_hz, "hz", "derived", "the SM clock the profile ran at")
    return replace(hardware, params=params)


def model_view(profile: Profile, kernel: Kernel) -> ModelView | SpeedOfLight:
    """The model applied to a kernel, or a not-assessed SpeedOfLight saying why it cannot be."""
    measured = kernel.duration_ns
    if not measured or measured <= 0:
        return _not_assessed("the profile has no duration for this launch", "collect ncu --section SpeedOfLight (gpu__time_duration.sum)")
    hardware = own_gpu(profile, kernel)
    if hardware is None:
        device = profile.devices.get(kernel.device_id, profile.device)
        return _not_assessed(f"no hardware file describes {device.name} (perfmodel gpus lists those that do)",
                             "add the GPU's hardware file (docs/model.md) or profile on one of them")
    clock, used_clock = profiled_clock(profile, kernel), None
    boost = hardware.value("clock_boost_hz")
    if clock and boost and abs(clock - boost) / boost > CLOCK_MISMATCH:
        hardware, used_clock = at_clock(hardware, clock), clock
    try:
        work = features(profile, kernel)
        base = predict(hardware, work, ISOLATED_CLEAN)
    except NotPredicted as exc:
        return _not_assessed(str(exc).replace(f" ({exc.collect})", "") if exc.collect else str(exc), exc.collect or None)
    except (ValueError, KeyError) as exc:
        return _not_assessed(str(exc), None)
    return ModelView(hardware, work, base, measured, used_clock, profile, kernel)


def speed_of_light(view: ModelView | SpeedOfLight) -> SpeedOfLight:
    if isinstance(view, SpeedOfLight):
        return view
    attainable, measured = attainable_ns(view.base), view.measured_ns
    limits = bounds(view.base)
    own = limits.pop(view.base.bound, None)
    runner_up = max(limits.items(), key=lambda item: item[1], default=None)
    margin = (own / runner_up[1]) if own and runner_up and runner_up[1] > 0 else None
    return SpeedOfLight(attainable, limiter_label(view.base.bound), measured - attainable, attainable / measured,
                        component=view.base.bound, category=limiter_category(view.base.bound), measured_ns=measured,
                        gpu=view.gpu.id, clock_hz=view.clock_hz, lower_bound=view.base.lower_bound,
                        next_limiter=limiter_label(runner_up[0]) if runner_up else None, margin=margin, notes=list(view.base.notes))


def attainable_ns(prediction: Prediction) -> float:
    """The speed of light of predicted work (module docstring): the slowest unit alone (the
    model's limits, dependent-load chains included) plus the launch's fixed costs; never more
    than the prediction."""
    limits = [*bounds(prediction).values(),
              *(t for term in prediction.terms.values() for side in ("chains", "pipelined") for t in term.get(side, {}).values())]
    if not limits:
        return prediction.predicted_ns
    return min(prediction.predicted_ns, max(limits) + (prediction.inputs.get("overheads_ns") or 0.0))


def bounds(prediction: Prediction) -> dict[str, float]:
    """The model's limits (ns each would take alone), without the overheads added on top."""
    found: dict[str, float] = {}
    for term in prediction.terms.values():
        for side in ("sm", "memory", "alone"):
            found.update(term.get(side, {}))
    return found or {k: v for k, v in prediction.breakdown.items()}


def _not_assessed(reason: str, collect: str | None) -> SpeedOfLight:
    return SpeedOfLight(None, None, None, None, not_assessed=reason, collect=collect)


# ---------------------------------------------------------------- no silence

SPEED_OF_LIGHT_RULE = "speed-of-light"
# What to look at when a kernel runs below the model's time for its work and no rule says why,
# by the family of its limiter.
_BELOW = {
    "memory": [
        ("Keep more bytes in flight per SM: vector loads (float4, 16-byte accesses), several independent loads per thread "
        "before their first use (unrolling), and enough resident warps (check the occupancy limiter)."),
        ("Check that every SM has work for the whole kernel: a grid of at least a few waves, and no long serial phase "
        "(a final reduction done by one block, a row per block for a few long rows)."),
    ],
    "compute": [
        ("Keep the busy pipe fed: independent instructions between dependent ones (unroll, several accumulators), and "
        "enough eligible warps per scheduler to hide the pipe's latency."),
        "Check for work the model does not see as useful: predicated-off lanes, redundant index arithmetic, conversions.",
    ],
    "latency": [
        ("More memory-level parallelism: several independent loads per thread in flight (unroll, prefetch the next "
        "iteration), wider loads, or more resident warps."),
        "Bring the data closer: reuse it from shared memory or registers instead of re-reading it from L2/DRAM.",
    ],
    "launch": [
        ("The kernel is launch-sized: fuse it with its neighbours or capture the sequence in a CUDA graph, so the "
        "fixed launch cost is paid once for many kernels."),
    ],
}
_FAMILY = {"dram_bandwidth": "memory", "l2_bandwidth": "memory", "l1_shared_bandwidth": "memory", "small_grid": "memory",
           "fp32_compute": "compute", "fp64_compute": "compute", "int_compute": "compute", "sfu_compute": "compute",
           "tensor_compute": "compute", "instruction_issue": "compute", "memory_latency": "latency", "barrier_sync": "latency",
           "atomic_contention": "latency", "launch_overhead": "launch"}


def below_speed_of_light(sol: SpeedOfLight) -> Finding | None:
    """A finding for a kernel no rule speaks about: its limiter in the model and how far the
    measured time is from the attainable one (graded: its impact is the headroom's share of the
    time), so that no kernel is left silent. None when the model names no known limiter."""
    if not sol.assessed or sol.category is None or not sol.measured_ns:
        return None
    headroom = max(0.0, sol.measured_ns - sol.attainable_ns)
    evidence = [Evidence("duration", sol.measured_ns, "ns", sol.attainable_ns, "vs the model's attainable")]
    if headroom > 0:
        explanation = (
            f"No rule found a specific inefficiency, but the kernel takes {sol.measured_ns / 1000:,.4g} us where the model "
            f"attains {sol.attainable_ns / 1000:,.4g} us for the same work on this GPU, limited by {sol.limiter}. The "
            f"difference is time a better use of the {sol.limiter} could win; the counters do not say which mechanism holds it back."
        )
    else:
        explanation = (
            f"No rule found a specific inefficiency, and the kernel runs at its speed of light: it takes "
            f"{sol.measured_ns / 1000:,.4g} us where the model attains {sol.attainable_ns / 1000:,.4g} us for the same work, "
            f"limited by {sol.limiter}. Only less work (fewer bytes, fewer instructions) makes it faster."
        )
    suggestions = list(_BELOW.get(_FAMILY.get(sol.category, ""), _BELOW["memory"]))  # a library kernel's: its levers (keet.diagnosis)
    impact = max(0.0, min(1.0, headroom / sol.measured_ns))
    return Finding(category=sol.category, rule=SPEED_OF_LIGHT_RULE, impact=max(impact, 0.01), confidence=0.5,
                   evidence=evidence, explanation=explanation, suggestions=suggestions)
