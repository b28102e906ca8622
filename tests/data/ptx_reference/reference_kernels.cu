// Reference kernels for the PTX interpreter (perfmodel/static/interpreter.py): small kernels,
// one instruction class each, with deterministic inputs that include edge values. Run once on
// a GPU; tests/test_ptx_reference.py interprets the same kernels' PTX on the recorded inputs
// and compares with the recorded outputs.
//
// Build and run (H100; the program also builds with -arch=sm_80):
//   nvcc -arch=sm_90a -O3 -o reference_kernels reference_kernels.cu
//   ./reference_kernels OUTDIR
// OUTDIR receives, per launch L and buffer B, L.B.in.bin (before the launch) and L.B.out.bin
// (after it), raw little-endian, and launches.json describing every launch (kernel, grid,
// block, dynamic shared bytes, arguments in order, buffers with their dtype). A launch's name
// is its kernel's name unless the kernel is launched twice. tests/data/ptx_reference/h100/ is
// that directory as recorded on an H100 80GB HBM3 (driver 580.159.04, CUDA 13.0 runtime; built
// with the PyPI nvcc 13.0.88); two runs gave identical files.
//
// Every kernel is extern "C" (unmangled names). Results written to global memory are
// order-independent (atomics only combine with commutative, associative, exact operations),
// so one GPU run is the reference. Division by zero (unspecified in PTX) is avoided.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t err_ = (call);                                                                \
        if (err_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                  \
                    cudaGetErrorString(err_));                                                    \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

// ------------------------------------------------------------------------------------------
// Kernels. Results of op k for thread i go to out[k * N + i] (N threads) unless said otherwise.
// ------------------------------------------------------------------------------------------
__device__ __forceinline__ unsigned gid() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ unsigned nthreads() { return gridDim.x * blockDim.x; }

// 32-bit integer arithmetic. Signed div/rem via PTX so that INT_MIN / -1 is not C UB.
extern "C" __global__ void ref_int32_arith(const int* a, const int* b, int* out, long long* out64) {
    unsigned i = gid(), n = nthreads();
    int x = a[i], y = b[i], c = a[(i + 1) % n];
    unsigned ux = x, uy = y;
    int d = y == 0 ? 3 : y;  // no division by zero (unspecified in PTX)
    unsigned ud = d;
    int k = 0;
    out[k++ * n + i] = x + y;
    out[k++ * n + i] = x - y;
    out[k++ * n + i] = x * y;
    out[k++ * n + i] = __mulhi(x, y);
    out[k++ * n + i] = (int)__umulhi(ux, uy);
    out[k++ * n + i] = x * y + c;
    int q, r, t;
    asm("div.s32 %0, %1, %2;" : "=r"(q) : "r"(x), "r"(d));
    asm("rem.s32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(d));
    out[k++ * n + i] = q;
    out[k++ * n + i] = r;
    out[k++ * n + i] = (int)(ux / ud);
    out[k++ * n + i] = (int)(ux % ud);
    out[k++ * n + i] = min(x, y);
    out[k++ * n + i] = max(x, y);
    out[k++ * n + i] = (int)min(ux, uy);
    out[k++ * n + i] = (int)max(ux, uy);
    asm("abs.s32 %0, %1;" : "=r"(t) : "r"(x));
    out[k++ * n + i] = t;
    asm("neg.s32 %0, %1;" : "=r"(t) : "r"(x));
    out[k++ * n + i] = t;
    out[k++ * n + i] = __mul24(x, y);
    out[k++ * n + i] = (int)__umul24(ux, uy);
    asm("mad.hi.s32 %0, %1, %2, %3;" : "=r"(t) : "r"(x), "r"(y), "r"(c));
    out[k++ * n + i] = t;
    asm("add.sat.s32 %0, %1, %2;" : "=r"(t) : "r"(x), "r"(y));
    out[k++ * n + i] = t;
    asm("sub.sat.s32 %0, %1, %2;" : "=r"(t) : "r"(x), "r"(y));
    out[k++ * n + i] = t;
    out64[0 * n + i] = (long long)x * y;                             // mul.wide.s32
    out64[1 * n + i] = (long long)((unsigned long long)ux * uy);     // mul.wide.u32
    long long w;
    asm("mad.wide.s32 %0, %1, %2, %3;" : "=l"(w) : "r"(x), "r"(y), "l"((long long)c << 20));
    out64[2 * n + i] = w;
}

// 64-bit integer arithmetic.
extern "C" __global__ void ref_int64_arith(const long long* a, const long long* b, long long* out) {
    unsigned i = gid(), n = nthreads();
    long long x = a[i], y = b[i], c = a[(i + 3) % n];
    unsigned long long ux = x, uy = y;
    long long d = y == 0 ? 5 : y;
    unsigned long long ud = d;
    long long q, r, t;
    int k = 0;
    out[k++ * n + i] = x + y;
    out[k++ * n + i] = x - y;
    out[k++ * n + i] = (long long)(ux * uy);
    out[k++ * n + i] = __mul64hi(x, y);
    out[k++ * n + i] = (long long)__umul64hi(ux, uy);
    out[k++ * n + i] = (long long)(ux * uy + (unsigned long long)c);
    asm("div.s64 %0, %1, %2;" : "=l"(q) : "l"(x), "l"(d));
    asm("rem.s64 %0, %1, %2;" : "=l"(r) : "l"(x), "l"(d));
    out[k++ * n + i] = q;
    out[k++ * n + i] = r;
    out[k++ * n + i] = (long long)(ux / ud);
    out[k++ * n + i] = (long long)(ux % ud);
    out[k++ * n + i] = min(x, y);
    out[k++ * n + i] = max(x, y);
    out[k++ * n + i] = (long long)min(ux, uy);
    out[k++ * n + i] = (long long)max(ux, uy);
    asm("abs.s64 %0, %1;" : "=l"(t) : "l"(x));
    out[k++ * n + i] = t;
    asm("neg.s64 %0, %1;" : "=l"(t) : "l"(x));
    out[k++ * n + i] = t;
}

// Logic and bit manipulation (32- and 64-bit).
extern "C" __global__ void ref_bitops(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out,
                                      unsigned long long* out64) {
    unsigned i = gid(), n = nthreads();
    unsigned x = a[i], y = b[i], z = c[i], t;
    int k = 0;
    out[k++ * n + i] = x & y;
    out[k++ * n + i] = x | y;
    out[k++ * n + i] = x ^ y;
    out[k++ * n + i] = ~x;
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(t) : "r"(x), "r"(y), "r"(z));  // xor3
    out[k++ * n + i] = t;
    asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(t) : "r"(x), "r"(y), "r"(z));  // majority
    out[k++ * n + i] = t;
    asm("lop3.b32 %0, %1, %2, %3, 0xCA;" : "=r"(t) : "r"(x), "r"(y), "r"(z));  // x ? y : z bitwise
    out[k++ * n + i] = t;
    asm("lop3.b32 %0, %1, %2, %3, 0x01;" : "=r"(t) : "r"(x), "r"(y), "r"(z));  // ~(x|y|z)
    out[k++ * n + i] = t;
    out[k++ * n + i] = __byte_perm(x, y, z & 0xFFFF);  // prmt, selectors incl. sign replication
    out[k++ * n + i] = __byte_perm(x, y, 0x5140);
    out[k++ * n + i] = __popc(x);
    out[k++ * n + i] = __clz(x);
    out[k++ * n + i] = __brev(x);
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(t) : "r"(x), "r"(z & 63), "r"((z >> 8) & 63));
    out[k++ * n + i] = t;
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(t) : "r"(x), "r"(z & 63), "r"((z >> 8) & 63));
    out[k++ * n + i] = t;
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(t) : "r"(x), "r"(y), "r"(z & 63), "r"((z >> 8) & 63));
    out[k++ * n + i] = t;
    unsigned long long X = ((unsigned long long)x << 32) | y, Y = ((unsigned long long)z << 32) | x;
    k = 0;
    out64[k++ * n + i] = X & Y;
    out64[k++ * n + i] = X | Y;
    out64[k++ * n + i] = X ^ Y;
    out64[k++ * n + i] = ~X;
    out64[k++ * n + i] = __popcll(X);
    out64[k++ * n + i] = __clzll(X);
    out64[k++ * n + i] = __brevll(X);
}

// Find-first-set / bfind (__ffs, __ffsll, bfind via PTX).
extern "C" __global__ void ref_bfind(const unsigned* a, int* out) {
    unsigned i = gid(), n = nthreads();
    unsigned x = a[i], t;
    int s = (int)x;
    out[0 * n + i] = __ffs(s);
    out[1 * n + i] = __ffsll(((long long)s << 32) | x);
    asm("bfind.u32 %0, %1;" : "=r"(t) : "r"(x));
    out[2 * n + i] = t;
    asm("bfind.s32 %0, %1;" : "=r"(t) : "r"(s));
    out[3 * n + i] = t;
    asm("bfind.shiftamt.u32 %0, %1;" : "=r"(t) : "r"(x));
    out[4 * n + i] = t;
}

