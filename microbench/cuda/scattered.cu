// scattered.cu -- partial-sector accesses: 4-byte loads and 4-byte stores, every one to its own
// 32-byte sector, in a random order, at a footprint inside L2 (16 MiB) and far beyond it (2 GiB).
//
// The footprint holds S = footprint / 32 sectors (a power of two). Access j (j = 0 .. passes x S
// - 1) touches word 0 of sector perm(j mod S), where perm is a fixed pseudo-random bijection of
// [0, S) (odd multiply, xor-shift, odd multiply, all mod S, in 32-bit arithmetic): consecutive lanes of a warp land
// on unrelated sectors, and each pass touches every sector exactly once. Whole grid (blocks of
// 512 threads, as many as fit), grid-stride loop unrolled 8 deep so that 8 independent
// accesses per thread are in flight. Loads use ld.global.cg (L2 only, no L1 allocation);
// stores are plain st.global (L2 is write-back; a partial sector written past L2 costs a
// read-modify-write of the sector when ECC protects DRAM).
// Reported per case: sectors per run (= accesses) and 30 run times after 5 warm-ups, SM clock
// of the run: sectors per clock for the whole GPU.
// Checks: loads -- the sum of all loaded values equals passes x the sum over all sectors'
// word 0 (computed on the host from the fill generator) within 0.1%; stores --
// 4096 random sectors hold the stored value in word 0 and still the fill value in word 1
// (a partial write must not clobber the rest of its sector).
#include "mb.h"

#include <cmath>

constexpr int kThreads = 512, kUnroll = 8;

// a bijection of [0, 2^bits) (bits <= 32): odd multiplies and a xor-shift, all mod 2^bits
__host__ __device__ inline uint32_t perm(uint32_t j, uint32_t mask, int bits) {
  j = (j * 0x9E3779B1u) & mask;
  j ^= j >> (bits / 2 + 1);
  j = (j * 0x85EBCA6Bu) & mask;
  return j;
}

// accesses < 2^32 (checked on the host)
__global__ void __launch_bounds__(kThreads) scatter_load_kernel(const float* __restrict__ a, uint32_t accesses, uint32_t mask,
                                                                int bits, float* __restrict__ partial, mb::ClockProbe* probe) {
  mb::probe_start(probe);
  const uint32_t stride = gridDim.x * blockDim.x;
  float s = 0.f;
  for (uint32_t j0 = blockIdx.x * blockDim.x + threadIdx.x; j0 < accesses; j0 += stride * kUnroll) {
    float v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint32_t j = j0 + u * stride;
      v[u] = j < accesses ? __ldcg(a + size_t(perm(j & mask, mask, bits)) * 8) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) s += v[u];
  }
  partial[blockIdx.x * size_t(blockDim.x) + threadIdx.x] = s;
  mb::probe_end(probe);
}

__global__ void __launch_bounds__(kThreads) scatter_store_kernel(float* __restrict__ a, uint32_t accesses, uint32_t mask, int bits,
                                                                 mb::ClockProbe* probe) {
  mb::probe_start(probe);
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t j0 = blockIdx.x * blockDim.x + threadIdx.x; j0 < accesses; j0 += stride * kUnroll) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint32_t j = j0 + u * stride;
      if (j < accesses) {
        const uint32_t sector = perm(j & mask, mask, bits);
        a[size_t(sector) * 8] = float(sector & 0xFFFF) + 0.25f;  // the value depends on the sector only
      }
    }
  }
  mb::probe_end(probe);
}

