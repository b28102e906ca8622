"""The .ncu-rep reader on real reports (V100 / ncu 2022.2, RTX 3070 / ncu 2022.3) and broken ones."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keet import ProfileError, load_profile
from keet.diagnosis import read_ahead
from keet.explain import explain
from keet.ingest import detect

DATA = Path(__file__).parent / "data" / "ncu"
V100 = DATA / "v100_miniweather_divtomult.ncu-rep.xz"
RTX3070 = DATA / "rtx3070_cuvectoradddrv.ncu-rep"


@pytest.fixture(scope="module")
def v100():
    return load_profile(V100)


@pytest.fixture(scope="module")
def rtx3070():
    return load_profile(RTX3070)


def test_format_is_detected_from_content_not_name(tmp_path):
    renamed = tmp_path / "looks_like.csv"
    renamed.write_bytes(RTX3070.read_bytes())
    assert detect(renamed).id == "ncu-rep"
    assert load_profile(renamed).kernels[0].function_name == "VecAdd_kernel"


def test_rtx3070_device_and_kernel(rtx3070):
    device = rtx3070.device
    assert device.name == "NVIDIA GeForce RTX 3070"
    assert device.compute_capability == (8, 6) and device.arch == "sm_86"
    assert device.sm_count == 46
    assert device.l2_bytes == 4 * 1024 * 1024
    assert device.sm_clock_hz == pytest.approx(1.4176e9, rel=1e-3)
    (kernel,) = rtx3070.kernels
    assert kernel.name == "VecAdd_kernel"
    assert kernel.grid == (196, 1, 1) and kernel.block == (256, 1, 1)
    assert kernel.registers_per_thread == 16
    assert kernel.duration_ns == 3232.0


def test_rtx3070_raw_and_canonical_metrics_agree(rtx3070):
    kernel = rtx3070.kernels[0]
    assert rtx3070.value(kernel, "gpu__time_duration.sum", origin="raw") == 3232.0
    assert rtx3070.value(kernel, "duration") == 3232.0
    assert rtx3070.value(kernel, "sol.dram_pct") == pytest.approx(31.2779, rel=1e-4)
    assert rtx3070.value(kernel, "occupancy.achieved_pct") == pytest.approx(54.3136, rel=1e-4)
    assert rtx3070.value(kernel, "occupancy.limit_warps") == 6
    # The small set lacks DRAM byte counters: absent, not zero.
    assert rtx3070.value(kernel, "dram.bytes") is None


def test_v100_all_kernels_in_order_with_launch(v100):
    names = [k.name for k in v100.kernels]
    assert names == [
        "set_halo_values_x_396_gpu",
        "set_halo_values_x_419_gpu",
        "compute_tendencies_x_279_gpu",
        "compute_tendencies_x_309_gpu",
        "semi_discrete_step_232_gpu",
    ]
    assert v100.device.name == "Tesla V100-SXM2-32GB"
    assert v100.device.compute_capability == (7, 0)
    longest = max(v100.kernels, key=lambda k: k.duration_ns)
    assert longest.name == "semi_discrete_step_232_gpu"
    assert longest.grid == (65535, 1, 1) and longest.block == (128, 1, 1)
    assert longest.registers_per_thread == 37


def test_chosen_launches_alone_keep_their_ids_and_values(v100):
    """load_profile(launches=...) reads those actions alone, each as the whole read has it."""
    chosen = load_profile(V100, launches={1, 4})
    assert [k.id for k in chosen.kernels] == [1, 4]
    for kernel in chosen.kernels:
        whole = v100.kernel(kernel.id)
        assert (kernel.name, kernel.grid, kernel.block) == (whole.name, whole.grid, whole.block)
        assert chosen.values(kernel, origin="raw") == v100.values(whole, origin="raw")
        assert chosen.values(kernel) == v100.values(whole)
    # (the device's SM clock is the first launch read's: not compared)
    assert (chosen.device.name, chosen.device.sm_count, chosen.device.l2_bytes) == (v100.device.name, v100.device.sm_count, v100.device.l2_bytes)
    with pytest.raises(ProfileError, match="no launch 5 .* 0-4"):
        load_profile(V100, launches={5})


def test_v100_derived_canonical_metrics(v100):
    kernel = v100.kernels[0]
    read = v100.value(kernel, "dram__bytes_read.sum", origin="raw")
    write = v100.value(kernel, "dram__bytes_write.sum", origin="raw")
    assert v100.value(kernel, "dram.bytes") == read + write == pytest.approx(1573120.0)
    sectors = v100.value(kernel, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", origin="raw")
    requests = v100.value(kernel, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", origin="raw")
    assert v100.value(kernel, "global.load_sectors_per_request") == pytest.approx(sectors / requests)
    assert v100.value(kernel, "stall.long_scoreboard") is not None


def test_v100_rule_results_kept(v100):
    rules = v100.kernels[2].rule_results
    assert len(rules) == 14  # 15 in the report, one of them empty (table only)
    pattern = [r for r in rules if r.rule_id == "MemoryCacheAccessPattern"]
    assert pattern and pattern[0].focus_metrics[0]["name"] == "Sectors per L1TEX Request"
    assert {r.kind for r in rules} <= {"none", "ok", "warning", "optimization", "error"}


def test_v100_source_counters_attribute_lines(v100):
    source = v100.kernels[2].source
    assert source is not None
    assert "inst_executed" in source.counter_names()
    assert "smsp__pcsamp_warps_issue_stalled_long_scoreboard" in source.counter_names()
    lines = source.by_line().sort_values("inst_executed", ascending=False)
    top = lines.iloc[0]
    assert top["file"].endswith("miniWeather_mpi_openacc.F90")
    assert top["line"] == 285
    assert "stencil(s) = state(i-hs-1+s,k,ll)" in top["text"]
    # Program counters are offsets from the function start, multiples of the 16-byte SASS word.
    assert (source.instructions["pc"] % 16 == 0).all()
    assert source.instructions["inst_executed"].sum() == pytest.approx(v100.value(v100.kernels[2], "inst.executed"))


def test_instruction_mix_per_opcode_kept(v100):
    mix = v100.kernels[2].attributes["inst_executed_per_opcode"]
    assert mix["DFMA"] > 0
    assert sum(mix.values()) == pytest.approx(v100.value(v100.kernels[2], "inst.executed"))


@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.6, 0.9, 0.999])
def test_truncated_report_is_an_error_not_fewer_kernels(tmp_path, fraction):
    data = lzma.decompress(V100.read_bytes())
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(ProfileError, match="truncated or corrupt"):
        load_profile(cut)


def test_truncated_compressed_report(tmp_path):
    cut = tmp_path / "cut.ncu-rep.xz"
    cut.write_bytes(V100.read_bytes()[:40000])
    with pytest.raises(ProfileError, match="truncated or corrupt"):
        load_profile(cut)


def test_magic_only_report(tmp_path):
    bad = tmp_path / "magic.ncu-rep"
    bad.write_bytes(b"NVR\x00" + b"\x02\x00\x00\x00\x08\x07" + b"\xff" * 64)
    with pytest.raises(ProfileError):
        load_profile(bad)


@pytest.mark.slow  # 40 damaged reports, each read by the native reader
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 48170), st.integers(0, 255)), min_size=1, max_size=24))
def test_fuzzed_report_loads_or_fails_cleanly(tmp_path, capfd, flips):
    """Damaged payloads: a Profile or one ProfileError, never another exception or native noise."""
    data = bytearray(RTX3070.read_bytes())
    for position, value in flips:
        data[position % len(data)] = value
    path = tmp_path / "fuzzed.ncu-rep"
    path.write_bytes(bytes(data))
    try:
        profile = load_profile(path)
        for kernel in profile.kernels:
            assert kernel.source is None or len(kernel.source.instructions) >= 0  # the lazy part fails cleanly too
    except ProfileError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
    assert "Can't parse message" not in capfd.readouterr().err


SGEMM_SECTIONS = lzma.decompress((DATA / "h200_sgemm_tiled_sections.ncu-rep.xz").read_bytes())  # with source counters


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, len(SGEMM_SECTIONS) - 1), st.integers(0, 255)), min_size=1, max_size=24))
def test_fuzzed_report_read_ahead_loads_or_fails_cleanly(tmp_path, capfd, flips):
    """The same with the per-instruction counters and SASS read with the metrics (keet explain's
    read-ahead): a damaged source view fails its read as one ProfileError, never the load."""
    data = bytearray(SGEMM_SECTIONS)
    for position, value in flips:
        data[position] = value
    path = tmp_path / "fuzzed.ncu-rep"
    path.write_bytes(bytes(data))
    try:
        profile = load_profile(path, read_ahead=read_ahead())
        for kernel in profile.kernels:
            source = kernel.source_columns(sorted(read_ahead().columns), locations=True)
            assert source is None or len(source.instructions) >= 0
            assert explain(profile)["kernels"]
    except ProfileError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
    assert "Can't parse message" not in capfd.readouterr().err


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(1, 48170))
def test_any_truncation_is_reported(tmp_path, cut):
    """A cut is an error, except one exactly between two blocks after every kernel's data
    (found by this test at byte 46,996 of 48,171: the trailing blocks hold no kernel data):
    then the profile must be the whole one, never fewer kernels or metrics."""
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes(RTX3070.read_bytes()[:cut])
    try:
        cut_profile = load_profile(path)
    except ProfileError:
        return
    whole = load_profile(RTX3070)
    assert [k.name for k in cut_profile.kernels] == [k.name for k in whole.kernels]
    assert cut_profile.metrics.equals(whole.metrics)