// Shifts, including counts >= the width (PTX clamps them).
extern "C" __global__ void ref_shifts(const unsigned* a, const unsigned* s, unsigned* out, unsigned long long* out64) {
    unsigned i = gid(), n = nthreads();
    unsigned x = a[i], c = s[i], t;
    int sx = (int)x;
    int k = 0;
    asm("shl.b32 %0, %1, %2;" : "=r"(t) : "r"(x), "r"(c));
    out[k++ * n + i] = t;
    asm("shr.u32 %0, %1, %2;" : "=r"(t) : "r"(x), "r"(c));
    out[k++ * n + i] = t;
    asm("shr.s32 %0, %1, %2;" : "=r"(t) : "r"(sx), "r"(c));
    out[k++ * n + i] = t;
    out[k++ * n + i] = x << (c & 31);
    out[k++ * n + i] = x >> (c & 31);
    out[k++ * n + i] = (unsigned)(sx >> (c & 31));
    out[k++ * n + i] = x << 7;
    out[k++ * n + i] = (unsigned)(sx >> 9);
    unsigned long long X = ((unsigned long long)x << 32) | (x ^ 0x9E3779B9u), T;
    long long SX = (long long)X;
    unsigned c64 = c + (c >> 2);  // 0 .. 78: also past 64
    k = 0;
    asm("shl.b64 %0, %1, %2;" : "=l"(T) : "l"(X), "r"(c64));
    out64[k++ * n + i] = T;
    asm("shr.u64 %0, %1, %2;" : "=l"(T) : "l"(X), "r"(c64));
    out64[k++ * n + i] = T;
    asm("shr.s64 %0, %1, %2;" : "=l"(T) : "l"(SX), "r"(c64));
    out64[k++ * n + i] = T;
    out64[k++ * n + i] = X << (c64 & 63);
    out64[k++ * n + i] = (unsigned long long)(SX >> (c64 & 63));
}

// Funnel shifts (shf.l/shf.r, wrap and clamp).
extern "C" __global__ void ref_funnelshift(const unsigned* a, const unsigned* s, unsigned* out) {
    unsigned i = gid(), n = nthreads();
    unsigned lo = a[i], hi = a[(i + 5) % n] ^ 0xDEADBEEFu, c = s[i];
    out[0 * n + i] = __funnelshift_l(lo, hi, c);
    out[1 * n + i] = __funnelshift_lc(lo, hi, c);
    out[2 * n + i] = __funnelshift_r(lo, hi, c);
    out[3 * n + i] = __funnelshift_rc(lo, hi, c);
}

// IEEE-exact fp32 arithmetic (correctly rounded in PTX without -use_fast_math).
extern "C" __global__ void ref_fp32_arith(const float* a, const float* b, float* out) {
    unsigned i = gid(), n = nthreads();
    float x = a[i], y = b[i];
    int k = 0;
    out[k++ * n + i] = x + y;
    out[k++ * n + i] = x - y;
    out[k++ * n + i] = x * y;
    out[k++ * n + i] = x / y;  // div.rn.f32
    out[k++ * n + i] = 1.0f / x;
    out[k++ * n + i] = sqrtf(x);  // sqrt.rn.f32
    out[k++ * n + i] = fminf(x, y);
    out[k++ * n + i] = fmaxf(x, y);
    out[k++ * n + i] = copysignf(x, y);
    out[k++ * n + i] = fabsf(x);
    out[k++ * n + i] = -x;
    out[k++ * n + i] = __fadd_rn(x, 1.5f);
    out[k++ * n + i] = __fmul_rn(x, 0.1f);
    out[k++ * n + i] = __frcp_rn(x);
    out[k++ * n + i] = __saturatef(x);  // cvt.sat.f32.f32: NaN and -0 give +0
}

// fmaf: a*b+c with a single rounding (includes cases where rounding twice differs).
extern "C" __global__ void ref_fp32_fma(const float* a, const float* b, const float* c, float* out) {
    unsigned i = gid();
    out[i] = fmaf(a[i], b[i], c[i]);
}

// Rounding to integral values (cvt.rmi/rpi/rzi/rni .f32.f32 and .f64.f64).
extern "C" __global__ void ref_fp_round(const float* a, float* out, double* out64) {
    unsigned i = gid(), n = nthreads();
    float x = a[i];
    double d = (double)x * 1.25;
    int k = 0;
    out[k++ * n + i] = floorf(x);
    out[k++ * n + i] = ceilf(x);
    out[k++ * n + i] = truncf(x);
    out[k++ * n + i] = rintf(x);
    out[k++ * n + i] = roundf(x);
    k = 0;
    out64[k++ * n + i] = floor(d);
    out64[k++ * n + i] = ceil(d);
    out64[k++ * n + i] = trunc(d);
    out64[k++ * n + i] = rint(d);
}

// Directed rounding of fp32 arithmetic (.rz/.rm/.rp).
extern "C" __global__ void ref_fp32_directed(const float* a, const float* b, float* out) {
    unsigned i = gid(), n = nthreads();
    float x = a[i], y = b[i];
    int k = 0;
    out[k++ * n + i] = __fadd_rz(x, y);
    out[k++ * n + i] = __fadd_rd(x, y);
    out[k++ * n + i] = __fadd_ru(x, y);
    out[k++ * n + i] = __fmul_rz(x, y);
    out[k++ * n + i] = __fmul_rd(x, y);
    out[k++ * n + i] = __fmul_ru(x, y);
    out[k++ * n + i] = __fdiv_rz(x, y);
    out[k++ * n + i] = __fdiv_ru(x, y);
    out[k++ * n + i] = __fsqrt_rd(x);
    out[k++ * n + i] = __fmaf_rz(x, y, 1.0f);
}

// Approximate fp32 functions (MUFU). Separate buffers: each has its own tolerance.
extern "C" __global__ void ref_fp32_approx(const float* a, const float* b, float* exps, float* logs, float* trig,
                                           float* divs) {
    unsigned i = gid(), n = nthreads();
    float x = a[i], y = b[i];  // x in [-10, 10], y > 0
    exps[0 * n + i] = __expf(x);
    exps[1 * n + i] = exp2f(x);
    exps[2 * n + i] = __exp10f(x * 0.25f);
    exps[3 * n + i] = __powf(y, x * 0.5f);
    logs[0 * n + i] = __logf(y);
    logs[1 * n + i] = __log2f(y);
    logs[2 * n + i] = __log10f(y);
    trig[0 * n + i] = __sinf(x);
    trig[1 * n + i] = __cosf(x);
    divs[0 * n + i] = __fdividef(x, y);
    divs[1 * n + i] = rsqrtf(y);
}

// IEEE-exact fp64 arithmetic (no contraction: separate operations).
extern "C" __global__ void ref_fp64_arith(const double* a, const double* b, double* out) {
    unsigned i = gid(), n = nthreads();
    double x = a[i], y = b[i];
    int k = 0;
    out[k++ * n + i] = x + y;
    out[k++ * n + i] = x - y;
    out[k++ * n + i] = x * y;
    out[k++ * n + i] = x / y;
    out[k++ * n + i] = 1.0 / x;
    out[k++ * n + i] = sqrt(x);
    out[k++ * n + i] = fmin(x, y);
    out[k++ * n + i] = fmax(x, y);
    out[k++ * n + i] = copysign(x, y);
    out[k++ * n + i] = fabs(x);
    out[k++ * n + i] = -x;
}

// fma (f64): single rounding.
extern "C" __global__ void ref_fp64_fma(const double* a, const double* b, const double* c, double* out) {
    unsigned i = gid();
    out[i] = fma(a[i], b[i], c[i]);
}

// Scalar fp16: conversions and arithmetic. Outputs are raw half bits.
extern "C" __global__ void ref_f16(const float* a, const float* b, unsigned short* out, float* back) {
    unsigned i = gid(), n = nthreads();
    __half x = __float2half_rn(a[i]), y = __float2half_rn(b[i]);
    int k = 0;
    out[k++ * n + i] = __half_as_ushort(x);
    out[k++ * n + i] = __half_as_ushort(__float2half_rz(a[i]));
    out[k++ * n + i] = __half_as_ushort(__hadd(x, y));
    out[k++ * n + i] = __half_as_ushort(__hsub(x, y));
    out[k++ * n + i] = __half_as_ushort(__hmul(x, y));
    out[k++ * n + i] = __half_as_ushort(__hfma(x, y, __float2half_rn(0.5f)));
    out[k++ * n + i] = __half_as_ushort(__hmin(x, y));
    out[k++ * n + i] = __half_as_ushort(__hmax(x, y));
    out[k++ * n + i] = __half_as_ushort(__hneg(x));
    out[k++ * n + i] = (unsigned short)__hlt(x, y);
    back[i] = __half2float(x);
}

// Packed fp16x2 arithmetic.
extern "C" __global__ void ref_f16x2(const float* a, const float* b, unsigned* out) {
    unsigned i = gid(), n = nthreads();
    __half2 x = __floats2half2_rn(a[i], b[i]), y = __floats2half2_rn(b[i], a[(i + 1) % n]);
    __half2 half = __float2half2_rn(0.5f);
    int k = 0;
    __half2 r;
    r = __hadd2(x, y);
    out[k++ * n + i] = *reinterpret_cast<unsigned*>(&r);
    r = __hmul2(x, y);
    out[k++ * n + i] = *reinterpret_cast<unsigned*>(&r);
    r = __hfma2(x, y, half);
    out[k++ * n + i] = *reinterpret_cast<unsigned*>(&r);
    r = __hsub2(x, y);
    out[k++ * n + i] = *reinterpret_cast<unsigned*>(&r);
}

