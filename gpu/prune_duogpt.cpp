// DuoGPT (Yin et al. 2025, arXiv 2506.20194): SparseGPT's blocked OBS on the
// asymmetric objective ||W X~ - W' X^||^2, where X^ are the pruned model's
// inputs sparsified at run time (activation sparsity p_x) and X~ the dense
// model's dense inputs. The objective is a quadratic in W' with the Hessian of
// X^ and its minimum at W + W C H^-1 (C = 2 (X~ - X^) X^T / N): OBS from that
// point with the one Cholesky factor every column already shares is the
// method's solve (docs/pruning.md "DuoGPT"). This file holds the solver entry
// point and the paired capture of X~ and X^ for one layer.

#include "gpu/calibration_internal.h"
#include "gpu/model_internal.h"
#include "gpu/prune_ops.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace sdw::gpu {

namespace {

at::Tensor hostMatrix(std::span<const float> v, std::int64_t rows, std::int64_t cols, const at::Device& dev) {
  return at::from_blob(const_cast<float*>(v.data()), {rows, cols}, at::kFloat).to(dev).clone();
}

}  // namespace

SolveResult solveDuoGpt(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::span<const float> xtx,
                        std::span<const float> cross, std::span<const float> xtxDense, std::int64_t tokens,
                        const PruningPattern& pattern, const SparseGptOptions& options, double residualScale) {
  const auto t0 = std::chrono::steady_clock::now();
  c10::NoGradGuard noGrad;
  const auto n2 = static_cast<std::size_t>(cols * cols);
  if (rows < 1 || cols < 1 || static_cast<std::int64_t>(w.size()) != rows * cols)
    throw std::invalid_argument("DuoGPT: W must hold rows x cols values");
  if (xtx.size() != n2 || cross.size() != n2)
    throw std::invalid_argument("DuoGPT: xtx and the cross term must be [cols, cols]");
  if (!xtxDense.empty() && xtxDense.size() != n2) throw std::invalid_argument("DuoGPT: the dense xtx must be [cols, cols]");
  if (tokens < 1) throw std::invalid_argument("DuoGPT: tokens must be >= 1");
  const auto dev = at::Device(options.device);
  const at::Tensor wt = hostMatrix(w, rows, cols, dev);
  const at::Tensor shh = hostMatrix(xtx, cols, cols, dev);
  const at::Tensor d = hostMatrix(cross, cols, cols, dev);
  const at::Tensor h = hessianFromXtx(shh, tokens);
  if (!(residualScale >= 0 && residualScale <= 1)) throw std::invalid_argument("DuoGPT: the residual scale must be in [0, 1]");
  const at::Tensor c = d * (residualScale * 2.0 / static_cast<double>(tokens));
  const SparseGptOutcome o = sparseGptPrune(wt, h, pattern, options, c);

  SolveResult r;
  r.loss = o.loss;
  r.percdampUsed = o.percdampUsed;
  r.dampingSteps = o.dampingSteps;
  r.deadInputs = o.deadInputs;
  r.sparsity = o.w.eq(0).sum().item<double>() / static_cast<double>(o.w.numel());
  if (!xtxDense.empty()) {
    // ||W X~ - W' X^||^2 = tr(W Sdd W^T) - 2 tr(W (D + Shh) W'^T) + tr(W' Shh W'^T), in fp64.
    const at::Tensor W = wt.to(at::kDouble), Wq = o.w.to(at::kDouble);
    const at::Tensor sdd = hostMatrix(xtxDense, cols, cols, dev).to(at::kDouble);
    const at::Tensor s = shh.to(at::kDouble);
    const double dense = (W.matmul(sdd) * W).sum().item<double>();
    const double crossTerm = (W.matmul(d.to(at::kDouble) + s) * Wq).sum().item<double>();
    const double pruned = (Wq.matmul(s) * Wq).sum().item<double>();
    const double err = std::max(0.0, dense - 2 * crossTerm + pruned);
    r.outputLoss = err / static_cast<double>(tokens);
    r.relOutputError = dense > 0 ? err / dense : 0;
  }
  const at::Tensor host = o.w.to(at::kCPU).contiguous();
  r.weight.assign(host.data_ptr<float>(), host.data_ptr<float>() + rows * cols);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::map<std::string, DuoInput> collectDuoStats(Model& dense, Model& pruned, const std::vector<ForwardRows>& seqs,
                                                int batch, int layer, double activationSparsity,
                                                const std::function<void(std::size_t, std::size_t)>& onBatch) {
  c10::NoGradGuard noGrad;
  auto& pm = pruned.impl();
  std::map<std::string, DuoInput> out;
  const auto add = [&](const std::string& name, const at::Tensor& xd, const at::Tensor& xh) {
    auto [it, fresh] = out.try_emplace(name);
    DuoInput& s = it->second;
    if (fresh) {
      s.dIn = xh.size(1);
      const auto opts = at::TensorOptions().dtype(at::kFloat).device(pm.device);
      s.shh = at::zeros({s.dIn, s.dIn}, opts);
      s.cross = at::zeros({s.dIn, s.dIn}, opts);
      s.sdd = at::zeros({s.dIn, s.dIn}, opts);
    }
    s.shh.addmm_(xh.t(), xh);
    s.cross.addmm_((xd - xh).t(), xh);
    s.sdd.addmm_(xd.t(), xd);
    s.tokens += xh.size(0);
  };

  const std::size_t step = static_cast<std::size_t>(std::max(batch, 1));
  const std::size_t total = (seqs.size() + step - 1) / step;
  for (std::size_t b = 0; b < total; ++b) {
    const auto first = seqs.begin() + static_cast<std::ptrdiff_t>(b * step);
    const auto last = seqs.begin() + static_cast<std::ptrdiff_t>(std::min(seqs.size(), (b + 1) * step));
    const std::vector<ForwardRows> chunk(first, last);
    // The dense model's inputs of this layer, per (input, sequence).
    std::map<std::pair<std::string, int>, at::Tensor> denseRows;
    forwardObserve(dense, chunk, [&](const ActivationEvent& ev, const at::Tensor& x) {
      if (ev.layer != layer) return;
      denseRows[{ev.modules.front(), ev.promptIndex}] = x.to(pm.device, at::kFloat).clone();
    });
    // The pruned model's, sparsified as the projection will see them at run time.
    forwardObserve(pruned, chunk, [&](const ActivationEvent& ev, const at::Tensor& x) {
      if (ev.layer != layer) return;
      const auto it = denseRows.find({ev.modules.front(), ev.promptIndex});
      if (it == denseRows.end() || it->second.sizes() != x.sizes())
        throw std::logic_error("DuoGPT: the dense and the pruned pass saw different rows");
      add(ev.modules.front(), it->second, sparsifyActivations(x.to(at::kFloat), activationSparsity));
    });
    if (onBatch) onBatch(b + 1, total);
  }
  return out;
}

}  // namespace sdw::gpu
