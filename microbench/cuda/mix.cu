// mix.cu -- arithmetic-intensity sweep (in the manner of mixbench): a streaming kernel that
// loads a float, applies N fused multiply-adds to it, and stores it, for N = 0, 1, 2, 4, ...,
// 512 (one kernel per N, N a compile-time constant so the FMAs are fully unrolled).
//
// Each thread handles float4 elements in a grid-stride loop: the 4 lanes of a float4 are 4
// independent FMA chains (x = x * a + b), and 64 warps per SM give the rest of the
// parallelism. Arrays of 512 MiB in and 512 MiB out (far beyond L2). Per N: bytes moved
// (4 read + 4 written per element), flops (2 N per element), and 20 run times after 3 warm-up
// runs, with the SM clock of the run. No parameter is derived from this sweep: it records
// how time moves from the memory bound to the FMA bound.
// Check: a sample of output elements is recomputed on the host with the same fmaf chain
// (bit-exact).
#include "mb.h"

#include <cmath>
#include <utility>

constexpr int kThreads = 256;
constexpr size_t kElems = size_t(128) << 20;  // 128 Mi floats = 512 MiB per array
constexpr float kA = 0.9999f, kB = 1.0e-4f;

template <int N>
__global__ void __launch_bounds__(kThreads) mix_kernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n4, float a,
                                                       float b, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) {
    float4 v = in[i];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      v.x = fmaf(v.x, a, b);
      v.y = fmaf(v.y, a, b);
      v.z = fmaf(v.z, a, b);
      v.w = fmaf(v.w, a, b);
    }
    out[i] = v;
  }
  mb::probe_end(probe);
}

template <int N>
static void run_mix(const mb::DeviceInfo& dev, const float* in, float* out, const std::vector<size_t>& sample,
                    const std::vector<float>& sample_in, mb::ClockProbe* probe) {
  const int grid = dev.sms * mb::blocks_per_sm(mix_kernel<N>, kThreads);
  const size_t n4 = kElems / 4;
  auto t = mb::time_runs([&] {
    mix_kernel<N><<<grid, kThreads>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out), n4, kA, kB, probe);
  }, 3, 20);
  const double hz = mb::probe_hz(probe);
  size_t bad = 0;
  for (size_t s = 0; s < sample.size(); ++s) {
    float x = sample_in[s], got = 0.f;
    for (int k = 0; k < N; ++k) x = std::fmaf(x, kA, kB);
    CHECK(cudaMemcpy(&got, out + sample[s], sizeof got, cudaMemcpyDeviceToHost));
    if (got != x) ++bad;
  }
  if (bad) std::printf("CHECK_FAIL mix N=%d: %zu of %zu sampled elements differ from the host\n", N, bad, sample.size());
  const double bytes = 8.0 * kElems, flops = 2.0 * N * kElems;
  mb::result("mix", "fma" + std::to_string(N), "bytes", bytes, t,
             mb::Extra().num("fma_per_element", N).num("flops", flops).num("elements", double(kElems))
                 .num("flops_per_byte", flops / bytes).num("grid", grid).num("block", kThreads).str("access", "float4")
                 .str("check", mb::check_word(bad == 0)).num("sm_clock_hz", hz));
}

template <int... Ns>
static void run_all(const mb::DeviceInfo& dev, const float* in, float* out, const std::vector<size_t>& sample,
                    const std::vector<float>& sample_in, mb::ClockProbe* probe, std::integer_sequence<int, Ns...>) {
  (run_mix<Ns>(dev, in, out, sample, sample_in, probe), ...);
}

int main() {
  mb::DeviceInfo dev = mb::device_info("mix");
  float *in, *out;
  mb::ClockProbe* probe;
  CHECK(cudaMalloc(&in, kElems * sizeof(float)));
  CHECK(cudaMalloc(&out, kElems * sizeof(float)));
  CHECK(cudaMalloc(&probe, sizeof(mb::ClockProbe)));
  mb::watch_probe(probe);  // each timed run's SM clock goes into its MB_RESULT
  mb::fill(in, kElems, mb::kSeed + 61);
  std::vector<size_t> sample;
  std::vector<float> sample_in;
  mb::Rng rng(mb::kSeed + 62);
  for (int i = 0; i < 256; ++i) {
    sample.push_back(size_t(rng.below(kElems)));
    sample_in.push_back(mb::uniform_at(mb::kSeed + 61, sample.back()));
  }
  run_all(dev, in, out, sample, sample_in, probe, std::integer_sequence<int, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512>{});
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  CHECK(cudaFree(probe));
  return 0;
}
