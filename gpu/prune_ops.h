#pragma once
// Torch-typed internals of the pruning solvers (gpu/pruning.h). Include only
// from gpu/*.cpp and engine tests.

#include "gpu/pruning.h"

#include <chrono>
#include <span>
#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sdw::gpu {

struct SparseGptOutcome {
  at::Tensor w;             // [rows, cols] fp32, pruned and updated
  double loss = 0;          // sum of the reference's Losses
  double percdampUsed = 0;
  int dampingSteps = 0;
  int deadInputs = 0;
};

// Where blocked OBS starts: dead inputs handled (H_jj = 1, W[:, j] = 0), the
// damping ladder run, hinv the upper Cholesky factor of (H + damp I)^-1 and w
// the start point (W, or DuoGPT's shifted W + W C (H + damp I)^-1 with `cross`).
struct ObsStart {
  at::Tensor w, hinv;
  double percdampUsed = 0;
  int dampingSteps = 0;
  int deadInputs = 0;
};
ObsStart obsStart(const at::Tensor& w, const at::Tensor& h, const SparseGptOptions& options,
                  const at::Tensor& cross = {});
// The saliency the first block's mask is chosen by: w^2 / hinv_jj^2, [rows, cols]:
// per weight, twice the increase of the damped objective
// F = ||W X~ - W' X^||^2 / N + damp/2 ||W' - W||^2 (SparseGPT: X~ = X^) when it
// alone is set to zero and the columns after it move optimally (the columns
// before it held at the start point).
at::Tensor obsScores(const ObsStart& start);

// w: [rows, cols] fp32; h: [cols, cols] fp32 (H = 2 xtx / tokens), same device.
// Neither is modified. cross (DuoGPT, docs/pruning.md "DuoGPT"): [cols, cols]
// fp32, C = 2 sum (x~ - x^) x^T / tokens with h built from the sparsified x^;
// then w first moves to the minimiser of the damped asymmetric objective,
// W + W C (H + damp I)^-1 (from the same factorisation the columns use), and
// the blocked OBS proceeds from there: its loss is the objective's increase.
SparseGptOutcome sparseGptPrune(const at::Tensor& w, const at::Tensor& h, const PruningPattern& pattern,
                                const SparseGptOptions& options, const at::Tensor& cross = {});

// DuoGPT's statistics of one shared projection input over one layer's rows:
// sums of x^ x^T (x^: the pruned model's input, sparsified), (x~ - x^) x^T
// and x~ x~^T (x~: the dense model's input), on the pruned model's device.
struct DuoInput {
  std::int64_t dIn = 0, tokens = 0;
  at::Tensor shh, cross, sdd;  // [dIn, dIn] fp32
};
class Model;
struct ForwardRows;
// Teacher-forces `seqs` (in batches of `batch`) through the dense model and
// through `pruned` (its layers < `layer` already pruned, with their activation
// sparsity set), pairs the rows of layer `layer`'s inputs and sums them, x^
// sparsified at `activationSparsity`. Keyed by the input's first module name.
std::map<std::string, DuoInput> collectDuoStats(Model& dense, Model& pruned, const std::vector<ForwardRows>& seqs,
                                                int batch, int layer, double activationSparsity,
                                                const std::function<void(std::size_t, std::size_t)>& onBatch = {});

// score: [rows, cols]. Returns keep: [rows, cols] bool. Unstructured: per row,
// the floor(cols * sparsity) lowest scores are dropped (ties: lower column
// first). N:M: per row and aligned group of M, the N highest are kept; column
// N:M: per column and aligned group of M rows, the N highest are kept.
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

// Checks that the pattern tiles a [rows, cols] weight (std::invalid_argument):
// row N:M needs cols % M == 0 and, with blocksize > 0 (SparseGPT's blocks),
// blocksize % M == 0; column N:M needs rows % M == 0 (any block size).
void checkPatternFits(const PruningPattern& pattern, std::int64_t rows, std::int64_t cols, int blocksize = 0);

at::Tensor hessianFromXtx(const at::Tensor& xtx, std::int64_t tokens);  // 2 xtx / tokens, fp32

}  // namespace sdw::gpu
