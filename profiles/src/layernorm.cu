// layernorm -- realistic; category: dram_bandwidth
//
// LayerNorm over rows of a 16384 x 4096 fp32 matrix (y = (x - mean) * rstd * gamma +
// beta), one 256-thread block per row, row held in registers (16 floats per thread), mean
// and variance by two block reductions over the register copy (two-pass, numerically
// safe). x is read once and y written once: 512 MiB of DRAM traffic; gamma/beta (32 KiB)
// stay in L2/L1. ~8 flops per element: HBM bandwidth is the limit (~0.18 ms on H100).
#include "zoo.h"

constexpr int kRows = 16384, kCols = 4096;
constexpr int kThreads = 256, kVec = kCols / 4 / kThreads;
constexpr float kEps = 1e-5f;

__device__ __forceinline__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = red[lane % (kThreads / 32)];
  for (int o = (kThreads / 64); o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  return v;
}

extern "C" __global__ void __launch_bounds__(kThreads)
layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                 const float* __restrict__ beta, float* __restrict__ y, int cols) {
  __shared__ float red[kThreads / 32];
  const float4* xr = reinterpret_cast<const float4*>(x + size_t(blockIdx.x) * cols);
  float4* yr = reinterpret_cast<float4*>(y + size_t(blockIdx.x) * cols);
  const float4* g4 = reinterpret_cast<const float4*>(gamma);
  const float4* b4 = reinterpret_cast<const float4*>(beta);
  float4 v[kVec];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    v[i] = xr[threadIdx.x + i * kThreads];
    s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
  }
  const float mean = block_sum(s, red) / float(cols);
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    v[i].x -= mean; v[i].y -= mean; v[i].z -= mean; v[i].w -= mean;
    q += (v[i].x * v[i].x + v[i].y * v[i].y) + (v[i].z * v[i].z + v[i].w * v[i].w);
  }
  const float rstd = rsqrtf(block_sum(q, red) / float(cols) + kEps);
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const float4 g = g4[c], b = b4[c];
    yr[c] = make_float4(fmaf(v[i].x * rstd, g.x, b.x), fmaf(v[i].y * rstd, g.y, b.y),
                        fmaf(v[i].z * rstd, g.z, b.z), fmaf(v[i].w * rstd, g.w, b.w));
  }
}

int main(int argc, char** argv) {
  zoo::Session S("layernorm", argc, argv);
  const size_t n = size_t(kRows) * kCols;
  auto hx = zoo::random_floats(n, -2.f, 3.f, 331);
  auto hg = zoo::random_floats(kCols, 0.5f, 1.5f, 332);
  auto hb = zoo::random_floats(kCols, -0.5f, 0.5f, 333);
  float* x = zoo::to_device(hx);
  float* g = zoo::to_device(hg);
  float* b = zoo::to_device(hb);
  float* y = zoo::device_alloc<float>(n);
  dim3 block(kThreads), grid(kRows);

  S.measure("layernorm_kernel", grid, block, 0, [&] {
    layernorm_kernel<<<grid, block>>>(x, g, b, y, kCols);
    CHECK_LAUNCH();
  });

  auto hy = zoo::to_host(y, n);
  for (int r = 0; r < kRows; r += 1637) {
    const float* xr = &hx[size_t(r) * kCols];
    double mean = 0, var = 0;
    for (int c = 0; c < kCols; ++c) mean += xr[c];
    mean /= kCols;
    for (int c = 0; c < kCols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    const double rstd = 1.0 / std::sqrt(var / kCols + kEps);
    for (int c = 0; c < kCols; c += 3)
      zoo::expect_close("y", size_t(r) * kCols + c, hy[size_t(r) * kCols + c],
                        (xr[c] - mean) * rstd * hg[c] + hb[c], 1e-4, 1e-4);
  }
  zoo::check_ok("layernorm");
  CHECK(cudaFree(x)); CHECK(cudaFree(g)); CHECK(cudaFree(b)); CHECK(cudaFree(y));
  return 0;
}
