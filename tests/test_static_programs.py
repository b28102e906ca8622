"""`perfmodel predict SOURCE.cu` on the patterns of real programs (issue 22): the program's
build options (-I, -D, -std, --include), the CUDA toolkit before the PyPI wheels, calls into
CUDA libraries (recorded, not linked), cooperative groups, vector and cache-hint loads,
fp16/bf16, templates, kernel versions picked by argv, CUDA graphs and timing loops of 12,000
launches. The programs are ours, under tests/data/static_programs/.

The toolchain tests skip when nvcc or a host compiler is missing (fail with
MICROBENCH_REQUIRE_TOOLCHAINS=1, as in CI).
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from keet import toolchain
from keet.errors import KeetError
from keet.names import function_base_name
from perfmodel.static.compile import (
    BuildOptions,
    CompileError,
    compile_cu,
    ptx_location,
)
from perfmodel.static.launches import discover_launches, undefined_symbols
from perfmodel.static.libraries import (
    launches_kernels,
    library_of_header,
    library_of_symbol,
    stub_source,
)
from perfmodel.static.source import StaticError, static_kernels

PROGRAMS = Path(__file__).parent / "data" / "static_programs"
ROOT = Path(__file__).resolve().parents[1]
PERFMODEL = [sys.executable, "-c", "from perfmodel.cli import main; main()"]


def perfmodel(*args) -> subprocess.CompletedProcess:
    return subprocess.run([*PERFMODEL, *map(str, args)], capture_output=True, text=True, timeout=600, check=False,
                          cwd=ROOT)


@pytest.fixture(scope="module")
def toolchain_ready(nvcc: str, missing_toolchain) -> str:
    if not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        missing_toolchain("no host C++ compiler (g++, c++ or clang++)")
    return nvcc


def by_name(entries) -> dict[str, list]:
    out: dict[str, list] = {}
    for entry in entries:
        out.setdefault(function_base_name(entry.launch.name), []).append(entry)
    return out


# ---------------------------------------------------------------------------------------------
# No compiler needed
# ---------------------------------------------------------------------------------------------
def test_library_functions_and_headers_are_recognised():
    assert library_of_symbol("cublasSgemm_v2").name == "cuBLAS" and library_of_symbol("cublasLtMatmul").name == "cuBLASLt"
    assert library_of_symbol("cudnnConvolutionForward").name == "cuDNN" and library_of_symbol("ncclAllReduce").name == "NCCL"
    assert library_of_symbol("curandGenerateUniform").name == "cuRAND" and library_of_symbol("cufftExecC2C").name == "cuFFT"
    assert library_of_symbol("nvtxRangePushA").name == "NVTX"
    assert library_of_symbol("cudaMalloc") is None and library_of_symbol("_Z3fooi") is None
    assert library_of_header("cublas_v2.h").package == "nvidia-cublas" and library_of_header("cudnn.h").name == "cuDNN"
    assert library_of_header("nvtx3/nvToolsExt.h").name == "NVTX" and library_of_header("vector_types.h") is None
    # work on the GPU vs set-up
    assert all(launches_kernels(*c) for c in [("cuBLAS", "cublasSgemm_v2"), ("cuBLASLt", "cublasLtMatmul"),
                                              ("cuFFT", "cufftExecR2C"), ("cuRAND", "curandGenerateNormal"),
                                              ("NCCL", "ncclAllReduce"), ("cuDNN", "cudnnConvolutionForward")])
    assert not any(launches_kernels(*c) for c in [("cuBLAS", "cublasCreate_v2"), ("cuBLAS", "cublasSetStream_v2"),
                                                  ("cuFFT", "cufftPlan1d"), ("cuDNN", "cudnnSetTensor4dDescriptor"),
                                                  ("NVTX", "nvtxRangePushA"), ("cuBLASLt", "cublasLtMatmulAlgoGetHeuristic"),
                                                  ("cuSPARSE", "cusparseSpMV_bufferSize")])


def test_stubs_record_and_answer_success():
    text = stub_source(["cublasSgemm_v2", "cudnnGetErrorString"], ["cudaMemcpy3D"])
    assert 'int cublasSgemm_v2() { perfmodel_library_call("cuBLAS", "cublasSgemm_v2"); return 0; }' in text
    assert 'const char* cudnnGetErrorString()' in text  # a string, not 0, for functions that answer one
    assert 'int cudaMemcpy3D() { perfmodel_runtime_stub("cudaMemcpy3D"); return 0; }' in text
    # a search for algorithms answers one, else the program gives up before its GEMM (llm.c matmul_forward 3)
    text = stub_source(["cublasLtMatmulAlgoGetHeuristic"])
    assert ("int cublasLtMatmulAlgoGetHeuristic(void*, void*, void*, void*, void*, void*, void*, int asked, void*, "
            "int* answer) {" in text and "if (answer) *answer = asked > 0 ? 1 : 0;" in text)
    with pytest.raises(ValueError):
        stub_source(["system"])


def test_undefined_symbols_of_each_linker():
    log = ("/usr/bin/ld: prog.o: in function `main':\nprog.cu:(.text+0x1d): undefined reference to `cublasCreate_v2'\n"
           "prog.cu:(.text+0x2d): undefined reference to `foo(int)'\n"
           "ld.lld: error: undefined symbol: cufftExecC2C\n/usr/bin/ld: x.o: undefined reference to \u2018cudnnCreate\u2019\n")
    assert undefined_symbols(log) == ["cublasCreate_v2", "foo(int)", "cufftExecC2C", "cudnnCreate"]


def test_build_options_are_checked(tmp_path: Path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "pre.h").write_text("#define X 1\n")
    options = BuildOptions.parse([str(tmp_path / "inc")], ["ITEMS=4", "DEBUG", "F(x)=x"], "c++20", [str(tmp_path / "pre.h")])
    assert options.nvcc_flags() == ["-std=c++20", "-I", str(tmp_path / "inc"), "-DITEMS=4", "-DDEBUG", "-DF(x)=x",
                                    "--pre-include", str(tmp_path / "pre.h")]
    assert BuildOptions.parse(std="17").std == "c++17" and BuildOptions.parse(std="gnu++14").std == "c++14"
    for bad, message in [({"include_dirs": ["nope"]}, "-I nope: no such folder"), ({"defines": ["1X"]}, "-D 1X: not NAME"),
                         ({"std": "c++23"}, "-std: c++23: nvcc takes"), ({"pre_includes": ["nope.h"]}, "--include nope.h: no such file")]:
        with pytest.raises(KeetError, match=re.escape(message)):
            BuildOptions.parse(**bad)


def test_a_toolkit_comes_before_the_pypi_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\nexit 0\n")
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IXUSR)
    monkeypatch.delenv("NVCC", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert toolchain.find_nvcc_how(None) == (str(nvcc), "$CUDA_HOME")
    order = [how for _, how in toolchain.nvcc_candidates(None)]
    assert order.index("$CUDA_HOME") < order.index("/usr/local/cuda") < order.index("the PyPI wheel nvidia-cuda-nvcc")
    monkeypatch.setenv("NVCC", str(nvcc))
    assert toolchain.find_nvcc_how(None)[1] == "$NVCC"


def test_errors_name_the_source_line_of_inlined_code():
    lines = ['.file 1 "/src/prog.cu"', '.file 2 "/cuda/include/cuda_fp16.hpp"', ".visible .entry k()", "{",
             ".loc 1 10 3", "mov.u32 %r1, 1;",  # line 6
             ".loc 2 2945 21, function_name $L__info_string0, inlined_at 1 12 5", "ex2.approx.f16 %rs1, %rs2;",  # line 8
             ".loc 2 300 1", "set.eq.f16.f16 %rs1, %rs2, %rs3;",  # line 10: inlined, no inlined_at
             "ret;", "}"]
    ptx = "\n".join(lines)
    assert ptx_location(ptx, 6, Path("/src/prog.cu")) == "/src/prog.cu:10"
    assert ptx_location(ptx, 8, Path("/src/prog.cu")) == "/src/prog.cu:12 (/cuda/include/cuda_fp16.hpp:2945)"
    assert ptx_location(ptx, 10, Path("/src/prog.cu")) == "/src/prog.cu:12 (/cuda/include/cuda_fp16.hpp:300)"
    assert ptx_location(ptx, 3, Path("/src/prog.cu")) is None


# ---------------------------------------------------------------------------------------------
# Build options, toolkit, libraries
# ---------------------------------------------------------------------------------------------
@pytest.mark.toolchain
def test_build_options_on_the_command_line(toolchain_ready):
    folder = PROGRAMS / "build_options"
    result = perfmodel("predict", folder / "build_options.cu", "--gpu", "h100", "-I", folder / "include", "-DITEMS=4",
                       "--include", folder / "prelude.h", "-std=c++20", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    (kernel,) = doc["kernels"]
    assert kernel["name"] == "void affine<float>(float const*, float*, int)" and kernel["grid"] == [1024, 1, 1]
    assert doc["toolkit"] == toolchain.toolkit().describe() and ("CUDA toolkit" in doc["toolkit"] or "PyPI" in doc["toolkit"])
    # without --include: the program's own #error, one line, and what to pass
    result = perfmodel("predict", folder / "build_options.cu", "--gpu", "h100", f"-I{folder / 'include'}", "-D", "ITEMS=4")
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "build_options.cu:11: #error" in line and "--include FILE" in line and "Traceback" not in line
    result = perfmodel("predict", folder / "build_options.cu", "--gpu", "h100", "-I", folder / "nope")
    assert result.returncode == 2 and "-I" in result.stderr and "no such folder" in result.stderr
    result = perfmodel("predict", ROOT / "profiles/h100/ncu/dram_triad.ncu-rep.xz", "--gpu", "h100", "-DX=1")
    assert result.returncode == 2 and "-D: for CUDA sources" in result.stderr


@pytest.mark.toolchain
def test_library_calls_are_recorded_not_linked(toolchain_ready):
    launches = discover_launches(PROGRAMS / "library_calls.cu", "h100")
    (relu,) = launches
    assert function_base_name(relu.name) == "relu" and relu.count == 20
    calls = {c.name: c for c in launches.library_calls}
    assert calls["cublasSgemm_v2"].count == 20 and calls["cublasSgemm_v2"].library == "cuBLAS"
    assert {"cublasLtMatmul", "curandGenerateUniform", "cufftExecC2C", "ncclAllReduce", "cudnnCreate", "nvtxRangePushA"} <= set(calls)
    assert [c.name for c in launches.library_calls if c.launches_kernels] == [
        "curandGenerateUniform", "cublasSgemm_v2", "cublasLtMatmul", "cufftExecC2C", "ncclAllReduce"]
    result = perfmodel("predict", PROGRAMS / "library_calls.cu", "--gpu", "h100")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "cublasSgemm_v2 x20: not predicted: library call cublasSgemm_v2 (cuBLAS)" in text
    assert "library set-up calls (no kernels): cublasCreate_v2 x1" in text and "relu(float*, int) <<<(1024, 1, 1)" in text


@pytest.mark.toolchain
def test_library_headers_from_the_toolkit_or_the_wheels(toolchain_ready, tmp_path: Path):
    """With cublas_v2.h in the toolkit or an installed nvidia-cublas wheel, a program that
    includes it builds and its calls are recorded; without, one line says where to get it."""
    tk = toolchain.toolkit()
    found = [d for d in (*tk.include_dirs(), *toolchain.wheel_include_dirs()) if (d / "cublas_v2.h").is_file()]
    src = tmp_path / "blas.cu"
    src.write_text("#include <cublas_v2.h>\n__global__ void k(float* x) { x[threadIdx.x] = 0.f; }\n"
                   "int main() { cublasHandle_t h; cublasCreate(&h); float *a, one = 1; cudaMalloc(&a, 4096);\n"
                   "  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, a, 8, a, 8, &one, a, 8); k<<<1, 32>>>(a); }\n")
    if not found:
        with pytest.raises(CompileError, match="blas.cu:1: .*cublas_v2.h.*cuBLAS headers are missing.*pip install nvidia-cublas"):
            compile_cu(src, "h100")
        pytest.skip("no cublas_v2.h in the CUDA toolkit or the PyPI wheels here: the message was checked instead")
    launches = discover_launches(src, "h100")
    assert [c.name for c in launches.library_calls] == ["cublasCreate_v2", "cublasSgemm_v2"]


@pytest.mark.toolchain
def test_runtime_functions_the_recorder_lacks_are_listed(toolchain_ready, tmp_path: Path):
    src = tmp_path / "ipc.cu"
    src.write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n"
                   "int main() { float* x; cudaMalloc(&x, 4096); cudaIpcMemHandle_t h; cudaIpcGetMemHandle(&h, x);\n"
                   "  cudaProfilerStart(); k<<<1, 32>>>(x); cudaProfilerStop(); }\n")
    src.write_text('#include <cuda_profiler_api.h>\n' + src.read_text())
    result = perfmodel("predict", src, "--gpu", "h100")
    assert result.returncode == 0, result.stderr
    assert "CUDA runtime calls done as nothing" in result.stdout and "cudaIpcGetMemHandle x1" in " ".join(result.stdout.split())


# ---------------------------------------------------------------------------------------------
# Code patterns
# ---------------------------------------------------------------------------------------------
@pytest.mark.toolchain
def test_cooperative_groups(toolchain_ready):
    found = by_name(static_kernels(PROGRAMS / "coop_groups.cu", "h100"))
    assert set(found) == {"block_sum", "tile_scan"} and not any(isinstance(k, StaticError) for ks in found.values() for k in ks)
    (block_sum,) = found["block_sum"]
    # one atomicAdd per block; the sampled blocks are weighed by their memory work, and the
    # partial last block's smaller share moves a per-block count by a fraction of a percent
    assert block_sum.features.counts["global_atomic_instructions"] == pytest.approx(264, rel=0.002)
    assert block_sum.features.barriers > 0 and block_sum.launch.grid == (264, 1, 1)
    (scan,) = found["tile_scan"]
    assert scan.features.warp_instructions_by_pipe.get("lsu", 0) > 0  # the shuffles of the tile scan


@pytest.mark.toolchain
def test_vector_and_cache_hint_loads(toolchain_ready):
    found = by_name(static_kernels(PROGRAMS / "vector_loads.cu", "h100"))
    assert set(found) == {"copy_float4", "streaming_scale", "add_half8", "gather_ldlu"}
    for name in ("copy_float4", "streaming_scale", "add_half8"):  # 16 bytes per lane: 16 sectors per warp request
        counts = found[name][0].features.counts
        assert counts["global_load_sectors"] / counts["global_load_requests"] == pytest.approx(16), name
        assert counts["global_store_sectors"] / counts["global_store_requests"] == pytest.approx(16), name
    assert found["add_half8"][0].features.flops.get("fp16", 0) > 0


@pytest.mark.toolchain
def test_half_and_bfloat16_arithmetic(toolchain_ready):
    found = by_name(static_kernels(PROGRAMS / "half_bf16.cu", "h100"))
    assert set(found) == {"axpy_half2", "bf16_rms", "bf16x2_mix", "half_math"}
    assert not any(isinstance(k, StaticError) for ks in found.values() for k in ks)
    (axpy,) = found["axpy_half2"]
    n2 = (1 << 20) // 2
    assert axpy.features.flops["fp16"] == pytest.approx(4 * n2)  # one hfma2 per thread: 2 halves x 2 FLOPs


@pytest.mark.toolchain
def test_templates_each_instantiation(toolchain_ready):
    entries = static_kernels(PROGRAMS / "templates.cu", "h100")
    names = [k.launch.name for k in entries]
    assert "void map_kernel<float, 256, 4, Scale<float> >(float const*, float*, int, Scale<float>)" in names
    assert "void block_max<double, 128>(double const*, double*, int)" in names and len(names) == 6
    assert all(not isinstance(k, StaticError) for k in entries)


@pytest.mark.toolchain
def test_kernel_versions_picked_by_argv(toolchain_ready):
    result = perfmodel("predict", PROGRAMS / "argv_versions.cu", "--gpu", "h100", "--format", "json", "--", "1", "1024")
    assert result.returncode == 0, result.stderr
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert kernel["name"].startswith("transpose_shared") and kernel["grid"] == [32, 32, 1] and kernel["launches"] == 10
    everything = by_name(static_kernels(PROGRAMS / "argv_versions.cu", "h100"))
    assert sorted(everything) == ["transpose_naive", "transpose_padded", "transpose_shared"]
    naive, padded = everything["transpose_naive"][0], everything["transpose_padded"][0]
    assert naive.features.counts["global_store_sectors"] > 4 * padded.features.counts["global_store_sectors"]
    result = perfmodel("predict", PROGRAMS / "argv_versions.cu", "--gpu", "h100", "--", "7")
    assert result.returncode == 2 and "launched no kernel (exit status 2: usage:" in result.stderr


@pytest.mark.toolchain
def test_timing_loops_of_12000_launches(toolchain_ready, tmp_path: Path):
    """Discovery of 12,000 launches takes well under 30 s; predict reports one entry per
    configuration and problem size, each with its launch count."""
    start = time.perf_counter()
    launches = discover_launches(PROGRAMS / "timing_loop.cu", "h100")
    seconds = time.perf_counter() - start
    assert sum(launch.count for launch in launches) == 12000 and seconds < 30, seconds
    managed = tmp_path / "managed_loop.cu"  # the same loops over 2 x 64 MiB managed buffers (compared by content)
    managed.write_text((PROGRAMS / "timing_loop.cu").read_text().replace("cudaMalloc(&", "cudaMallocManaged(&"))
    start = time.perf_counter()
    assert sum(launch.count for launch in discover_launches(managed, "h100")) == 12000
    assert time.perf_counter() - start < 30
    entries = static_kernels(PROGRAMS / "timing_loop.cu", "h100")
    assert [(function_base_name(k.launch.name), k.launch.grid[0], k.launch.count) for k in entries] == [
        ("saxpy", 256, 2000), ("scale_grid_stride", 264, 2000), ("saxpy", 4096, 2000), ("scale_grid_stride", 264, 2000),
        ("saxpy", 65536, 2000), ("scale_grid_stride", 264, 2000)]
    small, large = entries[1], entries[5]  # one grid, three sizes: each interpreted with its own n
    assert large.features.counts["global_load_sectors"] > 100 * small.features.counts["global_load_sectors"]


def test_corpus_manifest_reads():
    from perfmodel.static.corpus import load, section, summary
    manifest = load()
    assert summary(manifest)["programs"] >= 25
    assert all({"id", "repo", "path", "include", "args"} <= set(e) for e in manifest["program"])
    assert all(manifest["repos"][e["repo"]]["commit"] and manifest["repos"][e["repo"]]["license"] for e in manifest["program"])
    assert section(manifest)[0] == "## Open-source CUDA programs, predicted from source"


@pytest.mark.toolchain
def test_texture_fetches_give_a_marked_lower_bound(toolchain_ready, tmp_path: Path):
    src = tmp_path / "tex.cu"
    src.write_text("""
