#pragma once
// Torch-typed entry points of the bitmask SpMV and dense GEMV kernels. Include
// only from gpu/*.cpp and engine tests (never from widgets/ or app/).

#include "core/sparse_format.h"
#include "gpu/spmv.h"

#include <ATen/core/Tensor.h>

namespace sdw::gpu {

// The kernels' device layout (gpu/kernels/spmv.cuh): row tiles of 32, values
// [tiles][G][32][16] and masks [tiles][G][32]; padding rows are inert.
struct DeviceBitmask {
  at::Tensor values;  // int16 bits of bf16/fp16, tiles * G * 32 * 16
  at::Tensor masks;   // int32 bits, tiles * G * 32
  std::int64_t rows = 0, cols = 0;
  sparse::Pattern pattern;
  sparse::DType dtype = sparse::DType::BF16;
};

// From the row-major packed format (on-disk order) to the device layout.
DeviceBitmask toDeviceLayout(const sparse::PackedMatrix& p, const at::Device& device);

// x: [batch, cols] (batch 1..8) -> [cols, xStride] batch-interleaved, zero-padded.
at::Tensor interleaveBatch(const at::Tensor& x);

// y = x W^T: x [batch, cols] in the weights' dtype, y a [batch, rows] view with
// unit column stride (any row stride), written in place. CUDA tensors only.
void bitmaskSpmvInto(const DeviceBitmask& w, const at::Tensor& x, at::Tensor& y, const SpmvLaunch& cfg);
// w: [rows, cols] bf16/fp16 row-major.
void denseGemvInto(const at::Tensor& w, const at::Tensor& x, at::Tensor& y, const GemvLaunch& cfg);

}  // namespace sdw::gpu
