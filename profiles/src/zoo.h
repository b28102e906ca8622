// zoo.h -- shared harness for the kernel zoo (profiles/src/*.cu).
//
// Every zoo program includes this header and nothing else of ours. It gives:
//   * CHECK(call) / CHECK_LAUNCH(): abort with file:line and the CUDA error string.
//   * zoo::Rng: a fixed-seed xorshift64* generator, so inputs are identical on every run
//     and every machine (inputs are made on the host and copied with cudaMemcpy; never zeros).
//   * zoo::Session: parses argv, prints the device, and measures kernels:
//       - timing mode (default): 3 warm-up launches, then 25 timed launches, each one
//         bracketed by its own cudaEvent pair and preceded by an L2 flush, and one
//         `ZOO_RESULT {json}` line per kernel (median / min / max in ms);
//       - profile mode (`--profile`): each kernel is launched exactly once (no warm-up,
//         no flush, no timing) so that Nsight Compute sees one launch per kernel.
//   * zoo::fail(...): prints `CHECK_FAIL ...` and exits 1 (used by correctness checks).
//
// Only the CUDA runtime API basics are used (no cuBLAS/cuRAND/thrust).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t zoo_err_ = (call);                                                    \
    if (zoo_err_ != cudaSuccess) {                                                    \
      std::fprintf(stderr, "%s:%d: CUDA error in %s: %s (%s)\n", __FILE__, __LINE__,  \
                   #call, cudaGetErrorString(zoo_err_), cudaGetErrorName(zoo_err_));  \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// Call right after every <<<>>> launch: catches bad configurations immediately.
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

namespace zoo {

// The zoo's grids are sized for a full H100 SXM / H200 (both have 132 SMs). Programs that
// need "exactly N waves" hardcode this rather than query it, so that the launch (and
// therefore the profile) is the same on every machine; the Session warns if it differs.
constexpr int kNumSMs = 132;

// ---------------------------------------------------------------------------------------
// Deterministic host-side PRNG (xorshift64*). Fixed seeds make every input reproducible.
// ---------------------------------------------------------------------------------------
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed ? seed : 0x9E3779B97F4A7C15ull) {
    for (int i = 0; i < 8; ++i) next();  // decorrelate nearby seeds
  }
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  uint32_t u32() { return uint32_t(next() >> 32); }
  // Uniform in [lo, hi) with 24 random mantissa bits.
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * float(u32() >> 8) * (1.0f / 16777216.0f);
  }
  // Uniform integer in [0, n).
  uint32_t below(uint32_t n) { return uint32_t((uint64_t(u32()) * n) >> 32); }
};

inline std::vector<float> random_floats(size_t n, float lo, float hi, uint64_t seed) {
  std::vector<float> v(n);
  Rng r(seed);
  for (auto& x : v) x = r.uniform(lo, hi);
  return v;
}

// Sattolo's algorithm: a random permutation that is ONE cycle of length n, so a pointer
// chase `i = next[i]` started anywhere visits every element before repeating.
inline std::vector<uint32_t> random_cycle(size_t n, uint64_t seed) {
  std::vector<uint32_t> next(n);
  for (size_t i = 0; i < n; ++i) next[i] = uint32_t(i);
  Rng r(seed);
  for (size_t i = n - 1; i > 0; --i) {
    size_t j = r.below(uint32_t(i));  // j in [0, i): strictly less -> single cycle
    std::swap(next[i], next[j]);
  }
  return next;
}

// ---------------------------------------------------------------------------------------
// Small device-memory helpers.
// ---------------------------------------------------------------------------------------
template <typename T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  CHECK(cudaMalloc(&d, h.size() * sizeof(T)));
  CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
T* device_alloc(size_t n) {
  T* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(T)));
  return d;
}

template <typename T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// ---------------------------------------------------------------------------------------
// Correctness checks: print CHECK_FAIL and exit 1 on mismatch.
// ---------------------------------------------------------------------------------------
[[noreturn]] inline void fail(const char* fmt, ...) {
  std::va_list ap;
  va_start(ap, fmt);
  std::printf("CHECK_FAIL ");
  std::vprintf(fmt, ap);
  std::printf("\n");
  va_end(ap);
  std::fflush(stdout);
  std::exit(1);
}

inline bool close_enough(double got, double ref, double rtol, double atol) {
  if (!std::isfinite(got)) return false;
  return std::fabs(got - ref) <= atol + rtol * std::fabs(ref);
}

inline void expect_close(const char* what, size_t index, double got, double ref, double rtol,
                         double atol) {
  if (!close_enough(got, ref, rtol, atol))
    fail("%s[%zu]: got %.9g, expected %.9g (rtol %g, atol %g)", what, index, got, ref, rtol,
         atol);
}

inline void check_ok(const char* prog) {
  std::printf("CHECK_OK %s\n", prog);
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------
// L2 flush helper kernel: reads the scratch buffer after it was memset, so the L2 ends up
// full of CLEAN lines of an unrelated buffer. (A memset alone leaves up to 50-60 MB of
// dirty lines whose write-back would be charged to the timed kernel.)
// ---------------------------------------------------------------------------------------
__global__ void zoo_l2_flush_read(const float4* __restrict__ p, size_t n4,
                                  float* __restrict__ sink) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4;
       i += size_t(gridDim.x) * blockDim.x) {
    float4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 123.456f) sink[0] = acc;  // practically never true; keeps the loads alive
}

// ---------------------------------------------------------------------------------------
// Session: mode handling, L2 flush, timing and ZOO_RESULT output.
// ---------------------------------------------------------------------------------------
class Session {
 public:
  static constexpr int kWarmup = 3;
  static constexpr int kRuns = 25;
  static constexpr size_t kFlushBytes = size_t(256) << 20;  // 256 MiB > any L2 (50/60 MB)

