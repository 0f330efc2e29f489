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
// token t, at position promptLength + t. Generation has no stop token, so
// every prompt contributes `steps` steps (fewer only where the context
// ends). It follows the workbench's decoding protocol (core/decoding.h:
// sampled from the model's own distribution by default; temperature 0 is
// greedy); prompt i is sampled with seed `seed * 1000003 + i`, the same for
// the dense and the pruned model.
//
// Modes:
//  - own trajectory: each model decodes its own tokens (errors compound);
//    dense and pruned sample with the same per-prompt seed, so they draw the
//    same random numbers and part ways only where their distributions do;
//  - shared trajectory: the pruned model is fed the dense model's sampled
//    tokens (per-step error only).
//
// The activations are taken from one teacher-forced pass over prompt +
// generated tokens (with causal attention they equal the step-by-step
// KV-cache values up to rounding; DESIGN §1, "Useful fact").

#include "core/decoding.h"
#include "core/decoding_checks.h"
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

// How the trajectories are decoded.
struct DriftDecoding {
  Decoding decoding = kDefaultDecoding;
  std::uint64_t seed = 0;  // prompt i: seed * 1000003 + i
};

// Dense vs one pruned model over `prompts` (token ids). One curve set per
// mode. Progress in prompts.
std::vector<DriftCurves> measureDrift(Model& dense, Model& pruned,
                                      const std::vector<std::vector<std::int32_t>>& prompts, int steps,
                                      const std::vector<DriftMode>& modes, const DriftDecoding& decoding = {},
                                      bool keepTrace = false, const ProgressFn& progress = {});

struct DriftSettings {
  std::filesystem::path dense;
  std::vector<std::filesystem::path> pruned;  // one or two (e.g. fixed-text and AR calibrated)
  std::filesystem::path prompts;              // .jsonl {"id","prompt"}
  int steps = 128;
  std::vector<DriftMode> modes = {DriftMode::Own, DriftMode::Shared};
  int maxPrompts = 0;                         // 0: all
  Decoding decoding = kDefaultDecoding;       // the trajectories' decoding (temperature 0: greedy)
  std::uint64_t seed = 0;                     // prompt i: seed * 1000003 + i
  std::string device = "cpu";
  std::string dtype = "float32";
  // Run-time activation sparsity of the pruned models (LoadOptions); the
  // dense model stays dense. The compared activation is read before it is
  // sparsified (it carries the upstream layers' sparsification).
  double activationSparsity = 0;
  // With a calibration run here: thresholds from its activation samples at
  // activationSparsity instead of per-token top-k (as EvaluationSettings).
  std::filesystem::path activationThresholds{};
};

struct DriftModelResult {
  std::filesystem::path dir;
  std::string label;
  std::vector<DriftCurves> curves;  // in settings.modes order
};

// The activation compared, in words (stored with the run for readers without these docs).
inline constexpr const char* kDriftActivation =
    "attention input of layer l: input RMSNorm of the residual stream entering the layer (what q/k/v_proj read)";

struct DriftResult {
  DriftSettings settings;
  int prompts = 0;
  int layers = 0;
  std::string activation = kDriftActivation;
  double plateauFraction = drift::kPlateauFraction;  // step90: first step reaching this share of the plateau
  std::vector<DriftModelResult> models;  // settings.pruned order
  // Per pruned model: the calibration it was pruned from (core/run_decoding.h),
  // and plain words when that calibration decoded otherwise than this
  // analysis or decoded its prompts (core/decoding_checks.h).
  std::vector<PrunedCalibration> calibrations;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
  std::string activationThresholdsRunId;  // run_id of settings.activationThresholds (empty without)
  double seconds = 0;
};

DriftResult analyzeDrift(const DriftSettings& settings, const ProgressFn& progress = {});

}  // namespace sdw::gpu
