// cache_sweep.hip -- read bandwidth vs footprint: the L2 plateau, the Infinity Cache (MALL)
// plateau on CDNA3 (256 MB on MI300A/X; CDNA2 has none) and HBM beyond.
//
// The whole grid (CUs x resident blocks of 256 threads) reads a footprint over and over with
// ordinary float4 loads: each thread starts at its global index and advances by (grid threads
// mod footprint) float4s per step, wrapping, so that a wave's 64 loads stay contiguous and the
// footprint is swept uniformly. Steps per thread are chosen so that one run moves at least
// 4 GiB and 4x the footprint. Per footprint: bytes per run and 30 run times.
// On MI300 every XCD has its own 4 MB L2 (hipDeviceProp reports one XCD's): a footprint below
// it is cached in every XCD's L2, so the small-footprint plateau is the whole chip's L2
// bandwidth. Check: the mean of all values read is 1.0 (inputs uniform in [0.5, 1.5)).
#include "mb_hip.h"

constexpr int kThreads = 256;

__global__ __launch_bounds__(kThreads) void sweep_kernel(const float4* __restrict__ a, uint32_t n4, uint32_t step,
                                                         int iters, float* __restrict__ partial,
                                                         mb::ClockProbe* probe) {
  mb::probe_start(probe);
  uint32_t idx = uint32_t((blockIdx.x * size_t(blockDim.x) + threadIdx.x) % n4);
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
  for (int k = 0; k < iters; ++k) {
    const float4 v = a[idx];
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
    idx += step;
    if (idx >= n4) idx -= n4;
  }
  const float s = mb::block_sum((acc.x + acc.y) + (acc.z + acc.w));
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
  mb::probe_end(probe);
}

int main() {
  mb::DeviceInfo dev = mb::device_info("cache_sweep");
  const size_t kib = 1024, mib = kib * kib;
  const size_t footprints[] = {256 * kib, 512 * kib, 1 * mib,   2 * mib,   3 * mib,   4 * mib,   6 * mib,
                               8 * mib,   12 * mib,  16 * mib,  24 * mib,  32 * mib,  48 * mib,  64 * mib,
                               96 * mib,  128 * mib, 160 * mib, 192 * mib, 224 * mib, 256 * mib, 320 * mib,
                               384 * mib, 512 * mib, 768 * mib, 1024 * mib};
  const size_t max_bytes = 1024 * mib;
  const size_t min_traffic = size_t(4) << 30;
  float *a, *partial;
  mb::ClockProbe* probe;
  HIP_CHECK(hipMalloc(&a, max_bytes));
  HIP_CHECK(hipMalloc(&probe, sizeof(mb::ClockProbe)));
  mb::fill(a, max_bytes / sizeof(float), mb::kSeed + 11);
  const int grid = dev.cus * mb::blocks_per_cu(sweep_kernel, kThreads);
  HIP_CHECK(hipMalloc(&partial, size_t(grid) * sizeof(float)));
  const size_t threads = size_t(grid) * kThreads;
  for (size_t bytes : footprints) {
    const uint32_t n4 = uint32_t(bytes / sizeof(float4));
    const uint32_t step = threads % n4 == 0 ? 1u : uint32_t(threads % n4);
    const size_t want = std::max(min_traffic, 4 * bytes);
    const int iters = int((want + threads * sizeof(float4) - 1) / (threads * sizeof(float4)));
    const double traffic = double(threads) * iters * sizeof(float4);
    auto t = mb::time_runs([&] {
      hipLaunchKernelGGL(sweep_kernel, dim3(grid), dim3(kThreads), 0, 0, reinterpret_cast<const float4*>(a), n4, step,
                         iters, partial, probe);
    });
    const std::string label = bytes % mib == 0 ? std::to_string(bytes / mib) + "MiB" : std::to_string(bytes / kib) + "KiB";
    mb::check_mean_one(partial, size_t(grid), traffic / sizeof(float), 0.02, ("read_" + label).c_str());
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  "\"footprint_bytes\":%zu,\"iters_per_thread\":%d,\"grid\":%d,\"block\":%d,\"load\":\"global_load_dwordx4\","
                  "\"sm_clock_hz\":%.6g",
                  bytes, iters, grid, kThreads, mb::probe_hz(probe, dev));
    mb::result("cache", "read_" + label, "bytes", traffic, t, extra);
  }
  HIP_CHECK(hipFree(a));
  HIP_CHECK(hipFree(partial));
  HIP_CHECK(hipFree(probe));
  return 0;
}
