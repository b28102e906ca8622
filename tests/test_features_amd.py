"""Model inputs from rocprof counters: real AMD profiles (tests/data/rocprof) give work counts in
the model's units, predict on AMD and NVIDIA targets, never read time, and trace-only files say
why they are not predicted."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from keet import load_profile
from perfmodel.cli import cli
from perfmodel.features import amd_work, features, raw_metrics
from perfmodel.hardware import gpu
from perfmodel.model import predict, tensor_flops_per_instruction
from perfmodel.retarget import source_gpu

DATA = Path(__file__).resolve().parent / "data" / "rocprof"
MIB = 2**20
# Time-like metric families: those of tests/test_features.py plus rocprof's cycle, busy, level,
# stall, wait and timestamp counters and the rocprof-compute derived rates.
TIME_LIKE = re.compile(
    r"duration|cycles|clock|per_second|throughput|_pct|pct_of_peak|\.pct$|stall|issue\.|ipc|per_cycle|latency|hz|frequency"
    r"|BUSY|GRBM_|LEVEL|SQ_WAIT|ACCUM|ACTIVE|Timestamp|DurationNs|CREDIT|FULL|sclk", re.IGNORECASE)
COUNTER_TABLES = ["mi100_v1backend_pmc_perf.csv", "mi200_v1backend_pmc_perf.csv", "mi300x_v2backend_pmc_perf.csv",
                  "mi300x_rocpd_long_pmc_perf.csv", "mi300a_openmp_fortran_pmc_perf.csv", "mi350_v3backend_pmc_perf.csv",
                  "mi250x_fd_kernel1_counters.csv"]
TRACE_ONLY = ["mi300a_rocm7_kernel_trace.csv", "mi250x_fd_results.csv", "mi300x_rocprofv2_kernel_timestamps.csv",
              "docs_rocm62_kernel_trace.csv", "mi210_hsa_trace_results.csv", "mi210_hip_trace_results.db"]


def load(name: str):
    return load_profile(DATA / name)


def raw(profile, kernel, name):
    return profile.value(kernel, name, origin="raw")


@pytest.fixture(scope="module")
def mi300x():
    return load("mi300x_v2backend_pmc_perf.csv")


def test_vecCopy_dram_bytes_are_what_the_counters_say(mi300x):
    k = mi300x.kernels[0]
    f = features(mi300x, k)
    # gfx942: 64 B read requests, 32 B ones, and TCC_BUBBLE (128 B reads) counted as an extra 64 B.
    reads = ((raw(mi300x, k, "TCC_EA0_RDREQ_sum") - raw(mi300x, k, "TCC_EA0_RDREQ_32B_sum")) * 64
             + raw(mi300x, k, "TCC_EA0_RDREQ_32B_sum") * 32 + raw(mi300x, k, "TCC_BUBBLE_sum") * 64)
    assert f.counts["dram_bytes_read"] == pytest.approx(reads)
    assert f.counts["dram_bytes_read"] == pytest.approx(8 * MIB, rel=0.01)  # vecCopy of 2^20 doubles
    assert f.counts["dram_bytes_write"] == 8 * MIB == raw(mi300x, k, "TCC_EA0_WRREQ_64B_sum") * 64


def test_l2_and_l1_traffic_in_the_models_units(mi300x):
    k = mi300x.kernels[0]
    f = features(mi300x, k)
    assert f.source_arch == "gfx942" and f.source_warp_size == 64
    assert f.counts["l2_sectors_read"] == raw(mi300x, k, "TCC_READ_sum") * 128 / 32  # 128 B requests, 32 B sectors
    assert f.counts["l2_sectors_write"] == raw(mi300x, k, "TCC_WRITE_sum") * 64 / 32 == 8 * MIB / 32
    assert f.counts["l1_to_l2_read_bytes"] == raw(mi300x, k, "TCP_TCC_READ_REQ_sum") * 128 == 8 * MIB
    assert f.counts["global_load_sectors"] + f.counts["global_store_sectors"] == raw(mi300x, k, "TCP_TOTAL_CACHE_ACCESSES_sum")
    assert f.counts["global_load_sectors"] * 32 == 8 * MIB


@pytest.mark.parametrize("name, arch, l1_read_bytes", [("mi100_v1backend_pmc_perf.csv", "gfx908", 64),
                                                        ("mi200_v1backend_pmc_perf.csv", "gfx90a", 64),
                                                        ("mi300x_rocpd_long_pmc_perf.csv", "gfx942", 128),
                                                        ("mi350_v3backend_pmc_perf.csv", "gfx950", 128)])
def test_arch_from_counters_and_request_sizes(name, arch, l1_read_bytes):
    profile = load(name)
    k = profile.kernels[0]
    f = features(profile, k)
    assert f.source_arch == arch
    # Every vecCopy reads 8 MiB through the vector L1: request count x the arch's line size.
    assert raw(profile, k, "TCP_TCC_READ_REQ_sum") * l1_read_bytes == 8 * MIB == f.counts["l1_to_l2_read_bytes"]


def test_wavefront_instructions_per_pipe(mi300x):
    k = mi300x.kernels[0]
    f = features(mi300x, k)
    pipes = f.warp_instructions_by_pipe
    assert f.counts["instructions"] == raw(mi300x, k, "SQ_INSTS") == 327680
    assert pipes["lsu"] == raw(mi300x, k, "SQ_INSTS_VMEM") + raw(mi300x, k, "SQ_INSTS_LDS")
    assert pipes["uniform"] == raw(mi300x, k, "SQ_INSTS_SALU") + raw(mi300x, k, "SQ_INSTS_SMEM")
    assert pipes["branch"] == raw(mi300x, k, "SQ_INSTS_BRANCH")
    assert pipes["alu"] == raw(mi300x, k, "SQ_INSTS_VALU")  # vecCopy's VALU work is all integer/move
    assert f.counts["global_load_requests"] == raw(mi300x, k, "SQ_INSTS_VMEM_RD") == 16384 == raw(mi300x, k, "SQ_WAVES")
    assert f.barriers is None and f.tensor_instructions == {}


def test_fp64_flops_of_a_real_application():
    profile = load("mi300a_openmp_fortran_pmc_perf.csv")
    k = profile.kernel("QQmain_l41")
    f = features(profile, k)
    by_hand = 64 * (sum(raw(profile, k, f"SQ_INSTS_VALU_{op}_F64") for op in ("ADD", "MUL", "TRANS"))
                    + 2 * raw(profile, k, "SQ_INSTS_VALU_FMA_F64"))
    assert f.flops["fp64"] == by_hand == profile.value(k, "flop.fp64") > 1e9
    assert f.warp_instructions_by_pipe["fp64"] == sum(raw(profile, k, f"SQ_INSTS_VALU_{op}_F64") for op in ("ADD", "MUL", "FMA"))


def test_mfma_mops_become_512_flop_tensor_work():
    _counts, pipes, flops, tensor = amd_work({"SQ_INSTS_VALU_MFMA_MOPS_F16": (10.0, ""), "SQ_INSTS_VALU_MFMA_MOPS_F64": (3.0, ""),
                                             "SQ_INSTS_MFMA": (7.0, ""), "SQ_INSTS_VALU": (9.0, "")}, "gfx942")
    assert flops == {"mfma_f16": 5120.0, "mfma_f64": 1536.0}
    assert pipes["tensor"] == 7.0 and pipes["other"] == 2.0  # no VALU type breakdown: the rest on no pipe
    assert {op: n * tensor_flops_per_instruction(op) for op, n in tensor.items()} == {"MFMA_MOPS.F16.16x8x8": 5120.0}


def test_leak_amd_time_like_counters_do_not_move_features():
    for name in ("mi300x_v2backend_pmc_perf.csv", "mi300a_openmp_fortran_pmc_perf.csv"):
        profile = load(name)
        before = [features(profile, k).as_dict() for k in profile.kernels]
        perturbed = copy.copy(profile)
        table = profile.metrics.copy()
        time_like = table["metric"].str.contains(TIME_LIKE) | table["unit"].isin(["ns", "hz", "cycle", "%"])
        assert time_like.sum() > 100
        assert {"GRBM_GUI_ACTIVE", "SQ_BUSY_CYCLES", "TCC_EA0_RDREQ_LEVEL_sum", "duration"} <= set(table.loc[time_like, "metric"])
        table.loc[time_like, "value"] = table.loc[time_like, "value"] * 7.0 + 3.0
        perturbed.metrics = table
        perturbed._by_kernel = None
        assert [features(perturbed, k).as_dict() for k in perturbed.kernels] == before


def test_mi300a_prediction_of_vecCopy_is_dram_bound_at_its_bandwidth(mi300x):
    mi300a = gpu("mi300a")
    p = predict(mi300a, features(mi300x, mi300x.kernels[0]))
    assert p.bound == "dram"
    moved = p.inputs["dram_bytes"]
    assert moved == pytest.approx(16 * MIB, rel=0.01)
    at_peak = moved / mi300a.require("dram_bandwidth_bytes_per_s") * 1e9
    assert at_peak <= p.predicted_ns <= 3 * at_peak
    # The MI300A's own trace of the vcopy workload (same 2^20 doubles) took 5.5-6.4 us.
    assert 5488 / 3 < p.predicted_ns < 3 * 6436


def test_retargeting_converts_wavefronts_for_nvidia_and_keeps_them_for_amd(mi300x):
    f = features(mi300x, mi300x.kernels[0])
    assert source_gpu(f).vendor == "amd" and source_gpu(f).require("warp_size") == 64
    h100 = predict(gpu("h100"), f)
    assert h100.inputs["instructions"] == 2 * f.counts["instructions"]  # 256 threads: 4 wavefronts -> 8 warps
    assert any("64-lane wavefront instructions converted to 32-thread warps: x2" in n for n in h100.notes)
    assert any("VGPRs per lane" in n for n in h100.notes)
    mi250x = predict(gpu("mi250x"), f)
    assert mi250x.inputs["instructions"] == f.counts["instructions"]
    assert any("wavefront counts kept" in n for n in mi250x.notes)


def test_named_amd_device_uses_its_hardware_file(mi300x):
    named = replace(features(mi300x, mi300x.kernels[0]), source_gpu="AMD Instinct MI300X")
    assert source_gpu(named).id == "mi300x"
    notes = predict(gpu("mi300x"), named).notes  # same GPU: counts used as measured, nothing retargeted
    assert not any("wavefront" in n or "re-estimated" in n for n in notes)


def test_counter_file_without_instructions_predicts_from_dram():
    profile = load("mi250x_fd_kernel1_counters.csv")
    k = profile.kernel("laplacian_kernel")
    f = features(profile, k)
    assert f.counts["dram_bytes_read"] == pytest.approx(raw(profile, k, "FETCH_SIZE") * 1024)
    assert f.counts["dram_bytes_write"] == pytest.approx(raw(profile, k, "WRITE_SIZE") * 1024)
    assert "instructions" not in f.counts and f.warp_instructions_by_pipe == {}
    p = predict(gpu("mi250x"), f)
    assert p.bound == "dram"
    # mi250x_fd_results.csv timed the same laplacian_kernel launches on the MI250X at 2.61 ms.
    assert 2.61e6 / 2 < p.predicted_ns < 2.61e6 * 2


@pytest.mark.parametrize("name", TRACE_ONLY)
def test_trace_only_files_say_why_they_are_not_predicted(name):
    profile = load(name)
    for k in profile.kernels:
        with pytest.raises(ValueError, match=r"no work counters, only the kernel trace \(collect them with rocprofv3 --pmc"):
            features(profile, k)


def test_counters_without_work_say_which_they_have():
    profile = load("docs_rocm7_counter_collection.csv")
    with pytest.raises(ValueError, match=r"counters \(SQ_WAVES\) include none of the work the model needs"):
        features(profile, profile.kernels[0])


@pytest.mark.parametrize("name", COUNTER_TABLES)
@pytest.mark.parametrize("target", ["mi300a", "h100", "mi250x"])
def test_perfmodel_predict_on_amd_profiles(name, target):
    result = CliRunner().invoke(cli, ["predict", str(DATA / name), "--gpu", target, "--format", "json"])
    assert result.exit_code == 0, result.output
    kernels = json.loads(result.output)["kernels"]
    assert kernels and all(k["predicted_ns"] and k["predicted_ns"] > 0 for k in kernels)
    assert all(k["bound"] in ("dram", "alu", "latency", "launch", "l2", "issue") for k in kernels)


def test_perfmodel_predict_trace_only_text():
    result = CliRunner().invoke(cli, ["predict", str(DATA / "mi300a_rocm7_kernel_trace.csv"), "--gpu", "mi300a"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # the text is wrapped to the terminal's width
    assert "vecCopy(double*, double*, double*, int, int): not predicted: the profile has no work counters" in text


def test_raw_metrics_name_the_amd_counters():
    names = raw_metrics()
    assert {"TCC_READ_sum", "SQ_INSTS_VALU", "TCC_EA0_RDREQ_sum", "FETCH_SIZE", "SQ_INSTS"} <= names


def test_workload_folder_with_sysinfo_names_the_source(tmp_path):
    """A rocprof-compute workload folder: sysinfo.csv names the device (MI200, gfx90a, 8 MiB L2),
    which has no hardware file; its L2 size still feeds the capacity model."""
    folder = tmp_path / "MI200"
    folder.mkdir()
    (folder / "pmc_perf.csv").write_bytes((DATA / "mi200_v1backend_pmc_perf.csv").read_bytes())
    (folder / "sysinfo.csv").write_bytes((DATA / "mi200_sysinfo.csv").read_bytes())
    profile = load_profile(folder)
    f = features(profile, profile.kernels[0])
    assert (f.source_gpu, f.source_arch, f.l2_bytes_of_source_gpu) == ("AMD Instinct MI200", "gfx90a", 8 * MIB)
    p = predict(gpu("h100"), f)
    assert p.bound == "dram" and any("DRAM reads re-estimated" in n for n in p.notes)
