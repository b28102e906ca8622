// Reference transpose: one thread per element, no shared memory (slow, obviously right).
#include "keet_problem.h"

__global__ void transpose_reference(const float* in, float* out, long long rows, long long cols) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  long long r = i / cols, c = i % cols;
  out[c * rows + r] = in[i];
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  long long n = p->dim[0] * p->dim[1];
  transpose_reference<<<unsigned((n + 255) / 256), 256, 0, stream>>>(static_cast<const float*>(p->in[0]), static_cast<float*>(p->out[0]), p->dim[0], p->dim[1]);
}
