// smem_bandwidth -- category: l1_shared_bandwidth
//
// Conflict-free shared-memory streaming: every thread reads 16 B (LDS.128) per step from a
// 16 KiB per-block tile, consecutive lanes at consecutive addresses (4 wavefronts per warp
// instruction, the minimum for 512 B). 4096 LDS.128 per thread, 1056 blocks x 256 threads:
// 17.7 GB of shared-memory reads. Shared memory delivers 128 B/clk/SM, so each warp-load
// costs 4 clk of the shared pipe but only ~1 issue slot + 4 FADD: the L1/shared data path
// is the limit (~0.55 ms at 1.98 GHz). Global traffic is just the 16 KiB tile fill.
#include "zoo.h"

constexpr int kTileFloat4 = 1024;  // 16 KiB per block -> 8 blocks/SM fit (64 warps)
constexpr int kIters = 4096;

extern "C" __global__ void __launch_bounds__(256, 8)
smem_bandwidth_kernel(const float4* __restrict__ in, int iters, float* __restrict__ out) {
  __shared__ float4 tile[kTileFloat4];
  for (int i = threadIdx.x; i < kTileFloat4; i += blockDim.x) tile[i] = in[i];
  __syncthreads();
  // With 256 threads and a 1024-entry tile, the pattern (tid + u*256) never wraps within
  // 4 steps, so the 4 addresses are loop-invariant; the volatile PTX loads are still all
  // issued every iteration.
  const uint32_t my = zoo::smem_addr(&tile[threadIdx.x]);
  float4 a0 = make_float4(0.f, 0.f, 0.f, 0.f), a1 = a0;
  for (int k = 0; k < iters; k += 8) {
#pragma unroll
    for (int u = 0; u < 8; u += 2) {
      float4 v0 = zoo::lds128(my + (u & 3) * 4096);
      float4 v1 = zoo::lds128(my + ((u + 1) & 3) * 4096);
      a0.x += v0.x; a0.y += v0.y; a0.z += v0.z; a0.w += v0.w;
      a1.x += v1.x; a1.y += v1.y; a1.z += v1.z; a1.w += v1.w;
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] =
      (a0.x + a0.y + a0.z + a0.w) + (a1.x + a1.y + a1.z + a1.w);
}

int main(int argc, char** argv) {
  zoo::Session S("smem_bandwidth", argc, argv);
  auto hin = zoo::random_floats(kTileFloat4 * 4, 0.f, 1.f, 31);
  float* in = zoo::to_device(hin);
  dim3 block(256), grid(zoo::kNumSMs * 8);  // exactly one wave at 8 blocks/SM
  const unsigned threads = grid.x * block.x;
  float* out = zoo::device_alloc<float>(threads);

  S.measure("smem_bandwidth_kernel", grid, block, 0, [&] {
    smem_bandwidth_kernel<<<grid, block>>>(reinterpret_cast<const float4*>(in), kIters, out);
    CHECK_LAUNCH();
  });

  // Every thread's result depends only on threadIdx.x: check all 256 of block 0.
  auto hout = zoo::to_host(out, threads);
  for (int t = 0; t < 256; ++t) {
    double ref = 0;
    for (int u = 0; u < 4; ++u)
      for (int k = 0; k < 4; ++k) ref += hin[size_t(t + u * 256) * 4 + k];
    ref *= kIters / 4;
    zoo::expect_close("out", t, hout[t], ref, 1e-4, 1e-3);
    if (hout[t] != hout[t + 256 * 17]) zoo::fail("out differs between blocks at %d", t);
  }
  zoo::check_ok("smem_bandwidth");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
