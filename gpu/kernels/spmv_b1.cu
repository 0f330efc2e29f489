// The bitmask SpMV at batch 1 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

template <>
cudaError_t spmvBatch<1>(DType dtype, const void* values, const std::uint32_t* masks, std::int64_t rows,
                         std::int64_t cols, const void* x, void* y, std::int64_t ldy, const SpmvConfig& cfg, float* ws,
                         unsigned* counters, cudaStream_t stream) {
  return byType<1>(dtype, values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
}

}  // namespace sdw::kernels::detail
