// mb.h -- shared harness of the microbenchmark suite (microbench/cuda/*.cu).
//
// Same conventions as the kernel zoo (profiles/src/zoo.h), written separately:
//   * CHECK(call) / CHECK_LAUNCH(): abort with file:line and the CUDA error string;
//   * fixed-seed inputs, never zeros: a counter-based generator (splitmix64 of seed ^ index),
//     usable both on the host and on the device (fill kernels for multi-GiB buffers);
//   * output: one `MB_DEVICE {json}` line first, then one `MB_RESULT {json}` line per
//     measurement (the runner, microbench/runner.py, parses them and computes statistics).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t mb_err_ = (call);                                                     \
    if (mb_err_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s:%d: CUDA error in %s: %s (%s)\n", __FILE__, __LINE__,  \
                   #call, cudaGetErrorString(mb_err_), cudaGetErrorName(mb_err_));    \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

#define CHECK_LAUNCH() CHECK(cudaGetLastError())

namespace mb {

constexpr uint64_t kSeed = 0x5EED1234ABCDull;

__host__ __device__ inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform float in [0.5, 1.5): never zero, never denormal.
__host__ __device__ inline float uniform_at(uint64_t seed, uint64_t i) {
  return 0.5f + float(uint32_t(splitmix64(seed ^ (i * 0x2545F4914F6CDD1Dull)) >> 40)) * (1.0f / 16777216.0f);
}

__global__ void fill_kernel(float* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = uniform_at(seed, i);
}

inline void fill(float* d, size_t n, uint64_t seed) {
  fill_kernel<<<1024, 256>>>(d, n, seed);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
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

__device__ inline uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct DeviceInfo {
  int device = 0, sms = 0, l2 = 0, cc_major = 0, cc_minor = 0, clock_khz = 0, mem_clock_khz = 0;
  int max_threads_per_sm = 0, max_shared_per_sm = 0;
  size_t total_mem = 0;
  std::string name;
};

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o;
}

// Queries device 0 and prints the MB_DEVICE line. The clocks come from
// cudaDeviceGetAttribute (CUDA 13 removed clockRate from cudaDeviceProp); 0 if unsupported.
inline DeviceInfo device_info(const char* program) {
  DeviceInfo d;
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  d.name = prop.name;
  d.total_mem = prop.totalGlobalMem;
  CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaDeviceGetAttribute(&d.l2, cudaDevAttrL2CacheSize, 0));
  CHECK(cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, 0));
  CHECK(cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, 0));
  CHECK(cudaDeviceGetAttribute(&d.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, 0));
  CHECK(cudaDeviceGetAttribute(&d.max_shared_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  if (cudaDeviceGetAttribute(&d.clock_khz, cudaDevAttrClockRate, 0) != cudaSuccess) {
    d.clock_khz = 0;
    (void)cudaGetLastError();
  }
  if (cudaDeviceGetAttribute(&d.mem_clock_khz, cudaDevAttrMemoryClockRate, 0) != cudaSuccess) {
    d.mem_clock_khz = 0;
    (void)cudaGetLastError();
  }
  int rt = 0, drv = 0;
  CHECK(cudaRuntimeGetVersion(&rt));
  CHECK(cudaDriverGetVersion(&drv));
  std::printf(
      "MB_DEVICE {\"program\":\"%s\",\"name\":\"%s\",\"cc\":\"%d.%d\",\"sm_count\":%d,\"l2_bytes\":%d,"
      "\"max_sm_clock_khz\":%d,\"mem_clock_khz\":%d,\"max_threads_per_sm\":%d,\"max_shared_per_sm\":%d,"
      "\"total_mem_bytes\":%zu,\"runtime_version\":%d,\"driver_version\":%d}\n",
      program, json_escape(d.name).c_str(), d.cc_major, d.cc_minor, d.sms, d.l2, d.clock_khz, d.mem_clock_khz,
      d.max_threads_per_sm, d.max_shared_per_sm, d.total_mem, rt, drv);
  std::fflush(stdout);
  return d;
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

struct ClockProbe;
inline double probe_hz(const ClockProbe* d_probe);
// The probe that time_runs() reads after every timed run (set once per program with
// watch_probe()), and the SM clocks it read: result() appends them to the next MB_RESULT as
// "sm_clock_hz_runs" when there is one valid clock per timed run, so that the runner can pair
// each run's time with that run's clock (the SM clock drifts from run to run under power
// limits: seen on an H100 running wgmma, 1.83 GHz in most runs, 1.59 GHz in the last one).
inline ClockProbe*& watched_probe() {
  static ClockProbe* p = nullptr;
  return p;
}
inline std::vector<double>& run_clocks() {
  static std::vector<double> v;
  return v;
}
inline void watch_probe(ClockProbe* p) { watched_probe() = p; }

// One MB_RESULT line. `extra` is a JSON fragment without braces (may be empty), e.g.
// "\"footprint_bytes\":1048576".
inline void result(const char* bench, const std::string& name, const char* amount_key, double amount,
                   const std::vector<double>& times_ms, const std::string& extra = "") {
  std::string clocks;
  const std::vector<double>& hz = run_clocks();
  if (!hz.empty() && hz.size() == times_ms.size() && *std::min_element(hz.begin(), hz.end()) > 0)
    clocks = ",\"sm_clock_hz_runs\":" + json_list(hz);
  run_clocks().clear();
  std::printf("MB_RESULT {\"bench\":\"%s\",\"name\":\"%s\",\"%s\":%.17g,\"times_ms\":%s%s%s%s}\n", bench,
              name.c_str(), amount_key, amount, json_list(times_ms).c_str(), extra.empty() ? "" : ",",
              extra.c_str(), clocks.c_str());
  std::fflush(stdout);
}


// Times `runs` launches of `launch` (after `warmup` untimed ones), each bracketed by its own
// cudaEvent pair. Returns the per-run times in ms (and records each run's SM clock, see above).
template <typename F>
std::vector<double> time_runs(F launch, int warmup = 5, int runs = 30) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warmup; ++i) {
    launch();
    CHECK_LAUNCH();
  }
  CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  run_clocks().clear();
  for (int i = 0; i < runs; ++i) {
    if (watched_probe()) CHECK(cudaMemset(watched_probe(), 0, 4 * sizeof(unsigned long long)));
    CHECK(cudaEventRecord(a));
    launch();
    CHECK_LAUNCH();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
    if (watched_probe()) run_clocks().push_back(probe_hz(watched_probe()));
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return t;
}

// Clock probe: thread 0 of block 0 records clock64 and globaltimer at kernel start and end,
// so each run also reports the SM clock it actually ran at.
struct ClockProbe {
  unsigned long long c0, c1, t0, t1;
};

__device__ inline void probe_start(ClockProbe* p) {
  if (p && blockIdx.x == 0 && threadIdx.x == 0) {
    p->t0 = globaltimer_ns();
    p->c0 = clock64();
  }
}
// At both ends %globaltimer is read first and clock64 second. Under a deep queue of
// fire-and-forget atomics the two reads of block 0 drift apart whatever their order (an H100
// read 1.3-1.5 GHz with clock-then-timer at the end, an H200 2.0-2.7 GHz with timer-then-clock,
// at constant run times and 1.98 GHz by nvidia-smi): atomics.cu reports witness_hz() instead.
__device__ inline void probe_end(ClockProbe* p) {
  if (p && blockIdx.x == 0 && threadIdx.x == 0) {
    p->t1 = globaltimer_ns();
    p->c1 = clock64();
  }
}

// Below this interval the %globaltimer's update granularity (about a microsecond) makes the
// ratio unreliable: then 0 is reported and the runner uses the clock measured elsewhere in the
// suite. (Block 0 of a fire-and-forget atomics kernel can finish issuing long before the
// kernel ends: its interval is then a few microseconds.)
constexpr double kMinProbeNs = 200e3;

inline double probe_hz(const ClockProbe* d_probe) {
  ClockProbe h;
  CHECK(cudaMemcpy(&h, d_probe, sizeof h, cudaMemcpyDeviceToHost));
  if (h.t1 <= h.t0 || double(h.t1 - h.t0) < kMinProbeNs) return 0.0;
  return double(h.c1 - h.c0) / (double(h.t1 - h.t0) * 1e-9);
}

// A witness of the SM clock with no memory traffic around it: one thread spins for 2 ms of
// %globaltimer and counts clock64 over the same interval. For kernels whose own probe cannot be
// trusted (fire-and-forget atomics), run right after them.
__global__ void witness_kernel(unsigned long long* out) {
  const unsigned long long t0 = globaltimer_ns(), c0 = clock64();
  unsigned long long t1 = t0;
  while (t1 - t0 < 2000000ull) t1 = globaltimer_ns();
  const unsigned long long c1 = clock64();
  out[0] = c1 - c0;
  out[1] = t1 - t0;
}

inline double witness_hz() {
  unsigned long long *d, h[2];
  CHECK(cudaMalloc(&d, sizeof h));
  witness_kernel<<<1, 1>>>(d);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  return h[1] ? double(h[0]) / (double(h[1]) * 1e-9) : 0.0;
}

// Blocks of `threads` that fit on one SM for `kernel` (occupancy API), at least 1.
template <typename K>
int blocks_per_sm(K kernel, int threads, size_t dynamic_smem = 0) {
  int n = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, dynamic_smem));
  return std::max(n, 1);
}

