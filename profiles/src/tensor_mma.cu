// tensor_mma -- category: tensor_compute
//
// Each warp keeps one fp16 A fragment (16x16) and one B fragment (16x8) in registers and
// issues mma.sync.m16n8k16 (fp16 in, fp32 accumulate) into 4 independent accumulators,
// 4096 times: 528 blocks x 8 warps x 4096 x 4 x 2048 FMA = 2.83e11 flop with no memory
// traffic in the loop. Only the tensor pipe is busy (HMMA.16816.F32); mma.sync on H100
// reaches ~60% of the dense fp16 peak (~640 TFLOP/s): ~0.45 ms.
#include <cuda_fp16.h>

#include "zoo.h"

constexpr int kIters = 4096;
constexpr int kAcc = 4;

__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// in: per thread 6 words (A regs a0..a3, B regs b0..b1, each 2 halves), laid out by
// global thread id. out: per thread 4 floats = sum of the kAcc accumulators.
extern "C" __global__ void __launch_bounds__(256)
tensor_mma_kernel(const uint32_t* __restrict__ in, int iters, float* __restrict__ out) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = in[gid * 6 + i];
  b[0] = in[gid * 6 + 4];
  b[1] = in[gid * 6 + 5];
  float acc[kAcc][4] = {};
  for (int k = 0; k < iters; ++k) {
#pragma unroll
    for (int j = 0; j < kAcc; ++j) mma16816(acc[j], a, b);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < kAcc; ++j) s += acc[j][i];
    out[gid * 4 + i] = s;
  }
}

int main(int argc, char** argv) {
  zoo::Session S("tensor_mma", argc, argv);
  dim3 block(256), grid(zoo::kNumSMs * 4);
  const unsigned threads = grid.x * block.x;
  // Random halves in [-1, 1) (exactly representable multiples of 1/256).
  std::vector<uint32_t> hin(size_t(threads) * 6);
  std::vector<float> hval(size_t(threads) * 12);  // the same values as floats
  zoo::Rng r(121);
  for (size_t i = 0; i < hin.size(); ++i) {
    float lo = float(int(r.below(512)) - 256) / 256.f;
    float hi = float(int(r.below(512)) - 256) / 256.f;
    __half hl = __float2half_rn(lo), hh = __float2half_rn(hi);
    uint16_t bl, bh;
    std::memcpy(&bl, &hl, 2);
    std::memcpy(&bh, &hh, 2);
    hin[i] = uint32_t(bl) | (uint32_t(bh) << 16);  // low half = first element
    hval[2 * i] = lo;
    hval[2 * i + 1] = hi;
  }
  uint32_t* in = zoo::to_device(hin);
  float* out = zoo::device_alloc<float>(size_t(threads) * 4);

  S.measure("tensor_mma_kernel", grid, block, 0, [&] {
    tensor_mma_kernel<<<grid, block>>>(in, kIters, out);
    CHECK_LAUNCH();
  });

  // Rebuild A (16x16) and B (16x8) of a few warps from the PTX fragment layouts and
  // compare D = kAcc * iters * (A x B).
  // fp32 accumulation inside the tensor core may truncate: allow a small absolute error
  // relative to the largest possible |D| (kAcc * iters * 16 products of magnitude <= 1).
  const double kTol = 2e-4 * kAcc * kIters * 16;
  auto hout = zoo::to_host(out, size_t(threads) * 4);
  for (unsigned w = 0; w < threads / 32; w += 397) {
    double A[16][16], B[16][8];
    for (int lane = 0; lane < 32; ++lane) {
      const float* v = &hval[size_t(w * 32 + lane) * 12];
      int g = lane >> 2, t = lane & 3;
      for (int i = 0; i < 8; ++i) {  // a0..a7: reg i/2, half i%2
        int row = g + ((i / 2) % 2) * 8, col = t * 2 + (i % 2) + (i / 4) * 8;
        A[row][col] = v[i];
      }
      for (int i = 0; i < 4; ++i) {  // b0..b3
        int k = t * 2 + (i % 2) + (i / 2) * 8;
        B[k][g] = v[8 + i];
      }
    }
    for (int lane = 0; lane < 32; ++lane) {
      int g = lane >> 2, t = lane & 3;
      for (int i = 0; i < 4; ++i) {
        int row = g + (i / 2) * 8, col = t * 2 + (i % 2);
        double ref = 0;
        for (int k = 0; k < 16; ++k) ref += A[row][k] * B[k][col];
        ref *= double(kAcc) * kIters;
        zoo::expect_close("d", size_t(w * 32 + lane) * 4 + i, hout[size_t(w * 32 + lane) * 4 + i],
                          ref, 2e-3, kTol);
      }
    }
  }
  zoo::check_ok("tensor_mma");
  CHECK(cudaFree(in)); CHECK(cudaFree(out));
  return 0;
}
