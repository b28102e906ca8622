"""microbench/amd.py without an AMD GPU: detection and parsing of FAKE tool outputs (rocminfo,
amd-smi, rocm-smi: hand-written in the shape those tools print, values of an MI250X GCD and an
MI300X), backend choice, compiler plumbing, the clock rules, parameter derivation from a FAKE
sweep, and a whole `run_suite` over FAKE program outputs whose result calibrate() accepts."""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from keet.errors import KeetError
from microbench import amd, runner
from perfmodel.calibrate import calibrate

ROOT = Path(__file__).resolve().parents[1]
HARDWARE = ROOT / "perfmodel" / "hardware"
KiB, MiB, GiB = 2**10, 2**20, 2**30

FAKE_ROCMINFO_MI300X = """ROCk module is loaded
=====================
HSA System Attributes
=====================
Runtime Version:         1.14
System Timestamp Freq.:  1000.000000MHz
==========
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD EPYC 9654 96-Core Processor
  Marketing Name:          AMD EPYC 9654 96-Core Processor
  Vendor Name:             CPU
  Device Type:             CPU
  Cache Info:
    L1:                      32768(0x8000) KB
  Compute Unit:            192
*******
Agent 2
*******
  Name:                    gfx942
  Uuid:                    GPU-0000000000000000
  Marketing Name:          AMD Instinct MI300X
  Vendor Name:             AMD
  Feature:                 KERNEL_DISPATCH
  Device Type:             GPU
  Cache Info:
    L1:                      32(0x20) KB
    L2:                      4096(0x1000) KB
    L3:                      262144(0x40000) KB
  Chip ID:                 29857(0x74a1)
  Cacheline Size:          64(0x40)
  Max Clock Freq. (MHz):   2100
  Compute Unit:            304
  SIMDs per CU:            4
  Wavefront Size:          64(0x40)
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-
*******
Agent 3
*******
  Name:                    gfx942
  Marketing Name:          AMD Instinct MI300X
  Device Type:             GPU
  Compute Unit:            304
"""

FAKE_ROCMINFO_MI250X = """*******
Agent 1
*******
  Name:                    AMD EPYC 7A53 64-Core Processor
  Device Type:             CPU
*******
Agent 2
*******
  Name:                    gfx90a
  Marketing Name:          AMD Instinct MI250X
  Device Type:             GPU
  Cache Info:
    L1:                      16(0x10) KB
    L2:                      8192(0x2000) KB
  Max Clock Freq. (MHz):   1700
  Compute Unit:            110
  SIMDs per CU:            4
  Wavefront Size:          64(0x40)
"""

FAKE_ROCM_SMI_JSON = json.dumps({
    "card0": {"Card Series": "AMD Instinct MI250X", "Card Model": "0x740c", "GFX Version": "gfx90a",
              "sclk clock speed:": "(800Mhz)", "mclk clock speed:": "(1600Mhz)", "fclk clock speed:": "(1600Mhz)"},
    "system": {"Driver version": "6.3.6"},
})
FAKE_AMD_SMI_STATIC = "WARNING: banner line some versions print\n" + json.dumps([{
    "gpu": 0, "asic": {"market_name": "AMD Instinct MI300X", "target_graphics_version": "gfx942", "num_compute_units": 304},
    "driver": {"name": "amdgpu", "version": "6.8.5"}}])
FAKE_AMD_SMI_CLOCK = json.dumps([{
    "gpu": 0, "clock": {"gfx_0": {"clk": {"value": 2100, "unit": "MHz"}, "min_clk": {"value": 500, "unit": "MHz"}},
                        "mem_0": {"clk": {"value": 1300, "unit": "MHz"}}}}])


def fake_run(answers: dict):
    """A runner._run stand-in: answers[cmd[0]] is (rc, stdout), or a callable(cmd) -> (rc, stdout);
    a missing tool raises FileNotFoundError as subprocess does."""
    def run(cmd, timeout):
        if cmd[0] not in answers:
            raise FileNotFoundError(cmd[0])
        ans = answers[cmd[0]]
        rc, out = ans(cmd) if callable(ans) else ans
        return subprocess.CompletedProcess(cmd, rc, out, "")
    return run


