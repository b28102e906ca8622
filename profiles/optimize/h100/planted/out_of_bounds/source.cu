// planted: writes out of bounds (one element before the buffer)
// expected rejection stage: out_of_bounds
#include "keet_problem.h"

extern "C" __global__ void scale_kernel(const float* in, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaf(2.f, in[i], 1.f);
  if (i == 0) out[-1] = 0.f;  // scribbles over whatever lies before the output
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  long long n = p->dim[0];
  scale_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(static_cast<const float*>(p->in[0]), static_cast<float*>(p->out[0]), n);
}
