"""The model's predictions for one kernel: on every GPU of the hardware database from the
kernel's work counts, and on the profile's own GPU at the SM clock it was profiled at, which is
the prediction to set beside the measured time.

Shared by the report (its prediction section and charts), the LLM tools (`predict`, `compare`)
and the comparison of profiles (keet.analysis.compare), so that each shows the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from keet.profile import Kernel, Profile

# A profile's SM clock this far from the hardware file's boost clock gets its own prediction at
# that clock, so that the model is compared with the measured time at the clock it ran at.
CLOCK_MISMATCH = 0.02


@dataclass
class GPUPrediction:
    gpu: str
    name: str
    predicted_ns: float | None
    bound: str | None = None
    lower_bound: bool = False
    breakdown: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    clock_hz: float | None = None


@dataclass
class Predictions:
    own_gpu: str | None  # the profile's GPU in the database
    at_profile_clock: GPUPrediction | None  # own GPU at the SM clock the profile ran at
    per_gpu: list[GPUPrediction]
    measured_ns: float | None
    error: str | None = None  # why nothing could be predicted

    def beside_measured(self) -> GPUPrediction | None:
        """The prediction to set beside the measured time: the profile's GPU at the profiled
        clock where that differs from the boost clock, else at boost; None for a GPU the
        database lacks."""
        if self.at_profile_clock is not None:
            return self.at_profile_clock
        return next((p for p in self.per_gpu if p.gpu == self.own_gpu and p.predicted_ns is not None), None)


def _at_clock(gpu: Any, clock_hz: float) -> Any:
    """The GPU's hardware file with its SM clock set to the one a profile ran at."""
    from perfmodel.hardware import Param

    params = dict(gpu.params)
    params["clock_boost_hz"] = Param("clock_boost_hz", clock_hz, "hz", "derived", "the SM clock the profile ran at")
    return replace(gpu, params=params)


def predict_on(gpu: Any, work: Any, clock_hz: float | None = None) -> GPUPrediction:
    """The model's prediction of ``work`` on one GPU (a perfmodel.hardware GPU); a block that
    exceeds a per-SM limit of that GPU is a prediction with no time and the reason."""
    from perfmodel.model import predict

    try:
        result = predict(gpu, work)
    except ValueError as exc:
        return GPUPrediction(gpu.id, gpu.name, None, error=str(exc))
    return GPUPrediction(gpu.id, gpu.name, result.predicted_ns, result.bound, result.lower_bound, result.breakdown,
                         result.notes, clock_hz=clock_hz or gpu.value("clock_boost_hz"))


def _profiled_clock(profile: Profile, kernel: Kernel, own: str | None) -> float | None:
    """The clock to predict the own GPU at, when the profile ran far enough from boost."""
    from perfmodel.hardware import gpu

    clock = profile.value(kernel, "sm_clock") or profile.device.sm_clock_hz
    if own and clock:
        boost = gpu(own).value("clock_boost_hz")
        if boost and abs(clock - boost) / boost > CLOCK_MISMATCH:
            return clock
    return None


def predictions(profile: Profile, kernel: Kernel, work: Any, work_error: str | None) -> Predictions:
    """The model's time on every GPU of the database from this kernel's work counts, and on the
    profile's own GPU at the clock it was profiled at (next to the measured time)."""
    from perfmodel.hardware import gpu, gpu_id_for_device_name, gpu_ids

    own = gpu_id_for_device_name(profile.device.name)
    if work is None:
        return Predictions(own, None, [], kernel.duration_ns, error=work_error)
    per_gpu = [predict_on(gpu(gpu_id), work) for gpu_id in gpu_ids()]
    clock = _profiled_clock(profile, kernel, own)
    at_clock = predict_on(_at_clock(gpu(own), clock), work, clock) if own and clock else None
    return Predictions(own, at_clock, per_gpu, kernel.duration_ns)


def own_prediction(profile: Profile, kernel: Kernel, work: Any) -> GPUPrediction | None:
    """What :meth:`Predictions.beside_measured` gives, without predicting every other GPU: the
    profile's own GPU at its profiled clock (or at boost); None for a GPU the database lacks or
    a kernel without work counts."""
    from perfmodel.hardware import gpu, gpu_id_for_device_name

    own = gpu_id_for_device_name(profile.device.name)
    if work is None or own is None:
        return None
    clock = _profiled_clock(profile, kernel, own)
    found = predict_on(_at_clock(gpu(own), clock), work, clock) if clock else predict_on(gpu(own), work)
    return found if found.predicted_ns is not None else None


def model_inputs(profile: Profile, kernel: Kernel) -> tuple[Any, str | None]:
    """The model's work counts for a kernel, or None and the reason it has none."""
    from perfmodel.features import features

    try:
        return features(profile, kernel), None
    except (ValueError, KeyError) as exc:
        return None, str(exc)
