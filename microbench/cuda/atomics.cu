// atomics.cu -- atomicAdd(float) throughput under several contention patterns:
//   same_address: every thread of a full grid adds to ONE address;
//   per_warp:     each warp adds to its own address (32-way contention per address);
//   distinct:     every thread adds to its own address (no contention; 4 B apart, in L2);
//   few_<A>:      A = 1, 2, 4, 8, 32, 128, 1024 distinct addresses shared by the whole grid:
//                 thread t adds to address t % A (contiguous floats, like histogram bins), so
//                 each address receives (grid threads / A) x ops adds per run.
// The return value is unused (the compiler emits RED, fire-and-forget). Each thread does a
// fixed number of adds of a fixed-seed value per run (chosen per pattern for runs of about
// 0.5-4 ms). Per pattern: operations per run and 30 run times (after 5 warm-up runs). For
// the few-address patterns, one more launch adds 1.0 instead of the random values into
// zeroed targets, and every per-address sum must equal its exact count (all adds landed).
// Clock: under heavy contention the block-0 probe of these kernels is off (1.3-1.5 GHz on an
// H100, 2.0-2.7 GHz on an H200, at constant run times and 1980 MHz by nvidia-smi), so each
// result also carries witness_sm_clock_hz, the clock of a 2 ms spin kernel run right after the
// timed runs, which the runner uses.
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

// few distinct addresses shared by the whole grid: thread t -> target[t % addresses]
__global__ void few_address_kernel(float* __restrict__ target, const float* __restrict__ values, int addresses, int ops,
                                   mb::ClockProbe* probe) {
  mb::probe_start(probe);
  const size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  const float v = values[tid];
  float* addr = target + tid % addresses;
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
  mb::ClockProbe* probe_d;
  CHECK(cudaMalloc(&target, threads * sizeof(float)));
  CHECK(cudaMalloc(&values, threads * sizeof(float)));
  CHECK(cudaMalloc(&probe_d, sizeof(mb::ClockProbe)));
  mb::fill(values, threads, mb::kSeed + 21);
  mb::fill(target, threads, mb::kSeed + 22);
  const char* names[] = {"same_address", "per_warp", "distinct"};
  const int ops_per_thread[] = {8, 256, 1024};  // runs of ~0.5-4 ms on an H100/H200
  for (int mode = 0; mode < 3; ++mode) {
    const int ops = ops_per_thread[mode];
    auto t = mb::time_runs([&] {
      if (mode == 0) atomic_kernel<0><<<grid, kThreads>>>(target, values, ops, probe_d);
      if (mode == 1) atomic_kernel<1><<<grid, kThreads>>>(target, values, ops, probe_d);
      if (mode == 2) atomic_kernel<2><<<grid, kThreads>>>(target, values, ops, probe_d);
    });
    const double probe = mb::probe_hz(probe_d), witness = mb::witness_hz();
    char extra[320];
    std::snprintf(extra, sizeof extra,
                  "\"ops_per_thread\":%d,\"grid\":%d,\"block\":%d,\"addresses\":%zu,\"dtype\":\"float\","
                  "\"sm_clock_hz\":%.6g,\"witness_sm_clock_hz\":%.6g",
                  ops, grid, kThreads, mode == 0 ? size_t(1) : mode == 1 ? threads / 32 : threads, probe, witness);
    mb::result("atomics", names[mode], "ops", double(threads) * ops, t, extra);
  }

  // few addresses: ops per thread grow with the address count (throughput grows with it too)
  float* ones;  // for the check launch: adds of 1.0 keep every per-address sum an exact integer
  CHECK(cudaMalloc(&ones, threads * sizeof(float)));
  {
    std::vector<float> h(threads, 1.0f);
    CHECK(cudaMemcpy(ones, h.data(), threads * sizeof(float), cudaMemcpyHostToDevice));
  }
  for (int addresses : {1, 2, 4, 8, 32, 128, 1024}) {
    const int ops = std::min(8 * addresses, 1024);
    auto t = mb::time_runs([&] { few_address_kernel<<<grid, kThreads>>>(target, values, addresses, ops, probe_d); });
    const double hz = mb::probe_hz(probe_d), witness = mb::witness_hz();
    // every add lands: one more launch adding 1.0 from zeroed targets; sums < 2^24, so exact
    CHECK(cudaMemset(target, 0, addresses * sizeof(float)));
    few_address_kernel<<<grid, kThreads>>>(target, ones, addresses, ops, nullptr);
    CHECK_LAUNCH();
    std::vector<float> got(addresses);
    CHECK(cudaMemcpy(got.data(), target, addresses * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int a = 0; a < addresses; ++a) {
      const size_t threads_here = threads / addresses + (size_t(a) < threads % addresses ? 1 : 0);
      if (double(got[a]) != double(threads_here) * ops) ++bad;
    }
    if (bad) std::printf("CHECK_FAIL atomics few_%d: %d addresses, %zu wrong sums\n", addresses, addresses, bad);
    char extra[320];
    std::snprintf(extra, sizeof extra,
                  "\"ops_per_thread\":%d,\"grid\":%d,\"block\":%d,\"addresses\":%d,\"dtype\":\"float\","
                  "\"pattern\":\"thread t -> address t %% A (contiguous)\",\"check\":\"%s\",\"sm_clock_hz\":%.6g,"
                  "\"witness_sm_clock_hz\":%.6g",
                  ops, grid, kThreads, addresses, mb::check_word(bad == 0), hz, witness);
    mb::result("atomics", "few_" + std::to_string(addresses), "ops", double(threads) * ops, t, extra);
  }
  CHECK(cudaFree(ones));
  CHECK(cudaFree(target));
  CHECK(cudaFree(values));
  CHECK(cudaFree(probe_d));
  return 0;
}
