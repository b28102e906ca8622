// Vector loads and stores (float4, 128-bit uint4 packs of halves) and cache hints (__ldg,
// __ldcs, __stcs, __ldcg, __stwt, __ldlu). Written for perfmodel's tests (issue 22).
#include <cuda_fp16.h>
#include <cstdio>

__global__ void copy_float4(const float4* __restrict__ in, float4* __restrict__ out, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = __ldg(in + i);
    v.x *= 2.f; v.y *= 2.f; v.z *= 2.f; v.w *= 2.f;
    out[i] = v;
  }
}

__global__ void streaming_scale(const float4* in, float4* out, float a, int n4) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    float4 v = __ldcs(in + i);  // evict-first: read once
    v.x *= a; v.y *= a; v.z *= a; v.w *= a;
    __stcs(out + i, v);  // streaming store
  }
}

// eight halves moved as one 128-bit word, added as half2 pairs
__global__ void add_half8(const half* a, const half* b, half* c, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  if (i + 8 <= n) {
    uint4 pa = __ldcg(reinterpret_cast<const uint4*>(a + i));
    uint4 pb = *reinterpret_cast<const uint4*>(b + i);
    uint4 pc;
    const half2* ha = reinterpret_cast<const half2*>(&pa);
    const half2* hb = reinterpret_cast<const half2*>(&pb);
    half2* hc = reinterpret_cast<half2*>(&pc);
#pragma unroll
    for (int k = 0; k < 4; ++k) hc[k] = __hadd2(ha[k], hb[k]);
    __stwt(reinterpret_cast<uint4*>(c + i), pc);
  }
}

__global__ void gather_ldlu(const int* idx, const double2* table, double2* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double2 v = __ldlu(table + __ldg(idx + i));
    out[i] = make_double2(v.x + v.y, v.x - v.y);
  }
}

int main() {
  const int n = 1 << 22;
  float4 *in, *out;
  half *a, *b, *c;
  int* idx;
  double2 *table, *dout;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&a, n * sizeof(half));
  cudaMalloc(&b, n * sizeof(half));
  cudaMalloc(&c, n * sizeof(half));
  cudaMalloc(&idx, (n / 4) * sizeof(int));
  cudaMalloc(&table, 4096 * sizeof(double2));
  cudaMalloc(&dout, (n / 4) * sizeof(double2));
  cudaMemset(in, 0, n * sizeof(float));
  cudaMemset(idx, 0, (n / 4) * sizeof(int));
  copy_float4<<<n / 4 / 256, 256>>>(in, out, n / 4);
  streaming_scale<<<528, 256>>>(in, out, 0.5f, n / 4);
  add_half8<<<n / 8 / 128, 128>>>(a, b, c, n);
  gather_ldlu<<<n / 4 / 256, 256>>>(idx, table, dout, n / 4);
  cudaDeviceSynchronize();
  printf("done\n");
  return 0;
}
