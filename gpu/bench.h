#pragma once
// The kernel benchmark: bitmask SpMV against dense baselines on real projection
// shapes, on the GPU (CUDA events over graph-captured launches, weights rotated
// through copies several times the L2 size) or, without one, on the CPU kernels.
// Plain types: the CLI prints them, the GUI plots them.

#include "core/progress.h"
#include "gpu/bench_summary.h"
#include "gpu/kernel_id.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sdw::gpu {

struct BenchShape {
  std::string model;                // "llama3-8b", or "custom"
  std::string module;               // "q_proj", ...
  std::int64_t rows = 0, cols = 0;  // out features, in features
};

// The seven projections of one layer of a known model, in execution order; "NAME:engine":
// the four launches of the decode engine's layer instead (qkv_proj and gate_up_proj fused, as
// gpu/decode_engine.cpp stores them; model "NAME:engine"), so a layer row times the engine's
// chain of projections. Throws std::invalid_argument for unknown names (have: llama3-8b,
// qwen3-14b, qwen3-32b).
inline constexpr char kEngineSuffix[] = ":engine";
std::vector<BenchShape> modelShapes(const std::string& model);
std::vector<std::string> knownModels();
// "llama3-8b,qwen3-14b", or custom shapes "ROWSxCOLS[,...]" (model "custom").
std::vector<BenchShape> parseShapes(const std::string& spec);
// "0,0.25,0.5" -> activation sparsities p_x (BenchSettings::activationSparsities); empty
// items are skipped, "" gives none. Throws std::invalid_argument for a non-number or p_x
// outside [0, 1).
std::vector<double> parseActivationSparsities(const std::string& list);

struct BenchSettings {
  std::vector<BenchShape> shapes;
  std::vector<std::string> patterns{"2:4", "4:8", "8:16", "16:32"};
  std::vector<int> batches{1};
  std::string dtype = "bf16";
  int repeats = 7;
  bool library = true;         // cuBLAS through LibTorch (KernelId::Cublas)
  bool ownDense = true;        // our dense GEMV
  bool cusparselt = true;      // 2:4 through LibTorch, where the build has it
  bool layer = true;           // whole-layer sequences for model shapes
  bool forceCpu = false;       // the CPU kernels even when a GPU is present
  bool tune = false;           // sweep launch configurations per shape, keep the best
  int sparseTensorCores = -1;  // N:M on the tensor-core SpMV: 1 from batch 2, -1 spmvUseTensorCores's default, 0 never
  std::string tuningIn;        // tuning table to read (empty: heuristics)
  std::string tuningOut;       // with tune: where to write the table
  int cpuThreads = 0;
  // Activation sparsities p_x to time the spMspV kernel at (batch 1; 50% unstructured
  // weights; exactly a p_x fraction of |x| at or below the threshold). Empty: no spMspV rows.
  std::vector<double> activationSparsities{};
  // The spMspV weight layouts to time, by their pattern column (kSpmspvLayouts); empty: all.
  std::vector<std::string> spmspvLayouts{};
};
// The spMspV weight layouts, in the order their rows are timed: "50%" (bitmask, 50%
// unstructured), "col2:4", "col4:8" (column layouts, half the weights) and "dense" (every
// weight, column-major).
std::vector<std::string> spmspvLayoutNames();
// "50%,col4:8" -> {"50%", "col4:8"}; throws std::invalid_argument naming an unknown layout.
std::vector<std::string> parseSpmspvLayouts(const std::string& list);

// Markers in BenchRow and the JSON rows: the module of a whole-layer
// sequence (rows and cols 0), and the pattern of dense kernels.
inline constexpr char kLayerModule[] = "layer";
inline constexpr char kDensePattern[] = "-";

