"""microbench: statistics and rejection, parameter derivation, calibrate(), and (when an
nvcc is given through $NVCC) that every CUDA program compiles. No GPU needed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from keet.errors import KeetError
from microbench import runner
from perfmodel.calibrate import calibrate, gpu_names_match, remove_table

ROOT = Path(__file__).resolve().parents[1]
HARDWARE = ROOT / "perfmodel" / "hardware"
MiB, GiB, KiB = 2**20, 2**30, 2**10
L2 = 50 * MiB
CLOCK = 1.98e9


# ---------------------------------------------------------------------------------------
# statistics and rejection
# ---------------------------------------------------------------------------------------
def test_robust_stats_of_a_tight_list():
    st = runner.robust_stats([1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.0, 1.01, 0.99, 1.0])
    assert st["median"] == pytest.approx(1.0) and st["min"] == 0.98 and st["max"] == 1.02
    assert st["mad"] == pytest.approx(0.01) and st["rel_mad"] == pytest.approx(0.014826)
    assert not st["rejected"] and st["rel_spread"] < 0.1


def test_one_outlier_does_not_reject_but_a_wide_spread_does():
    tight = [2.0] * 28 + [2.01, 9.0]  # one slow run out of 30: p90 stays put
    assert not runner.robust_stats(tight)["rejected"]
    wide = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9]
    st = runner.robust_stats(wide)
    assert st["rejected"] and "relative spread" in st["reason"] and st["rel_spread"] > 0.1


def test_degenerate_lists_are_rejected():
    assert runner.robust_stats([])["rejected"]
    assert runner.robust_stats([1.0, 1.0])["rejected"]
    assert runner.robust_stats([0.0, 0.0, 0.0])["rejected"]


def test_percentile_interpolates():
    assert runner.percentile([0.0, 10.0], 0.5) == 5.0
    assert runner.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.9) == pytest.approx(4.6)


def test_parse_output_and_summarize():
    text = ('noise\nMB_DEVICE {"name":"NVIDIA H100 80GB HBM3","l2_bytes":52428800}\n'
            'MB_RESULT {"bench":"dram","name":"read","bytes":2147483648,"times_ms":[1,1,1,1,1]}\n')
    dev, res = runner.parse_output(text)
    assert dev["l2_bytes"] == 52428800 and len(res) == 1
    r = runner.summarize(res[0])
    assert r["bytes_per_s"] == pytest.approx(2147483648 / 1e-3)


# ---------------------------------------------------------------------------------------
# derivation from a fake sweep
# ---------------------------------------------------------------------------------------
def _times(ms: float, n: int = 30, jitter: float = 0.01) -> list[float]:
    return [ms * (1 + jitter * ((i % 5) - 2) / 2) for i in range(n)]


def _latency(fp: int, variant: str, cycles: float, spread: float = 0.0) -> dict:
    cpl = [cycles * (1 + spread * ((i % 4) - 1.5)) for i in range(16)]
    return {"bench": "latency", "name": f"{variant}_{fp}", "loads": 16384, "footprint_bytes": fp, "variant": variant,
            "cycles_per_load": cpl, "ns_per_load": [c / CLOCK * 1e9 for c in cpl],
            "times_ms": [c * 16384 / CLOCK * 1e3 for c in cpl], "sm_clock_hz": CLOCK}


@pytest.fixture
def fake_sweep() -> tuple[list[dict], dict]:
    """A hand-made fake sweep: numbers chosen so every derived parameter is easy to check."""
    device = {"name": "NVIDIA H100 80GB HBM3", "l2_bytes": L2, "sm_count": 132}
    raw = [
        {"bench": "dram", "name": "read", "bytes": 2 * GiB, "times_ms": _times(2 * GiB / 3.0e12 * 1e3)},
        {"bench": "dram", "name": "write", "bytes": 2 * GiB, "times_ms": _times(2 * GiB / 3.2e12 * 1e3)},  # not used
        {"bench": "dram", "name": "copy", "bytes": 4 * GiB, "times_ms": _times(4 * GiB / 3.1e12 * 1e3)},
        {"bench": "dram", "name": "triad", "bytes": 6 * GiB, "times_ms": _times(6 * GiB / 3.5e12 * 1e3, jitter=0.3)},  # rejected
    ]
    for mib, bw in ((1, 5000.0), (8, 5100.0), (16, 5200.0), (24, 4900.0), (40, 3000.0), (128, 1600.0)):
        raw.append({"bench": "l2", "name": f"read_{mib}MiB", "bytes": 4 * GiB, "footprint_bytes": mib * MiB,
                    "times_ms": _times(4 * GiB / (bw * CLOCK) * 1e3), "sm_clock_hz": CLOCK, "sm_clock_hz_runs": [CLOCK] * 30})
    raw += [_latency(16 * KiB, "ca", 33.0), _latency(32 * KiB, "ca", 35.0), _latency(1 * MiB, "cg", 260.0),
            _latency(4 * MiB, "cg", 270.0), _latency(8 * MiB, "cg", 280.0), _latency(32 * MiB, "cg", 400.0),
            _latency(512 * MiB, "ca", 800.0), _latency(1 * GiB, "ca", 820.0), _latency(4 * GiB, "ca", 1000.0),
            _latency(2 * GiB, "ca", 900.0, spread=0.2)]  # rejected: too noisy
    ops = 270336 * 64
    raw += [
        {"bench": "atomics", "name": "distinct", "ops": ops, "times_ms": _times(ops / (500.0 * CLOCK) * 1e3),
         "sm_clock_hz": 0.7 * CLOCK, "witness_sm_clock_hz": CLOCK},  # the block-0 probe of atomics is not used
        {"bench": "atomics", "name": "same_address", "ops": ops, "times_ms": _times(ops / (0.5 * CLOCK) * 1e3),
         "sm_clock_hz": 0.7 * CLOCK, "witness_sm_clock_hz": CLOCK},
        {"bench": "launch", "name": "stream_back_to_back", "ops": 10000, "times_ms": _times(20.0, 10)},
        {"bench": "launch", "name": "graph", "ops": 10000, "times_ms": _times(10.0, 10)},
        {"bench": "launch", "name": "round_trip", "ops": 1, "times_ms": [0.01 * (1 + i % 7) for i in range(100)]},
    ]
    raw += _new_benches()
    return [runner.summarize(r) for r in raw], device


SMS = 132


def _rate(bench: str, name: str, key: str, per_clk_per_sm: float, **extra) -> dict:
    """A throughput result whose `key` per run / median time / CLOCK / SMS is per_clk_per_sm (runs of 1 ms)."""
    return {"bench": bench, "name": name, key: per_clk_per_sm * SMS * CLOCK * 1e-3, "times_ms": _times(1.0),
            "sm_clock_hz": CLOCK, "sm_clock_hz_runs": [CLOCK] * 30, "sm_count": SMS, "check": "pass", **extra}


def _gpu_rate(bench: str, name: str, key: str, per_clk: float, **extra) -> dict:
    """A whole-GPU throughput result: `key` per run / median time / CLOCK = per_clk."""
    clock = {"witness_sm_clock_hz": CLOCK} if bench == "atomics" else {"sm_clock_hz_runs": [CLOCK] * 30}
    return {"bench": bench, "name": name, key: per_clk * CLOCK * 1e-3, "times_ms": _times(1.0), "sm_clock_hz": CLOCK,
            "check": "pass", **clock, **extra}


def _cycles(bench: str, name: str, cycles: float, spread: float = 0.0, **extra) -> dict:
    """A result timed with clock64 inside the kernel: cycles_per_op samples around `cycles`."""
    return {"bench": bench, "name": name, "steps": 1024, "times_ms": [0.5, 0.5, 0.5],
            "cycles_per_op": [cycles * (1 + spread * ((i % 4) - 1.5)) for i in range(32)], "check": "pass", **extra}


def _tlb(stride: int, fp: int, cycles: float) -> dict:
    r = _latency(fp, "cg", cycles)
    r.update(name=f"tlb{stride}_{fp}", stride_bytes=stride, sweep="tlb")
    return r


def _new_benches() -> list[dict]:
    """Fake results of the suites added for the whole issue-5 parameter list."""
    raw = [
        _rate("shared", "bw_32", "bytes", 100.0, vector_bits=32), _rate("shared", "bw_64", "bytes", 120.0, vector_bits=64),
        _rate("shared", "bw_128", "bytes", 125.0, vector_bits=128),
        _cycles("shared", "latency", 30.0),
    ]
    for w in range(1, 33):
        raw.append(_cycles("shared", f"conflict_tp_w{w}", 1.0 + 1.0 * (w - 1), ways=w, kind="throughput"))
        raw.append(_cycles("shared", f"conflict_lat_w{w}", 30.0 + 2.0 * (w - 1), ways=w, kind="latency"))
    raw += [
        _rate("pipes", "ffma_tp", "flops", 256.0), _rate("pipes", "dfma_tp", "flops", 128.0),
        _rate("pipes", "int_tp", "ops", 64.0), _rate("pipes", "imad_tp", "ops", 32.0),
        _rate("pipes", "rsqrt_tp", "ops", 16.0), _rate("pipes", "ex2_tp", "ops", 16.0), _rate("pipes", "sin_tp", "ops", 15.0),
        _cycles("pipes", "ffma_lat", 4.0), _cycles("pipes", "dfma_lat", 8.0), _cycles("pipes", "int_lat", 4.5),
        _cycles("pipes", "imad_lat", 4.0), _cycles("pipes", "rsqrt_lat", 18.0), _cycles("pipes", "ex2_lat", 20.0),
        _cycles("pipes", "sin_lat", 13.0),
        _rate("tensor", "mma_sync_fp16", "flops", 1024.0), _rate("tensor", "mma_sync_bf16", "flops", 1000.0),
        _rate("tensor", "wgmma_fp16_n128", "flops", 3900.0), _rate("tensor", "wgmma_fp16_n256", "flops", 4000.0),
        _rate("tensor", "wgmma_bf16_n256", "flops", 4000.0, check="fail"),  # rejected: failed its check
    ]
    for wpb, bps, cyc in ((1, 1, 20.0), (8, 1, 30.0), (16, 1, 34.0), (32, 1, 40.0), (8, 2, 50.0), (4, 4, 45.0)):
        raw.append(_cycles("barrier", f"w{wpb}_b{bps}", cyc, warps_per_block=wpb, blocks_per_sm=bps, blocks_kept=SMS * bps))
    for a in (1, 2, 4, 8, 32, 128, 1024):
        raw.append(_gpu_rate("atomics", f"few_{a}", "ops", min(0.33 * a, 260.0), addresses=a))
    raw += [_gpu_rate("atomic_types", name, "ops", rate) for name, rate in (
        ("red_f32_sector", 46.0), ("red_u32_contig", 270.0), ("red_f64_contig", 108.0), ("atom_f32_contig", 196.0))]
    raw += [
        _gpu_rate("scattered", "l2_store", "sectors", 100.0, level="l2", kind="store"),
        _gpu_rate("scattered", "l2_load", "sectors", 120.0, level="l2", kind="load"),
        _gpu_rate("scattered", "dram_store", "sectors", 20.0, level="dram", kind="store"),
        _gpu_rate("scattered", "dram_load", "sectors", 30.0, level="dram", kind="load"),
    ]
    fp = 32 * MiB
    while fp <= 64 * GiB:
        raw.append(_tlb(2 * MiB, fp, 300.0 if fp <= 2 * GiB else 360.0 if fp <= 8 * GiB else 600.0))
        fp *= 2
    for fp in (1 * MiB, 4 * MiB, 64 * MiB, 1 * GiB):
        raw.append(_tlb(64 * KiB, fp, 300.0 if fp <= 64 * MiB else 400.0))
    for n in (0, 1, 8, 64, 512):
        raw.append({"bench": "mix", "name": f"fma{n}", "bytes": 8 * 2**27, "flops": 2.0 * n * 2**27, "fma_per_element": n,
                    "times_ms": _times(0.36 + 0.005 * n), "sm_clock_hz": CLOCK, "sm_clock_hz_runs": [CLOCK] * 30,
                    "check": "pass"})
    for kind in ("read", "write", "copy"):
        for bits in (32, 128):
            for bps in (1, 8):
                raw.append({"bench": "dram", "name": f"{kind}_v{bits}_b{bps}", "bytes": 2 * GiB, "sweep": "occupancy_vector",
                            "kind": kind, "vector_bits": bits, "blocks_per_sm": bps, "warps_per_sm": 8 * bps,
                            "times_ms": _times(2 * GiB / (bps * bits * 1e10) * 1e3), "check": "pass"})
    return raw


def test_derive_from_the_fake_sweep(fake_sweep):
    results, device = fake_sweep
    params, missing = runner.derive(results, device)
    assert not missing
    v = {k: p["value"] for k, p in params.items()}
    assert v["sm_clock_measured_hz"] == pytest.approx(CLOCK)
    assert v["dram_achievable_bytes_per_s"] == pytest.approx(3.1e12, rel=1e-3)  # copy; triad rejected, write ignored
    assert "copy" in params["dram_achievable_bytes_per_s"]["from"]
    assert v["l2_bandwidth_bytes_per_clk"] == pytest.approx(5050.0, rel=1e-3)  # median of 1..24 MiB (<= 25 MiB)
    assert v["l1_latency_cycles"] == pytest.approx(34.0)
    assert v["l2_latency_cycles"] == pytest.approx(270.0)  # 1, 4, 8 MiB (32 MiB > L2/4)
    assert v["dram_latency_cycles"] == pytest.approx(820.0)  # 512 MiB, 1 GiB, 4 GiB; 2 GiB rejected
    assert v["atomic_ops_per_clk"] == pytest.approx(500.0, rel=1e-3)
    assert v["atomic_same_address_ops_per_clk"] == pytest.approx(0.5, rel=1e-3)
    assert v["launch_overhead_ns"] == pytest.approx(2000.0, rel=1e-3)
    assert v["graph_launch_overhead_ns"] == pytest.approx(1000.0, rel=1e-3)
    assert all(p["unit"] and p["from"] for p in params.values())
    rejected = {r["name"] for r in results if r["stats"]["rejected"]}
    assert rejected == {"triad", f"ca_{2 * GiB}", "round_trip", "wgmma_bf16_n256"}


def test_derive_the_new_parameters(fake_sweep):
    results, device = fake_sweep
    params, missing = runner.derive(results, device)
    v = {k: p["value"] for k, p in params.items()}
    assert v["shared_bandwidth_bytes_per_clk_per_sm"] == pytest.approx(125.0, rel=1e-6)  # the widest load wins
    assert "bw_128" in params["shared_bandwidth_bytes_per_clk_per_sm"]["from"]
    assert v["shared_latency_cycles"] == pytest.approx(30.0)
    assert v["shared_conflict_cycles_per_way"] == pytest.approx(1.0)  # slope of the throughput sweep, not the latency one
    assert v["fp32_flops_per_clk_per_sm"] == pytest.approx(256.0) and v["fp64_flops_per_clk_per_sm"] == pytest.approx(128.0)
    assert v["int32_ops_per_clk_per_sm"] == pytest.approx(64.0) and v["imad_ops_per_clk_per_sm"] == pytest.approx(32.0)
    assert v["sfu_ops_per_clk_per_sm"] == pytest.approx(16.0)  # median of rsqrt 16, ex2 16, sin 15
    assert v["fp32_latency_cycles"] == pytest.approx(4.0) and v["fp64_latency_cycles"] == pytest.approx(8.0)
    assert v["int32_latency_cycles"] == pytest.approx(4.5)
    assert v["sfu_latency_cycles"] == pytest.approx(19.0)  # rsqrt and ex2 only (sin's step has an FMUL too)
    assert v["tensor_mma_sync_fp16_flops_per_clk_per_sm"] == pytest.approx(1024.0)
    assert v["tensor_mma_sync_bf16_flops_per_clk_per_sm"] == pytest.approx(1000.0)
    assert v["tensor_wgmma_fp16_flops_per_clk_per_sm"] == pytest.approx(4000.0)  # best shape
    assert "tensor_tcgen05_fp16_flops_per_clk_per_sm" not in params and "tensor_tcgen05_fp16_flops_per_clk_per_sm" not in missing
    assert v["barrier_cycles"] == pytest.approx(34.0)  # 8, 16, 32 warps at 1 block per SM
    assert v["l2_scattered_store_sectors_per_clk"] == pytest.approx(100.0)
    assert v["l2_scattered_load_sectors_per_clk"] == pytest.approx(120.0)
    assert v["dram_scattered_store_sectors_per_clk"] == pytest.approx(20.0)
    assert v["dram_scattered_load_sectors_per_clk"] == pytest.approx(30.0)
    assert v["tlb_miss_extra_cycles"] == pytest.approx(300.0)  # 600 at 32/64 GiB minus 300 at 32 MiB
    # the TLB sweep does not leak into the cache latencies (its 64 KiB points sit at 1-64 MiB)
    assert v["l2_latency_cycles"] == pytest.approx(270.0)


def test_sweeps_are_recorded(fake_sweep):
    results, device = fake_sweep
    sw = runner.sweeps(results, device, CLOCK)
    few = {p["addresses"]: p["ops_per_clk"] for p in sw["atomic_few_address_sweep"]}
    assert few[1] == pytest.approx(0.33) and few[1024] == pytest.approx(260.0) and len(few) == 7
    conf = {p["ways"]: p for p in sw["shared_conflicts"]}
    assert conf[32]["throughput_cycles"] == pytest.approx(32.0) and conf[32]["latency_cycles"] == pytest.approx(92.0)
    bar = {(p["warps_per_block"], p["blocks_per_sm"]): p["cycles_per_barrier"] for p in sw["barrier"]}
    assert bar[(8, 2)] == pytest.approx(50.0) and len(bar) == 6
    steps = sw["tlb"]["2 MiB"]["steps"]
    assert [(s["to_bytes"], round(s["extra_cycles"])) for s in steps] == [(4 * GiB, 60), (16 * GiB, 240)]
    assert [s["to_bytes"] for s in sw["tlb"]["64 KiB"]["steps"]] == [1 * GiB]
    mix = {p["fma_per_element"]: p for p in sw["mix"]}
    assert mix[512]["flops"] == 1024 * 2**27 and mix[0]["seconds"] == pytest.approx(0.36e-3)
    assert len(sw["dram_occupancy_vector"]) == 12 and sw["l2_bytes"] == L2
    assert json.loads(json.dumps(sw)) == sw  # plain JSON


def test_no_clear_tlb_step_is_reported_missing(fake_sweep):
    results, device = fake_sweep
    flat = [r for r in results if r.get("sweep") != "tlb"]
    flat += [runner.summarize(_tlb(2 * MiB, fp, 300.0 + i)) for i, fp in enumerate((32 * MiB, 1 * GiB, 8 * GiB, 64 * GiB))]
    params, missing = runner.derive(flat, device)
    assert "tlb_miss_extra_cycles" not in params and "no clear step" in missing["tlb_miss_extra_cycles"]


def test_a_failed_check_rejects_the_measurement():
    r = runner.summarize(_rate("tensor", "x", "flops", 1000.0, check="fail"))
    assert r["stats"]["rejected"] and "correctness check" in r["stats"]["reason"] and "flops_per_s" not in r
    assert "flops_per_s" in runner.summarize(_rate("tensor", "x", "flops", 1000.0))


def test_a_key_given_twice_rejects_the_measurement():
    _, res = runner.parse_output('MB_RESULT {"bench":"scattered","name":"l2_load","sectors":268435456,'
                                 '"times_ms":[1,1,1,1],"sectors":524288}\n')
    r = runner.summarize(res[0])
    assert r["_duplicate_keys"] == ["sectors"] and r["stats"]["rejected"] and "twice" in r["stats"]["reason"]


def test_cycle_samples_decide_the_rejection():
    ok = runner.summarize(_cycles("barrier", "w8_b1", 30.0, spread=0.01))
    assert not ok["stats"]["rejected"] and ok["cycles_stats"]["median"] == pytest.approx(30.0, rel=0.02)
    noisy = runner.summarize(_cycles("barrier", "w8_b1", 30.0, spread=0.2))
    assert noisy["stats"]["rejected"] and "relative spread" in noisy["stats"]["reason"]


def test_time_and_clock_of_the_same_run_are_paired():
    """The H100 case: wgmma ran at 1.83 GHz in 18 runs and throttled in the last two; the probe of
    the last run (1.59 GHz) must not be divided into the median time."""
    times = [2.303] * 18 + [2.556, 2.649]
    cycles = 2.303e-3 * 1.828e9
    flops = 4096.0 * SMS * cycles
    runs = [1.828e9] * 18 + [cycles / 2.556e-3, cycles / 2.649e-3]
    r = runner.summarize({"bench": "tensor", "name": "wgmma_fp16_n128", "flops": flops, "times_ms": times,
                          "sm_clock_hz": runs[-1], "sm_clock_hz_runs": runs, "sm_count": SMS})
    assert r["run_cycles_stats"]["median"] == pytest.approx(cycles)
    assert runner._per_clk_per_sm(r, "flops_per_s", SMS, None) == pytest.approx(4096.0)
    legacy = dict(r)  # a file written before per-run clocks: the last run's time x its clock
    del legacy["sm_clock_hz_runs"], legacy["run_cycles_stats"]
    assert runner._per_clk_per_sm(legacy, "flops_per_s", SMS, None) == pytest.approx(4096.0)
    naive = flops / (2.303e-3 * runs[-1]) / SMS  # what the median time over the last clock gives
    assert naive > 4600
    # atomics: the block-0 probe is ignored; the witness, else the suite's clock
    a = runner.summarize({"bench": "atomics", "name": "same_address", "ops": 1e6, "times_ms": [1.0] * 5, "sm_clock_hz": 1.3e9})
    assert runner._per_clk(a, "ops", CLOCK) == pytest.approx(1e6 / (1e-3 * CLOCK))
    assert runner._per_clk(dict(a, witness_sm_clock_hz=1.9e9), "ops", CLOCK) == pytest.approx(1e6 / (1e-3 * 1.9e9))


def test_slope_is_least_squares():
    assert runner._slope([1, 2, 3, 4], [3.0, 5.0, 7.0, 9.0]) == pytest.approx(2.0)
    assert runner._slope([1, 2, 3], [1.0, 1.0, 4.0]) == pytest.approx(1.5)


def test_derive_reports_what_it_could_not_derive(fake_sweep):
    results, device = fake_sweep
    params, missing = runner.derive([r for r in results if r["bench"] != "atomics"], device)
    assert "atomic_ops_per_clk" not in params and "atomic_ops_per_clk" in missing


def test_arch_and_suite_selection():
    assert runner.arch_for("9.0") == "sm_90a" and runner.arch_for("10.0") == "sm_100a"
    assert runner.arch_for("8.0") == "sm_80" and runner.arch_for("12.0") == "sm_120"
    assert runner.parse_suite("launch,dram") == ["dram", "launch"]
    assert runner.parse_suite("mix,shared,tcgen05") == ["shared", "mix", "tcgen05"]
    with pytest.raises(KeetError, match="unknown suite"):
        runner.parse_suite("dram,bogus")


# ---------------------------------------------------------------------------------------
# calibrate()
# ---------------------------------------------------------------------------------------
def _calib_file(tmp_path: Path, fake_sweep, name: str = "NVIDIA H100 80GB HBM3") -> Path:
    results, device = fake_sweep
    params, _ = runner.derive(results, device)
    doc = {"suite_version": runner.SUITE_VERSION, "date_utc": "2026-11-21T12:00:00Z",
           "device": {"name": name, "nvidia_smi_name": name, "driver": "580.65.06"}, "parameters": params}
    path = tmp_path / "calib_h100.json"
    path.write_text(json.dumps(doc))
    return path


def test_calibrate_writes_values_with_provenance(tmp_path, fake_sweep):
    hw = tmp_path / "hw"
    hw.mkdir()
    shutil.copy(HARDWARE / "h100.toml", hw / "h100.toml")
    before_text = (hw / "h100.toml").read_text()
    before = tomllib.loads(before_text)
    calib = _calib_file(tmp_path, fake_sweep)

    dry = calibrate(calib, "h100", hw, dry_run=True)
    assert (hw / "h100.toml").read_text() == before_text and dry

    changes = calibrate(calib, "h100", hw)
    after = tomllib.loads((hw / "h100.toml").read_text())
    names = {c["name"] for c in changes}
    assert "dram_latency_cycles" in names and "launch_overhead_ns" in names
    for name in names:
        entry = after["params"][name]
        assert entry["source"] == "microbenchmark"
        assert entry["ref"].startswith("microbench suite v1, ") and "calib_h100.json" in entry["ref"]
        assert "NVIDIA H100 80GB HBM3 driver 580.65.06" in entry["ref"] and "2026-11-21" in entry["ref"]
        assert entry["note"]
    assert after["params"]["dram_latency_cycles"]["value"] == 820
    assert after["params"]["l2_bandwidth_bytes_per_clk"]["value"] == pytest.approx(5050.0, rel=1e-3)
    # everything else untouched, header comments kept
    assert after["gpu"] == before["gpu"]
    for name, entry in before["params"].items():
        if name not in names:
            assert after["params"][name] == entry
    assert (hw / "h100.toml").read_text().startswith(before_text.split("[gpu]")[0])

    # idempotent: running again replaces, never duplicates
    calibrate(calib, "h100", hw)
    text = (hw / "h100.toml").read_text()
    assert text.count("[params.dram_latency_cycles]") == 1
    assert tomllib.loads(text) == after


def test_calibrate_replaces_an_existing_entry(tmp_path, fake_sweep):
    hw = tmp_path / "hw"
    hw.mkdir()
    (hw / "h100.toml").write_text(
        '# header\n[gpu]\nid = "h100"\nname = "NVIDIA H100 SXM5 80GB HBM3"\nvendor = "nvidia"\n\n'
        '[params.launch_overhead_ns]\nvalue = 5000\nunit = "ns"\nsource = "microbenchmark"\nref = "old"\n\n'
        '# about sm_count\n[params.sm_count]\nvalue = 132\nunit = "SM"\nsource = "vendor"\nref = "wp"\n')
    changes = calibrate(_calib_file(tmp_path, fake_sweep), "h100", hw)
    text = (hw / "h100.toml").read_text()
    assert {c["name"]: c["old"] for c in changes}["launch_overhead_ns"] == 5000
    assert "# about sm_count\n[params.sm_count]" in text and 'ref = "old"' not in text
    assert tomllib.loads(text)["params"]["launch_overhead_ns"]["value"] == 2000


def test_calibrate_refuses_another_gpu(tmp_path, fake_sweep):
    hw = tmp_path / "hw"
    hw.mkdir()
    shutil.copy(HARDWARE / "h200.toml", hw / "h200.toml")
    before = (hw / "h200.toml").read_text()
    with pytest.raises(KeetError, match="refusing"):
        calibrate(_calib_file(tmp_path, fake_sweep), "h200", hw)
    assert (hw / "h200.toml").read_text() == before


def test_gpu_name_matching():
    assert gpu_names_match("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB HBM3")
    assert gpu_names_match("NVIDIA H200", "NVIDIA H200 SXM 141GB HBM3e")
    assert not gpu_names_match("NVIDIA H100 80GB HBM3", "NVIDIA H200 SXM 141GB HBM3e")
    assert not gpu_names_match("NVIDIA H100 PCIe", "NVIDIA H100 SXM5 80GB HBM3")
    assert not gpu_names_match("NVIDIA A100-SXM4-80GB", "NVIDIA H100 SXM5 80GB HBM3")


def test_remove_table_keeps_neighbours():
    text = "[a]\nx = 1\n\n[params.y]\nvalue = 2\n# y comment\n\n# next\n[b]\nz = 3\n"
    out, found = remove_table(text, "params.y")
    assert found and out == "[a]\nx = 1\n\n# next\n[b]\nz = 3\n"
    assert remove_table(text, "params.q") == (text, False)


def test_every_source_is_a_registered_program():
    sources = sorted(str(f.relative_to(runner.CUDA_DIR).with_suffix("")) for f in runner.CUDA_DIR.rglob("*.cu"))
    assert sources == sorted(runner.PROGRAMS.values())
    assert set(runner.REQUIRES_CC_MAJOR) <= set(runner.PROGRAMS)


def test_run_suite_skips_blackwell_programs_on_hopper(tmp_path, monkeypatch, capsys):
    """run_suite end to end with nvidia-smi, nvcc and the programs faked: the sm_100a suite is
    recorded as skipped with its reason, the others run, clocks are taken before and after each."""
    snapshot = {"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04", "clocks.sm_mhz": 1980.0}
    monkeypatch.setattr(runner, "smi", lambda fields: ["9.0"])
    monkeypatch.setattr(runner, "smi_snapshot", lambda: dict(snapshot))
    monkeypatch.setattr(runner, "find_nvcc", lambda explicit: "/fake/nvcc")
    built = []

    def fake_build(program, nvcc, arch, build_dir):
        built.append((program, arch))
        return {"program": program, "cmd": [nvcc, arch], "seconds": 0.1, "exe": program}

    device = ('MB_DEVICE {"program":"x","name":"NVIDIA H100 80GB HBM3","cc":"9.0","sm_count":132,"l2_bytes":52428800}')
    outputs = {
        "barrier": device + "\nMB_RESULT " + json.dumps(_cycles("barrier", "w8_b1", 30.0, warps_per_block=8, blocks_per_sm=1)),
        "pipes": device + "\nMB_RESULT " + json.dumps(_rate("pipes", "ffma_tp", "flops", 250.0))
                 + "\nCHECK_FAIL pipes imad_tp: 1 of 2 chains differ\n",
    }

    def fake_run(cmd, timeout):
        out = "Cuda compilation tools, release 13.0" if cmd[-1] == "--version" else outputs[cmd[0]]
        return subprocess.CompletedProcess(cmd, 0, stdout=out, stderr="")

    monkeypatch.setattr(runner, "build", fake_build)
    monkeypatch.setattr(runner, "_run", fake_run)
    monkeypatch.setattr(runner.sys.stderr, "isatty", lambda: True)  # progress is printed for a terminal only
    doc = runner.run_suite(tmp_path / "calib.json", "barrier,pipes,tcgen05")
    assert sorted(built) == [("barrier", "sm_90a"), ("pipes", "sm_90a")]
    assert "10.x" in doc["skipped"]["tcgen05"] and "9.0" in doc["skipped"]["tcgen05"]
    assert doc["parameters"]["barrier_cycles"]["value"] == pytest.approx(30.0)
    assert doc["parameters"]["fp32_flops_per_clk_per_sm"]["value"] == pytest.approx(250.0)
    assert doc["runs"]["pipes"]["check_failures"] == ["CHECK_FAIL pipes imad_tp: 1 of 2 chains differ"]
    assert doc["runs"]["barrier"]["clocks_before"]["clocks.sm_mhz"] == 1980.0 and doc["runs"]["barrier"]["clocks_after"]
    assert doc["total_seconds"] >= 0 and doc["sweeps"]["barrier"][0]["cycles_per_barrier"] == pytest.approx(30.0)
    assert json.loads((tmp_path / "calib.json").read_text())["skipped"] == doc["skipped"]
    err = capsys.readouterr().err
    assert "skipping tcgen05" in err and "[2/2] barrier ... done" in err and "1 failed check(s)" in err


def test_cli_errors_are_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "microbench.cli", "run", "--out", str(tmp_path / "x.json"),
                        "--suite", "nope", "--build-only"], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0 and "unknown suite" in p.stderr


def test_a_measurement_may_declare_a_looser_tolerance():
    times = [30.3, 30.6, 30.9, 31.2, 31.5, 32.0, 32.6, 33.5, 34.7, 35.3]  # ~15% p10-p90
    assert runner.summarize({"bench": "launch", "name": "x", "ops": 1, "times_ms": times})["stats"]["rejected"]
    loose = runner.summarize({"bench": "launch", "name": "x", "ops": 1, "times_ms": times, "max_rel_spread": 0.25})
    assert not loose["stats"]["rejected"] and loose["stats"]["max_rel_spread"] == 0.25


# ---------------------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------------------
def test_plots_from_a_fake_calibration_file(tmp_path, fake_sweep):
    from microbench import plots

    results, device = fake_sweep
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps({"device": {"name": "NVIDIA H100 80GB HBM3", "cuda": device}, "results": results}))
    written = plots.make_plots([calib, calib], tmp_path / "img")
    assert sorted(p.name for p in written) == sorted(
        f"microbench_{n}.svg" for n in ("bandwidth", "latency", "tlb", "bank_conflicts", "barrier", "mix", "dram_occupancy"))
    for p in written:
        text = p.read_text()
        assert text.startswith("<?xml") and "H100 80GB HBM3" in text
    assert "cycles per __syncthreads()" in (tmp_path / "img" / "microbench_barrier.svg").read_text()


def test_committed_calibration_files_rederive_to_themselves(tmp_path):
    """The committed calib files were derived with this runner: re-deriving changes nothing."""
    for path in sorted((ROOT / "microbench" / "calib").glob("*.json")):
        doc = json.loads(path.read_text())
        if "rederived_utc" not in doc and "sweeps" not in doc:
            continue
        copy = tmp_path / path.name
        copy.write_text(path.read_text())
        again = runner.rederive(copy)
        assert again["parameters"] == doc["parameters"], path.name
        assert again["parameters_missing"] == doc["parameters_missing"], path.name
