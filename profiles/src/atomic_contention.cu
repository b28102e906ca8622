// atomic_contention -- category: atomic_contention
//
// Every thread of the grid does atomicAdd(float) to ONE global address, twice.
// 1056 blocks (one full wave) x 256 threads x 2 = 0.54 M same-address atomics (~1.8 ns each on H100,
// ~1 ms). Float adds cannot be combined by the compiler (not associative), so each one is
// a RED.ADD.F32 that the L2 slice owning that address must serialise; the rest of the
// chip idles.
// The added values are small integers, so the sum is exact whatever the order.
#include "zoo.h"

constexpr int kIters = 2;

extern "C" __global__ void __launch_bounds__(256)
atomic_hot_kernel(const float* __restrict__ in, int iters, float* __restrict__ counter) {
  const float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int k = 0; k < iters; ++k) atomicAdd(counter, v);  // one hot address
}

int main(int argc, char** argv) {
  zoo::Session S("atomic_contention", argc, argv);
  dim3 block(256), grid(zoo::kNumSMs * 8);  // one full wave
  const unsigned threads = grid.x * block.x;
  std::vector<float> hin(threads);
  zoo::Rng r(61);
  double per_launch = 0;
  for (auto& x : hin) { x = float(1 + r.below(3)); per_launch += double(x) * kIters; }
  float* in = zoo::to_device(hin);
  float* counter = zoo::device_alloc<float>(1);

  auto launch = [&] {
    atomic_hot_kernel<<<grid, block>>>(in, kIters, counter);
    CHECK_LAUNCH();
  };
  // The counter accumulates over launches, so check on a single launch from zero:
  // in profile mode that is the one profiled launch, otherwise an extra untimed launch.
  CHECK(cudaMemset(counter, 0, sizeof(float)));
  if (!S.profile()) launch();
  else S.measure("atomic_hot_kernel", grid, block, 0, launch);
  float got = 0;
  CHECK(cudaMemcpy(&got, counter, sizeof(float), cudaMemcpyDeviceToHost));
  if (double(got) != per_launch) zoo::fail("counter: got %.1f expected %.1f", got, per_launch);
  if (!S.profile()) S.measure("atomic_hot_kernel", grid, block, 0, launch);
  zoo::check_ok("atomic_contention");
  CHECK(cudaFree(in)); CHECK(cudaFree(counter));
  return 0;
}
