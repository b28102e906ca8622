// l2_bandwidth.cu -- L2 read bandwidth vs footprint (and where it drops: the L2 size).
//
// The whole grid (SMs x resident blocks of 512 threads) reads a footprint with __ldcg
// (cache in L2 only, bypass L1) over and over: each thread starts at its global index and
// advances by (grid threads mod footprint) float4s per step, wrapping, so that a warp's
// 32 loads stay contiguous and the footprint is swept uniformly. Steps per thread are
// chosen so that one run moves >= 4 GiB. Per footprint: bytes per run and 30 run times.
#include "mb.h"

constexpr int kThreads = 512;
constexpr size_t kMinTraffic = size_t(4) << 30;

__global__ void l2_read_kernel(const float4* __restrict__ a, size_t n4, size_t step, int iters, float4* out,
                               mb::ClockProbe* probe) {
  mb::probe_start(probe);
  size_t idx = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) % n4;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
  for (int k = 0; k < iters; ++k) {
    float4 v = __ldcg(a + idx);
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
    idx += step;
    if (idx >= n4) idx -= n4;
  }
  if (acc.x + acc.y + acc.z + acc.w == -1.0f) *out = acc;  // never true (inputs > 0): keeps the loads
  mb::probe_end(probe);
}

int main() {
  mb::DeviceInfo dev = mb::device_info("l2_bandwidth");
  const size_t mib = size_t(1) << 20;
  const size_t footprints_mib[] = {1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128, 256};
  const size_t max_bytes = 256 * mib;
  float* a;
  float4* out;
  mb::ClockProbe* probe;
  CHECK(cudaMalloc(&a, max_bytes));
  CHECK(cudaMalloc(&out, sizeof(float4)));
  CHECK(cudaMalloc(&probe, sizeof(mb::ClockProbe)));
  mb::watch_probe(probe);  // each timed run's SM clock goes into its MB_RESULT
  mb::fill(a, max_bytes / sizeof(float), mb::kSeed + 11);
  const int grid = dev.sms * mb::blocks_per_sm(l2_read_kernel, kThreads);
  const size_t threads = size_t(grid) * kThreads;
  for (size_t fm : footprints_mib) {
    const size_t bytes = fm * mib, n4 = bytes / sizeof(float4);
    const size_t step = threads % n4 == 0 ? 1 : threads % n4;
    const int iters = int((kMinTraffic + threads * sizeof(float4) - 1) / (threads * sizeof(float4)));
    const double traffic = double(threads) * iters * sizeof(float4);
    auto t = mb::time_runs([&] {
      l2_read_kernel<<<grid, kThreads>>>(reinterpret_cast<const float4*>(a), n4, step, iters, out, probe);
    });
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  "\"footprint_bytes\":%zu,\"iters_per_thread\":%d,\"grid\":%d,\"block\":%d,\"load\":\"ldcg\","
                  "\"sm_clock_hz\":%.6g",
                  bytes, iters, grid, kThreads, mb::probe_hz(probe));
    mb::result("l2", "read_" + std::to_string(fm) + "MiB", "bytes", traffic, t, extra);
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(out));
  CHECK(cudaFree(probe));
  return 0;
}
