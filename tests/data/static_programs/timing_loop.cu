// Timing loops of thousands of launches, the way benchmarks time kernels: warm-up launches,
// then CUDA-event-timed loops over several sizes and two kernels, 12,000 launches in all
// (3 sizes x 2 kernels x (100 warm-up + 1,900 timed)). Written for perfmodel's tests (issue 22).
#include <cstdio>

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scale_grid_stride(int n, float a, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] *= a;
}

int main() {
  const int sizes[3] = {1 << 16, 1 << 20, 1 << 24};
  float *x, *y;
  cudaMalloc(&x, sizeof(float) << 24);
  cudaMalloc(&y, sizeof(float) << 24);
  cudaMemset(x, 0, sizeof(float) << 24);
  cudaMemset(y, 0, sizeof(float) << 24);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  long launches = 0;
  for (int s = 0; s < 3; ++s) {
    int n = sizes[s], blocks = (n + 255) / 256;
    for (int k = 0; k < 2; ++k) {
      for (int i = 0; i < 100; ++i, ++launches) {  // warm-up
        if (k == 0) saxpy<<<blocks, 256>>>(n, 2.f, x, y);
        else scale_grid_stride<<<264, 256>>>(n, 0.5f, y);
      }
      cudaEventRecord(start);
      for (int i = 0; i < 1900; ++i, ++launches) {
        if (k == 0) saxpy<<<blocks, 256>>>(n, 2.f, x, y);
        else scale_grid_stride<<<264, 256>>>(n, 0.5f, y);
      }
      cudaEventRecord(stop);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      printf("n=%d kernel=%d: %.3f us per launch\n", n, k, 1000.f * ms / 1900);
    }
  }
  printf("%ld launches\n", launches);
  return 0;
}
