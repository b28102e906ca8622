"""Predicting from source with no GPU (issue 6): one zoo program, compile + launch discovery +
PTX interpretation + model, end to end as `perfmodel predict prog.cu --gpu h100` does it.
Target: < 15 s per program on this project's 2-core machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfmodel.hardware import gpu
from perfmodel.model import predict
from perfmodel.static.source import StaticKernel, static_kernels

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("program", ["dram_triad", "sgemm_tiled", "barrier_sync"])
def test_predict_zoo_program_from_source(benchmark, program):
    def run() -> list:
        return [predict(gpu("h100"), k.features) for k in static_kernels(ROOT / "profiles" / "src" / f"{program}.cu", "h100")
                if isinstance(k, StaticKernel)]

    predictions = benchmark.pedantic(run, rounds=3, iterations=1)
    assert predictions and all(p.predicted_ns > 0 for p in predictions)
