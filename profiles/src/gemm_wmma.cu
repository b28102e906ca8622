// gemm_wmma -- realistic; category: l2_bandwidth
//
// C(fp32) = A(fp16) x B(fp16), 4096^3 (137 GFLOP), both row-major, on tensor cores via
// WMMA (m16n16k16, fp32 accumulate -> HMMA.16816.F32). 128x128 block tile, BK = 32,
// 8 warps each owning a 64x32 sub-tile (4x2 accumulator fragments), A/B tiles staged in
// padded shared memory (row pitch +8 halves: conflict-free ldmatrix) with a 2-stage
// cp.async pipeline. A 128x128 tile reuses each loaded byte only 64 times
// (BM*BN/(BM+BN) flop/B): the 1024 blocks pull 2 GiB through L2 for 137 GFLOP, which at
// ~300 TFLOP/s is ~4.6 TB/s -- the L2 (measured ~88% busy on H100), not the tensor pipe
// (~45%), sets the pace. Larger tiles, TMA multicast across a cluster or wgmma would be
// the fix; tensor_mma is the tensor-pipe-bound counterpart.
#include <cuda_fp16.h>
#include <mma.h>

#include "zoo.h"

using namespace nvcuda;

constexpr int kDim = 4096;  // M = N = K
constexpr int BM = 128, BN = 128, BK = 32;
constexpr int WM = 64, WN = 32;  // warp tile: 2 x 4 warps
constexpr int LDA = BK + 8;      // halves; 80-byte rows
constexpr int LDB = BN + 8;      // halves; 272-byte rows

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(zoo::smem_addr(smem)),
               "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
__device__ __forceinline__ void cp_async_wait1() { asm volatile("cp.async.wait_group 1;"); }

extern "C" __global__ void __launch_bounds__(256)
gemm_wmma_kernel(int M, int N, int K, const half* __restrict__ A, const half* __restrict__ B,
                 float* __restrict__ C) {
  __shared__ __align__(128) half As[2][BM][LDA];
  __shared__ __align__(128) half Bs[2][BK][LDB];
  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = warp / (BN / WN), wn = warp % (BN / WN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  // Each stage: A tile 128x32 halves and B tile 32x128 halves = 512 + 512 chunks of 16 B.
  auto load_stage = [&](int s, int k0) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int idx = tid + c * 256;
      const int ar = idx / (BK / 8), ac = (idx % (BK / 8)) * 8;
      cp_async16(&As[s][ar][ac], A + size_t(row0 + ar) * K + k0 + ac);
      const int br = idx / (BN / 8), bc = (idx % (BN / 8)) * 8;
      cp_async16(&Bs[s][br][bc], B + size_t(k0 + br) * N + col0 + bc);
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[WM / 16][WN / 16];
#pragma unroll
  for (int i = 0; i < WM / 16; ++i)
#pragma unroll
    for (int j = 0; j < WN / 16; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  const int ktiles = K / BK;
  load_stage(0, 0);
  cp_async_commit();
  for (int kt = 0; kt < ktiles; ++kt) {
    const int s = kt & 1;
    if (kt + 1 < ktiles) load_stage(s ^ 1, (kt + 1) * BK);  // overlaps with this tile's MMAs
    cp_async_commit();  // (possibly empty group keeps the wait count uniform)
    cp_async_wait1();   // everything but the newest group has landed: stage s is ready
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[WM / 16];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[WN / 16];
#pragma unroll
      for (int i = 0; i < WM / 16; ++i)
        wmma::load_matrix_sync(a[i], &As[s][wm * WM + i * 16][kk], LDA);
#pragma unroll
      for (int j = 0; j < WN / 16; ++j)
        wmma::load_matrix_sync(b[j], &Bs[s][kk][wn * WN + j * 16], LDB);
#pragma unroll
      for (int i = 0; i < WM / 16; ++i)
#pragma unroll
        for (int j = 0; j < WN / 16; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // stage s is refilled by the next iteration's prefetch
  }
#pragma unroll
  for (int i = 0; i < WM / 16; ++i)
#pragma unroll
    for (int j = 0; j < WN / 16; ++j)
      wmma::store_matrix_sync(C + size_t(row0 + wm * WM + i * 16) * N + col0 + wn * WN + j * 16,
                              acc[i][j], N, wmma::mem_row_major);
}

int main(int argc, char** argv) {
  zoo::Session S("gemm_wmma", argc, argv);
  const int M = kDim, N = kDim, K = kDim;
  std::vector<half> hA(size_t(M) * K), hB(size_t(K) * N);
  std::vector<float> fA(hA.size()), fB(hB.size());  // the exact fp16 values as floats
  zoo::Rng r(341);
  for (size_t i = 0; i < hA.size(); ++i) { hA[i] = __float2half_rn(r.uniform(-1.f, 1.f)); fA[i] = __half2float(hA[i]); }
  for (size_t i = 0; i < hB.size(); ++i) { hB[i] = __float2half_rn(r.uniform(-1.f, 1.f)); fB[i] = __half2float(hB[i]); }
  half* A = zoo::to_device(hA);
  half* B = zoo::to_device(hB);
  float* C = zoo::device_alloc<float>(size_t(M) * N);
  dim3 block(256), grid(N / BN, M / BM);  // 32 x 32 = 1024 blocks

  S.measure("gemm_wmma_kernel", grid, block, 0, [&] {
    gemm_wmma_kernel<<<grid, block>>>(M, N, K, A, B, C);
    CHECK_LAUNCH();
  });

  auto hC = zoo::to_host(C, size_t(M) * N);
  for (int s = 0; s < 128; ++s) {
    int i = r.below(M), j = r.below(N);
    double ref = 0;
    for (int k = 0; k < K; ++k) ref += double(fA[size_t(i) * K + k]) * fB[size_t(k) * N + j];
    zoo::expect_close("C", size_t(i) * N + j, hC[size_t(i) * N + j], ref, 1e-3, 2e-2);
  }
  zoo::check_ok("gemm_wmma");
  CHECK(cudaFree(A)); CHECK(cudaFree(B)); CHECK(cudaFree(C));
  return 0;
}
