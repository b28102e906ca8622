"""keet explain: the JSON contract, ranking output, grounding of every number, reduced captures."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import shared_profiles
from grounding import explanation_numbers, grounded

from keet import load_profile
from keet.explain import explain, to_text
from keet.rules import KernelView
from keet.rules.base import OPCODE_TABLE

PROFILES = Path(__file__).resolve().parents[1] / "profiles"


@cache
def document(gpu: str) -> dict:
    return explain(shared_profiles.zoo(gpu))


def opcode_count(profile, kernel_id: int, metric: str) -> tuple[float] | None:
    """An opcode's count in the kernel's per-opcode SASS table, as the mechanism checks cite it
    (sass__inst_executed_per_opcode[HMMA], keet.rules.base.KernelView.opcode_evidence)."""
    if not (metric.startswith(f"{OPCODE_TABLE}[") and metric.endswith("]")):
        return None
    table = KernelView(profile, profile.kernel(kernel_id)).opcodes() or {}
    opcode = metric[len(OPCODE_TABLE) + 1 : -1]
    return (table.get(opcode, 0.0),) if table else None


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_every_number_in_an_explanation_is_evidence_from_the_profile(gpu):
    profile = shared_profiles.zoo(gpu)
    checked = 0
    for entry in document(gpu)["kernels"]:
        values = profile.values(entry["id"])
        raw = profile.values(entry["id"], origin="raw")
        for finding in entry["diagnosis"]:
            evidence = finding["evidence"]
            for item in evidence:  # evidence values are the profile's own numbers
                stored = values.get(item["metric"]) or raw.get(item["metric"]) or opcode_count(profile, entry["id"], item["metric"])
                assert stored is not None and stored[0] == item["value"], (entry["name"], item)
            candidates = [e["value"] for e in evidence] + [e["compared_with"] for e in evidence if "compared_with" in e]
            for token in explanation_numbers(finding["explanation"]):
                assert grounded(token, candidates), (entry["name"], finding["category"], token, finding["explanation"])
                checked += 1
    assert checked > 50


def test_json_contract_shape():
    doc = document("h100")
    assert set(doc) >= {"source", "format", "device", "kernels"}
    # diagnosis v2: kernels rank by recoverable time (docs/rules.md), the longest first among equals
    recoverable = [k["recoverable_ns"] or 0.0 for k in doc["kernels"]]
    assert recoverable == sorted(recoverable, reverse=True)
    for kernel in doc["kernels"]:
        assert set(kernel) >= {"id", "name", "duration_ns", "diagnosis", "speed_of_light", "verdict", "recoverable_ns"}
        assert set(kernel["speed_of_light"]) >= {"attainable_ns", "limiter", "headroom_ns", "fraction"}
        assert kernel["verdict"]["text"]
        impacts = [f["impact"] for f in kernel["diagnosis"]]
        for finding in kernel["diagnosis"]:
            assert set(finding) >= {"category", "impact", "confidence", "evidence", "explanation", "suggestions", "recoverable_ns"}
            assert 0 < finding["impact"] <= 1 and 0 < finding["confidence"] <= 1
            assert finding["suggestions"] and finding["explanation"]
            assert all(set(e) >= {"metric", "value", "unit"} for e in finding["evidence"])
        assert impacts  # every zoo kernel has a bottleneck


def test_source_lines_name_the_hot_line():
    doc = document("h100")
    naive = next(k for k in doc["kernels"] if k["name"] == "transpose_naive_kernel")
    finding = naive["diagnosis"][0]
    assert finding["category"] == "uncoalesced_global"
    line = finding["source_lines"][0]
    assert line["file"].endswith("transpose_naive.cu") and line["line"] == 18 and "strided store" in line["text"]


@pytest.mark.parametrize("capture", ["zoo_all_sol", "zoo_all_basic", "zoo_all_metrics"])
def test_reduced_captures_say_what_is_missing(capture):
    profile = load_profile(PROFILES / "h100" / "reduced" / f"{capture}.ncu-rep.xz")
    doc = explain(profile)
    kernel = next(k for k in doc["kernels"] if k["name"] == "transpose_naive_kernel")
    not_assessed = {n["category"] for n in kernel["not_assessed"]}
    assert "uncoalesced_global" in not_assessed  # needs source counters, which these captures lack
    assert all(n["missing"] and n["collect"].startswith("--") for n in kernel["not_assessed"])
    assert "uncoalesced_global" not in [f["category"] for f in kernel["diagnosis"]]
    text = to_text(doc)
    assert "Not assessed" in text and "Collect with: ncu --section" in text


def test_cli_top_and_formats():
    report = PROFILES / "h100" / "ncu" / "smem_bank_conflict.ncu-rep.xz"
    run = lambda *args: subprocess.run([sys.executable, "-m", "keet.cli", "explain", str(report), *args], capture_output=True, text=True, check=False)
    single = json.loads(run("--format", "json", "--top", "1").stdout)
    assert [f["category"] for f in single["kernels"][0]["diagnosis"]] == ["shared_bank_conflicts"]
    markdown = run("--format", "markdown").stdout
    assert "### 1. shared_bank_conflicts" in markdown and "**What to change**" in markdown
    text = run().stdout
    assert "1. shared_bank_conflicts" in text and "tile[32][33]" in text
