// The decode attention's host side (gpu/kernels/decode.cuh): the split arithmetic and
// launchDecodeAttention, which dispatches to the unit of the type (decode_attention_*.cu).

#include "gpu/kernels/decode_attention.cuh"

namespace sdw::kernels {

int attentionSplits(std::int64_t capacity) {
  return static_cast<int>((capacity + kSlotsPerBlock - 1) / kSlotsPerBlock);
}

bool attentionClusterMergeSupported(std::int64_t capacity) {
  return attentionSplits(capacity) <= kMaxAttentionClusterSplits && detail::hopperLaunchSupported();
}

std::size_t attentionWorkspaceFloats(int batch, int heads, int headDim, std::int64_t capacity) {
  return static_cast<std::size_t>(batch) * static_cast<std::size_t>(heads) *
         static_cast<std::size_t>(attentionSplits(capacity)) * static_cast<std::size_t>(headDim + 2);
}

cudaError_t launchDecodeAttention(const AttentionArgs& a, DType dtype, float* workspace, cudaStream_t stream,
                                  bool pdl) {
  if (a.headDim % 8 != 0 || a.headDim > 256 || a.kvHeads < 1 || a.heads % a.kvHeads != 0 || a.heads / a.kvHeads > 16 ||
      !a.counters)
    return cudaErrorInvalidValue;
  if (a.merge == AttentionMerge::Cluster && !attentionClusterMergeSupported(a.capacity)) return cudaErrorNotSupported;
  switch (dtype) {  // one translation unit per type (decode_attention_*.cu)
    case DType::F32: return detail::launchAttentionF32(a, workspace, stream, pdl);
    case DType::BF16: return detail::launchAttentionBF16(a, workspace, stream, pdl);
    case DType::F16: return detail::launchAttentionF16(a, workspace, stream, pdl);
  }
  return cudaErrorInvalidValue;
}

}  // namespace sdw::kernels
