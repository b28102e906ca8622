// A program that reads its problem from a file next to its source, by a path relative to where it
// runs (as cuda-samples' sdkFindFilePath tries "./data/" first), and writes a result file there
// (tests/test_static_programs.py: launch discovery runs it in a copy of its folder).
#include <cstdio>

__global__ void scale(float* x, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}

int main() {
  std::FILE* in = std::fopen("data/problem.txt", "r");
  if (!in) {
    std::printf("cannot open data/problem.txt\n");
    return 1;
  }
  int n = 0;
  float factor = 0.f;
  if (std::fscanf(in, "%d %f", &n, &factor) != 2 || n <= 0) {
    std::printf("data/problem.txt: expected a size and a factor\n");
    return 1;
  }
  std::fclose(in);
  float* x = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  scale<<<(n + 255) / 256, 256>>>(x, n, factor);
  std::FILE* out = std::fopen("data/result.txt", "w");  // beside its input: in the copy, never in the source folder
  if (out) {
    std::fprintf(out, "%d\n", n);
    std::fclose(out);
  }
  return 0;
}
