"""Fusion (keet/diagnosis/fusion.py) on a real PyTorch report: the corpus's before/after pairs
captured on an H100 (profiles/corpus/h100/h100_partpairs.ncu-rep.xz, one NVTX range per case)."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from keet import load_profile
from keet.diagnosis import diagnose, read_ahead
from keet.diagnosis.fusion import FUSIBLE_LIMITERS, chains, fuse, fusions
from keet.explain import explain, to_text
from keet.profile import Profile

PAIRS = Path(__file__).resolve().parents[1] / "profiles" / "corpus" / "h100" / "h100_partpairs.ncu-rep.xz"
GELU = "eager_gelu_add_mul/fp32/67108864"  # (gelu(x) + a) * b over 67,108,864 floats: three launches


@cache
def pairs() -> Profile:
    return load_profile(PAIRS, read_ahead=read_ahead())


def test_a_range_of_several_launches_is_a_chain_and_a_lone_launch_is_not():
    """The three launches of the range (the report's last) and the launch before them, the last
    of another range's chain: alone here, it is no chain."""
    ids = [k.id for k in pairs().kernels if k.attributes.get("nvtx") == GELU]
    around = pairs().kernels[ids[0] - 1: ids[-1] + 2]
    assert len(ids) == 3 and ids == list(range(ids[0], ids[0] + 3))
    found = {name: [d.kernel.id for d in members] for name, members in chains(diagnose(pairs(), around))}
    assert found == {GELU: ids}
    assert around[0].attributes.get("nvtx") not in (None, GELU)


def test_a_launch_bound_by_compute_ends_a_chain():
    """cuDNN's NCHW convolution in one range: a layout conversion the model finds issue-bound, a
    launch-bound one, the L2-bound convolution, an issue-bound conversion back. Only the two in
    the middle form a chain: fusing does not shorten a launch bound by instruction issue."""
    name = "conv2d_nchw/fp16/32x64x56x56k64r3"
    kernels = [k for k in pairs().kernels if k.attributes.get("nvtx") == name]
    diagnoses = diagnose(pairs(), kernels)
    limiters = [d.speed_of_light.component for d in diagnoses]
    assert len(kernels) == 4 and [limiter in FUSIBLE_LIMITERS for limiter in limiters] == [False, True, True, False], limiters
    assert {range_name: [d.kernel.id for d in members] for range_name, members in chains(diagnoses)} == {
        name: [kernels[1].id, kernels[2].id]}


def test_the_intermediates_of_an_eager_expression_are_its_temporaries():
    """gelu(x) is written and read back by the add, the sum by the multiply: two temporaries of
    67,108,864 floats each; x, a, b and the result are not intermediates."""
    kernels = [k for k in pairs().kernels if k.attributes.get("nvtx") == GELU]
    estimate = fuse(pairs(), kernels, GELU)
    assert estimate is not None
    assert estimate.intermediate_bytes == pytest.approx(2 * 67_108_864 * 4, rel=0.02)
    # 5 tensor reads and 3 writes (gelu: x -> y; add: y, a -> z; mul: z, b -> out) become 3 reads
    # and 1 write: the model's time of these DRAM-bound launches about halves
    assert 0.4 < 1 - estimate.fused_ns / estimate.predicted_ns < 0.6
    assert 0 < estimate.recoverable_ns < estimate.measured_ns


def test_fusions_reach_the_json_and_the_text():
    doc = explain(pairs())
    by_range = {f["range"]: f for f in doc["fusions"]}
    assert GELU in by_range and by_range[GELU]["category"] == "fusion" and len(by_range[GELU]["launches"]) == 3
    assert [f["recoverable_ns"] for f in doc["fusions"]] == sorted((f["recoverable_ns"] for f in doc["fusions"]), reverse=True)
    win = doc["where_to_win"]
    assert [w["recoverable_ns"] for w in win] == sorted((w["recoverable_ns"] for w in win), reverse=True)
    assert any("fusion" in w for w in win)
    text = " ".join(to_text(doc, width=100).split())
    assert f"{GELU} (3 launches from [" in text and ": fusion, by the 3 launches of range" in text
    (gelu_range,) = [r for r in doc["nvtx"] if r["range"] == GELU]  # the range's recoverable time is the fusion's
    assert gelu_range["recoverable_ns"] == by_range[GELU]["recoverable_ns"] and doc["fusions"][gelu_range["fusion"]]["range"] == GELU


def test_a_chain_the_model_cannot_weigh_has_no_estimate():
    """A launch without a duration has no speed of light: the chain is not estimated."""
    first, middle, last = [k for k in pairs().kernels if k.attributes.get("nvtx") == GELU]
    kernels = [first, replace(middle, duration_ns=None), last]
    assert fuse(pairs(), kernels, GELU) is None
    assert all(f.range != GELU for f in fusions(pairs(), diagnose(pairs(), kernels)))
