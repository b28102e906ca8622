// launch_overhead -- category: launch_overhead
//
// A kernel with one warp doing one store. The GPU work is ~nothing, so the time per
// launch is the launch path itself (host submission + front-end + block dispatch +
// teardown, a few microseconds). Timing mode launches it 1000 times back to back between
// one event pair and reports the per-launch time; profile mode launches it 3 times.
#include "zoo.h"

constexpr int kBatch = 1000;

extern "C" __global__ void __launch_bounds__(32)
tiny_kernel(float* __restrict__ out, float v) {
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

int main(int argc, char** argv) {
  zoo::Session S("launch_overhead", argc, argv);
  float* out = zoo::device_alloc<float>(1);
  dim3 block(32), grid(1);
  int count = 0;  // the value written tells which launch ran last
  S.measure("tiny_kernel", grid, block, 0, [&] {
    tiny_kernel<<<grid, block>>>(out, float(++count));
    CHECK_LAUNCH();
  }, kBatch, /*profile_launches=*/3);
  float got = 0;
  CHECK(cudaMemcpy(&got, out, sizeof(float), cudaMemcpyDeviceToHost));
  if (got != float(count)) zoo::fail("out: got %g expected %d", got, count);
  zoo::check_ok("launch_overhead");
  CHECK(cudaFree(out));
  return 0;
}
