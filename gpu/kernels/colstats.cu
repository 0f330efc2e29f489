// Column sum of squares, fp32 accumulation.
//
// One thread per column, consecutive threads on consecutive columns so each
// warp reads one contiguous 32-element row segment (coalesced). grid.y splits
// the rows into slabs; each slab adds its partial sum with one atomicAdd per
// column, so the atomics are rows/slab times fewer than the elements.

#include "gpu/kernels/colstats.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace sdw::kernels {
namespace {

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }

template <typename T>
__global__ void columnSumSquaresKernel(const T* __restrict__ x, std::int64_t rows,
                                       std::int64_t cols, std::int64_t ldx, std::int64_t rowsPerSlab,
                                       float* __restrict__ acc) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * rowsPerSlab;
  const std::int64_t r1 = min(rows, r0 + rowsPerSlab);
  float s = 0.f;
  for (std::int64_t r = r0; r < r1; ++r) {
    const float v = toFloat(x[r * ldx + c]);
    s = fmaf(v, v, s);
  }
  if (r1 > r0) atomicAdd(acc + c, s);
}

template <typename T>
cudaError_t launch(const T* x, std::int64_t rows, std::int64_t cols, std::int64_t ldx, float* acc,
                   cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::int64_t colBlocks = (cols + kThreads - 1) / kThreads;
  // Enough slabs to give ~4 blocks per SM on a large GPU, at least 64 rows each.
  const std::int64_t wantBlocks = 132 * 4;
  std::int64_t slabs = std::max<std::int64_t>(1, wantBlocks / std::max<std::int64_t>(colBlocks, 1));
  slabs = std::min<std::int64_t>(slabs, std::max<std::int64_t>(1, rows / 64));
  slabs = std::min<std::int64_t>(slabs, 65535);
  const std::int64_t rowsPerSlab = (rows + slabs - 1) / slabs;
  dim3 grid(static_cast<unsigned>(colBlocks), static_cast<unsigned>(slabs));
  columnSumSquaresKernel<T><<<grid, kThreads, 0, stream>>>(x, rows, cols, ldx, rowsPerSlab, acc);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchColumnSumSquares(const void* x, DType dtype, std::int64_t rows,
                                   std::int64_t cols, std::int64_t ldx, float* acc,
                                   cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols > ldx) return cudaErrorInvalidValue;
  switch (dtype) {
    case DType::F32: return launch(static_cast<const float*>(x), rows, cols, ldx, acc, stream);
    case DType::BF16: return launch(static_cast<const __nv_bfloat16*>(x), rows, cols, ldx, acc, stream);
    case DType::F16: return launch(static_cast<const __half*>(x), rows, cols, ldx, acc, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace sdw::kernels
