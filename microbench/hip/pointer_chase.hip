// pointer_chase.hip -- load-to-use latency vs footprint (vL1D, L2, Infinity Cache on CDNA3,
// HBM, TLB) and the core clock.
//
// ONE lane (a block of one wave, only lane 0 chases) follows a random single-cycle permutation
// (Sattolo) of nodes 128 B apart (one node per L2 line); each node holds the address of the
// next. Per footprint and load variant:
//   ca: an ordinary global load (may hit the vector L1 cache, 16 KB on CDNA2, 32 KB on CDNA3);
//   cg: a relaxed atomic load at agent scope, which the compiler emits with the cache bits that
//       skip the non-coherent L1 (glc on gfx90a, sc1 on gfx942): an L2 access on CDNA2. On CDNA3
//       each XCD has its own L2 and device-scope coherence may look past it, so the runner
//       (microbench/amd.py) takes the CDNA3 L2 latency from 'ca' at footprints >= 8x the L1.
// A warm-up pass over min(nodes, 2^20) loads, then 2^20 dependent loads (2^18 beyond 256 MiB)
// timed with clock64() (s_memtime) in chunks of 2^14 loads; wall_clock64() over the same chunks
// gives the time and so the clock actually run. Reported per footprint: cycles/load and ns/load
// per chunk, and the measured clock. Check: the node reached after every run equals the host's
// walk of the same permutation.
#include "mb_hip.h"

#include <numeric>

constexpr size_t kStride = 128;  // bytes between nodes
constexpr int kChunk = 1 << 14;

template <bool kCg>
__device__ __forceinline__ const unsigned long long* next_node(const unsigned long long* p) {
  if constexpr (kCg)
    return reinterpret_cast<const unsigned long long*>(__hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT));
  else
    return reinterpret_cast<const unsigned long long*>(*p);
}

template <bool kCg>
__global__ void chase_kernel(const unsigned long long* start, int warmup, int chunks, unsigned long long* cyc,
                             unsigned long long* wall, unsigned long long* last) {
  if (threadIdx.x != 0) return;
  const unsigned long long* p = start;
  for (int i = 0; i < warmup; ++i) p = next_node<kCg>(p);
  const uint64_t w_begin = mb::wall_ticks(), c_begin = mb::cycles();
  for (int c = 0; c < chunks; ++c) {
    const uint64_t w0 = mb::wall_ticks(), c0 = mb::cycles();
#pragma unroll 16
    for (int i = 0; i < kChunk; ++i) p = next_node<kCg>(p);
    // the loop's last load is complete: the next address depends on it
    const uint64_t c1 = mb::cycles(), w1 = mb::wall_ticks();
    cyc[c] = c1 - c0;
    wall[c] = w1 - w0;
  }
  const uint64_t c_end = mb::cycles(), w_end = mb::wall_ticks();
  cyc[chunks] = c_end - c_begin;
  wall[chunks] = w_end - w_begin;
  *last = reinterpret_cast<unsigned long long>(p);
}

__global__ void link_kernel(unsigned long long* base, const uint32_t* next, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    base[i * (kStride / 8)] = reinterpret_cast<unsigned long long>(base + size_t(next[i]) * (kStride / 8));
}

