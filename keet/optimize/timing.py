"""Timing statistics and the keep/reject rule.

The harness times every repetition with CUDA events around the launch, after warm-up, with the
L2 flushed before each repetition. Here: the median, the spread, and whether a difference
between two candidates is larger than the noise we measured.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

MIN_GAIN = 0.02  # a candidate must beat the best by at least 2%...
NOISY_SPREAD = 0.10  # ...and a timing whose interquartile range exceeds 10% of its median is not trusted


@dataclass(frozen=True)
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float
    p25_ms: float
    p75_ms: float
    reps: int

    @property
    def spread(self) -> float:
        """Relative noise: interquartile range over the median."""
        return (self.p75_ms - self.p25_ms) / self.median_ms if self.median_ms > 0 else float("inf")

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD

    def as_dict(self) -> dict:
        return {**asdict(self), "spread": round(self.spread, 4)}


def summarize(times_ms: list[float]) -> Timing:
    values = np.asarray(times_ms, dtype=float)
    p25, median, p75 = np.percentile(values, [25, 50, 75])
    return Timing(float(median), float(values.min()), float(values.max()), float(p25), float(p75), int(values.size))


def required_gain(candidate: Timing, best: Timing) -> float:
    """The relative gain a candidate must show: above the noise of both timings and above 2%."""
    return max(MIN_GAIN, candidate.spread, best.spread)


def is_faster(candidate: Timing, best: Timing) -> tuple[bool, str]:
    """Whether ``candidate`` beats ``best`` by more than the measured noise, and why (not)."""
    gain = 1.0 - candidate.median_ms / best.median_ms
    needed = required_gain(candidate, best)
    text = f"median {candidate.median_ms:.4f} ms vs best {best.median_ms:.4f} ms ({gain:+.1%}; needs > {needed:.1%})"
    return gain > needed, text
