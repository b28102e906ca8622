// hbm_bandwidth.hip -- achievable HBM bandwidth: read (sum reduction), write, copy, triad.
//
// Buffers of 2 GiB each (far beyond L2 and the 256 MB Infinity Cache of MI300), float4
// accesses, grid = CUs x resident blocks of 256 threads (4 waves) with grid-stride loops.
// Per kind: bytes moved per run and the times of 30 runs (after 5 warm-up runs), each between
// its own hipEvent pair. Checks: the mean of everything read is 1.0 (the inputs are uniform in
// [0.5, 1.5)), and sampled elements of the write, copy and triad outputs equal the host's values.
#include "mb_hip.h"

#include <cmath>

constexpr int kThreads = 256;

__global__ __launch_bounds__(kThreads) void read_kernel(const float4* __restrict__ a, size_t n4,
                                                        float* __restrict__ partial, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  float s = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) {
    const float4 v = a[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  s = mb::block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;  // overwritten by every run
  mb::probe_end(probe);
}

__global__ __launch_bounds__(kThreads) void write_kernel(float4* __restrict__ a, size_t n4, float value,
                                                         mb::ClockProbe* probe) {
  mb::probe_start(probe);
  const float4 v = make_float4(value, value + 1.f, value + 2.f, value + 3.f);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) a[i] = v;
  mb::probe_end(probe);
}

__global__ __launch_bounds__(kThreads) void copy_kernel(float4* __restrict__ b, const float4* __restrict__ a, size_t n4,
                                                        mb::ClockProbe* probe) {
  mb::probe_start(probe);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) b[i] = a[i];
  mb::probe_end(probe);
}

__global__ __launch_bounds__(kThreads) void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b,
                                                         const float4* __restrict__ c, float s, size_t n4,
                                                         mb::ClockProbe* probe) {
  mb::probe_start(probe);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
  mb::probe_end(probe);
}

// Compares 4096 sampled elements of d (n floats) with want(i).
template <typename F>
void check_samples(const float* d, size_t n, F want, const char* what) {
  mb::Rng rng(mb::kSeed + 99);
  for (int k = 0; k < 4096; ++k) {
    const size_t i = size_t(rng.next() % n);
    float got = 0;
    HIP_CHECK(hipMemcpy(&got, d + i, sizeof got, hipMemcpyDeviceToHost));
    const float w = want(i);
    if (!(std::fabs(got - w) <= 1e-6f * std::fabs(w))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: element %zu is %.9g, expected %.9g", what, i, got, w);
      mb::check_fail(buf);
    }
  }
}

int main() {
  mb::DeviceInfo dev = mb::device_info("hbm_bandwidth");
  size_t free_b = 0, total_b = 0;
  HIP_CHECK(hipMemGetInfo(&free_b, &total_b));
  size_t buffer = size_t(2) << 30;  // 2 GiB per buffer, smaller only if three do not fit
  while (3 * buffer + (size_t(512) << 20) > free_b && buffer > (size_t(256) << 20)) buffer /= 2;
  const size_t n = buffer / sizeof(float), n4 = n / 4;
  float *a, *b, *c, *partial;
  mb::ClockProbe* probe;
  HIP_CHECK(hipMalloc(&a, buffer));
  HIP_CHECK(hipMalloc(&b, buffer));
  HIP_CHECK(hipMalloc(&c, buffer));
  HIP_CHECK(hipMalloc(&probe, sizeof(mb::ClockProbe)));
  const uint64_t sa = mb::kSeed + 1, sb = mb::kSeed + 2, sc = mb::kSeed + 3;
  mb::fill(a, n, sa);
  mb::fill(b, n, sb);
  mb::fill(c, n, sc);
  auto A = reinterpret_cast<float4*>(a), B = reinterpret_cast<float4*>(b), C = reinterpret_cast<float4*>(c);

  auto report = [&](const char* name, double bytes, const std::vector<double>& t, int grid) {
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  "\"buffer_bytes\":%zu,\"grid\":%d,\"block\":%d,\"access\":\"float4\",\"sm_clock_hz\":%.6g",
                  buffer, grid, kThreads, mb::probe_hz(probe, dev));
    mb::result("dram", name, "bytes", bytes, t, extra);
  };
  int g = dev.cus * mb::blocks_per_cu(read_kernel, kThreads);
  HIP_CHECK(hipMalloc(&partial, size_t(g) * sizeof(float)));
  report("read", double(buffer),
         mb::time_runs([&] { hipLaunchKernelGGL(read_kernel, dim3(g), dim3(kThreads), 0, 0, A, n4, partial, probe); }), g);
  mb::check_mean_one(partial, size_t(g), double(n), 0.01, "read");

  g = dev.cus * mb::blocks_per_cu(write_kernel, kThreads);
  report("write", double(buffer),
         mb::time_runs([&] { hipLaunchKernelGGL(write_kernel, dim3(g), dim3(kThreads), 0, 0, C, n4, 1.25f, probe); }), g);
  check_samples(c, n, [](size_t i) { return 1.25f + float(i % 4); }, "write");
  mb::fill(c, n, sc);

  g = dev.cus * mb::blocks_per_cu(copy_kernel, kThreads);
  report("copy", 2.0 * buffer,
         mb::time_runs([&] { hipLaunchKernelGGL(copy_kernel, dim3(g), dim3(kThreads), 0, 0, B, A, n4, probe); }), g);
  check_samples(b, n, [&](size_t i) { return mb::uniform_at(sa, i); }, "copy");

  g = dev.cus * mb::blocks_per_cu(triad_kernel, kThreads);
  report("triad", 3.0 * buffer,
         mb::time_runs([&] { hipLaunchKernelGGL(triad_kernel, dim3(g), dim3(kThreads), 0, 0, A, B, C, 0.5f, n4, probe); }), g);
  check_samples(a, n, [&](size_t i) { return mb::uniform_at(sa, i) + 0.5f * mb::uniform_at(sc, i); }, "triad");

  HIP_CHECK(hipFree(a));
  HIP_CHECK(hipFree(b));
  HIP_CHECK(hipFree(c));
  HIP_CHECK(hipFree(partial));
  HIP_CHECK(hipFree(probe));
  return 0;
}