// Index of the SM the calling thread runs on.
__device__ inline uint32_t smid() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

// 32-bit shared-window address of a shared-memory pointer (for inline PTX ld.shared).
__device__ inline uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// Builder of the JSON fragment that mb::result() appends to an MB_RESULT line:
//   mb::Extra().num("footprint_bytes", fp).str("variant", "cg").list("cycles_per_op", v)
struct Extra {
  std::string s;
  Extra& raw(const char* key, const std::string& json) {
    if (!s.empty()) s += ",";
    s += "\"";
    s += key;
    s += "\":";
    s += json;
    return *this;
  }
  Extra& num(const char* key, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);  // byte counts up to 2^64 stay exact
    return raw(key, buf);
  }
  Extra& str(const char* key, const std::string& v) { return raw(key, "\"" + json_escape(v) + "\""); }
  Extra& list(const char* key, const std::vector<double>& v) { return raw(key, json_list(v)); }
  Extra& flag(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  operator const std::string&() const { return s; }
};

// Times `runs` launches of `launch` whose work is measured with clock64() inside the kernel:
// returns the event times (ms) of the measured launches, after `warmup` untimed ones; `after`
// runs after each measured launch (to copy the kernel's own cycle counts back).
template <typename F, typename G>
std::vector<double> time_runs_with(F launch, G after, int warmup, int runs) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warmup; ++i) {
    launch();
    CHECK_LAUNCH();
  }
  CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK_LAUNCH();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
    after();
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return t;
}

// A failed correctness check: printed as a CHECK_FAIL line (the runner records it) and as the
// result's "check" field, which makes the runner reject that measurement.
inline const char* check_word(bool ok) { return ok ? "pass" : "fail"; }

}  // namespace mb
