#!/usr/bin/env python3
"""Build and run the CUDA microbenchmark suite (microbench/cuda/**/*.cu); derive the hardware
parameters the analytical model needs, with provenance (docs/microbench.md).

    python3 -m microbench.runner --out FILE.json [--suite dram,l2,latency,atomics,atomic_types,launch,shared,
                                 pipes,tensor,barrier,scattered,mix,tcgen05] [--nvcc PATH] [--build-only]
    python3 -m microbench.runner --rederive --out FILE.json   # re-derive from the raw data

(`microbench run` is the same through the click CLI.) Standard library only, so that it runs
on the GPU machine's bare python3. Each program prints `MB_DEVICE {json}` then one
`MB_RESULT {json}` line per measurement; this module computes robust statistics, rejects
noisy or unchecked measurements and derives the parameters (see derive()) and the sweeps
(see sweeps()).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as _dt
import itertools
import json
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Standard-library modules of keet (tests/test_layering.py checks that importing this runner
# loads nothing else): the GPU machine's bare python3 has none of keet's dependencies.
from keet.errors import KeetError
from keet.measurements import accepted
from keet.toolchain import find_nvcc, nvcc_link_flags

SUITE_VERSION = "1"
CUDA_DIR = Path(__file__).resolve().parent / "cuda"
# suite name -> program (microbench/cuda/<program>.cu), in run order
PROGRAMS = {
    "dram": "dram_bandwidth",
    "l2": "l2_bandwidth",
    "latency": "pointer_chase",
    "atomics": "atomics",
    "atomic_types": "atomic_types",
    "launch": "launch_overhead",
    "shared": "shared_memory",
    "pipes": "pipes",
    "tensor": "tensor",
    "barrier": "barrier",
    "scattered": "scattered",
    "mix": "mix",
    "tcgen05": "sm100/tcgen05_mma",
}
# suites that need a compute capability (major version) and are built for a fixed target;
# elsewhere they are skipped and recorded as skipped with the reason
REQUIRES_CC_MAJOR = {"tcgen05": (10, "sm_100a", "tcgen05.mma / TMEM exist on compute capability 10.x (Blackwell) only")}
BASE_FLAGS = ["-O3", "-std=c++17", "-lineinfo"]
DEFAULT_ARCH = "sm_90a"
MAX_REL_SPREAD = 0.10  # (p90 - p10) / median above this: the measurement is rejected
L1_BYTES = 256 * 1024  # L1/shared capacity per SM of Hopper (the largest L1 carve-out)
RUN_TIMEOUT_S = 180  # per program; the whole suite takes a few minutes on an H100
SMI_FIELDS = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem"
# recorded once, best effort (a field this nvidia-smi does not know must not stop the run)
SMI_EXTRA_FIELDS = "ecc.mode.current,power.limit,temperature.gpu,memory.total,pci.bus_id"


# --------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------
def percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation percentile (q in [0, 1]) of an already sorted list."""
    if not sorted_values:
        raise ValueError("percentile of an empty list")
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def robust_stats(values: list[float], max_rel_spread: float = MAX_REL_SPREAD) -> dict:
    """median/min/max/p10/p90, MAD-based relative spread, and the rejection verdict."""
    vals = sorted(float(v) for v in values)
    if not vals:
        return {"n": 0, "rejected": True, "reason": "no samples"}
    med = statistics.median(vals)
    mad = statistics.median(abs(v - med) for v in vals)
    p10, p90 = percentile(vals, 0.10), percentile(vals, 0.90)
    out = {
        "n": len(vals), "median": med, "min": vals[0], "max": vals[-1], "p10": p10, "p90": p90,
        "mad": mad,
        "rel_mad": (1.4826 * mad / med) if med > 0 else None,
        "rel_spread": ((p90 - p10) / med) if med > 0 else None,
        "rejected": False,
    }
    if med <= 0 or any(math.isnan(v) for v in vals):
        out.update(rejected=True, reason=f"non-positive or NaN median ({med})")
    elif len(vals) < 3:
        out.update(rejected=True, reason=f"only {len(vals)} sample(s)")
    elif out["rel_spread"] > max_rel_spread:
        out.update(rejected=True, reason=f"relative spread (p90-p10)/median = {out['rel_spread']:.3f} > {max_rel_spread}")
    return out


def summarize(result: dict) -> dict:
    """Attach statistics to one parsed MB_RESULT: over times_ms, and for results timed inside
    the kernel with clock64 over their cycle samples (cycles_per_load of the pointer chase,
    cycles_per_op of the others), which then decide the rejection. A result whose program
    reports a failed correctness check ("check": "fail") is rejected whatever its spread."""
    result = dict(result)
    # A program may declare a looser tolerance for a host-bound measurement (launch overhead:
    # the CPU's launch path varies by +-7% batch to batch); it is recorded with the stats.
    limit = float(result.get("max_rel_spread", MAX_REL_SPREAD))
    result["stats"] = dict(robust_stats(result.get("times_ms", []), limit), max_rel_spread=limit)
    for key in ("cycles_per_load", "cycles_per_op"):
        if key in result:
            result["cycles_stats"] = robust_stats(result[key], limit)
            if key == "cycles_per_load":
                result["ns_stats"] = robust_stats(result.get("ns_per_load", []))
            result["stats"] = dict(result["stats"], rejected=result["cycles_stats"]["rejected"],
                                   reason=result["cycles_stats"].get("reason"))
    runs = result.get("sm_clock_hz_runs")
    if runs and len(runs) == len(result.get("times_ms") or []) and min(runs) > 1e8:
        result["run_cycles_stats"] = robust_stats([t * 1e-3 * hz for t, hz in zip(result["times_ms"], runs)], limit)
    if result.get("_duplicate_keys"):
        result["stats"] = dict(result["stats"], rejected=True,
                               reason=f"MB_RESULT line names {', '.join(result['_duplicate_keys'])} twice (program bug)")
    if result.get("check", "pass") != "pass":
        result["stats"] = dict(result["stats"], rejected=True,
                               reason=f"correctness check {result['check']!r} (see the program's CHECK_FAIL line)")
    st = result["stats"]
    if not st["rejected"] and st.get("median"):
        seconds = st["median"] * 1e-3
        if "bytes" in result:
            result["bytes_per_s"] = result["bytes"] / seconds
        if "flops" in result:
            result["flops_per_s"] = result["flops"] / seconds
        if "ops" in result:
            result["ops_per_s"] = result["ops"] / seconds
            result["ns_per_op"] = st["median"] * 1e6 / result["ops"]
        if "sectors" in result:
            result["sectors_per_s"] = result["sectors"] / seconds
    return result


