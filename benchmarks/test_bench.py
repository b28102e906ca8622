"""Ingestion speed: a 20-kernel full-set H100 report, the 34-kernel zoo report, and a
100k-row details CSV. Targets: < 1 s for the 20-kernel report, < 2 s for the CSV."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from gen_details_csv import replicate

from keet import load_profile

ROOT = Path(__file__).resolve().parents[1]
SM75_CSV = ROOT / "tests" / "data" / "ncu" / "sm75_details_rules_copy_blocked.csv"


def plain_report(tmp_path_factory, compressed: Path) -> Path:
    """Benchmarks read the plain .ncu-rep, as Nsight Compute writes it (no decompression)."""
    path = tmp_path_factory.mktemp("reports") / compressed.name.removesuffix(".xz")
    path.write_bytes(lzma.decompress(compressed.read_bytes()))
    return path


@pytest.fixture(scope="module")
def zoo20(tmp_path_factory) -> Path:
    return plain_report(tmp_path_factory, ROOT / "profiles/h100/reduced/zoo20_full.ncu-rep.xz")


@pytest.fixture(scope="module")
def zoo34(tmp_path_factory) -> Path:
    return plain_report(tmp_path_factory, ROOT / "profiles/h100/zoo_all.ncu-rep.xz")


@pytest.fixture(scope="module")
def details_100k(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("csv") / "details_100k.csv"
    path.write_text(replicate(SM75_CSV, 100_000))
    return path


def test_load_20_kernel_full_set_report(benchmark, zoo20):
    profile = benchmark.pedantic(load_profile, args=(zoo20,), rounds=5, iterations=1)
    assert len(profile.kernels) == 20 and len(profile.metrics) > 40_000


def test_load_34_kernel_full_set_report(benchmark, zoo34):
    profile = benchmark.pedantic(load_profile, args=(zoo34,), rounds=5, iterations=1)
    assert len(profile.kernels) == 34


def test_source_counters_of_20_kernels(benchmark, zoo20):
    def load_with_sources():
        profile = load_profile(zoo20)
        return [kernel.source for kernel in profile.kernels]

    sources = benchmark.pedantic(load_with_sources, rounds=3, iterations=1)
    assert all(source is not None for source in sources)


def test_load_100k_row_details_csv(benchmark, details_100k):
    profile = benchmark.pedantic(load_profile, args=(details_100k,), rounds=5, iterations=1)
    assert len(profile.kernels) > 1000


def test_explain_20_kernel_full_set_report(benchmark, zoo20):
    """keet explain end to end (load, diagnose, render), target < 2 s."""
    from keet.explain import explain, to_text

    def explain_report():
        return to_text(explain(load_profile(zoo20)))

    text = benchmark.pedantic(explain_report, rounds=5, iterations=1)
    # identical launches are grouped and only the groups with the most time to win are shown in
    # full (issue 21): every launch is in the table
    assert "20 launches in" in text
    assert all(k.name in text for k in load_profile(zoo20).kernels)


def test_predict_20_kernel_full_set_report(benchmark, zoo20):
    """`perfmodel predict REPORT --gpu h200` in process, as a user runs it (load of the model's
    metrics with every kernel's load chains read ahead, features, model, the JSON answer), target < 1 s."""
    from click.testing import CliRunner

    from perfmodel.cli import cli

    def predict_report():
        result = CliRunner().invoke(cli, ["predict", str(zoo20), "--gpu", "h200", "--format", "json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)["kernels"]

    predictions = benchmark.pedantic(predict_report, rounds=10, iterations=1)
    assert len(predictions) == 20
