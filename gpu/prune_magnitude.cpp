// Magnitude baseline: score |W_ij|, compared within each output row (the
// same comparison group as Wanda, so the two differ only by the input norm;
// a layer-wide threshold would let some rows lose far more than half).

#include "gpu/prune_ops.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <stdexcept>

namespace sdw::gpu {

at::Tensor magnitudePrune(const at::Tensor& w, const PruningPattern& p) {
  c10::NoGradGuard noGrad;
  return w * keepByScore(w.abs(), p);
}

SolveResult solveMagnitude(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                           std::span<const float> xtx, std::int64_t tokens, const PruningPattern& pattern,
                           const std::string& device) {
  const auto t0 = std::chrono::steady_clock::now();
  c10::NoGradGuard noGrad;
  if (rows < 1 || cols < 1 || static_cast<std::int64_t>(w.size()) != rows * cols)
    throw std::invalid_argument("magnitude: W must hold rows x cols values");
  const auto dev = at::Device(device);
  const at::Tensor wt = at::from_blob(const_cast<float*>(w.data()), {rows, cols}, at::kFloat).to(dev).clone();
  const at::Tensor wq = magnitudePrune(wt, pattern);
  return maskOnlyResult("magnitude", wt, wq, xtx, tokens, t0);
}

}  // namespace sdw::gpu
