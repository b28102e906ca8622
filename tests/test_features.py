"""Model features are work counts: perturbing every time-like metric leaves them unchanged."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from keet import load_profile
from perfmodel.features import WORK_COUNTS, features, pipe_of, raw_metrics

PROFILES = Path(__file__).resolve().parents[1] / "profiles"
# Families of metrics that measure time (or rates over time) of the kernel being predicted.
TIME_LIKE = re.compile(r"duration|cycles|clock|per_second|throughput|_pct|pct_of_peak|\.pct$|stall|issue\.|ipc|per_cycle|latency|hz|frequency", re.IGNORECASE)


@pytest.fixture(scope="module")
def profile():
    return load_profile(PROFILES / "h100" / "zoo_all.ncu-rep.xz")


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


def test_reading_only_the_model_metrics_gives_the_same_features(profile):
    """perfmodel predict loads only raw_metrics(): a tenth of the report, same features."""
    subset = load_profile(PROFILES / "h100" / "zoo_all.ncu-rep.xz", metrics=raw_metrics())
    assert subset.metrics["metric"].nunique() < profile.metrics["metric"].nunique() / 4
    assert [features(subset, k).as_dict() for k in subset.kernels] == [features(profile, k).as_dict() for k in profile.kernels]
