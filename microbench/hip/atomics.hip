// atomics.hip -- global atomic-add throughput under three contention patterns:
//   same_address: every thread of a full grid adds to ONE address;
//   per_wave:     each wave adds to its own address (64-way contention per address);
//   distinct:     every thread adds to its own address (no contention; 4 B apart, in L2).
// Two element types: float (names without suffix, as the CUDA suite; unsafeAtomicAdd, i.e. the
// hardware global_atomic_add_f32 of CDNA2/CDNA3 rather than a compare-and-swap loop) and
// unsigned int (suffix _u32, global_atomic_add_u32). The return value is unused, so the
// no-return form is emitted. Each thread does ops_per_thread adds per run. Per pattern:
// operations per run and 30 run times (after 5 warm-up runs).
// Check: one more run from zeroed targets, compared exactly with the host's sums (the float
// increments are 0.5, so every partial sum below 2^23 is exact in any order).
#include "mb_hip.h"

#include <type_traits>

constexpr int kThreads = 256;

// What thread tid adds: float 0.5, 1.0, 1.5, 2.0; unsigned 1, 2, 3, 4.
template <typename T>
__host__ __device__ inline T increment(size_t tid) {
  if constexpr (std::is_same<T, float>::value)
    return 0.5f * float(1 + (tid & 3));
  else
    return T(1 + (tid & 3));
}

template <int kMode, typename T>
__global__ __launch_bounds__(kThreads) void atomic_kernel(T* __restrict__ target, int ops, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  const size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  T* addr = kMode == 0 ? target : kMode == 1 ? target + tid / 64 : target + tid;
  const T v = increment<T>(tid);
  for (int k = 0; k < ops; ++k) {
    if constexpr (std::is_same<T, float>::value)
      unsafeAtomicAdd(addr, v);
    else
      atomicAdd(addr, v);
  }
  mb::probe_end(probe);
}

template <int kMode, typename T>
void run(const mb::DeviceInfo& dev, const char* name, int ops, T* target, mb::ClockProbe* probe) {
  const int grid = dev.cus * mb::blocks_per_cu(atomic_kernel<kMode, T>, kThreads);
  const size_t threads = size_t(grid) * kThreads;
  auto launch = [&] { hipLaunchKernelGGL((atomic_kernel<kMode, T>), dim3(grid), dim3(kThreads), 0, 0, target, ops, probe); };
  auto t = mb::time_runs(launch);
  const double hz = mb::probe_hz(probe, dev);
  const size_t addresses = kMode == 0 ? 1 : kMode == 1 ? threads / 64 : threads;
  // check: one run from zero
  HIP_CHECK(hipMemset(target, 0, threads * sizeof(T)));
  launch();
  CHECK_LAUNCH();
  std::vector<T> got(addresses), want(addresses, T(0));
  HIP_CHECK(hipMemcpy(got.data(), target, addresses * sizeof(T), hipMemcpyDeviceToHost));
  for (size_t tid = 0; tid < threads; ++tid) {
    const size_t a = kMode == 0 ? 0 : kMode == 1 ? tid / 64 : tid;
    want[a] += increment<T>(tid) * T(ops);
  }
  for (size_t a = 0; a < addresses; ++a)
    if (got[a] != want[a]) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "atomics %s: address %zu holds %.9g, expected %.9g", name, a, double(got[a]),
                    double(want[a]));
      mb::check_fail(buf);
    }
  char extra[256];
  std::snprintf(extra, sizeof extra,
                "\"ops_per_thread\":%d,\"grid\":%d,\"block\":%d,\"addresses\":%zu,\"dtype\":\"%s\",\"sm_clock_hz\":%.6g", ops,
                grid, kThreads, addresses, std::is_same<T, float>::value ? "float" : "uint32", hz);
  mb::result("atomics", name, "ops", double(threads) * ops, t, extra);
}

int main() {
  mb::DeviceInfo dev = mb::device_info("atomics");
  const size_t max_threads = size_t(dev.cus) * 2048;  // at most 2048 resident threads per CU
  float* tf;
  unsigned* tu;
  mb::ClockProbe* probe;
  HIP_CHECK(hipMalloc(&tf, max_threads * sizeof(float)));
  HIP_CHECK(hipMalloc(&tu, max_threads * sizeof(unsigned)));
  HIP_CHECK(hipMalloc(&probe, sizeof(mb::ClockProbe)));
  HIP_CHECK(hipMemset(tf, 0, max_threads * sizeof(float)));
  HIP_CHECK(hipMemset(tu, 0, max_threads * sizeof(unsigned)));
  run<0, float>(dev, "same_address", 4, tf, probe);
  run<1, float>(dev, "per_wave", 64, tf, probe);
  run<2, float>(dev, "distinct", 512, tf, probe);
  run<0, unsigned>(dev, "same_address_u32", 4, tu, probe);
  run<1, unsigned>(dev, "per_wave_u32", 64, tu, probe);
  run<2, unsigned>(dev, "distinct_u32", 512, tu, probe);
  HIP_CHECK(hipFree(tf));
  HIP_CHECK(hipFree(tu));
  HIP_CHECK(hipFree(probe));
  return 0;
}
