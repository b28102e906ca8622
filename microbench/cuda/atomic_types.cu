// atomic_types.cu -- global atomic throughput by operation, type and layout, every thread adding
// to its own address (no contention; the targets stay in L2):
//   red_f32_contig:  atomicAdd(float), result unused (RED), thread t -> target[t]: 8 adds per 32 B sector;
//   red_f32_sector:  the same, thread t -> target[8 t]: one add per sector (the sector rate of the L2's atomic units);
//   red_u32_contig:  atomicAdd(unsigned) (integer RED), contiguous;
//   red_f64_contig:  atomicAdd(double) (RED.F64), contiguous: 4 adds per sector;
//   atom_f32_contig: atomicAdd(float) whose result is used (ATOM: the value returns to the SM), contiguous.
// Per variant: operations per run and 30 run times (after 5 warm-up runs), with the clock of a
// 2 ms spin kernel run right after them (mb::witness_hz: the block-0 probe of an atomics kernel reads low).
#include "mb.h"

constexpr int kThreads = 512;
constexpr int kOps = 512;

template <typename T, int kStride, bool kReturn>
__global__ void atomic_type_kernel(T* __restrict__ target, T value, int ops, T* __restrict__ sink) {
  const size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  T* addr = target + tid * kStride;
  T acc = T(0);
  for (int k = 0; k < ops; ++k) {
    if constexpr (kReturn) {
      acc += atomicAdd(addr, value);  // the returned old value is used: ATOM, not RED
    } else {
      atomicAdd(addr, value);
    }
  }
  if constexpr (kReturn) {
    if (acc == T(-1)) sink[0] = acc;  // keeps the returns live; never true for the positive adds
  }
}

template <typename T, int kStride, bool kReturn>
void run(const char* name, const char* dtype, int grid, int ops) {
  const size_t threads = size_t(grid) * kThreads;
  T *target, *sink;
  CHECK(cudaMalloc(&target, threads * kStride * sizeof(T)));
  CHECK(cudaMalloc(&sink, sizeof(T)));
  CHECK(cudaMemset(target, 0, threads * kStride * sizeof(T)));
  auto t = mb::time_runs([&] { atomic_type_kernel<T, kStride, kReturn><<<grid, kThreads>>>(target, T(1), ops, sink); });
  const double witness = mb::witness_hz();
  char extra[320];
  std::snprintf(extra, sizeof extra,
                "\"ops_per_thread\":%d,\"grid\":%d,\"block\":%d,\"dtype\":\"%s\",\"stride_elements\":%d,\"returns\":%s,"
                "\"ops_per_sector\":%g,\"witness_sm_clock_hz\":%.6g",
                ops, grid, kThreads, dtype, kStride, kReturn ? "true" : "false",
                kStride * sizeof(T) >= 32 ? 1.0 : 32.0 / (kStride * sizeof(T)), witness);
  mb::result("atomic_types", name, "ops", double(threads) * ops, t, extra);
  CHECK(cudaFree(target));
  CHECK(cudaFree(sink));
}

int main() {
  mb::DeviceInfo dev = mb::device_info("atomic_types");
  const int grid = dev.sms * mb::blocks_per_sm(atomic_type_kernel<float, 1, false>, kThreads);
  run<float, 1, false>("red_f32_contig", "float", grid, kOps);
  run<float, 8, false>("red_f32_sector", "float", grid, kOps / 4);
  run<unsigned, 1, false>("red_u32_contig", "unsigned", grid, kOps);
  run<double, 1, false>("red_f64_contig", "double", grid, kOps / 2);
  run<float, 1, true>("atom_f32_contig", "float", grid, kOps / 2);
  return 0;
}
