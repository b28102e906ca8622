"""A PyTorch step profiled with --set full (profiles/step/): the view above one kernel (issue 21)
and run-to-run comparison (issue 23) on a real 46-launch report with identical launches and NVTX
ranges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from keet.cli import cli

STEP = Path(__file__).resolve().parents[1] / "profiles" / "step"
RUN1, RUN2 = STEP / "h100_step.ncu-rep.xz", STEP / "h100_step_run2.ncu-rep.xz"

pytestmark = pytest.mark.slow  # two 76 MB reports


def run(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_explain_groups_identical_launches_and_names_the_nvtx_ranges():
    document = json.loads(run("explain", RUN1, "--format", "json").output)
    assert len(document["kernels"]) == 46
    groups = document["groups"]
    # two identical layers: most kernels of a layer are launched again, with the same
    # configuration, by the other
    assert sum(g["count"] for g in groups) == 46 and len(groups) < 30
    assert max(g["count"] for g in groups) >= 2
    for group in groups:  # a group is one name and one launch configuration
        members = [k for k in document["kernels"] if k["id"] in group["launches"]]
        assert len({(k["name"], tuple(k["grid"] or ()), tuple(k["block"] or ())) for k in members}) == 1
    text = run("explain", RUN1).output
    assert "step/layer0" in text and "step/layer1" in text
    assert len(text.splitlines()) < 300


def test_two_runs_of_the_same_step_are_no_regression_either_way():
    for base, new in ((RUN1, RUN2), (RUN2, RUN1)):
        result = run("compare", base, new, "--format", "json")
        assert result.exit_code == 0, result.output
        document = json.loads(result.output)
        kernels = [k for comparison in document["profiles"] for k in comparison["kernels"]]
        assert len(kernels) > 20 and not any(k["status"] == "regression" for k in kernels)


def test_a_group_of_different_work_is_not_noise():
    """Launches of one name and configuration that do different work (two GEMM shapes of one
    tile configuration) are not repeats: their difference is not the group's noise."""
    document = json.loads(run("compare", RUN1, RUN2, "--format", "json").output)
    kernels = [k for comparison in document["profiles"] for k in comparison["kernels"]]
    assert all(k["noise"]["value"] < 0.2 for k in kernels), [(k["name"], k["noise"]) for k in kernels if k["noise"]["value"] >= 0.2]
