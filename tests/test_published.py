"""Published measurements (perfmodel/data/published_results.toml) and their comparison with the
model's predictions for the zoo programs."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from perfmodel.hardware import gpu, gpu_ids
from perfmodel.published import (
    METRICS,
    Missing,
    Published,
    Source,
    comparison_markdown,
    comparison_rows,
    load,
    program_work,
)
from perfmodel.validate import other_gpu_predictions, zoo_features

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "profiles" / "manifest.json"
DATA = ROOT / "perfmodel" / "data" / "published_results.toml"


@pytest.fixture(scope="module")
def h100_zoo():
    manifest = json.loads(MANIFEST.read_text())
    manifest["gpus"] = {"h100": manifest["gpus"]["h100"]}  # the H100 report only
    return zoo_features(manifest, MANIFEST.parent)["h100"]


@pytest.fixture(scope="module")
def work(h100_zoo) -> dict[str, dict[str, float]]:
    return {program: program_work(features) for program, features in h100_zoo.items()}


def test_data_file_schema():
    data = tomllib.loads(DATA.read_text())
    assert set(data) == {"result", "missing"}
    programs = {entry["program"] for entry in json.loads(MANIFEST.read_text())["kernels"]}
    for entry in data["result"]:
        assert set(entry) == {"gpu", "metric", "value", "unit", "benchmark", "program", "comparability", "source"}
        assert entry["gpu"] in gpu_ids() and entry["metric"] in METRICS
        assert entry["unit"] == METRICS[entry["metric"]]["unit"]
        assert entry["program"] in programs and entry["program"] == METRICS[entry["metric"]]["program"]
        assert isinstance(entry["value"], (int, float)) and entry["value"] > 0
        assert set(entry["source"]) == {"title", "authors", "publisher", "year", "url", "where"}
        assert all(str(value).strip() for value in entry["source"].values()), entry["source"]
        assert entry["source"]["url"].startswith("https://")
        assert len(entry["comparability"]) > 40 and len(entry["benchmark"]) > 20
    for entry in data["missing"]:
        assert set(entry) == {"gpu", "metric", "searched"}
        assert entry["gpu"] in gpu_ids() and entry["metric"] in METRICS and entry["searched"].strip()


def test_a_pair_is_either_published_or_missing_never_both():
    results, missing = load()
    found = {(r.gpu, r.metric) for r in results}
    gaps = {(m.gpu, m.metric) for m in missing}
    assert not found & gaps
    assert len(found) == len(results) and len(gaps) == len(missing)


def test_every_target_gpu_has_a_triad_entry_found_or_not():
    results, missing = load()
    covered = {r.gpu for r in results if r.metric == "stream_triad_bandwidth"} | {
        m.gpu for m in missing if m.metric == "stream_triad_bandwidth"}
    assert {"b200", "a100", "mi300a", "mi300x", "mi250x"} <= covered


def test_published_values_are_below_the_vendor_peaks():
    """A measured bandwidth or throughput above the hardware's peak would be a misread figure."""
    results, _ = load()
    for r in results:
        hardware = gpu(r.gpu)
        if r.metric == "stream_triad_bandwidth":
            assert r.value * 1e9 < hardware.require("dram_bandwidth_bytes_per_s"), r
        elif r.metric in ("fp32_fma_throughput", "sgemm_throughput"):
            assert r.value * 1e12 < hardware.require("fp32_peak_flops"), r


def test_zoo_work_matches_the_programs_sizes(work):
    # dram_triad: a = b + s*c over 96 Mi floats: 3 arrays x 96 Mi x 4 B (STREAM's byte count).
    assert work["dram_triad"]["bytes"] == 3 * 96 * 2**20 * 4
    # fp32_fma: 17.7 G FFMA = 35.4 GFLOP (manifest description).
    assert work["fp32_fma"]["fp32_flops"] == pytest.approx(35.4e9, rel=0.01)
    # sgemm_tiled: 2 x 2048^3; gemm_wmma: 2 x 4096^3 on tensor cores.
    assert work["sgemm_tiled"]["fp32_flops"] == pytest.approx(2 * 2048**3, rel=0.001)
    assert work["gemm_wmma"]["tensor_flops"] == pytest.approx(2 * 4096**3, rel=0.001)


def test_comparison_turns_predicted_time_into_the_published_metric():
    source = Source("t", "a", "p", "2025", "https://example.org", "table 1")
    results = ([Published("a100", "stream_triad_bandwidth", 1759.0, "GB/s", "triad", "dram_triad", "c", source),
                Published("mi300a", "fp32_fma_throughput", 113.2, "TFLOP/s", "fma", "fp32_fma", "c", source)],
               [Missing("mi250x", "stream_triad_bandwidth", "looked everywhere")])
    work = {"dram_triad": {"bytes": 1.2e9}, "fp32_fma": {"fp32_flops": 35.4e9}}
    predictions = {("dram_triad", "a100"): 1.2e9 / 1759.0,  # ns: exactly the published bandwidth
                   ("fp32_fma", "mi300a"): 35.4e9 / 56.6e3,  # 56.6 TFLOP/s
                   ("dram_triad", "mi250x"): 1.2e9 / 1600.0}
    rows = comparison_rows(predictions, work, results=results)
    by_gpu = {row.gpu: row for row in rows}
    assert by_gpu["a100"].predicted == pytest.approx(1759.0) and by_gpu["a100"].ratio == pytest.approx(1.0)
    assert by_gpu["mi300a"].predicted == pytest.approx(56.6) and by_gpu["mi300a"].ratio == pytest.approx(0.5, rel=1e-3)
    assert by_gpu["mi250x"].published is None and by_gpu["mi250x"].predicted == pytest.approx(1600.0)
    assert by_gpu["mi250x"].ratio is None
    text = comparison_markdown(rows)
    assert "none found" in text and "looked everywhere" in text and "<https://example.org>" in text
    assert "1,759 GB/s" in text and "56.6 TFLOP/s" in text and "| 1.00 |" in text and "| 0.50 |" in text
    assert len(text.splitlines()) == 2 + 3


def test_missing_predictions_show_as_dashes():
    rows = comparison_rows({}, {"dram_triad": {"bytes": 1.0}})
    assert rows and all(row.predicted is None for row in rows)
    assert "| — |" in comparison_markdown(rows)


def test_real_comparison_on_the_zoo(h100_zoo, work):
    """End to end: retargeted H100 profiles predicted on every GPU, compared with the published
    figures. The model (vendor peak bandwidth where we have no calibration) must not be slower
    than a measured triad, and must sit within 2x of it."""
    chosen = {p: h100_zoo[p] for p in ("dram_triad", "fp32_fma", "sgemm_tiled", "gemm_wmma")}
    predictions = {key: p.predicted_ns for key, p in other_gpu_predictions(chosen, tuple(gpu_ids())).items()
                   if not isinstance(p, str)}
    assert {g for (_, g) in predictions} == set(gpu_ids())
    rows = comparison_rows(predictions, work)
    triad = [row for row in rows if row.metric == "stream_triad_bandwidth" and row.published is not None]
    assert triad
    for row in triad:
        assert 1.0 <= row.ratio < 2.0, (row.gpu, row.predicted, row.published)
    text = comparison_markdown(rows)
    assert text.count("\n") + 1 == 2 + len(rows)
    for gpu_id in ("b200", "a100", "mi300a", "mi300x", "mi250x"):
        assert f"| {gpu_id} | dram_triad |" in text
