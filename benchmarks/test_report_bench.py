"""keet report speed. Target (issue 8): a 20-kernel report builds in < 5 s, end to end: the
plain .ncu-rep of the first 20 zoo launches (H100, full set with source counters) read,
diagnosed, every section computed, every figure drawn and the page rendered and written."""

from __future__ import annotations

from pathlib import Path

from test_bench import plain_report

from keet.report import write_report

ROOT = Path(__file__).resolve().parents[1]


def test_report_20_kernel_full_set_report(benchmark, tmp_path_factory):
    profile = plain_report(tmp_path_factory, ROOT / "profiles/h100/reduced/zoo20_full.ncu-rep.xz")
    out = tmp_path_factory.mktemp("report") / "zoo20.html"
    report = benchmark.pedantic(write_report, args=([profile], out), rounds=3, iterations=1)
    kernels = report.profiles[0].kernels
    assert len(kernels) == 20 and all(k.figures for k in kernels)
    assert out.stat().st_size > 1_000_000
