// uncoalesced_gather -- category: uncoalesced_global
//
// out[i] = 2*in[src(i)] + 1 over 32 Mi floats (128 MiB each way), where src() is a
// transpose-like permutation with a stride of 32 floats = 128 B between consecutive
// threads. Every warp load touches 32 different 128-byte lines: 32 sectors per request
// instead of 4, 4 useful bytes per 32-byte sector. The 128 MiB input is 2.5x the L2, and a
// line is revisited only after a sweep over the whole input, so each sector is fetched
// from DRAM ~8 times: ~1 GiB of DRAM sector traffic for 128 MiB of useful data.
// Writes are coalesced, so the read pattern is the only problem.
#include "zoo.h"

constexpr int kLogN = 25;  // 32 Mi floats
constexpr int kLogStride = 5;  // stride 32 floats

__host__ __device__ __forceinline__ unsigned gather_src(unsigned i) {
  // i = hi * 2^(logN-5) + lo  ->  src = lo * 32 + hi   (a bijection on [0, 2^logN))
  return ((i << kLogStride) & ((1u << kLogN) - 1)) | (i >> (kLogN - kLogStride));
}

extern "C" __global__ void __launch_bounds__(256)
uncoalesced_gather_kernel(const float* __restrict__ in, float* __restrict__ out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = fmaf(2.f, in[gather_src(i)], 1.f);
}

int main(int argc, char** argv) {
  zoo::Session S("uncoalesced_gather", argc, argv);
  const size_t n = size_t(1) << kLogN;
  auto hin = zoo::random_floats(n, -1.f, 1.f, 41);
  float* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(n);
  dim3 block(256), grid(unsigned(n / 256));

  S.measure("uncoalesced_gather_kernel", grid, block, 0, [&] {
    uncoalesced_gather_kernel<<<grid, block>>>(in, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, n);
  for (size_t i = 0; i < n; i += 997)
    zoo::expect_close("out", i, hout[i], 2.0 * hin[gather_src(unsigned(i))] + 1.0, 1e-6, 1e-6);
  zoo::check_ok("uncoalesced_gather");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
