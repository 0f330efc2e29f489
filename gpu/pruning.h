#pragma once
// One-shot pruning of the attention and MLP projections of a decoder
// (DESIGN §1 "Solvers"): SparseGPT (blocked OBS), Wanda and magnitude, 50%
// unstructured, N:M along the rows or along the columns, in parallel or
// sequential layer order, from the statistics of a calibration run
// (docs/run-format.md "Calibration runs").
// Outputs: a dense-with-zeros Hugging Face checkpoint, the packed bitmask
// file (row N:M with M | 32, docs/sparse-format.md) and a run file of kind
// "pruning" (docs/run-format.md "Pruning runs"). Method: docs/pruning.md.
// Plain types only; the solvers run on LibTorch tensors (CPU or CUDA) inside
// gpu/prune_*.cpp.
//
//   auto r = pruneModel({.model = "samples/model/brown-llama", .calibration = "run.sdw.h5",
//                        .method = PruneMethod::SparseGpt, .pattern = "2:4", .out = "pruned"});

#include "core/name_table.h"
#include "core/progress.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdw::gpu {

// "unstructured50" (also "unstructured", "50%"), "N:M" with 0 < N < M (row
// N:M), or "colN:M" (column N:M, the same N and M).
struct PruningPattern {
  bool unstructured = false;
  double sparsity = 0.5;  // unstructured: fraction pruned per comparison group
  int n = 2;              // N:M: kept per group of M consecutive inputs of a row
  int m = 4;
  // Column N:M: the groups run down each input column of W [out, in] instead:
  // in column j, rows M g .. M g + M - 1 keep exactly N weights (the layout a
  // column-major sparse-weight x sparse-activation kernel reads, docs/pruning.md
  // "Column N:M"). Not written to the row-N:M bitmask file.
  bool alongColumns = false;
  std::string name() const;  // "2:4", "col2:4", "unstructured50"
};
// Throws std::invalid_argument with the accepted spellings.
PruningPattern parsePruningPattern(const std::string& s);

struct SparseGptOptions {
  double percdamp = 0.01;     // damping = percdamp * mean(diag H) on the diagonal
  int blocksize = 128;        // columns per lazy-update block
  double maxPercdamp = 10.0;  // the damping ladder (x10 per step) stops here and throws
  std::string device = "cpu";
};

// One module's outcome. `weight` is the pruned [rows, cols] fp32 matrix.
struct SolveResult {
  std::vector<float> weight;
  double loss = 0;           // SparseGPT: sum (w - q)^2 / Hinv_jj^2 / 2, the reference's Losses (equal to
                             //   outputLoss for the damped H); Wanda, magnitude: outputLoss
  double outputLoss = 0;     // tr(dW H dW^T) / 2 with the undamped H = 2 xtx / tokens, dW = W - Wq:
                             //   the same quantity for every method (compare methods on this)
  double relOutputError = 0; // tr(dW H dW^T) / tr(W H W^T) = ||(W - Wq) X||^2 / ||W X||^2
  double sparsity = 0;       // zeros / numel of the result
  double percdampUsed = 0;   // SparseGPT: after the ladder
  int dampingSteps = 0;      // ladder steps taken (0: the requested damping sufficed)
  int deadInputs = 0;        // columns with H_jj = 0 (zeroed)
  double seconds = 0;
};

// W: [rows, cols] row-major fp32; xtx: [cols, cols] raw sum x x^T (H = 2 xtx / tokens);
// sumSq: [cols] sum of x^2. Throws std::invalid_argument on bad shapes or a
// pattern that does not tile the matrix (row N:M: cols % M, blocksize % M;
// column N:M: rows % M), and std::runtime_error when the damping ladder runs out.
SolveResult solveSparseGpt(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                           std::span<const float> xtx, std::int64_t tokens, const PruningPattern& pattern,
                           const SparseGptOptions& options = {});
// DuoGPT (docs/pruning.md "DuoGPT"): SparseGPT's solve of the asymmetric
// objective ||W X~ - W' X^||^2. xtx: [cols, cols] sum x^ x^T of the
// sparsified inputs; cross: sum (x~ - x^) x^T; xtxDense: sum x~ x~^T (may be
// empty: then outputLoss and relOutputError are 0). outputLoss is
// ||W X~ - W' X^||^2 / tokens (SparseGPT's outputLoss when x^ = x~),
// relOutputError that over ||W X~||^2; loss the damped objective's increase
// over its unconstrained minimum. residualScale (alpha, in [0, 1]) scales the
// cross term: the targets' inputs become X^ + alpha (X~ - X^), alpha = 1 the
// full asymmetric objective, 0 SparseGPT on X^. With cross = 0 or alpha = 0
// it is solveSparseGpt.
SolveResult solveDuoGpt(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::span<const float> xtx,
                        std::span<const float> cross, std::span<const float> xtxDense, std::int64_t tokens,
                        const PruningPattern& pattern, const SparseGptOptions& options = {},
                        double residualScale = 1.0);
