// pipes.cu -- per-pipe issue throughput and dependent-chain latency of the arithmetic units.
//
// Operations (each one inline PTX, so the instruction is exactly the one named; SASS checked;
// the constants a, b are kernel arguments, so that no operand becomes an immediate):
//   ffma:  fma.rn.f32 x, x, a, b            -> FFMA          (FMA pipe; 2 flops)
//   dfma:  fma.rn.f64 x, x, a, b            -> DFMA          (FP64 pipe; 2 flops)
//   int:   x = (x + a + b) ^ b             -> IADD3 + LOP3  (ALU pipe; 2 integer ops per step)
//   imad:  mad.lo.u32 x, x, a, b            -> IMAD          (1 integer op)
//   rsqrt: rsqrt.approx.ftz.f32 x, x        -> MUFU.RSQ      (SFU; x -> 1/sqrt(x), converges to 1)
//   ex2:   ex2.approx.ftz.f32 x, -x         -> MUFU.EX2      (SFU; x -> 2^-x, converges to 0.64)
//   sin:   sin.approx.ftz.f32 x, x          -> FMUL + MUFU.SIN (counted as one SFU op)
// Throughput (bench "pipes", name "<op>_tp"): every SM full (blocks of 256 threads, 64 warps
//   per SM), 8 independent chains per thread, 32 steps of each chain per loop iteration
//   (256 operations between two branches). Lane operations per run / event time / SM clock
//   (clock64 vs %globaltimer of block 0) / SMs = operations per clock per SM. The final values
//   of a sample of threads are recomputed on the host (exactly for ffma/dfma/int/imad, within
//   a tolerance for the approximate SFU functions). 20 runs after 3 warm-up runs.
// Latency (name "<op>_lat"): one warp, one dependent chain; 16 chunks of 1024 dependent
//   steps, clock64 around each chunk: cycles per instruction per chunk.
#include "mb.h"

#include <cmath>

enum Op { kFfma, kDfma, kInt, kImad, kRsqrt, kEx2, kSin };

template <int kOp> struct Pipe;

// Starting values in [0.5, 3): sums of powers of two, exact whether or not the compiler fuses
// the multiply-add, so host and device start from the same bits.
__host__ __device__ inline float init_f(uint32_t tid, int i) { return 0.5f + float(tid % 1024) * (1.0f / 1024.0f) + 0.125f * i; }

