"""microbench: CUDA and HIP microbenchmarks that calibrate the hardware database."""

__version__ = "0.1.0"
