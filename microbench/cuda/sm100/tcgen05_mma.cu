// tcgen05_mma.cu -- Blackwell (sm_100a) fifth-generation tensor cores: tcgen05.mma with the
// accumulator in tensor memory (TMEM), operands brought into shared memory by the TMA engine
// (cp.async.bulk.tensor). Built and run only on compute capability 10.x (the runner skips it
// elsewhere); every sm_100a instruction sits under __CUDA_ARCH_FEAT_SM100_ALL.
//
// Per block (one per SM, 128 threads = 4 warps):
//   1. warp 0 allocates 256 TMEM columns (tcgen05.alloc, address written to shared memory);
//   2. thread 0 loads A (128x16) and B^T (256x16, K-major) with four 2-D bulk tensor copies
//      (box 8 K-elements x rows: each 8-row group lands as one 128-byte core matrix, the K
//      halves one box apart), completing on an mbarrier with expect_tx;
//   3. thread 0 issues `iters` tcgen05.mma.cta_group::1.kind::f16 (M=128, N=256, K=16, fp32
//      accumulate in TMEM; no swizzle, K-major shared-memory descriptors), the first one
//      without accumulation, then tcgen05.commit to a second mbarrier; everyone waits on it;
//   4. each warp reads its 32 TMEM lanes (rows) with tcgen05.ld.32x32b.x16 (16 columns a
//      call), block 0 writes its 128x256 tile; warp 0 frees the TMEM.
// 2 x 128 x 256 x 16 flops per instruction; 10 runs after 2 warm-ups, events and the SM
// clock of the run (clock64 vs %globaltimer): flops per clock per SM.
// Correctness: inputs are random integers in {-2,-1,1,2}, so the fp32 result is exact: the
// whole tile must equal iters x A.B computed on the host. As in tensor.cu, a one-instruction
// run first checks the descriptors' LBO (K direction) / SBO (M/N direction) reading, then the
// swapped pair; the result says which held.
#include "../mb.h"

#include <cuda.h>
#include <cudaTypedefs.h>

constexpr int kM = 128, kN = 256, kK = 16, kThreads = 128;
constexpr uint32_t kTmemCols = 256;  // fp32 accumulator: one column per N
constexpr uint16_t kF16[4] = {0xC000, 0xBC00, 0x3C00, 0x4000};
constexpr uint16_t kBF16[4] = {0xC000, 0xBF80, 0x3F80, 0x4000};
constexpr int kIntVal[4] = {-2, -1, 1, 2};

// Instruction descriptor (kind::f16): D fp32 (bits 4-5 = 1), A/B format (bits 7-9, 10-12:
// 0 = f16, 1 = bf16), both K-major (bits 15, 16 = 0), N >> 3 at bits 17-22, M >> 4 at 24-28.
__host__ __device__ constexpr uint32_t instr_desc(bool bf16) {
  return (1u << 4) | (uint32_t(bf16) << 7) | (uint32_t(bf16) << 10) | (uint32_t(kN >> 3) << 17) | (uint32_t(kM >> 4) << 24);
}

#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
// Shared-memory matrix descriptor (sm_100): start >> 4 (bits 0-13), LBO >> 4 (16-29),
// SBO >> 4 (32-45), version 1 (bits 46-47), base offset 0, swizzle none (bits 61-63 = 0).
__device__ inline uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t((lbo & 0x3FFFF) >> 4) << 16) | (uint64_t((sbo & 0x3FFFF) >> 4) << 32) |
         (uint64_t(1) << 46);
}
__device__ inline void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mb::smem_addr(bar)), "r"(count) : "memory");
}
__device__ inline void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mb::smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ inline void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred done;\n"
      "wait_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra wait_%=;\n}\n" ::"r"(mb::smem_addr(bar)),
      "r"(parity)
      : "memory");
}
__device__ inline void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          mb::smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(mb::smem_addr(bar))
      : "memory");
}
__device__ inline void tmem_ld16(uint32_t taddr, float (&v)[16]) {
  uint32_t r[16];
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, [%16];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]),
        "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15])
      : "r"(taddr));
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#pragma unroll
  for (int i = 0; i < 16; ++i) v[i] = __uint_as_float(r[i]);
}
#endif

