// Dynamic parallelism (tests/test_static_programs.py): kernels launched from device code, which
// nvcc builds only with relocatable device code (-rdc=true) and a device link. The host launches
// `parent`; each of its threads allocates from the device heap (cudaMalloc and malloc in device
// code), then launches `child` on its row; the first thread of each child launches `leaf`.
#include <cstdio>

__global__ void leaf(int* counts, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) counts[i] += 1;
}

__global__ void child(float* row, int cols, int* counts) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < cols) row[i] = row[i] * 2.0f + 1.0f;
  if (i == 0) leaf<<<1, 32>>>(counts, 32);
}

__global__ void parent(float* data, int rows, int cols, int* counts) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float* scratch = nullptr;
  cudaMalloc(&scratch, cols * sizeof(float));  // the device runtime's heap
  scratch[cols - 1] = 1.0f;
  int* tmp = static_cast<int*>(malloc(16 * sizeof(int)));
  tmp[15] = row;
  counts[row] = tmp[15];
  free(tmp);
  child<<<(cols + 127) / 128, 128>>>(data + row * cols, cols, counts);
  cudaFree(scratch);
}

int main() {
  const int rows = 64, cols = 1024;
  float* data = nullptr;
  int* counts = nullptr;
  cudaMalloc(&data, rows * cols * sizeof(float));
  cudaMalloc(&counts, rows * sizeof(int));
  cudaMemset(data, 0, rows * cols * sizeof(float));
  cudaMemset(counts, 0, rows * sizeof(int));
  parent<<<rows / 32, 32>>>(data, rows, cols, counts);
  cudaError_t err = cudaDeviceSynchronize();
  std::printf("%s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
