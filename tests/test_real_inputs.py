"""Issue 22, "Real-world inputs": each reader on real files from public repositories.

Every expected value below was read from the file itself (the ncu-report module for .ncu-rep,
the CSV text otherwise); origins are in tests/data/SOURCES.md. Where no real file of a kind
was found, the test says so and builds the smallest file of that shape from a real one.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from keet import ProfileError, load_profile
from keet.names import function_base_name

DATA = Path(__file__).parent / "data"


# ---------------------------------------------------------------- Nsight Compute reports


@pytest.fixture(scope="module")
def v100() -> object:
    return load_profile(DATA / "ncu" / "v100_miniweather_divtomult.ncu-rep.xz")


def test_every_kernel_gets_its_device_attributes(v100):
    """Device attributes are read once per device in each worker and shared with every kernel
    (they used to come from the first kernel of a worker's batch only)."""
    assert v100.device.name == "Tesla V100-SXM2-32GB" and v100.device.sm_count == 80
    assert len(v100.kernels) == 5
    for kernel in v100.kernels:
        assert v100.value(kernel, "device__attribute_multiprocessor_count", origin="raw") == 80.0
        assert v100.value(kernel, "launch.sm_count") == 80.0
    assert [k.grid for k in v100.kernels] == [(256, 1, 1), (256, 1, 1), (65535, 1, 1), (65535, 1, 1), (65535, 1, 1)]


# ---------------------------------------------------------------- Nsight Compute CSV


@pytest.mark.parametrize(
    ("name", "kernel", "grid", "block", "cc"),
    [
        ("h100_details_metrics_with_stdout.csv", 4, (1954, 1, 1), (256, 1, 1), (9, 0)),  # voxelize_occupancy_kernel
        ("sm75_details_rules_copy_blocked.csv", 0, (1024, 1, 1), (256, 1, 1), (7, 5)),
    ],
)
def test_csv_grid_and_block_columns_become_launch_metrics(name, kernel, grid, block, cc):
    profile = load_profile(DATA / "ncu" / name)
    k = profile.kernels[kernel]
    assert k.grid == grid and k.block == block and profile.device.compute_capability == cc
    assert profile.value(k, "launch.grid_size") == grid[0] * grid[1] * grid[2]
    assert profile.value(k, "launch.block_size") == block[0] * block[1] * block[2]
    assert profile.value(k, "launch.threads") == grid[0] * block[0]


def test_h100_csv_counts_and_lambda_names():
    profile = load_profile(DATA / "ncu" / "h100_details_metrics_with_stdout.csv")
    assert len(profile.kernels) == 9
    names = [k.function_name for k in profile.kernels]
    assert names.count("vectorized_elementwise_kernel") == 3 and "voxelize_occupancy_kernel" in names
    assert "()" not in names and all(n and "(" not in n for n in names)


@pytest.mark.parametrize(
    ("name", "base"),
    [
        # ncu 2023+ spells "operator ()" with a space; a lambda's "->" closes no template.
        ("main::[lambda(int) (instance 1)]::operator ()(int) const", "operator()"),
        ("void kern<lambda [](int) -> float>(T1)", "kern"),
        (("void at::native::elementwise_kernel_with_index<int, at::native::arange_cuda_out(const c10::Scalar &, "
          "at::Tensor &)::[lambda() (instance 1)]::operator ()() const::[lambda(long) (instance 1)]>(T1, T2)"),
         "elementwise_kernel_with_index"),
    ],
)
def test_lambda_heavy_names(name, base):
    assert function_base_name(name) == base


def test_early_2020_speed_of_light_labels(tmp_path):
    """No real ncu 2020.1 export was found: these rows use that version's section and labels
    ("GPU Speed Of Light", "SOL DRAM", "SM [%]", "Duration"), values from the sm75 file."""
    header = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
              '"Section Name","Metric Name","Metric Unit","Metric Value"\n')
    row = '"0","1","a.out","h","copy(float*)","2020-Mar-02 10:00:00","1","7","GPU Speed Of Light","{}","{}","{}"\n'
    rows = [("SOL DRAM", "%", "89.02"), ("SM [%]", "%", "11.48"), ("Duration", "usecond", "21.06"),
            ("SOL L2 Cache", "%", "38.10"), ("Memory [%]", "%", "89.02")]
    path = tmp_path / "ncu2020.csv"
    path.write_text(header + "".join(row.format(*r) for r in rows))
    profile = load_profile(path)
    k = profile.kernels[0]
    assert profile.value(k, "sol.dram_pct") == 89.02 and profile.value(k, "sol.sm_pct") == 11.48
    assert profile.value(k, "duration") == pytest.approx(21060.0) and profile.value(k, "sol.l2_pct") == 38.10


