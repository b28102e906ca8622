// mfma_throughput.hip -- Matrix Core (MFMA) throughput per precision, dense.
//
// Every wave issues, per loop step, four independent MFMAs (four accumulators, so that the
// dependent-accumulator latency is hidden) of one instruction per precision:
//   precision  CDNA2 (gfx90a)                  CDNA3 (gfx942)                   flops per instruction
//   fp64       v_mfma_f64_16x16x4f64           v_mfma_f64_16x16x4_f64           2*16*16*4   =  2048
//   fp32       v_mfma_f32_32x32x2f32           v_mfma_f32_32x32x2_f32           2*32*32*2   =  4096
//   fp16       v_mfma_f32_32x32x8f16           v_mfma_f32_32x32x8_f16           2*32*32*8   = 16384
//   bf16       v_mfma_f32_32x32x8bf16_1k       v_mfma_f32_32x32x8_bf16          2*32*32*8   = 16384
//   int8       v_mfma_i32_32x32x8i8            v_mfma_i32_32x32x16_i8           16384 / 32768
//   xf32       -                               v_mfma_f32_32x32x4_xf32          2*32*32*4   =  8192
//   fp8        -                               v_mfma_f32_32x32x16_fp8_fp8      2*32*32*16  = 32768
// (the instruction set differs between the two targets, so each kernel body is chosen by the
// arch macro of the device pass; on any other target a kernel reports itself unsupported).
// Grid: CUs x 2 blocks of 256 threads (8 waves per CU, 2 per SIMD). Per precision: operations per
// run, 30 run times and the core clock. Inputs are the encoding of 1 in each type, passed as
// kernel arguments. Check: the accumulator after N steps equals N times the one after 1 step
// (exact in every accumulator type at these sizes) and is not zero, in every lane of every wave.
#include "mb_hip.h"

#if defined(__gfx90a__)
#define MB_CDNA 2
#elif defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define MB_CDNA 3
#endif

typedef float v16f __attribute__((ext_vector_type(16)));
typedef double v4d __attribute__((ext_vector_type(4)));
typedef int v16i __attribute__((ext_vector_type(16)));
typedef _Float16 v4h __attribute__((ext_vector_type(4)));
typedef short v4s __attribute__((ext_vector_type(4)));
typedef float v2f __attribute__((ext_vector_type(2)));

constexpr int kThreads = 256;

enum Prec { kFp64, kFp32, kFp16, kBf16, kInt8, kXf32, kFp8, kNumPrec };
const char* const kPrecName[kNumPrec] = {"fp64", "fp32", "fp16", "bf16", "int8", "xf32", "fp8"};

// Arguments: one 64-bit word of input bits (each kernel takes what its instruction needs),
// steps, per-thread output (first accumulator element, as double), supported flag.
#define MB_STORE(acc0, acc1, acc2, acc3, idx)                                                     \
  out[blockIdx.x * size_t(blockDim.x) + threadIdx.x] =                                            \
      double(acc0[idx]) + double(acc1[idx]) + double(acc2[idx]) + double(acc3[idx]);              \
  if (blockIdx.x == 0 && threadIdx.x == 0) *supported = 1;

// (a kernel body compiled out for this target, or the host pass)
#define MB_UNUSED_ARGS \
  (void)bits;          \
  (void)steps;         \
  (void)out;           \
  (void)supported;     \
  (void)probe;

#define MB_LOOP(...)                                                                              \
  for (int s = 0; s < steps; ++s) {                                                               \
    c0 = __VA_ARGS__(a, b, c0, 0, 0, 0);                                                          \
    c1 = __VA_ARGS__(a, b, c1, 0, 0, 0);                                                          \
    c2 = __VA_ARGS__(a, b, c2, 0, 0, 0);                                                          \
    c3 = __VA_ARGS__(a, b, c3, 0, 0, 0);                                                          \
  }

__global__ __launch_bounds__(kThreads) void mfma_fp64(uint64_t bits, int steps, double* out, int* supported,
                                                      mb::ClockProbe* probe) {
#if defined(MB_CDNA)
  mb::probe_start(probe);
  double a, b;
  __builtin_memcpy(&a, &bits, 8);
  b = a;
  v4d c0 = {}, c1 = {}, c2 = {}, c3 = {};
  MB_LOOP(__builtin_amdgcn_mfma_f64_16x16x4f64)
  MB_STORE(c0, c1, c2, c3, 0)
  mb::probe_end(probe);
#else
  MB_UNUSED_ARGS
#endif
}

