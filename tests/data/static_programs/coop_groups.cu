// Cooperative groups: a block reduction through tiled_partition<32> and cg::reduce, a
// warp-tile prefix sum, thread_block::sync and a grid-stride loop over this_grid-free code.
// Written for perfmodel's tests (issue 22): the patterns of CUDA code in the wild.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cstdio>
#include <cstdlib>

namespace cg = cooperative_groups;

__global__ void block_sum(const float* in, float* out, int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  __shared__ float partial[32];
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += in[i];
  v = cg::reduce(warp, v, cg::plus<float>());
  if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = v;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    v = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.f;
    v = cg::reduce(warp, v, cg::plus<float>());
    if (block.thread_rank() == 0) atomicAdd(out, v);
  }
}

__global__ void tile_scan(const int* in, int* out, int n) {
  auto block = cg::this_thread_block();
  auto tile = cg::tiled_partition<16>(block);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  int s = cg::inclusive_scan(tile, v);
  int m = tile.shfl_down(s, 1);
  if (tile.any(v < 0)) s = -s;
  if (i < n) out[i] = s + (tile.thread_rank() == tile.size() - 1 ? 0 : m - m);
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1 << 22;
  float *in, *out;
  int *iin, *iout;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, sizeof(float));
  cudaMalloc(&iin, n * sizeof(int));
  cudaMalloc(&iout, n * sizeof(int));
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = 1.f;
  cudaMemcpy(in, h, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(iin, 0, n * sizeof(int));
  cudaMemset(out, 0, sizeof(float));
  block_sum<<<264, 256>>>(in, out, n);
  tile_scan<<<(n + 255) / 256, 256>>>(iin, iout, n);
  float r = 0;
  cudaMemcpy(&r, out, sizeof(float), cudaMemcpyDeviceToHost);
  printf("sum %.0f\n", r);
  free(h);
  return 0;
}
