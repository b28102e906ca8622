// occupancy_regs -- category: occupancy_registers
//
// A latency-bound pointer chase (each load depends on the previous one) through a random
// single-cycle permutation of 4 Mi entries (16 MiB, L2-resident after first touch). The
// chase is warp-uniform (all 32 lanes load the same word: 1 sector per request), so the
// memory system is nearly idle and every step costs a full L2 round trip. Each thread also
// carries 192 live fp32 values (one per unrolled step): 255 registers per thread, so only
// ONE 256-thread block fits per SM (8 warps of 64, 12.5% occupancy) and the 1056-block
// grid runs in 8 waves of 768 dependent steps. With <= 32 registers all 8 blocks per SM
// would overlap their latencies (1 wave): registers, via occupancy, cost ~8x here.
#include "zoo.h"

constexpr int kLogN = 22;  // 4 Mi entries = 16 MiB
constexpr int kState = 192;
constexpr int kRounds = 4;  // 4 x 192 = 768 dependent loads per thread

__host__ __device__ inline uint32_t start_index(uint32_t gid) {
  return (gid * 2654435761u) & ((1u << kLogN) - 1);
}
__host__ __device__ inline float bits_to_unit(uint32_t idx) {
  uint32_t b = (idx & 0x007fffffu) | 0x3f800000u;  // a float in [1, 2)
  float f;
  memcpy(&f, &b, 4);
  return f;
}

extern "C" __global__ void __launch_bounds__(256, 1)
occupancy_regs_kernel(const uint32_t* __restrict__ next, int rounds, float* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t lane = threadIdx.x & 31;
  uint32_t idx = start_index(gid / 32);  // one chain per warp
  float st[kState];
#pragma unroll
  for (int j = 0; j < kState; ++j) st[j] = float(j);
  for (int r = 0; r < rounds; ++r) {
#pragma unroll
    for (int j = 0; j < kState; ++j) {
      idx = next[idx];                    // dependent, warp-uniform load: pure latency
      st[j] += bits_to_unit(idx ^ lane);  // keeps all 192 values live across the loop
    }
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kState; ++j) s += st[j];
  out[gid] = s;
}

int main(int argc, char** argv) {
  zoo::Session S("occupancy_regs", argc, argv);
  const size_t n = size_t(1) << kLogN;
  auto hnext = zoo::random_cycle(n, 151);
  uint32_t* next = zoo::to_device(hnext);
  dim3 block(256), grid(zoo::kNumSMs * 8);  // 8 waves at 1 block/SM (1 wave at 8/SM)
  const unsigned threads = grid.x * block.x;
  float* out = zoo::device_alloc<float>(threads);

  S.measure("occupancy_regs_kernel", grid, block, 0, [&] {
    occupancy_regs_kernel<<<grid, block>>>(next, kRounds, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 4111) {
    uint32_t idx = start_index(t / 32);
    float st[kState];
    for (int j = 0; j < kState; ++j) st[j] = float(j);
    for (int r = 0; r < kRounds; ++r)
      for (int j = 0; j < kState; ++j) { idx = hnext[idx]; st[j] += bits_to_unit(idx ^ (t & 31)); }
    float s = 0.f;
    for (int j = 0; j < kState; ++j) s += st[j];
    zoo::expect_close("out", t, hout[t], s, 1e-5, 1e-3);
  }
  zoo::check_ok("occupancy_regs");
  CHECK(cudaFree(next)); CHECK(cudaFree(out));
  return 0;
}
