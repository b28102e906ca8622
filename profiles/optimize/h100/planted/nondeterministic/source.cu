// planted: nondeterministic: a block-order ticket perturbs the last bits
// expected rejection stage: nondeterministic
#include "keet_problem.h"

__device__ unsigned long long scale_ticket;  // survives across launches

extern "C" __global__ void scale_kernel(const float* in, float* out, long long n) {
  __shared__ unsigned long long ticket;
  if (threadIdx.x == 0) ticket = atomicAdd(&scale_ticket, 1ull);  // order in which blocks start
  __syncthreads();
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaf(2.f, in[i], 1.f) + float(ticket % 7) * 1e-7f;  // within tolerance, not bitwise
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  long long n = p->dim[0];
  scale_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(static_cast<const float*>(p->in[0]), static_cast<float*>(p->out[0]), n);
}
