// Needs its build's options: -I include (vec_ops.cuh), -D ITEMS=4 (no default), --include
// prelude.h (PRELUDE_SCALE) and -std=c++20 (a concept). Written for perfmodel's tests (issue 22).
#include <vec_ops.cuh>
#include <concepts>
#include <cstdio>

#ifndef ITEMS
#error "build with -D ITEMS=<items per thread>"
#endif
#ifndef PRELUDE_SCALE
#error "build with --include prelude.h"
#endif

template <typename T>
concept Floating = std::floating_point<T>;

template <Floating T> __global__ void affine(const T* x, T* y, int n) {
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k)
    if (base + k < n) y[base + k] = axpb(T(PRELUDE_SCALE), x[base + k], T(1));
}

int main() {
  const int n = 1 << 20;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  affine<<<n / ITEMS / 256, 256>>>(x, y, n);
  cudaDeviceSynchronize();
  printf("done\n");
  return 0;
}