def _keep_duplicates(pairs: list[tuple[str, object]]) -> dict:
    """json object hook: a key given twice (a program bug) is kept in "_duplicate_keys", so that
    summarize() rejects the result instead of silently using the last value."""
    out: dict = {}
    dupes = []
    for key, value in pairs:
        if key in out:
            dupes.append(key)
        out[key] = value
    if dupes:
        out["_duplicate_keys"] = dupes
    return out


def parse_output(text: str) -> tuple[dict | None, list[dict]]:
    """MB_DEVICE and MB_RESULT lines of one program's stdout."""
    device, results = None, []
    for line in text.splitlines():
        if line.startswith("MB_DEVICE "):
            device = json.loads(line[len("MB_DEVICE "):])
        elif line.startswith("MB_RESULT "):
            results.append(json.loads(line[len("MB_RESULT "):], object_pairs_hook=_keep_duplicates))
    return device, results


# --------------------------------------------------------------------------------------
# parameter derivation
# --------------------------------------------------------------------------------------
def _clock(r: dict, fallback: float | None) -> float | None:
    """The SM clock a result ran at: its witness clock (a spin kernel run right after the timed
    runs) where it has one; for atomics without one, the suite's clock (their block-0 probe reads
    low under queued REDs); otherwise its own probe (clock64 vs %globaltimer of block 0, the last
    timed run); the fallback where none is valid."""
    for key in ("witness_sm_clock_hz", "sm_clock_hz"):
        if key == "sm_clock_hz" and r.get("bench") in ("atomics", "atomic_types"):
            break
        hz = r.get(key) or 0
        if hz > 1e8:
            return hz
    return fallback


def _run_cycles(r: dict) -> list[float] | None:
    """SM cycles of each timed run: each run's event time x that run's own clock
    ("sm_clock_hz_runs"); without per-run clocks, the last run's time x the probe's clock, which
    is the last run's. None where no clock of the result's own runs is known."""
    times, runs = r.get("times_ms") or [], r.get("sm_clock_hz_runs")
    if runs and len(runs) == len(times) and min(runs) > 1e8:
        return [t * 1e-3 * hz for t, hz in zip(times, runs)]
    hz = r.get("sm_clock_hz") or 0
    if times and hz > 1e8 and r.get("bench") not in ("atomics", "atomic_types") and not r.get("witness_sm_clock_hz"):
        return [times[-1] * 1e-3 * hz]
    return None


def _per_clk(r: dict, amount_key: str, fallback_hz: float | None) -> float | None:
    """Work per SM clock for the whole GPU: the amount over the median cycles of the result's own
    runs (time and clock of the same run paired; the clock can drift between runs under power
    limits), else the median rate over the result's clock (see _clock)."""
    if amount_key not in r:
        return None
    cyc = r.get("run_cycles_stats", {}).get("median") if "run_cycles_stats" in r else None
    if cyc is None and (rc := _run_cycles(r)):
        cyc = statistics.median(rc)
    if cyc:
        return r[amount_key] / cyc
    hz = _clock(r, fallback_hz)
    rate = r.get(f"{amount_key}_per_s")
    return rate / hz if hz and rate else None


