// barrier.cu -- cost of __syncthreads() (BAR.SYNC) vs warps per block and resident blocks per SM.
//
// A kernel that does nothing but barriers: 64 x 32 = 2048 __syncthreads() (32 per loop
// iteration, unrolled), clock64 read by thread 0 after a first barrier and after the last one;
// cycles per barrier = block cycles / 2048. Sweep: warps per block W in {1,2,4,8,16,32} x
// blocks per SM B in {1,2,4} (where W x B <= 64 warps), grid = SMs x B launched at once so
// that B blocks share each SM. Every block records its SM (%smid); only blocks on SMs that
// really held B blocks are kept. Samples: one per kept block, over 3 launches after a warm-up.
#include "mb.h"

constexpr int kUnroll = 32, kIters = 64;

__global__ void barrier_kernel(unsigned long long* cycles, uint32_t* sm) {
  __syncthreads();
  const unsigned long long c0 = clock64();
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) __syncthreads();
  }
  const unsigned long long c1 = clock64();
  if (threadIdx.x == 0) {
    cycles[blockIdx.x] = c1 - c0;
    sm[blockIdx.x] = mb::smid();
  }
}

int main() {
  mb::DeviceInfo dev = mb::device_info("barrier");
  const int max_blocks = dev.sms * 4;
  unsigned long long* d_cycles;
  uint32_t* d_sm;
  CHECK(cudaMalloc(&d_cycles, max_blocks * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&d_sm, max_blocks * sizeof(uint32_t)));
  std::vector<unsigned long long> cyc(max_blocks);
  std::vector<uint32_t> sm(max_blocks);
  const int max_warps_per_sm = dev.max_threads_per_sm / 32;
  for (int bps : {1, 2, 4}) {
    for (int wpb : {1, 2, 4, 8, 16, 32}) {
      if (wpb * bps > max_warps_per_sm) continue;
      const int grid = dev.sms * bps, block = 32 * wpb;
      std::vector<double> samples;
      size_t kept = 0, dropped = 0;
      auto collect = [&] {
        CHECK(cudaMemcpy(cyc.data(), d_cycles, grid * sizeof(cyc[0]), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(sm.data(), d_sm, grid * sizeof(sm[0]), cudaMemcpyDeviceToHost));
        std::vector<int> per_sm(1024, 0);
        for (int b = 0; b < grid; ++b) per_sm[sm[b] % 1024]++;
        for (int b = 0; b < grid; ++b) {
          if (per_sm[sm[b] % 1024] == bps) {
            samples.push_back(double(cyc[b]) / (kIters * kUnroll));
            ++kept;
          } else {
            ++dropped;
          }
        }
      };
      auto t = mb::time_runs_with([&] { barrier_kernel<<<grid, block>>>(d_cycles, d_sm); }, collect, 1, 3);
      mb::result("barrier", "w" + std::to_string(wpb) + "_b" + std::to_string(bps), "barriers", double(kIters * kUnroll), t,
                 mb::Extra().num("warps_per_block", wpb).num("blocks_per_sm", bps).num("grid", grid).num("block", block)
                     .num("blocks_kept", double(kept)).num("blocks_dropped", double(dropped)).list("cycles_per_op", samples));
    }
  }
  CHECK(cudaFree(d_cycles));
  CHECK(cudaFree(d_sm));
  return 0;
}
