// A program that calls CUDA libraries (cuBLAS, cuBLASLt, cuRAND, cuFFT, cuDNN, NCCL, NVTX v2)
// beside a kernel of its own. The library functions are declared here as their headers
// declare them, so that the program builds where the headers are absent: launch discovery
// links recording stubs for them. Written for perfmodel's tests (issue 22).
#include <cstddef>
#include <cstdio>

extern "C" {
typedef struct cublasContext* cublasHandle_t;
int cublasCreate_v2(cublasHandle_t*);
int cublasDestroy_v2(cublasHandle_t);
int cublasSgemm_v2(cublasHandle_t, int, int, int, int, int, const float*, const float*, int, const float*, int,
                   const float*, float*, int);
typedef struct cublasLtContext* cublasLtHandle_t;
int cublasLtCreate(cublasLtHandle_t*);
int cublasLtMatmul(cublasLtHandle_t, void*, const void*, const void*, void*, const void*, void*, const void*, void*, void*,
                   void*, const void*, void*, size_t, void*);
typedef struct curandGenerator_st* curandGenerator_t;
int curandCreateGenerator(curandGenerator_t*, int);
int curandGenerateUniform(curandGenerator_t, float*, size_t);
int cufftPlan1d(int*, int, int, int);
int cufftExecC2C(int, void*, void*, int);
typedef struct cudnnContext* cudnnHandle_t;
int cudnnCreate(cudnnHandle_t*);
const char* cudnnGetErrorString(int);
int ncclAllReduce(const void*, void*, size_t, int, int, void*, void*);
int nvtxRangePushA(const char*);
int nvtxRangePop(void);
}

__global__ void relu(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] < 0.f) x[i] = 0.f;
}

int main() {
  const int n = 512;
  float* d;
  cudaMalloc(&d, 3 * n * n * sizeof(float));
  cublasHandle_t blas;
  if (cublasCreate_v2(&blas) != 0) return 1;
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  curandGenerator_t gen;
  curandCreateGenerator(&gen, 100);
  cudnnHandle_t dnn;
  cudnnCreate(&dnn);
  printf("cudnn: %s\n", cudnnGetErrorString(0));
  int plan;
  cufftPlan1d(&plan, n, 0x29, 1);
  nvtxRangePushA("work");
  curandGenerateUniform(gen, d, 2 * n * n);
  const float one = 1.f, zero = 0.f;
  for (int i = 0; i < 20; ++i) {
    cublasSgemm_v2(blas, 0, 0, n, n, n, &one, d, n, d + n * n, n, &zero, d + 2 * n * n, n);
    relu<<<n * n / 256, 256>>>(d + 2 * n * n, n * n);
  }
  cublasLtMatmul(lt, nullptr, &one, d, nullptr, d, nullptr, &zero, d, nullptr, d, nullptr, nullptr, 0, nullptr);
  cufftExecC2C(plan, d, d, -1);
  ncclAllReduce(d, d, n, 7, 0, nullptr, nullptr);
  nvtxRangePop();
  cublasDestroy_v2(blas);
  printf("done\n");
  return 0;
}
