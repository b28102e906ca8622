"""rocpd SQLite and rocprofv3 JSON, and the AMD canonical formulas.

No real rocpd database or rocprofv3 JSON file was available: these tests build files from
the documented shapes (rocprofiler-sdk's rocpd view definitions, data_views.sql; the JSON
fields rocprof-compute's v3_json_to_csv reads), filled with the values of the real MI300A
kernel trace in tests/data/rocprof, so the readers agree with the CSV reader on them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keet import Profile, ProfileError, canonical, load_profile
from keet.ingest import detect

DATA = Path(__file__).parent / "data" / "rocprof"
# Dispatches 1-3 of mi300a_rocm7_kernel_trace.csv: (dispatch, start, end).
VCOPY = [(1, 1986623975868304, 1986623975876596), (2, 1986623975909003, 1986623975914531),
         (3, 1986623975930955, 1986623975936443)]
NAME = "vecCopy(double*, double*, double*, int, int)"


def make_rocpd(path: Path) -> Path:
    """A database with the columns of rocpd's `kernels` and `pmc_events` views and its agent table."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE rocpd_info_agent (id INTEGER, type TEXT, absolute_index INTEGER, name TEXT, "
                   "product_name TEXT, extdata TEXT)")
        db.execute("INSERT INTO rocpd_info_agent VALUES (1, 'CPU', 0, 'AMD EPYC', 'AMD EPYC', '{}')")
        db.execute("INSERT INTO rocpd_info_agent VALUES (2, 'GPU', 2, 'gfx942', 'AMD Instinct MI300A', ?)",
                   (json.dumps({"cu_count": 228, "wave_front_size": 64, "num_xcc": 6, "max_waves_per_cu": 32,
                                "max_engine_clk_fcompute": 2100}),))
        db.execute("CREATE TABLE kernels (id INTEGER, name TEXT, agent_id INTEGER, agent_absolute_index INTEGER, "
                   "dispatch_id INTEGER, kernel_id INTEGER, queue_id INTEGER, start INTEGER, end INTEGER, duration INTEGER, "
                   "event_id INTEGER, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, workgroup_x INTEGER, "
                   "workgroup_y INTEGER, workgroup_z INTEGER, grid_size_x INTEGER, grid_size_y INTEGER, grid_size_z INTEGER, "
                   "lds_size INTEGER, scratch_size INTEGER, sgpr_count INTEGER, arch_vgpr_count INTEGER, "
                   "accum_vgpr_count INTEGER)")
        for dispatch, start, end in VCOPY:
            db.execute("INSERT INTO kernels VALUES (?, ?, 2, 2, ?, 12, 2, ?, ?, ?, ?, 1048576, 1, 1, 256, 1, 1, 4096, 1, 1, "
                       "0, 0, 16, 4, 4)", (dispatch, NAME, dispatch, start, end, end - start, 100 + dispatch))
        db.execute("CREATE TABLE pmc_events (id INTEGER, event_id INTEGER, name TEXT, value REAL)")
        for dispatch, _, _ in VCOPY:
            db.execute("INSERT INTO pmc_events VALUES (?, ?, 'SQ_WAVES', 16384.0)", (dispatch, 100 + dispatch))
            db.execute("INSERT INTO pmc_events VALUES (?, ?, 'GRBM_GUI_ACTIVE', ?)", (10 + dispatch, 100 + dispatch, 6000.0 * dispatch))
        db.execute("CREATE TABLE rocpd_metadata (id INTEGER, tag TEXT, value TEXT)")
    return path


