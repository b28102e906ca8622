"""rocprof ingestion speed on real files. Targets (issue 7): a 1,000-dispatch rocprof CSV in
< 1 s, the 800 KB rocpd-form pmc_perf.csv in < 2 s."""

from __future__ import annotations

from pathlib import Path

from keet import load_profile

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "rocprof"


def test_load_1000_dispatch_rocprof_v1_csv(benchmark):
    # MI250X finite-difference run: 1004 dispatches, 1001 of one kernel (272 KB).
    profile = benchmark.pedantic(load_profile, args=(DATA / "mi250x_fd_results.csv",), rounds=10, iterations=1)
    assert sum(k.invocations for k in profile.kernels) == 1004
    assert benchmark.stats.stats.max < 1.0


def test_load_rocpd_long_pmc_perf(benchmark):
    # MI300X rocprof-compute 3.2 rocpd long form: 6027 rows, 2009 counters x 3 dispatches (838 KB).
    profile = benchmark.pedantic(load_profile, args=(DATA / "mi300x_rocpd_long_pmc_perf.csv",), rounds=10, iterations=1)
    assert profile.kernels[0].invocations == 3
    assert benchmark.stats.stats.max < 2.0


def test_load_wide_pmc_perf_2718_columns(benchmark):
    # MI300X rocprofv2-backend pmc_perf.csv: 2718 columns, 3 dispatches (100 KB).
    profile = benchmark.pedantic(load_profile, args=(DATA / "mi300x_v2backend_pmc_perf.csv",), rounds=10, iterations=1)
    assert profile.kernels[0].invocations == 3
