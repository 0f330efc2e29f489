// The bitmask SpMV at batch 2, 3 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

template <>
cudaError_t spmvBatch<2>(const SpmvCall& c) {
  return byType<2>(c);
}

template <>
cudaError_t spmvBatch<3>(const SpmvCall& c) {
  return byType<3>(c);
}

}  // namespace sdw::kernels::detail
