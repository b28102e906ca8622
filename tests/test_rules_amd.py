"""The AMD (CDNA) rules on real rocprof / rocprof-compute files, and on synthetic metric sets.

Real files: tests/data/rocprof (see its SOURCES.md). Where a real file lacks a case (VGPR- or
LDS-limited occupancy, scratch, LDS bank conflicts, VALU/MFMA-bound, HBM-bound on a named GPU,
a small grid) the test builds a *synthetic* Profile; those are marked synthetic in their names.
Two tests pair a real pmc_perf.csv with a sysinfo.csv: the MI200 one is the real sysinfo.csv of
the same workload folder, the MI300A one is synthetic (its workload folder shipped none).
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from grounding import explanation_numbers, grounded

from keet import load_profile
from keet.canonical import all_metrics
from keet.diagnosis import diagnose_kernel
from keet.explain import explain, to_text
from keet.profile import METRIC_COLUMNS, Device, Kernel, Profile
from keet.rules import AMD_RULES, RULES, KernelView
from keet.rules.amd_base import DERIVED_EVIDENCE, DEVICE_FACT, HARDWARE_PREFIX, hardware
from perfmodel.hardware import gpu

ROCPROF = Path(__file__).parent / "data" / "rocprof"
NCU = Path(__file__).parent / "data" / "ncu"
COUNTER_TABLES = {
    "mi300a_openmp_fortran_pmc_perf.csv": ["amd-memory-latency", "amd-wave-divergence"],
    "mi300x_v2backend_pmc_perf.csv": ["amd-memory-latency"],
    "mi300x_rocpd_long_pmc_perf.csv": ["amd-memory-latency"],
    "mi200_v1backend_pmc_perf.csv": ["amd-memory-latency"],
    "mi100_v1backend_pmc_perf.csv": ["amd-memory-latency"],
}
TRACES = ("mi300a_rocm7_kernel_trace.csv", "docs_rocm62_kernel_trace.csv", "mi250x_fd_results.csv")
UNITS = {m.name: m.unit for m in all_metrics()}


@cache
def profile(path: Path) -> Profile:
    return load_profile(path)


def document(path: Path) -> dict:
    return explain(profile(path))


def check_grounded(p: Profile, doc: dict) -> int:
    """Every evidence value is the profile's own (or its GPU's hardware-file value, or the
    occupancy derived from its resources); every number of an explanation is evidence."""
    checked = 0
    hw = None
    for entry in doc["kernels"]:
        kernel = p.kernel(entry["id"])
        values, raw = p.values(kernel), p.values(kernel, origin="raw")
        for finding in entry["diagnosis"]:
            for item in finding["evidence"]:
                name = item["metric"]
                if name.startswith(HARDWARE_PREFIX):
                    hw = hw or hardware(KernelView(p, kernel))
                    assert hw is not None and hw.value(name[len(HARDWARE_PREFIX):]) == item["value"], item
                elif name.startswith("kernel."):
                    assert kernel.attributes[name[len("kernel."):]] == item["value"], item
                elif name in DERIVED_EVIDENCE:
                    assert item["value"] > 0
                else:
                    stored = values.get(name) or raw.get(name)
                    assert stored is not None and stored[0] == item["value"], (entry["name"], item)
            candidates = [e["value"] for e in finding["evidence"]] + [e["compared_with"] for e in finding["evidence"] if "compared_with" in e]
            for token in explanation_numbers(finding["explanation"]):
                assert grounded(token, candidates), (finding["rule"], token, finding["explanation"])
                checked += 1
    return checked


def rules_of(entry: dict) -> list[str]:
    return [f["rule"] for f in entry["diagnosis"]]


# ------------------------------------------------------------------ real counter tables


@pytest.mark.parametrize("name", sorted(COUNTER_TABLES))
def test_counter_tables_get_a_grounded_diagnosis(name):
    doc = document(ROCPROF / name)
    for entry in doc["kernels"]:
        assert sorted(rules_of(entry)) == COUNTER_TABLES[name], entry["name"]
        for finding in entry["diagnosis"]:
            assert finding["rule"].startswith("amd-")
            assert 0 < finding["impact"] <= 1 and 0 < finding["confidence"] <= 1 and finding["suggestions"]
        # the file names no GPU: the HBM ceiling and the CU count are not guessed
        unassessed = {n["rule"]: n for n in entry["not_assessed"]}
        assert unassessed["amd-hbm-bandwidth"]["missing"] == [DEVICE_FACT]
        assert unassessed["amd-small-grid"]["missing"] == [DEVICE_FACT]
        assert all(n["rule"].startswith("amd-") and "ncu" not in n["collect"] for n in entry["not_assessed"])
    assert check_grounded(profile(ROCPROF / name), doc) > 0


def test_mi300x_vecopy_waits_on_memory():
    entry = document(ROCPROF / "mi300x_v2backend_pmc_perf.csv")["kernels"][0]
    finding = entry["diagnosis"][0]
    evidence = {e["metric"]: e["value"] for e in finding["evidence"]}
    raw = profile(ROCPROF / "mi300x_v2backend_pmc_perf.csv").values(entry["id"], origin="raw")
    assert evidence["SQ_WAIT_ANY"] == raw["SQ_WAIT_ANY"][0] and evidence["SQ_WAVE_CYCLES"] == raw["SQ_WAVE_CYCLES"][0]
    assert evidence["SQ_WAIT_ANY"] / evidence["SQ_WAVE_CYCLES"] > 0.8
    assert finding["confidence"] == 0.4  # no device: HBM could be the limit, said so
    assert "cannot be told" in finding["explanation"]


def test_mi300a_fortran_divergence_and_one_time_cost():
    doc = document(ROCPROF / "mi300a_openmp_fortran_pmc_perf.csv")
    by_name = {e["name"]: e for e in doc["kernels"]}
    l18 = by_name["__omp_offloading_32_6b6b__QQmain_l18.kd"]
    divergence = next(f for f in l18["diagnosis"] if f["rule"] == "amd-wave-divergence")
    lanes = next(e for e in divergence["evidence"] if e["metric"] == "warp.active_threads")
    assert lanes["value"] == pytest.approx(44.097, abs=1e-3) and lanes["compared_with"] == 48
    latency = next(f for f in l18["diagnosis"] if f["rule"] == "amd-memory-latency")
    spread = {e["metric"]: e["value"] for e in latency["evidence"]}
    assert spread["kernel.duration_ns_min"] == 629122 and spread["kernel.duration_ns_max"] == 430646701
    assert "one-time cost" in latency["explanation"] and "hipMemPrefetchAsync" in latency["suggestions"][0]
    l41 = by_name["__omp_offloading_32_6b6b__QQmain_l41.kd"]
    assert next(e for e in l41["diagnosis"][1]["evidence"] if e["metric"] == "warp.active_threads")["value"] == pytest.approx(35.484, abs=1e-3)


def workload(tmp_path: Path, pmc: str, sysinfo: dict[str, str] | None = None, real_sysinfo: str | None = None) -> Path:
    folder = tmp_path / "workload"
    folder.mkdir()
    shutil.copy(ROCPROF / pmc, folder / "pmc_perf.csv")
    if real_sysinfo:
        shutil.copy(ROCPROF / real_sysinfo, folder / "sysinfo.csv")
    if sysinfo:
        with open(ROCPROF / "mi200_sysinfo.csv", newline="") as handle:
            row = next(csv.DictReader(handle))
        row.update(sysinfo)
        with open(folder / "sysinfo.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(row))
            writer.writeheader()
            writer.writerow(row)
    return folder


def test_mi200_with_its_real_sysinfo_compares_hbm_with_the_files_peak(tmp_path):
    folder = workload(tmp_path, "mi200_v1backend_pmc_perf.csv", real_sysinfo="mi200_sysinfo.csv")
    p = load_profile(folder)
    doc = explain(p)
    entry = doc["kernels"][0]
    assert rules_of(entry) == ["amd-memory-latency"] and entry["not_assessed"] == []
    finding = entry["diagnosis"][0]
    hbm = next(e for e in finding["evidence"] if e["metric"] == "dram.throughput")
    # MI200 in sysinfo (gfx90a, 104 CUs: an MI210) has no hardware file: the ceiling is sysinfo's hbm_bw
    assert hbm["compared_with"] == pytest.approx(1638.4e9) and hbm["value"] == pytest.approx(832.2e9, rel=1e-3)
    assert finding["confidence"] == 0.7
    text = to_text(doc)
    assert "Checked and not limiting" in text and "dram_bandwidth" in text.split("Checked and not limiting")[1]
    assert check_grounded(p, doc) > 0


def test_mi300a_with_a_synthetic_sysinfo_is_hbm_bound_in_l41(tmp_path):
    folder = workload(tmp_path, "mi300a_openmp_fortran_pmc_perf.csv",
                      sysinfo={"gpu_model": "MI300A", "gpu_arch": "gfx942", "cu_per_gpu": "228", "num_xcd": "6", "hbm_bw": ""})
    p = load_profile(folder)
    doc = explain(p)
    by_name = {e["name"]: e for e in doc["kernels"]}
    l41 = by_name["__omp_offloading_32_6b6b__QQmain_l41.kd"]
    assert rules_of(l41)[0] == "amd-hbm-bandwidth"
    hbm = l41["diagnosis"][0]
    throughput = next(e for e in hbm["evidence"] if e["metric"] == "dram.throughput")
    assert throughput["compared_with"] == gpu("mi300a").value("dram_bandwidth_bytes_per_s")
    assert hbm["impact"] == pytest.approx(throughput["value"] / 5.3e12, abs=1e-4)
    assert "Infinity Cache" in " ".join(hbm["suggestions"])
    assert "amd-memory-latency" not in rules_of(l41)  # HBM near its peak: the waits are its symptom
    l61 = by_name["__omp_offloading_32_6b6b__QQmain_l61.kd"]
    assert "amd-hbm-bandwidth" not in rules_of(l61)  # 3.03 of 5.3 TB/s
    assert check_grounded(p, doc) > 0


# ------------------------------------------------------------------ trace-only files


@pytest.mark.parametrize("name", TRACES)
def test_trace_only_files_get_an_honest_partial_diagnosis(name):
    doc = document(ROCPROF / name)
    text = to_text(doc)
    assert "ncu" not in text
    assert "rocprofv3 --kernel-trace --pmc" in text and "rocprof-compute profile -n NAME -- ./app" in text
    for entry in doc["kernels"]:
        assert entry["diagnosis"] == []
        assert entry["duration_ns"] > 0 and entry["grid"] and entry["block"]
        missing = {m for n in entry["not_assessed"] for m in n["missing"]}
        assert {"amd.waves", "dram.throughput"} <= missing
    assert "No bottleneck can be named from the evidence this profile holds" in text


def test_trace_with_resources_concludes_occupancy():
    text = to_text(document(ROCPROF / "mi250x_fd_results.csv"))
    # 16-24 VGPRs, no LDS, no scratch: occupancy and spills checked from the resources alone
    assert text.count("Checked and not limiting: occupancy_registers, occupancy_shared_memory, register_spills.") == 4


# ------------------------------------------------------------------ JSON contract and vendor separation

AMD_FILES = sorted(COUNTER_TABLES) + list(TRACES)


@pytest.mark.parametrize("name", AMD_FILES)
def test_json_contract(name):
    result = subprocess.run([sys.executable, "-m", "keet.cli", "explain", str(ROCPROF / name), "--format", "json"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc) >= {"source", "format", "device", "kernels"} and doc["device"]["vendor"] == "amd"
    durations = [k["duration_ns"] for k in doc["kernels"]]
    assert durations == sorted(durations, reverse=True)
    for kernel in doc["kernels"]:
        assert set(kernel) >= {"id", "name", "duration_ns", "diagnosis"}
        for finding in kernel["diagnosis"]:
            assert set(finding) >= {"category", "impact", "confidence", "evidence", "explanation", "suggestions"}
            assert 0 < finding["impact"] <= 1 and 0 < finding["confidence"] <= 1
            assert all(set(e) >= {"metric", "value", "unit"} for e in finding["evidence"])
        for n in kernel["not_assessed"]:
            assert n["collect"].startswith(("rocprofv3", "rocprof-compute"))


def test_rules_keep_to_their_vendor():
    assert all(r.id.startswith("amd-") for r in AMD_RULES) and not any(r.id.startswith("amd-") for r in RULES)
    nvidia = load_profile(NCU / "rtx3070_cuvectoradddrv.ncu-rep")
    for kernel in nvidia.kernels:
        d = diagnose_kernel(nvidia, kernel)
        assert not any(f.rule.startswith("amd-") for f in d.findings)
        assert not any(n.rule.startswith("amd-") for n in d.not_assessed)
    for name in AMD_FILES:
        p = profile(ROCPROF / name)
        for kernel in p.kernels:
            d = diagnose_kernel(p, kernel)
            assert all(f.rule.startswith("amd-") for f in d.findings)
            assert all(n.rule.startswith("amd-") for n in d.not_assessed)


# ------------------------------------------------------------------ synthetic metric sets

MI300X = Device(name="AMD Instinct MI300X", vendor="amd", arch="gfx942", sm_count=304)
MI100 = Device(name="AMD Instinct MI100", vendor="amd", arch="gfx908", sm_count=120)
BASE = {
    "duration": 200_000.0, "launch.grid_size": 4096.0, "launch.block_size": 256.0, "launch.shared_static": 0.0,
    "launch.registers_per_thread": 32.0, "amd.arch_vgpr": 32.0, "amd.accum_vgpr": 0.0, "amd.sgpr": 32.0,
    "amd.scratch_per_work_item": 0.0, "amd.wave_size": 64.0, "amd.waves": 16384.0, "warp.active_threads": 64.0,
    "amd.valu_util_pct": 20.0, "pipe.tensor_pct": 0.0, "flop.fp32": 1e6, "flop.fp64": 0.0,
    "dram.throughput": 1e12, "dram.bytes_read": 1e8, "dram.bytes_write": 1e8, "dram.bytes": 2e8,
    "shared.bank_conflicts": 0.0,
}  # fmt: skip


def synthetic(device: Device = MI300X, raw: dict[str, float] | None = None, **changes: float | None) -> Profile:
    """A one-kernel synthetic AMD profile with these canonical metrics (None removes one)."""
    metrics = {**BASE, **{k.replace("__", "."): v for k, v in changes.items()}}
    rows = [(0, name, value, UNITS.get(name, ""), "canonical") for name, value in metrics.items() if value is not None]
    quiet = {"SQ_WAIT_ANY": 100.0, "SQ_WAVE_CYCLES": 1000.0}  # waves rarely wait: no latency finding
    rows += [(0, name, value, "", "raw") for name, value in {**quiet, **(raw or {})}.items()]
    kernel = Kernel(id=0, name="synthetic_kernel", duration_ns=metrics["duration"], grid=(4096, 1, 1), block=(256, 1, 1))
    return Profile("synthetic", "synthetic", device, [kernel], pd.DataFrame(rows, columns=METRIC_COLUMNS))


def findings(p: Profile) -> dict:
    diagnosis = diagnose_kernel(p, p.kernels[0])
    doc = {"kernels": [{"id": 0, "name": "synthetic_kernel", "diagnosis": [f.as_dict() for f in diagnosis.findings]}]}
    assert check_grounded(p, doc) >= 0
    return {f.rule: f for f in diagnosis.findings} | {"not_assessed": {n.rule: n for n in diagnosis.not_assessed}}


def test_synthetic_baseline_is_quiet():
    found = findings(synthetic())
    assert set(found) == {"not_assessed"} and found["not_assessed"] == {}


def test_synthetic_vgpr_limited_occupancy():
    # 128 arch VGPRs + 64 AGPRs = 192 per wave of the 512-entry file: 2 waves per SIMD, 8 per CU of 32
    found = findings(synthetic(amd__arch_vgpr=128.0, amd__accum_vgpr=64.0, launch__registers_per_thread=192.0))
    f = found["amd-occupancy-registers"]
    assert f.category == "occupancy_registers"
    ev = {e.metric: e for e in f.evidence}
    assert ev["occupancy.theoretical_warps"].value == 8 and ev["occupancy.theoretical_warps"].compared_with == 32
    assert ev["amd.arch_vgpr"].compared_with == 168  # 512 // 3 rounded down to the granule of 8
    # impact = min(1 - 8/32, 1 - busiest/100) with the busiest unit VALU at 20%
    assert f.impact == pytest.approx(0.75) and f.confidence == 0.6
    assert "amdgpu_waves_per_eu" in f.suggestions[0] and "__launch_bounds__(256, N)" in f.suggestions[0]


def test_synthetic_vgpr_limit_on_gfx908_uses_its_separate_files():
    # gfx908: 256 arch VGPRs per lane, 10 wave slots: 128 VGPRs give 2 waves per SIMD, 8 per CU of 40
    found = findings(synthetic(device=MI100, amd__arch_vgpr=128.0, launch__registers_per_thread=128.0, dram__throughput=None))
    ev = {e.metric: e for e in found["amd-occupancy-registers"].evidence}
    assert ev["occupancy.theoretical_warps"].value == 8 and ev["occupancy.theoretical_warps"].compared_with == 40
    assert ev["amd.arch_vgpr"].compared_with == 84  # 256 // 3 = 85, granule 4


def test_synthetic_occupancy_without_a_known_arch_assumes_the_marked_isa():
    # no arch (rocprof v1 files name none), or one whose ISA file holds no occupancy facts (gfx950):
    # the ISA file marked assumed_when_unnamed (gfx942), said so, at lower confidence
    for arch in (None, "gfx950"):
        device = Device(name="AMD GPU", vendor="amd", arch=arch)
        f = findings(synthetic(device=device, amd__arch_vgpr=128.0, amd__accum_vgpr=64.0,
                               launch__registers_per_thread=192.0))["amd-occupancy-registers"]
        ev = {e.metric: e for e in f.evidence}
        assert ev["occupancy.theoretical_warps"].value == 8 and ev["occupancy.theoretical_warps"].compared_with == 32
        assert ev["amd.arch_vgpr"].compared_with == 168
        assert f.confidence == 0.5 and "the gfx942 limits are assumed" in f.explanation


def test_an_isa_file_added_in_a_folder_sizes_its_archs_occupancy(tmp_path, monkeypatch):
    """Adding an arch is adding its ISA file: one with gfx908's facts under a new id, in a folder
    named by $PERFMODEL_HARDWARE_PATH, gives a profile of that arch gfx908's limits, as known."""
    from perfmodel.hardware import BUILTIN_DIR, HARDWARE_PATH_ENV

    (tmp_path / "isa").mkdir()
    text = (BUILTIN_DIR / "isa" / "gfx908.toml").read_text().replace('id = "gfx908"', 'id = "gfx9zz"')
    (tmp_path / "isa" / "gfx9zz.toml").write_text(text)
    monkeypatch.setenv(HARDWARE_PATH_ENV, str(tmp_path))
    device = Device(name="AMD GPU", vendor="amd", arch="gfx9zz")
    f = findings(synthetic(device=device, amd__arch_vgpr=128.0, launch__registers_per_thread=128.0,
                           dram__throughput=None))["amd-occupancy-registers"]
    ev = {e.metric: e for e in f.evidence}
    assert ev["occupancy.theoretical_warps"].value == 8 and ev["occupancy.theoretical_warps"].compared_with == 40
    assert ev["amd.arch_vgpr"].compared_with == 84 and f.confidence == 0.6 and "assumed" not in f.explanation


