// The bitmask SpMV at batch 6, 7, 8 (gpu/kernels/spmv_impl.cuh): a translation unit of its own.

#include "gpu/kernels/spmv_impl.cuh"

namespace sdw::kernels::detail {

cudaError_t spmvBatches6to8(const SpmvCall& c) { return byBatches<6, 8>(c); }

}  // namespace sdw::kernels::detail
