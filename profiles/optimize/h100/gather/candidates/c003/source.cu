// gather: out[h*m + l] = 2*in[l*32 + h] + 1 for l < m, h < 32 (in is m rows of 32 floats).
// Derived from profiles/src/uncoalesced_gather.cu (category uncoalesced_global): thread i
// reads in[(i % m)*32 + i/m], 128 B apart between neighbouring threads, so every warp load
// touches 32 lines (32 sectors per request instead of 4). Knobs (the kernel author exposes them):
//   STAGED      0: direct gather; 1: move a 32x32 tile through shared memory, so that both the
//               global reads and the writes are coalesced (the "staged path")
//   BLOCK_SIZE  threads per block of the direct path
#include "keet_problem.h"

#ifndef STAGED
#define STAGED 1  // knob: 0, 1
#endif
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 512  // knob: 128, 256, 512, 1024
#endif

constexpr int kStride = 32;

extern "C" __global__ void __launch_bounds__(1024)
gather_kernel(const float* __restrict__ in, float* __restrict__ out, long long m) {
#if STAGED
  __shared__ float tile[32][33];  // [l within tile][h], padded against bank conflicts
  const long long l0 = blockIdx.x * 32ll;
  for (int j = threadIdx.y; j < 32; j += blockDim.y)  // read rows l0+j: 32 consecutive floats
    if (l0 + j < m) tile[j][threadIdx.x] = in[(l0 + j) * kStride + threadIdx.x];
  __syncthreads();
  for (int h = threadIdx.y; h < 32; h += blockDim.y)  // write 32 consecutive l for one h
    if (l0 + threadIdx.x < m) out[h * m + l0 + threadIdx.x] = fmaf(2.f, tile[threadIdx.x][h], 1.f);
#else
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= kStride * m) return;
  const long long h = i / m, l = i % m;
  out[i] = fmaf(2.f, in[l * kStride + h], 1.f);
#endif
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  const long long m = p->dim[0];
  const float* in = static_cast<const float*>(p->in[0]);
  float* out = static_cast<float*>(p->out[0]);
#if STAGED
  gather_kernel<<<unsigned((m + 31) / 32), dim3(32, 8), 0, stream>>>(in, out, m);
#else
  gather_kernel<<<unsigned((kStride * m + BLOCK_SIZE - 1) / BLOCK_SIZE), BLOCK_SIZE, 0, stream>>>(in, out, m);
#endif
}
