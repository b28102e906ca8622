// fp16 and bf16 arithmetic: __half/__half2 and __nv_bfloat16/__nv_bfloat162 math, conversions
// and fused multiply-adds, as in mixed-precision code. Written for perfmodel's tests (issue 22).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdio>

__global__ void axpy_half2(const __half2* x, __half2* y, __half a, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) {
    __half2 a2 = __half2half2(a);
    y[i] = __hfma2(a2, x[i], y[i]);
  }
}

__global__ void bf16_rms(const __nv_bfloat16* x, __nv_bfloat16* y, int cols) {
  const __nv_bfloat16* row = x + blockIdx.x * cols;
  float ss = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = __bfloat162float(row[c]);
    ss += v * v;
  }
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  float scale = rsqrtf(ss / cols + 1e-6f);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = __float2bfloat16(__bfloat162float(row[c]) * scale);
}

__global__ void bf16x2_mix(const __nv_bfloat162* a, const __nv_bfloat162* b, __nv_bfloat162* c, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) {
    __nv_bfloat162 p = __hmul2(a[i], b[i]);
    __nv_bfloat162 q = __hfma2(p, a[i], b[i]);
    c[i] = __hmax2(q, __float2bfloat162_rn(0.f));
  }
}

__global__ void half_math(const __half* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __half h = x[i];
    __half e = hexp(h);
    __half s = __hsub(__hmul(h, h), __float2half(0.5f));
    out[i] = __half2float(__hgt(e, s) ? e : s) + __half2float(__habs(h));
  }
}

int main() {
  const int n = 1 << 20, rows = 1024, cols = 1024;
  __half2 *x, *y;
  __nv_bfloat16 *bx, *by;
  __nv_bfloat162 *a, *b, *c;
  __half* h;
  float* f;
  cudaMalloc(&x, n * sizeof(__half));
  cudaMalloc(&y, n * sizeof(__half));
  cudaMalloc(&bx, rows * cols * sizeof(__nv_bfloat16));
  cudaMalloc(&by, rows * cols * sizeof(__nv_bfloat16));
  cudaMalloc(&a, n * sizeof(__nv_bfloat16));
  cudaMalloc(&b, n * sizeof(__nv_bfloat16));
  cudaMalloc(&c, n * sizeof(__nv_bfloat16));
  cudaMalloc(&h, n * sizeof(__half));
  cudaMalloc(&f, n * sizeof(float));
  cudaMemset(x, 0x3c, n * sizeof(__half));
  cudaMemset(bx, 0x3f, rows * cols * sizeof(__nv_bfloat16));
  axpy_half2<<<n / 2 / 256, 256>>>(x, y, __float2half(2.f), n / 2);
  bf16_rms<<<rows, 32>>>(bx, by, cols);
  bf16x2_mix<<<n / 2 / 256, 256>>>(a, b, c, n / 2);
  half_math<<<n / 256, 256>>>(h, f, n);
  cudaDeviceSynchronize();
  printf("done\n");
  return 0;
}
