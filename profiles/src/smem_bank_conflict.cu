// smem_bank_conflict -- category: shared_bank_conflicts
//
// Each lane reads column c of a 32x32 float tile: lane L reads tile[L][c], byte address
// L*128 + 4c, so all 32 lanes hit bank c: a 32-way conflict, 32 wavefronts per warp
// instruction instead of 1. 512 such loads per thread, 1056 blocks x 256 threads:
// 64 warps/SM x 512 x 32 wavefronts = 1.05 M shared-pipe cycles per SM (~0.53 ms at
// 1.98 GHz) for only 0.55 GB of useful data. Everything else is a few FADDs per load.
#include "zoo.h"

constexpr int kIters = 512;

extern "C" __global__ void __launch_bounds__(256, 8)
bank_conflict_kernel(const float* __restrict__ in, int iters, float* __restrict__ out) {
  // One 4 KiB tile per block (conflicts are within a warp; all 8 warps share the tile).
  __shared__ float tile[32][32];
  for (int i = threadIdx.x; i < 32 * 32; i += blockDim.x) tile[i / 32][i % 32] = in[i];
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const uint32_t row = zoo::smem_addr(&tile[lane][0]);  // 128 B apart per lane
  float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
  for (int k = 0; k < iters; k += 32) {
#pragma unroll
    for (int c = 0; c < 32; c += 4) {
      a0 += zoo::lds32(row + 4 * (c + 0));  // same column for every lane -> same bank
      a1 += zoo::lds32(row + 4 * (c + 1));
      a2 += zoo::lds32(row + 4 * (c + 2));
      a3 += zoo::lds32(row + 4 * (c + 3));
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = (a0 + a1) + (a2 + a3);
}

int main(int argc, char** argv) {
  zoo::Session S("smem_bank_conflict", argc, argv);
  auto hin = zoo::random_floats(32 * 32, 0.f, 1.f, 51);
  float* in = zoo::to_device(hin);
  dim3 block(256), grid(zoo::kNumSMs * 8);  // one wave at 8 blocks/SM
  const unsigned threads = grid.x * block.x;
  float* out = zoo::device_alloc<float>(threads);

  S.measure("bank_conflict_kernel", grid, block, 0, [&] {
    bank_conflict_kernel<<<grid, block>>>(in, kIters, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 613) {
    int lane = t & 31;
    double ref = 0;
    for (int c = 0; c < 32; ++c) ref += hin[lane * 32 + c];
    ref *= kIters / 32;
    zoo::expect_close("out", t, hout[t], ref, 1e-4, 1e-3);
  }
  zoo::check_ok("smem_bank_conflict");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