def make_json(path: Path, with_counters: bool = True) -> Path:
    dispatches = [
        {"start_timestamp": start, "end_timestamp": end, "correlation_id": {"internal": dispatch, "external": 0},
         "thread_id": 281643,
         "dispatch_info": {"agent_id": {"handle": 7}, "queue_id": {"handle": 1}, "kernel_id": 12, "dispatch_id": dispatch,
                           "private_segment_size": 0, "group_segment_size": 0,
                           "workgroup_size": {"x": 256, "y": 1, "z": 1}, "grid_size": {"x": 1048576, "y": 1, "z": 1}}}
        for dispatch, start, end in VCOPY
    ]
    counters = [
        {"dispatch_data": {"dispatch_info": d["dispatch_info"], "correlation_id": d["correlation_id"]},
         "thread_id": 281643, "arch_vgpr_count": 4, "sgpr_count": 16, "lds_block_size_v": 0,
         "records": [{"counter_id": {"handle": 1}, "value": 8192.0}, {"counter_id": {"handle": 1}, "value": 8192.0}]}
        for d in dispatches
    ]
    document = {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 281643},
        "agents": [{"id": {"handle": 3}, "type": 1, "node_id": 0, "name": "AMD EPYC"},
                   {"id": {"handle": 7}, "type": 2, "node_id": 2, "name": "gfx942", "product_name": "AMD Instinct MI300A",
                    "cu_count": 228, "wave_front_size": 64, "num_xcc": 6}],
        "counters": [{"id": {"handle": 1}, "agent_id": {"handle": 7}, "name": "SQ_WAVES"}],
        "kernel_symbols": [{"kernel_id": 12, "formatted_kernel_name": NAME, "private_segment_size": 0,
                            "group_segment_size": 0, "arch_vgpr_count": 4, "accum_vgpr_count": 4, "sgpr_count": 16}],
        "buffer_records": {"kernel_dispatch": dispatches},
        "callback_records": {"counter_collection": counters if with_counters else []},
    }]}
    path.write_text(json.dumps(document))
    return path


def test_rocpd_database_through_its_views(tmp_path):
    path = make_rocpd(tmp_path / "results.db")
    assert detect(path).id == "rocprof-db"
    profile = load_profile(path)
    assert profile.format == "rocpd"
    (kernel,) = profile.kernels
    trace = load_profile(DATA / "mi300a_rocm7_kernel_trace.csv").kernels[0]
    assert kernel.name == trace.name and kernel.invocations == trace.invocations == 3
    assert kernel.duration_ns == pytest.approx(trace.duration_ns)
    assert kernel.grid == trace.grid == (4096, 1, 1) and kernel.block == (256, 1, 1)
    assert kernel.registers_per_thread == trace.registers_per_thread == 8
    assert profile.device.name == "AMD Instinct MI300A" and profile.device.arch == "gfx942" and profile.device.sm_count == 228
    assert profile.value(kernel, "SQ_WAVES", origin="raw") == 16384.0
    assert profile.value(kernel, "GRBM_GUI_ACTIVE", origin="raw") == 12000.0  # mean of 6000, 12000, 18000
    assert profile.value(kernel, "cycles_elapsed") == 2000.0  # per XCD: 6 XCDs


def test_rocprofv3_json(tmp_path):
    path = make_json(tmp_path / "results.json")
    assert detect(path).id == "rocprofv3-json"
    profile = load_profile(path)
    (kernel,) = profile.kernels
    assert kernel.name == NAME and kernel.invocations == 3
    assert kernel.attributes["duration_ns_total"] == 8292 + 5528 + 5488
    assert kernel.grid == (4096, 1, 1) and kernel.registers_per_thread == 8
    assert profile.value(kernel, "SQ_WAVES", origin="raw") == 16384.0  # two records of one counter, summed
    assert profile.device.name == "AMD Instinct MI300A" and profile.device.sm_count == 228
    trace_only = load_profile(make_json(tmp_path / "trace.json", with_counters=False))
    assert trace_only.kernels[0].invocations == 3 and trace_only.value(trace_only.kernels[0], "SQ_WAVES", origin="raw") is None


def test_json_without_dispatches_is_a_clear_error(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"rocprofiler-sdk-tool": [{"agents": [], "buffer_records": {}}]}))
    with pytest.raises(Exception, match="holds no kernel dispatch"):
        load_profile(path)


def test_amd_formulas_are_documented_with_sources():
    documented = [m for m in canonical.all_metrics() if m.amd]
    assert len(documented) >= 30
    assert all(m.amd_source for m in documented)
    names = {m.name for m in documented}
    assert {"duration", "dram.bytes_read", "dram.bytes_write", "dram.throughput", "l2.hit_rate_pct", "shared.bank_conflicts",
            "shared.bank_conflicts_per_access", "pipe.tensor_pct", "occupancy.achieved_pct", "amd.valu_util_pct",
            "amd.salu_util_pct", "amd.scratch_per_work_item"} <= names
    assert all(m.name.startswith("amd.") for m in canonical.amd_only())


