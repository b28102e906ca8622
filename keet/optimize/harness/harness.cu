// harness.cu -- keet optimize's host harness (linked with one candidate's launch()).
//
// Usage: harness PLAN
// The plan is a text file of cases written by keet.optimize.harness:
//
//   case NAME MODE            MODE: check | time | profile
//   dims D0 D1 ...            the Problem's dims
//   in ELEMENT_BYTES COUNT PATH    an input, raw little-endian bytes
//   alt PATH                  time mode: the previous input's alternate values (same size)
//   after PATH                check mode: where the previous input is written back (default:
//                             its PATH.after; keet names a file beside the outputs, because the
//                             inputs are read-only to a sandboxed candidate)
//   out ELEMENT_BYTES COUNT PATH   an output; results go to PATH.run1 / PATH.run2 (check)
//                                  or PATH.timed (time), each with its guard zones
//   timing WARMUP REPS             time mode only
//   end
//
// check: every output allocation is [guard | data | guard], all filled with the byte
//        kFill before each of two launches; after each launch the whole allocation (guards
//        included) is written out, and after both the inputs are written back (PATH.after)
//        so that keet can see writes out of bounds, unwritten elements, differences between
//        the runs and writes into inputs.
// time:  warm-up launches, then REPS launches, each between two CUDA events on the
//        harness's stream and preceded by a refill of the outputs with kFill and an L2 flush
//        (memset of a buffer twice the L2, then a read of it, so the L2 holds clean lines of
//        an unrelated buffer); prints KEET_TIMES NAME t1 t2 ... (milliseconds) and writes the
//        last output with its guards. The refill makes every timed launch produce the whole
//        output itself: a launch() that computes during warm-up and skips work afterwards
//        leaves kFill in the output that keet checks. Inputs with an alternate alternate
//        between their two value sets from one timed launch to the next, the last on the
//        alternate (copied in before the refill, untimed): a launch() that replays a result
//        it stored earlier writes the answer to the wrong inputs.
// profile: one launch (for Nsight Compute).
// Each case ends with KEET_CASE_DONE NAME, the plan with KEET_HARNESS_DONE: a candidate
// that exits early leaves them out.
#include "keet_problem.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static const unsigned char kFill = 0x7F;   // 0x7F7F7F7F is 3.4e38 as float32: never a result
static const size_t kGuard = 4096;         // guard bytes before and after every output

#define HCHECK(call)                                                                    \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::printf("KEET_CUDA_ERROR %s:%d %s: %s\n", __FILE__, __LINE__, #call,          \
                  cudaGetErrorString(e_));                                              \
      std::fflush(stdout);                                                              \
      std::exit(3);                                                                     \
    }                                                                                   \
  } while (0)

struct Buffer {
  size_t elem = 0, count = 0;
  std::string path, alt_path, after_path;
  unsigned char* base = nullptr;  // allocation start (outputs: guard first)
  unsigned char* sets[2] = {nullptr, nullptr};  // time mode: the given and the alternate values
  size_t bytes() const { return elem * count; }
};

struct Case {
  std::string name, mode;
  std::vector<long long> dims;
  std::vector<Buffer> ins, outs;
  int warmup = 3, reps = 20;
};

static std::vector<unsigned char> read_file(const std::string& path, size_t bytes) {
  std::vector<unsigned char> data(bytes);
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f || std::fread(data.data(), 1, bytes, f) != bytes) {
    std::printf("KEET_HARNESS_ERROR cannot read %zu bytes from %s\n", bytes, path.c_str());
    std::exit(4);
  }
  std::fclose(f);
  return data;
}

static void write_file(const std::string& path, const unsigned char* data, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, bytes, f) != bytes) {
    std::printf("KEET_HARNESS_ERROR cannot write %s\n", path.c_str());
    std::exit(4);
  }
  std::fclose(f);
}

