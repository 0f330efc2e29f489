// Wanda (Sun et al. 2023): score |W_ij| * sqrt(sum_t x_jt^2), compared within
// each output row; no weight update.

#include "gpu/prune_ops.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <stdexcept>

namespace sdw::gpu {

at::Tensor wandaPrune(const at::Tensor& w, const at::Tensor& sumSq, const PruningPattern& p) {
  c10::NoGradGuard noGrad;
  if (sumSq.dim() != 1 || sumSq.size(0) != w.size(1))
    throw std::invalid_argument("Wanda: sum_sq must have one entry per input column");
  const at::Tensor score = w.abs() * sumSq.to(w.scalar_type()).clamp_min(0).sqrt().unsqueeze(0);  // [rows, cols]
  return w * keepByScore(score, p);
}

SolveResult solveWanda(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                       std::span<const float> sumSq, std::span<const float> xtx, std::int64_t tokens,
                       const PruningPattern& pattern, const std::string& device) {
  const auto t0 = std::chrono::steady_clock::now();
  c10::NoGradGuard noGrad;
  if (rows < 1 || cols < 1 || static_cast<std::int64_t>(w.size()) != rows * cols ||
      static_cast<std::int64_t>(sumSq.size()) != cols)
    throw std::invalid_argument("Wanda: W must be rows x cols and sum_sq cols long");
  const auto dev = at::Device(device);
  const at::Tensor wt = at::from_blob(const_cast<float*>(w.data()), {rows, cols}, at::kFloat).to(dev).clone();
  const at::Tensor sq = at::from_blob(const_cast<float*>(sumSq.data()), {cols}, at::kFloat).to(dev);
  const at::Tensor wq = wandaPrune(wt, sq, pattern);
  return maskOnlyResult("Wanda", wt, wq, xtx, tokens, t0);
}

}  // namespace sdw::gpu