// bf16: conversions and arithmetic (sm_80+ instructions).
extern "C" __global__ void ref_bf16(const float* a, const float* b, unsigned short* out, float* back) {
    unsigned i = gid(), n = nthreads();
    __nv_bfloat16 x = __float2bfloat16_rn(a[i]), y = __float2bfloat16_rn(b[i]);
    int k = 0;
    out[k++ * n + i] = __bfloat16_as_ushort(x);
    out[k++ * n + i] = __bfloat16_as_ushort(__float2bfloat16_rz(a[i]));
    out[k++ * n + i] = __bfloat16_as_ushort(__hadd(x, y));
    out[k++ * n + i] = __bfloat16_as_ushort(__hmul(x, y));
    out[k++ * n + i] = __bfloat16_as_ushort(__hfma(x, y, __float2bfloat16_rn(0.5f)));
    __nv_bfloat162 p = __halves2bfloat162(x, y), q = __halves2bfloat162(y, x);
    __nv_bfloat162 r = __hfma2(p, q, p);
    out[k++ * n + i] = __bfloat16_as_ushort(__low2bfloat16(r));
    out[k++ * n + i] = __bfloat16_as_ushort(__high2bfloat16(r));
    back[i] = __bfloat162float(x);
}

// Integer <-> integer conversions: truncation, sign/zero extension, saturation (cvt.sat).
extern "C" __global__ void ref_cvt_int(const long long* a, long long* out) {
    unsigned i = gid(), n = nthreads();
    long long x = a[i];
    int k = 0;
    out[k++ * n + i] = (signed char)x;
    out[k++ * n + i] = (unsigned char)x;
    out[k++ * n + i] = (short)x;
    out[k++ * n + i] = (unsigned short)x;
    out[k++ * n + i] = (int)x;
    out[k++ * n + i] = (unsigned)x;
    int x32 = (int)x;
    unsigned short h;
    unsigned r;
    long long l;
    asm("cvt.sat.s8.s32 %0, %1;" : "=h"(h) : "r"(x32));
    out[k++ * n + i] = h;
    asm("cvt.sat.u8.s32 %0, %1;" : "=h"(h) : "r"(x32));
    out[k++ * n + i] = h;
    asm("cvt.sat.s16.s64 %0, %1;" : "=h"(h) : "l"(x));
    out[k++ * n + i] = h;
    asm("cvt.sat.u32.s64 %0, %1;" : "=r"(r) : "l"(x));
    out[k++ * n + i] = r;
    asm("cvt.sat.s32.u32 %0, %1;" : "=r"(r) : "r"(x32));
    out[k++ * n + i] = r;
    asm("cvt.sat.s32.s64 %0, %1;" : "=r"(r) : "l"(x));
    out[k++ * n + i] = (int)r;
    asm("cvt.sat.u64.s64 %0, %1;" : "=l"(l) : "l"(x));
    out[k++ * n + i] = l;
    asm("cvt.s64.s16 %0, %1;" : "=l"(l) : "h"((unsigned short)x));
    out[k++ * n + i] = l;
}

// Float -> integer with every rounding mode (saturating, NaN -> 0) and integer -> float (rn).
extern "C" __global__ void ref_cvt_float_int(const float* a, const double* d, const long long* l, long long* out,
                                             float* fout, double* dout) {
    unsigned i = gid(), n = nthreads();
    float x = a[i];
    double y = d[i];
    long long z = l[i];
    int k = 0;
    out[k++ * n + i] = __float2int_rn(x);
    out[k++ * n + i] = __float2int_rz(x);
    out[k++ * n + i] = __float2int_rd(x);
    out[k++ * n + i] = __float2int_ru(x);
    out[k++ * n + i] = __float2uint_rn(x);
    out[k++ * n + i] = __float2uint_rz(x);
    out[k++ * n + i] = __float2ll_rz(x);
    out[k++ * n + i] = (long long)__float2ull_rn(x);
    out[k++ * n + i] = __double2int_rn(y);
    out[k++ * n + i] = __double2ll_rz(y);
    out[k++ * n + i] = (long long)__double2ull_rd(y);
    k = 0;
    fout[k++ * n + i] = __int2float_rn((int)z);
    fout[k++ * n + i] = __uint2float_rn((unsigned)z);
    fout[k++ * n + i] = __ll2float_rn(z);
    fout[k++ * n + i] = __ull2float_rn((unsigned long long)z);
    k = 0;
    dout[k++ * n + i] = __ll2double_rn(z);
    dout[k++ * n + i] = __ull2double_rn((unsigned long long)z);
    dout[k++ * n + i] = __int2double_rn((int)z);
}

// Float <-> float conversions (f32 <-> f64, rn; overflow, denormals, NaN).
extern "C" __global__ void ref_cvt_float(const double* d, float* fout, double* dout) {
    unsigned i = gid(), n = nthreads();
    double y = d[i];
    float f = (float)y;  // cvt.rn.f32.f64
    fout[0 * n + i] = f;
    dout[0 * n + i] = (double)f;  // cvt.f64.f32
    dout[1 * n + i] = (double)(f * 3.0f);
}

// Directed-rounding conversions: integer -> float and f64 -> f32 with rz/rm/rp.
extern "C" __global__ void ref_cvt_directed(const double* d, const long long* l, float* fout, double* dout) {
    unsigned i = gid(), n = nthreads();
    double y = d[i];
    long long z = l[i];
    int k = 0;
    fout[k++ * n + i] = __double2float_rz(y);
    fout[k++ * n + i] = __double2float_rd(y);
    fout[k++ * n + i] = __double2float_ru(y);
    fout[k++ * n + i] = __int2float_rz((int)z);
    fout[k++ * n + i] = __uint2float_rd((unsigned)z);
    fout[k++ * n + i] = __ll2float_ru(z);
    dout[0 * n + i] = __ll2double_rz(z);
    dout[1 * n + i] = __ull2double_ru((unsigned long long)z);
}

// Comparisons (ordered/unordered floats, signed/unsigned ints), selp and predicated code.
extern "C" __global__ void ref_compare_select(const float* a, const float* b, const int* x, const int* y, int* out) {
    unsigned i = gid(), n = nthreads();
    float f = a[i], g = b[i];
    int p = x[i], q = y[i];
    unsigned up = p, uq = q;
    int k = 0;
    out[k++ * n + i] = f < g;
    out[k++ * n + i] = f <= g;
    out[k++ * n + i] = f == g;
    out[k++ * n + i] = f != g;  // true for NaN (unordered ne)
    out[k++ * n + i] = !(f >= g);  // unordered lt
    out[k++ * n + i] = isnan(f);
    out[k++ * n + i] = (f > g) ? p : q;  // selp
    out[k++ * n + i] = p < q;
    out[k++ * n + i] = up < uq;
    out[k++ * n + i] = p >= q;
    out[k++ * n + i] = up >= uq;
    out[k++ * n + i] = (p < q && f < g) || (up == 7u);
    int v = p;
    if (p > q) v += 17;  // predicated
    if (f < 0.0f) v ^= 0x55;
    out[k++ * n + i] = v;
    float m = (f > g) ? f : g;
    out[k++ * n + i] = __float_as_int(m);
}

// Divergent if/else, nested branches, data-dependent loops with break, early exit.
extern "C" __global__ void ref_divergence(const int* v, int* out, int* steps) {
    unsigned i = gid();
    int x = v[i];
    if (x < -1000) return;  // some lanes leave early: their outputs keep the input sentinel
    int r;
    if (threadIdx.x & 1) {
        r = x * 3;
        if (x & 4) r -= 11;
        else r += 5;
    } else {
        r = 0;
        for (int j = 0; j < (x & 7); ++j) r += j * x;
    }
    unsigned c = (unsigned)(x < 0 ? -x : x) + 1, s = 0;
    while (c != 1) {  // Collatz, bounded
        c = (c & 1) ? 3 * c + 1 : c / 2;
        if (++s >= 200) break;
    }
    out[i] = r;
    steps[i] = s;
}