# ---------------------------------------------------------------- rocprof v1 stats


def test_rocm4_unquoted_stats_names_with_commas(tmp_path):
    """ROCm 4.x wrote results.stats.csv without quotes. No such real file was found: this is the
    real MI250X stats file with its quotes removed, which is what ROCm 4.x printed."""
    text = (DATA / "rocprof" / "mi250x_fd_results.stats.csv").read_text().replace('"', "")
    path = tmp_path / "results.stats.csv"
    path.write_text(text)
    profile = load_profile(path)
    assert len(profile.kernels) == 4
    first = profile.kernels[0]
    assert first.name == ("void laplacian_kernel<double>(double*, double const*, int, int, int, double, double, double, "
                          "double) [clone .kd]")
    assert first.invocations == 1001 and first.duration_ns == 2606012.0
    assert profile.kernels[3].name == "__amd_rocclr_fillBufferAligned.kd"


# ---------------------------------------------------------------- rocpd (ROCm 7)


def _rocpd_rocm7(path: Path) -> Path:
    """No real rocpd database was found in a public repository. This one has the columns of the
    ROCm 7.0 views (rocprofiler-sdk rocpd schema 3.0.3, data_views.sql): kernels with
    agent_abs_index/vgpr_count/corr_id, pmc_events with counter_name/counter_value, and agent ids
    that differ from absolute indexes, as in a real database (CPU agents come first). Launch
    values are those of the real MI300A kernel trace in tests/data/rocprof."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE rocpd_info_agent (id INTEGER, guid TEXT, type TEXT, absolute_index INTEGER, "
                   "logical_index INTEGER, type_index INTEGER, name TEXT, product_name TEXT, extdata TEXT)")
        db.execute("INSERT INTO rocpd_info_agent VALUES (1, 'g', 'CPU', 0, 0, 0, 'AMD EPYC', 'AMD EPYC', '{}')")
        db.execute("INSERT INTO rocpd_info_agent VALUES (5, 'g', 'GPU', 2, 2, 0, 'gfx942', 'AMD Instinct MI300A', ?)",
                   (json.dumps({"cu_count": 228, "wave_front_size": 64, "num_xcc": 6}),))
        db.execute("CREATE TABLE kernels (id INTEGER, guid TEXT, tid INTEGER, category TEXT, region TEXT, name TEXT, "
                   "nid INTEGER, pid INTEGER, agent_abs_index INTEGER, agent_log_index INTEGER, agent_type_index INTEGER, "
                   "agent_type TEXT, code_object_id INTEGER, kernel_id INTEGER, dispatch_id INTEGER, stream_id INTEGER, "
                   "queue_id INTEGER, start INTEGER, end INTEGER, duration INTEGER, grid_x INTEGER, grid_y INTEGER, "
                   "grid_z INTEGER, workgroup_x INTEGER, workgroup_y INTEGER, workgroup_z INTEGER, lds_size INTEGER, "
                   "scratch_size INTEGER, vgpr_count INTEGER, accum_vgpr_count INTEGER, sgpr_count INTEGER, "
                   "static_lds_size INTEGER, static_scratch_size INTEGER, event_id INTEGER, stack_id INTEGER, "
                   "parent_stack_id INTEGER, corr_id INTEGER)")
        for dispatch in (1, 2):
            db.execute("INSERT INTO kernels VALUES (?, 'g', 1, 'KERNEL_DISPATCH', 'vecCopy', 'vecCopy(double*, double*, "
                       "double*, int, int)', 0, 1, 2, 2, 0, 'GPU', 1, 12, ?, 0, 1, ?, ?, 8000, 1048576, 1, 1, 256, 1, 1, "
                       "0, 0, 8, 4, 16, 0, 0, ?, 0, 0, ?)", (dispatch, dispatch, 1000 * dispatch, 1000 * dispatch + 8000,
                                                           100 + dispatch, dispatch))
        db.execute("CREATE TABLE pmc_events (id INTEGER, guid TEXT, pmc_id INTEGER, event_id INTEGER, category TEXT, "
                   "name TEXT, nid INTEGER, pid INTEGER, dispatch_id INTEGER, start INTEGER, end INTEGER, duration INTEGER, "
                   "counter_name TEXT, counter_value REAL)")
        for dispatch in (1, 2):
            db.execute("INSERT INTO pmc_events VALUES (?, 'g', 1, ?, 'COUNTER', 'vecCopy', 0, 1, ?, 0, 0, 0, "
                       "'SQ_WAVES', 16384.0)", (dispatch, 100 + dispatch, dispatch))
        db.execute("CREATE TABLE rocpd_metadata (id INTEGER, tag TEXT, value TEXT)")
    return path


def test_rocpd_rocm7_view_columns(tmp_path):
    profile = load_profile(_rocpd_rocm7(tmp_path / "results.db"))
    (kernel,) = profile.kernels
    assert profile.device.name == "AMD Instinct MI300A" and profile.device.sm_count == 228
    assert kernel.grid == (4096, 1, 1) and kernel.block == (256, 1, 1)
    assert kernel.registers_per_thread == 12 and kernel.invocations == 2  # arch 8 + accum 4 (unified on gfx942) and kernel.duration_ns == 8000.0
    assert profile.value(kernel, "SQ_WAVES", origin="raw") == 16384.0


# ---------------------------------------------------------------- Omniperf 1.x workload

# Omniperf 1.x wrote sysinfo.csv with these columns (no real 1.x workload folder is in
# ../shared/realdata; the values are an MI100's as Omniperf 1.0 reported them). The counters
# beside it are the real MI100 v1-backend pmc_perf.csv.
OMNIPERF1_SYSINFO = (
    "workload_name,host_name,host_cpu,host_distro,host_kernel,host_rocmver,date,gpu_soc,numSE,numCU,numSIMD,"
    "waveSize,maxWavesPerCU,maxWorkgroupSize,L1,L2,sclk,mclk,cur_sclk,cur_mclk,L2Banks,name,numSQC,hbmBW,ip_blocks\n"
    "vcopy,host,AMD EPYC,,4.18.0,4.2.0-21,Thu Sep 22 11:07:30 2022 (CDT),gfx908,8,120,4,64,40,1024,16,,1502,1200,300,"
    "1200,32,mi100,48,1228.8,sq\n")


@pytest.fixture
def omniperf1(tmp_path) -> Path:
    folder = tmp_path / "mi100"
    folder.mkdir()
    (folder / "sysinfo.csv").write_text(OMNIPERF1_SYSINFO)
    (folder / "pmc_perf.csv").write_bytes((DATA / "rocprof" / "mi100_v1backend_pmc_perf.csv").read_bytes())
    return folder


def test_omniperf1_workload_folder(omniperf1):
    """The 1.x sysinfo layout (gpu_soc, numCU, name, sclk, mclk) names the device."""
    profile = load_profile(omniperf1)
    assert profile.device.name == "AMD Instinct MI100" and profile.device.arch == "gfx908"
    assert profile.device.sm_count == 120 and profile.device.max_sm_clock_hz == 1502e6
    kernel = profile.kernels[0]
    assert kernel.name.startswith("vecCopy(double*, double*, double*, int, int)") and kernel.grid == (4096, 1, 1)
    assert profile.value(kernel, "launch.sm_count") == 120.0
    # Omniperf 1.x predates partitioned devices: one XCD, as rocprof-compute defines num_xcd there
    assert profile.value(kernel, "num_xcd", origin="raw") == 1.0


def test_omniperf1_sysinfo_alone(omniperf1):
    profile = load_profile(omniperf1 / "sysinfo.csv")
    assert profile.device.name == "AMD Instinct MI100" and profile.device.sm_count == 120
    assert profile.device.memory_clock_hz == 1200e6


def test_damaged_real_file_is_one_line(tmp_path):
    cut = tmp_path / "cut.ncu-rep"
    import lzma

    cut.write_bytes(lzma.decompress((DATA / "ncu" / "v100_miniweather_divtomult.ncu-rep.xz").read_bytes())[:100_000])
    with pytest.raises(ProfileError) as error:
        load_profile(cut)
    assert "\n" not in str(error.value) and "truncated" in str(error.value)