def test_synthetic_lds_limited_occupancy():
    found = findings(synthetic(launch__shared_static=40_000.0))
    f = found["amd-occupancy-lds"]
    ev = {e.metric: e for e in f.evidence}
    assert f.category == "occupancy_shared_memory"
    assert ev["occupancy.theoretical_warps"].value == 4 and ev["launch.shared_static"].compared_with == 32768
    assert "amd-occupancy-registers" not in found


def test_synthetic_occupancy_without_utilization_is_an_upper_bound():
    found = findings(synthetic(amd__arch_vgpr=256.0, amd__valu_util_pct=None, pipe__tensor_pct=None, dram__throughput=None,
                               launch__registers_per_thread=256.0))
    f = found["amd-occupancy-registers"]
    assert f.confidence == 0.3 and "upper bound" in f.explanation


def test_synthetic_scratch_is_a_spill_finding():
    f = findings(synthetic(amd__scratch_per_work_item=256.0, launch__registers_per_thread=128.0))["amd-scratch"]
    assert f.category == "register_spills"
    assert f.impact == pytest.approx(0.5 * 64 / (64 + 128))


def test_synthetic_lds_bank_conflicts():
    found = findings(synthetic(shared__bank_conflicts=1e6, shared__bank_conflicts_per_access=0.5))
    f = found["amd-lds-bank-conflicts"]
    assert f.category == "shared_bank_conflicts" and f.impact == pytest.approx(0.5 / 1.5)
    assert "amd-lds-bank-conflicts" not in findings(synthetic(shared__bank_conflicts=1e6, shared__bank_conflicts_per_access=0.1))
    # conflicts counted but no LDS access count: not assessed, with the counters to collect
    missing = findings(synthetic(shared__bank_conflicts=1e6))["not_assessed"]["amd-lds-bank-conflicts"]
    assert "SQ_LDS_IDX_ACTIVE" in missing.collect