static std::vector<Case> read_plan(const char* path) {
  std::vector<Case> cases;
  FILE* f = std::fopen(path, "r");
  if (!f) {
    std::printf("KEET_HARNESS_ERROR cannot open plan %s\n", path);
    std::exit(4);
  }
  char word[64], text[4096];
  while (std::fscanf(f, "%63s", word) == 1) {
    std::string w = word;
    if (w == "case") {
      Case c;
      char mode[64];
      if (std::fscanf(f, "%4095s %63s", text, mode) != 2) break;
      c.name = text;
      c.mode = mode;
      cases.push_back(c);
    } else if (w == "dims") {
      char line[4096];
      if (!std::fgets(line, sizeof line, f)) break;
      char* p = line;
      char* end = nullptr;
      for (long long v = std::strtoll(p, &end, 10); end != p; v = std::strtoll(p, &end, 10)) {
        cases.back().dims.push_back(v);
        p = end;
      }
    } else if (w == "in" || w == "out") {
      Buffer b;
      if (std::fscanf(f, "%zu %zu %4095s", &b.elem, &b.count, text) != 3) break;
      b.path = text;
      (w == "in" ? cases.back().ins : cases.back().outs).push_back(b);
    } else if (w == "alt") {
      if (std::fscanf(f, "%4095s", text) != 1) break;
      cases.back().ins.back().alt_path = text;
    } else if (w == "after") {
      if (std::fscanf(f, "%4095s", text) != 1) break;
      cases.back().ins.back().after_path = text;
    } else if (w == "timing") {
      if (std::fscanf(f, "%d %d", &cases.back().warmup, &cases.back().reps) != 2) break;
    }
  }
  std::fclose(f);
  return cases;
}

__global__ void keet_flush_read(const float4* __restrict__ p, size_t n4, float* __restrict__ sink) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) {
    float4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 123.456f) sink[0] = acc;  // practically never true; keeps the loads alive
}

struct Flusher {
  unsigned char* scratch = nullptr;
  float* sink = nullptr;
  size_t bytes = 0;
  int count = 0, sms = 1;
  void init() {
    int l2 = 0;
    HCHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    HCHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    bytes = std::max<size_t>(size_t(2) * size_t(l2), size_t(64) << 20);
    HCHECK(cudaMalloc(&scratch, bytes));
    HCHECK(cudaMalloc(&sink, sizeof(float)));
  }
  void flush(cudaStream_t s) {
    if (!scratch) init();
    HCHECK(cudaMemsetAsync(scratch, (count++ & 0x3f) + 1, bytes, s));
    keet_flush_read<<<4 * sms, 512, 0, s>>>(reinterpret_cast<const float4*>(scratch), bytes / 16, sink);
    HCHECK(cudaGetLastError());
  }
};

static void setup(Case& c, Problem& p) {
  std::memset(&p, 0, sizeof p);
  p.n_dims = int(c.dims.size());
  for (int i = 0; i < p.n_dims && i < KEET_MAX_DIMS; ++i) p.dim[i] = c.dims[i];
  p.n_in = int(c.ins.size());
  for (int i = 0; i < p.n_in; ++i) {
    Buffer& b = c.ins[i];
    std::vector<unsigned char> host = read_file(b.path, b.bytes());
    HCHECK(cudaMalloc(&b.base, std::max<size_t>(b.bytes(), 1)));
    HCHECK(cudaMemcpy(b.base, host.data(), b.bytes(), cudaMemcpyHostToDevice));
    p.in[i] = b.base;
    p.in_count[i] = (long long)b.count;
  }
  p.n_out = int(c.outs.size());
  for (int i = 0; i < p.n_out; ++i) {
    Buffer& b = c.outs[i];
    HCHECK(cudaMalloc(&b.base, b.bytes() + 2 * kGuard));
    p.out[i] = b.base + kGuard;
    p.out_count[i] = (long long)b.count;
  }
}

static void fill_outputs(Case& c, cudaStream_t s) {
  for (Buffer& b : c.outs) HCHECK(cudaMemsetAsync(b.base, kFill, b.bytes() + 2 * kGuard, s));
}

static void save_outputs(Case& c, const char* suffix) {
  for (Buffer& b : c.outs) {
    std::vector<unsigned char> host(b.bytes() + 2 * kGuard);
    HCHECK(cudaMemcpy(host.data(), b.base, host.size(), cudaMemcpyDeviceToHost));
    write_file(b.path + suffix, host.data(), host.size());
  }
}

