#pragma once
// Activation drift by decode step (DESIGN §1, paper Fig. 1a): for held-out
// prompts, the relative discrepancy ||a_pruned - a_dense|| / ||a_dense|| of
// each layer's input activation at every decode step, averaged over prompts.
//
// The activation: the attention input of layer l, i.e. the input RMSNorm of
// the residual stream entering layer l, the vector that q_proj/k_proj/v_proj
// read (the model's q/k/v observer event), at one position.
//
// Decode step t (t = 0, 1, ...) is the forward pass that reads generated
// token t, at position promptLength + t. Generation is greedy with no stop
// token, so every prompt contributes `steps` steps (fewer only where the
// context ends).
//
// Modes:
//  - own trajectory: each model decodes its own tokens (errors compound);
//  - shared trajectory: the pruned model is fed the dense model's tokens
//    (per-step error only).
//
// The activations are taken from one teacher-forced pass over prompt +
// generated tokens (with causal attention they equal the step-by-step
// KV-cache values up to rounding; DESIGN §1, "Useful fact").

#include "core/drift.h"
#include "core/progress.h"
#include "gpu/model.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sdw::gpu {

enum class DriftMode { Own, Shared };
const char* driftModeName(DriftMode mode);  // "own", "shared"

// Per-prompt token sequences fed to each model (prompt + generated), kept
// when asked for (tests, inspection).
struct DriftTrace {
  std::vector<std::vector<std::int32_t>> denseInputs;
  std::vector<std::vector<std::int32_t>> prunedInputs;
};

struct DriftCurves {
  DriftMode mode = DriftMode::Own;
  int steps = 0;
  int layers = 0;
  std::vector<double> ratio;         // [steps, layers], mean over prompts (NaN where no prompt reached the step)
  std::vector<long long> count;      // [steps, layers], prompts averaged per cell
  drift::DriftSummary summary;       // plateau, step90, median / quartiles
  DriftTrace trace;                  // filled when keepTrace
};

// Dense vs one pruned model over `prompts` (token ids). One curve set per
// mode. Progress in prompts.
std::vector<DriftCurves> measureDrift(Model& dense, Model& pruned,
                                      const std::vector<std::vector<std::int32_t>>& prompts, int steps,
                                      const std::vector<DriftMode>& modes, bool keepTrace = false,
                                      const ProgressFn& progress = {});

struct DriftSettings {
  std::filesystem::path dense;
  std::vector<std::filesystem::path> pruned;  // one or two (e.g. fixed-text and AR calibrated)
  std::filesystem::path prompts;              // .jsonl {"id","prompt"}
  int steps = 128;
  std::vector<DriftMode> modes = {DriftMode::Own, DriftMode::Shared};
  int maxPrompts = 0;                         // 0: all
  std::string device = "cpu";
  std::string dtype = "float32";
};

struct DriftModelResult {
  std::filesystem::path dir;
  std::string label;
  std::vector<DriftCurves> curves;  // in settings.modes order
};

struct DriftResult {
  DriftSettings settings;
  int prompts = 0;
  int layers = 0;
  std::vector<DriftModelResult> models;  // settings.pruned order
  double seconds = 0;
};

DriftResult analyzeDrift(const DriftSettings& settings, const ProgressFn& progress = {});

// A run of kind "drift" (docs/run-format.md, "Drift runs"). Returns the final path.
std::filesystem::path writeDriftRun(const DriftResult& result, const std::filesystem::path& out,
                                    bool overwrite = false);

}  // namespace sdw::gpu
