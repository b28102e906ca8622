// sgemm_naive -- realistic; category: l1_shared_bandwidth
//
// C = A x B, 1024^3 fp32, one thread per C element, block 32x8 with threadIdx.x along
// columns: every k step a warp loads one A value (same address for all lanes) and 32
// consecutive B values, then does one FFMA. Two global loads per FMA, served almost
// entirely from L1 (A rows and B tiles are reused by neighbouring warps), so the L1/LSU
// load path, not DRAM or the FMA pipe, is the limit. 2.15 GFLOP, 12 MiB of unique data.
#include "zoo.h"

constexpr int kN = 1024;  // M = N = K

extern "C" __global__ void __launch_bounds__(256)
sgemm_naive_kernel(int M, int N, int K, const float* __restrict__ A,
                   const float* __restrict__ B, float* __restrict__ C) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc = fmaf(A[row * K + k], B[k * N + col], acc);
  C[row * N + col] = acc;
}

int main(int argc, char** argv) {
  zoo::Session S("sgemm_naive", argc, argv);
  const int M = kN, N = kN, K = kN;
  auto hA = zoo::random_floats(size_t(M) * K, -1.f, 1.f, 301);
  auto hB = zoo::random_floats(size_t(K) * N, -1.f, 1.f, 302);
  float* A = zoo::to_device(hA);
  float* B = zoo::to_device(hB);
  float* C = zoo::device_alloc<float>(size_t(M) * N);
  dim3 block(32, 8), grid(N / 32, M / 8);

  S.measure("sgemm_naive_kernel", grid, block, 0, [&] {
    sgemm_naive_kernel<<<grid, block>>>(M, N, K, A, B, C);
    CHECK_LAUNCH();
  });

  auto hC = zoo::to_host(C, size_t(M) * N);
  zoo::Rng r(303);
  for (int s = 0; s < 256; ++s) {
    int i = r.below(M), j = r.below(N);
    double ref = 0;
    for (int k = 0; k < K; ++k) ref += double(hA[size_t(i) * K + k]) * hB[size_t(k) * N + j];
    zoo::expect_close("C", size_t(i) * N + j, hC[size_t(i) * N + j], ref, 1e-4, 1e-3);
  }
  zoo::check_ok("sgemm_naive");
  CHECK(cudaFree(A)); CHECK(cudaFree(B)); CHECK(cudaFree(C));
  return 0;
}
