"""Published kernel measurements (perfmodel/data/published_results.toml), the work counted from
their stated kernels, and their comparison with the model's predictions of that work."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from perfmodel import published
from perfmodel.hardware import gpu, gpu_ids
from perfmodel.model import tensor_flops_per_instruction
from perfmodel.published import (
    BAND,
    CONTEXTS,
    KINDS,
    UNITS,
    Measurement,
    Row,
    Source,
    compare,
    kernel_work,
    load,
)
from perfmodel.validate import other_gpu_predictions, zoo_features

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "profiles" / "manifest.json"
DATA = ROOT / "perfmodel" / "data" / "published_results.toml"
TARGETS = ("b200", "a100", "mi300a", "mi300x", "mi250x")


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return compare()


def test_data_file_schema():
    data = tomllib.loads(DATA.read_text())
    assert set(data) == {"measurement"}
    for entry in data["measurement"]:
        assert {"gpu", "kernel", "benchmark", "work", "measured", "unit", "context", "comparability", "source"} <= set(entry)
        assert set(entry) <= {"gpu", "kernel", "benchmark", "work", "measured", "unit", "context", "comparability", "source", "outside"}
        assert entry["gpu"] in gpu_ids() and entry["unit"] in UNITS and entry["context"] in CONTEXTS
        assert entry["work"]["kind"] in KINDS
        assert isinstance(entry["measured"], (int, float)) and entry["measured"] > 0
        assert set(entry["source"]) == {"title", "authors", "publisher", "year", "url", "where"}
        assert all(str(value).strip() for value in entry["source"].values()), entry["source"]
        assert entry["source"]["url"].startswith("https://")
        assert len(entry["comparability"]) > 40 and len(entry["benchmark"]) > 20


def test_every_target_gpu_has_ten_measurements():
    measurements = load()
    for gpu_id in TARGETS:
        assert sum(m.gpu == gpu_id for m in measurements) >= 10, gpu_id


def test_measured_figures_are_below_the_vendor_peaks():
    """A published rate above the hardware's peak would be a misread figure."""
    for m in load():
        hardware = gpu(m.gpu)
        work = kernel_work(m)
        seconds = m.seconds()
        if m.work["kind"] in ("stream", "stencil7") and not m.work.get("l2_resident"):
            dram = work.counts["dram_bytes_read"] + work.counts["dram_bytes_write"]
            assert dram / seconds < hardware.require("dram_bandwidth_bytes_per_s"), m.kernel
        elif m.work["kind"] == "gemm":
            assert work.flops["tensor"] / seconds < hardware.require("tensor_fp16_peak_flops") * 1.1, m.kernel
        elif m.work["kind"] == "fma":
            assert work.flops["fp32"] / seconds < hardware.require("fp32_peak_flops"), m.kernel


def test_no_published_column_is_also_a_hardware_parameter():
    """The suites' read/init streams, pointer chases and gpu-cache runs set parameters (the hardware
    files cite them); the rows here are other kernels of those files, so the comparison is not
    circular: a parameter citing a row's results file names a different column."""
    for m in load():
        path = m.source.url.split("/blob/")[-1].split("/", 1)[-1]
        columns = re.findall(r"column '([^']+)'", m.source.where)
        for name, entry in tomllib.loads((ROOT / "perfmodel" / "hardware" / f"{m.gpu}.toml").read_text())["params"].items():
            if path in entry["ref"]:
                assert columns and not any(f"'{c}'" in entry["ref"] for c in columns), (m.gpu, name, m.kernel)
        assert not re.search(r"gpu-stream (read|init)\b", m.kernel)


def test_rows_outside_the_band_are_explained(rows):
    for row in rows:
        assert row.ratio is not None, (row.measurement.kernel, row.error)
        if not BAND[0] <= row.ratio <= BAND[1]:
            assert len(row.measurement.outside) > 40, (row.gpu, row.measurement.kernel, row.ratio)


