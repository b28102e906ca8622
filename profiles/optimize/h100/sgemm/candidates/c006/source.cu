// sgemm: C = A x B, fp32, row-major, M x K times K x N.
// Derived from profiles/src/sgemm_naive.cu (measured l1_shared_bandwidth on H100): one
// thread per C element, two L1 loads per FMA. Knobs (the kernel author exposes them):
//   TILE      0: no shared memory (operands from L1), 32 or 64: TILE x TILE blocks of C
//             with A and B staged through shared memory in TILE-wide k slices
//   THREAD_M  C elements per thread along M (register blocking: one B value feeds THREAD_M FMAs)
#include "keet_problem.h"

#ifndef TILE
#define TILE 0  // knob: 0, 32, 64
#endif
#ifndef THREAD_M
#define THREAD_M 8  // knob: 1, 2, 4, 8
#endif

#if TILE == 0
constexpr int kBlockX = 32, kBlockY = 8;

extern "C" __global__ void __launch_bounds__(kBlockX * kBlockY)
sgemm_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  const int col = blockIdx.x * kBlockX + threadIdx.x;
  const int row0 = (blockIdx.y * kBlockY + threadIdx.y) * THREAD_M;
  if (col >= N) return;
  float acc[THREAD_M] = {};
  for (int k = 0; k < K; ++k) {
    const float b = B[size_t(k) * N + col];
#pragma unroll
    for (int r = 0; r < THREAD_M; ++r)
      if (row0 + r < M) acc[r] = fmaf(A[size_t(row0 + r) * K + k], b, acc[r]);
  }
#pragma unroll
  for (int r = 0; r < THREAD_M; ++r)
    if (row0 + r < M) C[size_t(row0 + r) * N + col] = acc[r];
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  const int M = int(p->dim[0]), N = int(p->dim[1]), K = int(p->dim[2]);
  dim3 block(kBlockX, kBlockY), grid((N + kBlockX - 1) / kBlockX, (M + kBlockY * THREAD_M - 1) / (kBlockY * THREAD_M));
  sgemm_kernel<<<grid, block, 0, stream>>>(M, N, K, static_cast<const float*>(p->in[0]), static_cast<const float*>(p->in[1]), static_cast<float*>(p->out[0]));
}
#else
constexpr int kThreads = TILE * TILE / THREAD_M;
static_assert(kThreads <= 1024, "TILE * TILE / THREAD_M threads do not fit in one block");
constexpr int kPadA = 4;  // keeps the transposed A tile's rows 16-byte aligned and spreads the stores

extern "C" __global__ void __launch_bounds__(kThreads)
sgemm_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  __shared__ __align__(16) float As[TILE][TILE + kPadA];  // As[k][m]: A's tile, transposed
  __shared__ __align__(16) float Bs[TILE][TILE];          // Bs[k][n]
  const int tid = threadIdx.y * TILE + threadIdx.x;
  const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
  const int col = col0 + threadIdx.x;
  float acc[THREAD_M] = {};
  for (int k0 = 0; k0 < K; k0 += TILE) {
#pragma unroll
    for (int i = tid; i < TILE * TILE; i += kThreads) {
      const int r = i / TILE, c = i % TILE;  // consecutive threads: consecutive k (A) or n (B)
      As[c][r] = (row0 + r < M && k0 + c < K) ? A[size_t(row0 + r) * K + k0 + c] : 0.f;
      Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[size_t(k0 + r) * N + col0 + c] : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < TILE; ++k) {
      const float b = Bs[k][threadIdx.x];
#pragma unroll
      for (int r = 0; r < THREAD_M; ++r) acc[r] = fmaf(As[k][threadIdx.y * THREAD_M + r], b, acc[r]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < THREAD_M; ++r) {
    const int row = row0 + threadIdx.y * THREAD_M + r;
    if (row < M && col < N) C[size_t(row) * N + col] = acc[r];
  }
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  const int M = int(p->dim[0]), N = int(p->dim[1]), K = int(p->dim[2]);
  dim3 block(TILE, TILE / THREAD_M), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  sgemm_kernel<<<grid, block, 0, stream>>>(M, N, K, static_cast<const float*>(p->in[0]), static_cast<const float*>(p->in[1]), static_cast<float*>(p->out[0]));
}
#endif
