// dram_triad -- category: dram_bandwidth
//
// STREAM triad a = b + s*c over 3 x 384 MiB float4 arrays (1.125 GiB of DRAM traffic,
// 22x the 50 MB L2, so nothing is reused). One 16-byte load/store per thread per array,
// fully coalesced, 2 flops per 12 bytes: the only limit is HBM bandwidth
// (~0.40 ms at ~3 TB/s on H100, ~0.27 ms on H200).
#include "zoo.h"

extern "C" __global__ void __launch_bounds__(256)
triad_kernel(float4* __restrict__ a, const float4* __restrict__ b,
             const float4* __restrict__ c, float s, size_t n4) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n4) {
    float4 x = b[i], y = c[i];
    a[i] = make_float4(fmaf(s, y.x, x.x), fmaf(s, y.y, x.y), fmaf(s, y.z, x.z),
                       fmaf(s, y.w, x.w));
  }
}

int main(int argc, char** argv) {
  zoo::Session S("dram_triad", argc, argv);
  const size_t n = size_t(96) << 20;  // 96 Mi floats = 384 MiB per array
  const size_t n4 = n / 4;
  const float s = 1.7f;
  auto hb = zoo::random_floats(n, -1.f, 1.f, 11);
  auto hc = zoo::random_floats(n, -1.f, 1.f, 12);
  float* b = zoo::to_device(hb);
  float* c = zoo::to_device(hc);
  float* a = zoo::device_alloc<float>(n);

  dim3 block(256), grid(unsigned((n4 + 255) / 256));
  S.measure("triad_kernel", grid, block, 0, [&] {
    triad_kernel<<<grid, block>>>(reinterpret_cast<float4*>(a),
                                   reinterpret_cast<const float4*>(b),
                                   reinterpret_cast<const float4*>(c), s, n4);
    CHECK_LAUNCH();
  });

  auto ha = zoo::to_host(a, n);
  for (size_t i = 0; i < n; i += 4099)
    zoo::expect_close("a", i, ha[i], std::fmaf(s, hc[i], hb[i]), 1e-6, 1e-6);
  zoo::check_ok("dram_triad");
  CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(c));
  return 0;
}