__global__ void fetch(cudaTextureObject_t t, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(t, i) + 1.f;
}
int main() {
  const int n = 1 << 20; float *in, *out; cudaMalloc(&in, n * 4); cudaMalloc(&out, n * 4);
  cudaResourceDesc res = {}; res.resType = cudaResourceTypeLinear; res.res.linear.devPtr = in;
  res.res.linear.desc = cudaCreateChannelDesc<float>(); res.res.linear.sizeInBytes = n * 4;
  cudaTextureDesc desc = {}; desc.readMode = cudaReadModeElementType;
  cudaTextureObject_t t = 0; cudaCreateTextureObject(&t, &res, &desc, nullptr);
  fetch<<<n / 256, 256>>>(t, out, n);
}
""")
    result = perfmodel("predict", src, "--gpu", "h100", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    (kernel,) = doc["kernels"]
    assert kernel["lower_bound"] and "texture fetches' memory traffic" in kernel["not_counted"][0]
    assert doc["runtime_calls_not_modelled"] == {"cudaCreateChannelDesc": 1, "cudaCreateTextureObject": 1}
    text = " ".join(perfmodel("predict", src, "--gpu", "h100").stdout.split())
    assert "x1: >= " in text and "lower bound: not counted: texture fetches' memory traffic" in text


# ---------------------------------------------------------------------------------------------
# Constructs of the open-source corpus (docs/validation.md): wmma shapes and types, dynamic
# parallelism, data files next to the source, OpenMP host code, graph memory nodes, pointers
# stored in device memory, the time after the first launch, the program's own assertions.
# ---------------------------------------------------------------------------------------------
@pytest.mark.toolchain
def test_wmma_shapes_and_types_compute_exactly(toolchain_ready):
    """f64 m8n8k4 (DMMA), tf32 m16n16k8, u8 -> s32 m16n16k16 (IMMA, the accumulator from shared
    memory, column-major) and f16 m32n8k16 with f16 accumulators: the interpreted results equal
    numpy's exactly (every value is a small integer or a quarter), each counted as its SASS MMAs."""
    import numpy as np

    from perfmodel.hardware import gpu
    from perfmodel.static.interpreter import count_work
    from perfmodel.static.source import _inputs, _parsed
    from perfmodel.terms.tensor import tensor_rate

    source = PROGRAMS / "wmma_shapes.cu"
    compiled = compile_cu(source, "h100")
    module = _parsed(compiled.ptx)
    seen = {}
    for launch in discover_launches(source, "h100", compiled=compiled):
        memory, args, ids, _ = _inputs(launch)
        blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
        work = count_work(module.kernels[launch.kernel], launch.grid, launch.block, args, memory, sample=blocks)
        inputs = [launch.buffers[i].read() for i in ids]
        outputs = [memory.buffer(f"buffer{i}") for i in ids]
        name = function_base_name(launch.name)
        seen[name] = work["tensor_instructions"]
        if name == "gemm_f64":  # C (32 x 32) += A (32 x 16, row-major) B (16 x 32, column-major)
            a, b = inputs[0].view(np.float64).reshape(32, 16), inputs[1].view(np.float64).reshape(32, 16).T
            want = a @ b + inputs[2].view(np.float64).reshape(32, 32)
            assert np.array_equal(outputs[2].view(np.float64).reshape(32, 32), want)
        elif name == "gemm_tf32":  # D (column-major) = 2 A (column-major) B (row-major)
            a = inputs[0].view(np.float32).reshape(16, 32).T.astype(np.float64)
            b = inputs[1].view(np.float32).reshape(16, 32).astype(np.float64)
            assert np.array_equal(outputs[2].view(np.float32).reshape(32, 32).T, 2 * (a @ b))
        elif name == "gemm_u8":  # D (row-major s32) = A (row-major u8) B (column-major u8) + C (column-major)
            a, b = inputs[0].reshape(16, 32).astype(np.int64), inputs[1].reshape(16, 32).T.astype(np.int64)
            want = a @ b + inputs[2].view(np.int32).reshape(16, 16).T
            assert np.array_equal(outputs[3].view(np.int32).reshape(16, 16), want)
        else:  # D (32 x 8 f16) = A B + 1
            a = inputs[0].view(np.float16).reshape(32, 16).astype(np.float64)
            b = inputs[1].view(np.float16).reshape(16, 8).astype(np.float64)
            assert np.array_equal(outputs[2].view(np.float16).reshape(32, 8).astype(np.float64), a @ b + 1)
    # 16 tiles x 4 k-steps of one DMMA.884; 4 tiles x 2 k-steps x 2 HMMA.1688; 2 k-steps x 2 IMMA.16816; 2 HMMA.16816
    assert seen == {"gemm_f64": {"DMMA.884": 64.0}, "gemm_tf32": {"HMMA.1688.F32.TF32": 16.0},
                    "gemm_u8": {"IMMA.16816.U8.U8": 4.0}, "gemm_half_32x8": {"HMMA.16816.F16": 2.0}}
    h100 = gpu("h100")  # DMMA at the FP64 tensor peak; INT8 mma.sync at FP16 mma.sync's share of its peak; TF32 as FP16
    share = h100.value("tensor_mma_sync_fp16_flops_per_clk_per_sm") / h100.value("tensor_fp16_flops_per_clk_per_sm")
    assert tensor_rate(h100, "DMMA.884") == h100.value("tensor_fp64_flops_per_clk_per_sm")
    assert tensor_rate(h100, "HMMA.1688.F32.TF32") == h100.value("tensor_mma_sync_fp16_flops_per_clk_per_sm")
    assert tensor_rate(h100, "IMMA.16816.U8.U8") == pytest.approx(h100.value("tensor_int8_ops_per_clk_per_sm") * share)
    assert tensor_rate(h100, "HMMA.16816.F32") == h100.value("tensor_mma_sync_fp16_flops_per_clk_per_sm")