  Session(const char* program, int argc, char** argv) : prog_(program) {
    for (int i = 1; i < argc; ++i)
      if (std::strcmp(argv[i], "--profile") == 0) profile_ = true;
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDeviceProperties(&prop_, 0));
    std::printf(
        "ZOO_DEVICE {\"program\": \"%s\", \"name\": \"%s\", \"cc\": \"%d.%d\", \"sms\": %d, "
        "\"l2_bytes\": %d, \"smem_per_sm\": %zu, \"regs_per_sm\": %d, \"mode\": \"%s\"}\n",
        prog_, prop_.name, prop_.major, prop_.minor, prop_.multiProcessorCount,
        prop_.l2CacheSize, prop_.sharedMemPerMultiprocessor, prop_.regsPerMultiprocessor,
        profile_ ? "profile" : "timing");
    if (prop_.multiProcessorCount != kNumSMs)
      std::fprintf(stderr,
                   "note: device has %d SMs; zoo grids are sized for %d (H100 SXM/H200)\n",
                   prop_.multiProcessorCount, kNumSMs);
    std::fflush(stdout);
  }

  ~Session() {
    if (scratch_) cudaFree(scratch_);
    if (sink_) cudaFree(sink_);
    if (ev0_) cudaEventDestroy(ev0_);
    if (ev1_) cudaEventDestroy(ev1_);
  }

  bool profile() const { return profile_; }
  const cudaDeviceProp& prop() const { return prop_; }

  // Make the next launch start with a cold L2 (like ncu --cache-control all): memset a
  // 256 MiB scratch buffer (evicts everything), then read it back so no dirty lines remain.
  void flush_l2() {
    if (!scratch_) {
      CHECK(cudaMalloc(&scratch_, kFlushBytes));
      CHECK(cudaMalloc(&sink_, sizeof(float)));
    }
    CHECK(cudaMemset(scratch_, (flush_count_++ & 0x7f) + 1, kFlushBytes));
    zoo_l2_flush_read<<<4 * prop_.multiProcessorCount, 512>>>(
        reinterpret_cast<const float4*>(scratch_), kFlushBytes / sizeof(float4), sink_);
    CHECK_LAUNCH();
  }

  // Measure one kernel. `launch` performs exactly ONE launch (and CHECK_LAUNCH()).
  //   batch:            launches per timed unit (launch_overhead times N back-to-back
  //                     launches between one event pair and reports the per-launch time).
  //   profile_launches: launches in profile mode (1 except for launch_overhead).
  // Returns the total number of launches performed (programs use it to check results of
  // kernels that accumulate into their output, e.g. atomics).
  template <typename F>
  long measure(const char* kernel, dim3 grid, dim3 block, size_t dyn_smem, F&& launch,
               int batch = 1, int profile_launches = 1) {
    long launches = 0;
    if (profile_) {
      for (int i = 0; i < profile_launches; ++i, ++launches) launch();
      CHECK(cudaDeviceSynchronize());
      std::printf("ZOO_PROFILED {\"program\": \"%s\", \"kernel\": \"%s\", \"launches\": %d}\n",
                  prog_, kernel, profile_launches);
      std::fflush(stdout);
      return launches;
    }
    if (!ev0_) {
      CHECK(cudaEventCreate(&ev0_));
      CHECK(cudaEventCreate(&ev1_));
    }
    for (int w = 0; w < kWarmup; ++w)
      for (int b = 0; b < batch; ++b, ++launches) launch();
    CHECK(cudaDeviceSynchronize());

    std::vector<float> ms;
    ms.reserve(kRuns);
    for (int r = 0; r < kRuns; ++r) {
      flush_l2();  // enqueued before ev0_: the flush itself is not timed
      CHECK(cudaEventRecord(ev0_));
      for (int b = 0; b < batch; ++b, ++launches) launch();
      CHECK(cudaEventRecord(ev1_));
      CHECK(cudaEventSynchronize(ev1_));
      float t = 0.f;
      CHECK(cudaEventElapsedTime(&t, ev0_, ev1_));
      ms.push_back(t / float(batch));
    }
    CHECK(cudaDeviceSynchronize());
    std::vector<float> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const float median = sorted[kRuns / 2];  // kRuns is odd
    std::printf(
        "ZOO_RESULT {\"program\": \"%s\", \"kernel\": \"%s\", \"median_ms\": %.6f, "
        "\"min_ms\": %.6f, \"max_ms\": %.6f, \"runs\": %d, \"grid\": [%u, %u, %u], "
        "\"block\": [%u, %u, %u], \"dyn_smem\": %zu, \"launches_per_timing\": %d}\n",
        prog_, kernel, median, sorted.front(), sorted.back(), kRuns, grid.x, grid.y, grid.z,
        block.x, block.y, block.z, dyn_smem, batch);
    std::fflush(stdout);
    return launches;
  }

 private:
  const char* prog_;
  bool profile_ = false;
  cudaDeviceProp prop_{};
  void* scratch_ = nullptr;
  float* sink_ = nullptr;
  int flush_count_ = 0;
  cudaEvent_t ev0_ = nullptr, ev1_ = nullptr;
};

// ---------------------------------------------------------------------------------------
// Device helpers shared by several kernels.
// ---------------------------------------------------------------------------------------

// Shared-memory loads through inline PTX with `volatile`: the compiler must issue every
// load, even when it could prove the value is unchanged (which it otherwise hoists out of
// loops, destroying the intended shared-memory traffic).
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ float lds32(uint32_t addr) {
  float v;
  asm volatile("ld.volatile.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ float4 lds128(uint32_t addr) {
  float4 v;
  asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr));
  return v;
}

}  // namespace zoo
