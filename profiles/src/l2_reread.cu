// l2_reread -- category: l2_bandwidth
//
// 1024 passes over a 16 MiB buffer (fits the 50 MB / 60 MB L2 several times over) with
// __ldcg loads (cache-global: bypass L1, so every load is served by L2). Total L2->SM
// traffic: 2^18 threads x 1024 x 16 B = 4 GiB, DRAM traffic only ~16 MiB (first touch).
// Each pass is a fully coalesced 16-byte-per-lane sweep; arithmetic is 4 FADD per 16 B.
#include "zoo.h"

constexpr unsigned kBufFloat4 = 1u << 20;  // 1 Mi float4 = 16 MiB
constexpr int kPasses = 1024;

extern "C" __global__ void __launch_bounds__(256)
l2_reread_kernel(const float4* __restrict__ buf, int passes, float* __restrict__ out) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned stride = gridDim.x * blockDim.x;
  float4 acc0 = make_float4(0.f, 0.f, 0.f, 0.f), acc1 = acc0;
  unsigned idx = tid;
  // Two accumulator sets so consecutive loads are independent; unrolled so many
  // L2 requests are in flight per warp.
#pragma unroll 8
  for (int p = 0; p < passes; p += 2) {
    float4 v0 = __ldcg(buf + (idx & (kBufFloat4 - 1)));
    float4 v1 = __ldcg(buf + ((idx + stride) & (kBufFloat4 - 1)));
    acc0.x += v0.x; acc0.y += v0.y; acc0.z += v0.z; acc0.w += v0.w;
    acc1.x += v1.x; acc1.y += v1.y; acc1.z += v1.z; acc1.w += v1.w;
    idx += 2 * stride;
  }
  out[tid] = (acc0.x + acc0.y + acc0.z + acc0.w) + (acc1.x + acc1.y + acc1.z + acc1.w);
}

int main(int argc, char** argv) {
  zoo::Session S("l2_reread", argc, argv);
  auto hbuf = zoo::random_floats(size_t(kBufFloat4) * 4, 0.f, 1.f, 21);
  float* buf = zoo::to_device(hbuf);
  dim3 block(256), grid(1024);  // 2^18 threads; 7.75 blocks per SM -> ~1 wave at 8/SM
  const unsigned threads = grid.x * block.x;
  float* out = zoo::device_alloc<float>(threads);

  S.measure("l2_reread_kernel", grid, block, 0, [&] {
    l2_reread_kernel<<<grid, block>>>(reinterpret_cast<const float4*>(buf), kPasses, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 4093) {
    double ref = 0;
    for (int p = 0; p < kPasses; ++p) {
      unsigned i = (t + unsigned(p) * threads) & (kBufFloat4 - 1);
      for (int k = 0; k < 4; ++k) ref += hbuf[size_t(i) * 4 + k];
    }
    zoo::expect_close("out", t, hout[t], ref, 1e-4, 1e-3);
  }
  zoo::check_ok("l2_reread");
  CHECK(cudaFree(buf)); CHECK(cudaFree(out));
  return 0;
}