__global__ __launch_bounds__(kThreads) void mfma_fp32(uint64_t bits, int steps, double* out, int* supported,
                                                      mb::ClockProbe* probe) {
#if defined(MB_CDNA)
  mb::probe_start(probe);
  float a, b;
  const uint32_t lo = uint32_t(bits);
  __builtin_memcpy(&a, &lo, 4);
  b = a;
  v16f c0 = {}, c1 = {}, c2 = {}, c3 = {};
  MB_LOOP(__builtin_amdgcn_mfma_f32_32x32x2f32)
  MB_STORE(c0, c1, c2, c3, 0)
  mb::probe_end(probe);
#else
  MB_UNUSED_ARGS
#endif
}

__global__ __launch_bounds__(kThreads) void mfma_fp16(uint64_t bits, int steps, double* out, int* supported,
                                                      mb::ClockProbe* probe) {
#if defined(MB_CDNA)
  mb::probe_start(probe);
  v4h a, b;
  __builtin_memcpy(&a, &bits, 8);
  b = a;
  v16f c0 = {}, c1 = {}, c2 = {}, c3 = {};
  MB_LOOP(__builtin_amdgcn_mfma_f32_32x32x8f16)
  MB_STORE(c0, c1, c2, c3, 0)
  mb::probe_end(probe);
#else
  MB_UNUSED_ARGS
#endif
}

__global__ __launch_bounds__(kThreads) void mfma_bf16(uint64_t bits, int steps, double* out, int* supported,
                                                      mb::ClockProbe* probe) {
#if defined(MB_CDNA)
  mb::probe_start(probe);
  v4s a, b;
  __builtin_memcpy(&a, &bits, 8);
  b = a;
  v16f c0 = {}, c1 = {}, c2 = {}, c3 = {};
  MB_LOOP(__builtin_amdgcn_mfma_f32_32x32x8bf16_1k)
  MB_STORE(c0, c1, c2, c3, 0)
  mb::probe_end(probe);
#else
  MB_UNUSED_ARGS
#endif
}

__global__ __launch_bounds__(kThreads) void mfma_int8(uint64_t bits, int steps, double* out, int* supported,
                                                      mb::ClockProbe* probe) {
#if defined(MB_CDNA)
  mb::probe_start(probe);
  v16i c0 = {}, c1 = {}, c2 = {}, c3 = {};
#if MB_CDNA == 2
  const int a = int(uint32_t(bits)), b = a;  // 4 int8 values
  MB_LOOP(__builtin_amdgcn_mfma_i32_32x32x8i8)
#else
  const long a = long(bits), b = a;  // 8 int8 values
  MB_LOOP(__builtin_amdgcn_mfma_i32_32x32x16_i8)
#endif
  MB_STORE(c0, c1, c2, c3, 0)
  mb::probe_end(probe);
#else
  MB_UNUSED_ARGS
#endif
}

__global__ __launch_bounds__(kThreads) void mfma_xf32(uint64_t bits, int steps, double* out, int* supported,
                                                      mb::ClockProbe* probe) {
#if defined(MB_CDNA) && MB_CDNA == 3
  mb::probe_start(probe);
  float x;
  const uint32_t lo = uint32_t(bits);
  __builtin_memcpy(&x, &lo, 4);
  const v2f a = {x, x}, b = a;
  v16f c0 = {}, c1 = {}, c2 = {}, c3 = {};
  MB_LOOP(__builtin_amdgcn_mfma_f32_32x32x4_xf32)
  MB_STORE(c0, c1, c2, c3, 0)
  mb::probe_end(probe);
#else
  MB_UNUSED_ARGS
#endif
}

__global__ __launch_bounds__(kThreads) void mfma_fp8(uint64_t bits, int steps, double* out, int* supported,
                                                     mb::ClockProbe* probe) {
#if defined(MB_CDNA) && MB_CDNA == 3
  mb::probe_start(probe);
  const long a = long(bits), b = a;  // 8 fp8 values
  v16f c0 = {}, c1 = {}, c2 = {}, c3 = {};
  MB_LOOP(__builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8)
  MB_STORE(c0, c1, c2, c3, 0)
  mb::probe_end(probe);
#else
  MB_UNUSED_ARGS
#endif
}

