// vgpr_occupancy.hip -- how the VGPRs a kernel allocates limit waves per SIMD, and what that
// costs a latency-bound kernel.
//
// CDNA2/CDNA3 SIMDs have 512 VGPRs per lane (architectural VGPRs and AGPRs share the file),
// allocated per wave in granules of 8, and at most 8 waves per SIMD. The same kernel is built
// with a forced register count: an empty inline-asm statement that clobbers v<N-1> makes the
// register allocator count N VGPRs (and a255 adds the 256 AGPRs, 512 in all), so the occupancy
// API and the hardware see N. Counts 32..512 give 8, 8, 7, 6, 5, 4, 3, 2, 1 waves per SIMD.
// Work: every wave (block of 64 threads) walks its own chain of 256-byte nodes in a 2 MiB table
// (resident in L2): all 64 lanes load one node (coalesced), the next node's index is in it; so
// each wave has one load in flight and throughput grows with the waves resident per SIMD until
// another limit is reached. Grid: 4 x (CUs x 4 SIMDs x 8 waves) blocks. Per register count:
// node loads per run, 30 run times, the waves per SIMD the occupancy API reports and the
// register count hipFuncGetAttributes reports. Check: each wave's sum over the nodes it visited
// equals the host's walk (sampled waves) and the node where every wave stopped is right.
#include "mb_hip.h"

constexpr int kNodeWords = 64;                          // 256 B per node: one word per lane
constexpr uint32_t kNodes = (2u << 20) / (kNodeWords * 4);  // 2 MiB table: 8192 nodes
constexpr int kSteps = 512;

#define MB_OCC_BODY                                                                                 \
  const uint32_t wave = blockIdx.x;                                                                 \
  uint32_t node = (wave * 2654435761u) % kNodes;                                                    \
  uint32_t sum = 0;                                                                                 \
  for (int s = 0; s < kSteps; ++s) {                                                                \
    const uint32_t v = table[size_t(node) * kNodeWords + threadIdx.x];                              \
    sum += v;                                                                                       \
    node = v % kNodes;                                                                              \
  }                                                                                                 \
  if (threadIdx.x == 0) {                                                                           \
    out[2 * size_t(wave)] = sum;                                                                    \
    out[2 * size_t(wave) + 1] = node;                                                               \
  }

// One kernel per forced VGPR count (the clobber list must be a literal).
#define MB_OCC_KERNEL(N, ...)                                                                       \
  __global__ __launch_bounds__(64) void occ_##N(const uint32_t* __restrict__ table, uint32_t* out) { \
    asm volatile("; force the register count" ::: __VA_ARGS__);                                     \
    MB_OCC_BODY                                                                                     \
  }

MB_OCC_KERNEL(32, "v31")
MB_OCC_KERNEL(64, "v63")
MB_OCC_KERNEL(72, "v71")
MB_OCC_KERNEL(80, "v79")
MB_OCC_KERNEL(96, "v95")
MB_OCC_KERNEL(128, "v127")
MB_OCC_KERNEL(168, "v167")
MB_OCC_KERNEL(256, "v255")
#if !defined(__HIP_DEVICE_COMPILE__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
    defined(__gfx942__)
MB_OCC_KERNEL(512, "v255", "a255")  // AGPRs exist on CDNA only
#else
__global__ __launch_bounds__(64) void occ_512(const uint32_t* __restrict__ table, uint32_t* out) { MB_OCC_BODY }
#endif

int main() {
  mb::DeviceInfo dev = mb::device_info("vgpr_occupancy");
  // table: every word of a node holds the same next-node value (so any lane knows the next node)
  std::vector<uint32_t> table(size_t(kNodes) * kNodeWords);
  for (uint32_t n = 0; n < kNodes; ++n) {
    const uint32_t next = mb::word_at(mb::kSeed + 41, n);
    for (int w = 0; w < kNodeWords; ++w) table[size_t(n) * kNodeWords + w] = next;
  }
  const int waves = 4 * dev.cus * 4 * 8;
  uint32_t *d_table, *d_out;
  HIP_CHECK(hipMalloc(&d_table, table.size() * sizeof(uint32_t)));
  HIP_CHECK(hipMemcpy(d_table, table.data(), table.size() * sizeof(uint32_t), hipMemcpyHostToDevice));
  HIP_CHECK(hipMalloc(&d_out, 2 * size_t(waves) * sizeof(uint32_t)));
  std::vector<uint32_t> out(2 * size_t(waves));

  struct Variant {
    int vgprs;
    void (*kernel)(const uint32_t*, uint32_t*);
  };
  const Variant variants[] = {{32, occ_32},   {64, occ_64},   {72, occ_72},   {80, occ_80}, {96, occ_96},
                              {128, occ_128}, {168, occ_168}, {256, occ_256}, {512, occ_512}};
  for (const Variant& v : variants) {
    HIP_CHECK(hipMemset(d_out, 0, out.size() * sizeof(uint32_t)));
    auto t = mb::time_runs([&] { hipLaunchKernelGGL(v.kernel, dim3(waves), dim3(64), 0, 0, d_table, d_out); });
    HIP_CHECK(hipMemcpy(out.data(), d_out, out.size() * sizeof(uint32_t), hipMemcpyDeviceToHost));
    for (int w = 0; w < waves; w += 97) {  // sampled waves, host walk
      uint32_t node = (uint32_t(w) * 2654435761u) % kNodes, sum = 0;
      for (int s = 0; s < kSteps; ++s) {
        const uint32_t x = table[size_t(node) * kNodeWords];
        sum += x;
        node = x % kNodes;
      }
      if (out[2 * size_t(w)] != sum || out[2 * size_t(w) + 1] != node) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "occupancy vgpr_%d: wave %d walked the wrong chain", v.vgprs, w);
        mb::check_fail(buf);
      }
    }
    const int blocks = mb::blocks_per_cu(v.kernel, 64);
    hipFuncAttributes fa;
    int num_regs = -1;
    if (hipFuncGetAttributes(&fa, reinterpret_cast<const void*>(v.kernel)) == hipSuccess)
      num_regs = fa.numRegs;
    else
      (void)hipGetLastError();
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  "\"vgprs_forced\":%d,\"num_regs\":%d,\"blocks_per_cu\":%d,\"waves_per_simd\":%.4g,\"grid\":%d,"
                  "\"block\":64,\"steps\":%d,\"node_bytes\":%d,\"table_bytes\":%u",
                  v.vgprs, num_regs, blocks, blocks / 4.0, waves, kSteps, kNodeWords * 4, kNodes * kNodeWords * 4);
    mb::result("occupancy", "vgpr_" + std::to_string(v.vgprs), "ops", double(waves) * kSteps, t, extra);
  }
  HIP_CHECK(hipFree(d_table));
  HIP_CHECK(hipFree(d_out));
  return 0;
}
