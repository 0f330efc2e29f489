// The bitmask SpMV at batch 1 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

cudaError_t spmvBatch1(const SpmvCall& c) { return byBatches<1, 1>(c); }

}  // namespace sdw::kernels::detail
