// reduce_tree -- realistic; category: dram_bandwidth
//
// Sum of 128 Mi floats (512 MiB). 528 blocks x 512 threads (one wave): each thread accumulates a
// grid-stride run of float4 loads (two independent accumulators), then the block does the
// classic shared-memory tree reduction (512 -> 1 with __syncthreads between levels) and
// writes one partial sum; the 528 partials are added on the host. The tree costs a few
// microseconds; streaming 512 MiB from HBM (~0.17 ms on H100) is the limit.
#include "zoo.h"

constexpr size_t kN = size_t(128) << 20;
constexpr int kThreads = 512;

extern "C" __global__ void __launch_bounds__(kThreads)
reduce_tree_kernel(const float4* __restrict__ x, size_t n4, float* __restrict__ partial) {
  __shared__ float sm[kThreads];
  float a = 0.f, b = 0.f;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (; i + stride < n4; i += 2 * stride) {  // two loads in flight per iteration
    const float4 u = x[i], v = x[i + stride];
    a += (u.x + u.y) + (u.z + u.w);
    b += (v.x + v.y) + (v.z + v.w);
  }
  if (i < n4) { const float4 u = x[i]; a += (u.x + u.y) + (u.z + u.w); }
  sm[threadIdx.x] = a + b;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {  // tree: halve the active threads each level
    if (threadIdx.x < s) sm[threadIdx.x] += sm[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sm[0];
}

int main(int argc, char** argv) {
  zoo::Session S("reduce_tree", argc, argv);
  auto hx = zoo::random_floats(kN, 0.f, 1.f, 371);
  float* x = zoo::to_device(hx);
  dim3 block(kThreads), grid(zoo::kNumSMs * 4);  // exactly one wave at 4 blocks/SM
  float* partial = zoo::device_alloc<float>(grid.x);

  S.measure("reduce_tree_kernel", grid, block, 0, [&] {
    reduce_tree_kernel<<<grid, block>>>(reinterpret_cast<const float4*>(x), kN / 4, partial);
    CHECK_LAUNCH();
  });

  auto hp = zoo::to_host(partial, grid.x);
  double got = 0, ref = 0;
  for (float p : hp) got += p;
  for (float v : hx) ref += v;
  zoo::expect_close("sum", 0, got, ref, 1e-5, 0);
  zoo::check_ok("reduce_tree");
  CHECK(cudaFree(x)); CHECK(cudaFree(partial));
  return 0;
}