// Warp shuffles: idx/up/down/xor, widths < 32, 64-bit values, a butterfly reduction.
extern "C" __global__ void ref_shuffle(const int* x, const float* f, const double* d, int* out, float* fsum,
                                       double* dout) {
    unsigned i = gid(), n = nthreads(), lane = threadIdx.x & 31;
    const unsigned full = 0xFFFFFFFFu;
    int v = x[i];
    int k = 0;
    out[k++ * n + i] = __shfl_sync(full, v, (lane * 7 + 3) & 31);
    out[k++ * n + i] = __shfl_sync(full, v, 5, 8);
    out[k++ * n + i] = __shfl_sync(full, v, 21, 16);  // srcLane >= width: taken modulo width
    out[k++ * n + i] = __shfl_up_sync(full, v, 3);
    out[k++ * n + i] = __shfl_up_sync(full, v, 3, 16);
    out[k++ * n + i] = __shfl_down_sync(full, v, 5);
    out[k++ * n + i] = __shfl_down_sync(full, v, 5, 8);
    out[k++ * n + i] = __shfl_xor_sync(full, v, 1);
    out[k++ * n + i] = __shfl_xor_sync(full, v, 6, 16);
    out[k++ * n + i] = __shfl_xor_sync(full, v, 12, 4);  // laneMask >= width: stays in segment
    float s = f[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(full, s, o);
    fsum[i] = s;
    dout[i] = __shfl_down_sync(full, d[i], 2, 16);
}

// Votes: all/any/ballot/activemask, in a partial warp and in a divergent branch.
extern "C" __global__ void ref_vote(const int* x, unsigned* out) {
    unsigned i = gid(), n = nthreads(), lane = threadIdx.x & 31;
    unsigned warp_base = threadIdx.x & ~31u;
    unsigned live = blockDim.x - warp_base >= 32 ? 0xFFFFFFFFu : (1u << (blockDim.x - warp_base)) - 1;
    int v = x[i];
    int k = 0;
    unsigned b = __ballot_sync(live, v > 0);
    out[k++ * n + i] = b;
    out[k++ * n + i] = __popc(b);
    out[k++ * n + i] = __all_sync(live, v != 0);
    out[k++ * n + i] = __any_sync(live, v < -5);
    out[k++ * n + i] = __all_sync(live, v > -1000000);
    out[k++ * n + i] = __activemask();
    unsigned third = 0;
    for (unsigned l = 0; l < 32; l += 3) third |= 1u << l;
    third &= live;
    unsigned inner = 0xFFFFFFFFu, am = 0xFFFFFFFFu;
    if (lane % 3 == 0) {
        inner = __ballot_sync(third, v & 1);
        am = __activemask();
    }
    out[k++ * n + i] = inner;
    out[k++ * n + i] = am;
}

// Shared memory: block tree reductions (int, float) with __syncthreads, and a reversal through
// dynamic shared memory.
extern "C" __global__ void ref_smem_reduce(const int* xi, const float* xf, int* outi, float* outf, float* rev) {
    __shared__ int si[256];
    __shared__ float sf[256];
    extern __shared__ float dyn[];
    unsigned t = threadIdx.x, i = gid();
    si[t] = xi[i];
    sf[t] = xf[i];
    dyn[t] = xf[i];
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            si[t] += si[t + s];
            sf[t] += sf[t + s];
        }
        __syncthreads();
    }
    if (t == 0) {
        outi[blockIdx.x] = si[0];
        outf[blockIdx.x] = sf[0];
    }
    rev[i] = dyn[blockDim.x - 1 - t];
}

// Dynamically indexed per-thread arrays (local memory).
extern "C" __global__ void ref_local_array(const int* idx, const int* vals, int* out, float* fout) {
    unsigned i = gid(), n = nthreads();
    int arr[32];
    float farr[16];
    for (int k = 0; k < 32; ++k) arr[k] = vals[(i + k) % n] * (k + 1);
    for (int k = 0; k < 16; ++k) farr[k] = (float)vals[(i * 3 + k) % n] * 0.5f;
    int s = 0;
    for (int j = 0; j < 4; ++j) {
        int p = idx[i * 4 + j] & 31;
        s += arr[p];
        arr[(p * 5 + 1) & 31] = s;
        farr[p & 15] += (float)j;
    }
    out[i] = s + arr[idx[i * 4] & 31];
    float fs = 0.0f;
    for (int k = 0; k < 16; ++k) fs += farr[(idx[i * 4 + 1] + k) & 15] * (float)(k & 3);
    fout[i] = fs;
}

// Global atomics with order-independent final values (return values are not recorded).
extern "C" __global__ void ref_atomics_global(const int* x, const float* xf, const double* xd, int* isum, float* fsum,
                                              double* dsum, int* imm, unsigned* umm, unsigned* misc,
                                              unsigned long long* u64) {
    unsigned i = gid();
    int v = x[i];
    atomicAdd(&isum[i & 7], v);
    atomicSub(&isum[8], v);
    atomicAdd(&fsum[i & 3], xf[i]);  // values are multiples of 1/4: sums are exact in any order
    atomicAdd(&dsum[i & 3], xd[i]);
    atomicMin(&imm[0], v);
    atomicMax(&imm[1], v);
    atomicMin(&umm[0], (unsigned)v);
    atomicMax(&umm[1], (unsigned)v);
    atomicInc(&misc[0], 100u);  // n increments from 0 wrap to n mod 101
    atomicDec(&misc[1], 37u);
    atomicExch(&misc[2], 0xC0FFEEu);  // every thread stores the same value
    atomicAnd(&misc[3], (unsigned)v | 0x80000001u);
    atomicOr(&misc[4], 1u << ((unsigned)v & 31));
    atomicXor(&misc[5], (unsigned)v);
    atomicAdd(&u64[0], (unsigned long long)(long long)v);
    if ((i & 7) == 0) {  // CAS loops on every 8th thread: contention costs the interpreter O(n^2)
        // float max through its bit pattern (order-independent).
        unsigned* slot = &misc[6];
        float mine = xf[i];
        unsigned old = *slot, assumed;
        do {
            assumed = old;
            if (__uint_as_float(assumed) >= mine) break;
            old = atomicCAS(slot, assumed, __float_as_uint(mine));
        } while (old != assumed);
        // 64-bit CAS loop computing a sum.
        unsigned long long o = u64[1], a;
        do {
            a = o;
            o = atomicCAS(&u64[1], a, a + (unsigned long long)(v & 0xFFFF));
        } while (o != a);
    }
    atomicMax(&u64[2], (unsigned long long)(long long)v);
}

// Shared-memory atomics: histogram, max, CAS loop, inc; results written per block.
extern "C" __global__ void ref_atomics_shared(const int* x, unsigned* hist, int* mx, float* fs, unsigned* inc) {
    __shared__ unsigned h[16];
    __shared__ int m;
    __shared__ float s;
    __shared__ unsigned c;
    unsigned t = threadIdx.x, i = gid();
    if (t < 16) h[t] = 0;
    if (t == 0) {
        m = INT_MIN;
        s = 0.0f;
        c = 0;
    }
    __syncthreads();
    int v = x[i];
    atomicAdd(&h[v & 15], 1u);
    atomicMax(&m, v);
    float add = (float)(v & 63) * 0.5f;  // exact sums
    float old = s, assumed;
    do {
        assumed = old;
        old = __int_as_float(atomicCAS((int*)&s, __float_as_int(assumed), __float_as_int(assumed + add)));
    } while (__float_as_int(old) != __float_as_int(assumed));
    atomicInc(&c, 50u);
    __syncthreads();
    if (t < 16) hist[blockIdx.x * 16 + t] = h[t];
    if (t == 0) {
        mx[blockIdx.x] = m;
        fs[blockIdx.x] = s;
        inc[blockIdx.x] = c;
    }
}

// Special registers with 2D/3D grids and blocks.
extern "C" __global__ void ref_special_regs(unsigned* out) {
    unsigned bl = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned tl = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    unsigned i = bl * nt + tl;
    unsigned lane, lt, ge;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    asm("mov.u32 %0, %%lanemask_ge;" : "=r"(ge));
    unsigned* o = out + i * 16;
    o[0] = threadIdx.x;
    o[1] = threadIdx.y;
    o[2] = threadIdx.z;
    o[3] = blockIdx.x;
    o[4] = blockIdx.y;
    o[5] = blockIdx.z;
    o[6] = blockDim.x;
    o[7] = blockDim.y;
    o[8] = blockDim.z;
    o[9] = gridDim.x;
    o[10] = gridDim.y;
    o[11] = gridDim.z;
    o[12] = lane;
    o[13] = lt;
    o[14] = ge;
    o[15] = tl / 32;
}

// Several blocks, partial warps, a grid-stride loop and scalar parameters of several types.
extern "C" __global__ void ref_multiblock(const float* x, float* y, const int* xi, long long* yi, int n, float alpha,
                                          long long offset, double beta) {
    for (unsigned i = gid(); i < (unsigned)n; i += nthreads()) {
        y[i] = alpha * x[i] + y[i];
        yi[i] = (long long)xi[i] * 3 + offset + (long long)(beta * i);
    }
}

// cp.async (16, 8 and 4 bytes; 16 with zero fill) into shared, then copied out reversed.
extern "C" __global__ void ref_cp_async(const int4* x, const int2* y, const int* z, int4* out, int2* out2, int* out3,
                                        int4* outz) {
    __shared__ int4 s16[64];
    __shared__ int2 s8[64];
    __shared__ int s4[64];
    __shared__ int4 sz[64];
    unsigned t = threadIdx.x, i = gid();
    __pipeline_memcpy_async(&s16[t], &x[i], 16);
    __pipeline_memcpy_async(&s8[t], &y[i], 8);
    __pipeline_memcpy_async(&s4[t], &z[i], 4);
    __pipeline_memcpy_async(&sz[t], &x[i], 16, 8);  // copies 8 bytes, zero-fills 8
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    unsigned r = blockDim.x - 1 - t, o = blockIdx.x * blockDim.x + t;
    out[o] = s16[r];
    out2[o] = s8[r];
    out3[o] = s4[r];
    outz[o] = sz[r];
}

// mma.sync m16n8k16 row.col f32.f16.f16.f32 on one warp: D = A (16x16) * B (16x8) + C.
// A is row-major 16x16, B is stored k-major (B[k * 8 + n]), C and D row-major 16x8.
extern "C" __global__ void ref_mma_f16(const __half* A, const __half* B, const float* C, float* D) {
    unsigned lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    unsigned a[4], b[2];
    for (int r = 0; r < 4; ++r) {  // a{2r, 2r+1}: row g + 8*(r&1), cols 2tq + 8*(r>>1) + {0,1}
        unsigned row = g + 8 * (r & 1), col = 2 * tq + 8 * (r >> 1);
        __half2 h = __halves2half2(A[row * 16 + col], A[row * 16 + col + 1]);
        a[r] = *reinterpret_cast<unsigned*>(&h);
    }
    for (int r = 0; r < 2; ++r) {  // b{2r, 2r+1}: rows (k) 2tq + 8r + {0,1}, col g
        unsigned k = 2 * tq + 8 * r;
        __half2 h = __halves2half2(B[k * 8 + g], B[(k + 1) * 8 + g]);
        b[r] = *reinterpret_cast<unsigned*>(&h);
    }
    float c[4], d[4];
    for (int r = 0; r < 4; ++r) c[r] = C[(g + 8 * (r >> 1)) * 8 + 2 * tq + (r & 1)];
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
    for (int r = 0; r < 4; ++r) D[(g + 8 * (r >> 1)) * 8 + 2 * tq + (r & 1)] = d[r];
}

