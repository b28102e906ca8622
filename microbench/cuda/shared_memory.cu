// shared_memory.cu -- shared memory: bandwidth, load-to-use latency and bank-conflict cost.
//
// bandwidth (bench "shared", names bw_32/bw_64/bw_128): every SM runs the resident blocks
//   of 1024 threads (2 per SM: 64 warps) that each fill 32 KiB of shared memory and then read
//   it with ld.volatile.shared.{u32,v2.u32,v4.u32}: 16 loads per loop iteration at immediate
//   offsets, each a conflict-free warp access (lane l reads the l-th 4/8/16-byte word of a
//   128/256/512-byte row). Loaded words are summed and every thread's sum is checked on the
//   host (so no load can be dropped). Bytes per run / event time / SM clock (clock64 vs
//   %globaltimer of block 0) / SMs = B/clk/SM. 20 runs after 3 warm-up runs.
// latency (name "latency"): one thread chases a random cycle (Sattolo) of 2048 nodes in
//   shared memory, each node holding the shared address of the next (ld.volatile.shared.u32
//   %r, [%r]: nothing but the load on the dependency chain); 16 chunks of 1024 dependent
//   loads, clock64 around each chunk: cycles per load per chunk.
// bank conflicts (names conflict_tp_w<W>, conflict_lat_w<W>, W = 1..32): lane l of every warp
//   reads word (l / W) + 32 * (l % W) of a 4 KiB array: W lanes share each bank at W different
//   rows, a W-way conflict (W = 1: conflict-free). Throughput: one block of 32 warps per SM
//   (forced by a large dynamic shared-memory request), 16 independent loads per iteration,
//   cycles (clock64 of the block, between two barriers) per warp access = block cycles /
//   (32 warps x accesses per warp). Latency: one warp per SM, each load's address comes from
//   the previous load (each word holds its own address): cycles per dependent warp access.
//   One sample per block (one block per SM), over 2 launches after a warm-up launch.
#include "mb.h"

#include <numeric>
#include <utility>

constexpr int kBwThreads = 1024;
constexpr int kBwWords = 8192;  // 32 KiB per block
constexpr int kBwUnroll = 16;

