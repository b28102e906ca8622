// y = a*x + y over n floats: the README's example of predicting a kernel from its source alone,
// with the launch given on the command line (this file has no main):
//   perfmodel predict examples/saxpy.cu --gpu h100 --kernel saxpy --grid 4096 --block 256 \
//       --arg n=1048576 --arg a=2 --buffer x=4MiB --buffer y=4MiB
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
