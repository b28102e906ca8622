// register_spill -- category: register_spills
//
// 64 live fp32 accumulators per thread, each updated by an FMA every iteration, but
// __launch_bounds__(256, 8) caps the kernel at 32 registers (64K regs / 2048 threads).
// ptxas must keep the rest in local memory (336 B stack frame, 1332 B of spill stores and
// 1028 B of spill loads in the code), so every iteration does ~100 LDL/STL per 64 FFMA.
// Local memory is per-thread interleaved (coalesced), but 2048 threads x 336 B = 688 KB
// per SM overflow the L1, so the spill traffic goes to L2: far more time in local-memory
// traffic than in the FMAs themselves. 1056 blocks x 256 threads x 64 iterations.
#include "zoo.h"

constexpr int kAcc = 64;
constexpr int kIters = 64;
constexpr int kCoef = 1024;

__host__ __device__ inline float acc_c(int j) { return 0.001f * float(j + 1); }

extern "C" __global__ void __launch_bounds__(256, 8)
spill_kernel(const float* __restrict__ in, const float* __restrict__ coef, int iters,
             float* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  const float x0 = in[gid];
  float acc[kAcc];
#pragma unroll
  for (int j = 0; j < kAcc; ++j) acc[j] = x0 + 0.01f * float(j);
  for (int k = 0; k < iters; ++k) {
    const float m = coef[k & (kCoef - 1)];  // warp-uniform, L1-resident
#pragma unroll
    for (int j = 0; j < kAcc; ++j) acc[j] = fmaf(acc[j], m, acc_c(j));
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kAcc; ++j) s += acc[j];
  out[gid] = s;
}

int main(int argc, char** argv) {
  zoo::Session S("register_spill", argc, argv);
  dim3 block(256), grid(zoo::kNumSMs * 8);  // one wave at 8 blocks/SM
  const unsigned threads = grid.x * block.x;
  auto hin = zoo::random_floats(threads, -1.f, 1.f, 141);
  auto hcoef = zoo::random_floats(kCoef, 0.9f, 1.0f, 142);
  float* in = zoo::to_device(hin);
  float* coef = zoo::to_device(hcoef);
  float* out = zoo::device_alloc<float>(threads);

  S.measure("spill_kernel", grid, block, 0, [&] {
    spill_kernel<<<grid, block>>>(in, coef, kIters, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 4111) {
    float acc[kAcc];
    for (int j = 0; j < kAcc; ++j) acc[j] = hin[t] + 0.01f * float(j);
    for (int k = 0; k < kIters; ++k)
      for (int j = 0; j < kAcc; ++j) acc[j] = std::fmaf(acc[j], hcoef[k & (kCoef - 1)], acc_c(j));
    float s = 0.f;
    for (int j = 0; j < kAcc; ++j) s += acc[j];
    zoo::expect_close("out", t, hout[t], s, 1e-5, 1e-5);
  }
  zoo::check_ok("register_spill");
  CHECK(cudaFree(in)); CHECK(cudaFree(coef)); CHECK(cudaFree(out));
  return 0;
}
