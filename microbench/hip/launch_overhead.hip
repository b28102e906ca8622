// launch_overhead.hip -- kernel launch overhead of a near-empty kernel <<<1,64>>> (one wave;
// lane 0 of it increments a counter, so that every launch can be counted):
//   stream_back_to_back: 10,000 launches on one stream, hipEvents around the batch (per launch =
//                        batch time / 10,000), 30 batches after 3 warm-up ones; host-bound, so
//                        these results declare max_rel_spread 0.25 like the CUDA suite's;
//   graph:               the same 10,000 launches captured into one hipGraph, replayed 10 times
//                        (after 2 warm-up replays), events around each replay;
//   round_trip:          one launch + hipStreamSynchronize, host std::chrono timer, 1000 times.
// Check: the counter equals the number of launches made (every launch ran, none was dropped).
#include "mb_hip.h"

#include <chrono>

constexpr int kBatch = 10000;

__global__ void count_kernel(unsigned long long* counter) {
  if (threadIdx.x == 0) *counter += 1;  // launches on one stream are serialized
}

int main() {
  mb::device_info("launch_overhead");
  hipStream_t s;
  HIP_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
  unsigned long long* counter;
  HIP_CHECK(hipMalloc(&counter, sizeof(unsigned long long)));
  HIP_CHECK(hipMemset(counter, 0, sizeof(unsigned long long)));
  unsigned long long launched = 0;
  hipEvent_t a, b;
  HIP_CHECK(hipEventCreate(&a));
  HIP_CHECK(hipEventCreate(&b));
  auto timed = [&](auto body, int warmup, int reps) {
    std::vector<double> t;
    for (int r = 0; r < warmup + reps; ++r) {
      HIP_CHECK(hipEventRecord(a, s));
      body();
      HIP_CHECK(hipEventRecord(b, s));
      HIP_CHECK(hipEventSynchronize(b));
      float ms = 0;
      HIP_CHECK(hipEventElapsedTime(&ms, a, b));
      if (r >= warmup) t.push_back(ms);
    }
    return t;
  };
  auto batch = [&] {
    for (int i = 0; i < kBatch; ++i) hipLaunchKernelGGL(count_kernel, dim3(1), dim3(64), 0, s, counter);
    CHECK_LAUNCH();
  };
  auto check = [&](const char* what) {
    HIP_CHECK(hipStreamSynchronize(s));
    unsigned long long got = 0;
    HIP_CHECK(hipMemcpy(&got, counter, sizeof got, hipMemcpyDeviceToHost));
    if (got != launched) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "launch %s: %llu kernels ran, %llu were launched", what, got, launched);
      mb::check_fail(buf);
    }
  };
  auto t = timed([&] { batch(); launched += kBatch; }, 3, 30);
  check("stream_back_to_back");
  mb::result("launch", "stream_back_to_back", "ops", kBatch, t, "\"grid\":1,\"block\":64,\"max_rel_spread\":0.25");

  hipGraph_t graph;
  hipGraphExec_t exec;
  HIP_CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  batch();
  HIP_CHECK(hipStreamEndCapture(s, &graph));
  HIP_CHECK(hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  t = timed([&] { HIP_CHECK(hipGraphLaunch(exec, s)); launched += kBatch; }, 2, 10);
  check("graph");
  mb::result("launch", "graph", "ops", kBatch, t, "\"grid\":1,\"block\":64,\"kernels_per_graph\":10000");

  std::vector<double> rt;
  for (int i = 0; i < 1100; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    hipLaunchKernelGGL(count_kernel, dim3(1), dim3(64), 0, s, counter);
    CHECK_LAUNCH();
    HIP_CHECK(hipStreamSynchronize(s));
    auto t1 = std::chrono::steady_clock::now();
    ++launched;
    if (i >= 100) rt.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  check("round_trip");
  mb::result("launch", "round_trip", "ops", 1, rt,
             "\"grid\":1,\"block\":64,\"timer\":\"std::chrono::steady_clock\",\"max_rel_spread\":0.25");

  HIP_CHECK(hipGraphExecDestroy(exec));
  HIP_CHECK(hipGraphDestroy(graph));
  HIP_CHECK(hipEventDestroy(a));
  HIP_CHECK(hipEventDestroy(b));
  HIP_CHECK(hipStreamDestroy(s));
  HIP_CHECK(hipFree(counter));
  return 0;
}
