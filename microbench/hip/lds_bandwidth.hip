// lds_bandwidth.hip -- LDS (shared memory) bandwidth and the cost of bank conflicts.
//
// CDNA2/CDNA3 LDS: 64 KiB per CU, 32 banks of 4 bytes (128 B/clk/CU). Each block (256 threads,
// 4 waves) copies a 24 KiB table of fixed-seed words into LDS, then every lane reads it again
// and again and sums what it read:
//   b32_stride<S>: ds_read_b32; lane l of a wave reads word l*S + offset: S = 1 is conflict-free,
//                  S = 2, 4, ..., 32 put 2, 4, ..., 32 lanes of a half-wave on one bank (S = 64
//                  as S = 32 over the half-wave, odd S such as 3 are conflict-free again).
//                  16 loads per step at immediate offsets k*64 words (same bank as k = 0), and
//                  a per-step offset (it*64 mod 1024 words) so that nothing is loop-invariant.
//   b128:          ds_read_b128; lane l reads 16 consecutive bytes at l*16 + offset (a wave reads
//                  1 KiB contiguous), the peak-bandwidth access.
// Grid: CUs x resident blocks. Per variant: LDS bytes read per run, 30 run times and the clock.
// Check: every thread's sum equals the host's sum for block 0's threads, and all blocks agree.
#include "mb_hip.h"

constexpr int kThreads = 256;
constexpr int kWords = 6144;  // 24 KiB of LDS per block
constexpr int kUnroll = 16;

template <int kStride>
__global__ __launch_bounds__(kThreads) void lds_b32(const uint32_t* __restrict__ table, int iters,
                                                    uint32_t* __restrict__ out, mb::ClockProbe* probe) {
  __shared__ uint32_t s[kWords];
  for (int j = threadIdx.x; j < kWords; j += blockDim.x) s[j] = table[j];
  __syncthreads();
  mb::probe_start(probe);
  const uint32_t lane = threadIdx.x % 64u;
  const uint32_t base = (lane * kStride) % 4096u;
  uint32_t acc = 0;
  for (int it = 0; it < iters; ++it) {
    const uint32_t off = base + ((uint32_t(it) * 64u) & 1023u);
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) acc += s[off + k * 64];
  }
  out[blockIdx.x * size_t(blockDim.x) + threadIdx.x] = acc;
  mb::probe_end(probe);
}

__global__ __launch_bounds__(kThreads) void lds_b128(const uint32_t* __restrict__ table, int iters,
                                                     uint32_t* __restrict__ out, mb::ClockProbe* probe) {
  __shared__ uint4 s[kWords / 4];
  const uint4* t4 = reinterpret_cast<const uint4*>(table);
  for (int j = threadIdx.x; j < kWords / 4; j += blockDim.x) s[j] = t4[j];
  __syncthreads();
  mb::probe_start(probe);
  const uint32_t lane = threadIdx.x % 64u;
  uint32_t acc = 0;
  for (int it = 0; it < iters; ++it) {
    const uint32_t off = lane + ((uint32_t(it) * 64u) & 255u);
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const uint4 v = s[off + k * 64];
      acc += (v.x ^ v.y) + (v.z ^ v.w);
    }
  }
  out[blockIdx.x * size_t(blockDim.x) + threadIdx.x] = acc;
  mb::probe_end(probe);
}

// Host model of one thread's sum.
uint32_t expected(const std::vector<uint32_t>& t, int stride, int tid, int iters) {
  const uint32_t lane = uint32_t(tid) % 64u;
  uint32_t acc = 0;
  if (stride > 0) {
    const uint32_t base = (lane * uint32_t(stride)) % 4096u;
    for (int it = 0; it < iters; ++it)
      for (int k = 0; k < kUnroll; ++k) acc += t[base + ((uint32_t(it) * 64u) & 1023u) + k * 64];
  } else {
    for (int it = 0; it < iters; ++it)
      for (int k = 0; k < kUnroll; ++k) {
        const size_t w = 4 * (lane + ((uint32_t(it) * 64u) & 255u) + k * 64);
        acc += (t[w] ^ t[w + 1]) + (t[w + 2] ^ t[w + 3]);
      }
  }
  return acc;
}

int main() {
  mb::DeviceInfo dev = mb::device_info("lds_bandwidth");
  std::vector<uint32_t> table(kWords);
  for (int j = 0; j < kWords; ++j) table[j] = mb::word_at(mb::kSeed + 31, j);
  uint32_t *d_table, *d_out;
  mb::ClockProbe* probe;
  HIP_CHECK(hipMalloc(&d_table, kWords * sizeof(uint32_t)));
  HIP_CHECK(hipMemcpy(d_table, table.data(), kWords * sizeof(uint32_t), hipMemcpyHostToDevice));
  HIP_CHECK(hipMalloc(&probe, sizeof(mb::ClockProbe)));
  const int bpc = std::min(mb::blocks_per_cu(lds_b32<1>, kThreads), mb::blocks_per_cu(lds_b128, kThreads));
  const int grid = dev.cus * bpc;
  const size_t threads = size_t(grid) * kThreads;
  HIP_CHECK(hipMalloc(&d_out, threads * sizeof(uint32_t)));
  std::vector<uint32_t> out(threads);

  auto run = [&](const std::string& name, int stride, auto kernel, int iters, int bytes_per_load) {
    auto t = mb::time_runs(
        [&] { hipLaunchKernelGGL(kernel, dim3(grid), dim3(kThreads), 0, 0, d_table, iters, d_out, probe); }, 3, 30);
    HIP_CHECK(hipMemcpy(out.data(), d_out, threads * sizeof(uint32_t), hipMemcpyDeviceToHost));
    for (int tid = 0; tid < kThreads; ++tid)
      if (out[tid] != expected(table, stride, tid, iters)) mb::check_fail((name + ": wrong sum in block 0").c_str());
    for (size_t i = kThreads; i < threads; ++i)
      if (out[i] != out[i % kThreads]) mb::check_fail((name + ": blocks disagree").c_str());
    const double bytes = double(threads) * iters * kUnroll * bytes_per_load;
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  "\"stride_words\":%d,\"bytes_per_lane_load\":%d,\"grid\":%d,\"block\":%d,\"blocks_per_cu\":%d,"
                  "\"iters\":%d,\"sm_clock_hz\":%.6g",
                  stride, bytes_per_load, grid, kThreads, bpc, iters, mb::probe_hz(probe, dev));
    mb::result("lds", name, "bytes", bytes, t, extra);
  };
  // iterations shrink with the expected conflict degree so that every run takes about as long
  run("b128", 0, lds_b128, 2048, 16);
  run("b32_stride1", 1, lds_b32<1>, 4096, 4);
  run("b32_stride2", 2, lds_b32<2>, 2048, 4);
  run("b32_stride3", 3, lds_b32<3>, 4096, 4);
  run("b32_stride4", 4, lds_b32<4>, 1024, 4);
  run("b32_stride8", 8, lds_b32<8>, 512, 4);
  run("b32_stride16", 16, lds_b32<16>, 256, 4);
  run("b32_stride32", 32, lds_b32<32>, 128, 4);
  run("b32_stride64", 64, lds_b32<64>, 128, 4);
  HIP_CHECK(hipFree(d_table));
  HIP_CHECK(hipFree(d_out));
  HIP_CHECK(hipFree(probe));
  return 0;
}
