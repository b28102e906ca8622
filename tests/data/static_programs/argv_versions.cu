// Several versions of one kernel selected by argv, as in step-by-step optimisation tutorials:
// `argv_versions 0` runs the naive matrix transpose, `1` the shared-memory one, `2` the padded
// one; with no argument, all three. Written for perfmodel's tests (issue 22).
#include <cstdio>
#include <cstdlib>

#define TILE 32

__global__ void transpose_naive(const float* in, float* out, int n) {
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += blockDim.y) out[x * n + y + j] = in[(y + j) * n + x];
}

__global__ void transpose_shared(const float* in, float* out, int n) {
  __shared__ float tile[TILE][TILE];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += blockDim.y) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += blockDim.y) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void transpose_padded(const float* in, float* out, int n) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += blockDim.y) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += blockDim.y) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main(int argc, char** argv) {
  int version = argc > 1 ? atoi(argv[1]) : -1;
  int n = argc > 2 ? atoi(argv[2]) : 2048;
  if (version > 2) {
    fprintf(stderr, "usage: %s [0|1|2] [n]\n", argv[0]);
    return 2;
  }
  float *in, *out;
  cudaMalloc(&in, size_t(n) * n * sizeof(float));
  cudaMalloc(&out, size_t(n) * n * sizeof(float));
  dim3 grid(n / TILE, n / TILE), block(TILE, 8);
  for (int rep = 0; rep < 10; ++rep) {
    if (version < 0 || version == 0) transpose_naive<<<grid, block>>>(in, out, n);
    if (version < 0 || version == 1) transpose_shared<<<grid, block>>>(in, out, n);
    if (version < 0 || version == 2) transpose_padded<<<grid, block>>>(in, out, n);
  }
  cudaDeviceSynchronize();
  printf("done\n");
  return 0;
}