int main() {
  mb::DeviceInfo dev = mb::device_info("scattered");
  const size_t mib = size_t(1) << 20;
  struct Case {
    const char* level;
    size_t bytes;
    int passes;
  };
  // passes: about 2^28 sectors per run in L2 (~1-2 ms), one pass of 2^26 sectors from DRAM
  const Case cases[] = {{"l2", 16 * mib, 512}, {"dram", 2048 * mib, 1}};
  size_t max_bytes = 0;
  for (const Case& c : cases) max_bytes = std::max(max_bytes, c.bytes);
  float *a, *partial;
  mb::ClockProbe* probe;
  CHECK(cudaMalloc(&a, max_bytes));
  CHECK(cudaMalloc(&probe, sizeof(mb::ClockProbe)));
  mb::watch_probe(probe);  // each timed run's SM clock goes into its MB_RESULT
  const int grid = dev.sms * std::min(mb::blocks_per_sm(scatter_load_kernel, kThreads), mb::blocks_per_sm(scatter_store_kernel, kThreads));
  const size_t threads = size_t(grid) * kThreads;
  CHECK(cudaMalloc(&partial, threads * sizeof(float)));
  std::vector<float> h_partial(threads);
  for (const Case& c : cases) {
    const uint64_t sectors = c.bytes / 32, mask = sectors - 1;
    int bits = 0;
    while ((uint64_t(1) << bits) < sectors) ++bits;
    const uint64_t accesses = sectors * uint64_t(c.passes);
    if (accesses + threads * kUnroll >= (uint64_t(1) << 32)) {
      std::fprintf(stderr, "scattered: %s case needs 64-bit indices\n", c.level);
      return 1;
    }
    const uint64_t seed = mb::kSeed + 51 + bits;
    mb::fill(a, c.bytes / sizeof(float), seed);
    // ---- loads ----
    auto t = mb::time_runs([&] { scatter_load_kernel<<<grid, kThreads>>>(a, uint32_t(accesses), uint32_t(mask), bits, partial, probe); });
    double hz = mb::probe_hz(probe);
    CHECK(cudaMemcpy(h_partial.data(), partial, threads * sizeof(float), cudaMemcpyDeviceToHost));
    double got = 0.0, want = 0.0;
    for (float p : h_partial) got += p;
    for (uint64_t s = 0; s < sectors; ++s) want += mb::uniform_at(seed, s * 8);
    want *= c.passes;
    const bool load_ok = std::fabs(got - want) <= 1e-3 * want;  // float partial sums: ~1e-5 expected
    if (!load_ok) std::printf("CHECK_FAIL scattered %s load: sum %.9g, expected %.9g\n", c.level, got, want);
    mb::Extra common;
    common.num("footprint_bytes", double(c.bytes)).num("footprint_sectors", double(sectors)).num("passes", c.passes).num("grid", grid)
        .num("block", kThreads).num("access_bytes", 4).num("sector_bytes", 32);
    mb::result("scattered", std::string(c.level) + "_load", "sectors", double(accesses), t,
               mb::Extra(common).str("level", c.level).str("kind", "load").str("instruction", "ld.global.cg.f32")
                   .str("check", mb::check_word(load_ok)).num("sm_clock_hz", hz));
    // ---- stores ----
    t = mb::time_runs([&] { scatter_store_kernel<<<grid, kThreads>>>(a, uint32_t(accesses), uint32_t(mask), bits, probe); });
    hz = mb::probe_hz(probe);
    CHECK(cudaDeviceSynchronize());
    mb::Rng rng(seed);
    size_t bad = 0;
    for (int i = 0; i < 4096; ++i) {
      const uint64_t s = rng.below(sectors);
      float w[2];
      CHECK(cudaMemcpy(w, a + s * 8, sizeof w, cudaMemcpyDeviceToHost));
      if (w[0] != float(s & 0xFFFF) + 0.25f || w[1] != mb::uniform_at(seed, s * 8 + 1)) ++bad;
    }
    if (bad) std::printf("CHECK_FAIL scattered %s store: %zu of 4096 sampled sectors wrong\n", c.level, bad);
    mb::result("scattered", std::string(c.level) + "_store", "sectors", double(accesses), t,
               mb::Extra(common).str("level", c.level).str("kind", "store").str("instruction", "st.global.f32")
                   .str("check", mb::check_word(bad == 0)).num("sm_clock_hz", hz));
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(partial));
  CHECK(cudaFree(probe));
  return 0;
}
