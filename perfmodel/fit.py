"""Model parameters fitted from a calibration file's raw measurements (microbench/runner.py
output), on top of the parameters the runner derives itself. Used by perfmodel.calibrate.

- dram_read_bytes_per_s / dram_write_bytes_per_s: the read-only and write-only streams,
  measured separately because HBM turns its bus around between reads and writes;
- barrier_base_cycles / barrier_cycles_per_warp: __syncthreads cost as a line in the block's
  warps, from the barrier sweep;
- overlap_exponent: how imperfectly SM-side and memory-side time overlap (docs/model.md,
  "Combining"), the least-squares fit of the `mix` sweep's times (a stream doing N FMAs per
  loaded float) to the p-norm of that benchmark's own FMA-pipe and DRAM bounds;
- chain_overlap_exponent: how imperfectly warps' dependent-load waits overlap the throughput
  time, the same fit over the DRAM occupancy x vector-width sweep's read and copy streams (1 to
  8 blocks per SM, 4- to 16-byte accesses, one load a warp waits for per iteration) to the p-norm
  of the model's latency-chain and DRAM bounds for them.

Only microbenchmark data enters: no zoo kernel and no profile.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize_scalar

from keet.measurements import accepted
from perfmodel.hardware import GPU

EXPONENT_RANGE = (1.0, 16.0)  # 1: no overlap (the sum); 16: indistinguishable from the maximum


def _accepted(doc: dict, bench: str) -> list[dict]:
    """Accepted main measurements (not the points of a sweep) of one benchmark."""
    return [r for r in accepted(doc.get("results", []), bench) if "sweep" not in r]


def _param(doc: dict, hardware: GPU, name: str) -> float | None:
    entry = doc.get("parameters", {}).get(name)
    return float(entry["value"]) if entry else hardware.value(name)


def dram_rates(doc: dict) -> dict[str, dict]:
    """Read-only and write-only DRAM bandwidth of the run (the `dram` benchmark's read and
    write streams: bytes per run / median time)."""
    out = {}
    streams = {r["name"]: r for r in _accepted(doc, "dram")}
    for param, name in (("dram_read_bytes_per_s", "read"), ("dram_write_bytes_per_s", "write")):
        r = streams.get(name)
        if r and r.get("bytes_per_s"):
            out[param] = {"value": r["bytes_per_s"], "unit": "B/s",
                          "from": f"dram_bandwidth ({name}): {r['bytes'] / 2**30:.0f} GiB per run / median time of "
                                  f"{r['stats']['n']} runs, whole GPU, 128-bit accesses"}
    return out


def _fit_pnorm(a: np.ndarray, b: np.ndarray, measured: np.ndarray) -> tuple[float, Callable[[float], float]]:
    """The p whose p-norm of the bounds a and b fits the measured times best (least squares of
    the log), and the rms log error at any p."""
    def log_error(p: float) -> float:
        return float(np.sum((np.log((a**p + b**p) ** (1.0 / p)) - np.log(measured)) ** 2))

    best = minimize_scalar(log_error, bounds=EXPONENT_RANGE, method="bounded")
    return float(best.x), lambda p: math.sqrt(log_error(p) / len(measured))


def overlap_exponent(doc: dict, hardware: GPU, rates: dict[str, dict]) -> dict | None:
    """Fit p in t = (t_fma^p + t_dram^p)^(1/p) over the mix sweep. t_fma = FLOPs /
    (fp32_flops_per_clk_per_sm x SMs x the run's SM clock); t_dram = bytes read / read rate +
    bytes written / write rate (half of the sweep's bytes each: one float loaded, one stored)."""
    points = [r for r in _accepted(doc, "mix") if r.get("flops") is not None]
    sms = hardware.value("sm_count")
    per_sm = _param(doc, hardware, "fp32_flops_per_clk_per_sm")
    clock_default = _param(doc, hardware, "sm_clock_measured_hz") or hardware.value("clock_boost_hz")
    any_rate = _param(doc, hardware, "dram_achievable_bytes_per_s")
    read = rates.get("dram_read_bytes_per_s", {}).get("value") or any_rate
    write = rates.get("dram_write_bytes_per_s", {}).get("value") or any_rate
    if len(points) < 4 or not (sms and per_sm and read and write):
        return None
    measured, fma, dram = [], [], []
    for r in points:
        clock = r.get("sm_clock_hz") if (r.get("sm_clock_hz") or 0) > 1e8 else clock_default
        measured.append(r["stats"]["median"] * 1e-3)
        fma.append(r["flops"] / (per_sm * sms * clock))
        dram.append(r["bytes"] / 2 / read + r["bytes"] / 2 / write)
    p, rms_at = _fit_pnorm(np.array(fma), np.array(dram), np.array(measured))
    rms, at_max = rms_at(p), rms_at(EXPONENT_RANGE[1])
    return {"value": round(p, 3), "unit": "1",
            "from": f"mix: least-squares fit (log time) of {len(points)} arithmetic intensities (N = "
                    f"{', '.join(str(r['fma_per_element']) for r in points)} FMAs per float) to "
                    f"(t_fma^p + t_dram^p)^(1/p); rms log error {rms:.3f} (plain maximum: {at_max:.3f})"}


def chain_overlap_exponent(doc: dict, hardware: GPU, rates: dict[str, dict]) -> dict | None:
    """Fit p in t = (t_chain^p + t_dram^p)^(1/p) over the occupancy x vector sweep's read and
    copy streams. Each warp of the grid-stride loop waits for one load of 32 x vector bytes per
    iteration: t_chain = bytes read / (SMs x warps per SM x 32 x vector bytes) x
    dram_latency_cycles / the run's SM clock (the latency term's form); t_dram = bytes read /
    read rate + bytes written / write rate (a copy's bytes are half read, half written)."""
    points = [r for r in accepted(doc.get("results", []), "dram")
              if r.get("sweep") == "occupancy_vector" and r.get("kind") in ("read", "copy")]
    sms = hardware.value("sm_count")
    latency = _param(doc, hardware, "dram_latency_cycles")
    clock_default = _param(doc, hardware, "sm_clock_measured_hz") or hardware.value("clock_boost_hz")
    read = rates.get("dram_read_bytes_per_s", {}).get("value")
    write = rates.get("dram_write_bytes_per_s", {}).get("value")
    if len(points) < 4 or not (sms and latency and read and write):
        return None
    measured, chain, dram = [], [], []
    for r in points:
        clock = r.get("sm_clock_hz") if (r.get("sm_clock_hz") or 0) > 1e8 else clock_default
        reads = r["bytes"] / 2 if r["kind"] == "copy" else r["bytes"]
        writes = r["bytes"] - reads
        per_wait = sms * r["warps_per_sm"] * 32 * r["vector_bits"] / 8
        measured.append(r["stats"]["median"] * 1e-3)
        chain.append(reads / per_wait * latency / clock)
        dram.append(reads / read + writes / write)
    p, rms_at = _fit_pnorm(np.array(chain), np.array(dram), np.array(measured))
    at_mix = rates.get("overlap_exponent", {}).get("value") or _param(doc, hardware, "overlap_exponent")
    compare = f", at the mix sweep's p {at_mix:g}: {rms_at(at_mix):.3f}" if at_mix else ""
    kinds = sorted({(r["kind"], r["warps_per_sm"], r["vector_bits"]) for r in points})
    rms = rms_at(p)
    return {"value": round(p, 3), "unit": "1",
            "from": f"dram_occupancy_vector: least-squares fit (log time) of {len(points)} read and copy streams "
                    f"({min(k[1] for k in kinds)}-{max(k[1] for k in kinds)} warps per SM, "
                    f"{min(k[2] for k in kinds)}-{max(k[2] for k in kinds)}-bit accesses) to (t_chain^p + t_dram^p)^(1/p); "
                    f"rms log error {rms:.3f}{compare}"}


def barrier_cost(doc: dict) -> dict[str, dict]:
    """__syncthreads cost as a line in the warps per block: the barrier sweep with one block
    per SM, cycles = base + per_warp x warps (the last warp's arrival is what grows)."""
    points = [(r["warps_per_block"], r["cycles_per_barrier"]) for r in doc.get("sweeps", {}).get("barrier", [])
              if r.get("blocks_per_sm") == 1 and r.get("cycles_per_barrier")]
    if len(points) < 3:
        return {}
    warps, cycles = np.array(points, dtype=float).T
    per_warp, base = np.polyfit(warps, cycles, 1)
    worst = float(np.max(np.abs(base + per_warp * warps - cycles)))
    where = (f"barrier: least-squares line through the {len(points)} points of the sweep at one block per SM "
             f"({', '.join(f'{w:g} warps {c:.0f}' for w, c in points)} cycles per barrier); largest residual {worst:.1f} cycles")
    return {"barrier_base_cycles": {"value": round(float(base), 2), "unit": "cycle", "from": where},
            "barrier_cycles_per_warp": {"value": round(float(per_warp), 3), "unit": "cycle/warp", "from": where}}


def fitted_parameters(doc: dict, hardware: GPU) -> dict[str, dict]:
    """Parameters fitted from the calibration file, as {name: {value, unit, from}}."""
    out = dram_rates(doc) | barrier_cost(doc)
    if (overlap := overlap_exponent(doc, hardware, out)) is not None:
        out["overlap_exponent"] = overlap
    if (chains := chain_overlap_exponent(doc, hardware, out)) is not None:
        out["chain_overlap_exponent"] = chains
    return out
