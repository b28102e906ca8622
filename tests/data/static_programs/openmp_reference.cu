// A program whose CPU reference uses OpenMP, as llm.c's dev/cuda benchmarks do (their build passes
// -Xcompiler -fopenmp): launch discovery builds its host code with OpenMP too
// (tests/test_static_programs.py). It launches one block per OpenMP thread it was given.
#include <omp.h>

#include <cstdio>
#include <vector>

__global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.f;
}

void cpu_reference(std::vector<float>& x) {
#pragma omp parallel for
  for (int i = 0; i < static_cast<int>(x.size()); ++i) x[i] += 1.f;
}

int main() {
  std::vector<float> host(1 << 16, 1.f);
  cpu_reference(host);
  int threads = omp_get_max_threads();
  std::printf("OpenMP threads: %d\n", threads);
  float* x = nullptr;
  cudaMalloc(&x, host.size() * sizeof(float));
  cudaMemcpy(x, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  add_one<<<threads, 256>>>(x, static_cast<int>(host.size()));
  return 0;
}
