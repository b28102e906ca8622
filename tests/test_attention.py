"""Attention operator by operator (keet/diagnosis/attention.py) on real reports: PyTorch's math
path of scaled_dot_product_attention captured on an H100 (the corpus's sdpa_math case in
profiles/corpus/h100/h100_part0.ncu-rep.xz, its 20 launches read alone), against the flash
attention kernel the corpus measured for the same call."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
import shared_profiles

from keet import load_profile
from keet.diagnosis import diagnose, read_ahead
from keet.diagnosis.attention import LEVER, attentions, spans
from keet.diagnosis.fusion import fusions
from keet.explain import explain, to_text
from keet.profile import Profile

CORPUS = Path(__file__).resolve().parents[1] / "profiles" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
CASE = "sdpa_math/bf16/4x16x512x64"  # causal attention, batch 4, 16 heads, 512 tokens, head dimension 64
LAUNCHES = sorted(k["measured"]["h100"]["report_id"] for k in MANIFEST["kernels"] if k["case"] == CASE)


@cache
def math_path() -> Profile:
    (report,) = {k["measured"]["h100"]["report"] for k in MANIFEST["kernels"] if k["case"] == CASE}
    return load_profile(CORPUS / report, read_ahead=read_ahead(), launches=set(LAUNCHES))


@cache
def estimate():
    (found,) = attentions(diagnose(math_path()))
    return found


def test_the_math_path_is_one_span_from_the_scores_product_to_the_values_product():
    assert len(LAUNCHES) == 20
    ((range_name, span),) = spans(diagnose(math_path()))
    assert range_name == CASE
    first, last = span[0].kernel, span[-1].kernel
    assert "gemm" in first.name and "gemm" in last.name and any("softmax" in d.kernel.name for d in span)
    assert [d.kernel.id for d in span] == list(range(first.id, last.id + 1)) and len(span) == 9


def test_the_scores_never_reach_memory_and_the_estimate_is_a_bound_flash_attention_approaches():
    found = estimate()
    assert found.lever == LEVER and found.range == CASE
    # the scores in FP32: 4 x 16 x 512 x 512 x 4 bytes = 67 MB, written by the first product
    # and written or read by the launches after it: several times that comes off
    assert found.intermediate_bytes > 4 * 67.1e6
    # flash attention for the same call, measured by CUPTI (the corpus's sdpa_flash case):
    # the fused kernel's speed of light is below it, and within a small factor
    flash = MANIFEST["cases"][CASE.replace("sdpa_math", "sdpa_flash")]["measured"]["h100"]["kernels_isolated_ns"]
    assert found.fused_ns < flash < 4 * found.fused_ns
    assert found.share > 0.9 and found.recoverable_ns == found.measured_ns - found.fused_ns


def test_the_attention_replaces_the_chains_inside_it_and_reaches_the_json_and_the_text():
    listed = fusions(math_path(), diagnose(math_path()))
    spanned = set(estimate().launches)
    assert [f.lever for f in listed if set(f.launches) & spanned] == [LEVER]
    document = explain(math_path())
    entry = next(f for f in document["fusions"] if f["lever"] == LEVER)
    assert "scaled_dot_product_attention" in entry["suggestion"] and entry["recoverable_ns"] == estimate().recoverable_ns
    assert "one fused attention kernel" in to_text(document, width=100)


def test_no_attention_without_a_softmax_between_two_products():
    """The pairs report's matrix products (mm, conv) and softmaxes are in ranges of their own."""
    pairs = shared_profiles.read_ahead_once(CORPUS / "h100" / "h100_partpairs.ncu-rep.xz")
    assert attentions(diagnose(pairs)) == []


def test_the_agents_where_to_win_tool_gives_the_attention_lever():
    from keet.llm.tools import ProfileTools

    result = ProfileTools(math_path()).where_to_win()
    (entry,) = [f for f in result["fusions"] if f["lever"] == LEVER]
    assert entry["launches"] == estimate().launches and "flash" in entry["suggestion"]
    assert CASE not in entry["recoverable_by"]  # keet's words only: the range's name stays fenced in "range"


@pytest.mark.slow  # a report of the call's 20 launches (figures for each)
def test_the_report_names_the_attention_row_and_its_lever():
    from keet.report import build, render

    page = render(build([math_path()]))
    section = page[page.index('data-section="fusion"'):]
    assert "one fused attention kernel" in section and "scaled_dot_product_attention" in section