int main() {
  mb::DeviceInfo dev = mb::device_info("pointer_chase");
  const size_t kib = 1024, mib = kib * kib, gib = mib * kib;
  const std::vector<size_t> footprints = {
      4 * kib,   8 * kib,   16 * kib,  32 * kib,  64 * kib,  128 * kib, 256 * kib, 512 * kib, 1 * mib,
      2 * mib,   3 * mib,   4 * mib,   6 * mib,   8 * mib,   16 * mib,  32 * mib,  64 * mib,  96 * mib,
      128 * mib, 192 * mib, 256 * mib, 384 * mib, 512 * mib, 1 * gib,   2 * gib,   3 * gib,   4 * gib};
  size_t free_b = 0, total_b = 0;
  HIP_CHECK(hipMemGetInfo(&free_b, &total_b));
  size_t max_fp = 0;
  for (size_t f : footprints)
    if (f + f / 32 + (size_t(512) << 20) < free_b) max_fp = std::max(max_fp, f);
  unsigned long long *base, *d_cyc, *d_wall, *d_last;
  uint32_t* d_next;
  const int max_chunks = (1 << 20) / kChunk;
  HIP_CHECK(hipMalloc(&base, max_fp));
  HIP_CHECK(hipMalloc(&d_next, max_fp / kStride * sizeof(uint32_t)));
  HIP_CHECK(hipMalloc(&d_cyc, (max_chunks + 1) * sizeof(unsigned long long)));
  HIP_CHECK(hipMalloc(&d_wall, (max_chunks + 1) * sizeof(unsigned long long)));
  HIP_CHECK(hipMalloc(&d_last, sizeof(unsigned long long)));
  const double wall_hz = dev.timers.wall_hz;
  std::vector<uint32_t> next;
  for (size_t fp : footprints) {
    if (fp > max_fp) {
      std::fprintf(stderr, "pointer_chase: skipping %zu B (does not fit in free device memory)\n", fp);
      continue;
    }
    const size_t n = fp / kStride;
    next.resize(n);
    std::iota(next.begin(), next.end(), 0u);
    mb::Rng rng(mb::kSeed + n);
    for (size_t i = n - 1; i > 0; --i) std::swap(next[i], next[rng.below(i)]);  // Sattolo: one cycle
    HIP_CHECK(hipMemcpy(d_next, next.data(), n * sizeof(uint32_t), hipMemcpyHostToDevice));
    hipLaunchKernelGGL(link_kernel, dim3(1024), dim3(256), 0, 0, base, d_next, n);
    CHECK_LAUNCH();
    HIP_CHECK(hipDeviceSynchronize());
    const int loads = fp > 256 * mib ? (1 << 18) : (1 << 20);
    const int chunks = loads / kChunk;
    const int warmup = int(std::min<size_t>(n, size_t(1) << 20));
    // where the walk must end: node (warmup + loads) mod n steps after node 0
    size_t want = 0;
    for (size_t s = 0, steps = (size_t(warmup) + size_t(loads)) % n; s < steps; ++s) want = next[want];
    for (int variant = 0; variant < 2; ++variant) {
      if (variant == 1 && fp > 256 * mib) continue;  // far beyond every cache both variants go to HBM
      if (variant == 0)
        hipLaunchKernelGGL(chase_kernel<false>, dim3(1), dim3(64), 0, 0, base, warmup, chunks, d_cyc, d_wall, d_last);
      else
        hipLaunchKernelGGL(chase_kernel<true>, dim3(1), dim3(64), 0, 0, base, warmup, chunks, d_cyc, d_wall, d_last);
      CHECK_LAUNCH();
      HIP_CHECK(hipDeviceSynchronize());
      unsigned long long last = 0;
      HIP_CHECK(hipMemcpy(&last, d_last, sizeof last, hipMemcpyDeviceToHost));
      if (last != reinterpret_cast<unsigned long long>(base + want * (kStride / 8))) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "footprint %zu B: the chase ended on the wrong node", fp);
        mb::check_fail(buf);
      }
      std::vector<unsigned long long> cyc(chunks + 1), wall(chunks + 1);
      HIP_CHECK(hipMemcpy(cyc.data(), d_cyc, cyc.size() * sizeof(cyc[0]), hipMemcpyDeviceToHost));
      HIP_CHECK(hipMemcpy(wall.data(), d_wall, wall.size() * sizeof(wall[0]), hipMemcpyDeviceToHost));
      std::vector<double> cpl, npl, tms;
      for (int c = 0; c < chunks; ++c) {
        const double ns = double(wall[c]) / wall_hz * 1e9;
        cpl.push_back(double(cyc[c]) / kChunk);
        npl.push_back(ns / kChunk);
        tms.push_back(ns * 1e-6);
      }
      const double hz = wall[chunks] ? double(cyc[chunks]) / (double(wall[chunks]) / wall_hz) : 0.0;
      std::string extra = "\"footprint_bytes\":" + std::to_string(fp) + ",\"stride_bytes\":" + std::to_string(kStride) +
                          ",\"variant\":\"" + (variant ? "cg" : "ca") + "\",\"loads_per_chunk\":" +
                          std::to_string(kChunk) + ",\"warmup_loads\":" + std::to_string(warmup) +
                          ",\"cycles_per_load\":" + mb::json_list(cpl) + ",\"ns_per_load\":" + mb::json_list(npl);
      char buf[64];
      std::snprintf(buf, sizeof buf, ",\"sm_clock_hz\":%.6g", hz);
      extra += buf;
      mb::result("latency", std::string(variant ? "cg_" : "ca_") + std::to_string(fp), "loads", double(kChunk), tms,
                 extra);
    }
  }
  HIP_CHECK(hipFree(base));
  HIP_CHECK(hipFree(d_next));
  HIP_CHECK(hipFree(d_cyc));
  HIP_CHECK(hipFree(d_wall));
  HIP_CHECK(hipFree(d_last));
  return 0;
}
