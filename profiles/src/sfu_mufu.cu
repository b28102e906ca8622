// sfu_mufu -- category: sfu_compute
//
// 8 independent chains of special-function ops per thread (sin, cos, 2^-x, 1/sqrt) written
// as PTX *.approx.ftz so each maps to one MUFU instruction on the SFU (XU pipe). The SFU
// does 16 results/clk/SM (1/8 of the FP32 rate): 1056 blocks x 256 threads x 1024 x 8 =
// 2.2 G MUFU -> 64 warps/SM x 8192 MUFU x 2 clk = 1.05 M clk per SM (~0.53 ms at
// 1.98 GHz). The only other work is one FMUL range reduction per sin/cos (FMA pipe, 1/16
// of the time).
#include "zoo.h"

constexpr int kIters = 1024;

__device__ __forceinline__ float mufu_sin(float x) {
  float y; asm volatile("sin.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float mufu_cos(float x) {
  float y; asm volatile("cos.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float mufu_ex2(float x) {
  float y; asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float mufu_rsqrt(float x) {
  float y; asm volatile("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}

extern "C" __global__ void __launch_bounds__(256, 8)
sfu_kernel(const float* __restrict__ in, int iters, float* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  const float x = in[gid];  // in (0.5, 1.5)
  float s0 = x, s1 = x - 1.f, c0 = x, c1 = -x, e0 = x, e1 = x - 0.5f, r0 = x, r1 = x + 1.f;
  for (int i = 0; i < iters; ++i) {
    // every map is a contraction on its range, so values stay finite and meaningful
    s0 = mufu_sin(s0); s1 = mufu_sin(s1);
    c0 = mufu_cos(c0); c1 = mufu_cos(c1);
    e0 = mufu_ex2(-e0); e1 = mufu_ex2(-e1);
    r0 = mufu_rsqrt(r0); r1 = mufu_rsqrt(r1);
  }
  out[gid] = ((s0 + s1) + (c0 + c1)) + ((e0 + e1) + (r0 + r1));
}

int main(int argc, char** argv) {
  zoo::Session S("sfu_mufu", argc, argv);
  dim3 block(256), grid(zoo::kNumSMs * 8);
  const unsigned threads = grid.x * block.x;
  auto hin = zoo::random_floats(threads, 0.5f, 1.5f, 101);
  float* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(threads);

  S.measure("sfu_kernel", grid, block, 0, [&] {
    sfu_kernel<<<grid, block>>>(in, kIters, out);
    CHECK_LAUNCH();
  });

  // Reference in double with exact functions; the MUFU approximations differ by ~1e-6
  // per step and every map contracts, so errors stay small.
  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 4111) {
    double x = hin[t];
    double s0 = x, s1 = x - 1, c0 = x, c1 = -x, e0 = x, e1 = x - 0.5, r0 = x, r1 = x + 1;
    for (int i = 0; i < kIters; ++i) {
      s0 = std::sin(s0); s1 = std::sin(s1); c0 = std::cos(c0); c1 = std::cos(c1);
      e0 = std::exp2(-e0); e1 = std::exp2(-e1); r0 = 1 / std::sqrt(r0); r1 = 1 / std::sqrt(r1);
    }
    double ref = ((s0 + s1) + (c0 + c1)) + ((e0 + e1) + (r0 + r1));
    zoo::expect_close("out", t, hout[t], ref, 1e-3, 1e-3);
  }
  zoo::check_ok("sfu_mufu");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
