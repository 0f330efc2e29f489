#pragma once
// Launchers for gpu/kernels/colstats.cu. Raw pointers only: no torch here.

#include <cstdint>

#include <cuda_runtime_api.h>

namespace sdw::kernels {

enum class DType : int { F32 = 0, BF16 = 1, F16 = 2 };

// acc[c] += sum_{r<rows} x[r * ldx + c]^2 for c < cols. x: [rows, ldx] of `dtype`,
// acc: [cols] fp32. Returns the launch status.
cudaError_t launchColumnSumSquares(const void* x, DType dtype, std::int64_t rows,
                                   std::int64_t cols, std::int64_t ldx, float* acc,
                                   cudaStream_t stream);

}  // namespace sdw::kernels
