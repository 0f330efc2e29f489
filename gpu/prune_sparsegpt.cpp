// SparseGPT (Frantar & Alistarh 2023): blocked OBS with the upper Cholesky
// factor of H^-1, faithful to the reference implementation's fasterprune()
// (DESIGN §1), with a reported damping ladder instead of any fallback.

#include "gpu/prune_ops.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>

#if defined(SDW_TORCH_CUDA) && defined(SDW_HAVE_CUDA_KERNELS)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "gpu/kernels/sparsegpt.cuh"
#endif

namespace sdw::gpu {
namespace {

using at::indexing::Slice;

// Hinv = upper Cholesky factor of (H + damp I)^-1, or undefined when either
// factorisation fails (not positive definite in fp32) or yields non-finite values.
at::Tensor choleskyInverseUpper(const at::Tensor& h, double damp) {
  at::Tensor hd = h.clone();
  hd.diagonal().add_(damp);
  auto [l, info] = at::linalg_cholesky_ex(hd, /*upper=*/false, /*check_errors=*/false);
  if (info.item<int>() != 0) return {};
  const at::Tensor inv = at::cholesky_inverse(l);
  auto [u, info2] = at::linalg_cholesky_ex(inv, /*upper=*/true, /*check_errors=*/false);
  if (info2.item<int>() != 0 || !at::isfinite(u).all().item<bool>()) return {};
  return u;
}

}  // namespace

ObsStart obsStart(const at::Tensor& wIn, const at::Tensor& hIn, const SparseGptOptions& o, const at::Tensor& cross) {
  c10::NoGradGuard noGrad;
  const std::int64_t cols = wIn.size(1);
  if (hIn.dim() != 2 || hIn.size(0) != cols || hIn.size(1) != cols)
    throw std::invalid_argument("SparseGPT: H must be [" + std::to_string(cols) + ", " + std::to_string(cols) + "]");
  if (!at::isfinite(hIn).all().item<bool>()) throw std::invalid_argument("SparseGPT: H has non-finite entries");

  ObsStart out;
  at::Tensor w = wIn.to(at::kFloat).clone();  // [rows, cols] fp32
  at::Tensor h = hIn.to(at::kFloat).clone();  // [cols, cols] fp32

  // Dead inputs: never seen non-zero; H_jj = 1 keeps H invertible, W[:, j] = 0.
  const at::Tensor dead = h.diagonal().eq(0);  // [cols] bool
  out.deadInputs = static_cast<int>(dead.sum().item<std::int64_t>());
  if (out.deadInputs > 0) {
    h.diagonal().masked_fill_(dead, 1.0);
    w.masked_fill_(dead.unsqueeze(0), 0.0);
  }

  // Damping ladder: percdamp, then x10 per failed factorisation (from 1e-6
  // when percdamp is 0) up to maxPercdamp; reported, never an identity fallback.
  const double meanDiag = h.diagonal().mean().item<double>();
  double percdamp = o.percdamp;
  at::Tensor hinv;  // [cols, cols] upper triangular
  for (;;) {
    hinv = choleskyInverseUpper(h, percdamp * meanDiag);
    if (hinv.defined()) break;
    const double next = percdamp > 0 ? percdamp * 10 : 1e-6;
    if (next > o.maxPercdamp * (1 + 1e-9)) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "SparseGPT: Cholesky of H failed up to percdamp %.3g (%d ladder steps); H is not usable",
                    percdamp, out.dampingSteps);
      throw std::runtime_error(buf);
    }
    percdamp = next;
    ++out.dampingSteps;
  }
  out.percdampUsed = percdamp;
  if (cross.defined()) {
    // DuoGPT: the unconstrained minimiser of ||W X~ - W' X^||^2 / N + damp/2 ||W' - W||^2
    // is W' = W + W C (H + damp I)^-1, and (H + damp I)^-1 = Hinv^T Hinv.
    if (cross.dim() != 2 || cross.size(0) != cols || cross.size(1) != cols)
      throw std::invalid_argument("DuoGPT: the cross term must be [" + std::to_string(cols) + ", " +
                                  std::to_string(cols) + "]");
    at::Tensor c = cross.to(w.device(), at::kFloat);
    if (out.deadInputs > 0) c = c.masked_fill(dead.unsqueeze(0), 0.0);  // x^_j is always 0 there
    w.add_(w.matmul(c).matmul(hinv.t()).matmul(hinv));
  }
  out.w = w;
  out.hinv = hinv;
  return out;
}

