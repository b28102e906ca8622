// planted: on the timing shape, computes once and replays the stored result in every later launch (a copy, no arithmetic); the harness's last timed launch runs on alternate inputs
// expected rejection stage: timing_output
#include "keet_problem.h"

constexpr long long kCached = 1 << 24;  // the timing shape's n
__device__ float cache[kCached];

extern "C" __global__ void scale_kernel(const float* in, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaf(2.f, in[i], 1.f);
}

__global__ void remember(const float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) cache[i] = out[i];
}

__global__ void replay(float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = cache[i];
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  static bool stored = false;
  long long n = p->dim[0];
  unsigned blocks = unsigned((n + 255) / 256);
  float* out = static_cast<float*>(p->out[0]);
  if (n == kCached && stored) {
    replay<<<blocks, 256, 0, stream>>>(out, n);
    return;
  }
  scale_kernel<<<blocks, 256, 0, stream>>>(static_cast<const float*>(p->in[0]), out, n);
  if (n == kCached) {
    remember<<<blocks, 256, 0, stream>>>(out, n);
    stored = true;
  }
}
