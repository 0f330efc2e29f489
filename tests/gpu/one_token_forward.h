#pragma once
// A reference forward pass written out by hand for engine tests: one token at
// position 0 through a one-layer Llama-style model (attention over one key is
// its value; RoPE at position 0 is the identity), with a caller-chosen
// sparsifier applied to each projection input. Include from engine tests that
// link sdw_gpu_internal.

#include "gpu/model.h"
#include "gpu/model_internal.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace sdw::gpu::testing {

// transformers' RMSNorm in fp32.
inline at::Tensor rms(const at::Tensor& x, const at::Tensor& w, double eps) {
  return w * (x * at::rsqrt(x.pow(2).mean(-1, true) + eps));
}

using InputSparsifier = std::function<at::Tensor(const at::Tensor& x, ProjectionInput input)>;

// Logits [1, vocab] fp32 of `token` through layer 0 of `m` (a one-layer model).
inline at::Tensor oneTokenLogits(Model& m, std::int32_t token, const InputSparsifier& sp) {
  const ModelConfig& c = m.config();
  const auto& w = m.impl().w;
  const auto& L = w.layers[0];
  const at::Tensor h0 = w.embed[token].unsqueeze(0);                                   // [1, hidden]
  const at::Tensor x = sp(rms(h0, L.inputNorm, c.rmsNormEps), ProjectionInput::Qkv);
  const at::Tensor v = at::linear(x, L.v);                                              // [1, kvDim]
  const std::int64_t rep = c.numHeads / c.numKvHeads;
  const at::Tensor attn = v.view({1, c.numKvHeads, 1, c.headDim}).expand({1, c.numKvHeads, rep, c.headDim})
                              .reshape({1, c.numHeads * c.headDim});                  // [1, qDim]
  const at::Tensor h1 = h0 + at::linear(sp(attn, ProjectionInput::O), L.o);
  const at::Tensor x2 = sp(rms(h1, L.postNorm, c.rmsNormEps), ProjectionInput::GateUp);
  const at::Tensor act = at::silu(at::linear(x2, L.gate)) * at::linear(x2, L.up);      // [1, inter]
  const at::Tensor h2 = h1 + at::linear(sp(act, ProjectionInput::Down), L.down);
  return at::linear(rms(h2, w.finalNorm, c.rmsNormEps), w.lmHead).contiguous();
}

// Largest |model - reference| over the logits, and the largest |reference|.
struct LogitDiff {
  double maxDiff = 0, maxRef = 0;
  bool within(double rel) const { return maxDiff <= rel * std::max(1.0, maxRef); }
};
inline LogitDiff compareLogits(const std::vector<float>& logits, const at::Tensor& ref) {
  LogitDiff d;
  const float* r = ref.data_ptr<float>();
  for (std::int64_t i = 0; i < ref.numel() && i < static_cast<std::int64_t>(logits.size()); ++i) {
    d.maxDiff = std::max(d.maxDiff, std::abs(double(logits[static_cast<std::size_t>(i)]) - r[i]));
    d.maxRef = std::max(d.maxRef, std::abs(double(r[i])));
  }
  return d;
}

}  // namespace sdw::gpu::testing
