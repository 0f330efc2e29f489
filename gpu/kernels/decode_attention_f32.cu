// The decode attention for float (gpu/kernels/decode_attention.cuh): a translation unit of its own.

#include "gpu/kernels/decode_attention.cuh"

namespace sdw::kernels::detail {

cudaError_t launchAttentionF32(const AttentionArgs& a, float* ws, cudaStream_t st, bool pdl) {
  return AttnL<float>::run(a, ws, st, pdl);
}

}  // namespace sdw::kernels::detail