// wmma 16x16x16 f16 -> f32: D = A (row-major) * B (col-major) + C (row-major).
extern "C" __global__ void ref_wmma(const __half* A, const __half* B, const float* C, float* D) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fa, A, 16);
    wmma::load_matrix_sync(fb, B, 16);
    wmma::load_matrix_sync(fc, C, 16, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(D, fc, 16, wmma::mem_row_major);
}

// ------------------------------------------------------------------------------------------
// Host: a launch records its buffers (written before and after) and its arguments.
// ------------------------------------------------------------------------------------------
template <class T> const char* dtype_name();
template <> const char* dtype_name<int8_t>() { return "int8"; }
template <> const char* dtype_name<uint8_t>() { return "uint8"; }
template <> const char* dtype_name<int16_t>() { return "int16"; }
template <> const char* dtype_name<uint16_t>() { return "uint16"; }
template <> const char* dtype_name<int32_t>() { return "int32"; }
template <> const char* dtype_name<uint32_t>() { return "uint32"; }
template <> const char* dtype_name<long long>() { return "int64"; }
template <> const char* dtype_name<unsigned long long>() { return "uint64"; }
template <> const char* dtype_name<float>() { return "float32"; }
template <> const char* dtype_name<double>() { return "float64"; }
template <> const char* dtype_name<__half>() { return "float16"; }

static std::string g_outdir;
static std::vector<std::string> g_launches;

static void write_file(const std::string& path, const void* data, size_t bytes) {
    FILE* f = fopen(path.c_str(), "wb");
    if (!f || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path.c_str());
        exit(1);
    }
}

struct Launch {
    struct Buf {
        std::string name, dtype;
        size_t count, bytes;
        void* dev;
    };
    std::string name, kernel;
    dim3 grid, block;
    size_t smem;
    std::vector<Buf> bufs;
    std::vector<std::string> args;

    Launch(const char* launch_name, const char* kernel_name, dim3 g, dim3 b, size_t dyn_smem = 0)
        : name(launch_name), kernel(kernel_name), grid(g), block(b), smem(dyn_smem) {}

