// memory_latency -- category: memory_latency
//
// Pointer chase through a random single-cycle permutation of 32 Mi entries (128 MiB,
// 2-2.5x the L2): every load depends on the previous one and almost always misses L2.
// The grid is a full wave at full occupancy (528 blocks x 512 threads, 64 warps/SM), but
// the chase is warp-uniform (all lanes load the same word: one 32-byte sector per
// request), so each warp has exactly one load in flight and waits the full DRAM latency
// (~0.5-0.7 us incl. TLB misses) on every step. 8448 requests in flight chip-wide move
// only a few hundred GB/s: DRAM bandwidth stays mostly idle, warps sit in long-scoreboard
// stalls. 1024 steps, ~0.6 ms. More independent chains per thread (ILP) would help;
// more threads cannot (occupancy is already 100%).
#include "zoo.h"

constexpr int kLogN = 25;  // 32 Mi entries = 128 MiB
constexpr int kSteps = 1024;

__host__ __device__ inline uint32_t start_index(uint32_t gid) {
  return (gid * 2654435761u) & ((1u << kLogN) - 1);
}

extern "C" __global__ void __launch_bounds__(512)
pointer_chase_kernel(const uint32_t* __restrict__ next, int steps, uint32_t* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t idx = start_index(gid / 32);  // one chain per warp
  for (int k = 0; k < steps; ++k) idx = next[idx];  // each load waits for the previous
  out[gid] = idx ^ (threadIdx.x & 31);
}

int main(int argc, char** argv) {
  zoo::Session S("memory_latency", argc, argv);
  const size_t n = size_t(1) << kLogN;
  auto hnext = zoo::random_cycle(n, 201);
  uint32_t* next = zoo::to_device(hnext);
  dim3 block(512), grid(zoo::kNumSMs * 4);  // one wave, 64 warps per SM
  const unsigned threads = grid.x * block.x;
  uint32_t* out = zoo::device_alloc<uint32_t>(threads);

  S.measure("pointer_chase_kernel", grid, block, 0, [&] {
    pointer_chase_kernel<<<grid, block>>>(next, kSteps, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 2011) {
    uint32_t idx = start_index(t / 32);
    for (int k = 0; k < kSteps; ++k) idx = hnext[idx];
    idx ^= t & 31;
    if (hout[t] != idx) zoo::fail("out[%u]: got %u expected %u", t, hout[t], idx);
  }
  zoo::check_ok("memory_latency");
  CHECK(cudaFree(next)); CHECK(cudaFree(out));
  return 0;
}