def derive(results: list[dict], device: dict | None) -> tuple[dict, dict]:
    """(parameters, missing): parameters as {name: {value, unit, from}}; missing as
    {name: why not derived}. Rejected measurements are never used."""
    params: dict[str, dict] = {}
    missing: dict[str, str] = {}
    l2_bytes = (device or {}).get("l2_bytes") or 0

    def put(name, value, unit, src):
        params[name] = {"value": value, "unit": unit, "from": src}

    # SM clock from the pointer chase (clock64 vs %globaltimer), default-load variant; the
    # classic chase has 128 B strides (the TLB sweep's page strides are kept apart)
    lat = [r for r in accepted(results, "latency") if r.get("stride_bytes", 128) == 128]
    clocks = [r["sm_clock_hz"] for r in lat if r.get("variant") == "ca" and (r.get("sm_clock_hz") or 0) > 1e8]
    sm_hz = statistics.median(clocks) if clocks else None
    if sm_hz:
        put("sm_clock_measured_hz", sm_hz, "Hz",
            f"pointer_chase: median over {len(clocks)} footprints of clock64() delta / %globaltimer delta (one thread, ld.global.ca)")
    else:
        missing["sm_clock_measured_hz"] = "no accepted pointer_chase measurement with a clock"

    # DRAM
    dram = {r["name"]: r for r in accepted(results, "dram") if r["name"] in ("read", "copy", "triad")}
    if dram:
        best = max(dram.values(), key=lambda r: r["bytes_per_s"])
        put("dram_achievable_bytes_per_s", best["bytes_per_s"], "B/s",
            f"dram_bandwidth: max over accepted read/copy/triad of bytes per run / median time; best = {best['name']} "
            f"({best['bytes'] / 2**30:.0f} GiB per run incl. read+write bytes, median of {best['stats']['n']} runs)"
            f"; others: " + ", ".join(f"{k} {v['bytes_per_s'] / 1e12:.3f} TB/s" for k, v in sorted(dram.items())))
    else:
        missing["dram_achievable_bytes_per_s"] = "no accepted dram read/copy/triad measurement"

    # L2 bandwidth
    if l2_bytes:
        plateau = [r for r in accepted(results, "l2") if r["footprint_bytes"] <= l2_bytes / 2]
        if plateau:
            per_clk = [v for r in plateau if (v := _per_clk(r, "bytes", sm_hz))]
            if per_clk:
                put("l2_bandwidth_bytes_per_clk", statistics.median(per_clk), "B/clk",
                    f"l2_bandwidth: median over {len(per_clk)} footprints <= L2/2 ({l2_bytes // 2**20 // 2} MiB) of "
                    "bytes read per run (__ldcg, whole grid) / median " + _CLK)
            else:
                missing["l2_bandwidth_bytes_per_clk"] = "no SM clock measured"
        else:
            missing["l2_bandwidth_bytes_per_clk"] = "no accepted l2 measurement at footprints <= L2/2"
    else:
        missing["l2_bandwidth_bytes_per_clk"] = "L2 size unknown (no MB_DEVICE line)"

    # latencies
    def lat_param(name, variant, pred, what):
        pts = [r for r in lat if r.get("variant") == variant and pred(r["footprint_bytes"])]
        if pts:
            meds = [r["cycles_stats"]["median"] for r in pts]
            fps = ", ".join(_fmt_bytes(r["footprint_bytes"]) for r in pts)
            put(name, statistics.median(meds), "cycle",
                f"pointer_chase ({variant}): median over footprints {fps} ({what}) of the median cycles per dependent load "
                "(one thread, 128 B-strided Sattolo cycle, clock64)")
        else:
            missing[name] = f"no accepted pointer_chase ({variant}) measurement {what}"

    lat_param("l1_latency_cycles", "ca", lambda f: f <= 32 * 1024, "<= 32 KiB")
    if l2_bytes:
        lat_param("l2_latency_cycles", "cg", lambda f: 4 * L1_BYTES <= f <= l2_bytes / 4,
                  f"between 4x L1 ({4 * L1_BYTES // 1024} KiB) and L2/4, __ldcg")
        lat_param("dram_latency_cycles", "ca", lambda f: f >= 8 * l2_bytes, ">= 8x L2")
    else:
        missing["l2_latency_cycles"] = missing["dram_latency_cycles"] = "L2 size unknown (no MB_DEVICE line)"

    # atomics
    atom = {r["name"]: r for r in accepted(results, "atomics")}
    for pname, rname in (("atomic_ops_per_clk", "distinct"), ("atomic_same_address_ops_per_clk", "same_address")):
        r = atom.get(rname)
        v = _per_clk(r, "ops", sm_hz) if r else None
        if v:
            put(pname, v, "op/clk",
                f"atomics ({rname}): atomicAdd(float) operations per run / median time ({r['stats']['n']} runs) / "
                + ("the SM clock of a 2 ms spin kernel run right after the timed runs" if r.get("witness_sm_clock_hz") else
                   "the suite's SM clock (pointer_chase; the block-0 probe of a fire-and-forget atomics kernel reads low)"))
        else:
            missing[pname] = f"no accepted atomics {rname} measurement" if not r else "no SM clock measured"

    # atomics by operation, type and layout (atomic_types.cu: no contention, targets in L2)
    kinds = {r["name"]: r for r in accepted(results, "atomic_types")}
    for pname, rname, what in (
            ("atomic_sectors_per_clk", "red_f32_sector", "atomicAdd(float) RED, one add per 32 B sector: sectors"),
            ("atomic_int_ops_per_clk", "red_u32_contig", "atomicAdd(unsigned) RED, contiguous: operations"),
            ("atomic_f64_ops_per_clk", "red_f64_contig", "atomicAdd(double) RED, contiguous: operations"),
            ("atomic_return_ops_per_clk", "atom_f32_contig", "atomicAdd(float) whose result is used (ATOM), contiguous: operations")):
        r = kinds.get(rname)
        v = _per_clk(r, "ops", sm_hz) if r else None
        if v:
            put(pname, v, "op/clk", f"atomic_types ({rname}): {what} per run / median time ({r['stats']['n']} runs) / the SM "
                                    "clock of a 2 ms spin kernel run right after the timed runs")
        else:
            missing[pname] = f"no accepted atomic_types {rname} measurement" if not r else "no SM clock measured"

    derive_launch(results, put, missing, "empty kernel <<<1,32>>>", "CUDA graph", "cudaEvents")

    sms = (device or {}).get("sm_count") or 0
    _derive_shared(results, sms, sm_hz, put, missing)
    _derive_pipes(results, sms, sm_hz, put, missing)
    _derive_tensor(results, sms, sm_hz, put, missing, device)
    _derive_barrier(results, put, missing)
    _derive_scattered(results, sm_hz, put, missing)
    _derive_tlb(results, put, missing)
    return params, missing


def derive_launch(results: list[dict], put, missing: dict, kernel: str, graph: str, events: str, label: str = "") -> None:
    """launch_overhead_ns and graph_launch_overhead_ns from the launch program (CUDA or HIP)."""
    launch = {r["name"]: r for r in accepted(results, "launch")}
    for pname, rname, how in (("launch_overhead_ns", "stream_back_to_back", "10,000 back-to-back launches on a stream"),
                              ("graph_launch_overhead_ns", "graph", f"10,000 launches captured in one {graph}")):
        r = launch.get(rname)
        if r:
            put(pname, r["ns_per_op"], "ns",
                f"launch_overhead ({label}{rname}): median over {r['stats']['n']} batches of (batch time / 10,000), "
                f"{kernel}, {how}, {events} around the batch")
        else:
            missing[pname] = f"no accepted launch {rname} measurement"


