// transpose: out = in^T for a rows x cols fp32 matrix through a 32x32 shared-memory tile.
// Derived from profiles/src/transpose_smem_conflict.cu (category shared_bank_conflicts):
// the column read tile[threadIdx.x][...] walks addresses 128 B apart, all in one bank
// (32-way conflict) unless the tile is padded. Knobs (the kernel author exposes them):
//   TILE_PAD    0: tile[32][32] (conflicted), 1: tile[32][33] (conflict-free)
//   BLOCK_ROWS  thread rows per block; each thread moves 32/BLOCK_ROWS elements
#include "keet_problem.h"

#ifndef TILE_PAD
#define TILE_PAD 0  // knob: 0, 1
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8  // knob: 4, 8, 16, 32
#endif

constexpr int kTile = 32;

extern "C" __global__ void __launch_bounds__(kTile * BLOCK_ROWS)
transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[kTile][kTile + TILE_PAD];
  int x = blockIdx.x * kTile + threadIdx.x;  // column of in
  int y = blockIdx.y * kTile + threadIdx.y;  // row of in
#pragma unroll
  for (int j = 0; j < kTile; j += BLOCK_ROWS)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[size_t(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;  // column of out (a row of in)
  y = blockIdx.x * kTile + threadIdx.y;  // row of out (a column of in)
#pragma unroll
  for (int j = 0; j < kTile; j += BLOCK_ROWS)
    if (x < rows && y + j < cols) out[size_t(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  const int rows = int(p->dim[0]), cols = int(p->dim[1]);
  dim3 block(kTile, BLOCK_ROWS), grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  transpose_kernel<<<grid, block, 0, stream>>>(static_cast<const float*>(p->in[0]), static_cast<float*>(p->out[0]), rows, cols);
}
