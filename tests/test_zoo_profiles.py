"""Our own zoo captures (profiles/): every report loads, matches the manifest, and the
CSV exports of the combined report agree with the report itself."""

from __future__ import annotations

import json
import tomllib
from functools import cache
from pathlib import Path

import pytest
import shared_profiles

from keet import load_profile
from keet.canonical import vocabulary

PROFILES = Path(__file__).resolve().parents[1] / "profiles"
MANIFEST = json.loads((PROFILES / "manifest.json").read_text())
GPUS = {"h100": "NVIDIA H100 80GB HBM3", "h200": "NVIDIA H200"}
CATEGORIES = {
    "dram_bandwidth", "l2_bandwidth", "l1_shared_bandwidth", "uncoalesced_global", "shared_bank_conflicts",
    "atomic_contention", "warp_divergence", "fp32_compute", "fp64_compute", "sfu_compute", "int_compute",
    "tensor_compute", "instruction_issue", "register_spills", "occupancy_registers", "occupancy_shared_memory",
    "occupancy_block_limit", "small_grid", "tail_effect", "memory_latency", "barrier_sync", "launch_overhead",
}
ENTRIES = [(gpu, entry) for gpu in GPUS for entry in MANIFEST["kernels"]]


@cache
def combined(gpu: str):
    return shared_profiles.zoo(gpu)


def test_manifest_covers_the_zoo():
    intent = tomllib.loads((PROFILES / "zoo.toml").read_text())["kernel"]
    assert [e["kernel"] for e in MANIFEST["kernels"]] == [e["kernel"] for e in intent]
    assert len({e["program"] for e in MANIFEST["kernels"]}) >= 24
    covered = {e["category"] for e in MANIFEST["kernels"]}
    assert covered <= CATEGORIES and len(covered) >= 18
    realistic = {e["program"] for e in MANIFEST["kernels"] if e["realistic"]}
    assert {"sgemm_tiled", "softmax_rows", "layernorm", "gemm_wmma"} <= realistic
    for entry in MANIFEST["kernels"]:
        assert (PROFILES / entry["source"]).is_file()
        for gpu in GPUS:
            measured = entry["measured"][gpu]
            assert measured["runs"] == 25 and measured["min_ms"] <= measured["median_ms"] <= measured["max_ms"]
            assert (PROFILES / measured["report"]).is_file()


LAUNCH_METRICS = {"gpu__time_duration.sum", *next(m for m in vocabulary() if m.name == "sm_clock").ncu}


@pytest.mark.parametrize("gpu, entry", ENTRIES, ids=[f"{g}-{e['program']}" for g, e in ENTRIES])
def test_program_report_matches_manifest(gpu, entry):
    # the launch, the device and the clock (launch and device attributes are always read)
    profile = load_profile(PROFILES / entry["measured"][gpu]["report"], metrics=LAUNCH_METRICS)
    assert profile.device.name == GPUS[gpu]
    assert profile.device.compute_capability == (9, 0) and profile.device.sm_count == 132
    kernel = profile.kernel(entry["kernel"])
    assert kernel.function_name == entry["kernel"]
    assert list(kernel.grid) == entry["launch"]["grid"] and list(kernel.block) == entry["launch"]["block"]
    assert kernel.dynamic_shared_bytes == entry["launch"]["dynamic_shared_bytes"]
    # The launch allocates registers in steps (at least 16 per thread on sm_90): never fewer than ptxas used.
    used = entry["ptxas"]["registers"]
    assert used <= kernel.registers_per_thread <= max(16, -(-used // 8) * 8)
    assert kernel.static_shared_bytes == entry["ptxas"]["smem_static"]
    assert kernel.duration_ns > 0 and profile.value(kernel, "sm_clock") > 1e9
    assert kernel.rule_results, "full-set reports carry Nsight Compute's rule results"


@pytest.mark.slow  # reads the 34-launch full-set report: 3 to 7 s on 2 cores
def test_combined_report_has_every_launch():
    for gpu in GPUS:
        profile = combined(gpu)
        assert len(profile.kernels) == 34  # 32 programs, launch_overhead launches 3 times
        for entry in MANIFEST["kernels"]:
            assert profile.kernels[entry["measured"][gpu]["combined_report_id"]].function_name == entry["kernel"]


def test_source_attribution_names_the_strided_store():
    profile = load_profile(PROFILES / "h100" / "ncu" / "transpose_naive.ncu-rep.xz")
    lines = profile.kernels[0].source.by_line()
    worst = lines.assign(excess=lines["memory_l2_theoretical_sectors_global"] - lines["memory_l2_theoretical_sectors_global_ideal"])
    top = worst.nlargest(1, "excess").iloc[0]
    assert top["file"].endswith("profiles/src/transpose_naive.cu") and top["line"] == 18
    assert "strided store" in top["text"]
    assert top["memory_l2_theoretical_sectors_global"] == 4.5 * top["memory_l2_theoretical_sectors_global_ideal"]
    assert profile.kernels[0].source.sass(0).strip().startswith("LDC")


def test_register_spills_show_as_local_traffic():
    profile = load_profile(PROFILES / "h100" / "ncu" / "register_spill.ncu-rep.xz")
    kernel = profile.kernels[0]
    assert profile.value(kernel, "local.store_sectors") > 0 and profile.value(kernel, "local.load_sectors") > 0
    clean = load_profile(PROFILES / "h100" / "ncu" / "fp32_fma.ncu-rep.xz")
    assert clean.value(clean.kernels[0], "local.load_sectors") == 0


# Metrics whose CSV text keeps at least three significant digits for every zoo kernel.
AGREEING = ["duration", "launch.grid_size", "launch.block_size", "launch.registers_per_thread", "launch.waves_per_sm",
            "occupancy.theoretical_pct", "occupancy.limit_registers", "sol.sm_pct", "sol.memory_pct", "inst.executed"]


# The details pages (3-5 s each to parse) are slow; tests/test_ncu_csv.py reads details pages in the default tier.
@pytest.mark.parametrize("export", [pytest.param(e, marks=pytest.mark.slow) for e in ("details", "details_base")] + ["raw", "raw_base"])
@pytest.mark.parametrize("gpu", GPUS)
def test_csv_exports_agree_with_the_report(gpu, export):
    report = combined(gpu)
    exported = load_profile(PROFILES / gpu / "csv" / f"zoo_all_{export}.csv.xz")
    assert exported.format == ("ncu-csv-raw" if export.startswith("raw") else "ncu-csv-details")
    assert [k.name for k in exported.kernels] == [k.name for k in report.kernels]
    assert [k.grid for k in exported.kernels] == [k.grid for k in report.kernels]
    compared = 0
    for kernel in report.kernels:
        for metric in AGREEING:
            expected, got = report.value(kernel, metric), exported.value(kernel.id, metric)
            if expected is None or expected < 1:  # tiny percentages print as 0.0x: no digits to compare
                continue
            assert got == pytest.approx(expected, rel=0.006), (kernel.name, metric)
            compared += 1
    assert compared > 250
    if export.startswith("details"):
        assert sum(len(k.rule_results) for k in exported.kernels) == sum(len(k.rule_results) for k in report.kernels)
