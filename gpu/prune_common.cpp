// What the pruning solvers share: the pattern, score-based selection in the
// method's comparison group (per output row; per input column for column
// N:M), and the error metrics.

#include "gpu/prune_ops.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <charconv>
#include <stdexcept>
#include <string>
#include <tuple>

namespace sdw::gpu {

std::string PruningPattern::name() const {
  if (unstructured) return sparsity == 0.5 ? "unstructured50" : "unstructured" + std::to_string(sparsity);
  return (alongColumns ? "col" : "") + std::to_string(n) + ":" + std::to_string(m);
}

PruningPattern parsePruningPattern(const std::string& s) {
  PruningPattern p;
  if (s == "unstructured50" || s == "unstructured" || s == "50%") {
    p.unstructured = true;
    p.sparsity = 0.5;
    return p;
  }
  // "colN:M": the groups of M run down each input column instead of along each row.
  const bool columns = s.starts_with("col");
  const std::size_t first = columns ? 3 : 0;
  const auto colon = s.find(':', first);
  int n = 0, m = 0;
  const bool ok = colon != std::string::npos &&
                  std::from_chars(s.data() + first, s.data() + colon, n).ptr == s.data() + colon &&
                  std::from_chars(s.data() + colon + 1, s.data() + s.size(), m).ptr == s.data() + s.size();
  if (!ok || n < 1 || m < 2 || n >= m || m > 4096)
    throw std::invalid_argument("pattern '" + s +
                                "': expected N:M with 0 < N < M (2:4, 4:8, 8:16, 16:32), colN:M with the same N "
                                "and M (col2:4: N of every M rows of each input column) or unstructured50");
  p.n = n;
  p.m = m;
  p.alongColumns = columns;
  return p;
}

void checkPatternFits(const PruningPattern& p, std::int64_t rows, std::int64_t cols, int blocksize) {
  if (p.unstructured) {
    if (!(p.sparsity > 0 && p.sparsity < 1)) throw std::invalid_argument("unstructured sparsity must lie in (0, 1)");
    return;
  }
  if (p.alongColumns) {  // groups of M rows in every column; any width and block size
    if (rows % p.m != 0)
      throw std::invalid_argument("pattern " + p.name() + ": output width (rows) " + std::to_string(rows) +
                                  " is not a multiple of " + std::to_string(p.m));
    return;
  }
  if (cols % p.m != 0)
    throw std::invalid_argument("pattern " + p.name() + ": input width " + std::to_string(cols) +
                                " is not a multiple of " + std::to_string(p.m));
  if (blocksize > 0 && blocksize % p.m != 0)
    throw std::invalid_argument("pattern " + p.name() + ": blocksize " + std::to_string(blocksize) +
                                " is not a multiple of " + std::to_string(p.m));
}

at::Tensor keepByScore(const at::Tensor& score, const PruningPattern& p) {
  c10::NoGradGuard noGrad;
  const std::int64_t rows = score.size(0), cols = score.size(1);
  checkPatternFits(p, rows, cols);
  if (p.unstructured) {
    const auto k = static_cast<std::int64_t>(static_cast<double>(cols) * p.sparsity);
    const at::Tensor order = std::get<1>(at::sort(score, /*stable=*/true, /*dim=*/1, /*descending=*/false));
    at::Tensor keep = at::ones({rows, cols}, score.options().dtype(at::kBool));
    keep.scatter_(1, order.narrow(1, 0, k), false);
    return keep;
  }
  if (p.alongColumns) {
    const at::Tensor g = score.reshape({rows / p.m, p.m, cols});  // [groups, M, cols]: M rows of every column
    const at::Tensor idx = std::get<1>(at::topk(g, p.n, /*dim=*/1, /*largest=*/true));
    at::Tensor keep = at::zeros({rows / p.m, p.m, cols}, score.options().dtype(at::kBool));
    keep.scatter_(1, idx, true);
    return keep.view({rows, cols});
  }
  const at::Tensor g = score.reshape({rows, cols / p.m, p.m});  // [rows, groups, M]
  const at::Tensor idx = std::get<1>(at::topk(g, p.n, /*dim=*/2, /*largest=*/true));
  at::Tensor keep = at::zeros({rows, cols / p.m, p.m}, score.options().dtype(at::kBool));
  keep.scatter_(2, idx, true);
  return keep.view({rows, cols});
}

SolveResult maskOnlyResult(const char* method, const at::Tensor& w, const at::Tensor& wq,
                           std::span<const float> xtx, std::int64_t tokens,
                           std::chrono::steady_clock::time_point t0) {
  c10::NoGradGuard noGrad;
  const std::int64_t rows = w.size(0), cols = w.size(1);
  SolveResult r;
  at::Tensor h;
  if (!xtx.empty()) {
    if (static_cast<std::int64_t>(xtx.size()) != cols * cols || tokens < 1)
      throw std::invalid_argument(std::string(method) + ": xtx must be [cols, cols] with tokens >= 1");
    h = hessianFromXtx(at::from_blob(const_cast<float*>(xtx.data()), {cols, cols}, at::kFloat).to(w.device()),
                       tokens);
  }
  fillErrorMetrics(r, w, wq, h);
  r.loss = r.outputLoss;
  const at::Tensor host = wq.to(at::kCPU).contiguous();
  r.weight.assign(host.data_ptr<float>(), host.data_ptr<float>() + rows * cols);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void fillErrorMetrics(SolveResult& r, const at::Tensor& w, const at::Tensor& wq, const at::Tensor& h) {
  c10::NoGradGuard noGrad;
  r.sparsity = wq.eq(0).sum().item<double>() / static_cast<double>(wq.numel());
  if (!h.defined()) return;
  const at::Tensor dw = w - wq;  // [rows, cols]
  const double num = (dw.matmul(h) * dw).sum(at::kDouble).item<double>();
  const double den = (w.matmul(h) * w).sum(at::kDouble).item<double>();
  r.outputLoss = num / 2;
  r.relOutputError = den > 0 ? num / den : 0;
}

at::Tensor hessianFromXtx(const at::Tensor& xtx, std::int64_t tokens) {
  return xtx.to(at::kFloat) * static_cast<float>(2.0 / static_cast<double>(tokens));
}

}  // namespace sdw::gpu
