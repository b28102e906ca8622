"""microbench: statistics and rejection, parameter derivation, calibrate(), and (when an
nvcc is given through $NVCC) that every CUDA program compiles. No GPU needed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from keet.errors import KeetError
from microbench import runner
from microbench.calibrate import calibrate, gpu_names_match, remove_table

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
                    "times_ms": _times(4 * GiB / (bw * CLOCK) * 1e3), "sm_clock_hz": CLOCK})
    raw += [_latency(16 * KiB, "ca", 33.0), _latency(32 * KiB, "ca", 35.0), _latency(1 * MiB, "cg", 260.0),
            _latency(4 * MiB, "cg", 270.0), _latency(8 * MiB, "cg", 280.0), _latency(32 * MiB, "cg", 400.0),
            _latency(512 * MiB, "ca", 800.0), _latency(1 * GiB, "ca", 820.0), _latency(4 * GiB, "ca", 1000.0),
            _latency(2 * GiB, "ca", 900.0, spread=0.2)]  # rejected: too noisy
    ops = 270336 * 64
    raw += [
        {"bench": "atomics", "name": "distinct", "ops": ops, "times_ms": _times(ops / (500.0 * CLOCK) * 1e3), "sm_clock_hz": CLOCK},
        {"bench": "atomics", "name": "same_address", "ops": ops, "times_ms": _times(ops / (0.5 * CLOCK) * 1e3), "sm_clock_hz": CLOCK},
        {"bench": "launch", "name": "stream_back_to_back", "ops": 10000, "times_ms": _times(20.0, 10)},
        {"bench": "launch", "name": "graph", "ops": 10000, "times_ms": _times(10.0, 10)},
        {"bench": "launch", "name": "round_trip", "ops": 1, "times_ms": [0.01 * (1 + i % 7) for i in range(100)]},
    ]
    return [runner.summarize(r) for r in raw], device


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
    assert rejected == {"triad", f"ca_{2 * GiB}", "round_trip"}


def test_derive_reports_what_it_could_not_derive(fake_sweep):
    results, device = fake_sweep
    params, missing = runner.derive([r for r in results if r["bench"] != "atomics"], device)
    assert "atomic_ops_per_clk" not in params and "atomic_ops_per_clk" in missing


def test_arch_and_suite_selection():
    assert runner.arch_for("9.0") == "sm_90a" and runner.arch_for("10.0") == "sm_100a"
    assert runner.arch_for("8.0") == "sm_80" and runner.arch_for("12.0") == "sm_120"
    assert runner.parse_suite("launch,dram") == ["dram", "launch"]
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
        '[params.launch_overhead_ns]\nvalue = 5000\nunit = "ns"\nsource = "publication"\nref = "old"\n\n'
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


# ---------------------------------------------------------------------------------------
# every CUDA program compiles (needs an nvcc: NVCC=/path/to/nvcc)
# ---------------------------------------------------------------------------------------
@pytest.mark.skipif(not os.environ.get("NVCC"), reason="set NVCC=/path/to/nvcc to compile the CUDA programs")
def test_every_program_compiles(tmp_path):
    out = tmp_path / "build.json"
    p = subprocess.run([sys.executable, "-m", "microbench.runner", "--build-only", "--nvcc", os.environ["NVCC"],
                        "--out", str(out)], capture_output=True, text=True, timeout=900, cwd=ROOT, check=False)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert set(doc["builds"]) == set(runner.PROGRAMS)
    assert sorted(f.stem for f in runner.CUDA_DIR.glob("*.cu")) == sorted(runner.PROGRAMS.values())


def test_cli_errors_are_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "microbench.cli", "run", "--out", str(tmp_path / "x.json"),
                        "--suite", "nope", "--build-only"], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0 and "unknown suite" in p.stderr


def test_a_measurement_may_declare_a_looser_tolerance():
    times = [30.3, 30.6, 30.9, 31.2, 31.5, 32.0, 32.6, 33.5, 34.7, 35.3]  # ~15% p10-p90
    assert runner.summarize({"bench": "launch", "name": "x", "ops": 1, "times_ms": times})["stats"]["rejected"]
    loose = runner.summarize({"bench": "launch", "name": "x", "ops": 1, "times_ms": times, "max_rel_spread": 0.25})
    assert not loose["stats"]["rejected"] and loose["stats"]["max_rel_spread"] == 0.25
