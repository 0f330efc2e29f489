// The bitmask SpMV at batch 2, 3 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

cudaError_t spmvBatches2to3(const SpmvCall& c) { return byBatches<2, 3>(c); }

}  // namespace sdw::kernels::detail
