"""Nsight Compute CSV readers (details page and raw page) on real exports, traps and bad input."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keet import Profile, ProfileError, load_profile
from keet.ingest import detect
from keet.ingest.ncu_csv import NcuCsvDetailsReader, NcuCsvRawReader
from keet.names import function_base_name

H100 = "h100_details_metrics_with_stdout.csv"
SM75 = "sm75_details_rules_copy_blocked.csv"
RAW_PAGE = "handwritten_raw_page_layout.csv"

IDENTITY = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Block Size", "Grid Size", "Device", "CC"]
DETAILS_HEADER = IDENTITY + ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]
RULE_COLUMNS = ["Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROUND_TRIP = settings(FUZZ, max_examples=100)


def csv_lines(rows: list[list[str]]) -> str:
    """Rows quoted the way ncu quotes them (every field), LF line endings."""
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue()


def identity_cells(kernel_id: int, name: str) -> list[str]:
    return [str(kernel_id), "4242", "bench", "127.0.0.1", name, "1", "7", "(128, 1, 1)", "(64, 1, 1)", "0", "9.0"]


def metrics_table(profile: Profile) -> pd.DataFrame:
    return profile.metrics.sort_values(["kernel", "origin", "metric"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def h100(ncu_data: Path) -> Profile:
    return load_profile(ncu_data / H100)


@pytest.fixture(scope="module")
def sm75(ncu_data: Path) -> Profile:
    return load_profile(ncu_data / SM75)


@pytest.fixture(scope="module")
def raw_page(ncu_data: Path) -> Profile:
    return load_profile(ncu_data / RAW_PAGE)


# ---------------------------------------------------------------- H100, --metrics export with stdout before it


def test_h100_is_read_as_details_page(h100, ncu_data):
    assert detect(ncu_data / H100).id == "ncu-csv-details"
    assert h100.format == "ncu-csv-details"
    assert h100.source == str(ncu_data / H100)


def test_h100_kernels_ids_and_names(h100):
    assert [k.id for k in h100.kernels] == list(range(9))
    assert h100.kernel(4).name == "voxelize_occupancy_kernel(const float *, int *, int, float3, float, int, int, int)"
    assert h100.kernel(8).name == (
        "resample_trajectory_fp32_kernel(const float *, const float *, const float *, float *, int, int, int, int)"
    )
    assert h100.kernel(3).name == "void at::vectorized_elementwise_kernel<4, at::FillFunctor<int>, std::array<char *, 1>>(int, T2, T3)"
    # The first kernel's name is 1.6 kB of templates, lambdas and commas; it must survive whole.
    assert h100.kernel(0).name.startswith("void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4, void templates::")
    assert h100.kernel(0).name.endswith(">(long, at::PhiloxCudaState, T3, T4)")
    assert all(k.process == "python3.10" and k.stream == 7 and k.device_id == 0 for k in h100.kernels)


def test_h100_function_names(h100):
    assert [k.function_name for k in h100.kernels] == [
        "distribution_elementwise_grid_stride_kernel",
        "vectorized_elementwise_kernel",
        "vectorized_elementwise_kernel",
        "vectorized_elementwise_kernel",
        "voxelize_occupancy_kernel",
        "distribution_elementwise_grid_stride_kernel",
        "elementwise_kernel_with_index",
        "elementwise_kernel_with_index",
        "resample_trajectory_fp32_kernel",
    ]


def test_h100_launch_configuration(h100):
    assert h100.kernel(0).grid == (912, 1, 1) and h100.kernel(0).block == (256, 1, 1)
    assert h100.kernel(1).grid == (1465, 1, 1) and h100.kernel(1).block == (128, 1, 1)
    assert h100.kernel(7).grid == (4, 1, 1) and h100.kernel(7).block == (64, 1, 1)
    assert h100.kernel(8).grid == (8000, 1, 1) and h100.kernel(8).block == (256, 1, 1)


def test_h100_device_from_cc_column(h100):
    device = h100.device
    assert device.name == "NVIDIA GPU (CC 9.0)"
    assert device.vendor == "nvidia" and device.arch == "sm_90" and device.compute_capability == (9, 0)
    assert device.sm_count is None and device.sm_clock_hz is None  # the export has neither


def test_h100_raw_metrics_keep_metric_names_and_units(h100):
    raw = h100.values(8, origin="raw")
    assert len(raw) == 8
    assert raw["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == (907904.0, "sector")
    assert raw["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == (256000.0, "sector")
    assert raw["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == (69.60, "%")
    assert h100.value(0, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", origin="raw") == 18.71


def test_h100_canonical_metrics(h100):
    assert h100.value(0, "sol.dram_pct") == 0.03
    assert h100.value(4, "sol.dram_pct") == 25.88
    assert h100.value(8, "occupancy.achieved_pct") == 90.93
    assert h100.value(8, "sol.sm_pct") == 69.60
    assert h100.value(4, "global.load_sectors") == 562500.0
    assert h100.value(8, "duration") is None  # not collected by this --metrics list


# ---------------------------------------------------------------- sm75, full details page with rules


def test_sm75_one_kernel_with_its_launch(sm75):
    assert [k.id for k in sm75.kernels] == [0]
    kernel = sm75.kernels[0]
    assert kernel.name.startswith("copy_blocked[v1,cw51cXTLSUwv1sDUaKthrqNgqqmjgOR3W3CwAkMXLaJtQYkOIgxJU0gCqOkEJoHkbttqdVhoqlspQGNFHSgJ5BnXagIA]")
    assert kernel.name.endswith("(Array<long long, 1, C, mutable, aligned>, Array<long long, 1, C, mutable, aligned>, long long)")
    assert kernel.function_name == "copy_blocked"
    assert kernel.grid == (1024, 1, 1) and kernel.block == (256, 1, 1)
    assert kernel.registers_per_thread == 32
    assert kernel.static_shared_bytes == 0 and kernel.dynamic_shared_bytes == 0
    assert kernel.duration_ns == 21058944.0
    assert kernel.process == "python3.11"


def test_sm75_raw_rows_are_keyed_section_and_label(sm75):
    raw = sm75.values(0, origin="raw")
    assert raw["GPU Speed Of Light Throughput / Duration"] == (21058944.0, "ns")
    assert raw["GPU Speed Of Light Throughput / DRAM Frequency"] == (4963609951.19, "hz")
    assert raw["GPU Speed Of Light Throughput / Elapsed Cycles"] == (12319469.0, "cycle")
    assert raw["Launch Statistics / Registers Per Thread"] == (32.0, "register/thread")
    assert raw["Launch Statistics / Grid Size"] == (1024.0, "")  # written "1,024"
    assert raw["Memory Workload Analysis / Memory Throughput"] == (196456177859.63, "byte/s")
    # The same label in two sections stays two metrics.
    assert raw["GPU Speed Of Light Throughput / Memory Throughput"] == (61.84, "%")
    assert raw["GPU and Memory Workload Distribution / Total SMSP Elapsed Cycles"] == (1966292704.0, "cycle")
    assert len(raw) == 71  # 72 metric rows, one of them a string


def test_sm75_string_metric_is_an_attribute(sm75):
    kernel = sm75.kernels[0]
    assert kernel.attributes["Launch Statistics / Function Cache Configuration"] == "CachePreferNone"
    assert sm75.value(0, "Launch Statistics / Function Cache Configuration", origin="raw") is None


def test_sm75_canonical_metrics(sm75):
    assert sm75.value(0, "duration") == 21058944.0
    assert sm75.value(0, "dram_clock") == 4963609951.19
    assert sm75.value(0, "sm_clock") == 584998877.44
    assert sm75.value(0, "cycles_elapsed") == 12319469.0
    assert sm75.value(0, "sol.dram_pct") == 61.84
    assert sm75.value(0, "sol.memory_pct") == 61.84
    assert sm75.value(0, "sol.sm_pct") == 1.30
    assert sm75.value(0, "occupancy.achieved_pct") == 96.26
    assert sm75.value(0, "occupancy.theoretical_pct") == 100.0
    assert sm75.value(0, "occupancy.limit_warps") == 4.0
    assert sm75.value(0, "launch.registers_per_thread") == 32.0
    assert sm75.value(0, "launch.threads") == 262144.0
    assert sm75.value(0, "launch.sm_count") == 40.0
    assert sm75.value(0, "inst.executed") == 16105472.0
    assert sm75.value(0, "branch.efficiency_pct") == 100.0


def test_sm75_device(sm75):
    device = sm75.device
    assert device.name == "NVIDIA GPU (CC 7.5)"
    assert device.arch == "sm_75" and device.compute_capability == (7, 5)
    assert device.sm_count == 40
    assert device.sm_clock_hz == 584998877.44


def test_sm75_rule_results(sm75):
    rules = sm75.kernels[0].rule_results
    assert [r.rule_id for r in rules] == [
        "SOLBottleneck", "SOLFPRoofline", "HighPipeUtilization", "MemoryL2Compression",
        "MemoryCacheAccessPattern", "MemoryCacheAccessPattern", "IssueSlotUtilization",
        "CPIStall", "CPIStall", "CPIStall", "UncoalescedGlobalAccess",
    ]
    uncoalesced = rules[-1]
    assert uncoalesced.name == uncoalesced.title == "UncoalescedGlobalAccess"
    assert uncoalesced.section == "SourceCounters"
    assert uncoalesced.kind == "optimization"
    assert uncoalesced.speedup_type == "global"
    assert uncoalesced.estimated_speedup_pct == 74.14
    assert uncoalesced.message.startswith("This kernel has uncoalesced global accesses resulting in a total of 25165824 excessive sectors")
    by_id = {r.rule_id: r for r in rules}
    assert by_id["HighPipeUtilization"].speedup_type == "local" and by_id["HighPipeUtilization"].estimated_speedup_pct == 98.86
    assert by_id["SOLFPRoofline"].kind == "info" and by_id["SOLFPRoofline"].estimated_speedup_pct is None
    assert by_id["MemoryL2Compression"].kind == "warning"
    assert by_id["SOLBottleneck"].speedup_type is None


# ---------------------------------------------------------------- raw page (hand-written in the real layout)


def test_raw_page_is_detected(ncu_data, raw_page):
    assert detect(ncu_data / RAW_PAGE).id == "ncu-csv-raw"
    assert raw_page.format == "ncu-csv-raw"


def test_raw_page_kernels(raw_page):
    assert [k.id for k in raw_page.kernels] == [0, 1]
    add, scale = raw_page.kernels
    assert add.name == "vectorAdd(const float *, const float *, float *, int)" and add.function_name == "vectorAdd"
    assert scale.name == "void scale<float, 2>(const float *, float *, float, int)" and scale.function_name == "scale"
    assert add.grid == (4096, 1, 1) and add.block == (256, 1, 1)
    assert scale.grid == (8, 1, 1) and scale.block == (128, 1, 1)
    assert add.registers_per_thread == 16 and scale.registers_per_thread == 18
    assert scale.static_shared_bytes == 1024  # written "1,024"
    assert add.attributes["launch__func_cache_config"] == "CachePreferNone"


def test_raw_page_units_row_gives_units(raw_page):
    raw = raw_page.values(0, origin="raw")
    assert raw["gpu__time_duration.sum"] == (9.25, "usecond")
    assert raw["dram__bytes_read.sum"] == (12.58, "Mbyte")
    assert raw["launch__grid_size"] == (4096.0, "")
    assert raw["smsp__cycles_elapsed.avg.per_second"] == (1.59, "cycle/nsecond")
    # The units row is not a kernel, and n/a cells are left out rather than zero.
    assert "dram__throughput.avg.pct_of_peak_sustained_elapsed" not in raw_page.values(1, origin="raw")


def test_raw_page_canonical_metrics_in_base_units(raw_page):
    assert raw_page.value(0, "duration") == pytest.approx(9250.0)
    assert raw_page.kernels[1].duration_ns == pytest.approx(2140.0)
    assert raw_page.value(0, "dram.bytes_read") == pytest.approx(12.58e6)
    assert raw_page.value(0, "sm_clock") == pytest.approx(1.59e9)
    assert raw_page.value(0, "sol.dram_pct") == 78.41
    assert raw_page.value(1, "sol.dram_pct") is None


def test_raw_page_device_from_device_attributes(raw_page):
    device = raw_page.device
    assert device.name == "NVIDIA H100 80GB HBM3"
    assert device.arch == "sm_90" and device.compute_capability == (9, 0)
    assert device.sm_count == 132
    assert device.max_sm_clock_hz == pytest.approx(1.98e9)
    assert device.l2_bytes == 52_430_000
    assert device.sm_clock_hz == pytest.approx(1.59e9)
    assert device.attributes["display_name"] == "NVIDIA H100 80GB HBM3"


def test_raw_page_header_and_units_only_is_an_error(scratch_file, ncu_data):
    lines = (ncu_data / RAW_PAGE).read_text().splitlines(keepends=True)
    header_and_units = "".join(lines[:6])
    with pytest.raises(ProfileError, match="no kernel rows"):
        load_profile(scratch_file(header_and_units))


def test_raw_page_without_units_row(scratch_file):
    text = csv_lines([IDENTITY + ["launch__grid_size", "gpu__time_duration.sum"], identity_cells(3, "k(int)") + ["64", "1,500"]])
    profile = load_profile(scratch_file(text))
    assert profile.format == "ncu-csv-raw"
    assert profile.values(3, origin="raw") == {"launch__grid_size": (64.0, ""), "gpu__time_duration.sum": (1500.0, "")}


def test_raw_page_with_launch_dims_and_old_columns(scratch_file):
    header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream",
              "launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z", "launch__block_dim_x",
              "launch__block_dim_y", "launch__block_dim_z", "device__attribute_compute_capability_major",
              "device__attribute_compute_capability_minor"]
    units = [""] * len(header)
    row = ["0", "1", "app", "host", "k2d(float *)", "2021-Mar-02 10:11:12", "1", "7", "32", "16", "1", "16", "16", "1", "8", "0"]
    profile = load_profile(scratch_file(csv_lines([header, units, row])))
    kernel = profile.kernels[0]
    assert kernel.grid == (32, 16, 1) and kernel.block == (16, 16, 1)
    assert kernel.attributes["kernel_time"] == "2021-Mar-02 10:11:12"
    assert profile.device.compute_capability == (8, 0) and profile.device.name == "NVIDIA GPU (CC 8.0)"


# ---------------------------------------------------------------- traps


def test_crlf_bom_and_utf16_read_the_same(ncu_data, scratch_file):
    for name in (H100, SM75, RAW_PAGE):
        original = (ncu_data / name).read_bytes()
        expected = load_profile(ncu_data / name)
        crlf = original.replace(b"\n", b"\r\n")
        variants = [crlf, b"\xef\xbb\xbf" + original, b"\xef\xbb\xbf" + crlf,
                    original.decode("utf-8").encode("utf-16")]  # what a Windows shell redirect writes
        for variant in variants:
            profile = load_profile(scratch_file(variant))
            assert profile.format == expected.format
            assert [k.name for k in profile.kernels] == [k.name for k in expected.kernels]
            pd.testing.assert_frame_equal(metrics_table(profile), metrics_table(expected))


def test_ncu_messages_and_output_after_the_table_are_ignored(ncu_data, scratch_file):
    original = (ncu_data / SM75).read_text()
    noisy = (
        "==PROF== Connected to process 6153 (/usr/bin/python3.11)\nsome program output, with \"quotes\"\n"
        + original
        + "==PROF== Disconnected from process 6153\n==WARNING== Found outstanding GPU clock reset, trying to revert...Success.\nDone.\n"
    )
    profile = load_profile(scratch_file(noisy))
    pd.testing.assert_frame_equal(metrics_table(profile), metrics_table(load_profile(ncu_data / SM75)))
    assert len(profile.kernels[0].rule_results) == 11


def test_trailing_comma_beyond_the_header(ncu_data, scratch_file):
    # The superbenchmark B200 export ends every metric row of a 15-column header with a comma.
    lines = (ncu_data / H100).read_text().split("\n")
    with_commas = "\n".join(line + "," if line.startswith('"') and not line.startswith('"ID"') else line for line in lines)
    profile = load_profile(scratch_file(with_commas))
    pd.testing.assert_frame_equal(metrics_table(profile), metrics_table(load_profile(ncu_data / H100)))


def test_old_column_set_without_launch_columns(ncu_data, scratch_file):
    """ncu 2019-2021: "Kernel Time", no Block/Grid Size, Device or CC, no rule columns."""
    text = (ncu_data / SM75).read_text()
    rows = list(csv.DictReader(io.StringIO(text)))
    old_header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream",
                  "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
    old_rows = [
        [row.get(c, "") for c in old_header] for row in rows if row["Metric Name"]
    ]
    kernel_time = old_header.index("Kernel Time")
    for row in old_rows:
        row[kernel_time] = "2020-Sep-01 12:00:00"
    profile = load_profile(scratch_file(csv_lines([old_header, *old_rows])))
    kernel = profile.kernels[0]
    assert kernel.grid == (1024, 1, 1) and kernel.block == (256, 1, 1)  # from Launch Statistics
    assert kernel.duration_ns == 21058944.0 and kernel.registers_per_thread == 32
    assert kernel.attributes["kernel_time"] == "2020-Sep-01 12:00:00"
    assert kernel.rule_results == []
    assert profile.device.name == "NVIDIA GPU" and profile.device.compute_capability is None
    assert profile.device.sm_count == 40


def test_auto_units_are_kept_raw_and_converted_canonically(scratch_file):
    name = 'void k<float, "x,y">(float *, int)'
    rows = [DETAILS_HEADER] + [
        identity_cells(0, name) + [section, label, unit, value]
        for section, label, unit, value in [
            ("GPU Speed Of Light Throughput", "Duration", "usecond", "1.25"),
            ("GPU Speed Of Light Throughput", "DRAM Frequency", "Ghz", "2.62"),
            ("GPU Speed Of Light Throughput", "SM Frequency", "cycle/nsecond", "1.59"),
            ("Memory Workload Analysis", "Memory Throughput", "Tbyte/second", "2.10"),
            ("Launch Statistics", "Static Shared Memory Per Block", "Kbyte/block", "12.29"),
            ("Launch Statistics", "Registers Per Thread", "register/thread", "N/A"),
            ("Command line profiler metrics", "dram__bytes_read.sum", "Mbyte", "1,024.50"),
        ]
    ]
    profile = load_profile(scratch_file(csv_lines(rows)))
    assert profile.kernels[0].name == name and profile.kernels[0].function_name == "k"
    raw = profile.values(0, origin="raw")
    assert raw["GPU Speed Of Light Throughput / Duration"] == (1.25, "usecond")
    assert raw["Memory Workload Analysis / Memory Throughput"] == (2.10, "Tbyte/second")
    assert raw["dram__bytes_read.sum"] == (1024.5, "Mbyte")
    assert "Launch Statistics / Registers Per Thread" not in raw
    assert profile.value(0, "duration") == pytest.approx(1250.0)
    assert profile.value(0, "dram_clock") == pytest.approx(2.62e9)
    assert profile.value(0, "sm_clock") == pytest.approx(1.59e9)
    assert profile.value(0, "launch.shared_static") == pytest.approx(12290.0)
    assert profile.value(0, "dram.bytes_read") == pytest.approx(1.0245e9)
    assert profile.kernels[0].registers_per_thread is None


def test_device_metrics_in_a_metrics_export_and_several_devices(scratch_file):
    def row(kernel_id: int, device: str, metric: str, unit: str, value: str) -> list[str]:
        cells = identity_cells(kernel_id, f"k{kernel_id}(int)")
        cells[IDENTITY.index("Device")] = device
        return cells + ["Command line profiler metrics", metric, unit, value]

    rows = [
        DETAILS_HEADER,
        row(0, "0", "device__attribute_display_name", "", "NVIDIA H100 PCIe"),
        row(0, "0", "device__attribute_multiprocessor_count", "", "114"),
        row(0, "0", "sm__cycles_elapsed.avg.per_second", "cycle/second", "1,755,000,000"),
        row(1, "1", "device__attribute_display_name", "", "NVIDIA A100-SXM4-40GB"),
        row(1, "1", "launch__sm_count", "SM", "108"),
    ]
    profile = load_profile(scratch_file(csv_lines(rows)))
    assert [k.device_id for k in profile.kernels] == [0, 1]
    assert profile.device is profile.devices[0]
    assert profile.device.name == "NVIDIA H100 PCIe" and profile.device.sm_count == 114
    assert profile.device.sm_clock_hz == 1.755e9
    assert profile.devices[1].name == "NVIDIA A100-SXM4-40GB" and profile.devices[1].sm_count == 108
    assert "device__attribute_display_name" not in profile.kernels[0].attributes


def test_detection_is_by_content_not_name(ncu_data, scratch_file):
    renamed = scratch_file((ncu_data / SM75).read_bytes(), ".ncu-rep")
    assert detect(renamed).id == "ncu-csv-details"
    raw = scratch_file((ncu_data / RAW_PAGE).read_bytes(), ".txt")
    assert detect(raw).id == "ncu-csv-raw"


def test_table_beyond_the_sniffed_head_is_found(ncu_data, scratch_file):
    program_output = "==PROF== Connected to process 1 (/bin/app)\n" + "step 1 loss 0.25\n" * 10_000
    profile = load_profile(scratch_file(program_output + (ncu_data / SM75).read_text()))
    assert profile.value(0, "duration") == 21058944.0


def test_function_base_name():
    assert function_base_name("void at::native::<unnamed>::k<int, 4>(int, T2)") == "k"
    assert function_base_name("(anonymous namespace)::reduce<float>(float *)") == "reduce"
    assert function_base_name("copy_blocked[v1,abc](Array<long long, 1, C>)") == "copy_blocked"
    assert function_base_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"
    assert function_base_name("void Functor::operator()<float>(float *)") == "operator()"
    assert function_base_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x3_nn_align4>(Params)") == "Kernel2"


# ---------------------------------------------------------------- bad input


OTHER_TOOLS = {
    "plain": "a,b,c\n1,2,3\n",
    "rocprof v1": '"Index","KernelName","gpu-id","queue-id","queue-index","pid","tid","grd","wgr","lds","scr","arch_vgpr","accum_vgpr","sgpr","wave_size","sig","obj","DispatchNs","BeginNs","EndNs","CompleteNs","DurationNs"\n0,"k(int)",0,0,0,1,1,64,64,0,0,8,0,16,64,"0x0","0x0",1,2,3,4,1\n',
    "rocprofv3": '"Kind","Agent_Id","Queue_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp"\n"KERNEL_DISPATCH","Agent 2",1,1,"k(int)",1,10,20\n',
    "nvprof": '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n"Tesla V100","k(int)",1,"dram_read_throughput","Device Memory Read Throughput",1.0,1.0,1.0\n',
    # ncu --print-summary per-kernel: min/max/avg, not one value per launch.
    "ncu summary page": '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name","Metric Name","Metric Unit","Minimum","Maximum","Average"\n"0","1","a","h","k(int)","1","7","S","M","ns","1","2","1.5"\n',
}


# CSVs of other tools that other keet readers own (format id); the rest no reader claims.
READ_ELSEWHERE = {"rocprof v1": "rocprof-v1-csv"}


@pytest.mark.parametrize("tool", sorted(OTHER_TOOLS))
def test_csv_of_other_tools_is_not_claimed(tool, scratch_file):
    content = OTHER_TOOLS[tool].encode()
    assert not NcuCsvDetailsReader().sniff(content) and not NcuCsvRawReader().sniff(content)
    if tool in READ_ELSEWHERE:
        assert load_profile(scratch_file(content)).format == READ_ELSEWHERE[tool]
        return
    with pytest.raises(ProfileError, match="not a profile format keet reads"):
        load_profile(scratch_file(content))


def test_header_only_details_csv(scratch_file):
    with pytest.raises(ProfileError, match="no kernel rows") as error:
        load_profile(scratch_file(csv_lines([DETAILS_HEADER + RULE_COLUMNS])))
    assert "\n" not in str(error.value)


def test_ncu_output_without_a_table(scratch_file):
    log = "==PROF== Connected to process 77 (/bin/app)\n==PROF== Disconnected from process 77\n==WARNING== No kernels were profiled.\n"
    with pytest.raises(ProfileError, match="no CSV table"):
        load_profile(scratch_file(log))


def test_rows_that_cannot_be_parsed(scratch_file):
    header = csv_lines([DETAILS_HEADER])
    good = csv_lines([identity_cells(0, "k(int)") + ["S", "Duration", "ns", "5"]])
    cases = {
        "unterminated quote": header + good + '"1","4242","bench","127.0.0.1","k(int, "S","Dur',
        "no kernel ID inside the table": header + csv_lines([["x"] + identity_cells(0, "k")[1:] + ["S", "D", "ns", "5"]]) + good,
        "more fields than the header": header + good.rstrip("\n") + ',"a","b","c","d","e","f"\n',
        "fields far beyond the header": header + good + good.rstrip("\n") + ',"","","","","","x"\n',
        "no row with an ID": header + "garbage\nmore garbage\n",
    }
    for case, text in cases.items():
        path = scratch_file(text)
        with pytest.raises(ProfileError) as error:
            load_profile(path)
        assert error.value.path == str(path), case
        assert "\n" not in str(error.value), case


def test_generic_bad_paths(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(ProfileError, match="is empty"):
        load_profile(empty)
    with pytest.raises(ProfileError, match="is a directory"):
        load_profile(tmp_path)
    with pytest.raises(ProfileError, match="no such file"):
        load_profile(tmp_path / "missing.csv")


# ---------------------------------------------------------------- property-based


SECTIONS = ["GPU Speed Of Light Throughput", "Launch Statistics", "Occupancy", "Memory Workload Analysis",
            "Command line profiler metrics"]
UNITS = ["", "%", "ns", "usecond", "Kbyte", "Mbyte/second", "byte/s", "hz", "cycle", "register/thread"]
# Kernel names: anything ncu could print on one line (no control characters or surrogates).
names = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=60) | st.sampled_from(
    ['<script>alert("x")</script>', 'k<"a,b">(int, float *)', "void ns::f<1, 2>(int, (anonymous namespace)::T)", "ядро,λ(∑)"]
)
labels = st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=20).map(lambda s: ("Label " + s).strip())


@st.composite
def metric_values(draw) -> tuple[str, float | str | None]:
    """(text as ncu would print it, what the reader should make of it)."""
    kind = draw(st.sampled_from(["int", "grouped", "decimal", "missing", "string"]))
    if kind == "int":
        number = draw(st.integers(-10**12, 10**15))
        return str(number), float(number)
    if kind == "grouped":
        number = draw(st.integers(1000, 10**15))
        return f"{number:,}", float(number)
    if kind == "decimal":
        number = draw(st.integers(0, 10**9))
        text = f"{number:,}.{draw(st.integers(0, 99)):02d}" if draw(st.booleans()) else f"{number}.{draw(st.integers(0, 99)):02d}"
        return text, float(text.replace(",", ""))
    if kind == "missing":
        return draw(st.sampled_from(["", "n/a", "N/A"])), None
    return draw(st.sampled_from(["CachePreferNone", "Yes", "(2, 1, 1)", "1,2,3"])), "string"


@st.composite
def details_exports(draw):
    kernel_ids = draw(st.lists(st.integers(0, 10**6), min_size=1, max_size=4, unique=True))
    kernels = []
    for kernel_id in kernel_ids:
        metrics = draw(st.dictionaries(st.tuples(st.sampled_from(SECTIONS), labels),
                                       st.tuples(st.sampled_from(UNITS), metric_values()), min_size=1, max_size=6))
        kernels.append((kernel_id, draw(names), metrics))
    junk = draw(st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=40), max_size=4))
    junk = [line for line in junk if not re.match(r'^[ \t]*"?ID"?[ \t]*,', line)]
    with_rules = draw(st.booleans())
    trailing_comma = draw(st.booleans())
    header = DETAILS_HEADER + (RULE_COLUMNS if with_rules else [])
    rows = []
    for kernel_id, name, metrics in kernels:
        for (section, label), (unit, (text, _)) in metrics.items():
            rows.append(identity_cells(kernel_id, name) + [section, label, unit, text])
    body = csv_lines(rows)
    if trailing_comma:
        body = "".join(line + ",\n" for line in body.splitlines())
    text = "".join(line + "\n" for line in junk) + csv_lines([header]) + body + "==PROF== Disconnected from process 4242\n"
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text, kernels


@ROUND_TRIP
@given(details_exports())
def test_details_round_trip(scratch_file, export):
    text, kernels = export
    profile = load_profile(scratch_file(text))
    assert profile.format == "ncu-csv-details"
    assert [(k.id, k.name) for k in profile.kernels] == [(kernel_id, name) for kernel_id, name, _ in kernels]
    for kernel_id, _, metrics in kernels:
        expected_numbers, expected_strings = {}, {}
        for (section, label), (unit, (written, meaning)) in metrics.items():
            key = label if section == "Command line profiler metrics" else f"{section} / {label}"
            if meaning == "string":
                expected_strings[key] = written
            elif meaning is not None:
                expected_numbers[key] = (meaning, unit)
        assert profile.values(kernel_id, origin="raw") == expected_numbers
        attributes = profile.kernel(kernel_id).attributes
        assert {k: attributes[k] for k in expected_strings} == expected_strings
        assert profile.kernel(kernel_id).grid == (64, 1, 1) and profile.kernel(kernel_id).block == (128, 1, 1)


def _load_or_error(scratch_file, content: bytes) -> None:
    try:
        profile = load_profile(scratch_file(content))
    except ProfileError as error:
        assert "\n" not in str(error)
        return
    assert isinstance(profile, Profile) and profile.kernels


@FUZZ
@given(st.binary(max_size=3000))
def test_random_bytes_load_or_fail_cleanly(scratch_file, content):
    _load_or_error(scratch_file, content)


@FUZZ
@given(st.text(max_size=3000))
def test_random_text_loads_or_fails_cleanly(scratch_file, content):
    _load_or_error(scratch_file, content.encode("utf-8", errors="surrogatepass"))


@FUZZ
@given(header=st.sampled_from([DETAILS_HEADER, DETAILS_HEADER + RULE_COLUMNS, IDENTITY + ["gpu__time_duration.sum", "launch__grid_size"]]),
       lines=st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=200), max_size=8))
def test_ncu_header_with_random_rows_loads_or_fails_cleanly(scratch_file, header, lines):
    _load_or_error(scratch_file, (csv_lines([header]) + "\n".join(lines)).encode("utf-8"))


@FUZZ
@given(name=st.sampled_from([H100, SM75, RAW_PAGE]), fraction=st.floats(0, 1), garbage=st.binary(max_size=50), cut_only=st.booleans())
def test_truncated_and_damaged_real_files_load_or_fail_cleanly(ncu_data, scratch_file, name, fraction, garbage, cut_only):
    original = (ncu_data / name).read_bytes()
    cut = int(len(original) * fraction)
    damaged = original[:cut] if cut_only else original[:cut] + garbage + original[cut + len(garbage):]
    _load_or_error(scratch_file, damaged)