template <> struct Pipe<kFfma> {
  using T = float;
  static constexpr const char* name = "ffma";
  static constexpr int insts = 1;      // SASS instructions per step
  static constexpr double flops = 2;   // flops per step (0: integer/SFU op counts instead)
  static constexpr double ops = 1;     // lane operations per step counted for the parameter
  static constexpr int tp_iters = 1024;
  __host__ __device__ static T a() { return 0.99987f; }
  __host__ __device__ static T b() { return 1.3e-4f; }
  __device__ static void step(T& x, T a, T b) { asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b)); }
  static T host_step(T x, T a, T b) { return std::fmaf(x, a, b); }
  __host__ __device__ static T init(uint32_t tid, int i) { return init_f(tid, i); }
};
template <> struct Pipe<kDfma> {
  using T = double;
  static constexpr const char* name = "dfma";
  static constexpr int insts = 1;
  static constexpr double flops = 2, ops = 1;
  static constexpr int tp_iters = 512;
  __host__ __device__ static T a() { return 0.99987; }
  __host__ __device__ static T b() { return 1.3e-4; }
  __device__ static void step(T& x, T a, T b) { asm volatile("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x) : "d"(a), "d"(b)); }
  static T host_step(T x, T a, T b) { return std::fma(x, a, b); }
  __host__ __device__ static T init(uint32_t tid, int i) { return double(init_f(tid, i)); }
};
template <> struct Pipe<kInt> {
  using T = uint32_t;
  static constexpr const char* name = "int";
  static constexpr int insts = 2;
  static constexpr double flops = 0, ops = 2;
  static constexpr int tp_iters = 256;
  __host__ __device__ static T a() { return 0x9E3779B9u; }
  __host__ __device__ static T b() { return 0x85EBCA6Bu; }
  // x + a + b as one three-input add (a two-input add becomes VIADD on sm_90, not IADD3)
  __device__ static void step(T& x, T a, T b) {
    asm volatile("{ .reg .u32 t; add.u32 t, %0, %1; add.u32 %0, t, %2; }" : "+r"(x) : "r"(a), "r"(b));
    asm volatile("xor.b32 %0, %0, %1;" : "+r"(x) : "r"(b));
  }
  static T host_step(T x, T a, T b) { return (x + a + b) ^ b; }
  __host__ __device__ static T init(uint32_t tid, int i) { return tid * 2654435761u + uint32_t(i) * 40503u + 1u; }
};
template <> struct Pipe<kImad> {
  using T = uint32_t;
  static constexpr const char* name = "imad";
  static constexpr int insts = 1;
  static constexpr double flops = 0, ops = 1;
  static constexpr int tp_iters = 512;
  __host__ __device__ static T a() { return 0x2C1B3C6Du; }  // odd: x -> a*x+b is a bijection
  __host__ __device__ static T b() { return 0x297A2D39u; }
  __device__ static void step(T& x, T a, T b) { asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b)); }
  static T host_step(T x, T a, T b) { return x * a + b; }
  __host__ __device__ static T init(uint32_t tid, int i) { return tid * 2654435761u + uint32_t(i) * 40503u + 1u; }
};
template <> struct Pipe<kRsqrt> {
  using T = float;
  static constexpr const char* name = "rsqrt";
  static constexpr int insts = 1;
  static constexpr double flops = 0, ops = 1;
  static constexpr int tp_iters = 128;
  __host__ __device__ static T a() { return 0.f; }
  __host__ __device__ static T b() { return 0.f; }
  __device__ static void step(T& x, T, T) { asm volatile("rsqrt.approx.ftz.f32 %0, %0;" : "+f"(x)); }
  static T host_step(T x, T, T) { return float(1.0 / std::sqrt(double(x))); }
  __host__ __device__ static T init(uint32_t tid, int i) { return init_f(tid, i); }
};
template <> struct Pipe<kEx2> {
  using T = float;
  static constexpr const char* name = "ex2";
  static constexpr int insts = 1;
  static constexpr double flops = 0, ops = 1;
  static constexpr int tp_iters = 128;
  __host__ __device__ static T a() { return 0.f; }
  __host__ __device__ static T b() { return 0.f; }
  __device__ static void step(T& x, T, T) { asm volatile("{ .reg .f32 t; neg.f32 t, %0; ex2.approx.ftz.f32 %0, t; }" : "+f"(x)); }
  static T host_step(T x, T, T) { return float(std::exp2(-double(x))); }
  __host__ __device__ static T init(uint32_t tid, int i) { return init_f(tid, i); }
};
template <> struct Pipe<kSin> {
  using T = float;
  static constexpr const char* name = "sin";
  static constexpr int insts = 2;  // FMUL (scale to revolutions) + MUFU.SIN
  static constexpr double flops = 0, ops = 1;
  static constexpr int tp_iters = 128;
  __host__ __device__ static T a() { return 0.f; }
  __host__ __device__ static T b() { return 0.f; }
  __device__ static void step(T& x, T, T) { asm volatile("sin.approx.ftz.f32 %0, %0;" : "+f"(x)); }
  static T host_step(T x, T, T) { return float(std::sin(double(x))); }
  __host__ __device__ static T init(uint32_t tid, int i) { return init_f(tid, i); }
};

constexpr int kIlp = 8, kUnroll = 32, kThreads = 256;
constexpr int kLatSteps = 1024, kLatChunks = 16;

template <int kOp>
__global__ void __launch_bounds__(kThreads) tp_kernel(typename Pipe<kOp>::T a, typename Pipe<kOp>::T b, int iters,
                                                      typename Pipe<kOp>::T* out, mb::ClockProbe* probe) {
  using P = Pipe<kOp>;
  using T = typename P::T;
  mb::probe_start(probe);
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  T x[kIlp];
#pragma unroll
  for (int i = 0; i < kIlp; ++i) x[i] = P::init(tid, i);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int i = 0; i < kIlp; ++i) P::step(x[i], a, b);
    }
  }
#pragma unroll
  for (int i = 0; i < kIlp; ++i) out[size_t(tid) * kIlp + i] = x[i];
  mb::probe_end(probe);
}

template <int kOp>
__global__ void lat_kernel(typename Pipe<kOp>::T a, typename Pipe<kOp>::T b, typename Pipe<kOp>::T* out,
                           unsigned long long* cycles) {
  using P = Pipe<kOp>;
  using T = typename P::T;
  T x = P::init(threadIdx.x, 0);
  for (int c = 0; c < kLatChunks; ++c) {
    const unsigned long long c0 = clock64();
#pragma unroll
    for (int s = 0; s < kLatSteps; ++s) P::step(x, a, b);
    const unsigned long long c1 = clock64();
    if (threadIdx.x == 0) cycles[c] = c1 - c0;
  }
  out[threadIdx.x] = x;
}

template <typename T>
bool close_enough(T got, T want, int op) {
  if (op == kFfma || op == kDfma || op == kInt || op == kImad) return got == want;  // bit-exact
  const double g = double(got), w = double(want);
  if (!std::isfinite(g)) return false;
  return std::fabs(g - w) <= (op == kSin ? 2e-2 : 1e-3) * std::max(1.0, std::fabs(w));
}

