// The bitmask SpMV at batch 4, 5 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

cudaError_t spmvBatches4to5(const SpmvCall& c) { return byBatches<4, 5>(c); }

}  // namespace sdw::kernels::detail
