// small_grid -- category: small_grid
//
// SAXPY y = a*x + y over 16 Mi floats (64 MiB per array, 192 MiB of traffic) run with only
// 8 blocks of 1024 threads: 8 of 132 SMs are used (6%). Each SM can only keep
// ~32 warps x a few 16-byte loads in flight, so the 8 busy SMs pull a small fraction of
// HBM bandwidth while 124 SMs idle; a full grid would run at HBM speed, ~4x faster.
#include "zoo.h"

extern "C" __global__ void __launch_bounds__(1024)
small_grid_saxpy_kernel(const float4* __restrict__ x, float4* __restrict__ y, float a,
                        size_t n4) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4;
       i += size_t(gridDim.x) * blockDim.x) {
    float4 xv = x[i], yv = y[i];
    y[i] = make_float4(fmaf(a, xv.x, yv.x), fmaf(a, xv.y, yv.y), fmaf(a, xv.z, yv.z),
                       fmaf(a, xv.w, yv.w));
  }
}

int main(int argc, char** argv) {
  zoo::Session S("small_grid", argc, argv);
  const size_t n = size_t(16) << 20, n4 = n / 4;
  const float a = 0.5f;
  auto hx = zoo::random_floats(n, -1.f, 1.f, 181);
  auto hy = zoo::random_floats(n, -1.f, 1.f, 182);
  float* x = zoo::to_device(hx);
  float* y = zoo::to_device(hy);
  dim3 block(1024), grid(8);

  // y is updated in place, so every launch changes it; check one launch from the
  // initial y (the profiled launch, or an extra untimed launch before timing).
  auto launch = [&] {
    small_grid_saxpy_kernel<<<grid, block>>>(reinterpret_cast<const float4*>(x),
                                             reinterpret_cast<float4*>(y), a, n4);
    CHECK_LAUNCH();
  };
  if (S.profile()) S.measure("small_grid_saxpy_kernel", grid, block, 0, launch);
  else launch();
  auto hout = zoo::to_host(y, n);
  for (size_t i = 0; i < n; i += 1021)
    zoo::expect_close("y", i, hout[i], std::fmaf(a, hx[i], hy[i]), 1e-6, 1e-6);
  if (!S.profile()) S.measure("small_grid_saxpy_kernel", grid, block, 0, launch);
  zoo::check_ok("small_grid");
  CHECK(cudaFree(x)); CHECK(cudaFree(y));
  return 0;
}
