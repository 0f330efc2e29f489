#pragma once
// CPU kernels for the bitmask N:M format and its dense counterpart: the
// reference for the CUDA kernels and the benchmark path on machines without a
// GPU. Plain types, no torch.

#include "core/sparse_format.h"

#include <cstdint>
#include <span>

namespace sdw::gpu {

// y[b, r] = sum_c W[r, c] * x[b, c] over the kept weights, fp32 accumulation.
// w: packed [rows, cols]; x: [batch, cols] fp32; y: [batch, rows] fp32 with row
// stride ldy >= rows. threads <= 0: hardware concurrency. Throws
// std::invalid_argument on mismatched sizes.
void spmvCpu(const sparse::PackedMatrix& w, std::span<const float> x, int batch, std::span<float> y,
             std::int64_t ldy, int threads = 0);

// Dense GEMV over 16-bit weights w: [rows, cols] (bf16/fp16 bits), same contract.
void gemvCpu(std::span<const std::uint16_t> w, sparse::DType dtype, std::int64_t rows, std::int64_t cols,
             std::span<const float> x, int batch, std::span<float> y, std::int64_t ldy, int threads = 0);

}  // namespace sdw::gpu
