// pointer_chase.cu -- load-to-use latency vs footprint (L1, L2, DRAM, TLB) and the SM clock.
//
// ONE thread (block of one warp, only lane 0 chases) follows a random single-cycle
// permutation (Sattolo) of nodes 128 B apart (one node per cache line); each node holds the
// address of the next. Per footprint and load variant (ca: default ld.global, cached in L1;
// cg: __ldcg, L2 only): a warm-up pass over min(nodes, 2^20) loads, then 2^20 dependent loads
// (2^18 beyond 256 MiB) timed with clock64() in chunks of 2^14 loads; %globaltimer over the
// same run gives the SM clock actually run. Reported per footprint: cycles/load and ns/load
// per chunk, and the measured SM clock.
//
// TLB sweep (names tlb<stride>_<footprint>): the same chase (cg variant, L2 only) over nodes
// 2 MiB or 64 KiB apart, footprints from 32 MiB / 1 MiB up to the largest power of two that
// fits in free device memory (64 GiB on an H100, 128 GiB on an H200). The nodes (at most
// 2^16 cache lines) stay resident in L2, so the latency steps come from address translation
// alone: each step marks a TLB level whose reach (pages x page size) the footprint exceeds.
// Warm-up: one pass over all nodes; then 4 chunks of 2^14 dependent loads.
#include "mb.h"

#include <numeric>

constexpr size_t kStride = 128;  // bytes between nodes: one node per cache line
constexpr int kChunk = 1 << 14;

template <bool kCg>
__device__ __forceinline__ const unsigned long long* next_node(const unsigned long long* p) {
  if constexpr (kCg)
    return reinterpret_cast<const unsigned long long*>(__ldcg(p));
  else
    return reinterpret_cast<const unsigned long long*>(__ldca(p));
}

template <bool kCg>
__global__ void chase_kernel(const unsigned long long* start, int warmup, int chunks,
                             unsigned long long* cycles, unsigned long long* ns, unsigned long long* sink) {
  if (threadIdx.x != 0) return;
  const unsigned long long* p = start;
  for (int i = 0; i < warmup; ++i) p = next_node<kCg>(p);
  unsigned long long t_begin = mb::globaltimer_ns(), c_begin = clock64();
  for (int c = 0; c < chunks; ++c) {
    unsigned long long t0 = mb::globaltimer_ns(), c0 = clock64();
#pragma unroll 16
    for (int i = 0; i < kChunk; ++i) p = next_node<kCg>(p);
    // (the clock may be read while the chunk's last load is in flight: 1 load in 2^14)
    unsigned long long c1 = clock64();
    unsigned long long t1 = mb::globaltimer_ns();
    cycles[c] = c1 - c0;
    ns[c] = t1 - t0;
  }
  unsigned long long c_end = clock64(), t_end = mb::globaltimer_ns();
  cycles[chunks] = c_end - c_begin;
  ns[chunks] = t_end - t_begin;
  *sink = reinterpret_cast<unsigned long long>(p);
}

__global__ void link_kernel(unsigned long long* base, const uint32_t* next, size_t n, size_t stride_words = kStride / 8) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    base[i * stride_words] = reinterpret_cast<unsigned long long>(base + size_t(next[i]) * stride_words);
}

// One random single cycle (Sattolo) over n nodes, seeded by n.
static void sattolo(std::vector<uint32_t>& next, size_t n, uint64_t salt) {
  next.resize(n);
  std::iota(next.begin(), next.end(), 0u);
  mb::Rng rng(mb::kSeed + n + salt);
  for (size_t i = n - 1; i > 0; --i) std::swap(next[i], next[rng.below(i)]);
}

