// issue_mix -- category: instruction_issue
//
// A long stream of cheap, independent instructions spread over two pipes so that neither
// saturates but the warp schedulers (1 instruction/clk each) do. Per chain and step:
// 2 FFMA (FMA pipe: 1 warp-instr/clk per scheduler on H100) + 1 integer LEA.HI
// (ALU pipe: 1 warp-instr per 2 clk per scheduler). With 6 independent chains and 64
// warps/SM, issue runs at ~100% while the FMA pipe sits near 67% and the ALU pipe near
// 67%. 1056 blocks x 256 threads x 3072 steps x 18 instructions = 15 G thread-instr
// -> 64 warps x 3072 x 18 / 4 per clk = 0.88 M clk per SM (~0.45 ms at 1.98 GHz).
#include "zoo.h"

constexpr int kIters = 3072;
constexpr int kChains = 6;

__host__ __device__ inline float issue_chains(float x, uint32_t seed, int iters) {
  float f[kChains], g[kChains];
  uint32_t u[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) {
    f[j] = x + 0.0625f * j;  // x in [-1, 1): all starts inside the bounded orbit
    g[j] = x - 0.0625f * j;
    u[j] = seed + 0x9E3779B9u * uint32_t(j);
  }
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < kChains; ++j) {
      f[j] = fmaf(f[j], f[j], -1.9f);  // FMA pipe; x^2 - 1.9 stays in [-1.97, 1.97]
      g[j] = fmaf(g[j], 0.5f, f[j]);   // FMA pipe; bounded running average of f
      u[j] = u[j] + (u[j] >> 3);       // ALU pipe: one LEA.HI, not mergeable
    }
  }
  float s = 0.f;
  uint32_t h = 0;
#pragma unroll
  for (int j = 0; j < kChains; ++j) {
    s += f[j] + g[j];
    h ^= u[j];
  }
  return s + float(h & 0xffu);
}

extern "C" __global__ void __launch_bounds__(256, 8)
issue_mix_kernel(const float* __restrict__ in, int iters, float* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gid] = issue_chains(in[gid], gid, iters);
}

int main(int argc, char** argv) {
  zoo::Session S("issue_mix", argc, argv);
  dim3 block(256), grid(zoo::kNumSMs * 8);
  const unsigned threads = grid.x * block.x;
  auto hin = zoo::random_floats(threads, -1.f, 1.f, 131);
  float* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(threads);

  S.measure("issue_mix_kernel", grid, block, 0, [&] {
    issue_mix_kernel<<<grid, block>>>(in, kIters, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 4111) {
    float ref = issue_chains(hin[t], t, kIters);
    zoo::expect_close("out", t, hout[t], ref, 1e-5, 1e-5);
  }
  zoo::check_ok("issue_mix");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
