// The bitmask SpMV at batch 1 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

template <>
cudaError_t spmvBatch<1>(const SpmvCall& c) {
  return byType<1>(c);
}

}  // namespace sdw::kernels::detail
