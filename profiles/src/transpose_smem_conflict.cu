// transpose_smem_conflict -- realistic; category: shared_bank_conflicts
//
// out = in^T for an 8192 x 8192 fp32 matrix (256 MiB each way) through a shared-memory
// tile[32][32], 32x8 threads per block, 4 elements per thread. Global reads and
// writes are both coalesced (128 B per warp request).
// The read-back tile[threadIdx.x][threadIdx.y + j] walks a column: addresses 128 B apart,
// all in one bank -> 32-way conflict, 32 wavefronts per LDS. Per 32x32 tile: 8 warps x
// (4 conflict-free STS + 4 x 32-wavefront LDS) = 1056 shared cycles vs 8 KiB of DRAM
// traffic (~640 SM-cycles of HBM time at 3.35 TB/s, ~450 at 4.8 TB/s): the bank conflicts,
// not DRAM, set the pace. transpose_smem_padded is the same kernel with tile[32][33].
#include "zoo.h"

constexpr int kN = 8192;
constexpr int kTile = 32, kRows = 8;

extern "C" __global__ void __launch_bounds__(256)
transpose_smem_conflict_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[kTile][kTile];  // unpadded: column reads conflict
  int x = blockIdx.x * kTile + threadIdx.x;
  int y = blockIdx.y * kTile + threadIdx.y;
#pragma unroll
  for (int j = 0; j < kTile; j += kRows)
    tile[threadIdx.y + j][threadIdx.x] = in[size_t(y + j) * n + x];  // row write: no conflict
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;  // transposed block position
  y = blockIdx.x * kTile + threadIdx.y;
#pragma unroll
  for (int j = 0; j < kTile; j += kRows)
    out[size_t(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];  // column read
}

int main(int argc, char** argv) {
  zoo::Session S("transpose_smem_conflict", argc, argv);
  const size_t n2 = size_t(kN) * kN;
  auto hin = zoo::random_floats(n2, -1.f, 1.f, 361);
  float* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(n2);
  dim3 block(kTile, kRows), grid(kN / kTile, kN / kTile);

  S.measure("transpose_smem_conflict_kernel", grid, block, 0, [&] {
    transpose_smem_conflict_kernel<<<grid, block>>>(in, out, kN);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, n2);
  for (size_t i = 0; i < n2; i += 9973) {
    size_t r = i / kN, c = i % kN;
    if (hout[i] != hin[c * kN + r]) zoo::fail("out[%zu]: got %g expected %g", i, hout[i], hin[c * kN + r]);
  }
  zoo::check_ok("transpose_smem_conflict");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