    // A pointer argument: a device copy of host, recorded as NAME.in.bin.
    template <class T> T* ptr(const char* buf, const std::vector<T>& host) {
        size_t bytes = host.size() * sizeof(T);
        void* dev = nullptr;
        CK(cudaMalloc(&dev, bytes));
        CK(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
        write_file(g_outdir + "/" + name + "." + buf + ".in.bin", host.data(), bytes);
        bufs.push_back({buf, dtype_name<T>(), host.size(), bytes, dev});
        args.push_back(std::string("{\"buffer\": \"") + buf + "\"}");
        return static_cast<T*>(dev);
    }
    int i32(int v) { return scalar("int", std::to_string(v), v); }
    long long i64(long long v) { return scalar("long long", std::to_string(v), v); }
    float f32(float v) {
        char s[64];
        snprintf(s, sizeof s, "%.9g", v);
        return scalar("float", s, v);
    }
    double f64(double v) {
        char s[64];
        snprintf(s, sizeof s, "%.17g", v);
        return scalar("double", s, v);
    }
    template <class T> T scalar(const char* ctype, const std::string& value, T v) {
        args.push_back(std::string("{\"type\": \"") + ctype + "\", \"value\": " + value + "}");
        return v;
    }

    // After the kernel launch: check it, record every buffer and the launch.
    void done() {
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        std::string j = "  {\"name\": \"" + name + "\", \"kernel\": \"" + kernel + "\", \"grid\": [" +
                        std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " + std::to_string(grid.z) +
                        "], \"block\": [" + std::to_string(block.x) + ", " + std::to_string(block.y) + ", " +
                        std::to_string(block.z) + "], \"dynamic_shared_bytes\": " + std::to_string(smem) +
                        ",\n   \"args\": [";
        for (size_t k = 0; k < args.size(); ++k) j += (k ? ", " : "") + args[k];
        j += "],\n   \"buffers\": [";
        for (size_t k = 0; k < bufs.size(); ++k) {
            Buf& b = bufs[k];
            std::vector<unsigned char> host(b.bytes);
            CK(cudaMemcpy(host.data(), b.dev, b.bytes, cudaMemcpyDeviceToHost));
            write_file(g_outdir + "/" + name + "." + b.name + ".out.bin", host.data(), b.bytes);
            CK(cudaFree(b.dev));
            j += std::string(k ? ", " : "") + "{\"name\": \"" + b.name + "\", \"dtype\": \"" + b.dtype +
                 "\", \"count\": " + std::to_string(b.count) + "}";
        }
        j += "]}";
        g_launches.push_back(j);
    }
};

// ------------------------------------------------------------------------------------------
// Inputs.
// ------------------------------------------------------------------------------------------
static float fbits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double dbits(uint64_t u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}
static uint32_t mix(uint32_t x) {  // deterministic hash for "random" inputs
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static const int32_t I32_EDGE[32] = {0, 1, -1, 2, -2, 7, -7, 13, 100, -100, 12345, -12345, 65535, 65536, -65536, 0x7fff,
                                     INT_MAX, INT_MIN, INT_MAX - 1, INT_MIN + 1, 0x55555555, (int32_t)0xAAAAAAAAu,
                                     0x12345678, (int32_t)0x87654321u, 46341, -46341, 1 << 30, 3, -3, 1000000007,
                                     31, 32};
static const long long I64_EDGE[32] = {0, 1, -1, 2, -3, 7, 1LL << 31, -(1LL << 31), 1LL << 32, (1LL << 32) - 1,
                                       -(1LL << 32), LLONG_MAX, LLONG_MIN, LLONG_MAX - 1, LLONG_MIN + 1,
                                       0x5555555555555555LL, (long long)0xAAAAAAAAAAAAAAAAULL, 0x123456789ABCDEF0LL,
                                       -0x123456789ABCDEFLL, 1000000007, -1000000007, 3037000499LL, -3037000500LL,
                                       INT_MAX, INT_MIN, 65535, 255, -128, 127, 32767, -32769, 4294967296LL * 3 + 5};

// Floats: signed zeros, +-1, fractions, huge, tiny, denormals, infinities, NaN, pi, near-halfway.
static std::vector<float> float_edges() {
    return {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -2.5f, 3.5f, 0.1f, -0.3f, 1e30f, -1e30f, 3.4028235e38f,
            1.17549435e-38f, fbits(0x00000001), fbits(0x807FFFFF), fbits(0x00400000), INFINITY, -INFINITY, NAN,
            3.14159265f, 2.71828183f, 16777216.0f, 16777217.0f, 8388608.5f, -8388609.0f, 2147483520.0f,
            2147483648.0f, -2147483904.0f, 4294967040.0f, 1.5e10f, -0.49999997f, 123.456f};
}
static std::vector<double> double_edges() {
    return {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 0.1, 1e300, -1e300, 1.7976931348623157e308, 2.2250738585072014e-308,
            dbits(1), dbits(0x800FFFFFFFFFFFFFULL), INFINITY, -INFINITY, NAN, 3.141592653589793, 3.4028235e38,
            3.4028236e38, 1e-40, 1e-46, 9007199254740993.0, 2147483647.5, -2147483648.5, 4294967295.7,
            1.8446744073709552e19, -9.3e18, 1.0000001, 0.33333333333333331, 6.02214076e23, -1e-310, 65504.0};
}

// fp32 inputs pairing every edge value with others, plus hashed finite values.
static void float_pairs(size_t n, std::vector<float>& a, std::vector<float>& b) {
    std::vector<float> e = float_edges();
    a.resize(n);
    b.resize(n);
    for (size_t i = 0; i < n; ++i) {
        if (i < 2 * e.size()) {
            a[i] = e[i % e.size()];
            b[i] = e[(i * 13 + 7) % e.size()];
        } else {  // finite values of all magnitudes
            a[i] = fbits((mix((uint32_t)i) & 0x80000000u) | (mix((uint32_t)i * 3 + 1) % 0x7F000000u));
            b[i] = fbits((mix((uint32_t)i * 7) & 0x80000000u) | (0x30000000u + mix((uint32_t)i * 5) % 0x1F000000u));
        }
    }
}

// ------------------------------------------------------------------------------------------
// Launches.
// ------------------------------------------------------------------------------------------
static void run_int32() {
    const int n = 64, ops = 21;
    std::vector<int32_t> a(n), b(n), out(ops * n, 0x5A5A5A5A);
    std::vector<long long> out64(3 * n, 0);
    for (int i = 0; i < n; ++i) {
        a[i] = I32_EDGE[i % 32];
        b[i] = I32_EDGE[(i * 13 + 7) % 32];
    }
    a[62] = INT_MIN, b[62] = -1;  // overflowing division
    a[63] = INT_MAX, b[63] = INT_MAX;
    Launch L("ref_int32_arith", "ref_int32_arith", dim3(2), dim3(32));
    int32_t* da = L.ptr("a", a);
    int32_t* db = L.ptr("b", b);
    int32_t* dout = L.ptr("out", out);
    long long* dout64 = L.ptr("out64", out64);
    ref_int32_arith<<<L.grid, L.block, L.smem>>>(da, db, dout, dout64);
    L.done();
}

static void run_int64() {
    const int n = 64, ops = 16;
    std::vector<long long> a(n), b(n), out(ops * n, 0);
    for (int i = 0; i < n; ++i) {
        a[i] = I64_EDGE[i % 32];
        b[i] = I64_EDGE[(i * 11 + 5) % 32];
    }
    a[63] = LLONG_MIN, b[63] = -1;
    Launch L("ref_int64_arith", "ref_int64_arith", dim3(1), dim3(64));
    long long* da = L.ptr("a", a);
    long long* db = L.ptr("b", b);
    long long* dout = L.ptr("out", out);
    ref_int64_arith<<<L.grid, L.block, L.smem>>>(da, db, dout);
    L.done();
}

static void run_bitops() {
    const int n = 64;
    std::vector<uint32_t> a(n), b(n), c(n), out(16 * n, 0), bf(5 * n, 0);
    std::vector<unsigned long long> out64(7 * n, 0);
    for (int i = 0; i < n; ++i) {
        a[i] = (uint32_t)I32_EDGE[i % 32];
        b[i] = i < 32 ? (uint32_t)I32_EDGE[(i * 5 + 3) % 32] : mix(i);
        c[i] = mix(i * 17 + 1);
    }
    {
        Launch L("ref_bitops", "ref_bitops", dim3(2), dim3(32));
        uint32_t* da = L.ptr("a", a);
        uint32_t* db = L.ptr("b", b);
        uint32_t* dc = L.ptr("c", c);
        uint32_t* dout = L.ptr("out", out);
        unsigned long long* d64 = L.ptr("out64", out64);
        ref_bitops<<<L.grid, L.block, L.smem>>>(da, db, dc, dout, d64);
        L.done();
    }
    {
        std::vector<int32_t> o(5 * n, 0);
        Launch L("ref_bfind", "ref_bfind", dim3(1), dim3(64));
        uint32_t* da = L.ptr("a", a);
        int32_t* dout = L.ptr("out", o);
        ref_bfind<<<L.grid, L.block, L.smem>>>(da, dout);
        L.done();
    }
}

static void run_shifts() {
    const int n = 64;
    std::vector<uint32_t> a(n), s(n), out(8 * n, 0), fs(4 * n, 0);
    std::vector<unsigned long long> out64(5 * n, 0);
    for (int i = 0; i < n; ++i) {
        a[i] = i % 2 ? (uint32_t)I32_EDGE[i % 32] : mix(i) | 0x80000000u;
        s[i] = i;  // every count 0..63
    }
    {
        Launch L("ref_shifts", "ref_shifts", dim3(1), dim3(64));
        uint32_t* da = L.ptr("a", a);
        uint32_t* ds = L.ptr("s", s);
        uint32_t* dout = L.ptr("out", out);
        unsigned long long* d64 = L.ptr("out64", out64);
        ref_shifts<<<L.grid, L.block, L.smem>>>(da, ds, dout, d64);
        L.done();
    }
    {
        Launch L("ref_funnelshift", "ref_funnelshift", dim3(1), dim3(64));
        uint32_t* da = L.ptr("a", a);
        uint32_t* ds = L.ptr("s", s);
        uint32_t* dout = L.ptr("out", fs);
        ref_funnelshift<<<L.grid, L.block, L.smem>>>(da, ds, dout);
        L.done();
    }
}

static void run_fp32() {
    const int n = 128;
    std::vector<float> a, b;
    float_pairs(n, a, b);
    {
        std::vector<float> out(15 * n, 0.0f);
        Launch L("ref_fp32_arith", "ref_fp32_arith", dim3(1), dim3(n));
        float* da = L.ptr("a", a);
        float* db = L.ptr("b", b);
        float* dout = L.ptr("out", out);
        ref_fp32_arith<<<L.grid, L.block, L.smem>>>(da, db, dout);
        L.done();
    }
    {
        std::vector<float> out(10 * n, 0.0f);
        Launch L("ref_fp32_directed", "ref_fp32_directed", dim3(1), dim3(n));
        float* da = L.ptr("a", a);
        float* db = L.ptr("b", b);
        float* dout = L.ptr("out", out);
        ref_fp32_directed<<<L.grid, L.block, L.smem>>>(da, db, dout);
        L.done();
    }
    {
        std::vector<float> out(5 * n, 0.0f);
        std::vector<double> out64(4 * n, 0.0);
        std::vector<float> x = a;
        for (int i = 64; i < n; ++i) x[i] = (float)((int)(mix(i) % 2001) - 1000) * 0.25f;  // many halves
        Launch L("ref_fp_round", "ref_fp_round", dim3(1), dim3(n));
        float* dx = L.ptr("a", x);
        float* dout = L.ptr("out", out);
        double* d64 = L.ptr("out64", out64);
        ref_fp_round<<<L.grid, L.block, L.smem>>>(dx, dout, d64);
        L.done();
    }
    {
        // fma: edge values, then products that land exactly halfway between two floats with a
        // tiny addend (rounding the product and the sum separately, or in double, differs).
        std::vector<float> x(n), y(n), z(n), out(n, 0.0f);
        std::vector<float> e = float_edges();
        for (int i = 0; i < n; ++i) {
            x[i] = e[i % 32];
            y[i] = e[(i * 7 + 3) % 32];
            z[i] = e[(i * 11 + 5) % 32];
        }
        for (int i = 64; i < n; ++i) {
            uint32_t h = mix(i);
            float p = ldexpf(1.0f + ldexpf((float)(h % 4096 + 1), -12), 0);  // 1 + m * 2^-12
            x[i] = p;
            y[i] = (h & 1) ? p : -p;
            float tiny = ldexpf(1.0f, -60 - (int)(h % 40));
            z[i] = (h & 2) ? tiny : -tiny;
        }
        Launch L("ref_fp32_fma", "ref_fp32_fma", dim3(1), dim3(n));
        float* dx = L.ptr("a", x);
        float* dy = L.ptr("b", y);
        float* dz = L.ptr("c", z);
        float* dout = L.ptr("out", out);
        ref_fp32_fma<<<L.grid, L.block, L.smem>>>(dx, dy, dz, dout);
        L.done();
    }
    {
        std::vector<float> x(n), y(n);
        std::vector<float> exps(4 * n, 0.0f), logs(3 * n, 0.0f), trig(2 * n, 0.0f), divs(2 * n, 0.0f);
        for (int i = 0; i < n; ++i) {
            x[i] = -10.0f + 20.0f * (float)i / (float)(n - 1);
            y[i] = ldexpf(1.0f + (float)(mix(i) % 1000) / 1000.0f, (int)(mix(i * 3) % 40) - 20);
        }
        x[0] = 0.0f, x[1] = -0.0f, y[0] = 1.0f, y[1] = 2.0f;
        Launch L("ref_fp32_approx", "ref_fp32_approx", dim3(1), dim3(n));
        float* dx = L.ptr("a", x);
        float* dy = L.ptr("b", y);
        float* d1 = L.ptr("exps", exps);
        float* d2 = L.ptr("logs", logs);
        float* d3 = L.ptr("trig", trig);
        float* d4 = L.ptr("divs", divs);
        ref_fp32_approx<<<L.grid, L.block, L.smem>>>(dx, dy, d1, d2, d3, d4);
        L.done();
    }
}

static void run_fp64() {
    const int n = 96;
    std::vector<double> e = double_edges(), a(n), b(n), c(n), out(11 * n, 0.0), fo(n, 0.0);
    for (int i = 0; i < n; ++i) {
        if (i < 64) {
            a[i] = e[i % 32];
            b[i] = e[(i * 13 + 7) % 32];
        } else {
            a[i] = dbits(((uint64_t)mix(i) << 32 | mix(i + 1000)) & 0xBFFFFFFFFFFFFFFFULL);  // finite
            b[i] = dbits(((uint64_t)mix(i * 3) << 32 | mix(i + 7)) & 0xBFFFFFFFFFFFFFFFULL);
        }
        c[i] = e[(i * 5 + 1) % 32];
    }
    {
        Launch L("ref_fp64_arith", "ref_fp64_arith", dim3(1), dim3(n));
        double* da = L.ptr("a", a);
        double* db = L.ptr("b", b);
        double* dout = L.ptr("out", out);
        ref_fp64_arith<<<L.grid, L.block, L.smem>>>(da, db, dout);
        L.done();
    }
    {
        std::vector<double> x = a, y = b, z = c;
        for (int i = 32; i < n; ++i) {  // (1 + m 2^-27)^2 - 1: the product needs more than 53 bits
            uint32_t h = mix(i);
            double p = 1.0 + ldexp((double)(h % 1024 + 1), -27);
            x[i] = p;
            y[i] = (h & 1) ? p : -p;
            z[i] = (h & 1) ? -1.0 : 1.0;
        }
        Launch L("ref_fp64_fma", "ref_fp64_fma", dim3(1), dim3(n));
        double* dx = L.ptr("a", x);
        double* dy = L.ptr("b", y);
        double* dz = L.ptr("c", z);
        double* dout = L.ptr("out", fo);
        ref_fp64_fma<<<L.grid, L.block, L.smem>>>(dx, dy, dz, dout);
        L.done();
    }
}

static void run_half() {
    const int n = 64;
    std::vector<float> a(n), b(n), back(n, 0.0f);
    std::vector<float> e = float_edges();
    for (int i = 0; i < n; ++i) {
        if (i < 32) {
            a[i] = e[i];
            b[i] = e[(i * 13 + 7) % 32];
        } else {  // values in the half range, some needing rounding, subnormal halves
            a[i] = ldexpf((float)((int)(mix(i) % 4001) - 2000) / 1000.0f, (int)(mix(i * 3) % 36) - 26);
            b[i] = ldexpf((float)((int)(mix(i * 5) % 4001) - 2000) / 1000.0f, (int)(mix(i * 7) % 20) - 8);
        }
    }
    a[30] = 65504.0f, a[31] = 65520.0f, b[30] = 6.0e-8f;
    {
        std::vector<uint16_t> out(10 * n, 0);
        Launch L("ref_f16", "ref_f16", dim3(1), dim3(n));
        float* da = L.ptr("a", a);
        float* db = L.ptr("b", b);
        uint16_t* dout = L.ptr("out", out);
        float* dback = L.ptr("back", back);
        ref_f16<<<L.grid, L.block, L.smem>>>(da, db, dout, dback);
        L.done();
    }
    {
        std::vector<uint32_t> out(4 * n, 0);
        Launch L("ref_f16x2", "ref_f16x2", dim3(1), dim3(n));
        float* da = L.ptr("a", a);
        float* db = L.ptr("b", b);
        uint32_t* dout = L.ptr("out", out);
        ref_f16x2<<<L.grid, L.block, L.smem>>>(da, db, dout);
        L.done();
    }
    {
        std::vector<uint16_t> out(7 * n, 0);
        std::vector<float> bb(n, 0.0f);
        Launch L("ref_bf16", "ref_bf16", dim3(1), dim3(n));
        float* da = L.ptr("a", a);
        float* db = L.ptr("b", b);
        uint16_t* dout = L.ptr("out", out);
        float* dback = L.ptr("back", bb);
        ref_bf16<<<L.grid, L.block, L.smem>>>(da, db, dout, dback);
        L.done();
    }
}

static void run_cvt() {
    const int n = 64;
    std::vector<long long> l(n);
    std::vector<double> d = double_edges();
    std::vector<float> f = float_edges();
    d.resize(n);
    f.resize(n);
    for (int i = 0; i < n; ++i) {
        l[i] = i < 32 ? I64_EDGE[i] : (long long)((uint64_t)mix(i) << 32 | mix(i * 9)) >> (i % 40);
        if (i >= 32) {
            f[i] = (float)((int)(mix(i * 11) % 20001) - 10000) * 0.25f;  // ties and fractions
            d[i] = (double)((int)(mix(i * 13) % 20001) - 10000) * 0.125 + ldexp(1.0, -40);
        }
    }
    {
        std::vector<long long> out(14 * n, 0);
        Launch L("ref_cvt_int", "ref_cvt_int", dim3(1), dim3(n));
        long long* dl = L.ptr("a", l);
        long long* dout = L.ptr("out", out);
        ref_cvt_int<<<L.grid, L.block, L.smem>>>(dl, dout);
        L.done();
    }
    {
        std::vector<long long> out(11 * n, 0);
        std::vector<float> fout(4 * n, 0.0f);
        std::vector<double> dout(3 * n, 0.0);
        Launch L("ref_cvt_float_int", "ref_cvt_float_int", dim3(1), dim3(n));
        float* df = L.ptr("a", f);
        double* dd = L.ptr("d", d);
        long long* dl = L.ptr("l", l);
        long long* o1 = L.ptr("out", out);
        float* o2 = L.ptr("fout", fout);
        double* o3 = L.ptr("dout", dout);
        ref_cvt_float_int<<<L.grid, L.block, L.smem>>>(df, dd, dl, o1, o2, o3);
        L.done();
    }
    {
        std::vector<float> fout(n, 0.0f);
        std::vector<double> dout(2 * n, 0.0);
        Launch L("ref_cvt_float", "ref_cvt_float", dim3(1), dim3(n));
        double* dd = L.ptr("d", d);
        float* o1 = L.ptr("fout", fout);
        double* o2 = L.ptr("dout", dout);
        ref_cvt_float<<<L.grid, L.block, L.smem>>>(dd, o1, o2);
        L.done();
    }
    {
        std::vector<float> fout(6 * n, 0.0f);
        std::vector<double> dout(2 * n, 0.0);
        Launch L("ref_cvt_directed", "ref_cvt_directed", dim3(1), dim3(n));
        double* dd = L.ptr("d", d);
        long long* dl = L.ptr("l", l);
        float* o1 = L.ptr("fout", fout);
        double* o2 = L.ptr("dout", dout);
        ref_cvt_directed<<<L.grid, L.block, L.smem>>>(dd, dl, o1, o2);
        L.done();
    }
}

static void run_control() {
    const int n = 64;
    std::vector<float> a, b;
    float_pairs(n, a, b);
    std::vector<int32_t> x(n), y(n), out(14 * n, 0);
    for (int i = 0; i < n; ++i) {
        x[i] = I32_EDGE[i % 32];
        y[i] = I32_EDGE[(i * 7 + 2) % 32];
    }
    x[9] = 7;
    {
        Launch L("ref_compare_select", "ref_compare_select", dim3(1), dim3(n));
        float* da = L.ptr("a", a);
        float* db = L.ptr("b", b);
        int32_t* dx = L.ptr("x", x);
        int32_t* dy = L.ptr("y", y);
        int32_t* dout = L.ptr("out", out);
        ref_compare_select<<<L.grid, L.block, L.smem>>>(da, db, dx, dy, dout);
        L.done();
    }
    {
        const int m = 96;
        std::vector<int32_t> v(m), o(m, -7777), s(m, -7777);
        for (int i = 0; i < m; ++i) v[i] = (int)(mix(i) % 2001) - 1000;
        v[5] = -5000, v[40] = INT_MIN, v[77] = -1001;  // early exits
        Launch L("ref_divergence", "ref_divergence", dim3(1), dim3(m));
        int32_t* dv = L.ptr("v", v);
        int32_t* dout = L.ptr("out", o);
        int32_t* ds = L.ptr("steps", s);
        ref_divergence<<<L.grid, L.block, L.smem>>>(dv, dout, ds);
        L.done();
    }
}

static void run_warp() {
    {
        const int n = 96;
        std::vector<int32_t> x(n), out(10 * n, 0);
        std::vector<float> f(n), fs(n, 0.0f);
        std::vector<double> d(n), dout(n, 0.0);
        for (int i = 0; i < n; ++i) {
            x[i] = (int)mix(i);
            f[i] = (float)((int)(mix(i * 3) % 1000) - 500) * 0.125f;  // exact sums in any order
            d[i] = dbits((uint64_t)mix(i * 5) << 32 | mix(i * 7));
        }
        Launch L("ref_shuffle", "ref_shuffle", dim3(1), dim3(n));
        int32_t* dx = L.ptr("x", x);
        float* df = L.ptr("f", f);
        double* dd = L.ptr("d", d);
        int32_t* dout_ = L.ptr("out", out);
        float* dfs = L.ptr("fsum", fs);
        double* ddo = L.ptr("dout", dout);
        ref_shuffle<<<L.grid, L.block, L.smem>>>(dx, df, dd, dout_, dfs, ddo);
        L.done();
    }
    {
        const int n = 48;  // the second warp has 16 lanes
        std::vector<int32_t> x(n);
        std::vector<uint32_t> out(8 * n, 0);
        for (int i = 0; i < n; ++i) x[i] = (int)(mix(i) % 41) - 20;
        x[3] = 0;  // __all_sync(v != 0) false in warp 0
        for (int i = 32; i < n; ++i) x[i] = 1 + (int)(mix(i) % 9);  // warp 1: all positive
        Launch L("ref_vote", "ref_vote", dim3(1), dim3(n));
        int32_t* dx = L.ptr("x", x);
        uint32_t* dout = L.ptr("out", out);
        ref_vote<<<L.grid, L.block, L.smem>>>(dx, dout);
        L.done();
    }
}

static void run_memory() {
    {
        const int blocks = 2, t = 256, n = blocks * t;
        std::vector<int32_t> xi(n), oi(blocks, 0);
        std::vector<float> xf(n), of(blocks, 0.0f), rev(n, 0.0f);
        for (int i = 0; i < n; ++i) {
            xi[i] = (int)mix(i);  // wrapping sums
            xf[i] = (float)((int)(mix(i * 3) % 20001) - 10000) * 1e-3f;  // rounding depends on the tree order
        }
        Launch L("ref_smem_reduce", "ref_smem_reduce", dim3(blocks), dim3(t), t * sizeof(float));
        int32_t* dxi = L.ptr("xi", xi);
        float* dxf = L.ptr("xf", xf);
        int32_t* doi = L.ptr("outi", oi);
        float* dof = L.ptr("outf", of);
        float* drev = L.ptr("rev", rev);
        ref_smem_reduce<<<L.grid, L.block, L.smem>>>(dxi, dxf, doi, dof, drev);
        L.done();
    }
    {
        const int n = 64;
        std::vector<int32_t> idx(4 * n), vals(n), out(n, 0);
        std::vector<float> fout(n, 0.0f);
        for (int i = 0; i < 4 * n; ++i) idx[i] = (int)mix(i * 31 + 7);
        for (int i = 0; i < n; ++i) vals[i] = (int)(mix(i) % 2001) - 1000;
        Launch L("ref_local_array", "ref_local_array", dim3(1), dim3(n));
        int32_t* didx = L.ptr("idx", idx);
        int32_t* dvals = L.ptr("vals", vals);
        int32_t* dout = L.ptr("out", out);
        float* dfout = L.ptr("fout", fout);
        ref_local_array<<<L.grid, L.block, L.smem>>>(didx, dvals, dout, dfout);
        L.done();
    }
    {
        const int blocks = 4, t = 128, n = blocks * t;
        std::vector<int32_t> x(n), isum(9, 0), imm = {INT_MAX, INT_MIN};
        std::vector<float> xf(n), fsum(4, 0.0f);
        std::vector<double> xd(n), dsum(4, 0.0);
        std::vector<uint32_t> umm = {0xFFFFFFFFu, 0u}, misc = {0u, 5u, 0u, 0xFFFFFFFFu, 0u, 0x12345678u, 0xFF800000u};
        std::vector<unsigned long long> u64 = {0ULL, 0ULL, 0ULL};
        for (int i = 0; i < n; ++i) {
            x[i] = i < 32 ? I32_EDGE[i] / 4 : (int)(mix(i) % 200001) - 100000;
            xf[i] = (float)((int)(mix(i * 3) % 4001) - 2000) * 0.25f;
            xd[i] = (double)((int)(mix(i * 5) % 4000001) - 2000000) * ldexp(1.0, -10);
        }
        Launch L("ref_atomics_global", "ref_atomics_global", dim3(blocks), dim3(t));
        int32_t* dx = L.ptr("x", x);
        float* dxf = L.ptr("xf", xf);
        double* dxd = L.ptr("xd", xd);
        int32_t* disum = L.ptr("isum", isum);
        float* dfsum = L.ptr("fsum", fsum);
        double* ddsum = L.ptr("dsum", dsum);
        int32_t* dimm = L.ptr("imm", imm);
        uint32_t* dumm = L.ptr("umm", umm);
        uint32_t* dmisc = L.ptr("misc", misc);
        unsigned long long* du64 = L.ptr("u64", u64);
        ref_atomics_global<<<L.grid, L.block, L.smem>>>(dx, dxf, dxd, disum, dfsum, ddsum, dimm, dumm, dmisc, du64);
        L.done();
    }
    {
        const int blocks = 2, t = 256, n = blocks * t;
        std::vector<int32_t> x(n), mx(blocks, 0);
        std::vector<uint32_t> hist(16 * blocks, 0), inc(blocks, 0);
        std::vector<float> fs(blocks, 0.0f);
        for (int i = 0; i < n; ++i) x[i] = (int)mix(i * 13);
        Launch L("ref_atomics_shared", "ref_atomics_shared", dim3(blocks), dim3(t));
        int32_t* dx = L.ptr("x", x);
        uint32_t* dh = L.ptr("hist", hist);
        int32_t* dm = L.ptr("mx", mx);
        float* dfs = L.ptr("fs", fs);
        uint32_t* di = L.ptr("inc", inc);
        ref_atomics_shared<<<L.grid, L.block, L.smem>>>(dx, dh, dm, dfs, di);
        L.done();
    }
}

static void run_grid() {
    {
        dim3 g(2, 1, 2), b(4, 4, 4);
        std::vector<uint32_t> out(16 * 4 * 64, 0xFFFFFFFFu);
        Launch L("ref_special_regs", "ref_special_regs", g, b);
        uint32_t* d = L.ptr("out", out);
        ref_special_regs<<<L.grid, L.block, L.smem>>>(d);
        L.done();
    }
    {
        dim3 g(2, 2), b(16, 3);  // 2D, 48 threads: partial second warp
        std::vector<uint32_t> out(16 * 4 * 48, 0xFFFFFFFFu);
        Launch L("ref_special_regs_2d", "ref_special_regs", g, b);
        uint32_t* d = L.ptr("out", out);
        ref_special_regs<<<L.grid, L.block, L.smem>>>(d);
        L.done();
    }
    {
        const int n = 1000;
        std::vector<float> x(n), y(n);
        std::vector<int32_t> xi(n);
        std::vector<long long> yi(n, 0);
        for (int i = 0; i < n; ++i) {
            x[i] = (float)((int)(mix(i) % 1999) - 999) * 0.01f;
            y[i] = (float)i * 0.5f;
            xi[i] = (int)mix(i * 7);
        }
        Launch L("ref_multiblock", "ref_multiblock", dim3(3), dim3(80));
        float* dx = L.ptr("x", x);
        float* dy = L.ptr("y", y);
        int32_t* dxi = L.ptr("xi", xi);
        long long* dyi = L.ptr("yi", yi);
        int nn = L.i32(n);
        float alpha = L.f32(-1.75f);
        long long off = L.i64(-(1LL << 40) + 12345);
        double beta = L.f64(0.3);
        ref_multiblock<<<L.grid, L.block, L.smem>>>(dx, dy, dxi, dyi, nn, alpha, off, beta);
        L.done();
    }
}

static void run_async_tensor() {
    {
        const int blocks = 2, t = 64, n = blocks * t;
        std::vector<int32_t> x(4 * n), y(2 * n), z(n), out(4 * n, 0), out2(2 * n, 0), out3(n, 0), outz(4 * n, -1);
        for (int i = 0; i < 4 * n; ++i) x[i] = (int)mix(i);
        for (int i = 0; i < 2 * n; ++i) y[i] = (int)mix(i + 5000);
        for (int i = 0; i < n; ++i) z[i] = (int)mix(i + 9000);
        Launch L("ref_cp_async", "ref_cp_async", dim3(blocks), dim3(t));
        int4* dx = reinterpret_cast<int4*>(L.ptr("x", x));
        int2* dy = reinterpret_cast<int2*>(L.ptr("y", y));
        int32_t* dz = L.ptr("z", z);
        int4* dout = reinterpret_cast<int4*>(L.ptr("out", out));
        int2* dout2 = reinterpret_cast<int2*>(L.ptr("out2", out2));
        int32_t* dout3 = L.ptr("out3", out3);
        int4* doutz = reinterpret_cast<int4*>(L.ptr("outz", outz));
        ref_cp_async<<<L.grid, L.block, L.smem>>>(dx, dy, dz, dout, dout2, dout3, doutz);
        L.done();
    }
    // Tensor cores: small multiples of 1/2 so every product and sum is exact in f32.
    std::vector<__half> A(16 * 16), B(16 * 16);
    std::vector<float> C(16 * 16);
    for (int i = 0; i < 256; ++i) {
        A[i] = __float2half((float)((int)(mix(i) % 17) - 8) * 0.5f);
        B[i] = __float2half((float)((int)(mix(i + 300) % 13) - 6) * 0.5f);
        C[i] = (float)((int)(mix(i + 600) % 101) - 50) * 0.25f;
    }
    {
        std::vector<__half> Bk(B.begin(), B.begin() + 16 * 8);
        std::vector<float> Ck(C.begin(), C.begin() + 16 * 8), D(16 * 8, 0.0f);
        Launch L("ref_mma_f16", "ref_mma_f16", dim3(1), dim3(32));
        __half* dA = L.ptr("A", A);
        __half* dB = L.ptr("B", Bk);
        float* dC = L.ptr("C", Ck);
        float* dD = L.ptr("D", D);
        ref_mma_f16<<<L.grid, L.block, L.smem>>>(dA, dB, dC, dD);
        L.done();
    }
    {
        std::vector<float> D(16 * 16, 0.0f);
        Launch L("ref_wmma", "ref_wmma", dim3(1), dim3(32));
        __half* dA = L.ptr("A", A);
        __half* dB = L.ptr("B", B);
        float* dC = L.ptr("C", C);
        float* dD = L.ptr("D", D);
        ref_wmma<<<L.grid, L.block, L.smem>>>(dA, dB, dC, dD);
        L.done();
    }
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    g_outdir = argv[1];
    int dev = 0;
    cudaDeviceProp prop;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    int runtime = 0, driver = 0;
    CK(cudaRuntimeGetVersion(&runtime));
    CK(cudaDriverGetVersion(&driver));
    run_int32();
    run_int64();
    run_bitops();
    run_shifts();
    run_fp32();
    run_fp64();
    run_half();
    run_cvt();
    run_control();
    run_warp();
    run_memory();
    run_grid();
    run_async_tensor();
    std::string path = g_outdir + "/launches.json";
    FILE* f = fopen(path.c_str(), "w");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
    }
    fprintf(f, "{\"device\": \"%s\", \"compute_capability\": \"%d.%d\", \"cuda_runtime\": %d, \"cuda_driver\": %d,\n",
            prop.name, prop.major, prop.minor, runtime, driver);
    fprintf(f, " \"launches\": [\n");
    for (size_t k = 0; k < g_launches.size(); ++k)
        fprintf(f, "%s%s\n", g_launches[k].c_str(), k + 1 < g_launches.size() ? "," : "");
    fprintf(f, " ]}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
    }
    printf("%zu launches written to %s\n", g_launches.size(), g_outdir.c_str());
    return 0;
}