def amd_smi(cmd):
    return (0, FAKE_AMD_SMI_STATIC) if "static" in cmd else (0, FAKE_AMD_SMI_CLOCK)


# ---------------------------------------------------------------------------------------
# parsing and detection
# ---------------------------------------------------------------------------------------
def test_parse_rocminfo_fake_mi300x():
    agents = amd.parse_rocminfo(FAKE_ROCMINFO_MI300X)
    assert len(agents) == 2  # the CPU agent is not a GPU
    a = agents[0]
    assert a["arch"] == "gfx942" and a["name"] == "AMD Instinct MI300X" and a["cus"] == 304
    assert a["max_clock_mhz"] == 2100 and a["wavefront_size"] == 64 and a["simds_per_cu"] == 4
    assert (a["l1_bytes"], a["l2_bytes"], a["l3_bytes"]) == (32 * KiB, 4 * MiB, 256 * MiB)


def test_parse_rocminfo_fake_mi250x_has_no_l3():
    (a,) = amd.parse_rocminfo(FAKE_ROCMINFO_MI250X)
    assert a["arch"] == "gfx90a" and a["cus"] == 110 and a["l2_bytes"] == 8 * MiB and "l3_bytes" not in a


def test_parse_smi_fakes():
    r = amd.parse_rocm_smi_json(FAKE_ROCM_SMI_JSON)
    assert r == {"name": "AMD Instinct MI250X", "arch": "gfx90a", "sclk_mhz": 800, "mclk_mhz": 1600,
                 "driver_version": "6.3.6"}
    a = amd.parse_amd_smi_json(FAKE_AMD_SMI_STATIC[FAKE_AMD_SMI_STATIC.index("["):], FAKE_AMD_SMI_CLOCK)
    assert a == {"name": "AMD Instinct MI300X", "arch": "gfx942", "driver_version": "6.8.5", "sclk_mhz": 2100,
                 "mclk_mhz": 1300}


def test_smi_snapshot_prefers_amd_smi_and_falls_back_to_rocm_smi():
    snap = amd.smi_snapshot(fake_run({"amd-smi": amd_smi, "rocm-smi": (0, FAKE_ROCM_SMI_JSON)}))
    assert snap["tool"] == "amd-smi" and snap["driver_version"] == "6.8.5"
    snap = amd.smi_snapshot(fake_run({"amd-smi": (1, ""), "rocm-smi": (0, FAKE_ROCM_SMI_JSON)}))
    assert snap["tool"] == "rocm-smi" and snap["sclk_mhz"] == 800
    assert "error" in amd.smi_snapshot(fake_run({}))


def test_detect_gpu_from_fake_tools():
    gpu = amd.detect_gpu(fake_run({"rocminfo": (0, FAKE_ROCMINFO_MI300X), "amd-smi": amd_smi}))
    assert gpu["arch"] == "gfx942" and gpu["name"] == "AMD Instinct MI300X" and gpu["gpu_count"] == 2
    assert gpu["smi"]["driver_version"] == "6.8.5"
    # no rocminfo: amd-smi alone identifies the GPU
    gpu = amd.detect_gpu(fake_run({"amd-smi": amd_smi}))
    assert gpu["arch"] == "gfx942" and gpu["source"] == "amd-smi"
    with pytest.raises(KeetError, match="no AMD GPU"):
        amd.detect_gpu(fake_run({"rocminfo": (1, "")}))


def test_pick_backend():
    nvidia = fake_run({"nvidia-smi": (0, "NVIDIA H100 80GB HBM3\n"), "rocminfo": (0, FAKE_ROCMINFO_MI250X)})
    amd_only = fake_run({"nvidia-smi": (9, ""), "rocminfo": (0, FAKE_ROCMINFO_MI250X)})
    nothing = fake_run({})
    assert amd.pick_backend("auto", False, nvidia) == "cuda"
    assert amd.pick_backend("auto", False, amd_only) == "hip"
    assert amd.pick_backend("hip", False, nothing) == "hip" and amd.pick_backend("cuda", False, nothing) == "cuda"
    assert amd.pick_backend("auto", True, nothing) == "cuda"
    assert amd.pick_backend("auto", True, nothing, arch="gfx90a") == "hip"
    with pytest.raises(KeetError, match="no GPU found"):
        amd.pick_backend("auto", False, nothing)
    with pytest.raises(KeetError, match="unknown backend"):
        amd.pick_backend("rocm", False, nothing)