def test_stream_work_follows_the_stated_kernel():
    m = next(m for m in load() if m.gpu == "a100" and m.kernel == "gpu-stream triad")
    work = kernel_work(m)
    n = 2**28 + 2
    assert work.counts["dram_bytes_read"] == 3 * n * 8 and work.counts["dram_bytes_write"] == n * 8
    assert m.counted() == 4 * n * 8  # the suite counts 4 streams
    assert work.grid_blocks == -(-n // 1024) and work.counts["global_load_requests"] == pytest.approx(3 * n / 32)
    # on a 64-lane GPU the same work is half the wavefront requests
    amd = kernel_work(m, gpu("mi300x"))
    assert amd.counts["global_load_requests"] == pytest.approx(3 * n / 64)
    resident = next(m for m in load() if m.gpu == "mi300x" and m.kernel == "gpu-l2-stream triad")
    assert kernel_work(resident).counts["dram_bytes_read"] == 0


@pytest.mark.parametrize("gpu_id,opcode", [("a100", "HMMA.16816.F32.BF16"), ("h100", "HGMMA.64x256x16.F32.BF16"),
                                           ("b200", "UTCHMMA.128x256x16.F32.BF16"), ("mi300x", "MFMA_MOPS.BF16.16x8x8")])
def test_gemm_work_is_2mnk_as_the_targets_own_mma(gpu_id, opcode):
    source = Source("t", "a", "p", "2025", "https://example.org", "table 1")
    m = Measurement(gpu_id, "gemm", {"kind": "gemm", "m": 4096, "n": 2048, "k": 1024, "dtype": "bf16"}, 100.0, "TFLOP/s",
                    "isolated", "benchmark text", "comparability", source)
    work = kernel_work(m)
    (found, count), = work.tensor_instructions.items()
    assert found == opcode
    assert count * tensor_flops_per_instruction(opcode) == pytest.approx(2 * 4096 * 2048 * 1024)
    assert work.counts["dram_bytes_read"] == (4096 * 1024 + 1024 * 2048) * 2
    assert m.seconds() == pytest.approx(2 * 4096 * 2048 * 1024 / 100e12)


def test_amd_mfma_instructions_are_issued_instructions_not_mops():
    """rocprof rates MFMA work in 512-FLOP MOPs, but the issue term counts instructions: one
    32x32x8 MFMA issues 16384 FLOPs."""
    source = Source("t", "a", "p", "2025", "https://example.org", "table 1")
    m = Measurement("mi300x", "gemm", {"kind": "gemm", "m": 8192, "n": 8192, "k": 8192, "dtype": "bf16"}, 600.0, "TFLOP/s",
                    "isolated", "benchmark text", "comparability", source)
    work = kernel_work(m)
    assert work.warp_instructions_by_pipe["tensor"] == pytest.approx(2 * 8192**3 / 16384)


def test_comparison_is_a_time_ratio(rows):
    row = next(r for r in rows if r.gpu == "mi250x" and "baseline" in r.measurement.kernel)
    assert row.measurement.seconds() == pytest.approx(2.64172e-3, rel=1e-4)
    assert row.ratio == pytest.approx(row.predicted_s / 2.64172e-3, rel=1e-4)
    rate = next(r for r in rows if r.gpu == "mi300x" and r.measurement.kernel == "gpu-stream scale")
    # a rate's model figure is the benchmark's own byte count over the predicted time
    assert rate.predicted_in_unit == pytest.approx(rate.measurement.counted() / rate.predicted_s / 1e9)
    assert rate.ratio == pytest.approx(rate.measurement.measured / rate.predicted_in_unit)


def test_section_has_the_summary_and_every_row(rows):
    text = "\n".join(published.section(rows))
    for gpu_id in TARGETS:
        line = next(line for line in text.splitlines() if line.startswith(f"| {gpu_id} | ") and "median" not in line)
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert int(cells[1]) >= 10 and float(cells[2]) > 0 and re.fullmatch(r"[\d.]+-[\d.]+", cells[3])
    # two tables: a header line each (separators start "|-"), a line per GPU, a line per measurement
    assert sum(line.startswith("| ") for line in text.splitlines()) == 1 + len({r.gpu for r in rows}) + 1 + len(rows)
    assert "<https://github.com/RRZE-HPC/gpu-benches/blob/" in text


def test_summaries_per_gpu(rows):
    for s in published.summaries(rows):
        assert s.low <= s.q1 <= s.median <= s.q3 <= s.high
        assert s.outside == [r.measurement.kernel for r in rows if r.gpu == s.gpu and not BAND[0] <= r.ratio <= BAND[1]]


@pytest.fixture(scope="module")
def h100_zoo():
    manifest = json.loads(MANIFEST.read_text())
    manifest["gpus"] = {"h100": manifest["gpus"]["h100"]}  # the H100 report only
    return zoo_features(manifest, MANIFEST.parent)["h100"]


def test_zoo_lower_bounds_on_b200_and_mi300_name_only_documented_parameters(h100_zoo):
    """Done-when of issue 25: a B200, MI300A or MI300X prediction of a zoo kernel is a lower bound
    only for a parameter docs/model.md names as given by no source."""
    model_md = (ROOT / "docs" / "model.md").read_text()
    section = model_md[model_md.index("### Parameters no source gives"):]
    section = section[:section.index("\n## ")] if "\n## " in section else section
    documented = set(re.findall(r"`([a-z0-9_]+)`", section))
    undocumented = set()
    for (program, gpu_id), p in other_gpu_predictions(h100_zoo, ("b200", "mi300a", "mi300x")).items():
        if isinstance(p, str) or not p.lower_bound:
            continue
        for missing in p.missing_parameters:
            names = re.findall(r"[a-z0-9]+(?:_[a-z0-9]+)+", missing.split("(", 1)[-1])
            undocumented.update(f"{name} ({program} on {gpu_id})" for name in names if name not in documented)
    assert not undocumented, sorted(undocumented)
