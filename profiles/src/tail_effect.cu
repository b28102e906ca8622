// tail_effect -- category: tail_effect
//
// FP32-bound blocks of 1024 threads (32 independent FFMA chains per thread, ~56 registers,
// so only ONE block fits per SM: 1024 x 56 > 64K/2 registers) launched as 146 blocks
// = 1.106 waves on 132 SMs. The first wave keeps every SM busy; the second runs 14 blocks
// on 14 SMs while 118 SMs idle for the same block duration. Total time ~2 block durations
// for 1.106 blocks' worth of work per SM (~45% of the SM-time wasted).
// Hardcoded for 132 SMs (H100 SXM / H200) so the launch is the same everywhere.
#include "zoo.h"

constexpr int kChains = 32;
constexpr int kIters = 2048;
constexpr int kBlocks = 146;  // 132 + 14 = 1.106 waves at 1 block/SM

__host__ __device__ inline float tail_chains(float x, int iters) {
  float a[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) a[j] = x + 0.01f * float(j);
  const float m = 0.9995f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < kChains; ++j) a[j] = fmaf(a[j], m, 0.0005f);
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kChains; ++j) s += a[j];
  return s;
}

extern "C" __global__ void __launch_bounds__(1024, 1)
tail_effect_kernel(const float* __restrict__ in, int iters, float* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gid] = tail_chains(in[gid], iters);
}

int main(int argc, char** argv) {
  zoo::Session S("tail_effect", argc, argv);
  dim3 block(1024), grid(kBlocks);
  const unsigned threads = grid.x * block.x;
  auto hin = zoo::random_floats(threads, -1.f, 1.f, 191);
  float* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(threads);

  S.measure("tail_effect_kernel", grid, block, 0, [&] {
    tail_effect_kernel<<<grid, block>>>(in, kIters, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 1511)
    zoo::expect_close("out", t, hout[t], tail_chains(hin[t], kIters), 1e-5, 1e-5);
  zoo::check_ok("tail_effect");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
