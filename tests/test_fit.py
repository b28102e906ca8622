"""perfmodel.fit: parameters fitted from a calibration file's raw sweeps."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfmodel.fit import barrier_cost, chain_overlap_exponent, dram_rates, fitted_parameters, overlap_exponent
from perfmodel.hardware import gpu

CALIB = Path(__file__).resolve().parents[1] / "microbench" / "calib"
SMS, PER_SM, CLOCK, READ, WRITE = 132, 256.0, 1.98e9, 3.0e12, 3.2e12


def _result(bench: str, **fields) -> dict:
    median_ms = fields.pop("median_ms", 1.0)
    return {"bench": bench, "stats": {"rejected": False, "median": median_ms, "n": 20}, **fields}


def _mix_doc(p: float) -> dict:
    """A synthetic mix sweep whose times are exactly the p-norm of its FMA and DRAM bounds."""
    results = [_result("dram", name="read", bytes=2**31, bytes_per_s=READ), _result("dram", name="write", bytes=2**31, bytes_per_s=WRITE)]
    n_bytes = 2**30
    for n in (0, 1, 4, 16, 64, 256, 1024):
        flops = 2.0 * n * n_bytes / 8
        t_fma, t_dram = flops / (PER_SM * SMS * CLOCK), n_bytes / 2 / READ + n_bytes / 2 / WRITE
        seconds = (t_fma**p + t_dram**p) ** (1 / p) if n else t_dram
        results.append(_result("mix", fma_per_element=n, bytes=n_bytes, flops=flops, sm_clock_hz=CLOCK, median_ms=seconds * 1e3))
    return {"results": results, "parameters": {"fp32_flops_per_clk_per_sm": {"value": PER_SM}}}


@pytest.mark.parametrize("p", [1.5, 3.0, 6.0])
def test_overlap_exponent_recovers_the_exponent_of_synthetic_data(p):
    doc = _mix_doc(p)
    fitted = overlap_exponent(doc, gpu("h100"), dram_rates(doc))
    assert fitted["value"] == pytest.approx(p, rel=0.02)
    assert "7 arithmetic intensities" in fitted["from"]


def test_overlap_needs_enough_accepted_points():
    doc = _mix_doc(2.0)
    mix = [r for r in doc["results"] if r["bench"] == "mix"]
    for r in mix[3:]:
        r["stats"]["rejected"] = True
    assert overlap_exponent(doc, gpu("h100"), dram_rates(doc)) is None


def _occupancy_doc(p: float, latency: float = 700.0) -> dict:
    """A synthetic occupancy x vector sweep whose read and copy times are exactly the p-norm of
    the latency term's chain (one wait per 32 x vector bytes of each warp) and the DRAM term."""
    results = [_result("dram", name="read", bytes=2**31, bytes_per_s=READ), _result("dram", name="write", bytes=2**31, bytes_per_s=WRITE)]
    buffer = 2**30
    for kind in ("read", "copy"):
        for warps in (8, 16, 32, 64):
            for bits in (32, 128):
                reads = buffer
                writes = buffer if kind == "copy" else 0
                chain = reads / (SMS * warps * 32 * bits / 8) * latency / CLOCK
                dram = reads / READ + writes / WRITE
                seconds = (chain**p + dram**p) ** (1 / p)
                results.append(_result("dram", name=f"{kind}_v{bits}_w{warps}", sweep="occupancy_vector", kind=kind,
                                       warps_per_sm=warps, vector_bits=bits, bytes=reads + writes, sm_clock_hz=CLOCK,
                                       median_ms=seconds * 1e3))
    return {"results": results, "parameters": {"dram_latency_cycles": {"value": latency}}}


@pytest.mark.parametrize("p", [1.3, 2.0, 4.0])
def test_chain_overlap_exponent_recovers_the_exponent_of_synthetic_data(p):
    doc = _occupancy_doc(p)
    rates = dram_rates(doc)
    fitted = chain_overlap_exponent(doc, gpu("h100"), rates)
    assert fitted["value"] == pytest.approx(p, rel=0.02)
    assert "16 read and copy streams (8-64 warps per SM, 32-128-bit accesses)" in fitted["from"]
    write_only = [r for r in doc["results"] if r.get("kind") == "read"][:3]
    assert chain_overlap_exponent({"results": write_only, "parameters": doc["parameters"]}, gpu("h100"), rates) is None


def test_barrier_line_through_the_sweep():
    sweep = [{"warps_per_block": w, "blocks_per_sm": 1, "cycles_per_barrier": 10 + 3 * w} for w in (1, 2, 4, 8, 16, 32)]
    sweep.append({"warps_per_block": 32, "blocks_per_sm": 2, "cycles_per_barrier": None})  # rejected point: ignored
    fitted = barrier_cost({"sweeps": {"barrier": sweep}})
    assert fitted["barrier_base_cycles"]["value"] == pytest.approx(10)
    assert fitted["barrier_cycles_per_warp"]["value"] == pytest.approx(3)
    assert barrier_cost({"sweeps": {"barrier": sweep[:2]}}) == {}


def test_rejected_dram_streams_are_not_used():
    doc = {"results": [_result("dram", name="read", bytes=2**31, bytes_per_s=READ)]}
    doc["results"][0]["stats"]["rejected"] = True
    assert dram_rates(doc) == {}


@pytest.mark.parametrize("gpu_id", ["h100", "h200"])
def test_fits_of_the_committed_calibrations(gpu_id):
    doc = json.loads((CALIB / f"{gpu_id}_2026-11-21.json").read_text())
    fitted = fitted_parameters(doc, gpu(gpu_id))
    # HBM3/HBM3e read and write streams both reach well over half the vendor peak
    peak = gpu(gpu_id).require("dram_bandwidth_bytes_per_s")
    assert 0.6 * peak < fitted["dram_read_bytes_per_s"]["value"] < peak
    assert 0.6 * peak < fitted["dram_write_bytes_per_s"]["value"] < peak
    # overlap is imperfect (p finite) but closer to the maximum than to the sum
    assert 1.2 < fitted["overlap_exponent"]["value"] < 16
    assert fitted["barrier_cycles_per_warp"]["value"] > 0
    # a warp's waits for its own loads overlap the throughput less than SM and memory work do,
    # and the sweep's streams are nearer their own p than the mix sweep's
    chains = fitted["chain_overlap_exponent"]
    assert 1.0 < chains["value"] < fitted["overlap_exponent"]["value"]
    rms, at_mix = (float(x) for x in re.search(r"rms log error (\d\.\d+), at the mix sweep's p [\d.]+: (\d\.\d+)", chains["from"]).groups())
    assert rms < at_mix
    # the committed hardware file holds what the committed calibration fits
    assert gpu(gpu_id).value("chain_overlap_exponent") == chains["value"]