@pytest.mark.toolchain
def test_dynamic_parallelism(toolchain_ready):
    """A file with device-side launches compiles with relocatable device code; the host-launched
    kernel is predicted (device-side cudaMalloc and malloc carried out), the kernel it launches
    from the device too, with its launches extrapolated from the interpreted blocks, and what
    that kernel launches in turn is listed, not predicted."""
    source = PROGRAMS / "dynamic_parallelism.cu"
    assert compile_cu(source, "h100").relocatable
    entries = static_kernels(source, "h100")
    parent, child, leaf = entries
    assert function_base_name(parent.launch.name) == "parent" and parent.launched_by is None
    assert parent.launch.grid == (2, 1, 1) and parent.features.counts["global_store_requests"] > 0
    assert function_base_name(child.launch.name) == "child" and child.launched_by == parent.launch.name
    assert (child.launch.grid, child.launch.block, child.launch.count) == ((8, 1, 1), (128, 1, 1), 64)
    assert child.features.counts["global_load_requests"] > 0
    assert isinstance(leaf, StaticError) and leaf.launched_by == child.launch.name
    assert "leaf" in leaf.launch.name and "not predicted: device-side launch" in str(leaf)
    result = perfmodel("predict", source, "--gpu", "h100", "--format", "json")
    assert result.returncode == 0, result.stderr
    kernels = json.loads(result.stdout)["kernels"]
    assert [k.get("launched_by", "").split("(")[0] for k in kernels] == ["", "parent", "child"]
    assert kernels[1]["predicted_ns"] > 0 and kernels[2]["predicted_ns"] is None and kernels[2]["launches"] > 0
    text = " ".join(perfmodel("predict", source, "--gpu", "h100").stdout.split())
    assert "x64 (launched from the device by parent(float*, int, int, int*)):" in text