def _by_name(results: list[dict], bench: str) -> dict[str, dict]:
    return {r["name"]: r for r in accepted(results, bench)}


def _per_clk_per_sm(r: dict, rate_key: str, sms: int, sm_hz: float | None) -> float | None:
    n = r.get("sm_count") or sms
    v = _per_clk(r, rate_key.removesuffix("_per_s"), sm_hz) if n else None
    return v / n if v else None


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of y over x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def _derive_shared(results, sms, sm_hz, put, missing) -> None:
    sh = _by_name(results, "shared")
    bw = {k: v for k, v in ((n, _per_clk_per_sm(sh[n], "bytes_per_s", sms, sm_hz)) for n in ("bw_32", "bw_64", "bw_128") if n in sh) if v}
    if bw:
        best = max(bw, key=bw.get)
        put("shared_bandwidth_bytes_per_clk_per_sm", bw[best], "B/clk/SM",
            f"shared_memory: max over accepted ld.shared widths of bytes read per run / median SM cycles of the runs / SMs "
            f"(64 warps per SM, conflict-free, 16 loads in flight per thread); best = {best}; "
            + ", ".join(f"{k} {v:.1f}" for k, v in sorted(bw.items())))
    else:
        missing["shared_bandwidth_bytes_per_clk_per_sm"] = "no accepted shared bw_32/64/128 measurement (or no SM count/clock)"
    r = sh.get("latency")
    if r:
        put("shared_latency_cycles", r["cycles_stats"]["median"], "cycle",
            f"shared_memory (latency): median over {r['cycles_stats']['n']} chunks of 1024 dependent ld.shared.u32 (one thread, "
            "random cycle over 2048 nodes, clock64) of cycles per load")
    else:
        missing["shared_latency_cycles"] = "no accepted shared latency measurement"
    pts = sorted((r["ways"], r["cycles_stats"]["median"]) for r in sh.values() if r["name"].startswith("conflict_tp_w"))
    if len(pts) >= 4:
        slope = _slope([p[0] for p in pts], [p[1] for p in pts])
        put("shared_conflict_cycles_per_way", slope, "cycle",
            f"shared_memory (conflict_tp_w1..32): least-squares slope over {len(pts)} accepted points (ways 1..32) of cycles per "
            f"warp-wide ld.shared.u32 at full issue (32 warps per SM, one block per SM) vs ways of the bank conflict; "
            f"{pts[0][1]:.2f} cycles at 1 way, {pts[-1][1]:.2f} at {pts[-1][0]} ways")
    else:
        missing["shared_conflict_cycles_per_way"] = f"only {len(pts)} accepted bank-conflict points (need >= 4)"


_CLK = ("SM cycles of the runs (each run's event time x that run's SM clock, clock64 vs %globaltimer of block 0; "
        "without per-run clocks, the last run's time x its clock)")
_PIPES = (  # parameter, result, rate key, what
    ("fp32_flops_per_clk_per_sm", "ffma_tp", "flops_per_s", "FFMA (fma.rn.f32), 2 flops each"),
    ("fp64_flops_per_clk_per_sm", "dfma_tp", "flops_per_s", "DFMA (fma.rn.f64), 2 flops each"),
    ("int32_ops_per_clk_per_sm", "int_tp", "ops_per_s", "IADD3 + LOP3 (ALU pipe), one op each"),
    ("imad_ops_per_clk_per_sm", "imad_tp", "ops_per_s", "IMAD (mad.lo.u32), one op each"),
)
_LATENCIES = (
    ("fp32_latency_cycles", ("ffma_lat",), "FFMA"),
    ("fp64_latency_cycles", ("dfma_lat",), "DFMA"),
    ("int32_latency_cycles", ("int_lat",), "IADD3/LOP3 alternating"),
    ("sfu_latency_cycles", ("rsqrt_lat", "ex2_lat"), "MUFU.RSQ and MUFU.EX2"),
)


def _derive_pipes(results, sms, sm_hz, put, missing) -> None:
    pp = _by_name(results, "pipes")
    how = ("lane operations per run / median SM cycles of the runs (event time x the run's own clock) / SMs (64 warps per "
           "SM, 8 independent chains per thread, inline PTX)")
    for pname, rname, key, what in _PIPES:
        v = _per_clk_per_sm(pp[rname], key, sms, sm_hz) if rname in pp else None
        if v:
            put(pname, v, "flop/clk/SM" if key == "flops_per_s" else "op/clk/SM", f"pipes ({rname}): {what}; {how}")
        else:
            missing[pname] = f"no accepted pipes {rname} measurement (or no SM count/clock)"
    sfu = {n: v for n in ("rsqrt_tp", "ex2_tp", "sin_tp") if n in pp and (v := _per_clk_per_sm(pp[n], "ops_per_s", sms, sm_hz))}
    if sfu:
        put("sfu_ops_per_clk_per_sm", statistics.median(sfu.values()), "op/clk/SM",
            "pipes: median over accepted MUFU variants (" + ", ".join(f"{k} {v:.2f}" for k, v in sorted(sfu.items()))
            + f") of MUFU lane operations; {how}")
    else:
        missing["sfu_ops_per_clk_per_sm"] = "no accepted pipes rsqrt/ex2/sin throughput measurement"
    for pname, rnames, what in _LATENCIES:
        meds = {n: pp[n]["cycles_stats"]["median"] for n in rnames if n in pp}
        if meds:
            put(pname, statistics.median(meds.values()), "cycle",
                f"pipes ({', '.join(sorted(meds))}): median cycles per instruction of one dependent {what} chain "
                "(one warp, chunks of 1024 steps between clock64 reads)")
        else:
            missing[pname] = f"no accepted pipes {'/'.join(rnames)} measurement"


