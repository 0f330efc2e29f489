// The decode attention for __nv_bfloat16 (gpu/kernels/decode_attention.cuh): a translation unit of its own.

#include "gpu/kernels/decode_attention.cuh"

namespace sdw::kernels::detail {

cudaError_t launchAttentionBF16(const AttentionArgs& a, float* ws, cudaStream_t st, bool pdl) {
  return AttnL<__nv_bfloat16>::run(a, ws, st, pdl);
}

}  // namespace sdw::kernels::detail