def test_hbm_bytes_mi300_formula_counts_bubbles_and_32_byte_requests():
    raw = {"TCC_EA0_RDREQ_sum": (1000.0, ""), "TCC_EA0_RDREQ_32B_sum": (100.0, ""), "TCC_BUBBLE_sum": (10.0, ""),
           "TCC_EA0_WRREQ_sum": (500.0, ""), "TCC_EA0_WRREQ_64B_sum": (400.0, ""), "DurationNs": (1000.0, "ns")}
    derived = {name: value for name, value, _ in canonical.derive(raw)}
    # rocprof-compute: 128*bubble + 64*(rdreq - bubble - rdreq_32b) + 32*rdreq_32b
    assert derived["dram.bytes_read"] == 128 * 10 + 64 * (1000 - 10 - 100) + 32 * 100
    assert derived["dram.bytes_write"] == 64 * 400 + 32 * 100
    assert derived["dram.throughput"] == pytest.approx((derived["dram.bytes_read"] + derived["dram.bytes_write"]) * 1e9 / 1000)


def test_lds_conflict_rate_and_utilizations():
    raw = {"SQ_LDS_BANK_CONFLICT": (250.0, "cycle"), "SQ_LDS_IDX_ACTIVE": (1250.0, ""), "SQ_ACTIVE_INST_VALU": (5200.0, ""),
           "SQ_VALU_MFMA_BUSY_CYCLES": (8320.0, "cycle"), "GRBM_GUI_ACTIVE": (800.0, "cycle"), "num_xcd": (8.0, "XCD"),
           "cu_per_gpu": (104.0, "CU"), "TCC_HIT_sum": (30.0, ""), "TCC_MISS_sum": (10.0, "")}
    derived = {name: value for name, value, _ in canonical.derive(raw)}
    assert derived["shared.bank_conflicts_per_access"] == 250 / (1250 - 250)
    assert derived["amd.valu_util_pct"] == pytest.approx(100 * 5200 / (100 * 104))
    assert derived["pipe.tensor_pct"] == pytest.approx(100 * 8320 / (100 * 104 * 4))
    assert derived["l2.hit_rate_pct"] == 75.0
    only_hits = {name for name, _, _ in canonical.derive({"TCC_HIT_sum": (30.0, "")})}
    assert "l2.hit_rate_pct" not in only_hits  # a denominator needs both counters


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["json", "rocpd"]), fraction=st.floats(0, 1), garbage=st.binary(max_size=40), cut_only=st.booleans())
def test_mutated_json_and_rocpd_load_or_fail_cleanly(tmp_path_factory, scratch_file, kind, fraction, garbage, cut_only):
    folder = tmp_path_factory.mktemp(kind)
    original = (make_json(folder / "r.json") if kind == "json" else make_rocpd(folder / "r.db")).read_bytes()
    cut = int(len(original) * fraction)
    damaged = original[:cut] if cut_only else original[:cut] + garbage + original[cut + len(garbage):]
    path = scratch_file(damaged, ".json" if kind == "json" else ".db")
    try:
        profile = load_profile(path)
    except ProfileError as error:
        assert "\n" not in str(error)
        return
    assert isinstance(profile, Profile)


@settings(max_examples=60, deadline=None)
@given(document=st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                             lambda children: st.lists(children, max_size=4) | st.dictionaries(
                                 st.sampled_from(["rocprofiler-sdk-tool", "agents", "kernel_symbols", "counters", "buffer_records",
                                                  "callback_records", "kernel_dispatch", "counter_collection", "dispatch_info",
                                                  "id", "handle", "type", "kernel_id", "records", "value", "grid_size", "x"]),
                                 children, max_size=5), max_leaves=30))
def test_random_rocprofv3_json_structures_fail_cleanly(scratch_file, document):
    path = scratch_file(json.dumps({"rocprofiler-sdk-tool": [document]}), ".json")
    try:
        load_profile(path)
    except ProfileError as error:
        assert "\n" not in str(error)
