// transpose_naive -- realistic; category: uncoalesced_global
//
// out = in^T for an 8192 x 8192 fp32 matrix (256 MiB each way), one element per thread,
// 32x8 blocks. Reads are coalesced (a warp reads 128 contiguous bytes of a row), but each
// warp's 32 writes go down a column of `out`, 32 KiB apart: 32 sectors (32 different
// lines) per store request instead of 4. The L2 merges the partial sectors before they
// reach DRAM, so the cost is in L1->L2 store requests/sectors, not raw DRAM bytes.
#include "zoo.h"

constexpr int kN = 8192;

extern "C" __global__ void __launch_bounds__(256)
transpose_naive_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int x = blockIdx.x * 32 + threadIdx.x;  // column in `in`
  const int y = blockIdx.y * 32 + threadIdx.y;  // row in `in`
#pragma unroll
  for (int j = 0; j < 32; j += 8)
    out[size_t(x) * n + y + j] = in[size_t(y + j) * n + x];  // strided store
}

int main(int argc, char** argv) {
  zoo::Session S("transpose_naive", argc, argv);
  const size_t n2 = size_t(kN) * kN;
  auto hin = zoo::random_floats(n2, -1.f, 1.f, 351);
  float* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(n2);
  dim3 block(32, 8), grid(kN / 32, kN / 32);

  S.measure("transpose_naive_kernel", grid, block, 0, [&] {
    transpose_naive_kernel<<<grid, block>>>(in, out, kN);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, n2);
  for (size_t i = 0; i < n2; i += 9973) {
    size_t r = i / kN, c = i % kN;
    if (hout[i] != hin[c * kN + r]) zoo::fail("out[%zu]: got %g expected %g", i, hout[i], hin[c * kN + r]);
  }
  zoo::check_ok("transpose_naive");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
