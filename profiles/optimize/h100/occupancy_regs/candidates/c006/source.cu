// occupancy_regs: a warp-uniform pointer chase through a single-cycle permutation `next`
// (one chain per warp, `rounds` x 192 dependent loads), each step folded into one of 192
// per-thread accumulators; out[thread] = their sum.
// Derived from profiles/src/occupancy_regs.cu (category occupancy_registers): the 192 live
// accumulators take 255 registers, so one 256-thread block fits per SM and the chase latency
// is hidden by only 8 warps. Knobs (the kernel author exposes them):
//   MIN_BLOCKS  __launch_bounds__ minimum resident blocks per SM: caps registers per thread
//               (the compiler spills the accumulators) so more warps overlap their latency
//   BLOCK_SIZE  threads per block
#include "keet_problem.h"

#include <cstdint>
#include <cstring>

#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2  // knob: 1, 2, 3, 4, 6, 8
#endif
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 128  // knob: 128, 256, 512
#endif

constexpr int kState = 192;

__device__ __forceinline__ uint32_t start_index(uint32_t chain, uint32_t mask) { return (chain * 2654435761u) & mask; }
__device__ __forceinline__ float bits_to_unit(uint32_t idx) {
  uint32_t b = (idx & 0x007fffffu) | 0x3f800000u;  // a float in [1, 2)
  float f;
  memcpy(&f, &b, 4);
  return f;
}

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE, MIN_BLOCKS)
occupancy_regs_kernel(const uint32_t* __restrict__ next, uint32_t mask, int rounds, float* __restrict__ out, long long threads) {
  const long long gid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const uint32_t lane = threadIdx.x & 31;
  uint32_t idx = start_index(uint32_t(gid / 32), mask);  // one chain per warp
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
  if (gid < threads) out[gid] = s;
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  const long long entries = p->dim[0], threads = p->dim[1];
  const int rounds = int(p->dim[2]);
  occupancy_regs_kernel<<<unsigned((threads + BLOCK_SIZE - 1) / BLOCK_SIZE), BLOCK_SIZE, 0, stream>>>(
      static_cast<const uint32_t*>(p->in[0]), uint32_t(entries - 1), rounds, static_cast<float*>(p->out[0]), threads);
}