template <bool kBf16>
__global__ void __launch_bounds__(kThreads, 1)
    tcgen05_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int iters, uint32_t lbo_a,
                   uint32_t lbo_b, uint32_t sbo, int swap, float* __restrict__ tile, float* __restrict__ sink, mb::ClockProbe* probe) {
#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
  __shared__ __align__(1024) uint16_t sa[kM * kK];  // 4 KiB: two boxes of 128 rows x 16 B
  __shared__ __align__(1024) uint16_t sb[kN * kK];  // 8 KiB: two boxes of 256 rows x 16 B
  __shared__ __align__(8) uint64_t bar_tma, bar_mma;
  __shared__ uint32_t tmem_base;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    mbar_init(&bar_tma, 1);
    mbar_init(&bar_mma, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (warp == 0) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(mb::smem_addr(&tmem_base)), "r"(kTmemCols)
                 : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
  }
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
  const uint32_t tmem = tmem_base;
  if (threadIdx.x == 0) {
    mbar_expect_tx(&bar_tma, uint32_t((kM + kN) * kK * sizeof(uint16_t)));
    tma_load_2d(sa, &map_a, 0, 0, &bar_tma);
    tma_load_2d(sa + kM * 8, &map_a, 8, 0, &bar_tma);
    tma_load_2d(sb, &map_b, 0, 0, &bar_tma);
    tma_load_2d(sb + kN * 8, &map_b, 8, 0, &bar_tma);
  }
  mbar_wait(&bar_tma, 0);
  mb::probe_start(probe);
  if (threadIdx.x == 0) {
    // documented reading: LBO = next core matrix along K (one TMA box), SBO = next 8-row group
    const uint64_t da = swap ? smem_desc(mb::smem_addr(sa), sbo, lbo_a) : smem_desc(mb::smem_addr(sa), lbo_a, sbo);
    const uint64_t db = swap ? smem_desc(mb::smem_addr(sb), sbo, lbo_b) : smem_desc(mb::smem_addr(sb), lbo_b, sbo);
    const uint32_t idesc = instr_desc(kBf16);
    for (int it = 0; it < iters; ++it) {
      asm volatile(
          "{\n .reg .pred acc;\n setp.ne.b32 acc, %4, 0;\n"
          " tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, acc;\n}\n" ::"r"(tmem),
          "l"(da), "l"(db), "r"(idesc), "r"(it)
          : "memory");
    }
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(mb::smem_addr(&bar_mma))
                 : "memory");
  }
  mbar_wait(&bar_mma, 0);
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
  mb::probe_end(probe);
  // warp w reads TMEM lanes 32w..32w+31 = rows of D; 16 columns per load
  float s = 0.f;
  for (int c = 0; c < kN; c += 16) {
    float v[16];
    tmem_ld16(tmem + (uint32_t(32 * warp) << 16) + uint32_t(c), v);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      s += v[i];
      if (blockIdx.x == 0) tile[size_t(32 * warp + lane) * kN + c + i] = v[i];
    }
  }
  sink[blockIdx.x * size_t(blockDim.x) + threadIdx.x] = s;
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
  __syncthreads();
  if (warp == 0) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(tmem), "r"(kTmemCols) : "memory");
#else
  if (threadIdx.x == 0 && blockIdx.x == 0) printf("tcgen05_kernel: not compiled for sm_100a\n");
  __trap();
#endif
}

static PFN_cuTensorMapEncodeTiled_v12000 get_encode() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || !fn) {
    std::fprintf(stderr, "tcgen05_mma: cuTensorMapEncodeTiled not available\n");
    std::exit(1);
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

// rows x 16 fp16/bf16, K contiguous; box: 8 K-elements (16 B) x rows
static CUtensorMap make_map(PFN_cuTensorMapEncodeTiled_v12000 encode, void* gmem, int rows) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(kK), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(kK) * 2};
  const cuuint32_t box[2] = {8, cuuint32_t(rows)};
  const cuuint32_t elem[2] = {1, 1};
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, gmem, dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "tcgen05_mma: cuTensorMapEncodeTiled failed (%d)\n", int(r));
    std::exit(1);
  }
  return map;
}