// xtx may be empty (then relOutputError and loss are 0).
SolveResult solveWanda(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                       std::span<const float> sumSq, std::span<const float> xtx, std::int64_t tokens,
                       const PruningPattern& pattern, const std::string& device = "cpu");
SolveResult solveMagnitude(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                           std::span<const float> xtx, std::int64_t tokens, const PruningPattern& pattern,
                           const std::string& device = "cpu");

// The settings' choices. The names are what the CLI, the GUI forms, the
// settings JSON and the run files carry: never rename them.
enum class PruneMethod { SparseGpt, Wanda, Magnitude, DuoGpt };
inline constexpr NameEntry<PruneMethod> kPruneMethodNames[] = {{PruneMethod::SparseGpt, "sparsegpt"},
                                                               {PruneMethod::Wanda, "wanda"},
                                                               {PruneMethod::Magnitude, "magnitude"},
                                                               {PruneMethod::DuoGpt, "duogpt"}};
// Parallel: every layer from the dense calibration statistics; sequential:
// layer i from statistics re-captured through the already pruned layers < i.
enum class PruneOrder { Parallel, Sequential };
inline constexpr NameEntry<PruneOrder> kPruneOrderNames[] = {{PruneOrder::Parallel, "parallel"},
                                                             {PruneOrder::Sequential, "sequential"}};

// parseXxx throws std::invalid_argument naming the accepted values.
std::string pruneMethodName(PruneMethod method);
PruneMethod parsePruneMethod(std::string_view name);
std::string pruneOrderName(PruneOrder order);
PruneOrder parsePruneOrder(std::string_view name);

struct PruneSettings {
  std::filesystem::path model;        // Hugging Face checkpoint folder
  std::filesystem::path calibration;  // run of kind "calibration"
  PruneMethod method = PruneMethod::SparseGpt;
  std::string pattern = "2:4";
  PruneOrder order = PruneOrder::Parallel;  // DuoGPT is always sequential
  // DuoGPT: the run-time activation sparsity p_x the model will decode with
  // (each projection input keeps its largest 1 - p_x share); in [0, 1).
  double activationSparsity = 0.5;
  // DuoGPT: alpha, the share of the dense model's output residual the solve
  // corrects (docs/pruning.md "DuoGPT"), in [0, 1].
  double residualScale = 0.25;
  double percdamp = 0.01;
  int blocksize = 128;
  std::string device = "cpu";
  std::filesystem::path out;          // checkpoint folder written
  std::filesystem::path record;       // pruning run file; empty: <out>/pruning.sdw.h5
  bool overwrite = false;             // replace an existing out folder's files / record
};
void validatePruneSettings(const PruneSettings& s);  // std::invalid_argument

struct ModulePruneRow {
  std::string name;  // "model.layers.0.self_attn.q_proj"
  int layer = 0;
  std::int64_t rows = 0, cols = 0;
  double loss = 0, outputLoss = 0, relOutputError = 0, sparsity = 0, percdampUsed = 0;
  int dampingSteps = 0, deadInputs = 0;
  double seconds = 0;
  bool packed = false;  // in the bitmask file (or the column file)
};

struct PruneResult {
  std::vector<ModulePruneRow> modules;  // checkpoint order
  std::filesystem::path checkpoint;     // <out>/model.safetensors
  // <out>/model.sdwsparse (row N:M with M | 32 and N = M/2), <out>/model.sdwcolumn (col2:4,
  // col4:8: the spMspV kernel's column layout), else empty
  std::filesystem::path sparseFile;
  std::filesystem::path record;
  std::string calibrationRunId;
  double seconds = 0;                   // total
  double recaptureSeconds = 0;          // sequential: time spent re-capturing statistics
};

// Progress phases: "prune" (done = modules solved), "recapture" (the
// calibration engine's own progress for layer i). Returning false throws
// sdw::Cancelled after the current module; nothing is left under `out`'s
// final names. `onModule` sees each finished row.
PruneResult pruneModel(const PruneSettings& settings, const ProgressFn& progress = {},
                       const std::function<void(const ModulePruneRow&)>& onModule = {});

}  // namespace sdw::gpu
