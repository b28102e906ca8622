// barrier_sync -- category: barrier_sync
//
// 1024-thread blocks that exchange one value per thread through shared memory with a
// __syncthreads() before and after every exchange: per iteration 2 barriers around 1 STS,
// 1 LDS and 2 FP ops. Each barrier waits for the slowest of 32 warps, so warps spend most
// cycles stalled on the barrier. 264 blocks (2 per SM, 64 warps/SM) x 4096 iterations =
// 8192 barriers per block (~140 cycles each); memory traffic is just one load/store per thread.
#include "zoo.h"

constexpr int kIters = 4096;

extern "C" __global__ void __launch_bounds__(1024, 2)
barrier_kernel(const float* __restrict__ in, int iters, float* __restrict__ out) {
  __shared__ float buf[1024];
  const unsigned t = threadIdx.x;
  float v = in[blockIdx.x * blockDim.x + t];
  for (int k = 0; k < iters; ++k) {
    buf[t] = v;
    __syncthreads();
    const float p = buf[t ^ 32];  // partner lives in another warp
    v = fmaf(p, 0.5f, 0.5f * v);  // exact: 0.5*v is exact, one rounding in the FMA
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + t] = v;
}

int main(int argc, char** argv) {
  zoo::Session S("barrier_sync", argc, argv);
  dim3 block(1024), grid(zoo::kNumSMs * 2);
  const unsigned threads = grid.x * block.x;
  auto hin = zoo::random_floats(threads, -1.f, 1.f, 211);
  float* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(threads);

  S.measure("barrier_kernel", grid, block, 0, [&] {
    barrier_kernel<<<grid, block>>>(in, kIters, out);
    CHECK_LAUNCH();
  });

  // Reference for block 0 and the last block: every pair (t, t^32) evolves together.
  auto hout = zoo::to_host(out, threads);
  for (unsigned b : {0u, grid.x - 1}) {
    std::vector<float> v(hin.begin() + b * 1024, hin.begin() + (b + 1) * 1024), w(1024);
    for (int k = 0; k < kIters; ++k) {
      for (int t = 0; t < 1024; ++t) w[t] = std::fmaf(v[t ^ 32], 0.5f, 0.5f * v[t]);
      v.swap(w);
    }
    for (int t = 0; t < 1024; t += 7)
      zoo::expect_close("out", b * 1024 + t, hout[b * 1024 + t], v[t], 1e-6, 1e-6);
  }
  zoo::check_ok("barrier_sync");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