def test_arch_names_and_gpu_ids():
    assert amd.base_arch("gfx90a:sramecc+:xnack-") == "gfx90a"
    assert amd.base_arch("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-") == "gfx942"
    with pytest.raises(KeetError):
        amd.base_arch("sm_90a")
    assert amd.isa_version("gfx942") == 9402 and amd.isa_version("gfx90a") == 9010 and amd.isa_version("gfx940") == 9400
    assert amd.gpu_id_for("gfx90a", "AMD Instinct MI250X") == "mi250x"
    assert amd.gpu_id_for("gfx942", "AMD Instinct MI300A") == "mi300a"
    assert amd.gpu_id_for("gfx942", "", cus=304) == "mi300x" and amd.gpu_id_for("gfx942", "gfx942", cus=228) == "mi300a"
    assert amd.gpu_id_for("gfx1100", "Radeon") is None


# ---------------------------------------------------------------------------------------
# compiler plumbing (no compiler run)
# ---------------------------------------------------------------------------------------
def test_compiler_commands():
    hipcc = amd.Compiler("/usr/bin/hipcc", "hipcc", "gfx90a:xnack-")
    assert hipcc.env["HIP_PLATFORM"] == "amd"
    assert hipcc.command(Path("a.hip"), Path("a")) == ["/usr/bin/hipcc", "--offload-arch=gfx90a", "-O3", "-std=c++17",
                                                       "-o", "a", "a.hip"]
    clang = amd.Compiler("/usr/bin/clang++-19", "clang", "gfx942", ["--rocm-device-lib-path=/x"])
    assert clang.command(Path("a.hip"), Path("a.o"), compile_only=True)[:3] == ["/usr/bin/clang++-19", "-x", "hip"]
    assert "--rocm-device-lib-path=/x" in clang.flags() and "-c" in clang.command(Path("a"), Path("b"), True)


def test_device_lib_shim_links_and_adds_the_isa_file(tmp_path):
    libdir = tmp_path / "bitcode"
    libdir.mkdir()
    for name in ("ockl.bc", "ocml.bc", "oclc_isa_version_940.bc"):
        (libdir / name).write_bytes(b"BC")
    calls = []

    def fake_clang(cmd, timeout):
        calls.append(cmd)
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"fake bitcode")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    shim = amd.device_lib_shim("/usr/bin/clang-19", "gfx942", libdir, tmp_path / "work", run=fake_clang)
    assert sorted(p.name for p in shim.iterdir()) == sorted(["oclc_isa_version_940.bc", "oclc_isa_version_942.bc",
                                                              "ockl.bc", "ocml.bc"])
    assert (shim / "ockl.bc").is_symlink() and not (libdir / "oclc_isa_version_942.bc").exists()
    assert "-mcpu=gfx942" in calls[0] and "9402" in (tmp_path / "work" / "isa_version_942.cl").read_text()
    amd.device_lib_shim("/usr/bin/clang-19", "gfx942", libdir, tmp_path / "work", run=fake_clang)
    assert len(calls) == 1  # made once


def test_an_explicit_compiler_that_does_not_exist_is_one_clear_error(tmp_path):
    with pytest.raises(KeetError, match="cannot compile HIP for gfx942"):
        amd.find_compiler("gfx942", explicit=str(tmp_path / "no-such-hipcc"), work=tmp_path)


