"""rocprof readers on odd and bad input: what loads, what fails, and how it fails.

Odd but valid (program output before the header, None/empty values, per-instance [n]
columns, repeated _N columns, a trailing header comma) must load; bad input (header only,
cut off, extra fields, a wrong format) must be one ProfileError line, exit status 2 from the
CLI, no traceback. Hypothesis mutates the real files: nothing but ProfileError may escape.
"""

from __future__ import annotations

import csv
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keet import Profile, ProfileError, load_profile

DATA = Path(__file__).parent / "data" / "rocprof"
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
V1_HEADER = ('"Index","KernelName","gpu-id","queue-id","queue-index","pid","tid","grd","wgr","lds","scr","arch_vgpr",'
             '"accum_vgpr","sgpr","wave_size","sig","obj","DispatchNs","BeginNs","EndNs","CompleteNs","DurationNs"\n')
V1_ROW = '0,"kern(float*, int)",2,0,0,33,33,1024,256,512,16,28,4,32,64,"0x0","0x7f0d",100,200,1200,1300,1000\n'
FUZZ_FILES = [
    "mi210_hsa_trace_results.csv", "mi250x_fd_results.stats.csv", "mi300x_rocprofv2_kernel_timestamps.csv",
    "docs_rocm62_kernel_trace.csv", "mi300a_rocm7_kernel_trace.csv", "docs_rocm7_counter_collection.csv",
    "mi200_sysinfo.csv", "mi300a_openmp_fortran_pmc_kernel_top.csv", "mi350_v3backend_pmc_perf_0.csv",
    "mi200_v1backend_pmc_perf.csv", "mi210_hip_trace_results.db",
]


def keet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "keet.cli", *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


def load_or_error(path: Path) -> Profile | None:
    try:
        profile = load_profile(path)
    except ProfileError as error:
        assert "\n" not in str(error) and str(path) in str(error)
        return None
    assert isinstance(profile, Profile)
    return profile


# ---------------------------------------------------------------- odd input that loads


def test_program_output_before_the_header_is_skipped(tmp_path):
    path = tmp_path / "results.csv"
    path.write_bytes(b"RPL: on '231109_185723' from '/opt/rocm'\nROCProfiler: input from \"input.xml\"\n  1 metrics\n"
                     + (DATA / "mi210_hsa_trace_results.csv").read_bytes())
    (kernel,) = load_profile(path).kernels
    assert kernel.name == "elementwise_kernel" and kernel.duration_ns == 7840.0


def test_old_header_generation_with_one_vgpr_column(tmp_path):
    # ROCm < 5.3: vgpr, sgpr, fbar instead of arch_vgpr, accum_vgpr, sgpr, wave_size.
    path = tmp_path / "results.csv"
    path.write_text("Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,vgpr,sgpr,fbar,sig,obj,SQ_WAVES\n"
                    '0,"kern",1,0,0,7,7,65536,64,0,0,32,16,0,0x0,0x1,1024\n')
    profile = load_profile(path)
    (kernel,) = profile.kernels
    assert kernel.registers_per_thread == 32 and kernel.grid == (1024, 1, 1)
    assert profile.value(kernel, "SQ_WAVES", origin="raw") == 1024.0


def test_none_and_empty_values_are_missing_not_zero(tmp_path):
    path = tmp_path / "counter_collection.csv"
    header = ('"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id",'
              '"Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count",'
              '"Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"\n')
    path.write_text(header
                    + '1,1,"Agent 1",1,5,5,4096,3,"k()",64,0,0,8,0,16,"SQ_WAVES",64.0,100,200\n'
                    + '1,1,"Agent 1",1,5,5,4096,3,"k()",64,0,0,8,0,16,"TCC_HIT_sum",None,100,200\n'
                    + '1,1,"Agent 1",1,5,5,4096,3,"k()",64,0,0,8,0,16,"TCC_MISS_sum",,100,200\n')
    profile = load_profile(path)
    raw = profile.values(profile.kernels[0], origin="raw")
    assert raw["SQ_WAVES"] == (64.0, "")
    assert "TCC_HIT_sum" not in raw and "TCC_MISS_sum" not in raw
    assert profile.value(profile.kernels[0], "l2.hit_rate_pct") is None


def test_per_instance_columns_get_their_sum(tmp_path):
    path = tmp_path / "pmc_perf.csv"
    path.write_text("Dispatch_ID,Kernel_Name,GPU_ID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,"
                    "Arch_VGPR,Accum_VGPR,SGPR,wave_size,obj,TCC_HIT[0],TCC_HIT[1],TCC_MISS[0],TCC_MISS[1],wave_size_1,"
                    "Start_Timestamp,End_Timestamp\n"
                    "0,k,0,256,256,0,0,4,0,16,64,0x1,30,50,10,10,64,1000,2000\n")
    profile = load_profile(path)
    raw = profile.values(profile.kernels[0], origin="raw")
    assert raw["TCC_HIT_sum"] == (80.0, "") and raw["TCC_MISS_sum"] == (20.0, "")
    assert raw["TCC_HIT[1]"] == (50.0, "") and "wave_size_1" not in raw
    assert profile.value(profile.kernels[0], "l2.hit_rate_pct") == 80.0