def _derive_tensor(results, sms, sm_hz, put, missing, device) -> None:
    tn = _by_name(results, "tensor")
    attempted = {r["name"] for r in results if r.get("bench") == "tensor"}
    for pname, rname in (("tensor_mma_sync_fp16_flops_per_clk_per_sm", "mma_sync_fp16"),
                         ("tensor_mma_sync_bf16_flops_per_clk_per_sm", "mma_sync_bf16")):
        v = _per_clk_per_sm(tn[rname], "flops_per_s", sms, sm_hz) if rname in tn else None
        if v:
            put(pname, v, "flop/clk/SM",
                f"tensor ({rname}): mma.sync.m16n8k16 (HMMA.16816.F32) flops per run / median SM cycles of the runs / SMs; "
                "8 independent accumulators per warp, every SM full; result checked exactly against the host")
        else:
            missing[pname] = f"no accepted tensor {rname} measurement"
    for pname, prefix, what in (("tensor_wgmma_fp16_flops_per_clk_per_sm", "wgmma_fp16_n", "wgmma.m64nNk16.f32.f16.f16 (HGMMA)"),
                                ("tensor_tcgen05_fp16_flops_per_clk_per_sm", "tcgen05_fp16_", "tcgen05.mma kind::f16 M128 N256")):
        vals = {n: v for n, r in tn.items() if n.startswith(prefix) and (v := _per_clk_per_sm(r, "flops_per_s", sms, sm_hz))}
        if vals:
            best = max(vals, key=vals.get)
            put(pname, vals[best], "flop/clk/SM",
                f"tensor: max over accepted {what} shapes (" + ", ".join(f"{k} {v:.0f}" for k, v in sorted(vals.items()))
                + ") of flops per run / median SM cycles of the runs (the clock drops under tensor load) / SMs; operands in "
                "shared memory; result checked exactly")
        elif any(n.startswith(prefix) for n in attempted):
            missing[pname] = f"no accepted tensor {prefix}* measurement"
        elif prefix.startswith("wgmma") and str((device or {}).get("cc", "9.0")).startswith("9"):
            missing[pname] = "no tensor wgmma measurement"


def _derive_barrier(results, put, missing) -> None:
    pts = [r for r in accepted(results, "barrier") if r.get("warps_per_block", 0) >= 8 and r.get("blocks_per_sm") == 1]
    if pts:
        put("barrier_cycles", statistics.median(r["cycles_stats"]["median"] for r in pts), "cycle",
            "barrier: median over " + ", ".join(f"{r['warps_per_block']} warps" for r in pts)
            + " per block (one block per SM) of the median cycles per __syncthreads() (BAR.SYNC) in a loop of barriers only; "
            "the whole sweep (1-32 warps per block x 1, 2, 4 blocks per SM) is under sweeps.barrier")
    else:
        missing["barrier_cycles"] = "no accepted barrier measurement with >= 8 warps per block and 1 block per SM"


def _derive_scattered(results, sm_hz, put, missing) -> None:
    sc = _by_name(results, "scattered")
    for level, where in (("l2", "16 MiB footprint (in L2)"), ("dram", "2 GiB footprint (far beyond L2)")):
        for kind in ("store", "load"):
            pname, r = f"{level}_scattered_{kind}_sectors_per_clk", sc.get(f"{level}_{kind}")
            v = _per_clk(r, "sectors", sm_hz) if r else None
            if v:
                put(pname, v, "sector/clk",
                    f"scattered ({level}_{kind}): 4-byte {'ld.global.cg' if kind == 'load' else 'st.global'} accesses, each to "
                    f"its own 32-byte sector in random order, {where}, whole GPU; sectors per run / median " + _CLK)
            else:
                missing[pname] = f"no accepted scattered {level}_{kind} measurement"


def _derive_tlb(results, put, missing) -> None:
    pts = sorted((r["footprint_bytes"], r["cycles_stats"]["median"]) for r in accepted(results, "latency")
                 if r.get("sweep") == "tlb" and r.get("stride_bytes") == 2 * 2**20)
    if len(pts) < 4:
        missing["tlb_miss_extra_cycles"] = f"only {len(pts)} accepted TLB-sweep points with 2 MiB strides"
        return
    base, top = pts[0][1], pts[-1][1]
    step = top - base
    if step > max(20.0, 0.1 * base):
        put("tlb_miss_extra_cycles", step, "cycle",
            f"pointer_chase TLB sweep (2 MiB strides, nodes resident in L2, __ldcg): median cycles per dependent load at "
            f"the largest footprint ({_fmt_bytes(pts[-1][0])}: {top:.0f}) minus at the smallest ({_fmt_bytes(pts[0][0])}: "
            f"{base:.0f}), i.e. the translation cost once every TLB level's reach is exceeded; the steps are under sweeps.tlb")
    else:
        missing["tlb_miss_extra_cycles"] = (f"no clear step: {base:.0f} cycles at {_fmt_bytes(pts[0][0])}, {top:.0f} at "
                                            f"{_fmt_bytes(pts[-1][0])} (need > max(20, 10%))")


