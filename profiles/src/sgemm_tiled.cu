// sgemm_tiled -- realistic; category: fp32_compute
//
// C = A x B, 2048^3 fp32 (17.2 GFLOP). 128x128 block tile, BK = 8, 256 threads, each
// thread computes an 8x8 register tile (64 accumulators) made of 4x4 quadrants 64 rows /
// 64 columns apart, so a warp's float4 reads of a shared-memory row are contiguous.
// Per k step a thread reads 8 A and 8 B values (4 LDS.128: ~6 shared wavefronts per warp)
// and issues 64 FFMA (16 SM-cycles of the FMA pipe per warp). A is stored transposed
// (padded by 4 floats, conflict-free stores) so both operands are read as float4; the next
// tile's global loads are prefetched into registers during the current tile's FMAs.
// The FP32 pipe is the limit, shared-memory bandwidth second.
#include "zoo.h"

constexpr int kN = 2048;  // M = N = K
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;

extern "C" __global__ void __launch_bounds__(256)
sgemm_tiled_kernel(int M, int N, int K, const float* __restrict__ A,
                   const float* __restrict__ B, float* __restrict__ C) {
  __shared__ __align__(16) float As[BK][BM + 4];  // A tile, transposed: As[k][m]
  __shared__ __align__(16) float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  // 16 x 16 threads; thread (tr, tc) owns rows {tr*4+i, 64+tr*4+i} and
  // columns {tc*4+j, 64+tc*4+j}, i, j < 4.
  const int tr = tid / (BN / TN), tc = tid % (BN / TN);
  // global->shared copy: one float4 of A (128 rows x 8 cols) and one of B (8 x 128)
  const int a_row = tid / 2, a_col = (tid % 2) * 4;
  const int b_row = tid / 32, b_col = (tid % 32) * 4;
  const float* Ap = A + size_t(row0 + a_row) * K + a_col;
  const float* Bp = B + size_t(b_row) * N + col0 + b_col;

  float acc[TM][TN] = {};
  // Register prefetch: the next tile's global loads are in flight while this tile is
  // being multiplied, so their latency hides behind the FMAs.
  float4 av = *reinterpret_cast<const float4*>(Ap);
  float4 bv = *reinterpret_cast<const float4*>(Bp);
  for (int k0 = 0; k0 < K; k0 += BK) {
    As[a_col + 0][a_row] = av.x;
    As[a_col + 1][a_row] = av.y;
    As[a_col + 2][a_row] = av.z;
    As[a_col + 3][a_row] = av.w;
    *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = bv;
    __syncthreads();
    if (k0 + BK < K) {
      av = *reinterpret_cast<const float4*>(Ap + k0 + BK);
      bv = *reinterpret_cast<const float4*>(Bp + size_t(k0 + BK) * N);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
      const float4 a0 = *reinterpret_cast<const float4*>(&As[k][tr * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[k][BM / 2 + tr * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k][tc * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k][BN / 2 + tc * 4]);
      a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;
      a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
      b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;
      b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = (i < 4) ? tr * 4 + i : BM / 2 + tr * 4 + (i - 4);
    float* Cp = C + size_t(row0 + r) * N + col0 + tc * 4;
    *reinterpret_cast<float4*>(Cp) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(Cp + BN / 2) =
        make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}

int main(int argc, char** argv) {
  zoo::Session S("sgemm_tiled", argc, argv);
  const int M = kN, N = kN, K = kN;
  auto hA = zoo::random_floats(size_t(M) * K, -1.f, 1.f, 311);
  auto hB = zoo::random_floats(size_t(K) * N, -1.f, 1.f, 312);
  float* A = zoo::to_device(hA);
  float* B = zoo::to_device(hB);
  float* C = zoo::device_alloc<float>(size_t(M) * N);
  dim3 block(256), grid(N / BN, M / BM);  // 16 x 16 = 256 blocks

  S.measure("sgemm_tiled_kernel", grid, block, 0, [&] {
    sgemm_tiled_kernel<<<grid, block>>>(M, N, K, A, B, C);
    CHECK_LAUNCH();
  });

  auto hC = zoo::to_host(C, size_t(M) * N);
  zoo::Rng r(313);
  for (int s = 0; s < 256; ++s) {
    int i = r.below(M), j = r.below(N);
    double ref = 0;
    for (int k = 0; k < K; ++k) ref += double(hA[size_t(i) * K + k]) * hB[size_t(k) * N + j];
    zoo::expect_close("C", size_t(i) * N + j, hC[size_t(i) * N + j], ref, 1e-4, 1e-3);
  }
  zoo::check_ok("sgemm_tiled");
  CHECK(cudaFree(A)); CHECK(cudaFree(B)); CHECK(cudaFree(C));
  return 0;
}
