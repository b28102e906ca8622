"""perfmodel CLI: gpus, predict (JSON contract), validate, and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import shared_profiles

PROFILES = Path(__file__).resolve().parents[1] / "profiles"


def perfmodel(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfmodel.cli", *map(str, args)], capture_output=True, text=True, timeout=300, check=False)


def test_gpus_lists_the_brief_ids_and_shows_provenance():
    listing = perfmodel("gpus", "--format", "json")
    assert {g["id"] for g in json.loads(listing.stdout)} == {"h100", "h200", "b200", "a100", "mi300a", "mi300x", "mi250x"}
    shown = json.loads(perfmodel("gpus", "--show", "h200", "--format", "json").stdout)
    params = {p["name"]: p for p in shown["params"]}
    assert params["sm_count"]["value"] == 132 and params["dram_bandwidth_bytes_per_s"]["value"] == 4.8e12
    assert all(p["source"] in ("vendor", "microbenchmark", "publication", "derived") and p["ref"] for p in shown["params"])


def test_predict_json_contract():
    result = perfmodel("predict", PROFILES / "h100" / "ncu" / "dram_triad.ncu-rep.xz", "--gpu", "h200", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["gpu"] == "h200"
    (kernel,) = document["kernels"]
    assert set(kernel) >= {"name", "predicted_ns", "bound", "breakdown", "inputs"}
    # the bound is the largest component; imperfect overlap can only add to it
    assert kernel["bound"] == "dram" and kernel["breakdown"]["dram"] == max(kernel["breakdown"].values())
    assert kernel["predicted_ns"] >= kernel["breakdown"]["dram"]
    # Same bytes over the H200's higher bandwidth: faster than on the H100.
    on_h100 = json.loads(perfmodel("predict", PROFILES / "h100" / "ncu" / "dram_triad.ncu-rep.xz", "--gpu", "h100", "--format", "json").stdout)
    assert kernel["predicted_ns"] < on_h100["kernels"][0]["predicted_ns"]


@pytest.mark.parametrize("args, problem", [(["--gpu", "h900"], "unknown GPU id 'h900'"), (["--gpu", "h100", "--kernel", "nope"], "no kernel matches")])
def test_predict_errors_are_one_line(args, problem):
    result = perfmodel("predict", PROFILES / "h100" / "ncu" / "dram_triad.ncu-rep.xz", *args)
    assert result.returncode == 2 and problem in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # the whole zoo, every setting
def test_validate_reports_every_setting_with_the_naive_baseline(tmp_path: Path):
    result = perfmodel("validate", "--format", "json", "--manifest", str(shared_profiles.zoo_only_profiles(tmp_path)))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert [s["setting"] for s in summary] == ["h100 profile -> h100", "h200 profile -> h200", "h100 profile -> h200", "h200 profile -> h100"]
    for setting in summary:
        assert setting["kernels"] == 32
        assert setting["median_ape"] < setting["naive_median_ape"]