at::Tensor obsScores(const ObsStart& start) { return start.w.square() / start.hinv.diagonal().square().unsqueeze(0); }

SparseGptOutcome sparseGptPrune(const at::Tensor& wIn, const at::Tensor& hIn, const PruningPattern& pattern,
                                const SparseGptOptions& o, const at::Tensor& cross) {
  c10::NoGradGuard noGrad;
  const std::int64_t rows = wIn.size(0), cols = wIn.size(1);
  if (o.blocksize < 1) throw std::invalid_argument("SparseGPT: blocksize must be >= 1");
  checkPatternFits(pattern, rows, cols, o.blocksize);
  const ObsStart start = obsStart(wIn, hIn, o, cross);
  SparseGptOutcome out;
  out.percdampUsed = start.percdampUsed;
  out.dampingSteps = start.dampingSteps;
  out.deadInputs = start.deadInputs;
  at::Tensor w = start.w;
  const at::Tensor& hinv = start.hinv;

  const auto fopts = w.options();
  at::Tensor losses = at::zeros({rows}, fopts);
  const bool colNm = !pattern.unstructured && pattern.alongColumns;  // groups of M rows in each column
  const bool nm = !pattern.unstructured && !colNm;                   // groups of M columns in each row
  const std::int64_t drop = pattern.m - pattern.n;                   // N:M: pruned per group
  for (std::int64_t i1 = 0; i1 < cols; i1 += o.blocksize) {
    const std::int64_t i2 = std::min<std::int64_t>(i1 + o.blocksize, cols);
    const std::int64_t count = i2 - i1;
    at::Tensor w1 = w.index({Slice(), Slice(i1, i2)}).clone();  // [rows, count]
    at::Tensor q1 = at::zeros_like(w1);
    at::Tensor err1 = at::zeros_like(w1);
    const at::Tensor hinv1 = hinv.index({Slice(i1, i2), Slice(i1, i2)});  // [count, count]
    const at::Tensor d1 = hinv1.diagonal();                                // [count]

    at::Tensor mask1;  // [rows, count] bool, true = pruned
    if (pattern.unstructured) {
      // The lowest w^2 / Hinv_jj^2 over all rows of the block, exactly
      // floor(numel * sparsity) of them (ties: lower flat index first).
      const at::Tensor tmp = (w1.square() / d1.square().unsqueeze(0)).flatten();
      const auto k = static_cast<std::int64_t>(static_cast<double>(tmp.numel()) * pattern.sparsity);
      const at::Tensor order = std::get<1>(at::sort(tmp, /*stable=*/true, /*dim=*/0, /*descending=*/false));
      mask1 = at::zeros({rows * count}, fopts.dtype(at::kBool));
      mask1.index_fill_(0, order.index({Slice(0, k)}), true);
      mask1 = mask1.view({rows, count});
    } else {
      mask1 = at::zeros({rows, count}, fopts.dtype(at::kBool));
    }

    // On CUDA the column loop is one kernel launch per block (one thread per
    // row, gpu/kernels/sparsegpt.cu), the same arithmetic as the loop below.
    // Column N:M couples the rows of a column (the kernel's threads), so it
    // always takes the loop below.
    bool onDevice = false;
#if defined(SDW_TORCH_CUDA) && defined(SDW_HAVE_CUDA_KERNELS)
    if (w1.is_cuda() && !colNm && count <= 128 && (!nm || pattern.m <= 32)) {
      const c10::cuda::CUDAGuard guard(w1.device());
      const at::Tensor h1 = hinv1.contiguous();
      const at::Tensor m1 = nm ? at::Tensor() : mask1.to(at::kByte).contiguous();
      const cudaError_t err = sdw::kernels::launchSparseGptBlock(
          w1.data_ptr<float>(), q1.data_ptr<float>(), err1.data_ptr<float>(), losses.data_ptr<float>(),
          h1.data_ptr<float>(), nm ? nullptr : m1.data_ptr<std::uint8_t>(), rows, static_cast<int>(count),
          pattern.n, pattern.m, c10::cuda::getCurrentCUDAStream());
      TORCH_CHECK(err == cudaSuccess, "SparseGPT block kernel: ", cudaGetErrorString(err));
      onDevice = true;
    }
#endif
    if (!onDevice) {
      at::Tensor losses1 = at::zeros_like(w1);
      for (std::int64_t i = 0; i < count; ++i) {
        if (nm && i % pattern.m == 0) {
          // The M columns i..i+M as already updated by the columns before them.
          const at::Tensor tmp = w1.index({Slice(), Slice(i, i + pattern.m)}).square() /
                                 d1.index({Slice(i, i + pattern.m)}).square().unsqueeze(0);
          const at::Tensor idx = std::get<1>(at::topk(tmp, drop, 1, /*largest=*/false)) + i;
          mask1.scatter_(1, idx, true);
        } else if (colNm) {
          // Column i as already updated by the columns before it: in each group
          // of M rows the M - N lowest w^2 / Hinv_ii^2. Hinv_ii is the same for
          // every row of the column, so that is the M - N lowest |w| (compared
          // exactly, without the division's rounding).
          const at::Tensor a = w1.select(1, i).abs().reshape({rows / pattern.m, pattern.m});
          const at::Tensor idx = std::get<1>(at::topk(a, drop, 1, /*largest=*/false));
          at::Tensor pruned = at::zeros({rows / pattern.m, pattern.m}, fopts.dtype(at::kBool));
          pruned.scatter_(1, idx, true);
          mask1.select(1, i).copy_(pruned.view({rows}));
        }
        const at::Tensor wcol = w1.select(1, i);  // [rows] (a view; copied below before w1 changes)
        const at::Tensor d = d1.index({i});       // 0-dim
        const at::Tensor q = wcol.masked_fill(mask1.select(1, i), 0.0);
        q1.select(1, i).copy_(q);
        const at::Tensor e = (wcol - q) / d;  // [rows]
        losses1.select(1, i).copy_(e.square());
        w1.index({Slice(), Slice(i, at::indexing::None)})
            .sub_(e.unsqueeze(1).matmul(hinv1.index({i, Slice(i, at::indexing::None)}).unsqueeze(0)));
        err1.select(1, i).copy_(e);
      }
      losses.add_(losses1.sum(1) / 2);
    }
    w.index({Slice(), Slice(i1, i2)}).copy_(q1);
    if (i2 < cols)
      w.index({Slice(), Slice(i2, at::indexing::None)})
          .sub_(err1.matmul(hinv.index({Slice(i1, i2), Slice(i2, at::indexing::None)})));
  }
  out.loss = losses.sum().item<double>();
  out.w = w;
  return out;
}

