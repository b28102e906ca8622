// warp_divergence -- category: warp_divergence
//
// Each lane takes one of 8 paths chosen by (lane & 7); every path is a long FMA chain with
// its own constants. The paths are serialised inside a warp, each with only 4 of 32 lanes
// active, so the FP32 pipe does 8x the warp-instructions the work needs (~12.5% of lanes
// useful). 1056 blocks x 256 threads x 4 chains x 2048 FMA of useful work per thread
// (2.2 GFMA), but 17.7 G lane-slots of FP32 issue: ~0.55 ms at 1.98 GHz.
#include "zoo.h"

constexpr int kPaths = 8;
constexpr int kIters = 2048;

__constant__ float c_mul[kPaths] = {0.9991f, 0.9987f, 0.9979f, 0.9973f,
                                    0.9969f, 0.9961f, 0.9957f, 0.9951f};
__constant__ float c_add[kPaths] = {0.011f, 0.013f, 0.017f, 0.019f,
                                    0.023f, 0.029f, 0.031f, 0.037f};

__host__ __device__ inline float path_work(float x, float m, float a, int iters) {
  float y0 = x, y1 = x + 1.f, y2 = x - 1.f, y3 = 0.5f * x;
  for (int i = 0; i < iters; ++i) {
    y0 = fmaf(y0, m, a);
    y1 = fmaf(y1, m, -a);
    y2 = fmaf(y2, m, a);
    y3 = fmaf(y3, m, -a);
  }
  return (y0 + y1) + (y2 + y3);
}

extern "C" __global__ void __launch_bounds__(256, 8)
divergent_kernel(const float* __restrict__ in, int iters, float* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  const int path = threadIdx.x & (kPaths - 1);  // differs between neighbouring lanes
  const float x = in[gid];
  float r = 0.f;
  // Not unrolled: the 8 branches execute one after another, 4 lanes active in each.
#pragma unroll 1
  for (int p = 0; p < kPaths; ++p) {
    if (p == path) r = path_work(x, c_mul[p], c_add[p], iters);
  }
  out[gid] = r;
}

int main(int argc, char** argv) {
  zoo::Session S("warp_divergence", argc, argv);
  dim3 block(256), grid(zoo::kNumSMs * 8);
  const unsigned threads = grid.x * block.x;
  auto hin = zoo::random_floats(threads, -1.f, 1.f, 71);
  float* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(threads);

  S.measure("divergent_kernel", grid, block, 0, [&] {
    divergent_kernel<<<grid, block>>>(in, kIters, out);
    CHECK_LAUNCH();
  });

  const float hmul[kPaths] = {0.9991f, 0.9987f, 0.9979f, 0.9973f,
                              0.9969f, 0.9961f, 0.9957f, 0.9951f};
  const float hadd[kPaths] = {0.011f, 0.013f, 0.017f, 0.019f, 0.023f, 0.029f, 0.031f, 0.037f};
  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 2053) {
    int p = t & (kPaths - 1);
    float ref = path_work(hin[t], hmul[p], hadd[p], kIters);
    zoo::expect_close("out", t, hout[t], ref, 1e-5, 1e-5);
  }
  zoo::check_ok("warp_divergence");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
