// Helper header of build_options.cu, found only through -I tests/data/static_programs/build_options/include.
#pragma once
template <typename T> __device__ inline T axpb(T a, T x, T b) { return a * x + b; }
