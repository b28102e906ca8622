"""Model features are work counts: perturbing every time-like metric leaves them unchanged."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import shared_profiles

from keet import load_profile
from perfmodel.features import (
    WORK_COUNTS,
    features,
    ncu_raw_metrics,
    pipe_of,
    raw_metrics,
)

PROFILES = Path(__file__).resolve().parents[1] / "profiles"
# Families of metrics that measure time (or rates over time) of the kernel being predicted.
TIME_LIKE = re.compile(r"duration|cycles|clock|per_second|throughput|_pct|pct_of_peak|\.pct$|stall|issue\.|ipc|per_cycle|latency|hz|frequency", re.IGNORECASE)


@pytest.fixture(scope="module")
def profile():
    return shared_profiles.zoo("h100")


def test_allow_list_has_no_time_like_metric():
    for feature, metric in WORK_COUNTS.items():
        assert not TIME_LIKE.search(metric) and not TIME_LIKE.search(feature), (feature, metric)


def test_perturbing_time_like_metrics_does_not_move_features(profile):
    before = [features(profile, k).as_dict() for k in profile.kernels]
    perturbed = copy.copy(profile)
    table = profile.metrics.copy()
    time_like = table["metric"].str.contains(TIME_LIKE) | table["unit"].isin(["ns", "hz", "cycle", "%"])
    assert time_like.sum() > 1000
    table.loc[time_like, "value"] = table.loc[time_like, "value"] * 7.0 + 3.0
    perturbed.metrics = table
    perturbed._by_kernel = None
    after = [features(perturbed, k).as_dict() for k in perturbed.kernels]
    assert after == before


def test_counts_match_the_profile(profile):
    f = features(profile, profile.kernel("sgemm_tiled_kernel"))
    assert f.flops["fp32"] == 2 * 2048**3  # 2 FLOP per FFMA, M = N = K = 2048
    assert f.grid_blocks == 256 and f.threads_per_block == 256 and f.registers_per_thread >= 121
    assert f.warp_instructions_by_pipe["fp32"] == profile.kernel("sgemm_tiled_kernel").attributes["inst_executed_per_opcode"]["FFMA"]
    assert f.barriers > 0
    assert f.counts["dram_bytes_read"] == profile.value(profile.kernel("sgemm_tiled_kernel"), "dram.bytes_read")


def test_every_zoo_opcode_has_a_pipe(profile):
    unknown = {op for k in profile.kernels for op in k.attributes.get("inst_executed_per_opcode", {}) if pipe_of(op) == "other"}
    assert not unknown


@pytest.mark.parametrize("opcode, pipe", [("FFMA", "fp32"), ("DFMA.RM", "fp64"), ("MUFU.EX2", "xu"), ("HMMA.16816.F32", "tensor"),
                                          ("LDG.E.128", "lsu"), ("IMAD.WIDE", "int_fma"), ("UIADD3", "uniform"), ("BAR.SYNC", "barrier")])
def test_pipe_of(opcode, pipe):
    assert pipe_of(opcode) == pipe


@pytest.mark.slow  # reads the combined zoo report again (4 s); the perturbation test above keeps the default tier honest
def test_reading_only_the_model_metrics_gives_the_same_features(profile):
    """perfmodel predict loads only raw_metrics(): a tenth of the report, same features."""
    subset = load_profile(PROFILES / "h100" / "zoo_all.ncu-rep.xz", metrics=raw_metrics())
    assert subset.metrics["metric"].nunique() < profile.metrics["metric"].nunique() / 4
    assert [features(subset, k).as_dict() for k in subset.kernels] == [features(profile, k).as_dict() for k in profile.kernels]


# The raw Nsight Compute metrics a feature may come from, each with why it is work and not time.
# The leak test below scales every other raw metric of a real report BEFORE the canonical metrics
# are derived, so no canonical metric or launch fact built from a time-like input can reach a feature.
_DRAM = "DRAM bytes moved: traffic, fixed by the kernel's accesses and the caches, not by how long they took"
_L2 = "L2 sectors by operation: requests the L2 served, a count"
_L1 = "L1/TEX sectors, requests or wavefronts of the LSU pipe: accesses counted, not their duration"
_XBAR = "bytes between L1 and L2 (the crossbar): traffic, a count"
_INST = "instructions executed (warp- or thread-level): work, not issue rate"
_ATOM = "atomic instructions executed: work"
_SHAPE = "bytes the threads used per sector: the access pattern's shape (a ratio of two counts), not a time"
WORK_ALLOWED = {
    "dram__bytes_read.sum": _DRAM, "dram__bytes_write.sum": _DRAM, "dram__bytes.sum": _DRAM + " (total, the split's fallback)",
    "lts__t_sectors_op_read.sum": _L2, "lts__t_sectors_op_write.sum": _L2, "lts__t_sectors_op_atom.sum": _L2,
    "lts__t_sectors_op_red.sum": _L2, "lts__t_requests_srcunit_tex_op_read.sum": _L2 + " (read requests: one per line a request touches)", "lts__t_sectors_srcunit_tex_op_read.sum": _L2, "lts__t_sectors_srcunit_tex_op_write.sum": _L2,
    "lts__t_sectors_srcunit_tex_op_atom_dot_alu.sum": _L2, "lts__t_sectors_srcunit_tex_op_atom_dot_cas.sum": _L2,
    "lts__t_sectors_srcunit_tex_op_red.sum": _L2, "lts__t_sectors.max": _L2 + " (of the busiest slice: where atomics pile up)",
    "l1tex__m_xbar2l1tex_read_bytes.sum": _XBAR, "l1tex__m_l1tex2xbar_write_bytes.sum": _XBAR,
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": _L1, "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": _L1,
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": _L1, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": _L1,
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum": _L1, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum": _L1,
    "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum": _L1 + " (one per cache line a request touches)",
    "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_st.sum": _L1,
    "l1tex__t_output_wavefronts_pipe_lsu_mem_local_op_ld.sum": _L1, "l1tex__t_output_wavefronts_pipe_lsu_mem_local_op_st.sum": _L1,
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": _L1, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": _L1,
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": _L1 + " (extra wavefronts of bank conflicts)",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": _L1, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": _L1,
    "smsp__inst_executed.sum": _INST, "sm__inst_executed.sum": _INST, "smsp__thread_inst_executed.sum": _INST,
    "thread_inst_executed": _INST + " (older reports' name)",
    "smsp__inst_executed_op_global_atom.sum": _ATOM, "smsp__inst_executed_op_global_red.sum": _ATOM,
    "smsp__inst_executed_op_generic_atom_dot_alu.sum": _ATOM, "smsp__inst_executed_op_generic_atom_dot_cas.sum": _ATOM,
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio": _SHAPE,
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio": _SHAPE,
}
_LAUNCH = "launch configuration chosen by the program, not measured"
LAUNCH_AND_DEVICE_ALLOWED = {
    **{f"launch__{kind}_dim_{axis}": _LAUNCH + " (grid and block shape)" for kind in ("grid", "block") for axis in "xyz"},
    "launch__registers_per_thread": _LAUNCH + " (registers per thread, from the compiler)",
    "launch__shared_mem_per_block_static": _LAUNCH + " (static shared memory, from the compiler)",
    "launch__shared_mem_per_block_dynamic": _LAUNCH + " (dynamic shared memory, the launch's argument)",
    "launch__device_id": "which GPU ran the launch: an identity, not a quantity",
    "device__attribute_l2_cache_size": "L2 capacity of the GPU the work was counted on: a hardware constant retargeting needs",
}


def test_work_allow_list_is_the_models_raw_metrics():
    """Every raw metric a work count is derived from is listed with its reason above, and only those."""
    assert set(WORK_ALLOWED) == ncu_raw_metrics()
    assert not any(TIME_LIKE.search(name) for name in WORK_ALLOWED)


def test_perturbing_every_other_raw_metric_before_derivation_does_not_move_features(profile, monkeypatch):
    """Scale every raw metric of the real report that is not an allowed work count, launch fact or
    device constant by 7 (+3) where the reader hands its raw metrics over (keet.ingest.ncu_rep:
    the device, the kernels' launch facts and every canonical metric are built from them after
    this point, by the reader's own code), and check that no feature moves."""
    from keet.ingest import ncu_rep

    allowed = set(WORK_ALLOWED) | set(LAUNCH_AND_DEVICE_ALLOWED)
    original = ncu_rep._profile_from_records
    scaled: set[str] = set()

    def perturbed(path, native, records):
        for record in records:
            for name, (value, unit) in list(record.raw.items()):
                if name not in allowed:
                    record.raw[name] = (value * 7.0 + 3.0, unit)
                    scaled.add(name)
        return original(path, native, records)

    monkeypatch.setattr(ncu_rep, "_profile_from_records", perturbed)
    changed = load_profile(PROFILES / "h100" / "zoo_all.ncu-rep.xz")
    assert len(scaled) > 1500 and {"gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "launch__waves_per_multiprocessor",
                                   "device__attribute_clock_rate", "dram__bytes.sum.per_second"} <= scaled
    kernel, before_kernel = changed.kernel("triad_kernel"), profile.kernel("triad_kernel")
    assert changed.value(kernel, "duration") == pytest.approx(7 * profile.value(before_kernel, "duration") + 3, rel=1e-6)  # time moved
    assert changed.value(kernel, "dram.bytes_read") == profile.value(before_kernel, "dram.bytes_read")  # work did not
    assert [features(changed, k).as_dict() for k in changed.kernels] == [features(profile, k).as_dict() for k in profile.kernels]
