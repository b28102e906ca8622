// mb_hip.h -- shared harness of the HIP microbenchmark suite (microbench/hip/*.hip), for AMD
// CDNA2 (gfx90a: MI250X, one GCD per HIP device) and CDNA3 (gfx942: MI300A, MI300X).
//
// Same protocol as the CUDA harness (microbench/cuda/mb.h), written for HIP:
//   * HIP_CHECK(call) / CHECK_LAUNCH(): abort with file:line and the HIP error string;
//   * fixed-seed inputs, never zeros: the same counter-based generator (splitmix64 of
//     seed ^ index) on the host and on the device;
//   * output: one `MB_DEVICE {json}` line first, then one `MB_RESULT {json}` line per
//     measurement; a failed result check prints `CHECK_FAIL ...` and exits with status 1.
// Timers: hipEvents around each run; on the device clock64() (s_memtime, the shader-clock
// counter) and wall_clock64() (s_memrealtime, a constant-rate counter). Their rates are measured
// against hipEvents at start-up (calibrate_timers) and reported in MB_DEVICE, so the runner
// (microbench/amd.py) can tell whether clock64() really counts core cycles on this GPU.
#pragma once

#include <hip/hip_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define HIP_CHECK(call)                                                              \
  do {                                                                               \
    hipError_t mb_err_ = (call);                                                     \
    if (mb_err_ != hipSuccess) {                                                     \
      std::fprintf(stderr, "%s:%d: HIP error in %s: %s (%s)\n", __FILE__, __LINE__,  \
                   #call, hipGetErrorString(mb_err_), hipGetErrorName(mb_err_));     \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

#define CHECK_LAUNCH() HIP_CHECK(hipGetLastError())

namespace mb {

constexpr uint64_t kSeed = 0x5EED1234ABCDull;

__host__ __device__ inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform float in [0.5, 1.5): never zero, never denormal; its mean is 1.0, which the
// bandwidth programs use to check what they read.
__host__ __device__ inline float uniform_at(uint64_t seed, uint64_t i) {
  return 0.5f + float(uint32_t(splitmix64(seed ^ (i * 0x2545F4914F6CDD1Dull)) >> 40)) * (1.0f / 16777216.0f);
}

__host__ __device__ inline uint32_t word_at(uint64_t seed, uint64_t i) {
  return uint32_t(splitmix64(seed ^ (i * 0x9E3779B97F4A7C15ull)));
}

__global__ void fill_kernel(float* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = uniform_at(seed, i);
}

inline void fill(float* d, size_t n, uint64_t seed) {
  hipLaunchKernelGGL(fill_kernel, dim3(1024), dim3(256), 0, 0, d, n, seed);
  CHECK_LAUNCH();
  HIP_CHECK(hipDeviceSynchronize());
}

[[noreturn]] inline void check_fail(const char* what) {
  std::printf("CHECK_FAIL %s\n", what);
  std::fflush(stdout);
  std::fprintf(stderr, "CHECK_FAIL %s\n", what);
  std::exit(1);
}

// Host-side xorshift64* (for permutations).
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed ? seed : 0x9E3779B97F4A7C15ull) {
    for (int i = 0; i < 8; ++i) next();
  }
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  // Uniform integer in [0, n), n < 2^32.
  uint64_t below(uint64_t n) { return ((next() >> 32) * n) >> 32; }
};

// Shader-clock counter (s_memtime on CDNA, what HIP's clock64() reads) and constant-rate
// counter (s_memrealtime, HIP's wall_clock64()); the builtins directly, since older HIP headers
// declare wall_clock64() for the device pass only.
__device__ inline uint64_t cycles() {
#if defined(__HIP_DEVICE_COMPILE__) && __has_builtin(__builtin_amdgcn_s_memtime)
  return __builtin_amdgcn_s_memtime();
#elif defined(__HIP_DEVICE_COMPILE__)
  return __builtin_readcyclecounter();
#else
  return 0;
#endif
}
__device__ inline uint64_t wall_ticks() {
#if defined(__HIP_DEVICE_COMPILE__)
  return __builtin_amdgcn_s_memrealtime();
#else
  return 0;
#endif
}

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o;
}

inline std::string json_list(const std::vector<double>& v) {
  std::string s = "[";
  char buf[64];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.9g", i ? "," : "", v[i]);
    s += buf;
  }
  return s + "]";
}

// Timer calibration: one thread spins on a dependent integer chain; clock64 and wall_clock64
// deltas over the kernel, divided by its hipEvent time, give both counters' rates.
__global__ void spin_kernel(long long iters, unsigned long long* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  const uint64_t c0 = cycles(), w0 = wall_ticks();
  uint32_t x = uint32_t(iters) | 1u;
  for (long long i = 0; i < iters; ++i) x = x * 1664525u + 1013904223u;
  const uint64_t c1 = cycles(), w1 = wall_ticks();
  out[0] = c1 - c0;
  out[1] = w1 - w0;
  out[2] = x;  // keeps the chain
}

