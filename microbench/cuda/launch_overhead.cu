// launch_overhead.cu -- kernel launch overhead of an empty kernel <<<1,32>>>:
//   stream_back_to_back: 10,000 launches on one stream, cudaEvents around the batch
//                        (per launch = batch time / 10,000), 30 batches after 15 warm-up ones (host-side
//                        noise: the batch times spread by ~15% p10-p90 on an H200, so these
//                        host-bound results declare max_rel_spread 0.25 instead of 0.10; on an
//                        H100 the first ~15 batches ran ~20% slower than the rest, hence the
//                        long warm-up);
//   graph:               the same 10,000 launches captured into one CUDA graph, replayed
//                        10 times (after 2 warm-up replays), events around each replay;
//   round_trip:          one launch + cudaStreamSynchronize, host std::chrono timer, 1000 times.
#include "mb.h"

#include <chrono>

constexpr int kBatch = 10000;

__global__ void empty_kernel() {}

int main() {
  mb::device_info("launch_overhead");
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  auto timed = [&](auto body, int warmup, int reps) {
    std::vector<double> t;
    for (int r = 0; r < warmup + reps; ++r) {
      CHECK(cudaEventRecord(a, s));
      body();
      CHECK(cudaEventRecord(b, s));
      CHECK(cudaEventSynchronize(b));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (r >= warmup) t.push_back(ms);
    }
    return t;
  };
  auto batch = [&] {
    for (int i = 0; i < kBatch; ++i) empty_kernel<<<1, 32, 0, s>>>();
    CHECK_LAUNCH();
  };
  mb::result("launch", "stream_back_to_back", "ops", kBatch, timed(batch, 15, 30),
             "\"grid\":1,\"block\":32,\"max_rel_spread\":0.25");

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  batch();
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  mb::result("launch", "graph", "ops", kBatch,
             timed([&] { CHECK(cudaGraphLaunch(exec, s)); }, 2, 10), "\"grid\":1,\"block\":32,\"kernels_per_graph\":10000");

  std::vector<double> rt;
  for (int i = 0; i < 1100; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    empty_kernel<<<1, 32, 0, s>>>();
    CHECK_LAUNCH();
    CHECK(cudaStreamSynchronize(s));
    auto t1 = std::chrono::steady_clock::now();
    if (i >= 100) rt.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  mb::result("launch", "round_trip", "ops", 1, rt, "\"grid\":1,\"block\":32,\"timer\":\"std::chrono::steady_clock\",\"max_rel_spread\":0.25");

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
