// dram_bandwidth.cu -- achievable DRAM bandwidth: read (sum reduction), write, copy, triad.
//
// Buffers of 2 GiB each (>> L2), float4 accesses, grid = SMs x resident blocks of 512
// threads with grid-stride loops. Per kind: bytes moved per run and the times of 30 runs
// (after 5 warm-up runs), each bracketed by its own cudaEvent pair.
#include "mb.h"

constexpr int kThreads = 512;
constexpr size_t kBufferBytes = size_t(2) << 30;  // 2 GiB per buffer

__global__ void read_kernel(const float4* __restrict__ a, size_t n4, float* __restrict__ out, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  float s = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) {
    float4 v = a[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
  mb::probe_end(probe);
}

__global__ void write_kernel(float4* __restrict__ a, size_t n4, float value, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  float4 v = make_float4(value, value + 1.f, value + 2.f, value + 3.f);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) a[i] = v;
  mb::probe_end(probe);
}

__global__ void copy_kernel(float4* __restrict__ b, const float4* __restrict__ a, size_t n4, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) b[i] = a[i];
  mb::probe_end(probe);
}

__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                             float s, size_t n4, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) {
    float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
  mb::probe_end(probe);
}

int main() {
  mb::DeviceInfo dev = mb::device_info("dram_bandwidth");
  const size_t n = kBufferBytes / sizeof(float), n4 = n / 4;
  float *a, *b, *c, *out;
  mb::ClockProbe* probe;
  CHECK(cudaMalloc(&a, kBufferBytes));
  CHECK(cudaMalloc(&b, kBufferBytes));
  CHECK(cudaMalloc(&c, kBufferBytes));
  CHECK(cudaMalloc(&out, sizeof(float)));
  CHECK(cudaMalloc(&probe, sizeof(mb::ClockProbe)));
  CHECK(cudaMemset(out, 0, sizeof(float)));
  mb::fill(a, n, mb::kSeed + 1);
  mb::fill(b, n, mb::kSeed + 2);
  mb::fill(c, n, mb::kSeed + 3);
  auto A = reinterpret_cast<float4*>(a), B = reinterpret_cast<float4*>(b), C = reinterpret_cast<float4*>(c);

  auto report = [&](const char* name, double bytes, const std::vector<double>& t, int grid) {
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  "\"buffer_bytes\":%zu,\"grid\":%d,\"block\":%d,\"access\":\"float4\",\"sm_clock_hz\":%.6g",
                  kBufferBytes, grid, kThreads, mb::probe_hz(probe));
    mb::result("dram", name, "bytes", bytes, t, extra);
  };
  int g;
  g = dev.sms * mb::blocks_per_sm(read_kernel, kThreads);
  report("read", double(kBufferBytes), mb::time_runs([&] { read_kernel<<<g, kThreads>>>(A, n4, out, probe); }), g);
  g = dev.sms * mb::blocks_per_sm(write_kernel, kThreads);
  report("write", double(kBufferBytes), mb::time_runs([&] { write_kernel<<<g, kThreads>>>(C, n4, 1.25f, probe); }), g);
  mb::fill(c, n, mb::kSeed + 3);
  g = dev.sms * mb::blocks_per_sm(copy_kernel, kThreads);
  report("copy", 2.0 * kBufferBytes, mb::time_runs([&] { copy_kernel<<<g, kThreads>>>(B, A, n4, probe); }), g);
  g = dev.sms * mb::blocks_per_sm(triad_kernel, kThreads);
  report("triad", 3.0 * kBufferBytes, mb::time_runs([&] { triad_kernel<<<g, kThreads>>>(A, B, C, 0.5f, n4, probe); }), g);

  float h = 0;
  CHECK(cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost));
  if (!(h > 0.f)) {
    std::printf("CHECK_FAIL read sum is %g (expected > 0)\n", h);
    return 1;
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK(cudaFree(out));
  CHECK(cudaFree(probe));
  return 0;
}
