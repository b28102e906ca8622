// Templates: a kernel templated on the element type and block size, a functor parameter and
// a recursive compile-time unroll, instantiated several times. Written for perfmodel's tests.
#include <cuda_fp16.h>
#include <cstdio>

template <typename T> struct Scale {
  T a;
  __device__ T operator()(T x) const { return a * x; }
};

template <int N> struct Unroll {
  template <typename F> __device__ static void run(F f) { f(N - 1); Unroll<N - 1>::run(f); }
};
template <> struct Unroll<0> {
  template <typename F> __device__ static void run(F) {}
};

template <typename T, int BLOCK, int ITEMS, typename Op>
__global__ void map_kernel(const T* __restrict__ in, T* __restrict__ out, int n, Op op) {
  int base = (blockIdx.x * BLOCK + threadIdx.x) * ITEMS;
  Unroll<ITEMS>::run([&](int k) {
    int i = base + k;
    if (i < n) out[i] = op(in[i]);
  });
}

template <typename T, int BLOCK> __global__ void block_max(const T* in, T* out, int n) {
  __shared__ T s[BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  s[threadIdx.x] = i < n ? in[i] : in[0];
  __syncthreads();
#pragma unroll
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s[threadIdx.x] = s[threadIdx.x] > s[threadIdx.x + stride] ? s[threadIdx.x] : s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

template <typename T, int BLOCK, int ITEMS> void run(int n) {
  T *in, *out;
  cudaMalloc(&in, n * sizeof(T));
  cudaMalloc(&out, n * sizeof(T));
  cudaMemset(in, 0, n * sizeof(T));
  int grid = (n + BLOCK * ITEMS - 1) / (BLOCK * ITEMS);
  map_kernel<T, BLOCK, ITEMS><<<grid, BLOCK>>>(in, out, n, Scale<T>{T(2)});
  block_max<T, BLOCK><<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n);
  cudaFree(in);
  cudaFree(out);
}

int main() {
  run<float, 256, 4>(1 << 20);
  run<double, 128, 2>(1 << 19);
  run<int, 512, 1>(1 << 18);
  cudaDeviceSynchronize();
  printf("done\n");
  return 0;
}