typedef void (*MfmaKernel)(uint64_t, int, double*, int*, mb::ClockProbe*);

int main() {
  mb::DeviceInfo dev = mb::device_info("mfma_throughput");
  const bool cdna3 = dev.arch.rfind("gfx94", 0) == 0;
  const MfmaKernel kernels[kNumPrec] = {mfma_fp64, mfma_fp32, mfma_fp16, mfma_bf16, mfma_int8, mfma_xf32, mfma_fp8};
  const double flops[kNumPrec] = {2048, 4096, 16384, 16384, cdna3 ? 32768.0 : 16384.0, 8192, 32768};
  // input bits: the value 1 in each type, replicated to fill the operand
  const uint64_t ones[kNumPrec] = {
      0x3FF0000000000000ull,  // fp64 1.0
      0x3F800000ull,          // fp32 1.0
      0x3C003C003C003C00ull,  // 4 x fp16 1.0
      0x3F803F803F803F80ull,  // 4 x bf16 1.0
      0x0101010101010101ull,  // 8 x int8 1
      0x3F800000ull,          // fp32 1.0 (xf32 reads fp32 registers)
      0x4040404040404040ull,  // 8 x fp8 0x40 (1.0 in the E4M3 'FNUZ' encoding of gfx942; checked relatively)
  };
  const int grid = dev.cus * 2;
  const size_t threads = size_t(grid) * kThreads;
  double* d_out;
  int* d_sup;
  mb::ClockProbe* probe;
  HIP_CHECK(hipMalloc(&d_out, threads * sizeof(double)));
  HIP_CHECK(hipMalloc(&d_sup, sizeof(int)));
  HIP_CHECK(hipMalloc(&probe, sizeof(mb::ClockProbe)));
  std::vector<double> one(threads), many(threads);
  for (int p = 0; p < kNumPrec; ++p) {
    // steps: about the same number of operations for every precision (2^27 per wave per accumulator)
    const int steps = int((1 << 27) / flops[p]);
    HIP_CHECK(hipMemset(d_sup, 0, sizeof(int)));
    hipLaunchKernelGGL(kernels[p], dim3(grid), dim3(kThreads), 0, 0, ones[p], 1, d_out, d_sup, probe);
    CHECK_LAUNCH();
    HIP_CHECK(hipDeviceSynchronize());
    int sup = 0;
    HIP_CHECK(hipMemcpy(&sup, d_sup, sizeof sup, hipMemcpyDeviceToHost));
    if (!sup) {
      std::fprintf(stderr, "mfma_throughput: %s not built for %s, skipped\n", kPrecName[p], dev.arch.c_str());
      continue;
    }
    HIP_CHECK(hipMemcpy(one.data(), d_out, threads * sizeof(double), hipMemcpyDeviceToHost));
    auto t = mb::time_runs(
        [&] { hipLaunchKernelGGL(kernels[p], dim3(grid), dim3(kThreads), 0, 0, ones[p], steps, d_out, d_sup, probe); });
    HIP_CHECK(hipMemcpy(many.data(), d_out, threads * sizeof(double), hipMemcpyDeviceToHost));
    for (size_t i = 0; i < threads; ++i)
      if (one[i] == 0.0 || many[i] != double(steps) * one[i]) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "mfma %s: thread %zu accumulated %.17g after %d steps, %.17g after 1", kPrecName[p],
                      i, many[i], steps, one[i]);
        mb::check_fail(buf);
      }
    const double ops = double(threads / 64) * steps * 4 * flops[p];
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  "\"precision\":\"%s\",\"flops_per_instruction\":%.0f,\"steps\":%d,\"accumulators\":4,\"grid\":%d,"
                  "\"block\":%d,\"arch\":\"%s\",\"sm_clock_hz\":%.6g",
                  kPrecName[p], flops[p], steps, grid, kThreads, mb::json_escape(dev.arch).c_str(),
                  mb::probe_hz(probe, dev));
    mb::result("mfma", kPrecName[p], "ops", ops, t, extra);
  }
  HIP_CHECK(hipFree(d_out));
  HIP_CHECK(hipFree(d_sup));
  HIP_CHECK(hipFree(probe));
  return 0;
}
