// Small kernels for tests/test_ptx_interpreter.py. The committed kernels.ptx was generated with
//   nvcc -ptx -arch=sm_90a tests/data/ptx/kernels.cu -o tests/data/ptx/kernels.ptx   (CUDA 13.0)
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Block-wide tree reduction in shared memory (blockDim.x == 256).
extern "C" __global__ void block_sum(const float* in, float* out, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// Divergence: odd and even lanes take different paths; each lane loops a data-dependent count.
extern "C" __global__ void divergent(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  int acc = 0;
  if (i & 1) {
    for (int k = 0; k < (v & 7); ++k) acc += k * v;
  } else {
    acc = v * 3 - 1;
  }
  out[i] = acc;
}

// Strided copy: each lane of a warp reads a different 32-byte sector.
extern "C" __global__ void strided_copy(const float* in, float* out, int stride, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[(size_t)i * stride];
}

// Shared accesses with a word stride: `stride` lanes per bank -> stride-way conflicts (stride a power of 2 <= 32).
extern "C" __global__ void smem_stride(float* out, int stride) {
  __shared__ float s[1024];
  int idx = (threadIdx.x * stride) & 1023;
  s[idx] = (float)threadIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[idx];
}

// Atomics to one address (float add, int add returning the old value, int max).
extern "C" __global__ void atomics(float* fsum, int* isum, int* imax, int* tickets, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(fsum, 1.5f);
    tickets[i] = atomicAdd(isum, 1);
    atomicMax(imax, i * 7 % 1000);
  }
}

// Warp shuffles, votes and math: a warp sum by shfl.down and a ballot of positive values.
extern "C" __global__ void warp_ops(const float* in, float* sums, unsigned* ballots, float* math) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[i];
  float s = v;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  unsigned b = __ballot_sync(0xffffffffu, v > 0.f);
  if ((threadIdx.x & 31) == 0) { sums[i / 32] = s; ballots[i / 32] = b; }
  math[i] = sqrtf(fabsf(v)) + __expf(v) * 0.5f + fminf(v, 0.25f) + (float)(i % 3) / 4.0f;
}

// Double precision and 64-bit integer arithmetic, with integer division.
extern "C" __global__ void fp64_int(const double* x, double* y, long long* q, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = fma(x[i], 2.0, 1.0) * x[i];
    long long v = (long long)i * 1000003LL;
    q[i] = v / 7 + (i % 5) - (v >> 3);
  }
}

// cp.async into shared memory, then a reversed read-back (generic -> shared conversion too).
extern "C" __global__ void cp_async_reverse(const float4* in, float4* out) {
  __shared__ __align__(16) float4 s[64];
  unsigned dst = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(in + blockIdx.x * 64 + threadIdx.x));
  asm volatile("cp.async.commit_group;");
  asm volatile("cp.async.wait_all;");
  __syncthreads();
  out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x];
}

// Constant memory and a dynamically indexed local array.
__constant__ float coef[4] = {1.f, 2.f, 3.f, 4.f};
extern "C" __global__ void const_local(const int* idx, float* out) {
  float arr[16];
  int i = threadIdx.x;
  for (int k = 0; k < 16; ++k) arr[k] = coef[k & 3] * k + i;
  out[i] = arr[idx[i] & 15];
}

// Dynamic shared memory: reverse each block's slice.
extern "C" __global__ void dyn_smem_reverse(const int* in, int* out) {
  extern __shared__ int buf[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = buf[blockDim.x - 1 - threadIdx.x];
}