template <int kVec, int kOffset>
__device__ __forceinline__ uint32_t lds_sum(uint32_t addr) {
  if constexpr (kVec == 1) {
    uint32_t a;
    asm volatile("ld.volatile.shared.u32 %0, [%1+%2];" : "=r"(a) : "r"(addr), "n"(kOffset));
    return a;
  } else if constexpr (kVec == 2) {
    uint32_t a, b;
    asm volatile("ld.volatile.shared.v2.u32 {%0,%1}, [%2+%3];" : "=r"(a), "=r"(b) : "r"(addr), "n"(kOffset));
    return a + b;
  } else {
    uint32_t a, b, c, d;
    asm volatile("ld.volatile.shared.v4.u32 {%0,%1,%2,%3}, [%4+%5];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                 : "r"(addr), "n"(kOffset));
    return (a + b) + (c + d);
  }
}

template <int kVec, int... U>
__device__ __forceinline__ uint32_t lds_rows(uint32_t addr, std::integer_sequence<int, U...>) {
  uint32_t acc = 0;
  ((acc += lds_sum<kVec, U * 32 * kVec * 4>(addr)), ...);
  return acc;
}

template <int kVec>  // 32-bit words per access: 1, 2, 4
__global__ void __launch_bounds__(kBwThreads) smem_bw_kernel(const uint32_t* __restrict__ init, int iters,
                                                             uint32_t* __restrict__ out, mb::ClockProbe* probe) {
  __shared__ __align__(16) uint32_t s[kBwWords];
  for (int i = threadIdx.x; i < kBwWords; i += blockDim.x) s[i] = init[i];
  __syncthreads();
  mb::probe_start(probe);
  constexpr int kRowWords = 32 * kVec;
  constexpr int kRows = kBwWords / kRowWords;  // 256, 128, 64: multiples of kBwUnroll
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row0 = (warp * kBwUnroll) % kRows;
  const uint32_t addr = mb::smem_addr(s + row0 * kRowWords + lane * kVec);
  uint32_t acc = 0;
  for (int it = 0; it < iters; ++it) acc += lds_rows<kVec>(addr, std::make_integer_sequence<int, kBwUnroll>{});
  out[blockIdx.x * size_t(blockDim.x) + threadIdx.x] = acc;
  mb::probe_end(probe);
}

constexpr int kLatNodes = 2048;
constexpr int kLatChunk = 1024;
constexpr int kLatChunks = 16;

__global__ void smem_latency_kernel(const uint32_t* __restrict__ next, unsigned long long* cycles, uint32_t* sink) {
  __shared__ uint32_t s[kLatNodes];
  const uint32_t base = mb::smem_addr(s);
  for (int i = threadIdx.x; i < kLatNodes; i += blockDim.x) s[i] = base + 4u * next[i];
  __syncthreads();
  if (threadIdx.x != 0) return;
  uint32_t p = base;
  for (int i = 0; i < kLatNodes; ++i) asm volatile("ld.volatile.shared.u32 %0, [%0];" : "+r"(p));
  for (int c = 0; c < kLatChunks; ++c) {
    const unsigned long long c0 = clock64();
#pragma unroll
    for (int i = 0; i < kLatChunk; ++i) asm volatile("ld.volatile.shared.u32 %0, [%0];" : "+r"(p));
    const unsigned long long c1 = clock64();
    cycles[c] = c1 - c0;
  }
  *sink = p - base;  // the host checks that the walk ended where the permutation says
}

constexpr int kConfWords = 1024;          // 32 rows x 32 banks
constexpr int kConfUnroll = 16;
constexpr size_t kConfDynSmem = 120 << 10;  // > half of an SM's shared memory: one block per SM

template <bool kChain>
__global__ void smem_conflict_kernel(int ways, int iters, unsigned long long* cycles, uint32_t* out, uint32_t* base_out) {
  extern __shared__ __align__(16) uint32_t dyn[];
  const uint32_t base = mb::smem_addr(dyn);
  for (int i = threadIdx.x; i < kConfWords; i += blockDim.x) dyn[i] = base + 4u * i;  // each word: its own address
  const int lane = threadIdx.x & 31;
  const uint32_t word = uint32_t(lane / ways) + 32u * uint32_t(lane % ways);
  uint32_t p = base + 4u * word, acc = 0;
  __syncthreads();
  const unsigned long long c0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < kConfUnroll; ++u) {
      if constexpr (kChain) {
        asm volatile("ld.volatile.shared.u32 %0, [%0];" : "+r"(p));
      } else {
        uint32_t v;
        asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(p));
        acc += v;
      }
    }
  }
  __syncthreads();
  const unsigned long long c1 = clock64();
  if (threadIdx.x == 0) {
    cycles[blockIdx.x] = c1 - c0;
    if (blockIdx.x == 0) *base_out = base;
  }
  out[blockIdx.x * size_t(blockDim.x) + threadIdx.x] = kChain ? p : acc;
}