# ---------------------------------------------------------------------------------------
# clocks
# ---------------------------------------------------------------------------------------
def test_counter_rules():
    assert amd.counter_is_cycles({"counter_hz": 2.1e9, "wall_clock_hz": 1e8})
    assert not amd.counter_is_cycles({"counter_hz": 1e8, "wall_clock_hz": 1e8})  # constant-rate counter
    assert not amd.counter_is_cycles({})
    assert amd.fallback_clock_hz({"max_sclk_khz": 2100000}) == 2.1e9
    assert amd.fallback_clock_hz({}, {"max_clock_mhz": 1700}) == 1.7e9
    r = {"bench": "latency", "ns_per_load": [100.0, 200.0], "cycles_per_load": [10.0, 20.0], "sm_clock_hz": 1e8}
    n = amd.normalize(r, {"counter_hz": 1e8, "wall_clock_hz": 1e8}, 2e9)
    assert n["cycles_per_load"] == pytest.approx([200.0, 400.0]) and n["sm_clock_hz"] == 2e9 and "peak engine clock" in n["clock_source"]
    assert amd.normalize(r, {"counter_hz": 2e9, "wall_clock_hz": 1e8}, 2e9) == r


# ---------------------------------------------------------------------------------------
# derivation from a FAKE sweep (an MI300X-shaped device, numbers chosen to be easy to check)
# ---------------------------------------------------------------------------------------
CLK = 2.0e9
CUS = 304
DEVICE_942 = {"name": "AMD Instinct MI300X", "arch": "gfx942:sramecc+:xnack-", "cu_count": CUS, "sm_count": CUS,
              "l2_bytes": 4 * MiB, "max_sclk_khz": 2100000, "counter_hz": CLK, "wall_clock_hz": 1e8}
GPU_942 = {"arch": "gfx942", "name": "AMD Instinct MI300X", "cus": CUS, "l1_bytes": 32 * KiB, "l2_bytes": 4 * MiB,
           "l3_bytes": 256 * MiB, "max_clock_mhz": 2100}


def _times(ms: float, n: int = 30, jitter: float = 0.01) -> list[float]:
    return [ms * (1 + jitter * ((i % 5) - 2) / 2) for i in range(n)]


def _lat(fp: int, variant: str, cycles: float) -> dict:
    cpl = [cycles] * 16
    return {"bench": "latency", "name": f"{variant}_{fp}", "loads": 16384, "footprint_bytes": fp, "variant": variant,
            "cycles_per_load": cpl, "ns_per_load": [c / CLK * 1e9 for c in cpl],
            "times_ms": [c * 16384 / CLK * 1e3 for c in cpl], "sm_clock_hz": CLK}


