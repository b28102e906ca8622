"""perfmodel.static.launches (launch discovery with a recording CUDA runtime, no GPU) and
perfmodel.static.launch_spec (--kernel/--grid/--block/--smem/--arg/--buffer).

Skips when nvcc or a host compiler is missing; with MICROBENCH_REQUIRE_TOOLCHAINS=1 (set by
CI) it fails instead.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from keet.names import function_base_name
from perfmodel.static.compile import compile_cu
from perfmodel.static.launch_spec import (
    LaunchSpecError,
    launch_from_spec,
    parse_bytes,
    parse_dims,
    source_params,
)
from perfmodel.static.launches import DiscoveryError, discover_launches

pytestmark = pytest.mark.toolchain  # nvcc and a host compiler build each program

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((ROOT / "profiles" / "manifest.json").read_text())
@pytest.fixture(scope="module")
def toolchain(nvcc: str, missing_toolchain) -> str:
    if not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        missing_toolchain("no host C++ compiler (g++, c++ or clang++)")
    return nvcc


def function_name(launch) -> str:
    return function_base_name(launch.name)


# ---------------------------------------------------------------------------------------------
# The zoo: every program's kernel is found with the grid, block and dynamic shared memory the
# manifest recorded on the GPU (32 of 32 discover correctly; these four run in the suite).
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("program", ["dram_triad", "sgemm_tiled", "tail_effect", "atomic_contention", "occupancy_smem"])
def test_zoo_launches_match_manifest(toolchain: str, program: str):
    entry = next(k for k in MANIFEST["kernels"] if k["program"] == program)
    launches = discover_launches(ROOT / "profiles" / entry["source"], "h100")
    hits = [launch for launch in launches if function_name(launch) == entry["kernel"]]
    assert hits, [launch.name for launch in launches]
    want = entry["launch"]
    assert (hits[0].grid, hits[0].block, hits[0].dynamic_shared_bytes) == (
        tuple(want["grid"]), tuple(want["block"]), want["dynamic_shared_bytes"])
    assert hits[0].error is None


def test_merging_by_configuration(toolchain: str):
    # launch_overhead passes a launch counter: each of its 28000 launches has other arguments
    src = ROOT / "profiles" / "src" / "launch_overhead.cu"
    by_config = discover_launches(src, "h100", unique="config")
    tiny = [launch for launch in by_config if function_name(launch) == "tiny_kernel"]
    assert len(tiny) == 1 and tiny[0].count == 28000 and tiny[0].args[1].as_float() == 1.0
    with pytest.raises(ValueError, match="unique"):
        discover_launches(src, "h100", unique="sometimes")


def test_dram_triad_arguments_and_buffers(toolchain: str):
    launches = discover_launches(ROOT / "profiles" / "src" / "dram_triad.cu", "h100", snapshot_cap_bytes=2 << 30)
    triad = next(launch for launch in launches if launch.kernel == "triad_kernel")
    assert triad.count == 28  # 3 warm-up + 25 timed launches, merged
    a, b, c, s, n4 = triad.args
    assert {a.buffer, b.buffer, c.buffer} == set(triad.buffers) and len(triad.buffers) == 3
    assert a.offset == b.offset == c.offset == 0
    assert s.buffer is None and s.as_float() == pytest.approx(1.7) and n4.value == 96 * 2**20 // 4
    assert triad.buffers[a.buffer].content == "uninitialized"  # the output: never written by the host
    for arg in (b, c):
        buf = triad.buffers[arg.buffer]
        assert buf.size == 384 * 2**20 and buf.content == "file"
        values = buf.read()[:4096].view(np.float32)
        assert np.all((values >= -1) & (values < 1)) and np.unique(values).size > 1000  # zoo::random_floats(-1, 1)
    flush = next(launch for launch in launches if "zoo_l2_flush_read" in launch.kernel)
    scratch = flush.buffers[flush.args[0].buffer]
    assert scratch.content == "fill" and scratch.fill == 1 and scratch.read()[:8].tolist() == [1] * 8


PROGRAM = r"""
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
struct Pair { float* p; int n; };
__global__ void fill_kernel(int* out, const int* in, int n, double scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = int(in[i] * scale);
}
__global__ void pair_kernel(Pair pair, float* managed) { managed[0] = pair.p[0] + pair.n; }
int main() {
  const int n = 1000;
  int *in, *out; float* f; float* m;
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
  cudaMalloc(&in, n * sizeof(int)); cudaMalloc(&out, n * sizeof(int)); cudaMalloc(&f, 64 * sizeof(float));
  cudaMallocManaged(&m, 16 * sizeof(float));
  int host[n]; for (int i = 0; i < n; ++i) host[i] = 3 * i;
  cudaMemcpy(in, host, sizeof host, cudaMemcpyHostToDevice);
  cudaMemset(out, 7, n * sizeof(int));
  cudaMemset(f + 8, 0, 4 * sizeof(float));
  for (int i = 0; i < 16; ++i) m[i] = float(i);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); cudaEventRecord(e0);
  fill_kernel<<<(n + 127) / 128, 128>>>(out, in + 4, n - 4, 0.5);
  cudaEventRecord(e1); cudaEventSynchronize(e1);
  float ms = 0; cudaEventElapsedTime(&ms, e0, e1);
  if (cudaGetLastError() != cudaSuccess || ms <= 0) return 3;
  cudaStream_t s; cudaStreamCreate(&s);
  pair_kernel<<<dim3(prop.multiProcessorCount, 2, 1), dim3(32, 4), 256, s>>>(Pair{f + 2, 5}, m);
  fill_kernel<<<1, 2048>>>(out, in, n, 1.0);  // too many threads: refused, recorded with an error
  if (cudaGetLastError() == cudaSuccess) return 4;
  int back[n]; cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost);
  if (back[10] != 21) { std::printf("CHECK_FAIL\n"); std::exit(1); }  // device code never ran
  return 0;
}
"""


@pytest.fixture(scope="module")
def program_launches(toolchain: str, tmp_path_factory) -> list:
    src = tmp_path_factory.mktemp("prog") / "prog.cu"
    src.write_text(PROGRAM)
    return discover_launches(src, "b200", unique=False)


def test_launches_of_a_program_that_fails_its_check(program_launches: list):
    fill, pair, refused = program_launches
    assert program_launches.exit_status == 1 and program_launches.completed and "CHECK_FAIL" in program_launches.output
    assert [launch.seq for launch in program_launches] == [0, 1, 2]
    assert function_name(fill) == "fill_kernel" and fill.kernel.startswith("_Z")
    assert (fill.grid, fill.block, fill.dynamic_shared_bytes) == ((8, 1, 1), (128, 1, 1), 0)
    out, inp, n, scale = fill.args
    assert inp.offset == 16 and out.offset == 0 and n.value == 996 and n.size == 4 and scale.as_float() == 0.5
    assert fill.buffers[inp.buffer].read().view(np.int32).tolist() == [3 * i for i in range(1000)]
    assert fill.buffers[out.buffer].content == "fill" and fill.buffers[out.buffer].fill == 7
    # a struct argument with a pointer inside, the target's SM count, a stream, managed memory
    assert pair.grid == (148, 2, 1) and pair.block == (32, 4, 1) and pair.dynamic_shared_bytes == 256 and pair.stream != 0
    pair_arg, managed = pair.args
    assert pair_arg.size == 16 and pair_arg.buffer is None  # not a plain pointer: see .pointers
    assert pair_arg.pointers[0].at == 0 and pair_arg.pointers[0].offset == 8
    assert struct.unpack("<i", pair_arg.raw[8:12])[0] == 5
    f = pair.buffers[pair_arg.pointers[0].buffer]
    assert f.content == "file" and f.read().view(np.float32)[8:12].tolist() == [0, 0, 0, 0]  # partial memset
    assert pair.buffers[managed.buffer].kind == "managed"
    assert pair.buffers[managed.buffer].read().view(np.float32).tolist() == [float(i) for i in range(16)]
    assert refused.block == (2048, 1, 1) and "block size" in refused.error


QUERIES = r"""
#include <cstdlib>
#include <cuda_runtime.h>
__constant__ float coef[4];
__global__ void __launch_bounds__(256) k(float* out, int occupancy, int regs, int sms, long long total_mb) {
  __shared__ float tile[1024];
  tile[threadIdx.x] = coef[threadIdx.x % 4];
  __syncthreads();
  out[threadIdx.x] = tile[255 - threadIdx.x] + occupancy + regs + sms + total_mb;
}
int main() {
  const float host[4] = {1.f, 2.f, 3.f, 4.f};
  cudaMemcpyToSymbol(coef, host, sizeof host);
  int blocks = 0, sms = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, 256, 0);
  cudaFuncAttributes attr; cudaFuncGetAttributes(&attr, k);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  size_t free_bytes = 0, total = 0; cudaMemGetInfo(&free_bytes, &total);
  float* out; cudaMalloc(&out, 256 * sizeof(float));
  k<<<1, 256>>>(out, blocks, attr.numRegs, sms, (long long)(total >> 20));
  std::abort();  // an abort after the launch keeps the record
}
"""


def test_device_queries_symbols_and_abort(toolchain: str, tmp_path: Path):
    from perfmodel.hardware import gpu
    from perfmodel.occupancy import nvidia

    src = tmp_path / "queries.cu"
    src.write_text(QUERIES)
    compiled = compile_cu(src, "a100")
    launches = discover_launches(src, "a100", compiled=compiled)
    (launch,) = launches
    assert not launches.completed and launches.exit_status != 0  # aborted
    _, occupancy, regs, sms, total_mb = (arg.value for arg in launch.args)
    res = compiled.kernel("k")
    a100 = gpu("a100")
    assert regs == res.registers and sms == a100.value("sm_count") and total_mb == int(a100.value("dram_bytes")) >> 20
    assert occupancy == nvidia(a100, 256, res.registers, res.shared_bytes).blocks_per_sm
    (symbol,) = [b for b in launch.buffers.values() if b.kind == "symbol"]
    assert symbol.name == "coef" and symbol.read().view(np.float32).tolist() == [1, 2, 3, 4]


def test_explicit_launch_api_and_unsupported_runtime_calls(toolchain: str, tmp_path: Path):
    src = tmp_path / "explicit.cu"
    src.write_text("__global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 1.f; }\n"
                   "int main() { float* x; cudaMalloc(&x, 4096); int n = 7; void* args[] = {&x, &n};\n"
                   "  cudaLaunchKernel((const void*)k, dim3(3), dim3(64), args, 0, 0);\n"
                   "  cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(5); cfg.blockDim = dim3(32); cfg.dynamicSmemBytes = 128;\n"
                   "  cudaLaunchKernelEx(&cfg, k, x, 9); }\n")
    first, second = discover_launches(src, "h100")
    assert (first.grid, first.block, first.args[1].value) == ((3, 1, 1), (64, 1, 1), 7)
    assert (second.grid, second.block, second.dynamic_shared_bytes, second.args[1].value) == ((5, 1, 1), (32, 1, 1), 128, 9)
    other = tmp_path / "other.cu"  # runtime functions the recorder does not model: recorded, done as nothing
    other.write_text("__global__ void k() {}\nint main() { cudaIpcMemHandle_t h; float* x; cudaMalloc(&x, 64);\n"
                     "  if (cudaIpcGetMemHandle(&h, x) != cudaSuccess) return 1; k<<<1, 1>>>(); }\n")
    launches = discover_launches(other, "h100")
    assert len(launches) == 1 and launches.runtime_stubs == {"cudaIpcGetMemHandle": 1}


def test_cuda_graphs_replay_their_launches(toolchain: str, tmp_path: Path):
    src = tmp_path / "graph.cu"  # stream capture and a kernel node added by hand, each graph launched in a loop
    src.write_text("__global__ void inc(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] += 1.f; }\n"
                   "__global__ void dbl(float* x) { x[threadIdx.x] *= 2.f; }\n"
                   "int main() { float* x; cudaMalloc(&x, 4096); cudaStream_t s; cudaStreamCreate(&s);\n"
                   "  cudaGraph_t g; cudaGraphExec_t e; cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n"
                   "  cudaStreamCaptureStatus st; cudaStreamIsCapturing(s, &st); if (st != cudaStreamCaptureStatusActive) return 1;\n"
                   "  for (int i = 0; i < 3; ++i) { inc<<<2, 64, 0, s>>>(x, 7); dbl<<<1, 32, 0, s>>>(x); }\n"
                   "  cudaStreamEndCapture(s, &g); cudaGraphInstantiate(&e, g, 0);\n"
                   "  for (int i = 0; i < 10; ++i) cudaGraphLaunch(e, s);\n"
                   "  cudaGraph_t h; cudaGraphCreate(&h, 0); int n = 5; void* args[] = {&x, &n};\n"
                   "  cudaKernelNodeParams p = {}; p.func = (void*)inc; p.gridDim = dim3(4); p.blockDim = dim3(32); p.kernelParams = args;\n"
                   "  cudaGraphNode_t node; cudaGraphAddKernelNode(&node, h, nullptr, 0, &p);\n"
                   "  cudaGraphExec_t he; cudaGraphInstantiate(&he, h, 0); cudaGraphLaunch(he, s); cudaGraphLaunch(he, s); }\n")
    launches = discover_launches(src, "h100")
    by = {(function_name(launch), launch.grid): launch for launch in launches}
    assert by[("inc", (2, 1, 1))].count == 30 and by[("dbl", (1, 1, 1))].count == 30
    assert by[("inc", (4, 1, 1))].count == 2 and by[("inc", (4, 1, 1))].args[1].value == 5


def test_snapshot_cap_is_recorded(toolchain: str, tmp_path: Path):
    src = tmp_path / "prog.cu"
    src.write_text(PROGRAM)
    launches = discover_launches(src, "h100", snapshot_cap_bytes=100, workdir=tmp_path / "work")
    fill = launches[0]
    skipped = fill.buffers[fill.args[1].buffer]
    assert skipped.content == "skipped" and "cap" in skipped.reason and skipped.read() is None
    assert (tmp_path / "work" / "launches.jsonl").is_file()


def test_no_main_timeout_and_no_launch(toolchain: str, tmp_path: Path):
    kernel_only = tmp_path / "kernel.cu"
    kernel_only.write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n")
    with pytest.raises(DiscoveryError, match="no main"):
        discover_launches(kernel_only, "h100")
    looping = tmp_path / "loop.cu"
    looping.write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n"
                       "int main() { volatile int spin = 1; while (spin) {} k<<<1, 1>>>(nullptr); }\n")
    with pytest.raises(DiscoveryError, match="longer than 2 s"):
        discover_launches(looping, "h100", timeout=2)
    idle = tmp_path / "idle.cu"
    idle.write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\nint main() { return 0; }\n")
    with pytest.raises(DiscoveryError, match="launched no kernel"):
        discover_launches(idle, "h100")
    greedy = tmp_path / "greedy.cu"
    greedy.write_text("#include <cstdio>\n__global__ void k(char* x) { x[threadIdx.x] = 1; }\n"
                      "int main() { char* p; if (cudaMalloc(&p, size_t(8) << 30) != cudaSuccess) {\n"
                      "  std::printf(\"%s\\n\", cudaGetErrorString(cudaGetLastError())); return 2; }\n"
                      "  k<<<1, 1>>>(p); }\n")
    with pytest.raises(DiscoveryError, match="exit status 2: out of memory"):
        discover_launches(greedy, "h100", memory_bytes=2 << 30)  # the memory limit holds


# ---------------------------------------------------------------------------------------------
# Launch specs from flags
# ---------------------------------------------------------------------------------------------
def test_source_params_and_parsers():
    src = "// c\nextern \"C\" __global__ void __launch_bounds__(256)\nk(float4* __restrict__ a, const float s, size_t n4,\n" \
          "  int arr[4]) {}\n"
    assert [(p.name, p.pointer, p.floating) for p in source_params(src, "k")] == [
        ("a", True, False), ("s", False, True), ("n4", False, False), ("arr", True, False)]
    assert source_params(src, "other") is None
    assert parse_dims("4,2", "--grid", (2**31 - 1, 65535, 65535)) == (4, 2, 1)
    assert parse_bytes("64KiB", "--smem") == 65536 and parse_bytes("1GiB", "--buffer") == 1 << 30
    for bad in ("0", "1,2,3,4", "x", "-1", "1,70000"):
        with pytest.raises(LaunchSpecError, match="--grid"):
            parse_dims(bad, "--grid", (2**31 - 1, 65535, 65535))


TRIAD = {"kernel": "triad_kernel", "grid": "98304", "block": "256", "args": ["s=1.7", "n4=25165824"],
             "buffers": ["a=384MiB", "b=384MiB", "c=384MiB"]}


@pytest.fixture(scope="module")
def triad(toolchain: str):
    return compile_cu(ROOT / "profiles" / "src" / "dram_triad.cu", "h100")


def test_launch_from_flags(triad):
    launch = launch_from_spec(triad, **TRIAD)
    assert launch.kernel == "triad_kernel" and launch.grid == (98304, 1, 1) and launch.block == (256, 1, 1)
    a, b, c, s, n4 = launch.args
    assert [launch.buffers[x.buffer].size for x in (a, b, c)] == [384 << 20] * 3 and len({a.buffer, b.buffer, c.buffer}) == 3
    assert s.as_float() == pytest.approx(1.7) and n4.value == 25165824 and n4.size == 8
    positional = launch_from_spec(triad, **{**TRIAD, "args": ["3=1.7", "triad_kernel_param_4=0x1800000"]})
    assert positional.args[3].raw == s.raw and positional.args[4].value == 25165824


def test_flags_override_a_discovered_launch(triad):
    base = launch_from_spec(triad, **TRIAD)
    changed = launch_from_spec(triad, grid="10,2", smem="1KiB", args=["n4=5"], base=base)
    assert changed.grid == (10, 2, 1) and changed.block == base.block and changed.dynamic_shared_bytes == 1024
    assert changed.args[4].value == 5 and changed.args[:4] == base.args[:4] and changed.buffers == base.buffers


@pytest.mark.parametrize("change,message", [
    ({"grid": "0"}, "--grid '0': every dimension must be at least 1"),
    ({"block": "2048"}, "exceeds the CUDA limit 1024"),
    ({"block": "32,32,2"}, "2048 threads per block"),
    ({"grid": None}, "give --grid and --block"),
    ({"args": ["s=x", "n4=1"]}, "--arg s=x: not a number"),
    ({"args": ["s=1", "n4=1.5"]}, "takes an integer"),
    ({"args": ["s=1", "n4=-1"]}, "out of range"),
    ({"args": ["s=1", "n4=1", "q=1"]}, "has no parameter q"),
    ({"args": ["s=1", "n4=1", "a=1"]}, "both with --arg and --buffer"),
    ({"args": ["s", "n4=1"]}, "give NAME=VALUE"),
    ({"args": ["s=1"]}, "needs --arg n4=VALUE"),
    ({"buffers": ["a=1KiB", "b=1KiB"]}, "needs --buffer c=BYTES"),
    ({"args": ["n4=1"], "buffers": ["a=1KiB", "b=1KiB", "c=1KiB", "s=4"]}, "is not a pointer"),
    ({"buffers": ["a=1KiB", "b=1KiB", "c=lots"]}, "give a byte count"),
    ({"smem": "-5"}, "--smem"),
    ({"kernel": "nope"}, "no kernel 'nope'"),
])
def test_bad_launch_specs(triad, change: dict, message: str):
    with pytest.raises(LaunchSpecError) as info:
        launch_from_spec(triad, **{**TRIAD, **change})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_kernel_must_be_named_when_several(triad):
    with pytest.raises(LaunchSpecError, match="name the kernel with --kernel"):
        launch_from_spec(triad, **{**TRIAD, "kernel": None})
