// fp32_fma -- category: fp32_compute
//
// 8 independent FFMA chains per thread, 8192 steps each: 65536 FMA per thread,
// 1056 blocks x 256 threads -> 17.7 G FMA = 35.4 GFLOP with one 4-byte load and store per
// thread. H100 SXM: 128 FP32 lanes/SM x 132 SMs x 2 flop x 1.98 GHz = 66.9 TFLOP/s, so
// ~0.53 ms; 8 independent chains x 16 warps per scheduler hide the 4-cycle FMA latency.
#include "zoo.h"

constexpr int kIters = 8192;

__host__ __device__ inline float fma_chains(float x, float m, int iters) {
  float a0 = x, a1 = x + 0.1f, a2 = x + 0.2f, a3 = x + 0.3f;
  float a4 = x - 0.1f, a5 = x - 0.2f, a6 = x - 0.3f, a7 = x - 0.4f;
  for (int i = 0; i < iters; ++i) {
    a0 = fmaf(a0, m, 0.01f); a1 = fmaf(a1, m, 0.02f);
    a2 = fmaf(a2, m, 0.03f); a3 = fmaf(a3, m, 0.04f);
    a4 = fmaf(a4, m, -0.01f); a5 = fmaf(a5, m, -0.02f);
    a6 = fmaf(a6, m, -0.03f); a7 = fmaf(a7, m, -0.04f);
  }
  return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}

extern "C" __global__ void __launch_bounds__(256, 8)
fp32_fma_kernel(const float* __restrict__ in, int iters, float* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  const float x = in[gid];
  // multiplier in (0.99, 1): per-thread so nothing is a compile-time constant
  out[gid] = fma_chains(x, 0.995f + 0.004f * x, iters);
}

int main(int argc, char** argv) {
  zoo::Session S("fp32_fma", argc, argv);
  dim3 block(256), grid(zoo::kNumSMs * 8);
  const unsigned threads = grid.x * block.x;
  auto hin = zoo::random_floats(threads, -1.f, 1.f, 81);
  float* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(threads);

  S.measure("fp32_fma_kernel", grid, block, 0, [&] {
    fp32_fma_kernel<<<grid, block>>>(in, kIters, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 4111) {
    float x = hin[t];
    float ref = fma_chains(x, std::fmaf(0.004f, x, 0.995f), kIters);
    zoo::expect_close("out", t, hout[t], ref, 1e-5, 1e-5);
  }
  zoo::check_ok("fp32_fma");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
