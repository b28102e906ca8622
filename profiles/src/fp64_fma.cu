// fp64_fma -- category: fp64_compute
//
// 8 independent DFMA chains per thread, 4096 steps each: 32768 DFMA per thread,
// 1056 blocks x 256 threads -> 8.9 G DFMA = 17.7 GFLOP. H100 SXM has 64 FP64 lanes/SM
// (half the FP32 rate): 132 x 64 x 2 x 1.98 GHz = 33.5 TFLOP/s -> ~0.53 ms.
#include "zoo.h"

constexpr int kIters = 4096;

__host__ __device__ inline double dfma_chains(double x, double m, int iters) {
  double a0 = x, a1 = x + 0.1, a2 = x + 0.2, a3 = x + 0.3;
  double a4 = x - 0.1, a5 = x - 0.2, a6 = x - 0.3, a7 = x - 0.4;
  for (int i = 0; i < iters; ++i) {
    a0 = fma(a0, m, 0.01); a1 = fma(a1, m, 0.02);
    a2 = fma(a2, m, 0.03); a3 = fma(a3, m, 0.04);
    a4 = fma(a4, m, -0.01); a5 = fma(a5, m, -0.02);
    a6 = fma(a6, m, -0.03); a7 = fma(a7, m, -0.04);
  }
  return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}

extern "C" __global__ void __launch_bounds__(256, 8)
fp64_fma_kernel(const double* __restrict__ in, int iters, double* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  const double x = in[gid];
  out[gid] = dfma_chains(x, 0.995 + 0.004 * x, iters);
}

int main(int argc, char** argv) {
  zoo::Session S("fp64_fma", argc, argv);
  dim3 block(256), grid(zoo::kNumSMs * 8);
  const unsigned threads = grid.x * block.x;
  std::vector<double> hin(threads);
  zoo::Rng r(91);
  for (auto& x : hin) x = r.uniform(-1.f, 1.f);
  double* in = zoo::to_device(hin);
  double* out = zoo::device_alloc<double>(threads);

  S.measure("fp64_fma_kernel", grid, block, 0, [&] {
    fp64_fma_kernel<<<grid, block>>>(in, kIters, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 4111) {
    double x = hin[t];
    double ref = dfma_chains(x, std::fma(0.004, x, 0.995), kIters);
    zoo::expect_close("out", t, hout[t], ref, 1e-12, 1e-12);
  }
  zoo::check_ok("fp64_fma");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