template <bool kBf16>
static void run(const mb::DeviceInfo& dev, PFN_cuTensorMapEncodeTiled_v12000 encode, mb::ClockProbe* probe) {
  const std::string name = std::string("tcgen05_") + (kBf16 ? "bf16" : "fp16") + "_m128n256";
  mb::Rng rng(mb::kSeed + 71 + kBf16);
  std::vector<uint16_t> a(kM * kK), bt(kN * kK);
  std::vector<int> av(kM * kK), bv(kN * kK);
  for (size_t i = 0; i < a.size(); ++i) {
    const int c = int(rng.below(4));
    a[i] = kBf16 ? kBF16[c] : kF16[c];
    av[i] = kIntVal[c];
  }
  for (size_t i = 0; i < bt.size(); ++i) {
    const int c = int(rng.below(4));
    bt[i] = kBf16 ? kBF16[c] : kF16[c];
    bv[i] = kIntVal[c];
  }
  uint16_t *d_a, *d_bt;
  CHECK(cudaMalloc(&d_a, a.size() * 2));
  CHECK(cudaMalloc(&d_bt, bt.size() * 2));
  CHECK(cudaMemcpy(d_a, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_bt, bt.data(), bt.size() * 2, cudaMemcpyHostToDevice));
  const CUtensorMap map_a = make_map(encode, d_a, kM), map_b = make_map(encode, d_bt, kN);
  const int grid = dev.sms;
  float *d_tile, *d_sink;
  CHECK(cudaMalloc(&d_tile, size_t(kM) * kN * sizeof(float)));
  CHECK(cudaMalloc(&d_sink, size_t(grid) * kThreads * sizeof(float)));
  std::vector<double> p(size_t(kM) * kN, 0.0);
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n)
      for (int k = 0; k < kK; ++k) p[size_t(m) * kN + n] += double(av[m * kK + k]) * bv[n * kK + k];
  std::vector<float> tile(p.size());
  auto count_bad = [&](int iters) {
    CHECK(cudaMemcpy(tile.data(), d_tile, tile.size() * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < p.size(); ++i) bad += double(tile[i]) != p[i] * iters;
    return bad;
  };
  // box of 8 K-elements x rows: 8-row groups 128 B apart (SBO), K halves one box apart (LBO)
  const uint32_t lbo_a = kM * 16, lbo_b = kN * 16, sbo = 128;
  int swap = 0;
  std::string layout = "documented";
  auto launch = [&](int iters) {
    tcgen05_kernel<kBf16><<<grid, kThreads>>>(map_a, map_b, iters, lbo_a, lbo_b, sbo, swap, d_tile, d_sink, probe);
  };
  launch(1);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  if (count_bad(1)) {
    swap = 1, layout = "swapped";
    launch(1);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    if (count_bad(1)) swap = 0, layout = "none";
  }
  const int iters = 32768;  // products <= 64 in magnitude: 64 x 2^15 < 2^24, still exact in fp32
  auto t = mb::time_runs([&] { launch(iters); }, 2, 10);
  const double hz = mb::probe_hz(probe);
  const size_t bad = count_bad(iters);
  const bool ok = bad == 0 && layout != "none";
  if (!ok) std::printf("CHECK_FAIL tensor %s: %zu tile values differ (descriptor layout %s)\n", name.c_str(), bad, layout.c_str());
  const double instr = double(grid) * iters;
  mb::result("tensor", name, "flops", instr * 2.0 * kM * kN * kK, t,
             mb::Extra().str("instruction", std::string("tcgen05.mma.cta_group::1.kind::f16 M128 N256 K16, ") + (kBf16 ? "bf16" : "f16") +
                                                " inputs, fp32 accumulator in TMEM")
                 .num("grid", grid).num("block", kThreads).num("sm_count", dev.sms).num("instructions", instr)
                 .str("operands", "A and B in shared memory, loaded by cp.async.bulk.tensor").str("descriptor_layout", layout)
                 .str("check", mb::check_word(ok)).num("sm_clock_hz", hz));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_bt));
  CHECK(cudaFree(d_tile));
  CHECK(cudaFree(d_sink));
}

int main() {
  mb::DeviceInfo dev = mb::device_info("tcgen05_mma");
  if (dev.cc_major != 10) {
    std::fprintf(stderr, "tcgen05_mma: needs compute capability 10.x, found %d.%d\n", dev.cc_major, dev.cc_minor);
    return 3;
  }
  auto encode = get_encode();
  mb::ClockProbe* probe;
  CHECK(cudaMalloc(&probe, sizeof(mb::ClockProbe)));
  run<false>(dev, encode, probe);
  run<true>(dev, encode, probe);
  CHECK(cudaFree(probe));
  return 0;
}