def test_synthetic_valu_fp64_bound_points_at_mfma():
    found = findings(synthetic(raw={"SQ_INSTS_MFMA": 0.0}, amd__valu_util_pct=85.0, flop__fp64=1e10, flop__fp32=0.0))
    f = found["amd-valu-fp64"]
    assert f.category == "fp64_compute" and f.confidence == 0.9 and f.impact == pytest.approx(0.85)
    assert "amd-valu-fp32" not in found and "__builtin_amdgcn_mfma" in f.suggestions[0]


def test_synthetic_valu_fp32_and_int():
    assert "amd-valu-fp32" in findings(synthetic(amd__valu_util_pct=70.0))
    assert "amd-valu-int" in findings(synthetic(amd__valu_util_pct=70.0, flop__fp32=0.0))


def test_synthetic_mfma_bound():
    f = findings(synthetic(pipe__tensor_pct=75.0))["amd-mfma"]
    assert f.category == "tensor_compute" and f.impact == pytest.approx(0.75)


def test_synthetic_hbm_bound_on_mi300x_mentions_the_infinity_cache():
    found = findings(synthetic(dram__throughput=4.5e12))
    f = found["amd-hbm-bandwidth"]
    assert f.category == "dram_bandwidth" and f.confidence == 0.9
    assert f.impact == pytest.approx(4.5e12 / gpu("mi300x").value("dram_bandwidth_bytes_per_s"))
    assert "Infinity Cache" in f.explanation  # 200 MB of traffic < 256 MB MALL
    assert "amd-hbm-bandwidth" not in findings(synthetic(dram__throughput=3.0e12))