template <int kOp>
void run_op(const mb::DeviceInfo& dev, mb::ClockProbe* probe) {
  using P = Pipe<kOp>;
  using T = typename P::T;
  // ---- throughput ----
  const int bps = mb::blocks_per_sm(tp_kernel<kOp>, kThreads);
  const int grid = dev.sms * bps;
  const size_t threads = size_t(grid) * kThreads;
  T* d_out;
  CHECK(cudaMalloc(&d_out, threads * kIlp * sizeof(T)));
  const int iters = P::tp_iters;
  auto t = mb::time_runs([&] { tp_kernel<kOp><<<grid, kThreads>>>(P::a(), P::b(), iters, d_out, probe); }, 3, 20);
  const double hz = mb::probe_hz(probe);
  std::vector<T> out(threads * kIlp);
  CHECK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(T), cudaMemcpyDeviceToHost));
  size_t checked = 0, bad = 0;
  for (size_t tid = 0; tid < threads; tid += 997) {  // a sample of threads across the whole grid
    for (int i = 0; i < kIlp; ++i) {
      T x = P::init(uint32_t(tid), i);
      for (long s = 0; s < long(iters) * kUnroll; ++s) x = P::host_step(x, P::a(), P::b());
      ++checked;
      if (!close_enough(out[tid * kIlp + i], x, kOp)) ++bad;
    }
  }
  if (bad) std::printf("CHECK_FAIL pipes %s_tp: %zu of %zu chains differ from the host\n", P::name, bad, checked);
  const double steps = double(threads) * kIlp * iters * kUnroll;
  const double amount = P::flops > 0 ? steps * P::flops : steps * P::ops;
  mb::result("pipes", std::string(P::name) + "_tp", P::flops > 0 ? "flops" : "ops", amount, t,
             mb::Extra().str("op", P::name).str("kind", "throughput").num("grid", grid).num("block", kThreads)
                 .num("blocks_per_sm", bps).num("sm_count", dev.sms).num("chains_per_thread", kIlp)
                 .num("steps_per_chain", double(iters) * kUnroll).num("instructions", steps * P::insts)
                 .num("lane_ops", steps * P::ops).str("check", mb::check_word(bad == 0)).num("sm_clock_hz", hz));
  CHECK(cudaFree(d_out));

  // ---- latency ----
  T* d_lat;
  unsigned long long* d_cycles;
  CHECK(cudaMalloc(&d_lat, 32 * sizeof(T)));
  CHECK(cudaMalloc(&d_cycles, kLatChunks * sizeof(unsigned long long)));
  std::vector<double> cpi;
  auto tl = mb::time_runs_with([&] { lat_kernel<kOp><<<1, 32>>>(P::a(), P::b(), d_lat, d_cycles); },
                               [&] {
                                 std::vector<unsigned long long> c(kLatChunks);
                                 CHECK(cudaMemcpy(c.data(), d_cycles, c.size() * sizeof(c[0]), cudaMemcpyDeviceToHost));
                                 for (auto v : c) cpi.push_back(double(v) / (double(kLatSteps) * P::insts));
                               },
                               1, 2);
  T lat_out[32];
  CHECK(cudaMemcpy(lat_out, d_lat, sizeof lat_out, cudaMemcpyDeviceToHost));
  bool ok = true;
  for (int lane = 0; lane < 32; lane += 31) {
    T x = P::init(lane, 0);
    for (long s = 0; s < long(kLatSteps) * kLatChunks; ++s) x = P::host_step(x, P::a(), P::b());
    ok = ok && close_enough(lat_out[lane], x, kOp);
  }
  if (!ok) std::printf("CHECK_FAIL pipes %s_lat: chain result differs from the host\n", P::name);
  mb::result("pipes", std::string(P::name) + "_lat", "steps", double(kLatSteps), tl,
             mb::Extra().str("op", P::name).str("kind", "latency").num("instructions_per_step", P::insts)
                 .num("steps_per_chunk", kLatSteps).list("cycles_per_op", cpi).str("check", mb::check_word(ok)));
  CHECK(cudaFree(d_lat));
  CHECK(cudaFree(d_cycles));
}

int main() {
  mb::DeviceInfo dev = mb::device_info("pipes");
  mb::ClockProbe* probe;
  CHECK(cudaMalloc(&probe, sizeof(mb::ClockProbe)));
  mb::watch_probe(probe);  // each timed run's SM clock goes into its MB_RESULT
  run_op<kFfma>(dev, probe);
  run_op<kDfma>(dev, probe);
  run_op<kInt>(dev, probe);
  run_op<kImad>(dev, probe);
  run_op<kRsqrt>(dev, probe);
  run_op<kEx2>(dev, probe);
  run_op<kSin>(dev, probe);
  CHECK(cudaFree(probe));
  return 0;
}