@pytest.mark.toolchain
def test_a_program_finds_the_files_beside_its_source(toolchain_ready):
    """The program runs in a copy of its source folder: data/problem.txt, opened by a relative
    path, gives the problem size, and the file it writes stays in the copy."""
    folder = PROGRAMS / "data_files"
    (launch,) = discover_launches(folder / "reads_data.cu", "h100")
    assert launch.grid == (391, 1, 1) and launch.args[2].as_float() == 1.5  # 100000 elements, factor 1.5
    assert not (folder / "data" / "result.txt").exists()


def test_the_folder_copy_has_limits(tmp_path: Path):
    from perfmodel.static.launches import copy_program_folder

    source = tmp_path / "src"
    (source / "data").mkdir(parents=True)
    (source / ".git").mkdir()
    (source / "data" / "a.bin").write_bytes(b"x" * 100)
    (source / ".git" / "objects").write_bytes(b"y")
    (source / "link").symlink_to(source / "data" / "a.bin")
    into = tmp_path / "run"
    into.mkdir()
    assert copy_program_folder(source, into) is None
    assert sorted(str(p.relative_to(into)) for p in into.rglob("*")) == ["data", "data/a.bin"]
    too_big = tmp_path / "run2"
    too_big.mkdir()
    why = copy_program_folder(source, too_big, max_bytes=50)
    assert "was not copied" in why and not any(too_big.iterdir())