int main() {
  mb::DeviceInfo dev = mb::device_info("shared_memory");
  mb::ClockProbe* probe;
  CHECK(cudaMalloc(&probe, sizeof(mb::ClockProbe)));
  mb::watch_probe(probe);  // each timed run's SM clock goes into its MB_RESULT

  // ---- bandwidth ----
  {
    std::vector<uint32_t> init(kBwWords);
    mb::Rng rng(mb::kSeed + 31);
    for (auto& w : init) w = uint32_t(rng.next() >> 40);  // < 2^24: never zero-heavy, sums do not wrap trivially
    uint32_t *d_init, *d_out;
    CHECK(cudaMalloc(&d_init, kBwWords * sizeof(uint32_t)));
    CHECK(cudaMemcpy(d_init, init.data(), kBwWords * sizeof(uint32_t), cudaMemcpyHostToDevice));
    const int bps = std::min({mb::blocks_per_sm(smem_bw_kernel<1>, kBwThreads), mb::blocks_per_sm(smem_bw_kernel<2>, kBwThreads),
                              mb::blocks_per_sm(smem_bw_kernel<4>, kBwThreads)});
    const int grid = dev.sms * bps;
    const size_t threads = size_t(grid) * kBwThreads;
    CHECK(cudaMalloc(&d_out, threads * sizeof(uint32_t)));
    std::vector<uint32_t> out(threads);
    auto run = [&](auto kernel, int vec) {
      const int iters = 2048 / vec;  // 128 KiB read per thread per run
      auto t = mb::time_runs([&] { kernel<<<grid, kBwThreads>>>(d_init, iters, d_out, probe); }, 3, 20);
      const double hz = mb::probe_hz(probe);
      CHECK(cudaMemcpy(out.data(), d_out, threads * sizeof(uint32_t), cudaMemcpyDeviceToHost));
      const int row_words = 32 * vec, rows = kBwWords / row_words;
      size_t bad = 0;
      for (size_t t_ = 0; t_ < threads; ++t_) {
        const int tid = int(t_ % kBwThreads), lane = tid & 31, warp = tid >> 5, row0 = (warp * kBwUnroll) % rows;
        uint32_t per_iter = 0;
        for (int u = 0; u < kBwUnroll; ++u)
          for (int j = 0; j < vec; ++j) per_iter += init[(row0 + u) * row_words + lane * vec + j];
        if (out[t_] != uint32_t(per_iter * uint32_t(iters))) ++bad;
      }
      if (bad) std::printf("CHECK_FAIL shared bw_%d: %zu of %zu thread sums differ from the host's\n", 32 * vec, bad, threads);
      const double bytes = double(threads) * iters * kBwUnroll * vec * 4.0;
      mb::result("shared", "bw_" + std::to_string(32 * vec), "bytes", bytes, t,
                 mb::Extra().num("vector_bits", 32 * vec).num("grid", grid).num("block", kBwThreads).num("blocks_per_sm", bps)
                     .num("sm_count", dev.sms).num("loads_per_thread", double(iters) * kBwUnroll)
                     .str("check", mb::check_word(bad == 0)).num("sm_clock_hz", hz));
    };
    run(smem_bw_kernel<1>, 1);
    run(smem_bw_kernel<2>, 2);
    run(smem_bw_kernel<4>, 4);
    CHECK(cudaFree(d_init));
    CHECK(cudaFree(d_out));
  }

  // ---- latency ----
  {
    std::vector<uint32_t> next(kLatNodes);
    std::iota(next.begin(), next.end(), 0u);
    mb::Rng rng(mb::kSeed + 32);
    for (int i = kLatNodes - 1; i > 0; --i) std::swap(next[i], next[rng.below(i)]);  // Sattolo: one cycle
    uint32_t *d_next, *d_sink;
    unsigned long long* d_cycles;
    CHECK(cudaMalloc(&d_next, kLatNodes * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_sink, sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_cycles, kLatChunks * sizeof(unsigned long long)));
    CHECK(cudaMemcpy(d_next, next.data(), kLatNodes * sizeof(uint32_t), cudaMemcpyHostToDevice));
    std::vector<unsigned long long> cyc(kLatChunks);
    auto t = mb::time_runs([&] { smem_latency_kernel<<<1, 256>>>(d_next, d_cycles, d_sink); }, 1, 3);
    CHECK(cudaMemcpy(cyc.data(), d_cycles, cyc.size() * sizeof(cyc[0]), cudaMemcpyDeviceToHost));
    uint32_t sink = 0;
    CHECK(cudaMemcpy(&sink, d_sink, sizeof sink, cudaMemcpyDeviceToHost));
    size_t expect = 0;  // node index after kLatNodes + kLatChunks * kLatChunk steps from node 0
    for (size_t i = 0; i < size_t(kLatNodes) + size_t(kLatChunks) * kLatChunk; ++i) expect = next[expect];
    const bool ok = sink == 4u * expect;
    if (!ok) std::printf("CHECK_FAIL shared latency: walk ended at byte %u, expected %zu\n", sink, 4 * expect);
    std::vector<double> cpl;
    for (auto c : cyc) cpl.push_back(double(c) / kLatChunk);
    mb::result("shared", "latency", "loads", double(kLatChunk), t,
               mb::Extra().num("nodes", kLatNodes).num("loads_per_chunk", kLatChunk).list("cycles_per_op", cpl)
                   .str("check", mb::check_word(ok)));
    CHECK(cudaFree(d_next));
    CHECK(cudaFree(d_sink));
    CHECK(cudaFree(d_cycles));
  }

  // ---- bank conflicts ----
  {
    CHECK(cudaFuncSetAttribute(smem_conflict_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kConfDynSmem)));
    CHECK(cudaFuncSetAttribute(smem_conflict_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kConfDynSmem)));
    const int grid = dev.sms;
    unsigned long long* d_cycles;
    uint32_t *d_out, *d_base;
    CHECK(cudaMalloc(&d_cycles, grid * sizeof(unsigned long long)));
    CHECK(cudaMalloc(&d_out, size_t(grid) * 1024 * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_base, sizeof(uint32_t)));
    std::vector<unsigned long long> cyc(grid);
    std::vector<uint32_t> out(size_t(grid) * 1024);
    for (int chain = 0; chain < 2; ++chain) {
      const int threads = chain ? 32 : 1024, iters = 64;
      for (int ways = 1; ways <= 32; ++ways) {
        std::vector<double> samples;
        auto launch = [&] {
          if (chain)
            smem_conflict_kernel<true><<<grid, threads, kConfDynSmem>>>(ways, iters, d_cycles, d_out, d_base);
          else
            smem_conflict_kernel<false><<<grid, threads, kConfDynSmem>>>(ways, iters, d_cycles, d_out, d_base);
        };
        const double accesses_per_block = double(threads / 32) * iters * kConfUnroll;  // warp accesses
        auto collect = [&] {
          CHECK(cudaMemcpy(cyc.data(), d_cycles, grid * sizeof(cyc[0]), cudaMemcpyDeviceToHost));
          for (auto c : cyc) samples.push_back(double(c) / accesses_per_block);
        };
        auto t = mb::time_runs_with(launch, collect, 1, 2);
        uint32_t base = 0;
        CHECK(cudaMemcpy(&base, d_base, sizeof base, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(out.data(), d_out, size_t(grid) * threads * sizeof(uint32_t), cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < size_t(grid) * threads; ++i) {
          const int lane = int(i % threads) & 31;
          const uint32_t addr = base + 4u * (uint32_t(lane / ways) + 32u * uint32_t(lane % ways));
          const uint32_t expect = chain ? addr : addr * uint32_t(iters * kConfUnroll);
          if (out[i] != expect) ++bad;
        }
        if (bad) std::printf("CHECK_FAIL shared conflict ways=%d chain=%d: %zu wrong\n", ways, chain, bad);
        mb::result("shared", std::string(chain ? "conflict_lat_w" : "conflict_tp_w") + std::to_string(ways), "accesses",
                   accesses_per_block, t,
                   mb::Extra().num("ways", ways).str("kind", chain ? "latency" : "throughput").num("warps_per_sm", threads / 32)
                       .num("block", threads).num("grid", grid).list("cycles_per_op", samples).str("check", mb::check_word(bad == 0)));
      }
    }
    CHECK(cudaFree(d_cycles));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_base));
  }
  CHECK(cudaFree(probe));
  return 0;
}
