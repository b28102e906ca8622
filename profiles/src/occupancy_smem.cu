// occupancy_smem -- category: occupancy_shared_memory
//
// The same latency-bound, warp-uniform pointer chase as occupancy_regs (random single
// cycle over 4 Mi entries, 16 MiB, L2-resident; 1 sector per request), with each step also
// reading a 128 KiB shared-memory table. 128 KiB of dynamic shared memory per block (> half of the 228 KiB per SM) lets
// only ONE 256-thread block per SM run: 8 warps of 64 (12.5% occupancy), 8 waves for the
// 1056-block grid, one dependent load in flight per warp. Registers are low (32), so
// shared memory is the only limiter.
#include "zoo.h"

constexpr int kLogN = 22;
constexpr int kTable = 32768;  // floats = 128 KiB
constexpr int kSteps = 768;

__host__ __device__ inline uint32_t start_index(uint32_t gid) {
  return (gid * 2654435761u) & ((1u << kLogN) - 1);
}

extern "C" __global__ void __launch_bounds__(256)
occupancy_smem_kernel(const uint32_t* __restrict__ next, const float* __restrict__ table_src,
                      int steps, float* __restrict__ out) {
  extern __shared__ float table[];
  for (int i = threadIdx.x; i < kTable; i += blockDim.x) table[i] = table_src[i];
  __syncthreads();
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t idx = start_index(gid / 32);  // one chain per warp
  const uint32_t lane = threadIdx.x & 31;
  float s = 0.f;
  for (int k = 0; k < steps; ++k) {
    idx = next[idx];                          // dependent, warp-uniform load: pure latency
    s += table[(idx + lane) & (kTable - 1)];  // cheap, conflict-free shared lookup
  }
  out[gid] = s;
}

int main(int argc, char** argv) {
  zoo::Session S("occupancy_smem", argc, argv);
  const size_t n = size_t(1) << kLogN;
  auto hnext = zoo::random_cycle(n, 161);
  auto htab = zoo::random_floats(kTable, 0.f, 1.f, 162);
  uint32_t* next = zoo::to_device(hnext);
  float* tab = zoo::to_device(htab);
  dim3 block(256), grid(zoo::kNumSMs * 8);
  const unsigned threads = grid.x * block.x;
  const size_t smem = kTable * sizeof(float);
  CHECK(cudaFuncSetAttribute(occupancy_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(smem)));
  float* out = zoo::device_alloc<float>(threads);

  S.measure("occupancy_smem_kernel", grid, block, smem, [&] {
    occupancy_smem_kernel<<<grid, block, smem>>>(next, tab, kSteps, out);
    CHECK_LAUNCH();
  });

  auto hout = zoo::to_host(out, threads);
  for (unsigned t = 0; t < threads; t += 4111) {
    uint32_t idx = start_index(t / 32);
    float s = 0.f;
    for (int k = 0; k < kSteps; ++k) { idx = hnext[idx]; s += htab[(idx + (t & 31)) & (kTable - 1)]; }
    zoo::expect_close("out", t, hout[t], s, 1e-5, 1e-4);
  }
  zoo::check_ok("occupancy_smem");
  CHECK(cudaFree(next)); CHECK(cudaFree(tab)); CHECK(cudaFree(out));
  return 0;
}
