// small_grid: out = a*x + y (a = 2.5) over n floats with a grid-stride loop.
// Derived from profiles/src/small_grid.cu (category small_grid): 8 blocks of 1024 threads
// keep 8 of 132 SMs busy. Knobs (the kernel author exposes them):
//   GRID_BLOCKS  blocks launched (the loop strides over the rest)
//   BLOCK_SIZE   threads per block
//   VEC_WIDTH    4: float4 loads/stores for the bulk (scalar tail), 1: scalar
#include "keet_problem.h"

#ifndef GRID_BLOCKS
#define GRID_BLOCKS 2112  // knob: 8, 132, 264, 528, 1056, 2112
#endif
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256  // knob: 128, 256, 512, 1024
#endif
#ifndef VEC_WIDTH
#define VEC_WIDTH 4  // knob: 1, 4
#endif

constexpr float kA = 2.5f;

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
small_grid_saxpy_kernel(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long start = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long done = 0;
#if VEC_WIDTH == 4
  const long long n4 = n / 4;
  for (long long i = start; i < n4; i += stride) {
    float4 xv = reinterpret_cast<const float4*>(x)[i], yv = reinterpret_cast<const float4*>(y)[i];
    reinterpret_cast<float4*>(out)[i] = make_float4(fmaf(kA, xv.x, yv.x), fmaf(kA, xv.y, yv.y), fmaf(kA, xv.z, yv.z), fmaf(kA, xv.w, yv.w));
  }
  done = n4 * 4;
#endif
  for (long long i = done + start; i < n; i += stride) out[i] = fmaf(kA, x[i], y[i]);
}

extern "C" void launch(const Problem* p, cudaStream_t stream) {
  small_grid_saxpy_kernel<<<GRID_BLOCKS, BLOCK_SIZE, 0, stream>>>(static_cast<const float*>(p->in[0]), static_cast<const float*>(p->in[1]),
                                                                   static_cast<float*>(p->out[0]), p->dim[0]);
}
