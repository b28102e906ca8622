"""Reports that tests only read, loaded once per test process.

Each load of a combined zoo report starts its reader's workers and reads 34 kernels (2-3 s on
2 cores); the default tier loaded the H100 one 35 times. A test that changes a profile (its
metrics, its kernels' durations) loads its own.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from keet import load_profile
from keet.diagnosis import read_ahead
from keet.profile import Profile

PROFILES = Path(__file__).resolve().parents[1] / "profiles"


@cache
def zoo(gpu: str) -> Profile:
    """The GPU's combined zoo report, read as `keet explain` reads it (per-instruction counters ahead)."""
    return load_profile(PROFILES / gpu / "zoo_all.ncu-rep.xz", read_ahead=read_ahead())