static void release(Case& c) {
  for (Buffer& b : c.ins) cudaFree(b.base);
  for (Buffer& b : c.outs) cudaFree(b.base);
}

static void launch_checked(const Problem& p, cudaStream_t s) {
  launch(&p, s);
  HCHECK(cudaGetLastError());
}

static void run_check(Case& c, const Problem& p, cudaStream_t s) {
  const char* suffixes[2] = {".run1", ".run2"};
  for (const char* suffix : suffixes) {
    fill_outputs(c, s);
    launch_checked(p, s);
    HCHECK(cudaStreamSynchronize(s));
    save_outputs(c, suffix);
  }
  for (Buffer& b : c.ins) {
    std::vector<unsigned char> host(b.bytes());
    HCHECK(cudaMemcpy(host.data(), b.base, b.bytes(), cudaMemcpyDeviceToHost));
    write_file(b.after_path.empty() ? b.path + ".after" : b.after_path, host.data(), host.size());
  }
}

static void stash_input_sets(Case& c) {
  for (Buffer& b : c.ins) {
    if (b.alt_path.empty()) continue;
    std::vector<unsigned char> alt = read_file(b.alt_path, b.bytes());
    for (unsigned char*& set : b.sets) HCHECK(cudaMalloc(&set, std::max<size_t>(b.bytes(), 1)));
    HCHECK(cudaMemcpy(b.sets[0], b.base, b.bytes(), cudaMemcpyDeviceToDevice));
    HCHECK(cudaMemcpy(b.sets[1], alt.data(), b.bytes(), cudaMemcpyHostToDevice));
  }
}

static void use_input_set(Case& c, int set, cudaStream_t s) {
  for (Buffer& b : c.ins)
    if (b.sets[set]) HCHECK(cudaMemcpyAsync(b.base, b.sets[set], b.bytes(), cudaMemcpyDeviceToDevice, s));
}

static void run_time(Case& c, const Problem& p, cudaStream_t s, Flusher& flusher) {
  cudaEvent_t start, stop;
  HCHECK(cudaEventCreate(&start));
  HCHECK(cudaEventCreate(&stop));
  stash_input_sets(c);
  fill_outputs(c, s);
  for (int i = 0; i < c.warmup; ++i) launch_checked(p, s);
  HCHECK(cudaStreamSynchronize(s));
  std::vector<float> ms;
  for (int r = 0; r < c.reps; ++r) {
    use_input_set(c, (c.reps - 1 - r) % 2 == 0 ? 1 : 0, s);  // the last launch: the alternate
    fill_outputs(c, s);  // enqueued before the start event, like the flush: not timed
    flusher.flush(s);
    HCHECK(cudaEventRecord(start, s));
    launch_checked(p, s);
    HCHECK(cudaEventRecord(stop, s));
    HCHECK(cudaEventSynchronize(stop));
    float t = 0.f;
    HCHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  HCHECK(cudaDeviceSynchronize());
  std::printf("KEET_TIMES %s", c.name.c_str());
  for (float t : ms) std::printf(" %.6f", t);
  std::printf("\n");
  save_outputs(c, ".timed");
  for (Buffer& b : c.ins)
    for (unsigned char* set : b.sets) cudaFree(set);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::printf("usage: %s PLAN\n", argv[0]);
    return 2;
  }
  std::vector<Case> cases = read_plan(argv[1]);
  HCHECK(cudaSetDevice(0));
  cudaStream_t stream;
  HCHECK(cudaStreamCreate(&stream));
  Flusher flusher;
  for (Case& c : cases) {
    Problem p;
    setup(c, p);
    if (c.mode == "check") {
      run_check(c, p, stream);
    } else if (c.mode == "time") {
      run_time(c, p, stream, flusher);
    } else {
      launch_checked(p, stream);
      HCHECK(cudaStreamSynchronize(stream));
    }
    release(c);
    std::printf("KEET_CASE_DONE %s\n", c.name.c_str());
    std::fflush(stdout);
  }
  std::printf("KEET_HARNESS_DONE\n");
  return 0;
}
