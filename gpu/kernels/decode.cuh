#pragma once
// Launchers for the decode engine's fused operations (gpu/kernels/decode.cu, the attention in decode_attention.cuh):
// everything of a decode step that is not a projection. Raw pointers only.
//
// Element type: one DType for activations, weights of norms, the rotary tables
// and the KV cache (F32, BF16 or F16). Every operation rounds where the eager
// forward pass (gpu/llama_forward.cpp) rounds, so fp32 agrees to summation order
// and 16-bit types to one rounding of a few intermediates.
//
// A projection's input buffer has one of two layouts, given as strides: row-major
// [batch][cols] (cuBLAS, our dense GEMV: strideB = cols, strideC = 1) or the
// sparse kernel's batch-interleaved [cols][xStride] (strideB = 1, strideC = xStride).
//
// pdl: launch with programmatic dependent launch (sm_90; ignored elsewhere): the
// kernel may start while the previous kernel of the stream runs, waits for it, and
// lets the next kernel start at once (our projections then stream their first
// weights while this kernel runs).
//
// The decode position lives on the device (`slot`: the cache slot every row writes
// this step); row b's model position is slot - pad[b], and attention reads slots
// [pad[b], slot]. A captured CUDA graph replays unchanged while the host moves `slot`.

#include "gpu/kernels/colstats.cuh"  // DType

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace sdw::kernels {

struct XLayout {
  std::int64_t strideB = 0;
  std::int64_t strideC = 1;
};

// h[b, :] = table[ids[b], :]  (ids int32, batch rows); with scale != 1,
// round(table[ids[b], :] * scale) (Gemma 3: sqrt(hidden), already rounded to the dtype).
cudaError_t launchEmbedRows(const void* table, DType dtype, std::int64_t hidden, const std::int32_t* ids, int batch,
                            void* h, cudaStream_t stream, bool pdl = false, float scale = 1.f);

// With y: h[b] = round(h[b] + y[b]) (y row b at y + b * ldy). Then
// x[b] = round(w * round(h[b] * rsqrt(mean(h[b]^2) + eps))), written in `layout`.
cudaError_t launchAddRmsNorm(void* h, const void* y, std::int64_t ldy, const void* w, DType dtype, std::int64_t hidden,
                             int batch, float eps, void* x, XLayout layout, cudaStream_t stream, bool pdl = false);

// Gemma 3's residual step, with its RMSNorm gnorm(v, w) = v * rsqrt(mean(v^2) + eps) * (1 + w)
// in fp32, rounded once. With y: h[b] = round(h[b] + round(gnorm(y[b], postW))) (the
// attention or MLP output normalised before the residual add). Then
// x[b] = round(gnorm(h[b], w)), written in `layout`.
cudaError_t launchGemmaAddNorm(void* h, const void* y, std::int64_t ldy, const void* postW, const void* w, DType dtype,
                               std::int64_t hidden, int batch, float eps, void* x, XLayout layout, cudaStream_t stream,
                               bool pdl = false);

// Grouped-query attention of one new token per row, from the fused q|k|v projection
// output qkv [batch][ldqkv]: per-head RMSNorm of q and k where qNorm/kNorm are given
// (Qwen3; Gemma 3's (1 + w) norm with gemmaNorm), rotary embedding at position slot - pad[b] (cos/sin: [positions,
// headDim]), the new key and value written to the caches [batch, kvHeads, capacity, headDim] at `slot`, then attention
// over the cache slots [pad[b], slot] (the last `window` of them with a sliding window), split along the slots
// (flash-decoding): `splits` blocks per (row, KV head) write partial maxima, sums and
// outputs to `workspace`; the last of them to finish merges them into out (row b,
// head h, dim d at b * strideB + (h * headDim + d) * strideC). counters: batch *
// kvHeads unsigned, zero before the first launch (left zero). headDim <= 256, a
// multiple of 8; heads / kvHeads <= 16. With AttentionMerge::Cluster (sm_90, at most
// kMaxAttentionClusterSplits splits) the splits of a (row, KV head) form one
// thread-block cluster and merge through distributed shared memory instead: no
// workspace round trip, no ticket; both merges compute the same floats (bitwise).
enum class AttentionMerge : int {
  Ticket = 0,   // partials in the workspace, the last block (an atomic ticket) merges
  Cluster = 1,  // the splits one cluster, merged through distributed shared memory
  Empty = 2,    // profiling aid: the launch and its waits alone, no attention (output left as it is)
};
constexpr int kMaxAttentionClusterSplits = 8;
struct AttentionArgs {
  const void* qkv = nullptr;
  std::int64_t ldqkv = 0;
  const void* qkvBias = nullptr;  // [heads + 2 kvHeads] x headDim, added to qkv (Qwen2); or none
  int window = 0;                 // > 0: a sliding window of that many positions (Mistral, Gemma 3's sliding layers)
  const void* qNorm = nullptr;
  const void* kNorm = nullptr;
  bool gemmaNorm = false;         // q/k norms scale by (1 + w) in fp32, rounded once (Gemma 3)
  float eps = 1e-6f;
  const void* cos = nullptr;
  const void* sin = nullptr;
  int heads = 0, kvHeads = 0, headDim = 0;
  std::int64_t capacity = 0;
  const int* slot = nullptr;
  const int* pad = nullptr;  // [batch]
  int batch = 1;
  void* kCache = nullptr;
  void* vCache = nullptr;
  float scale = 1.f;
  void* out = nullptr;
  XLayout layout;
  unsigned* counters = nullptr;
  AttentionMerge merge = AttentionMerge::Ticket;
  // Lanes scoring each cache slot, each over headDim / lanes dims (1, 2 or 4): more warps
  // per block over the same slots. Taken for bf16/fp16 where the value rows are
  // prefetched and headDim is a multiple of 8 * lanes; otherwise one.
  int lanesPerSlot = 1;
  // Whether the value rows are prefetched with the keys (16-bit types): 1 yes where they fit,
  // 0 no (the key rows' shared memory is reused: half of it, so more blocks per SM), -1 auto:
  // not where the grid (splits x KV heads x batch) then fits one wave of the device and with
  // them it does not (batch 8: 2 blocks of ~90 KB per SM with them, 4 without).
  int valuesPrefetch = -1;
};

int attentionSplits(std::int64_t capacity);  // slot blocks of 128
std::size_t attentionWorkspaceFloats(int batch, int heads, int headDim, std::int64_t capacity);
cudaError_t launchDecodeAttention(const AttentionArgs& a, DType dtype, float* workspace, cudaStream_t stream,
                                  bool pdl = false);
// Whether AttentionMerge::Cluster can run for this cache capacity on the current device.
bool attentionClusterMergeSupported(std::int64_t capacity);

// x[b, i] = round(round(act(g)) * u) for i < inter, with g = gu[b * ldgu + i] and
// u = gu[b * ldgu + inter + i] (the fused gate|up projection output); act is SiLU,
// or GELU-tanh with `gelu` (Gemma 3).
cudaError_t launchGatedMul(const void* gu, std::int64_t ldgu, std::int64_t inter, int batch, DType dtype, void* x,
                           XLayout layout, bool gelu, cudaStream_t stream, bool pdl = false);

// ids[b] = argmax of logits row b (the lowest index among equal maxima).
cudaError_t launchArgmax(const void* logits, std::int64_t ldl, std::int64_t vocab, int batch, DType dtype,
                         std::int32_t* ids, cudaStream_t stream, bool pdl = false);
// Final logit soft-capping, in place, then the argmax of the capped row (Gemma 3):
// logits[b, i] = round(round(tanh(round(logits[b, i] * round_f32(1 / cap)))) * cap),
// as LibTorch's CUDA `tanh(x / cap) * cap` rounds in the logits' dtype; cap > 0.
cudaError_t launchSoftcapArgmax(void* logits, std::int64_t ldl, std::int64_t vocab, int batch, DType dtype, float cap,
                                std::int32_t* ids, cudaStream_t stream, bool pdl = false);

// The bitmask device layout (gpu/kernels/spmv.cuh) back to a dense row-major
// [rows, cols] matrix of `outType` (zeros where pruned), for prefill and fp32.
cudaError_t launchUnpackBitmask(const void* values, const std::uint32_t* masks, DType valueType, std::int64_t rows,
                                std::int64_t cols, void* out, DType outType, cudaStream_t stream);

// Prunes a dense row-major [rows, cols] 16-bit matrix to n:m by magnitude (the n
// largest |w| of each aligned group of m, lower index first among ties; n / m = 1/2,
// m | 32) and writes it in the bitmask device layout: values [tiles][G][32][16],
// masks [tiles][G][32], padding rows inert. For synthetic benchmark weights.
cudaError_t launchPackNm(const void* w, DType dtype, std::int64_t rows, std::int64_t cols, int n, int m, void* values,
                         std::uint32_t* masks, cudaStream_t stream);

}  // namespace sdw::kernels
