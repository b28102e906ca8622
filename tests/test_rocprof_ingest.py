"""rocprof readers on real files: v1, v2, v3 CSV, v1 SQLite and rocprof-compute workloads.

Every value asserted here was read from the file itself (see tests/data/rocprof/SOURCES.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from keet import Profile, load_profile
from keet.ingest import detect

DATA = Path(__file__).parent / "data" / "rocprof"
REAL_FILES = sorted(p.name for p in DATA.iterdir() if p.name != "SOURCES.md")


@pytest.fixture(scope="module")
def fd_results() -> Profile:
    return load_profile(DATA / "mi250x_fd_results.csv")


@pytest.mark.parametrize("name", REAL_FILES)
def test_every_real_file_loads(name):
    profile = load_profile(DATA / name)
    assert profile.device.vendor == "amd"
    if "sysinfo" in name or "roofline" in name:
        assert profile.kernels == []  # a device description, no kernel
    else:
        assert profile.kernels and all(k.name and k.invocations >= 1 for k in profile.kernels)


@pytest.mark.parametrize(
    "name, reader, format_id",
    [
        ("mi250x_fd_results.csv", "rocprof-csv", "rocprof-v1-csv"),
        ("mi250x_fd_kernel1_counters.csv", "rocprof-csv", "rocprof-v1-csv"),
        ("mi250x_fd_results.stats.csv", "rocprof-csv", "rocprof-v1-stats"),
        ("mi210_hip_trace_results.db", "rocprof-db", "rocprof-v1-db"),
        ("mi300x_rocprofv2_kernel_timestamps.csv", "rocprof-csv", "rocprofv2-csv"),
        ("docs_rocm62_kernel_trace.csv", "rocprof-csv", "rocprofv3-kernel-trace"),
        ("mi300a_rocm7_kernel_trace.csv", "rocprof-csv", "rocprofv3-kernel-trace"),
        ("docs_rocm7_counter_collection.csv", "rocprof-csv", "rocprofv3-counter-collection"),
        ("mi100_v1backend_pmc_perf.csv", "rocprof-compute", "rocprof-compute-pmc-perf"),
        ("mi300x_rocpd_long_pmc_perf.csv", "rocprof-compute", "rocprof-compute-pmc-perf-long"),
        ("mi300a_openmp_fortran_pmc_kernel_top.csv", "rocprof-compute", "rocprof-compute-kernel-top"),
        ("mi200_sysinfo.csv", "rocprof-compute", "rocprof-compute-sysinfo"),
        ("mi200_roofline.csv", "rocprof-compute", "rocprof-compute-roofline"),
    ],
)
def test_format_is_detected_from_content(name, reader, format_id, tmp_path):
    # Renamed to a neutral name: the content decides, never the file name.
    copy = tmp_path / "profile.dat"
    shutil.copyfile(DATA / name, copy)
    assert detect(copy).id == reader
    assert load_profile(copy).format == format_id


# ---------------------------------------------------------------- rocprof v1 results.csv (--stats, timestamps)


def test_v1_kernels_are_aggregated_by_name_with_dispatch_counts(fd_results):
    assert [k.function_name for k in fd_results.kernels] == [
        "test_function_kernel", "laplacian_kernel", "__amd_rocclr_fillBufferAligned", "check_kernel"]
    assert [k.invocations for k in fd_results.kernels] == [1, 1001, 1, 1]
    laplacian = fd_results.kernel("laplacian_kernel")
    # The long template name with commas survives whole.
    assert laplacian.name == ("void laplacian_kernel<double>(double*, double const*, int, int, int, double, double, double, "
                              "double) [clone .kd]")
    assert laplacian.attributes["dispatches"] == 1001
    assert laplacian.attributes["first_dispatch"] == 1 and laplacian.attributes["last_dispatch"] == 1003


def test_v1_durations_match_the_stats_file(fd_results):
    laplacian = fd_results.kernel("laplacian_kernel")
    stats = load_profile(DATA / "mi250x_fd_results.stats.csv").kernel("laplacian_kernel")
    # results.stats.csv: 1001 calls, 2608618986 ns in total, 2606012 ns on average.
    assert laplacian.attributes["duration_ns_total"] == 2608618986.0 == stats.attributes["duration_ns_total"]
    assert laplacian.duration_ns == pytest.approx(2608618986 / 1001)
    assert stats.invocations == 1001 and stats.duration_ns == 2606012.0
    assert laplacian.attributes["duration_ns_min"] == 2593292.0 and laplacian.attributes["duration_ns_max"] == 2620970.0
    assert fd_results.kernel("test_function_kernel").duration_ns == 1130883.0
    assert fd_results.total_duration_ns() == pytest.approx(2608618986 + 1130883 + 5440 + 1032003)


def test_v1_grid_in_workgroups_and_registers(fd_results):
    laplacian = fd_results.kernel("laplacian_kernel")
    # grd = 134217728 work-items, wgr = 256: 524288 workgroups of 256 work-items.
    assert laplacian.grid == (524288, 1, 1) and laplacian.block == (256, 1, 1)
    assert fd_results.value(laplacian, "Grid_Size", origin="raw") == 134217728.0
    assert fd_results.value(laplacian, "launch.threads") == 134217728.0
    assert fd_results.value(laplacian, "launch.grid_size") == 524288.0
    assert laplacian.registers_per_thread == 24  # arch_vgpr 24 + accum_vgpr 0
    fill = fd_results.kernel("__amd_rocclr_fillBufferAligned")
    assert fill.registers_per_thread == 16 and fill.attributes["accum_vgpr"] == 4  # 12 + 4 AGPRs
    assert laplacian.attributes["sgpr"] == 32 and laplacian.attributes["wave_size"] == 64
    assert laplacian.static_shared_bytes == 0 and laplacian.attributes["scratch_bytes_per_work_item"] == 0
    assert fd_results.value(laplacian, "duration") == pytest.approx(2606012.973, rel=1e-9)


def test_v1_device_is_named_by_gpu_id_only(fd_results):
    assert fd_results.device.name == "AMD GPU (gpu-id 8)" and fd_results.device.arch is None
    assert fd_results.kernels[0].device_id == 8


def test_v1_counter_mode_without_timestamps():
    profile = load_profile(DATA / "mi250x_fd_kernel1_counters.csv")
    laplacian = profile.kernel("laplacian_kernel")
    assert laplacian.name == "laplacian_kernel"  # --basenames on
    assert laplacian.invocations == 1001 and laplacian.duration_ns is None
    raw = profile.values(laplacian, origin="raw")
    assert raw["TCP_TOTAL_CACHE_ACCESSES_sum"] == (265822200.0, "")
    assert raw["FETCH_SIZE"][1] == "KiB"
    first = profile.kernel("test_function_kernel")
    assert profile.value(first, "WRITE_SIZE", origin="raw") == 1044480.0
    # WRITE_SIZE is in KiB: 1044480 KiB = 1069547520 bytes.
    assert profile.value(first, "dram.bytes_write") == 1044480.0 * 1024
    assert profile.value(first, "dram.bytes_read") == pytest.approx(6.8125 * 1024)


def test_v1_single_dispatch_hsa_trace():
    profile = load_profile(DATA / "mi210_hsa_trace_results.csv")
    (kernel,) = profile.kernels
    assert kernel.name == "elementwise_kernel" and kernel.duration_ns == 7840.0
    assert kernel.grid == (1, 1, 1) and kernel.block == (256, 1, 1)
    assert kernel.registers_per_thread == 32 and kernel.device_id == 2  # 28 VGPRs + 4 AGPRs


def test_v1_sqlite_hip_trace_kernels_from_ops_table():
    profile = load_profile(DATA / "mi210_hip_trace_results.db")
    (kernel,) = profile.kernels  # OPS holds one kernel; the 6 copies are in COPY
    assert kernel.name == "elementwise_kernel"
    assert kernel.duration_ns == 5280.0 and kernel.device_id == 2


# ---------------------------------------------------------------- rocprofv2 and rocprofv3


def test_rocprofv2_kernel_table():
    profile = load_profile(DATA / "mi300x_rocprofv2_kernel_timestamps.csv")
    (kernel,) = profile.kernels
    assert kernel.function_name == "vecCopy" and kernel.invocations == 3
    # End - Start of dispatches 1..3: 16160, 13680, 14160 ns.
    assert kernel.attributes["duration_ns_total"] == 44000.0
    assert kernel.grid == (4096, 1, 1) and kernel.block == (256, 1, 1)
    assert kernel.registers_per_thread == 8 and kernel.attributes["sgpr"] == 16
    assert kernel.device_id == 60633  # a KFD gpu id, as the file says


def test_rocprofv3_rocm62_kernel_trace_3d_grid():
    profile = load_profile(DATA / "docs_rocm62_kernel_trace.csv")
    names = [k.function_name for k in profile.kernels]
    assert names == ["addition_kernel", "subtract_kernel", "multiply_kernel"]
    addition = profile.kernels[0]
    assert addition.invocations == 4 and addition.attributes["duration_ns_total"] == 413506.0
    # Grid_Size_X/Y/Z = 1024 x 1024 x 1 work-items, workgroup 64 x 1 x 1: 16 x 1024 x 1 workgroups.
    assert addition.grid == (16, 1024, 1) and addition.block == (64, 1, 1)
    assert addition.registers_per_thread is None  # the 6.2 layout has no register columns
    assert profile.kernel("multiply_kernel").duration_ns == 8819330200369359 - 8819330200229796


def test_rocprofv3_rocm7_kernel_trace():
    profile = load_profile(DATA / "mi300a_rocm7_kernel_trace.csv")
    (kernel,) = profile.kernels
    assert kernel.name == "vecCopy(double*, double*, double*, int, int)"
    assert kernel.invocations == 3 and kernel.attributes["duration_ns_total"] == 8292 + 5528 + 5488
    assert kernel.device_id == 2  # "Agent 2"
    assert kernel.grid == (4096, 1, 1) and kernel.block == (256, 1, 1)
    assert kernel.registers_per_thread == 8 and kernel.attributes["sgpr"] == 16


def test_rocprofv3_counter_collection_long_format():
    profile = load_profile(DATA / "docs_rocm7_counter_collection.csv")
    assert [k.function_name for k in profile.kernels] == ["addition_kernel", "subtract_kernel", "multiply_kernel", "divide_kernel"]
    for kernel in profile.kernels:
        assert profile.value(kernel, "SQ_WAVES", origin="raw") == 16384.0
        assert profile.value(kernel, "amd.waves") == 16384.0
    divide = profile.kernel("divide_kernel")
    assert divide.attributes["arch_vgpr"] == 12 and divide.duration_ns == 3200098838927550 - 3200098838879399
    assert divide.grid == (16384, 1, 1) and divide.block == (64, 1, 1)


def test_rocprofv3_sibling_agent_info_names_the_device(tmp_path):
    (tmp_path / "1234_kernel_trace.csv").write_bytes((DATA / "mi300a_rocm7_kernel_trace.csv").read_bytes())
    (tmp_path / "1234_agent_info.csv").write_text(
        '"Node_Id","Logical_Node_Id","Agent_Type","Cpu_Cores_Count","Simd_Count","Max_Waves_Per_Simd","Lds_Size_In_Kb",'
        '"Wave_Front_Size","Num_Xcc","Cu_Count","Simd_Per_Cu","Max_Waves_Per_Cu","Max_Engine_Clk_Fcompute","Name","Product_Name"\n'
        '0,0,"CPU",24,0,0,0,0,0,0,0,0,3700,"AMD EPYC","AMD EPYC"\n'
        '1,1,"CPU",24,0,0,0,0,0,0,0,0,3700,"AMD EPYC","AMD EPYC"\n'
        '2,2,"GPU",0,912,8,64,64,6,228,4,32,2100,"gfx942","AMD Instinct MI300A"\n'
    )
    profile = load_profile(tmp_path / "1234_kernel_trace.csv")
    assert profile.device.name == "AMD Instinct MI300A" and profile.device.arch == "gfx942"
    assert profile.device.sm_count == 228 and profile.device.max_sm_clock_hz == 2.1e9
    assert profile.value(profile.kernels[0], "launch.sm_count") == 228.0
    alone = load_profile(tmp_path / "1234_agent_info.csv")
    assert alone.kernels == [] and alone.device.name == "AMD Instinct MI300A"


# ---------------------------------------------------------------- rocprof-compute workloads


def test_pmc_perf_v1_backend_mi200():
    profile = load_profile(DATA / "mi200_v1backend_pmc_perf.csv")
    (kernel,) = profile.kernels
    raw = profile.values(kernel, origin="raw")
    assert kernel.function_name == "vecCopy" and kernel.duration_ns == 20160.0
    assert raw["SQ_WAVES"] == (16384.0, "") and raw["GRBM_GUI_ACTIVE"] == (28399.0, "cycle")
    # Per-channel columns stay raw, the file's own _sum is kept, repeats of fixed columns go.
    assert "TCC_ATOMIC[0]" in raw and "TCC_HIT_sum" in raw
    assert not any(name.startswith(("wave_size_", "obj_")) for name in raw)
    assert profile.value(kernel, "l2.hit_rate_pct") == pytest.approx(
        100 * raw["TCC_HIT_sum"][0] / (raw["TCC_HIT_sum"][0] + raw["TCC_MISS_sum"][0]))
    # vecCopy of 1M doubles reads and writes 8 MiB: the fabric counters say so.
    assert profile.value(kernel, "dram.bytes_write") == 8388608.0
    assert profile.value(kernel, "dram.bytes_read") == pytest.approx(8388608.0, rel=0.001)


def test_pmc_perf_v2_backend_drops_repeated_columns_keeps_real_counters():
    profile = load_profile(DATA / "mi300x_v2backend_pmc_perf.csv")
    (kernel,) = profile.kernels
    raw = profile.values(kernel, origin="raw")
    assert kernel.invocations == 3 and kernel.attributes["duration_ns_total"] == 44000.0
    assert not any(name.startswith(("Wave_Size_", "Correlation_ID_", "XCC_Index")) for name in raw)
    assert "SQC_DCACHE_REQ_READ_1" in raw and "SQC_DCACHE_REQ_READ_8" in raw  # counters that end in _N
    assert raw["SQ_INSTS_VALU"] == (98304.0, "")
    assert profile.value(kernel, "warp.active_threads") == 64.0  # vecCopy never diverges


def test_pmc_perf_mi300a_fortran_openmp_kernels():
    profile = load_profile(DATA / "mi300a_openmp_fortran_pmc_perf.csv")
    top = load_profile(DATA / "mi300a_openmp_fortran_pmc_kernel_top.csv")
    assert len(profile.kernels) == 3 and all(k.invocations == 2 for k in profile.kernels)
    for kernel in top.kernels:
        same = profile.kernel(kernel.name)
        assert same.attributes["duration_ns_total"] == kernel.attributes["duration_ns_total"]
        assert same.duration_ns == pytest.approx(kernel.duration_ns)
    l18 = profile.kernel("__omp_offloading_32_6b6b__QQmain_l18.kd")
    assert l18.attributes["duration_ns_total"] == 431275823.0
    assert l18.grid == (912, 1, 1) and l18.block == (256, 1, 1)
    raw = profile.values(l18, origin="raw")
    assert raw["SQ_WAVES"] == (3648.0, "") and "SQ_WAVES_13" not in raw
    assert top.kernel("__omp_offloading_32_6b6b__QQmain_l18.kd").invocations == 2


def test_pmc_perf_v3_backend_mi350():
    profile = load_profile(DATA / "mi350_v3backend_pmc_perf.csv")
    (kernel,) = profile.kernels
    assert kernel.invocations == 3 and kernel.attributes["first_dispatch"] == 0  # 0-based in v3 csv mode
    assert profile.value(kernel, "SQ_WAVES", origin="raw") == 16384.0
    per_pass = load_profile(DATA / "mi350_v3backend_pmc_perf_0.csv")
    assert per_pass.kernels[0].invocations == 3
    assert per_pass.value(per_pass.kernels[0], "SQ_ACTIVE_INST_VALU", origin="raw") == 98304.0


def test_pmc_perf_rocpd_long_form():
    profile = load_profile(DATA / "mi300x_rocpd_long_pmc_perf.csv")
    (kernel,) = profile.kernels
    raw = profile.values(kernel, origin="raw")
    assert kernel.invocations == 3 and kernel.attributes["duration_ns_total"] == 22192.0
    assert kernel.device_id == 2
    assert raw["SQ_WAVES"] == (16384.0, "") and raw["TCC_HIT_sum"] == (68496.0, "")
    assert raw["TCC_HIT[0]"] == (512.0, "")
    assert profile.value(kernel, "l2.hit_rate_pct") == pytest.approx(100 * 68496 / (68496 + 131173.33333333334))


def test_workload_folder_merges_sysinfo_and_roofline(tmp_path):
    folder = tmp_path / "MI200"
    folder.mkdir()
    shutil.copyfile(DATA / "mi200_v1backend_pmc_perf.csv", folder / "pmc_perf.csv")
    shutil.copyfile(DATA / "mi200_sysinfo.csv", folder / "sysinfo.csv")
    shutil.copyfile(DATA / "mi200_roofline.csv", folder / "roofline.csv")
    profile = load_profile(folder)
    device = profile.device
    assert profile.format == "rocprof-compute-pmc-perf"
    assert device.name == "AMD Instinct MI200" and device.arch == "gfx90a" and device.sm_count == 104
    assert device.max_sm_clock_hz == 1.7e9 and device.memory_clock_hz == 1.6e9 and device.l2_bytes == 8192 * 1024
    assert device.attributes["roofline"]["HBMBw"] == pytest.approx(1388.8626, rel=1e-4)
    kernel = profile.kernels[0]
    # VALU utilization as rocprof-compute computes it: 100 * SQ_ACTIVE_INST_VALU / (GRBM_GUI_ACTIVE / num_xcd * CUs).
    raw = profile.values(kernel, origin="raw")
    expected = 100 * raw["SQ_ACTIVE_INST_VALU"][0] / (raw["GRBM_GUI_ACTIVE"][0] / 1 * 104)
    assert profile.value(kernel, "amd.valu_util_pct") == pytest.approx(expected)
    assert profile.value(kernel, "launch.sm_count") == 104.0
    assert profile.value(kernel, "pipe.tensor_pct") == 0.0
    # The sysinfo file alone, beside pmc_perf.csv, loads the whole workload.
    assert load_profile(folder / "sysinfo.csv").kernels[0].function_name == "vecCopy"
    # So does workloads/<name>/ holding the one GPU folder.
    assert load_profile(tmp_path).device.name == "AMD Instinct MI200"


def test_workload_folder_of_per_pass_files(tmp_path):
    shutil.copyfile(DATA / "mi350_v3backend_pmc_perf_0.csv", tmp_path / "pmc_perf_0.csv")
    shutil.copyfile(DATA / "mi350_sysinfo.csv", tmp_path / "sysinfo.csv")
    profile = load_profile(tmp_path)
    assert profile.device.name == "AMD Instinct MI350" and profile.device.arch == "gfx950"
    assert profile.device.sm_count == 128 and profile.kernels[0].invocations == 3  # cu_per_gpu as the file says


def test_xcd_count_only_where_the_file_says_it():
    """num_xcd is the file's: read where it is given; one XCD where the sysinfo says the device is
    not partitioned (rocprof-compute's own definition of num_xcd); otherwise none, never inferred
    from the gfx arch (that is the hardware database's, which the rules read)."""
    import csv

    from keet.ingest.rocprof_common import sysinfo_device

    with open(DATA / "mi200_sysinfo.csv", newline="") as handle:
        row = next(csv.DictReader(handle))
    assert row["num_xcd"] == "1" and row["compute_partition"] == "NA" and row["gpu_arch"] == "gfx90a"
    assert sysinfo_device(row).raw["num_xcd"] == (1.0, "XCD")
    without = {k: v for k, v in row.items() if k != "num_xcd"}
    assert sysinfo_device(without).raw["num_xcd"] == (1.0, "XCD")  # "NA": not partitioned
    assert "num_xcd" not in sysinfo_device({**without, "compute_partition": "SPX"}).raw
    assert "num_xcd" not in sysinfo_device({k: v for k, v in without.items() if k != "compute_partition"}).raw
    assert sysinfo_device({**row, "num_xcd": "8", "compute_partition": "SPX"}).raw["num_xcd"] == (8.0, "XCD")


def test_device_only_files():
    sysinfo = load_profile(DATA / "mi350_sysinfo.csv")
    assert sysinfo.device.arch == "gfx950" and sysinfo.device.attributes["num_xcd"] == "8"
    roofline = load_profile(DATA / "mi200_roofline.csv")
    assert roofline.device.attributes["roofline"]["FP64Flops"] == pytest.approx((20301.172 + 20310.521) / 2)  # median of 4 devices