def fake_sweep_942() -> list[dict]:
    raw = [
        {"bench": "dram", "name": "read", "bytes": 2 * GiB, "times_ms": _times(2 * GiB / 4.3e12 * 1e3), "sm_clock_hz": CLK},
        {"bench": "dram", "name": "write", "bytes": 2 * GiB, "times_ms": _times(2 * GiB / 4.9e12 * 1e3)},  # not used
        {"bench": "dram", "name": "copy", "bytes": 4 * GiB, "times_ms": _times(4 * GiB / 4.0e12 * 1e3)},
        {"bench": "dram", "name": "triad", "bytes": 6 * GiB, "times_ms": _times(6 * GiB / 4.1e12 * 1e3)},
    ]
    for fp, bw in ((256 * KiB, 10000.0 * CLK), (1 * MiB, 12000.0 * CLK), (2 * MiB, 11000.0 * CLK),
                   (4 * MiB, 9000.0 * CLK), (8 * MiB, 14e12), (16 * MiB, 13e12), (32 * MiB, 12e12), (64 * MiB, 11e12),
                   (96 * MiB, 10e12), (128 * MiB, 9e12), (512 * MiB, 4.5e12)):
        raw.append({"bench": "cache", "name": f"read_{fp}", "bytes": 8 * GiB, "footprint_bytes": fp,
                    "times_ms": _times(8 * GiB / bw * 1e3), "sm_clock_hz": CLK})
    raw += [_lat(4 * KiB, "ca", 120.0), _lat(16 * KiB, "ca", 124.0), _lat(64 * KiB, "ca", 300.0),
            _lat(128 * KiB, "cg", 230.0), _lat(512 * KiB, "cg", 236.0), _lat(1 * MiB, "cg", 240.0),
            _lat(2 * MiB, "cg", 400.0), _lat(256 * KiB, "ca", 250.0), _lat(512 * KiB, "ca", 254.0),
            _lat(1 * MiB, "ca", 258.0), _lat(2 * MiB, "ca", 420.0), _lat(16 * MiB, "ca", 490.0),
            _lat(64 * MiB, "ca", 500.0), _lat(128 * MiB, "ca", 520.0), _lat(512 * MiB, "ca", 700.0),
            _lat(2 * GiB, "ca", 800.0), _lat(4 * GiB, "ca", 900.0), _lat(3 * GiB, "ca", 850.0)]
    ops = CUS * 2048 * 512
    raw += [
        {"bench": "lds", "name": "b128", "bytes": 1e12, "times_ms": _times(1e12 / (120.0 * CUS * CLK) * 1e3), "sm_clock_hz": CLK},
        {"bench": "lds", "name": "b32_stride1", "bytes": 1e12, "times_ms": _times(1e12 / (100.0 * CUS * CLK) * 1e3), "sm_clock_hz": CLK},
        {"bench": "lds", "name": "b32_stride2", "bytes": 1e12, "times_ms": _times(1e12 / (50.0 * CUS * CLK) * 1e3), "sm_clock_hz": CLK},
        {"bench": "occupancy", "name": "vgpr_64", "ops": 1e8, "vgprs_forced": 64, "waves_per_simd": 8, "times_ms": _times(10.0)},
        {"bench": "occupancy", "name": "vgpr_256", "ops": 1e8, "vgprs_forced": 256, "waves_per_simd": 2, "times_ms": _times(40.0)},
        {"bench": "atomics", "name": "distinct", "ops": ops, "times_ms": _times(ops / (300.0 * CLK) * 1e3), "sm_clock_hz": CLK},
        {"bench": "atomics", "name": "same_address", "ops": ops, "times_ms": _times(ops / (0.25 * CLK) * 1e3), "sm_clock_hz": CLK},
        {"bench": "atomics", "name": "distinct_u32", "ops": ops, "times_ms": _times(1.0), "sm_clock_hz": CLK},
        {"bench": "launch", "name": "stream_back_to_back", "ops": 10000, "times_ms": _times(50.0)},
        {"bench": "launch", "name": "graph", "ops": 10000, "times_ms": _times(20.0, 10)},
    ]
    for prec, rate in (("fp64", 250.0), ("fp32", 250.0), ("fp16", 2000.0), ("bf16", 2000.0), ("int8", 4000.0),
                       ("xf32", 1000.0), ("fp8", 4000.0)):
        raw.append({"bench": "mfma", "name": prec, "ops": 1e14, "flops_per_instruction": 16384,
                    "times_ms": _times(1e14 / (rate * CUS * CLK) * 1e3), "sm_clock_hz": CLK})
    return raw


def test_derive_from_the_fake_mi300x_sweep():
    results = [runner.summarize(r) for r in fake_sweep_942()]
    params, missing, obs = amd.derive(results, DEVICE_942, GPU_942)
    assert not missing, missing
    v = {k: p["value"] for k, p in params.items()}
    assert v["sm_clock_measured_hz"] == pytest.approx(CLK)
    assert v["dram_achievable_bytes_per_s"] == pytest.approx(4.3e12, rel=1e-3)  # read; write is not a candidate
    assert v["l2_bandwidth_bytes_per_clk"] == pytest.approx(11000.0, rel=1e-3)  # 256 KiB, 1, 2 MiB (<= 4 MiB / 2)
    assert v["mall_bandwidth_bytes_per_s"] == pytest.approx(11e12, rel=1e-3)  # 16 .. 128 MiB: 4 x one XCD's L2 .. MALL/2
    assert v["l1_latency_cycles"] == pytest.approx(122.0)  # 4, 16 KiB <= 32 KiB / 2
    assert v["l2_latency_cycles"] == pytest.approx(254.0)  # CDNA3: ca 256 KiB .. 1 MiB (8x L1 .. L2/4)
    assert v["mall_latency_cycles"] == pytest.approx(500.0)  # 16, 64, 128 MiB
    assert v["dram_latency_cycles"] == pytest.approx(850.0)  # >= 2 GiB
    assert v["shared_bandwidth_bytes_per_clk_per_sm"] == pytest.approx(120.0, rel=1e-3)
    assert v["mfma_fp16_flops_per_clk_per_cu"] == pytest.approx(2000.0, rel=1e-3) == v["tensor_fp16_flops_per_clk_per_sm"]
    assert v["tensor_int8_ops_per_clk_per_sm"] == pytest.approx(4000.0, rel=1e-3)
    assert v["tensor_tf32_flops_per_clk_per_sm"] == pytest.approx(1000.0, rel=1e-3)
    assert v["mfma_fp64_flops_per_clk_per_cu"] == pytest.approx(250.0, rel=1e-3)
    assert v["atomic_ops_per_clk"] == pytest.approx(300.0, rel=1e-3)
    assert v["atomic_same_address_ops_per_clk"] == pytest.approx(0.25, rel=1e-3)
    assert v["launch_overhead_ns"] == pytest.approx(5000.0, rel=1e-3)
    assert v["graph_launch_overhead_ns"] == pytest.approx(2000.0, rel=1e-3)
    assert obs["lds_slowdown_vs_stride1"]["b32_stride2"] == 2.0
    assert [o["relative_throughput"] for o in obs["vgpr_occupancy"]] == [1.0, 0.25]
    assert all(p["unit"] and p["from"] for p in params.values())