struct Timers {
  double counter_hz = 0, wall_hz = 0, spin_ms = 0;
};

inline Timers calibrate_timers() {
  unsigned long long* d;
  HIP_CHECK(hipMalloc(&d, 3 * sizeof(unsigned long long)));
  hipEvent_t a, b;
  HIP_CHECK(hipEventCreate(&a));
  HIP_CHECK(hipEventCreate(&b));
  Timers t;
  for (long long iters = 1 << 16; iters < (1ll << 40); iters *= 4) {
    HIP_CHECK(hipEventRecord(a, 0));
    hipLaunchKernelGGL(spin_kernel, dim3(1), dim3(64), 0, 0, iters, d);
    CHECK_LAUNCH();
    HIP_CHECK(hipEventRecord(b, 0));
    HIP_CHECK(hipEventSynchronize(b));
    float ms = 0;
    HIP_CHECK(hipEventElapsedTime(&ms, a, b));
    if (ms >= 50.0f) {  // launch overhead (~10 us) below 0.05 %
      unsigned long long h[3];
      HIP_CHECK(hipMemcpy(h, d, sizeof h, hipMemcpyDeviceToHost));
      t.counter_hz = double(h[0]) / (ms * 1e-3);
      t.wall_hz = double(h[1]) / (ms * 1e-3);
      t.spin_ms = ms;
      break;
    }
  }
  HIP_CHECK(hipEventDestroy(a));
  HIP_CHECK(hipEventDestroy(b));
  HIP_CHECK(hipFree(d));
  return t;
}

struct DeviceInfo {
  int cus = 0, l2 = 0, clock_khz = 0, mem_clock_khz = 0, bus_width = 0, warp_size = 0;
  int max_threads_per_cu = 0, clock_instruction_rate_khz = 0, integrated = 0;
  size_t total_mem = 0, max_shared_per_cu = 0, max_shared_per_block = 0;
  std::string name, arch;
  Timers timers;
};

inline int attr(hipDeviceAttribute_t a) {
  int v = 0;
  if (hipDeviceGetAttribute(&v, a, 0) != hipSuccess) {
    (void)hipGetLastError();
    return 0;
  }
  return v;
}

// Queries device 0 (one GCD on an MI250X), measures the counter rates and prints MB_DEVICE.
inline DeviceInfo device_info(const char* program) {
  DeviceInfo d;
  HIP_CHECK(hipSetDevice(0));
  hipDeviceProp_t prop;
  HIP_CHECK(hipGetDeviceProperties(&prop, 0));
  d.name = prop.name;
  d.arch = prop.gcnArchName;
  d.total_mem = prop.totalGlobalMem;
  d.max_shared_per_block = prop.sharedMemPerBlock;
  d.max_shared_per_cu = prop.maxSharedMemoryPerMultiProcessor;
  d.integrated = prop.integrated;
  d.cus = attr(hipDeviceAttributeMultiprocessorCount);
  d.l2 = attr(hipDeviceAttributeL2CacheSize);
  d.clock_khz = attr(hipDeviceAttributeClockRate);
  d.mem_clock_khz = attr(hipDeviceAttributeMemoryClockRate);
  d.bus_width = attr(hipDeviceAttributeMemoryBusWidth);
  d.warp_size = attr(hipDeviceAttributeWarpSize);
  d.max_threads_per_cu = attr(hipDeviceAttributeMaxThreadsPerMultiProcessor);
  d.clock_instruction_rate_khz = attr(hipDeviceAttributeClockInstructionRate);
  int rt = 0, drv = 0;
  HIP_CHECK(hipRuntimeGetVersion(&rt));
  HIP_CHECK(hipDriverGetVersion(&drv));
  d.timers = calibrate_timers();
  std::printf(
      "MB_DEVICE {\"program\":\"%s\",\"backend\":\"hip\",\"name\":\"%s\",\"arch\":\"%s\",\"cu_count\":%d,"
      "\"sm_count\":%d,\"l2_bytes\":%d,\"max_sclk_khz\":%d,\"mem_clock_khz\":%d,\"mem_bus_width_bits\":%d,"
      "\"warp_size\":%d,\"max_threads_per_cu\":%d,\"max_shared_per_cu\":%zu,\"max_shared_per_block\":%zu,"
      "\"total_mem_bytes\":%zu,\"integrated\":%d,\"clock_instruction_rate_khz\":%d,\"counter_hz\":%.6g,"
      "\"wall_clock_hz\":%.6g,\"timer_calibration_ms\":%.3f,\"runtime_version\":%d,\"driver_version\":%d}\n",
      program, json_escape(d.name).c_str(), json_escape(d.arch).c_str(), d.cus, d.cus, d.l2, d.clock_khz,
      d.mem_clock_khz, d.bus_width, d.warp_size, d.max_threads_per_cu, d.max_shared_per_cu,
      d.max_shared_per_block, d.total_mem, d.integrated, d.clock_instruction_rate_khz, d.timers.counter_hz,
      d.timers.wall_hz, d.timers.spin_ms, rt, drv);
  std::fflush(stdout);
  if (d.timers.wall_hz <= 0) check_fail("timer calibration: the spin kernel never ran for 50 ms");
  return d;
}

