"""The real-world corpus (profiles/corpus/): its manifest, its fixed split, its reports.

The fast tests check the manifest against itself and the split rule; the slow ones load every
corpus report and check each manifest kernel's identity and launch against it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiles.corpus.split import split_of

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "profiles" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
KERNELS = MANIFEST["kernels"]


def test_corpus_is_large_and_written_by_others():
    assert len(KERNELS) >= 150
    # every case is a PyTorch operator call: ATen, cuBLAS, cuDNN, CUB, flash attention, Triton
    assert sum(k["origin"].startswith("PyTorch ") for k in KERNELS) >= 100
    assert {"aten", "cublas", "cudnn", "cub", "triton"} <= {k["library"] for k in KERNELS}


def test_every_kernel_timed_on_both_gpus_and_profiled():
    for kernel in KERNELS:
        for gpu in ("h100", "h200"):
            measured = kernel["measured"][gpu]
            assert 0 < measured["isolated_min_ns"] <= measured["isolated_ns"] <= measured["isolated_max_ns"], kernel["id"]
            assert 0 < measured["back_to_back_min_ns"] <= measured["back_to_back_ns"] <= measured["back_to_back_max_ns"], kernel["id"]
        assert any("report" in kernel["measured"][gpu] for gpu in ("h100", "h200")), kernel["id"]


def test_split_is_the_committed_hash_rule():
    committed = json.loads((CORPUS / "split.json").read_text())["groups"]
    assert all(split_of(group) == side for group, side in committed.items())
    for kernel in KERNELS:
        assert kernel["split"] == committed[kernel["group"]] == split_of(kernel["group"]), kernel["id"]
    sides = {k["split"] for k in KERNELS}
    assert sides == {"dev", "validation"}
    share = sum(k["split"] == "validation" for k in KERNELS) / len(KERNELS)
    assert 0.15 < share < 0.5


def test_one_group_never_straddles_the_split():
    sides: dict[str, set[str]] = {}
    for kernel in KERNELS:
        sides.setdefault(kernel["group"], set()).add(kernel["split"])
    assert all(len(s) == 1 for s in sides.values())


def test_pairs_refer_to_corpus_cases_and_record_measured_gains():
    pairs = MANIFEST["pairs"]
    assert len(pairs) >= 20
    for pair in pairs:
        assert pair["before"] in MANIFEST["cases"] and pair["after"] in MANIFEST["cases"]
        assert set(pair["speedup"]) == {"h100", "h200"}
        assert all(s > 0 for s in pair["speedup"].values())


def test_corpus_size_budget():
    size = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    assert size < 60 * 2**20


@pytest.mark.slow
@pytest.mark.parametrize("report", [r for g in MANIFEST["gpus"].values() for r in g["reports"]])
def test_every_report_holds_its_manifest_kernels(report):
    from keet.ingest import load_profile

    profile = load_profile(CORPUS / report)
    gpu = report.split("/")[0]
    assert MANIFEST["gpus"][gpu]["device"] == profile.device.name
    entries = [k for k in KERNELS if k["measured"].get(gpu, {}).get("report") == report]
    assert len(entries) == len(profile.kernels)
    for entry in entries:
        measured = entry["measured"][gpu]
        kernel = profile.kernels[measured["report_id"]]
        # a library may launch another configuration of the same call on another GPU
        launch = measured.get("launch", entry["launch"])
        assert kernel.name == measured.get("name", entry["name"])
        assert list(kernel.grid) == launch["grid"] and list(kernel.block) == launch["block"]
        assert kernel.registers_per_thread == launch["registers"]
        assert kernel.duration_ns == pytest.approx(measured["profiled_ns"])


@pytest.mark.slow
def test_the_untraced_waits_per_request_is_the_dev_splits_traced_median():
    """The latency term's share of load requests taken as waits where a profile has no SASS is
    the median of what the SASS traced on the dev split's H100 kernels (work counts, not times)."""
    from perfmodel.terms.latency import UNTRACED_WAITS_PER_REQUEST
    from perfmodel.validate_corpus import corpus_features, traced_waits_per_request

    h100_only = {**MANIFEST, "root": str(CORPUS), "gpus": {"h100": MANIFEST["gpus"]["h100"]}}
    median, kernels = traced_waits_per_request(h100_only, corpus_features(h100_only))
    assert kernels >= 150
    assert UNTRACED_WAITS_PER_REQUEST == pytest.approx(median, abs=0.005)