def sweeps(results: list[dict], device: dict | None, sm_hz: float | None = None) -> dict:
    """The raw sweeps in compact form (for docs and plots): accepted points carry their value,
    rejected ones None. sm_hz: the suite's SM clock (for results without a clock of their own)."""
    l2_bytes = (device or {}).get("l2_bytes") or 0

    def val(r, fn):
        return None if r["stats"]["rejected"] else fn(r)


    out: dict = {}
    rs = [r for r in results if r.get("bench") == "shared" and r["name"].startswith("conflict_")]
    ways = sorted({r["ways"] for r in rs})
    out["shared_conflicts"] = [
        {"ways": w, **{f"{kind}_cycles": val(r, lambda r: r["cycles_stats"]["median"])
                       for r in rs if r["ways"] == w for kind in [r["kind"]]}} for w in ways]
    out["barrier"] = [{"warps_per_block": r["warps_per_block"], "blocks_per_sm": r["blocks_per_sm"],
                       "cycles_per_barrier": val(r, lambda r: r["cycles_stats"]["median"]),
                       "blocks_kept": r.get("blocks_kept")} for r in results if r.get("bench") == "barrier"]
    out["atomic_few_address_sweep"] = [
        {"addresses": r["addresses"], "ops_per_clk": val(r, lambda r: _per_clk(r, "ops", sm_hz))}
        for r in results if r.get("bench") == "atomics" and r["name"].startswith("few_")]
    out["mix"] = [{"fma_per_element": r["fma_per_element"], "bytes": r["bytes"], "flops": r["flops"],
                   "seconds": val(r, lambda r: r["stats"]["median"] * 1e-3), "bytes_per_s": r.get("bytes_per_s"),
                   "flops_per_s": r.get("flops_per_s"), "flops_per_clk": val(r, lambda r: _per_clk(r, "flops", sm_hz)),
                   "bytes_per_clk": val(r, lambda r: _per_clk(r, "bytes", sm_hz)), "sm_clock_hz": r.get("sm_clock_hz")}
                  for r in results if r.get("bench") == "mix"]
    out["dram_occupancy_vector"] = [
        {"kind": r["kind"], "vector_bits": r["vector_bits"], "blocks_per_sm": r["blocks_per_sm"],
         "warps_per_sm": r.get("warps_per_sm"), "bytes_per_s": r.get("bytes_per_s")}
        for r in results if r.get("bench") == "dram" and r.get("sweep") == "occupancy_vector"]
    out["l2_footprint"] = [{"footprint_bytes": r["footprint_bytes"], "bytes_per_s": r.get("bytes_per_s"),
                            "bytes_per_clk": val(r, lambda r: _per_clk(r, "bytes", sm_hz))}
                           for r in results if r.get("bench") == "l2"]
    out["latency_footprint"] = [{"footprint_bytes": r["footprint_bytes"], "variant": r.get("variant"),
                                 "cycles": val(r, lambda r: r["cycles_stats"]["median"])}
                                for r in results if r.get("bench") == "latency" and r.get("stride_bytes", 128) == 128]
    tlb: dict = {}
    for r in results:
        if r.get("bench") == "latency" and r.get("sweep") == "tlb":
            tlb.setdefault(_fmt_bytes(int(r["stride_bytes"])), []).append(
                {"footprint_bytes": r["footprint_bytes"], "cycles": val(r, lambda r: r["cycles_stats"]["median"])})
    for stride, pts in tlb.items():
        pts.sort(key=lambda p: p["footprint_bytes"])
        good = [p for p in pts if p["cycles"] is not None]
        tlb_steps = [{"from_bytes": a["footprint_bytes"], "to_bytes": b["footprint_bytes"], "extra_cycles": b["cycles"] - a["cycles"]}
                     for a, b in itertools.pairwise(good) if b["cycles"] - a["cycles"] > max(10.0, 0.05 * a["cycles"])]
        tlb[stride] = {"points": pts, "steps": tlb_steps}
    out["tlb"] = tlb
    if l2_bytes:
        out["l2_bytes"] = l2_bytes
    return out


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


# --------------------------------------------------------------------------------------
# tools and device
# --------------------------------------------------------------------------------------
def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace", check=False)


def smi(fields: str) -> list[str]:
    try:
        p = _run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"], 60)
    except (OSError, subprocess.TimeoutExpired):
        raise KeetError("no NVIDIA GPU found (nvidia-smi failed)") from None
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    if p.returncode != 0 or not lines:
        raise KeetError("no NVIDIA GPU found (nvidia-smi failed)")
    return [v.strip() for v in lines[0].split(",")]  # GPU 0: the programs use device 0


def smi_snapshot() -> dict:
    vals = smi(SMI_FIELDS)
    out = dict(zip(SMI_FIELDS.split(","), vals))
    for key in ("clocks.sm", "clocks.max.sm", "clocks.mem"):
        try:
            out[key + "_mhz"] = float(out.pop(key))
        except (KeyError, ValueError):
            pass
    return out


def arch_for(compute_cap: str) -> str:
    """'9.0' -> sm_90a, '10.0' -> sm_100a (arch-specific features), else sm_XY."""
    m = re.fullmatch(r"(\d+)\.(\d+)", compute_cap.strip())
    if not m:
        raise KeetError(f"cannot parse the compute capability {compute_cap!r} reported by nvidia-smi")
    xy = m.group(1) + m.group(2)
    return f"sm_{xy}a" if compute_cap.strip() in ("9.0", "10.0") else f"sm_{xy}"


def nvcc_flags(arch: str) -> list[str]:
    num = arch.removeprefix("sm_")
    return BASE_FLAGS + [f"-gencode=arch=compute_{num},code=sm_{num}"]