def test_synthetic_hbm_unknown_gpu_is_not_assessed():
    anonymous = Device(name="AMD GPU (gpu-id 3)", vendor="amd")
    found = findings(synthetic(device=anonymous, dram__throughput=4.5e12))
    assert found["not_assessed"]["amd-hbm-bandwidth"].missing == [DEVICE_FACT]


def test_synthetic_small_grid_per_xcd():
    # 152 workgroups on 8 XCDs of 38 CUs: 19 per XCD, half the CUs idle
    f = findings(synthetic(launch__grid_size=152.0))["amd-small-grid"]
    assert f.category == "small_grid" and f.impact == pytest.approx(0.5)
    ev = {e.metric: e for e in f.evidence}
    assert ev["hardware.sm_count"].value == 304 and ev["hardware.xcd_count"].compared_with == 38
    assert "amd-small-grid" not in findings(synthetic(launch__grid_size=152.0, duration=5_000.0))
    assert "amd-small-grid" not in findings(synthetic(launch__grid_size=304.0))


def test_synthetic_divergence_and_its_scope():
    f = findings(synthetic(warp__active_threads=32.0))["amd-wave-divergence"]
    assert f.category == "warp_divergence" and f.impact == pytest.approx(0.5 * 0.2) and f.confidence == 0.8