@pytest.mark.toolchain
def test_openmp_host_code_is_built_with_openmp(toolchain_ready, tmp_path: Path):
    from perfmodel.static.launches import uses_openmp

    assert uses_openmp(PROGRAMS / "openmp_reference.cu") and not uses_openmp(PROGRAMS / "timing_loop.cu")
    header = tmp_path / "reference.h"  # a quoted include that uses OpenMP counts too
    header.write_text("#pragma omp declare simd\nfloat twice(float x);\n")
    (tmp_path / "prog.cu").write_text('#include "reference.h"\nint main() { return 0; }\n')
    assert uses_openmp(tmp_path / "prog.cu")
    launches = discover_launches(PROGRAMS / "openmp_reference.cu", "h100")
    (launch,) = launches
    import os

    assert launch.grid[0] == max(1, min(16, len(os.sched_getaffinity(0))))  # omp_get_max_threads() of the run
    assert "OpenMP threads:" in launches.output


@pytest.mark.toolchain
def test_the_run_ends_a_while_after_its_first_launch(toolchain_ready, tmp_path: Path):
    """Host work before the first launch gets the whole time limit; after it, the recorder ends
    the program (what follows adds little), keeping the launches."""
    src = tmp_path / "spin_after.cu"
    src.write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n"
                   "int main() { float* x; cudaMalloc(&x, 128); k<<<1, 32>>>(x); volatile int spin = 1; while (spin) {} }\n")
    start = time.perf_counter()
    launches = discover_launches(src, "h100", after_first_launch=2, timeout=120)
    assert len(launches) == 1 and launches.stopped_after_s == 2 and time.perf_counter() - start < 60


