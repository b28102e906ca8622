"""Static analysis: predict from CUDA source with no GPU (compile, discover launches, interpret PTX)."""
