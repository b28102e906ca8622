// softmax_rows -- realistic; category: dram_bandwidth
//
// Row-wise softmax of a 16384 x 4096 fp32 matrix, one 256-thread block per row. Each
// thread keeps its 16 values (4 float4) in registers, so the row is read from DRAM once
// and written once: 256 MiB + 256 MiB = 512 MiB of traffic (~0.18 ms at ~3 TB/s) against
// ~6 flops + 1 exp per element. Two block reductions (max, sum) via warp shuffles and a
// small shared array add latency but no traffic: HBM bandwidth is the limit.
#include "zoo.h"

constexpr int kRows = 16384, kCols = 4096;
constexpr int kThreads = 256, kVec = kCols / 4 / kThreads;  // 4 float4 per thread

__device__ __forceinline__ float block_reduce(float v, bool is_max, float* red) {
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = red[lane % (kThreads / 32)];
  for (int o = (kThreads / 64); o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  __syncthreads();  // red[] is reused by the next reduction
  return v;
}

extern "C" __global__ void __launch_bounds__(kThreads)
softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float red[kThreads / 32];
  const float4* xr = reinterpret_cast<const float4*>(x + size_t(blockIdx.x) * cols);
  float4* yr = reinterpret_cast<float4*>(y + size_t(blockIdx.x) * cols);
  float4 v[kVec];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    v[i] = xr[threadIdx.x + i * kThreads];
    m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
  }
  m = block_reduce(m, true, red);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    v[i].x = __expf(v[i].x - m); v[i].y = __expf(v[i].y - m);
    v[i].z = __expf(v[i].z - m); v[i].w = __expf(v[i].w - m);
    s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
  }
  s = block_reduce(s, false, red);
  const float inv = 1.f / s;
#pragma unroll
  for (int i = 0; i < kVec; ++i)
    yr[threadIdx.x + i * kThreads] =
        make_float4(v[i].x * inv, v[i].y * inv, v[i].z * inv, v[i].w * inv);
}

int main(int argc, char** argv) {
  zoo::Session S("softmax_rows", argc, argv);
  const size_t n = size_t(kRows) * kCols;
  auto hx = zoo::random_floats(n, -8.f, 8.f, 321);
  float* x = zoo::to_device(hx);
  float* y = zoo::device_alloc<float>(n);
  dim3 block(kThreads), grid(kRows);

  S.measure("softmax_kernel", grid, block, 0, [&] {
    softmax_kernel<<<grid, block>>>(x, y, kCols);
    CHECK_LAUNCH();
  });

  auto hy = zoo::to_host(y, n);
  for (int r = 0; r < kRows; r += 1637) {
    const float* xr = &hx[size_t(r) * kCols];
    double m = -1e30, s = 0;
    for (int c = 0; c < kCols; ++c) m = std::max(m, double(xr[c]));
    for (int c = 0; c < kCols; ++c) s += std::exp(xr[c] - m);
    for (int c = 0; c < kCols; c += 3)
      zoo::expect_close("y", size_t(r) * kCols + c, hy[size_t(r) * kCols + c],
                        std::exp(xr[c] - m) / s, 1e-4, 1e-9);
  }
  zoo::check_ok("softmax_rows");
  CHECK(cudaFree(x)); CHECK(cudaFree(y));
  return 0;
}