@pytest.mark.toolchain
def test_graph_memory_nodes_and_pointers_stored_in_device_memory(toolchain_ready, tmp_path: Path):
    """A graph's allocation node gives its kernel a real buffer; a table of device pointers in
    device memory is followed by the interpreter (the pointed-to buffers come with the launch)."""
    src = tmp_path / "graph_table.cu"
    src.write_text(r"""
__global__ void fill(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 2.f; }
__global__ void gather(float* const* table, float* out, int rows, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.f;
  for (int r = 0; r < rows; ++r) s += table[r][i];
  out[i] = s;
}
int main() {
  const int n = 4096, rows = 4;
  cudaGraph_t graph; cudaGraphCreate(&graph, 0);
  cudaMemAllocNodeParams alloc = {}; alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice; alloc.bytesize = n * sizeof(float);
  cudaGraphNode_t a, k, f;
  cudaGraphAddMemAllocNode(&a, graph, nullptr, 0, &alloc);
  float* x = static_cast<float*>(alloc.dptr);
  int count = n; void* args[] = {&x, &count};
  cudaKernelNodeParams kp = {}; kp.func = (void*)fill; kp.gridDim = dim3(n / 256); kp.blockDim = dim3(256); kp.kernelParams = args;
  cudaGraphAddKernelNode(&k, graph, &a, 1, &kp);
  cudaGraphAddMemFreeNode(&f, graph, &k, 1, alloc.dptr);
  cudaGraphExec_t exec; cudaGraphInstantiate(&exec, graph, 0); cudaGraphLaunch(exec, 0);
  float* host_table[rows]; float** table; float* out;
  for (int r = 0; r < rows; ++r) { cudaMalloc(&host_table[r], n * sizeof(float)); cudaMemset(host_table[r], 0, n * sizeof(float)); }
  cudaMalloc(&table, sizeof(host_table)); cudaMemcpy(table, host_table, sizeof(host_table), cudaMemcpyHostToDevice);
  cudaMalloc(&out, n * sizeof(float));
  gather<<<n / 256, 256>>>(table, out, rows, n);
  return 0;
}
""")
    entries = by_name(static_kernels(src, "h100"))
    assert not any(isinstance(k, StaticError) for ks in entries.values() for k in ks), entries
    (fill,), (gather,) = entries["fill"], entries["gather"]
    assert fill.features.counts["global_store_requests"] > 0
    table = next(b for b in gather.launch.buffers.values() if b.size == 32)
    assert len(table.pointers) == 4 and len(gather.launch.buffers) == 6  # the table, its 4 rows, out
    # per row: its pointer from the table, then its element: 2 x 4 loads per warp, 8 warps, 16 blocks
    assert gather.features.counts["global_load_requests"] == pytest.approx(16 * 8 * 8)