SolveResult solveSparseGpt(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                           std::span<const float> xtx, std::int64_t tokens, const PruningPattern& pattern,
                           const SparseGptOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  c10::NoGradGuard noGrad;
  if (rows < 1 || cols < 1 || static_cast<std::int64_t>(w.size()) != rows * cols)
    throw std::invalid_argument("SparseGPT: W must hold rows x cols values");
  if (static_cast<std::int64_t>(xtx.size()) != cols * cols)
    throw std::invalid_argument("SparseGPT: xtx must be [cols, cols]");
  if (tokens < 1) throw std::invalid_argument("SparseGPT: tokens must be >= 1");
  const auto dev = at::Device(options.device);
  const at::Tensor wt = at::from_blob(const_cast<float*>(w.data()), {rows, cols}, at::kFloat).to(dev).clone();
  const at::Tensor h =
      hessianFromXtx(at::from_blob(const_cast<float*>(xtx.data()), {cols, cols}, at::kFloat).to(dev), tokens);
  const SparseGptOutcome o = sparseGptPrune(wt, h, pattern, options);
  SolveResult r;
  fillErrorMetrics(r, wt, o.w, h);
  r.loss = o.loss;
  r.percdampUsed = o.percdampUsed;
  r.dampingSteps = o.dampingSteps;
  r.deadInputs = o.deadInputs;
  const at::Tensor host = o.w.to(at::kCPU).contiguous();
  r.weight.assign(host.data_ptr<float>(), host.data_ptr<float>() + rows * cols);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace sdw::gpu