def test_synthetic_memory_latency_needs_waits_and_idle_units():
    raw = {"SQ_WAIT_ANY": 900.0, "SQ_WAVE_CYCLES": 1000.0}
    f = findings(synthetic(raw=raw))["amd-memory-latency"]
    # impact = 0.9 x (1 - busiest/100): the VALU at 20% is busier than HBM (1 of 5.3 TB/s)
    assert f.impact == pytest.approx(0.9 * (1 - 0.20)) and f.confidence == 0.7
    assert "amd-memory-latency" not in findings(synthetic(raw=raw, amd__valu_util_pct=70.0))
    assert "amd-memory-latency" not in findings(synthetic(raw={"SQ_WAIT_ANY": 300.0, "SQ_WAVE_CYCLES": 1000.0}))


def test_amd_rules_stay_silent_on_an_nvidia_device():
    nvidia = Device(name="NVIDIA H100 80GB HBM3", vendor="nvidia", arch="sm_90", sm_count=132)
    p = synthetic(device=nvidia, amd__valu_util_pct=90.0, pipe__tensor_pct=90.0)
    d = diagnose_kernel(p, p.kernels[0])
    assert not any(f.rule.startswith("amd-") for f in d.findings)
    assert not any(n.rule.startswith("amd-") for n in d.not_assessed)


def test_mi350_with_its_real_sysinfo_names_the_missing_peak(tmp_path):
    # rocprof-compute 3.x sysinfo (MI350, gfx950, 128 CUs) has no hbm_bw and there is no mi350 hardware file
    folder = tmp_path / "workload"
    folder.mkdir()
    shutil.copy(ROCPROF / "mi350_v3backend_pmc_perf.csv", folder / "pmc_perf.csv")
    shutil.copy(ROCPROF / "mi350_sysinfo.csv", folder / "sysinfo.csv")
    p = load_profile(folder)
    doc = explain(p)
    entry = doc["kernels"][0]
    assert rules_of(entry) == ["amd-memory-latency"]
    hbm = next(n for n in entry["not_assessed"] if n["rule"] == "amd-hbm-bandwidth")
    assert hbm["missing"] == ["the peak HBM bandwidth of AMD Instinct MI350 (no hardware file; no hbm_bw in sysinfo.csv)"]
    assert hbm["collect"] == ""  # no profiler run provides it
    text = to_text(doc)
    assert "Collect with" not in text and "rocprof-compute profile" not in text
    assert check_grounded(p, doc) > 0