struct BenchRow {
  std::string model, module;  // module: "q_proj", ..., or kLayerModule
  std::int64_t rows = 0, cols = 0;
  std::string pattern;  // "2:4", ..., or kDensePattern for dense kernels
  int batch = 1;
  KernelId id = KernelId::Sparse;  // which kernel; compare this, not `kernel`
  std::string kernel;              // kernelName(id): the JSON / CLI name ("sparse", "cublas", ...), set with id
  double us = 0;                   // median time per call
  // Our kernels on sm_90: median time per call when each launch is a programmatic
  // dependent launch of the previous one (its start and first weight loads overlap
  // the previous call's tail; x is read after that call completes). 0: not measured.
  double usChained = 0;
  double bytes = 0;  // bytes the kernel must read (weights)
  double gbs = 0;
  double fractionHbm = 0;
  double speedupVsCublas = 0;  // cuBLAS time / this time (0: no baseline); JSON speedup_vs_cublas
  double speedupVsDense = 0;   // our dense time / this time
  std::string config;          // launch configuration used
  // spMspV rows: the fraction of input entries skipped (JSON activation_sparsity, only
  // on these rows); empty for kernels that read every input entry.
  std::optional<double> activationSparsity{};
};

// The seven projections of a layer back to back, not one projection.
inline bool isLayerSequence(const BenchRow& row) { return row.module == kLayerModule; }

struct BenchSummary {
  std::string pattern;
  int count = 0;
  double medianVsCublas = 0, medianVsDense = 0, medianVsCusparselt = 0;
  // The same medians with our kernels' chained times (BenchRow::usChained; cuBLAS and
  // cuSPARSELt as LibTorch launches them); 0 where not measured.
  double medianVsCublasChained = 0, medianVsDenseChained = 0, medianVsCusparseltChained = 0;
};

// The pattern column of spMspV rows in the bitmask layout (50% unstructured weights); the
// other layouts name their pattern ("col2:4", "col4:8", "dense": every weight, column-major).
inline constexpr const char* kSpmspvUnstructuredPattern = "50%";

// spMspV at one activation sparsity and weight layout: medians over the run's shapes (batch 1).
struct ActivationSummary {
  std::string pattern;  // the rows' pattern: "50%" (bitmask layout), "col2:4", "col4:8" or "dense" (column layouts)
  double activationSparsity = 0;
  int count = 0;
  double medianVsDense = 0, medianVsCublas = 0;  // over our dense GEMV and cuBLAS (0: not measured)
  double medianGbs = 0;                          // of the bytes it must read
  double medianFractionHbm = 0;
  // The bytes limit of its speed-up over our dense GEMV: the dense GEMV's bytes over the
  // bytes it must read, per shape; and the speed-up as a fraction of it (0: no dense row).
  double medianBytesLimit = 0, medianFractionOfLimit = 0;
};

struct BenchResult {
  std::string backend;  // "cuda" or "cpu"
  std::string device, driver, torchVersion;
  double hbmReadGBs = 0;         // measured in this run (CPU: memory read bandwidth)
  std::string cusparseltStatus;  // "ok" or why not
  std::vector<BenchRow> rows;
  // Batch 1, the run's dtype, over Llama-3.1-8B and Qwen3-14B projection shapes.
  std::vector<BenchSummary> summary;
  double patternSpreadPercent = 0;         // (max - min) / min of the patterns' median speedups over our dense
  double patternSpreadChainedPercent = 0;  // the same with chained times (0: not measured)
  std::vector<ActivationSummary> activationSummary;  // per pattern, then activation sparsity ascending (spMspV rows)
  std::vector<std::string> notes;
};

// Runs the benchmark. Progress: one unit per measured kernel; a false answer
// stops it (throws sdw::Cancelled). Rows are also handed to `onRow` as they come
// (may be empty) so a view can plot them live.
BenchResult runKernelBench(const BenchSettings& s, const ProgressFn& progress,
                           const std::function<void(const BenchRow&)>& onRow = {});

// A row of `id` for one problem, with kernel's name set from the name table.
BenchRow makeBenchRow(const BenchShape& shape, const std::string& pattern, int batch, KernelId id);

// Fills `summary` and `patternSpreadPercent` from `rows` (used by the runner and
// by readers of saved results; gpu/bench_summary.cpp).
void summarise(BenchResult& r, const std::string& dtype);

std::string toJson(const BenchResult& r, const std::string& commandLine, const BenchSettings& s);
// Reads what toJson wrote (rows, device, bandwidth, summary). Throws std::runtime_error.
BenchResult fromJson(const std::string& text);

}  // namespace sdw::gpu
