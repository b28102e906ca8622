// Reference: the same chase, one thread at a time per chain, accumulators in local memory
// (no occupancy concern: correctness only). entries must be a power of two.
#include "keet_problem.h"

#include <cstdint>
#include <cstring>

__global__ void occupancy_reference(const uint32_t* next, uint32_t mask, int rounds, float* out, long long threads) {
  long long gid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (gid >= threads) return;
  uint32_t lane = uint32_t(gid % 32);  // blocks are multiples of 32 threads in every version
  uint32_t idx = (uint32_t(gid / 32) * 2654435761u) & mask;
  float st[192];
  for (int j = 0; j < 192; ++j) st[j] = float(j);
  for (int r = 0; r < rounds; ++r)
    for (int j = 0; j < 192; ++j) {
      idx = next[idx];
      uint32_t b = ((idx ^ lane) & 0x007fffffu) | 0x3f800000u;
      float f;
      memcpy(&f, &b, 4);
      st[j] += f;
    }
  float s = 0.f;
  for (int j = 0; j < 192; ++j) s += st[j];
  out[gid] = s;
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  long long threads = p->dim[1];
  occupancy_reference<<<unsigned((threads + 127) / 128), 128, 0, stream>>>(
      static_cast<const uint32_t*>(p->in[0]), uint32_t(p->dim[0] - 1), int(p->dim[2]), static_cast<float*>(p->out[0]), threads);
}
