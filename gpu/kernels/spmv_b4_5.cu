// The bitmask SpMV at batch 4, 5 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

template <>
cudaError_t spmvBatch<4>(const SpmvCall& c) {
  return byType<4>(c);
}

template <>
cudaError_t spmvBatch<5>(const SpmvCall& c) {
  return byType<5>(c);
}

}  // namespace sdw::kernels::detail
