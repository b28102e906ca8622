// wmma beyond m16n16k16 f16 (tests/test_static_programs.py): f64 (m8n8k4: DMMA), tf32 (m16n16k8,
// fragments converted with __float_to_tf32), u8 -> s32 (m16n16k16: IMMA, the accumulator staged in
// shared memory) and f16 with f16 accumulators in the m32n8k16 shape; row- and column-major
// operands. Every value is a small integer (or a quarter), so every product is exact and the
// interpreter's results can be compared exactly with numpy's.
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdio>
#include <vector>
using namespace nvcuda;

// C (M x N, row-major) += A (M x K, row-major) B (K x N, column-major): one warp per 8 x 8 tile
__global__ void gemm_f64(const double* A, const double* B, double* C, int M, int N, int K) {
  int tile_m = blockIdx.y * 8, tile_n = blockIdx.x * 8;
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> c;
  wmma::load_matrix_sync(c, C + tile_m * N + tile_n, N, wmma::mem_row_major);
  for (int k = 0; k < K; k += 4) {
    wmma::load_matrix_sync(a, A + tile_m * K + k, K);
    wmma::load_matrix_sync(b, B + tile_n * K + k, K);
    wmma::mma_sync(c, a, b, c);
  }
  wmma::store_matrix_sync(C + tile_m * N + tile_n, c, N, wmma::mem_row_major);
}

// D (M x N, column-major) = alpha A (M x K, column-major) B (K x N, row-major), in TF32
__global__ void gemm_tf32(const float* A, const float* B, float* D, int M, int N, int K, float alpha) {
  int tile_m = blockIdx.y * 16, tile_n = blockIdx.x * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
  wmma::fill_fragment(c, 0.0f);
  for (int k = 0; k < K; k += 8) {
    wmma::load_matrix_sync(a, A + k * M + tile_m, M);
    wmma::load_matrix_sync(b, B + k * N + tile_n, N);
    for (int t = 0; t < a.num_elements; t++) a.x[t] = wmma::__float_to_tf32(a.x[t]);
    for (int t = 0; t < b.num_elements; t++) b.x[t] = wmma::__float_to_tf32(b.x[t]);
    wmma::mma_sync(c, a, b, c);
  }
  for (int t = 0; t < c.num_elements; t++) c.x[t] *= alpha;
  wmma::store_matrix_sync(D + tile_n * M + tile_m, c, M, wmma::mem_col_major);
}

// D (16 x 16 s32, row-major) = A (16 x K u8, row-major) B (K x 16 u8, column-major) + C (column-major)
__global__ void gemm_u8(const unsigned char* A, const unsigned char* B, const int* C, int* D, int K) {
  __shared__ int c_tile[16 * 16];
  for (int i = threadIdx.x; i < 256; i += 32) c_tile[i] = C[i];
  __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, unsigned char, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, unsigned char, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> c;
  wmma::load_matrix_sync(c, c_tile, 16, wmma::mem_col_major);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + k, K);
    wmma::load_matrix_sync(b, B + k, K);
    wmma::mma_sync(c, a, b, c);
  }
  wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}

// D (32 x 8 halves, row-major) = A (32 x 16, row-major) B (16 x 8, row-major) + 1, accumulated in f16
__global__ void gemm_half_32x8(const __half* A, const __half* B, __half* D) {
  wmma::fragment<wmma::matrix_a, 32, 8, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, __half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 32, 8, 16, __half> c;
  wmma::fill_fragment(c, __float2half(1.0f));
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 8);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(D, c, 8, wmma::mem_row_major);
}

template <typename T>
T* upload(const std::vector<T>& host) {
  T* device = nullptr;
  cudaMalloc(&device, host.size() * sizeof(T));
  cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return device;
}

int main() {
  const int M = 32, N = 32, K = 16;
  std::vector<double> a64(M * K), b64(K * N), c64(M * N);
  for (int i = 0; i < M * K; ++i) a64[i] = i % 7 - 3;
  for (int i = 0; i < K * N; ++i) b64[i] = i % 5 - 2;
  for (int i = 0; i < M * N; ++i) c64[i] = i % 3;
  double *A64 = upload(a64), *B64 = upload(b64), *C64 = upload(c64);
  gemm_f64<<<dim3(N / 8, M / 8), 32>>>(A64, B64, C64, M, N, K);

  std::vector<float> a32(M * K), b32(K * N);
  for (int i = 0; i < M * K; ++i) a32[i] = (i % 9 - 4) * 0.25f;
  for (int i = 0; i < K * N; ++i) b32[i] = (i % 7 - 3) * 0.5f;
  float *A32 = upload(a32), *B32 = upload(b32), *D32 = nullptr;
  cudaMalloc(&D32, M * N * sizeof(float));
  gemm_tf32<<<dim3(N / 16, M / 16), 32>>>(A32, B32, D32, M, N, K, 2.0f);

  const int K8 = 32;
  std::vector<unsigned char> a8(16 * K8), b8(K8 * 16);
  std::vector<int> c8(256);
  for (int i = 0; i < 16 * K8; ++i) a8[i] = i % 13;
  for (int i = 0; i < K8 * 16; ++i) b8[i] = i % 11;
  for (int i = 0; i < 256; ++i) c8[i] = i - 100;
  unsigned char *A8 = upload(a8), *B8 = upload(b8);
  int *C8 = upload(c8), *D8 = nullptr;
  cudaMalloc(&D8, 256 * sizeof(int));
  gemm_u8<<<1, 32>>>(A8, B8, C8, D8, K8);

  std::vector<__half> a16(32 * 16), b16(16 * 8);
  for (int i = 0; i < 32 * 16; ++i) a16[i] = __float2half(float(i % 4));
  for (int i = 0; i < 16 * 8; ++i) b16[i] = __float2half(float(i % 3 - 1));
  __half *A16 = upload(a16), *B16 = upload(b16), *D16 = nullptr;
  cudaMalloc(&D16, 32 * 8 * sizeof(__half));
  gemm_half_32x8<<<1, 32>>>(A16, B16, D16);
  cudaDeviceSynchronize();
  std::printf("done\n");
  return 0;
}
