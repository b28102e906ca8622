// occupancy_blocks -- category: occupancy_block_limit
//
// The latency-bound, warp-uniform pointer chase again (random single cycle over 4 Mi
// entries, 16 MiB, L2-resident, 1 sector per request), launched with 32-thread blocks. An SM holds at most 32 blocks, so it runs
// only 32 warps of 64 (50% occupancy) even though registers (40) and shared memory (0)
// would allow 64. The grid has 132 x 2048 threads = 8448 one-warp blocks: 2 waves where
// 64-thread blocks would need 1. Each warp keeps one dependent load in flight.
#include "zoo.h"

constexpr int kLogN = 22;
constexpr int kSteps = 1024;

__host__ __device__ inline uint32_t start_index(uint32_t gid) {
  return (gid * 2654435761u) & ((1u << kLogN) - 1);
}

extern "C" __global__ void __launch_bounds__(32)
occupancy_blocks_kernel(const uint32_t* __restrict__ next, int steps, float* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t idx = start_index(gid / 32);  // one chain per warp (= per block)
  uint32_t h = threadIdx.x;
  for (int k = 0; k < steps; ++k) {
    idx = next[idx];  // dependent, warp-uniform load: pure latency
    h += idx;
  }
  out[gid] = float(h & 0xffffu);
}

int main(int argc, char** argv) {
  zoo::Session S("occupancy_blocks", argc, argv);
  const size_t n = size_t(1) << kLogN;
  auto hnext = zoo::random_cycle(n, 171);
  uint32_t* next = zoo::to_device(hnext);
  dim3 block(32), grid(zoo::kNumSMs * 64);  // 8448 blocks = 2 waves at 32 blocks/SM
  const unsigned threads = grid.x * block.x;
  float* out = zoo::device_alloc<float>(threads);

  S.measure("occupancy_blocks_kernel", grid, block, 0, [&] {
    occupancy_blocks_kernel<<<grid, block>>>(next, kSteps, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 4111) {
    uint32_t idx = start_index(t / 32), h = t & 31;
    for (int k = 0; k < kSteps; ++k) { idx = hnext[idx]; h += idx; }
    if (hout[t] != float(h & 0xffffu)) zoo::fail("out[%u]: got %g expected %u", t, hout[t], h & 0xffffu);
  }
  zoo::check_ok("occupancy_blocks");
  CHECK(cudaFree(next)); CHECK(cudaFree(out));
  return 0;
}