def test_exactly_repeated_header_names_keep_the_first(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text(V1_HEADER.replace(',"DurationNs"', ',"DurationNs","SQ_WAVES","SQ_WAVES"'))
    path.write_text(path.read_text() + V1_ROW.rstrip("\n") + ",4,5\n")
    profile = load_profile(path)
    assert profile.value(profile.kernels[0], "SQ_WAVES", origin="raw") == 4.0


def test_passes_of_one_dispatch_are_merged(tmp_path):
    # rocprof v1 with two pmc lines writes each dispatch once per pass, each with its counters.
    path = tmp_path / "results.csv"
    path.write_text("Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr,"
                    "wave_size,sig,obj,SQ_WAVES,TCC_HIT_sum\n"
                    '0,"k",1,0,0,7,7,1024,256,0,0,8,0,16,64,0x0,0x1,16,\n'
                    '1,"k",1,0,1,7,7,1024,256,0,0,8,0,16,64,0x0,0x1,16,\n'
                    '0,"k",1,0,0,7,7,1024,256,0,0,8,0,16,64,0x0,0x1,,300\n'
                    '1,"k",1,0,1,7,7,1024,256,0,0,8,0,16,64,0x0,0x1,,500\n')
    profile = load_profile(path)
    (kernel,) = profile.kernels
    assert kernel.invocations == 2
    assert profile.value(kernel, "SQ_WAVES", origin="raw") == 16.0
    assert profile.value(kernel, "TCC_HIT_sum", origin="raw") == 400.0  # mean of 300 and 500


def test_older_rocprofv3_counter_collection_layout(tmp_path):
    # Before ROCm 6.4: integer Agent_Id, no Accum_VGPR_Count (rocprof-compute's converter
    # says so), and no timestamps. Values from the ROCm 7 documentation sample.
    path = tmp_path / "counter_collection.csv"
    lines = (DATA / "docs_rocm7_counter_collection.csv").read_text().splitlines()
    out = []
    for line in lines:
        cells = next(csv.reader([line]))
        del cells[17:19], cells[13]  # timestamps, Accum_VGPR_Count
        cells[2] = cells[2].replace("Agent ", "")
        out.append(",".join(f'"{c}"' for c in cells))
    path.write_text("\n".join(out) + "\n")
    profile = load_profile(path)
    assert profile.format == "rocprofv3-counter-collection" and len(profile.kernels) == 4
    assert all(k.duration_ns is None and k.device_id == 1 for k in profile.kernels)
    assert profile.kernel("divide_kernel").registers_per_thread == 12


def test_rocprofv3_kernel_stats(tmp_path):
    path = tmp_path / "kernel_stats.csv"
    path.write_text('"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n'
                    '"void addition_kernel<float>(float*, float const*, float const*, int, int)",4,413506,103376.5,52.8,48744,133341,38000.1\n'
                    '"subtract_kernel(float*, float const*, float const*, int, int)",2,242384,121192,31.0,103265,139119,25351.7\n')
    profile = load_profile(path)
    assert profile.format == "rocprofv3-kernel-stats"
    assert [(k.function_name, k.invocations, k.duration_ns) for k in profile.kernels] == [
        ("addition_kernel", 4, 103376.5), ("subtract_kernel", 2, 121192.0)]


def test_compressed_rocprof_file_loads(tmp_path):
    import gzip

    path = tmp_path / "results.csv.gz"
    path.write_bytes(gzip.compress((DATA / "mi250x_fd_results.csv").read_bytes()))
    assert load_profile(path).kernel("laplacian_kernel").invocations == 1001


# ---------------------------------------------------------------- bad input: one ProfileError line


def _bad_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, what the error must say)."""
    results = (DATA / "mi250x_fd_results.csv").read_bytes()
    cases: dict[str, tuple[bytes | None, str]] = {
        "v1 header only": (V1_HEADER.encode(), "no dispatch rows"),
        "stats header only": (b'"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n', "no kernel rows"),
        "v3 header only": ((DATA / "mi300a_rocm7_kernel_trace.csv").read_bytes().split(b"\n")[0] + b"\n", "no dispatch rows"),
        "pmc_perf header only": ((DATA / "mi200_v1backend_pmc_perf.csv").read_bytes().split(b"\n")[0] + b"\n", "no dispatch rows"),
        "truncated row": (results[: len(results) // 2], "fewer fields than the header"),
        "extra fields": ((V1_HEADER + V1_ROW.rstrip("\n") + ",7,8\n").encode(), "more fields than the header"),
        "unterminated quote": ((V1_HEADER + '0,"kern(float*').encode(), "fewer fields"),
        "wrong format": (b"this is the application's log, not a profile\n", "is not a profile format keet reads"),
        "json not rocprof": (b'{"traceEvents": []}', "is not a profile format keet reads"),
        "empty": (b"", "is empty"),
    }
    files = {}
    for index, (name, (content, message)) in enumerate(cases.items()):
        path = tmp / f"bad{index}.csv"
        path.write_bytes(content)
        files[name] = (path, message)
    other_db = tmp / "other.db"
    with sqlite3.connect(other_db) as connection:
        connection.execute("CREATE TABLE t (a INTEGER)")
    files["sqlite not rocprof"] = (other_db, "not one rocprof wrote")
    cut_db = tmp / "cut.db"
    cut_db.write_bytes((DATA / "mi210_hip_trace_results.db").read_bytes()[:5000])
    files["truncated sqlite"] = (cut_db, "SQLite database cannot be read")
    empty_dir = tmp / "empty_dir"
    empty_dir.mkdir()
    files["empty folder"] = (empty_dir, "is a directory")
    return files


BAD_CASES = ["v1 header only", "stats header only", "v3 header only", "pmc_perf header only", "truncated row", "extra fields",
             "unterminated quote", "wrong format", "json not rocprof", "empty", "sqlite not rocprof", "truncated sqlite",
             "empty folder"]


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    return _bad_files(tmp_path_factory.mktemp("bad"))


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_is_one_profile_error(bad_files, case):
    path, message = bad_files[case]
    with pytest.raises(ProfileError) as error:
        load_profile(path)
    assert message in str(error.value), str(error.value)
    assert "\n" not in str(error.value) and str(error.value).startswith(str(path))


@pytest.mark.parametrize("command", ["metrics", "explain"])
@pytest.mark.parametrize("case", ["v1 header only", "truncated row", "wrong format", "truncated sqlite", "pmc_perf header only"])
def test_cli_bad_input_exit_2_one_line_no_traceback(bad_files, command, case):
    path, message = bad_files[case]
    result = keet(command, path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("keet: error: ") and message in lines[0]
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("name", ["mi250x_fd_results.csv", "mi300x_rocpd_long_pmc_perf.csv", "mi300a_openmp_fortran_pmc_perf.csv",
                                  "docs_rocm7_counter_collection.csv", "mi210_hip_trace_results.db", "mi250x_fd_results.stats.csv"])
@pytest.mark.parametrize("command", ["metrics", "explain"])
def test_cli_runs_on_real_files(name, command):
    result = keet(command, DATA / name)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and result.stdout.strip()


# ---------------------------------------------------------------- fuzzing


@FUZZ
@given(name=st.sampled_from(FUZZ_FILES), fraction=st.floats(0, 1), garbage=st.binary(max_size=40), cut_only=st.booleans())
def test_mutated_real_files_load_or_fail_cleanly(scratch_file, name, fraction, garbage, cut_only):
    original = (DATA / name).read_bytes()
    cut = int(len(original) * fraction)
    damaged = original[:cut] if cut_only else original[:cut] + garbage + original[cut + len(garbage):]
    load_or_error(scratch_file(damaged, Path(name).suffix))


@FUZZ
@given(name=st.sampled_from(FUZZ_FILES[:9]), data=st.data())
def test_real_files_with_replaced_cells_load_or_fail_cleanly(scratch_file, name, data):
    lines = (DATA / name).read_text().split("\n")
    row = data.draw(st.integers(1, max(1, len(lines) - 1)))
    cells = lines[row].split(",") if row < len(lines) else [""]
    column = data.draw(st.integers(0, len(cells) - 1))
    cells[column] = data.draw(st.sampled_from(["", "None", "nan", "-1", "1e309", '"', "0x0", "inf", "-0", "99999999999999999999"])
                              | st.text(max_size=12))
    lines[row] = ",".join(cells)
    load_or_error(scratch_file("\n".join(lines)))


@FUZZ
@given(header=st.sampled_from([V1_HEADER, (DATA / "mi300a_rocm7_kernel_trace.csv").read_text().split("\n")[0] + "\n",
                               (DATA / "docs_rocm7_counter_collection.csv").read_text().split("\n")[0] + "\n"]),
       rows=st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=120), max_size=6))
def test_rocprof_header_with_random_rows_loads_or_fails_cleanly(scratch_file, header, rows):
    load_or_error(scratch_file(header + "\n".join(rows)))
