#pragma once
// Torch-typed internals of the pruning solvers (gpu/pruning.h). Include only
// from gpu/*.cpp and engine tests.

#include "gpu/pruning.h"

#include <chrono>
#include <span>
#include <ATen/core/Tensor.h>

#include <string>

namespace sdw::gpu {

struct SparseGptOutcome {
  at::Tensor w;             // [rows, cols] fp32, pruned and updated
  double loss = 0;          // sum of the reference's Losses
  double percdampUsed = 0;
  int dampingSteps = 0;
  int deadInputs = 0;
};

// w: [rows, cols] fp32; h: [cols, cols] fp32 (H = 2 xtx / tokens), same device.
// Neither is modified.
SparseGptOutcome sparseGptPrune(const at::Tensor& w, const at::Tensor& h, const PruningPattern& pattern,
                                const SparseGptOptions& options);

// score: [rows, cols]. Returns keep: [rows, cols] bool. Unstructured: per row,
// the floor(cols * sparsity) lowest scores are dropped (ties: lower column
// first). N:M: per row and aligned group of M, the N highest are kept.
at::Tensor keepByScore(const at::Tensor& score, const PruningPattern& pattern);

// Wanda: |W| * sqrt(sum x^2) per input; magnitude: |W|. Return the pruned W.
at::Tensor wandaPrune(const at::Tensor& w, const at::Tensor& sumSq, const PruningPattern& pattern);
at::Tensor magnitudePrune(const at::Tensor& w, const PruningPattern& pattern);

// Fills outputLoss, relOutputError and sparsity of `r` from the dense w, the
// pruned wq and H (undefined h: the error fields stay 0).
void fillErrorMetrics(SolveResult& r, const at::Tensor& w, const at::Tensor& wq, const at::Tensor& h);

// The result of a solver that only masks (Wanda, magnitude): error metrics
// against H = 2 xtx / tokens when xtx is given, loss = output loss, the pruned
// weights copied to the host, time since t0. w, wq: [rows, cols] on one device.
SolveResult maskOnlyResult(const char* method, const at::Tensor& w, const at::Tensor& wq,
                           std::span<const float> xtx, std::int64_t tokens,
                           std::chrono::steady_clock::time_point t0);

// Checks that the pattern tiles a row of `cols` inputs (std::invalid_argument).
void checkPatternFits(const PruningPattern& pattern, std::int64_t cols, int blocksize = 0);

at::Tensor hessianFromXtx(const at::Tensor& xtx, std::int64_t tokens);  // 2 xtx / tokens, fp32

}  // namespace sdw::gpu