int main() {
  mb::DeviceInfo dev = mb::device_info("pointer_chase");
  const size_t kib = 1024, mib = kib * kib, gib = mib * kib;
  std::vector<size_t> footprints = {16 * kib, 32 * kib, 64 * kib, 128 * kib, 256 * kib, 512 * kib,
                                    1 * mib, 2 * mib, 4 * mib, 8 * mib, 16 * mib, 24 * mib, 32 * mib,
                                    48 * mib, 64 * mib, 128 * mib, 256 * mib, 512 * mib, 1 * gib,
                                    2 * gib, 3 * gib, 4 * gib};
  size_t free_b = 0, total_b = 0;
  CHECK(cudaMemGetInfo(&free_b, &total_b));
  size_t max_fp = 0;
  for (size_t f : footprints)
    if (f + f / 32 + (size_t(256) << 20) < free_b) max_fp = std::max(max_fp, f);
  unsigned long long* base;
  uint32_t* d_next;
  unsigned long long *d_cycles, *d_ns, *d_sink;
  const int max_chunks = (1 << 20) / kChunk;
  CHECK(cudaMalloc(&base, max_fp));
  CHECK(cudaMalloc(&d_next, max_fp / kStride * sizeof(uint32_t)));
  CHECK(cudaMalloc(&d_cycles, (max_chunks + 1) * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&d_ns, (max_chunks + 1) * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&d_sink, sizeof(unsigned long long)));
  std::vector<uint32_t> next;
  for (size_t fp : footprints) {
    if (fp > max_fp) {
      std::fprintf(stderr, "pointer_chase: skipping %zu B (does not fit in free device memory)\n", fp);
      continue;
    }
    const size_t n = fp / kStride;
    sattolo(next, n, 0);
    CHECK(cudaMemcpy(d_next, next.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    link_kernel<<<1024, 256>>>(base, d_next, n);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    const int loads = fp > 256 * mib ? (1 << 18) : (1 << 20);
    const int chunks = loads / kChunk;
    const int warmup = int(std::min<size_t>(n, size_t(1) << 20));
    for (int variant = 0; variant < 2; ++variant) {
      if (variant == 1 && fp > 256 * mib) continue;  // far beyond L2 both variants go to DRAM
      if (variant == 0)
        chase_kernel<false><<<1, 32>>>(base, warmup, chunks, d_cycles, d_ns, d_sink);
      else
        chase_kernel<true><<<1, 32>>>(base, warmup, chunks, d_cycles, d_ns, d_sink);
      CHECK_LAUNCH();
      CHECK(cudaDeviceSynchronize());
      std::vector<unsigned long long> cyc(chunks + 1), ns(chunks + 1);
      CHECK(cudaMemcpy(cyc.data(), d_cycles, cyc.size() * sizeof(cyc[0]), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(ns.data(), d_ns, ns.size() * sizeof(ns[0]), cudaMemcpyDeviceToHost));
      std::vector<double> cpl, npl, tms;
      for (int c = 0; c < chunks; ++c) {
        cpl.push_back(double(cyc[c]) / kChunk);
        npl.push_back(double(ns[c]) / kChunk);
        tms.push_back(double(ns[c]) * 1e-6);
      }
      const double hz = ns[chunks] ? double(cyc[chunks]) / (double(ns[chunks]) * 1e-9) : 0.0;
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
  CHECK(cudaFree(base));
  CHECK(cudaFree(d_next));

  // ---- TLB sweep: page-granular strides, nodes resident in L2 ----
  CHECK(cudaMemGetInfo(&free_b, &total_b));
  size_t tlb_max = size_t(1) << 30;
  while (tlb_max * 2 + (size_t(2) << 30) <= free_b) tlb_max *= 2;  // keep 2 GiB free
  unsigned long long* big;
  CHECK(cudaMalloc(&big, tlb_max));
  const size_t max_nodes = size_t(1) << 16;
  CHECK(cudaMalloc(&d_next, max_nodes * sizeof(uint32_t)));
  const int tlb_chunks = 4;
  for (size_t stride : {2 * mib, 64 * kib}) {
    for (size_t fp = (stride == 2 * mib ? 32 * mib : 1 * mib); fp <= tlb_max; fp *= 2) {
      const size_t n = fp / stride;
      if (n > max_nodes) break;
      sattolo(next, n, stride);
      CHECK(cudaMemcpy(d_next, next.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
      link_kernel<<<256, 256>>>(big, d_next, n, stride / 8);
      CHECK_LAUNCH();
      CHECK(cudaDeviceSynchronize());
      chase_kernel<true><<<1, 32>>>(big, int(n), tlb_chunks, d_cycles, d_ns, d_sink);
      CHECK_LAUNCH();
      CHECK(cudaDeviceSynchronize());
      std::vector<unsigned long long> cyc(tlb_chunks + 1), ns(tlb_chunks + 1);
      CHECK(cudaMemcpy(cyc.data(), d_cycles, cyc.size() * sizeof(cyc[0]), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(ns.data(), d_ns, ns.size() * sizeof(ns[0]), cudaMemcpyDeviceToHost));
      // the walk must end on the node the permutation says (n + chunks x kChunk steps from node 0)
      unsigned long long sink = 0;
      CHECK(cudaMemcpy(&sink, d_sink, sizeof sink, cudaMemcpyDeviceToHost));
      size_t node = 0;
      for (size_t i = 0; i < n + size_t(tlb_chunks) * kChunk; ++i) node = next[node];
      const bool ok = sink == reinterpret_cast<unsigned long long>(big) + node * stride;
      if (!ok) std::printf("CHECK_FAIL latency tlb %zu/%zu: the chase ended on the wrong node\n", stride, fp);
      std::vector<double> cpl, npl, tms;
      for (int c = 0; c < tlb_chunks; ++c) {
        cpl.push_back(double(cyc[c]) / kChunk);
        npl.push_back(double(ns[c]) / kChunk);
        tms.push_back(double(ns[c]) * 1e-6);
      }
      const double hz = ns[tlb_chunks] ? double(cyc[tlb_chunks]) / (double(ns[tlb_chunks]) * 1e-9) : 0.0;
      mb::result("latency", "tlb" + std::to_string(stride) + "_" + std::to_string(fp), "loads", double(kChunk), tms,
                 mb::Extra().num("footprint_bytes", double(fp)).num("stride_bytes", double(stride)).str("variant", "cg")
                     .str("sweep", "tlb").num("nodes", double(n)).num("loads_per_chunk", kChunk).num("warmup_loads", double(n))
                     .list("cycles_per_load", cpl).list("ns_per_load", npl).str("check", mb::check_word(ok)).num("sm_clock_hz", hz));
    }
  }
  CHECK(cudaFree(big));
  CHECK(cudaFree(d_next));
  CHECK(cudaFree(d_cycles));
  CHECK(cudaFree(d_ns));
  CHECK(cudaFree(d_sink));
  return 0;
}
