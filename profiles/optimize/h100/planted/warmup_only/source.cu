// planted: computes on the timing shape only during warm-up (the first launches), then skips the work, so its timed launches are nearly free; the harness refills the outputs before every timed launch
// expected rejection stage: timing_output
#include "keet_problem.h"

extern "C" __global__ void scale_kernel(const float* in, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaf(2.f, in[i], 1.f);
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  static int timing_shape_launches = 0;
  long long n = p->dim[0];
  if (n >= (1 << 24) && ++timing_shape_launches > 5) return;  // warm-up done: the output "is already there"
  scale_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(static_cast<const float*>(p->in[0]), static_cast<float*>(p->out[0]), n);
}
