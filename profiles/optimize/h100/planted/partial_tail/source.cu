// planted: partial work: skips the tail (grid rounded down)
// expected rejection stage: partial_work
#include "keet_problem.h"

extern "C" __global__ void scale_kernel(const float* in, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  out[i] = fmaf(2.f, in[i], 1.f);
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  long long n = p->dim[0];
  if (n >= 256)  // whole blocks only: the last n % 256 elements are never written
    scale_kernel<<<unsigned(n / 256), 256, 0, stream>>>(static_cast<const float*>(p->in[0]), static_cast<float*>(p->out[0]), n);
}