def build(program: str, nvcc: str, arch: str, build_dir: Path) -> dict:
    src = CUDA_DIR / f"{program}.cu"
    exe = build_dir / program.replace("/", "_")
    cmd = [nvcc, *nvcc_flags(arch), *nvcc_link_flags(nvcc), "-o", str(exe), str(src)]
    t0 = time.monotonic()
    try:
        p = _run(cmd, 600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KeetError(f"building {program}.cu failed: {type(exc).__name__}: {exc}") from None
    if p.returncode != 0:
        lines = (p.stderr + p.stdout).strip().splitlines()
        first = next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "no output")
        raise KeetError(f"building {program}.cu failed (nvcc exit {p.returncode}): {first.strip()}")
    return {"program": program, "cmd": cmd, "seconds": round(time.monotonic() - t0, 2), "exe": str(exe)}


# --------------------------------------------------------------------------------------
# the suite
# --------------------------------------------------------------------------------------
def write_json_atomic(path: Path, document: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(document, handle, indent=1)
            handle.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def parse_suite(suite: str | None) -> list[str]:
    if not suite:
        return list(PROGRAMS)
    names = [s.strip() for s in suite.split(",") if s.strip()]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        raise KeetError(f"unknown suite name(s) {', '.join(unknown)} (known: {', '.join(PROGRAMS)})")
    return [n for n in PROGRAMS if n in names]


def _progress(msg: str) -> None:
    """Progress for a person at a terminal; in a pipe or a log it would be noise (a failure
    is in the JSON file and in the final error either way)."""
    if sys.stderr.isatty():
        print(msg, file=sys.stderr, flush=True)


def run_suite(out: str | Path, suite: str | None = None, nvcc: str | None = None, build_only: bool = False) -> dict:
    selected = parse_suite(suite)
    nvcc_path = find_nvcc(nvcc)
    try:
        nvcc_version = _run([nvcc_path, "--version"], 60).stdout.strip().splitlines()[-1:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KeetError(f"cannot run nvcc {nvcc_path}: {exc}") from None
    doc: dict = {
        "suite_version": SUITE_VERSION,
        "date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname": socket.gethostname(),
        "nvcc": {"path": nvcc_path, "version": nvcc_version[0] if nvcc_version else ""},
        "suites": selected,
        "build_only": build_only,
    }
    compute_cap = ""
    if build_only:
        arch = DEFAULT_ARCH
    else:
        compute_cap = smi("compute_cap")[0]
        arch = arch_for(compute_cap)
        doc["device"] = {"compute_cap": compute_cap, "before": smi_snapshot(), "extra": _smi_extra()}
    doc["nvcc"]["flags"] = nvcc_flags(arch)

    # suites for another compute capability: built for their own target in --build-only
    # (a compile check), skipped and recorded as skipped on a GPU that cannot run them
    doc["skipped"], archs = {}, {}
    for name in selected:
        need = REQUIRES_CC_MAJOR.get(name)
        if need and not build_only and not compute_cap.strip().startswith(f"{need[0]}."):
            doc["skipped"][name] = f"{need[2]}; this GPU is compute capability {compute_cap.strip()}"
        else:
            archs[name] = need[1] if need else arch
    runnable = [n for n in selected if n in archs]
    t_start = time.monotonic()

    with tempfile.TemporaryDirectory(prefix="microbench-") as tmp:
        _progress(f"building {len(runnable)} program(s) in parallel: " + ", ".join(f"{PROGRAMS[n]}.cu ({archs[n]})" for n in runnable))
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            futures = {n: pool.submit(build, PROGRAMS[n], nvcc_path, archs[n], Path(tmp)) for n in runnable}
            builds = {n: futures[n].result() for n in runnable}  # the first failure raises, in suite order
        doc["builds"] = {k: {"cmd": " ".join(v["cmd"]), "seconds": v["seconds"]} for k, v in builds.items()}
        doc["build_seconds"] = round(time.monotonic() - t_start, 2)
        for name, why in doc["skipped"].items():
            _progress(f"skipping {name}: {why}")
        if build_only:
            write_json_atomic(Path(out), doc)
            return doc

        runs, results, failures = {}, [], []
        device_line = None
        for i, name in enumerate(runnable, 1):
            _progress(f"[{i}/{len(runnable)}] {name} ...")
            t0 = time.monotonic()
            entry: dict = {"program": PROGRAMS[name], "clocks_before": _safe_snapshot()}
            try:
                p = _run([builds[name]["exe"]], RUN_TIMEOUT_S)
                entry.update(rc=p.returncode, stderr=p.stderr[-3000:])
                dev, res = parse_output(p.stdout)
                entry["check_failures"] = [ln for ln in p.stdout.splitlines() if ln.startswith("CHECK_FAIL")]
                if p.returncode != 0:
                    entry["error"] = f"exit status {p.returncode}: " + (p.stderr.strip().splitlines() or
                                                                         p.stdout.strip().splitlines() or ["no output"])[-1]
            except subprocess.TimeoutExpired as exc:
                dev, res = parse_output(exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or ""))
                entry["error"] = f"timed out after {RUN_TIMEOUT_S} s"
            except json.JSONDecodeError as exc:
                dev, res = None, []
                entry["error"] = f"unparsable MB_ line: {exc}"
            entry["seconds"] = round(time.monotonic() - t0, 2)
            entry["device"] = dev
            device_line = device_line or dev
            entry["clocks_after"] = _safe_snapshot()
            runs[name] = entry
            results.extend(summarize(dict(r, program=PROGRAMS[name])) for r in res)
            if "error" in entry:
                failures.append(f"{name}: {entry['error']}")
                _progress(f"[{i}/{len(runnable)}] {name} ... FAILED in {entry['seconds']:.1f} s: {entry['error']}")
            else:
                _progress(f"[{i}/{len(runnable)}] {name} ... done in {entry['seconds']:.1f} s"
                          + (f" ({len(entry['check_failures'])} failed check(s))" if entry.get("check_failures") else ""))
            doc["runs"], doc["results"] = runs, results
            write_json_atomic(Path(out), doc)  # a killed run keeps what it has

    doc["device"]["after"] = _safe_snapshot()
    doc["device"]["cuda"] = device_line
    if device_line:
        doc["device"]["name"] = device_line.get("name")
    doc["device"]["nvidia_smi_name"] = doc["device"]["before"].get("name")
    doc["device"]["driver"] = doc["device"]["before"].get("driver_version")
    doc["rejected"] = [{"bench": r["bench"], "name": r["name"], "reason": r["stats"].get("reason")}
                       for r in results if r["stats"]["rejected"]]
    doc["parameters"], doc["parameters_missing"] = derive(results, device_line)
    doc["sweeps"] = sweeps(results, device_line, doc["parameters"].get("sm_clock_measured_hz", {}).get("value"))
    doc["total_seconds"] = round(time.monotonic() - t_start, 2)
    write_json_atomic(Path(out), doc)
    if failures:
        raise KeetError(f"{len(failures)} program(s) failed ({'; '.join(failures)}); partial results in {out}")
    return doc


def _smi_extra() -> dict:
    try:
        return dict(zip(SMI_EXTRA_FIELDS.split(","), smi(SMI_EXTRA_FIELDS)))
    except KeetError as exc:
        return {"error": str(exc)}


# keys summarize() adds to a result: stripped before a re-derivation
_DERIVED_KEYS = {"stats", "cycles_stats", "ns_stats", "run_cycles_stats", "bytes_per_s", "flops_per_s", "ops_per_s",
                 "ns_per_op", "sectors_per_s"}


def rederive(path: str | Path) -> dict:
    """Recompute the statistics, rejections, parameters and sweeps of a CUDA calibration file
    from its raw measurements (times, cycle samples, clocks), with this runner's rules; the raw
    data and the run's provenance (date, device, driver) are left as they are, and
    "rederived_utc" records when the derivation was redone."""
    path = Path(path)
    doc = json.loads(path.read_text())
    results = [summarize({k: v for k, v in r.items() if k not in _DERIVED_KEYS}) for r in doc["results"]]
    device = (doc.get("device") or {}).get("cuda")
    doc["results"] = results
    doc["rejected"] = [{"bench": r["bench"], "name": r["name"], "reason": r["stats"].get("reason")}
                       for r in results if r["stats"]["rejected"]]
    doc["parameters"], doc["parameters_missing"] = derive(results, device)
    doc["sweeps"] = sweeps(results, device, doc["parameters"].get("sm_clock_measured_hz", {}).get("value"))
    doc["rederived_utc"] = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_json_atomic(path, doc)
    return doc


def _safe_snapshot() -> dict:
    try:
        return smi_snapshot()
    except KeetError as exc:
        return {"error": str(exc)}


def run_any(out: str | Path, suite: str | None = None, nvcc: str | None = None, build_only: bool = False,
            backend: str | None = "auto", arch: str | None = None, hipcc: str | None = None) -> dict:
    """`microbench run`: the CUDA suite on an NVIDIA GPU, the HIP suite (microbench/amd.py) on an AMD one."""
    from microbench import amd  # here, not at the top: amd imports this module

    if amd.pick_backend(backend, build_only, arch=arch) == "hip":
        return amd.run_suite(out, suite, hipcc, build_only, arch)
    if arch:
        raise KeetError(f"--arch {arch} applies to the HIP suite (--backend hip)")
    return run_suite(out, suite, nvcc, build_only)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="microbench run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output JSON file")
    ap.add_argument("--suite", default=None, help=f"comma-separated subset of {','.join(PROGRAMS)}")
    ap.add_argument("--nvcc", default=None, help="nvcc to use (default: $NVCC, PATH, /usr/local/cuda/bin/nvcc)")
    ap.add_argument("--build-only", action="store_true", help="only compile (no GPU needed; targets sm_90a)")
    ap.add_argument("--backend", choices=("auto", "cuda", "hip"), default="auto",
                    help="cuda (microbench/cuda), hip (microbench/hip, AMD) or auto: NVIDIA if nvidia-smi works, else AMD")
    ap.add_argument("--arch", default=None, help="HIP target of a --build-only run: gfx90a or gfx942 (default gfx942)")
    ap.add_argument("--hipcc", default=None,
                    help="HIP compiler, hipcc or clang++ (default: $HIPCC, /opt/rocm, PATH, clang++-NN)")
    ap.add_argument("--rederive", action="store_true",
                    help="run nothing: recompute statistics, parameters and sweeps of the existing CUDA file --out from its raw data")
    args = ap.parse_args(argv)
    if args.rederive:
        try:
            _print_summary(rederive(args.out))
        except (OSError, ValueError, KeyError) as exc:
            print(f"microbench: error: {args.out}: cannot re-derive: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        doc = run_any(args.out, args.suite, args.nvcc, args.build_only, args.backend, args.arch, args.hipcc)
    except KeetError as exc:
        print(f"microbench: error: {exc}", file=sys.stderr)
        return 2
    _print_summary(doc)
    return 0


def _print_summary(doc: dict) -> None:
    if doc.get("build_only"):
        _progress(f"built {len(doc['builds'])} program(s): {', '.join(doc['builds'])}")
        return
    for name, p in doc.get("parameters", {}).items():
        _progress(f"  {name:34s} {p['value']:.6g} {p['unit']}")
    for name, why in doc.get("parameters_missing", {}).items():
        _progress(f"  {name:34s} not derived: {why}")
    if doc.get("rejected"):
        _progress(f"  {len(doc['rejected'])} measurement(s) rejected (see 'rejected' in the JSON)")


if __name__ == "__main__":
    sys.exit(main())