@pytest.mark.toolchain
def test_a_failed_assertion_is_named(toolchain_ready, tmp_path: Path):
    src = tmp_path / "asserts.cu"
    src.write_text("#include <cassert>\n__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n"
                   "int main() { cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); assert(p.multiProcessorCount < 64);\n"
                   "  k<<<1, 32>>>(nullptr); }\n")
    with pytest.raises(KeetError, match=r"the program's own assertion \(p.multiProcessorCount < 64\) failed"):
        discover_launches(src, "h100")


@pytest.mark.toolchain
def test_an_algorithm_search_finds_one(toolchain_ready, tmp_path: Path):
    """cuBLASLt's heuristic answers one algorithm, so a program that gives up on none (llm.c's
    matmul_forward 3) goes on to its matmul and its own kernels."""
    src = tmp_path / "lt.cu"
    src.write_text("#include <cstdio>\n#include <cstdlib>\n"
                   'extern "C" int cublasLtMatmulAlgoGetHeuristic(void*, void*, void*, void*, void*, void*, void*, int, '
                   "void*, int*);\n"
                   "__global__ void gelu(float* x) { x[threadIdx.x] *= 0.5f; }\n"
                   "int main() { char results[1024]; int found = 0;\n"
                   "  cublasLtMatmulAlgoGetHeuristic(0, 0, 0, 0, 0, 0, 0, 1, results, &found);\n"
                   '  if (found == 0) { std::printf("No cuBLASLt algorithm\\n"); std::exit(1); }\n'
                   "  float* x; cudaMalloc(&x, 128); gelu<<<1, 32>>>(x); }\n")
    launches = discover_launches(src, "h100")
    assert len(launches) == 1 and [c.name for c in launches.library_calls] == ["cublasLtMatmulAlgoGetHeuristic"]