// One MB_RESULT line. `extra` is a JSON fragment without braces (may be empty).
inline void result(const char* bench, const std::string& name, const char* amount_key, double amount,
                   const std::vector<double>& times_ms, const std::string& extra = "") {
  std::printf("MB_RESULT {\"bench\":\"%s\",\"name\":\"%s\",\"%s\":%.17g,\"times_ms\":%s%s%s}\n", bench,
              name.c_str(), amount_key, amount, json_list(times_ms).c_str(), extra.empty() ? "" : ",",
              extra.c_str());
  std::fflush(stdout);
}

// Times `runs` launches of `launch` (after `warmup` untimed ones), each bracketed by its own
// hipEvent pair on the null stream. Returns the per-run times in ms.
template <typename F>
std::vector<double> time_runs(F launch, int warmup = 5, int runs = 30) {
  hipEvent_t a, b;
  HIP_CHECK(hipEventCreate(&a));
  HIP_CHECK(hipEventCreate(&b));
  for (int i = 0; i < warmup; ++i) {
    launch();
    CHECK_LAUNCH();
  }
  HIP_CHECK(hipDeviceSynchronize());
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    HIP_CHECK(hipEventRecord(a, 0));
    launch();
    CHECK_LAUNCH();
    HIP_CHECK(hipEventRecord(b, 0));
    HIP_CHECK(hipEventSynchronize(b));
    float ms = 0;
    HIP_CHECK(hipEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  HIP_CHECK(hipEventDestroy(a));
  HIP_CHECK(hipEventDestroy(b));
  return t;
}

// Clock probe: thread 0 of block 0 records both counters at kernel start and end, so each run
// also reports the core clock it actually ran at (clock64 ticks / wall seconds).
struct ClockProbe {
  unsigned long long c0, c1, w0, w1;
};

__device__ inline void probe_start(ClockProbe* p) {
  if (p && blockIdx.x == 0 && threadIdx.x == 0) {
    p->w0 = wall_ticks();
    p->c0 = cycles();
  }
}
__device__ inline void probe_end(ClockProbe* p) {
  if (p && blockIdx.x == 0 && threadIdx.x == 0) {
    p->c1 = cycles();
    p->w1 = wall_ticks();
  }
}

inline double probe_hz(const ClockProbe* d_probe, const DeviceInfo& dev) {
  ClockProbe h;
  HIP_CHECK(hipMemcpy(&h, d_probe, sizeof h, hipMemcpyDeviceToHost));
  if (h.w1 <= h.w0 || dev.timers.wall_hz <= 0) return 0.0;
  return double(h.c1 - h.c0) / (double(h.w1 - h.w0) / dev.timers.wall_hz);
}

// Blocks of `threads` that fit on one CU for `kernel` (occupancy API), at least 1.
template <typename K>
int blocks_per_cu(K kernel, int threads, size_t dyn_shared = 0) {
  int n = 0;
  HIP_CHECK(hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, dyn_shared));
  return std::max(n, 1);
}

// Sum of a float over the block (any block size that is a multiple of the wave size, <= 1024).
__device__ inline float block_sum(float v) {
  __shared__ float partial[16];
  for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o);
  const int wave = threadIdx.x / warpSize, lane = threadIdx.x % warpSize;
  if (lane == 0) partial[wave] = v;
  __syncthreads();
  float s = 0.f;
  if (threadIdx.x == 0)
    for (int w = 0; w < int(blockDim.x / warpSize); ++w) s += partial[w];
  __syncthreads();
  return s;  // valid in thread 0
}

// Checks that the mean of `count` values read (their sum is spread over `partials`) is 1.0
// within `tol`: the inputs are uniform in [0.5, 1.5), so any large sample averages to 1.0.
inline void check_mean_one(const float* d_partials, size_t n_partials, double count, double tol, const char* what) {
  std::vector<float> h(n_partials);
  HIP_CHECK(hipMemcpy(h.data(), d_partials, n_partials * sizeof(float), hipMemcpyDeviceToHost));
  double s = 0;
  for (float v : h) s += v;
  const double mean = s / count;
  if (!(mean > 1.0 - tol && mean < 1.0 + tol)) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s: mean of the values read is %.6f, expected 1.0 +- %.3f", what, mean, tol);
    check_fail(buf);
  }
}

}  // namespace mb
