"""perfmodel.static.compile: nvcc (the PyPI wheel) to PTX + cubin, per-kernel resources, one-line errors.

Skips when no nvcc is found; with MICROBENCH_REQUIRE_TOOLCHAINS=1 (set by CI) it fails instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keet.errors import KeetError
from perfmodel.static.compile import (
    CompileError,
    arch_for,
    compile_cu,
    entry_params,
    first_error,
    parse_ptxas,
)

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((ROOT / "profiles" / "manifest.json").read_text())
def test_arch_for_gpu_ids():
    assert arch_for("h100") == "sm_90a" and arch_for("H200") == "sm_90a"
    assert arch_for("b200") == "sm_100a" and arch_for("a100") == "sm_80"
    with pytest.raises(KeetError, match="mi300x"):
        arch_for("mi300x")


def test_parse_ptxas_report():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'spill_kernel' for 'sm_90a'
ptxas info    : Function properties for spill_kernel
    336 bytes stack frame, 1332 bytes spill stores, 1028 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]
ptxas info    : Function properties for _Z6helperv
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""
    found = parse_ptxas(log)
    assert list(found) == ["spill_kernel"]  # device functions are not kernels
    k = found["spill_kernel"]
    assert (k["registers"], k["shared_bytes"], k["local_bytes"], k["spill_store_bytes"], k["spill_load_bytes"], k["barriers"]) == (
        32, 4096, 336, 1332, 1028, 1)
    assert k["constant_bytes"] == {"cmem[0]": 400}


def test_first_error_is_one_line():
    log = ('k.cu(3): error: identifier "undefined_thing" is undefined\n    undefined_thing = 1;\n    ^\n\n'
           'k.cu(5): error: expected a ";"\n2 errors detected in the compilation of "k.cu".\n')
    assert first_error(log, Path("k.cu")) == 'k.cu:3: identifier "undefined_thing" is undefined'
    assert first_error("ptxas fatal   : Unresolved extern function 'f'\n", Path("k.cu")) == "k.cu: ptxas: Unresolved extern function 'f'"


def test_entry_params_sizes_and_alignment():
    ptx = """.visible .entry _Z1kP5float2S_iPd(
	.param .align 8 .b8 _Z1k_param_0[16],
	.param .u64 .ptr .global .align 8 _Z1k_param_1,
	.param .u32 _Z1k_param_2,
	.param .f64 _Z1k_param_3
)
{ ret; }
.visible .entry empty()
{ ret; }
"""
    params = entry_params(ptx)
    assert [(p.size, p.align) for p in params["_Z1kP5float2S_iPd"]] == [(16, 8), (8, 8), (4, 4), (8, 8)]
    assert params["empty"] == []


@pytest.mark.toolchain
def test_compile_error_is_one_clear_line(nvcc: str, tmp_path: Path):
    src = tmp_path / "broken.cu"
    src.write_text("__global__ void k(float* x) {\n  x[0] = 1.0f;\n  undefined_thing = 2;\n}\n")
    with pytest.raises(CompileError) as info:
        compile_cu(src, "h100")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{src.resolve()}:3: ") and "undefined_thing" in message


def test_missing_source_is_an_error(tmp_path: Path):
    with pytest.raises(KeetError, match="no such file"):
        compile_cu(tmp_path / "nope.cu", "h100")


@pytest.mark.toolchain
@pytest.mark.parametrize("gpu_id,arch", [("h100", "sm_90a"), ("b200", "sm_100a"), ("a100", "sm_80")])
def test_compiles_for_each_target(nvcc: str, tmp_path: Path, gpu_id: str, arch: str):
    src = tmp_path / "saxpy.cu"
    src.write_text('extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {\n'
                   "  __shared__ float tile[64];\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "  tile[threadIdx.x % 64] = x[i % n];\n  __syncthreads();\n"
                   "  if (i < n) y[i] = a * tile[(threadIdx.x + 1) % 64] + y[i];\n}\n"
                   "template <int N> __global__ void twice(int* p) { p[threadIdx.x] *= N; }\n"
                   "template __global__ void twice<2>(int*);\n")
    compiled = compile_cu(src, gpu_id)
    assert compiled.arch == arch and f".target {arch}" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    k = compiled.kernel("saxpy")
    assert k.arch == arch and k.registers > 0 and k.shared_bytes == 256 and k.spill_bytes == 0
    t = compiled.kernel("twice")
    assert t.name.startswith("_Z") and t.demangled == "void twice<2>(int*)"
    with pytest.raises(KeetError, match="no kernel 'nope'"):
        compiled.kernel("nope")


ZOO = ["dram_triad", "register_spill", "sgemm_tiled", "occupancy_smem", "tail_effect", "atomic_contention", "gemm_wmma"]


@pytest.mark.toolchain
@pytest.mark.parametrize("program", ZOO)
def test_zoo_resources_match_manifest(nvcc: str, program: str):
    entry = next(k for k in MANIFEST["kernels"] if k["program"] == program)
    compiled = compile_cu(ROOT / "profiles" / entry["source"], "h100")
    k = compiled.kernel(entry["kernel"])
    want = entry["ptxas"]
    assert (k.registers, k.shared_bytes, k.spill_store_bytes, k.spill_load_bytes, k.local_bytes) == (
        want["registers"], want["smem_static"], want["spill_stores"], want["spill_loads"], want["stack_frame"])
