// Reference SGEMM: one thread per C element, k in order, accumulated in double then rounded
// (a more precise answer than any fp32 candidate; the tolerance covers fp32 rounding).
#include "keet_problem.h"

__global__ void sgemm_reference(int M, int N, int K, const float* A, const float* B, float* C) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  double acc = 0.0;
  for (int k = 0; k < K; ++k) acc += double(A[size_t(row) * K + k]) * double(B[size_t(k) * N + col]);
  C[size_t(row) * N + col] = float(acc);
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  int M = int(p->dim[0]), N = int(p->dim[1]), K = int(p->dim[2]);
  dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
  sgemm_reference<<<grid, block, 0, stream>>>(M, N, K, static_cast<const float*>(p->in[0]), static_cast<const float*>(p->in[1]), static_cast<float*>(p->out[0]));
}
