// dram_bandwidth.cu -- achievable DRAM bandwidth: read (sum reduction), write, copy, triad.
//
// Buffers of 2 GiB each (>> L2), float4 accesses, grid = SMs x resident blocks of 512
// threads with grid-stride loops. Per kind: bytes moved per run and the times of 30 runs
// (after 5 warm-up runs), each bracketed by its own cudaEvent pair.
//
// Sweep (names <kind>_v<bits>_b<blocks>): read, write and copy with 32-, 64- and 128-bit
// accesses (float, float2, float4) at 1, 2, 4 and 8 resident blocks of 256 threads per SM
// (8 to 64 warps per SM; grid = SMs x blocks), 10 runs after 2 warm-ups each: how much
// parallelism (bytes in flight per SM) DRAM needs. The read sums are checked on the host.
#include "mb.h"

#include <cmath>

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

// ---- occupancy x vector-width sweep ----
template <typename V> __device__ __forceinline__ float vsum(V v);
template <> __device__ __forceinline__ float vsum<float>(float v) { return v; }
template <> __device__ __forceinline__ float vsum<float2>(float2 v) { return v.x + v.y; }
template <> __device__ __forceinline__ float vsum<float4>(float4 v) { return (v.x + v.y) + (v.z + v.w); }
template <typename V> __device__ __forceinline__ V vfill(float x);
template <> __device__ __forceinline__ float vfill<float>(float x) { return x; }
template <> __device__ __forceinline__ float2 vfill<float2>(float x) { return make_float2(x, x + 1.f); }
template <> __device__ __forceinline__ float4 vfill<float4>(float x) { return make_float4(x, x + 1.f, x + 2.f, x + 3.f); }

constexpr int kSweepThreads = 256;

template <typename V>
__global__ void __launch_bounds__(kSweepThreads) sweep_read(const V* __restrict__ a, size_t n, double* __restrict__ out, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  float s = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) s += vsum(a[i]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, double(s));
  mb::probe_end(probe);
}
template <typename V>
__global__ void __launch_bounds__(kSweepThreads) sweep_write(V* __restrict__ a, size_t n, float value, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  const V v = vfill<V>(value);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) a[i] = v;
  mb::probe_end(probe);
}
template <typename V>
__global__ void __launch_bounds__(kSweepThreads) sweep_copy(V* __restrict__ b, const V* __restrict__ a, size_t n, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) b[i] = a[i];
  mb::probe_end(probe);
}

template <typename V>
static void sweep(const mb::DeviceInfo& dev, float* a, float* b, double expected_sum, double* d_sum, mb::ClockProbe* probe) {
  const int bits = int(sizeof(V)) * 8;
  const size_t n = kBufferBytes / sizeof(V);
  const int max_bps = std::min({mb::blocks_per_sm(sweep_read<V>, kSweepThreads), mb::blocks_per_sm(sweep_write<V>, kSweepThreads),
                                mb::blocks_per_sm(sweep_copy<V>, kSweepThreads)});
  for (int bps : {1, 2, 4, 8}) {
    if (bps > max_bps) continue;
    const int grid = dev.sms * bps;
    for (int kind = 0; kind < 3; ++kind) {
      const char* kname = kind == 0 ? "read" : kind == 1 ? "write" : "copy";
      std::vector<double> t;
      bool ok = true;
      if (kind == 0) {
        CHECK(cudaMemset(d_sum, 0, sizeof(double)));
        t = mb::time_runs([&] { sweep_read<V><<<grid, kSweepThreads>>>(reinterpret_cast<const V*>(a), n, d_sum, probe); }, 2, 10);
        double sum = 0;
        CHECK(cudaMemcpy(&sum, d_sum, sizeof sum, cudaMemcpyDeviceToHost));
        ok = std::fabs(sum / 12.0 - expected_sum) <= 1e-3 * expected_sum;  // 12 launches summed
        if (!ok) std::printf("CHECK_FAIL dram %s_v%d_b%d: sum %.9g, expected %.9g\n", kname, bits, bps, sum / 12.0, expected_sum);
      } else if (kind == 1) {
        t = mb::time_runs([&] { sweep_write<V><<<grid, kSweepThreads>>>(reinterpret_cast<V*>(b), n, 2.5f, probe); }, 2, 10);
      } else {
        t = mb::time_runs([&] { sweep_copy<V><<<grid, kSweepThreads>>>(reinterpret_cast<V*>(b), reinterpret_cast<const V*>(a), n, probe); }, 2, 10);
        float h[4] = {0, 0, 0, 0}, w[4] = {0, 0, 0, 0};
        const size_t probe_at = n / 3 * (sizeof(V) / sizeof(float));
        CHECK(cudaMemcpy(h, b + probe_at, sizeof(V), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(w, a + probe_at, sizeof(V), cudaMemcpyDeviceToHost));
        ok = std::equal(h, h + sizeof(V) / sizeof(float), w);
        if (!ok) std::printf("CHECK_FAIL dram %s_v%d_b%d: copied data differ\n", kname, bits, bps);
      }
      const double bytes = (kind == 2 ? 2.0 : 1.0) * kBufferBytes;
      mb::result("dram", std::string(kname) + "_v" + std::to_string(bits) + "_b" + std::to_string(bps), "bytes", bytes, t,
                 mb::Extra().str("sweep", "occupancy_vector").str("kind", kname).num("vector_bits", bits).num("blocks_per_sm", bps)
                     .num("warps_per_sm", bps * kSweepThreads / 32).num("grid", grid).num("block", kSweepThreads)
                     .num("buffer_bytes", double(kBufferBytes)).str("check", mb::check_word(ok)).num("sm_clock_hz", mb::probe_hz(probe)));
    }
  }
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
  mb::watch_probe(probe);  // each timed run's SM clock goes into its MB_RESULT
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

  // sweep over occupancy and vector width: refill a (the triad above overwrote it)
  mb::fill(a, n, mb::kSeed + 1);
  double expected = 0.0;  // the host sum of a, from the fill generator
  for (size_t i = 0; i < n; ++i) expected += mb::uniform_at(mb::kSeed + 1, i);
  double* d_sum;
  CHECK(cudaMalloc(&d_sum, sizeof(double)));
  sweep<float>(dev, a, c, expected, d_sum, probe);
  sweep<float2>(dev, a, c, expected, d_sum, probe);
  sweep<float4>(dev, a, c, expected, d_sum, probe);
  CHECK(cudaFree(d_sum));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK(cudaFree(out));
  CHECK(cudaFree(probe));
  return 0;
}
