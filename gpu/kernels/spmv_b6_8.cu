// The bitmask SpMV at batch 6, 7, 8 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

template <>
cudaError_t spmvBatch<6>(DType dtype, const void* values, const std::uint32_t* masks, std::int64_t rows,
                         std::int64_t cols, const void* x, void* y, std::int64_t ldy, const SpmvConfig& cfg, float* ws,
                         unsigned* counters, cudaStream_t stream) {
  return byType<6>(dtype, values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
}

template <>
cudaError_t spmvBatch<7>(DType dtype, const void* values, const std::uint32_t* masks, std::int64_t rows,
                         std::int64_t cols, const void* x, void* y, std::int64_t ldy, const SpmvConfig& cfg, float* ws,
                         unsigned* counters, cudaStream_t stream) {
  return byType<7>(dtype, values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
}

template <>
cudaError_t spmvBatch<8>(DType dtype, const void* values, const std::uint32_t* masks, std::int64_t rows,
                         std::int64_t cols, const void* x, void* y, std::int64_t ldy, const SpmvConfig& cfg, float* ws,
                         unsigned* counters, cudaStream_t stream) {
  return byType<8>(dtype, values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
}

}  // namespace sdw::kernels::detail
