"""`perfmodel predict SOURCE.cu` (perfmodel.static.source) and the cache-traffic estimate
(perfmodel.static.traffic): compile, discover launches, interpret, predict with no GPU.

Skips when nvcc or a host compiler is missing; with MICROBENCH_REQUIRE_TOOLCHAINS=1 (set by
CI) it fails instead.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from perfmodel.cli import cli
from perfmodel.hardware import gpu
from perfmodel.static import traffic
from perfmodel.static.interpreter import GLOBAL_BASE, GLOBAL_STRIDE
from perfmodel.static.source import static_kernels
from perfmodel.validate import (
    STATIC_FEATURES,
    load_static_features,
    static_zoo_features,
)

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((ROOT / "profiles" / "manifest.json").read_text())
PROFILE_KEYS = {"name", "predicted_ns", "bound", "lower_bound", "breakdown", "inputs", "notes"}

SAXPY = r"""
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def toolchain(nvcc: str, missing_toolchain) -> str:
    if not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        missing_toolchain("no host C++ compiler (g++, c++ or clang++)")
    return nvcc


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def perfmodel(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfmodel.cli", *map(str, args)], capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.toolchain
def test_zoo_program_predicts_with_no_flags_in_the_profile_json_shape(toolchain):
    result = run("predict", str(ROOT / "profiles/src/smem_bank_conflict.cu"), "--gpu", "h100", "--format", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    mine = next(k for k in out["kernels"] if k["name"].startswith("bank_conflict_kernel"))
    assert PROFILE_KEYS <= set(mine) and mine["bound"] == "l1_shared"
    manifest = next(k for k in MANIFEST["kernels"] if k["program"] == "smem_bank_conflict")
    assert mine["grid"] == manifest["launch"]["grid"] and mine["block"] == manifest["launch"]["block"]
    static = mine["static"]
    # 32-way conflicted loads: every wavefront but one per request is a conflict
    counts = static["counts"]
    assert counts["shared_bank_conflicts"] > 0.9 * counts["shared_load_wavefronts"]
    assert static["registers_per_thread"] == manifest["ptxas"]["registers"]
    measured_ns = manifest["measured"]["h100"]["median_ms"] * 1e6
    assert abs(mine["predicted_ns"] / measured_ns - 1) < 0.2


@pytest.mark.toolchain
def test_flags_give_the_launch_of_a_file_without_main(toolchain, tmp_path):
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY)
    n = 1 << 20
    result = run("predict", str(src), "--gpu", "h100", "--grid", str(n // 256), "--block", "256", "--arg", f"n={n}",
                 "--arg", "a=2", "--buffer", f"x={4 * n}", "--buffer", f"y={4 * n}", "--format", "json", "--explain")
    assert result.exit_code == 0, result.output
    (k,) = json.loads(result.output)["kernels"]
    counts = k["static"]["counts"]
    assert counts["global_load_sectors"] == 2 * n * 4 / 32 and counts["global_store_sectors"] == n * 4 / 32
    assert counts["dram_bytes_read"] == 2 * n * 4 and k["static"]["flops"] == {"fp32": 2 * n}
    assert k["bound"] in ("dram", "latency", "launch")


@pytest.mark.toolchain
def test_explain_prints_the_counted_work(toolchain, tmp_path):
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY)
    result = run("predict", str(src), "--gpu", "b200", "--grid", "64", "--block", "256", "--arg", "n=16384", "--arg", "a=1",
                 "--buffer", "x=65536", "--buffer", "y=65536", "--explain")
    assert result.exit_code == 0, result.output
    assert "interpreted blocks (0, 0, 0)" in result.output and "global_load_sectors" in result.output
    assert "saxpy" in result.output and "-> NVIDIA B200" in " ".join(result.output.split())  # wrapped to the width


@pytest.mark.toolchain
@pytest.mark.parametrize(("source", "flags", "message"), [
    ('extern "C" __global__ void k(float* p) { p[0] = undefined_name; }', ["--grid", "1", "--block", "32", "--buffer", "p=4"],
     'k.cu:1: identifier "undefined_name" is undefined'),
    ('extern "C" __global__ void k(float* p) {\n  p[0] = 1.f;\n  asm volatile("brkpt;");\n}',
     ["--grid", "1", "--block", "32", "--buffer", "p=4"], "k.cu:3: k: PTX instruction 'brkpt' (PTX line"),
    # malloc is interpreted; a call through a function pointer is not
    (('typedef int (*op)(int);\n__device__ int twice(int x) { return 2 * x; }\n__device__ op table[1] = {twice};\n'
      'extern "C" __global__ void k(int* p) { p[0] = table[p[1] & 0](p[0]); }'),
     ["--grid", "1", "--block", "32", "--buffer", "p=8"], "indirect calls are not interpreted"),
    (SAXPY, ["--grid", "1", "--block", "32"], "needs --arg n=VALUE"),
    (SAXPY, [], "no main() to discover launches from"),
])
def test_bad_sources_are_one_line_errors(toolchain, tmp_path, source, flags, message):
    src = tmp_path / "k.cu"
    src.write_text(source)
    result = perfmodel("predict", src, "--gpu", "h100", *flags)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    (line,) = result.stderr.splitlines()
    assert message in line and "Traceback" not in line


def test_launch_flags_on_a_profile_are_refused():
    result = perfmodel("predict", ROOT / "profiles/h100/ncu/dram_triad.ncu-rep.xz", "--gpu", "h100", "--grid", "4")
    assert result.returncode == 2 and "--grid: for CUDA sources" in result.stderr


@pytest.mark.toolchain
def test_committed_static_features_are_what_recounting_gives(toolchain):
    """The counts behind docs/validation.md's static section are reproducible: recount two
    programs and compare with profiles/static/zoo_features.json."""
    committed = json.loads((ROOT / "profiles" / STATIC_FEATURES).read_text())
    manifest = dict(MANIFEST, kernels=[k for k in MANIFEST["kernels"] if k["program"] in ("sfu_mufu", "transpose_smem_padded")])
    fresh = static_zoo_features(manifest, ROOT / "profiles", gpu_ids=("h100",))
    for program, result in fresh["h100"].items():
        assert result["features"] == committed["h100"][program]["features"], program
    loaded = load_static_features(ROOT / "profiles")
    assert set(loaded) == {"h100", "h200"} and len(loaded["h100"]) == len(MANIFEST["kernels"])


# ------------------------------------------------------------------------------- traffic model
def keys(block: int, buffer: int, sectors) -> np.ndarray:
    base = (GLOBAL_BASE + buffer * GLOBAL_STRIDE) // 32
    return (np.uint64(block) << np.uint64(48)) | (np.uint64(base) + np.asarray(sectors, dtype=np.uint64))


def estimate(footprint, **kw):
    args = {"sampled_blocks": 3, "grid_blocks": 300, "warp_scale": 1.0, "buffer_bytes": [1 << 30, 1 << 30], "bypass_sectors": 0.0,
                "gpu": gpu("h100"), "blocks_per_sm": 8, "shared_bytes_per_block": 0}
    return traffic.estimate(footprint, **(args | kw))


def test_streaming_blocks_read_their_footprint_once_from_dram():
    loads = np.concatenate([keys(b, 0, range(b * 1000, b * 1000 + 1000)) for b in range(3)])
    t = estimate({"load": loads}, load_sectors=300 * 1000, store_sectors=0)
    assert t.l2_sectors_read == 300_000 and t.l1_hit_rate == 0
    assert t.dram_bytes_read == 300_000 * 32 and t.footprint_read_bytes == 300_000 * 32


def test_a_table_every_block_reads_stays_in_each_sms_l1():
    table = np.concatenate([keys(b, 1, range(100)) for b in range(3)])
    t = estimate({"load": table}, load_sectors=300 * 100, store_sectors=0)
    assert t.l2_sectors_read == 100 * 132  # once per SM
    assert t.footprint_read_bytes == 100 * 32 and t.dram_bytes_read == 100 * 32


def test_l1_bypassing_loads_all_reach_the_l2():
    table = np.concatenate([keys(b, 1, range(100)) for b in range(3)])
    t = estimate({"load_l2": table}, load_sectors=300 * 100, bypass_sectors=300 * 100, store_sectors=0)
    assert t.l2_sectors_read == 300 * 100 and t.dram_bytes_read == 100 * 32


def test_written_footprint_stays_in_l2_unless_it_overflows():
    small = np.concatenate([keys(b, 0, range(b * 10, b * 10 + 10)) for b in range(3)])
    assert estimate({"store": small}, load_sectors=0, store_sectors=3000).dram_bytes_write == 0
    big = np.concatenate([keys(b, 0, range(b * 100_000, b * 100_000 + 100_000)) for b in range(3)])
    t = estimate({"store": big}, load_sectors=0, store_sectors=30_000_000)
    capacity = gpu("h100").value("l2_bytes")
    assert t.footprint_write_bytes == 300 * 100_000 * 32
    assert t.dram_bytes_write == pytest.approx(t.footprint_write_bytes - capacity)


def test_scattered_sectors_read_whole_fetch_granules_from_dram():
    """Every other sector of a large buffer: each miss fetches a 64-byte granule whose other
    half nobody reads."""
    every_other = np.concatenate([keys(b, 0, range(b * 2000, b * 2000 + 2000, 2)) for b in range(3)])
    t = estimate({"load": every_other}, load_sectors=300 * 1000, store_sectors=0)
    assert gpu("h100").value("l2_fetch_granularity_bytes") == 64
    assert t.footprint_read_bytes == 300_000 * 32
    assert t.dram_bytes_read == pytest.approx(2 * 300_000 * 32, rel=0.01)


def test_scattered_sectors_covering_their_buffer_share_granules_in_l2():
    """Random single sectors (a pointer chase) that together cover a buffer that fits in the
    L2: the other half of each granule is read later by another block, from the L2."""
    rng = np.random.default_rng(5)
    chase = np.concatenate([keys(b, 0, np.sort(rng.choice(100_000, 1000, replace=False))) for b in range(3)])
    t = estimate({"load": chase}, load_sectors=300 * 1000, store_sectors=0, buffer_bytes=[100_000 * 32])
    assert t.footprint_read_bytes == 100_000 * 32 and t.dram_bytes_read == 100_000 * 32


@pytest.mark.toolchain
def test_progress_names_each_stage(toolchain, tmp_path):
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY)
    stages: list[str] = []
    (k,) = static_kernels(src, "a100", progress=stages.append, grid="4", block="128", args=("n=512", "a=1"), buffers=("x=2KiB", "y=2KiB"))
    assert k.compiled.arch == "sm_80" and k.features.counts["global_store_sectors"] == 512 * 4 / 32
    assert stages[0].startswith(f"compiling {src} for sm_80") and stages[-1].startswith("interpreting saxpy")


@pytest.mark.toolchain
def test_constant_memory_holds_what_the_host_copied_to_it(toolchain, tmp_path):
    src = tmp_path / "const.cu"
    src.write_text(r"""
__constant__ float coeff[4];
__global__ void scale(float* out) { out[threadIdx.x] = coeff[threadIdx.x & 3]; if (coeff[1] > 1.f) out[threadIdx.x] += 1.f; }
int main() { float h[4] = {1, 2, 3, 4}; cudaMemcpyToSymbol(coeff, h, sizeof(h)); float* d; cudaMalloc(&d, 128);
             scale<<<1, 32>>>(d); cudaDeviceSynchronize(); return 0; }
""")
    (k,) = static_kernels(src, "h100")
    # coeff[1] = 2 > 1: every thread adds 1 (32 FLOPs); a zeroed constant bank would skip the add
    assert k.features.flops["fp32"] == 32
