#pragma once
// Torch-typed engine entry points for column statistics. Include only from
// gpu/*.cpp and engine tests (never from widgets/ or app/).

#include <ATen/core/Tensor.h>

namespace sdw::gpu {

// acc[c] += sum_r x[r, c]^2, fp32 accumulation.
// x: [rows, cols] fp32/bf16/fp16, any device; acc: [cols] fp32 on x's device.
// CUDA tensors go through our kernel (gpu/kernels/colstats.cu); CPU through ATen.
void accumulateColumnSumSquares(const at::Tensor& x, at::Tensor& acc);

}  // namespace sdw::gpu
