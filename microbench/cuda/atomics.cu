// atomics.cu -- atomicAdd(float) throughput under three contention patterns:
//   same_address: every thread of a full grid adds to ONE address;
//   per_warp:     each warp adds to its own address (32-way contention per address);
//   distinct:     every thread adds to its own address (no contention; 4 B apart, in L2).
// The return value is unused (the compiler emits RED, fire-and-forget). Each thread does
// kOpsPerThread adds of a fixed-seed value per run. Per pattern: operations per run and
// 30 run times (after 5 warm-up runs).
#include "mb.h"

constexpr int kThreads = 512;

template <int kMode>
__global__ void atomic_kernel(float* __restrict__ target, const float* __restrict__ values, int ops,
                              mb::ClockProbe* probe) {
  mb::probe_start(probe);
  const size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  const float v = values[tid];
  float* addr = kMode == 0 ? target : kMode == 1 ? target + tid / 32 : target + tid;
  for (int k = 0; k < ops; ++k) atomicAdd(addr, v);
  mb::probe_end(probe);
}

int main() {
  mb::DeviceInfo dev = mb::device_info("atomics");
  const int grid = dev.sms * std::min({mb::blocks_per_sm(atomic_kernel<0>, kThreads),
                                       mb::blocks_per_sm(atomic_kernel<1>, kThreads),
                                       mb::blocks_per_sm(atomic_kernel<2>, kThreads)});
  const size_t threads = size_t(grid) * kThreads;
  float *target, *values;
  mb::ClockProbe* probe;
  CHECK(cudaMalloc(&target, threads * sizeof(float)));
  CHECK(cudaMalloc(&values, threads * sizeof(float)));
  CHECK(cudaMalloc(&probe, sizeof(mb::ClockProbe)));
  mb::fill(values, threads, mb::kSeed + 21);
  mb::fill(target, threads, mb::kSeed + 22);
  const char* names[] = {"same_address", "per_warp", "distinct"};
  const int ops_per_thread[] = {8, 256, 1024};  // runs of ~0.5-4 ms on an H100/H200
  for (int mode = 0; mode < 3; ++mode) {
    const int ops = ops_per_thread[mode];
    auto t = mb::time_runs([&] {
      if (mode == 0) atomic_kernel<0><<<grid, kThreads>>>(target, values, ops, probe);
      if (mode == 1) atomic_kernel<1><<<grid, kThreads>>>(target, values, ops, probe);
      if (mode == 2) atomic_kernel<2><<<grid, kThreads>>>(target, values, ops, probe);
    });
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  "\"ops_per_thread\":%d,\"grid\":%d,\"block\":%d,\"addresses\":%zu,\"dtype\":\"float\","
                  "\"sm_clock_hz\":%.6g",
                  ops, grid, kThreads, mode == 0 ? size_t(1) : mode == 1 ? threads / 32 : threads, mb::probe_hz(probe));
    mb::result("atomics", names[mode], "ops", double(threads) * ops, t, extra);
  }
  CHECK(cudaFree(target));
  CHECK(cudaFree(values));
  CHECK(cudaFree(probe));
  return 0;
}
