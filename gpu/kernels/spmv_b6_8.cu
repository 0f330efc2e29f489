// The bitmask SpMV at batch 6, 7, 8 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

template <>
cudaError_t spmvBatch<6>(const SpmvCall& c) {
  return byType<6>(c);
}

template <>
cudaError_t spmvBatch<7>(const SpmvCall& c) {
  return byType<7>(c);
}

template <>
cudaError_t spmvBatch<8>(const SpmvCall& c) {
  return byType<8>(c);
}

}  // namespace sdw::kernels::detail
