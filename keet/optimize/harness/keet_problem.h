// keet_problem.h -- the contract between keet's optimize harness and a candidate kernel.
//
// A candidate (and the reference) is one .cu file that includes this header and defines
//
//     extern "C" void launch(const Problem* p, cudaStream_t stream);
//
// which enqueues the kernel(s) on `stream` and returns. The harness owns everything else:
// it allocates and fills the buffers, times the launch with CUDA events, flushes the L2
// between repetitions, checks the results, and synchronizes. A candidate must not allocate,
// copy, synchronize, create streams or events, read clocks or exit (keet's static scan
// rejects those calls; see docs/optimize.md).
#pragma once

#include <cuda_runtime.h>

#define KEET_MAX_BUFFERS 8
#define KEET_MAX_DIMS 8

struct Problem {
  long long dim[KEET_MAX_DIMS];         // the problem's dims, in the order of the spec's `dims`
  int n_dims;
  const void* in[KEET_MAX_BUFFERS];     // inputs, in the order of the spec's [[inputs]]
  long long in_count[KEET_MAX_BUFFERS]; // elements (not bytes)
  int n_in;
  void* out[KEET_MAX_BUFFERS];          // outputs, in the order of the spec's [[outputs]]
  long long out_count[KEET_MAX_BUFFERS];
  int n_out;
};

extern "C" void launch(const Problem* p, cudaStream_t stream);