def test_derived_names_and_units_match_the_hardware_files():
    results = [runner.summarize(r) for r in fake_sweep_942()]
    params, _, _ = amd.derive(results, DEVICE_942, GPU_942)
    known = {}
    for gpu in ("mi300x", "mi300a", "mi250x", "h100"):
        for name, entry in tomllib.loads((HARDWARE / f"{gpu}.toml").read_text())["params"].items():
            known.setdefault(name, entry["unit"])
    unknown = set(params) - set(known)
    assert unknown <= {"mall_latency_cycles"}, unknown
    for name, p in params.items():
        if name in known:
            assert p["unit"] == known[name], (name, p["unit"], known[name])


def test_derive_on_cdna2_skips_the_cdna3_only_parameters():
    raw = [r for r in fake_sweep_942() if not (r["bench"] == "mfma" and r["name"] in ("xf32", "fp8"))]
    dev = dict(DEVICE_942, arch="gfx90a", cu_count=110, l2_bytes=8 * MiB)
    gpu = {"arch": "gfx90a", "name": "AMD Instinct MI250X", "cus": 110, "l1_bytes": 16 * KiB, "l2_bytes": 8 * MiB}
    params, missing, _ = amd.derive([runner.summarize(r) for r in raw], dev, gpu)
    assert "mall_bandwidth_bytes_per_s" not in params and "mall_bandwidth_bytes_per_s" not in missing
    assert "tensor_fp8_flops_per_clk_per_sm" not in missing and "mfma_fp8_flops_per_clk_per_cu" not in missing
    assert params["l2_bandwidth_bytes_per_clk"]["value"] == pytest.approx(10500.0, rel=1e-3)  # 256 KiB .. 4 MiB
    assert params["dram_latency_cycles"]["value"] == pytest.approx(750.0)  # >= 8 x 8 MiB: 64 MiB .. 4 GiB (6 points)
    assert params["l2_latency_cycles"]["value"] == pytest.approx(238.0)  # CDNA2: cg 128 KiB, 512 KiB, 1, 2 MiB (4x L1 .. L2/4)


def test_a_constant_rate_clock64_uses_the_peak_clock_and_says_so():
    slow = dict(DEVICE_942, counter_hz=1e8)
    raw = [amd.normalize(r, slow, 2.1e9) for r in fake_sweep_942()]
    params, missing, _ = amd.derive([runner.summarize(r) for r in raw], slow, GPU_942)
    assert "sm_clock_measured_hz" in missing and "peak engine clock 2100 MHz" in params["atomic_ops_per_clk"]["from"]
    assert params["l1_latency_cycles"]["value"] == pytest.approx(122.0 * 2.1e9 / CLK)  # ns x 2.1 GHz


# ---------------------------------------------------------------------------------------
# the whole run over FAKE programs, then calibrate
# ---------------------------------------------------------------------------------------
def _program_output(raw: list[dict], bench: str) -> str:
    dev = dict(DEVICE_942, program=bench, backend="hip", driver_version=60342134)
    lines = ["MB_DEVICE " + json.dumps(dev)] + ["MB_RESULT " + json.dumps(r) for r in raw if r["bench"] == bench]
    return "\n".join(lines) + "\n"


def test_run_suite_over_fake_programs_then_calibrate(tmp_path, monkeypatch):
    raw = fake_sweep_942()
    bench_of = {prog: bench for bench, prog in [("dram", "hbm_bandwidth"), ("cache", "cache_sweep"),
                                                ("latency", "pointer_chase"), ("lds", "lds_bandwidth"),
                                                ("occupancy", "vgpr_occupancy"), ("mfma", "mfma_throughput"),
                                                ("atomics", "atomics"), ("launch", "launch_overhead")]}
    monkeypatch.setattr(amd, "find_compiler", lambda arch, explicit=None, work=None: (
        amd.Compiler("/fake/hipcc", "hipcc", arch), []))
    monkeypatch.setattr(amd.Compiler, "version", lambda self: "HIP version: 6.3 (fake)")
    monkeypatch.setattr(amd, "build", lambda program, comp, build_dir: {
        "program": program, "cmd": ["/fake/hipcc", program], "seconds": 0.0, "exe": f"/fake/bin/{program}"})

    def program(cmd):
        name = Path(cmd[0]).name
        if name == "atomics":
            return 1, _program_output(raw, "atomics") + "CHECK_FAIL atomics distinct: address 7 holds 1, expected 2\n"
        return 0, _program_output(raw, bench_of[name])

    runs = fake_run({"rocminfo": (0, FAKE_ROCMINFO_MI300X), "amd-smi": amd_smi,
                     **{f"/fake/bin/{p}": program for p in bench_of}})
    out = tmp_path / "calib_mi300x.json"
    with pytest.raises(KeetError, match="1 program.s. failed .atomics: exit status 1: CHECK_FAIL atomics distinct"):
        amd.run_suite(out, run=runs)
    doc = json.loads(out.read_text())
    assert doc["backend"] == "hip" and doc["arch"] == "gfx942" and doc["device"]["gpu_id"] == "mi300x"
    assert doc["device"]["name"] == "AMD Instinct MI300X" and doc["device"]["driver"] == "6.8.5"
    assert doc["device"]["counter_is_cycles"] and doc["compiler"]["version"] == "HIP version: 6.3 (fake)"
    assert doc["parameters"]["mfma_bf16_flops_per_clk_per_cu"]["value"] == pytest.approx(2000.0, rel=1e-3)
    # the failed program's results are still parsed (its run printed them before the check failed)
    assert doc["runs"]["atomics"]["error"].startswith("exit status 1: CHECK_FAIL")

    hw = tmp_path / "hw"
    hw.mkdir()
    shutil.copy(HARDWARE / "mi300x.toml", hw / "mi300x.toml")
    changes = calibrate(out, "mi300x", hw)
    after = tomllib.loads((hw / "mi300x.toml").read_text())["params"]
    # the derived parameters, and those perfmodel.fit adds from the raw sweeps (read and write streams)
    assert {c["name"] for c in changes} == set(doc["parameters"]) | {"dram_read_bytes_per_s", "dram_write_bytes_per_s"}
    assert after["mfma_fp16_flops_per_clk_per_cu"]["source"] == "microbenchmark"
    assert "AMD Instinct MI300X driver 6.8.5" in after["mfma_fp16_flops_per_clk_per_cu"]["ref"]
    with pytest.raises(KeetError, match="refusing"):
        shutil.copy(HARDWARE / "mi250x.toml", hw / "mi250x.toml")
        calibrate(out, "mi250x", hw)


def test_unknown_hip_suite_is_one_line_error():
    with pytest.raises(KeetError, match="unknown HIP suite"):
        amd.parse_suite("dram,tensor")
    assert amd.parse_suite("launch,dram") == ["dram", "launch"]
