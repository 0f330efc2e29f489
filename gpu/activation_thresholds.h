#pragma once
// Run-time activation-sparsity thresholds set offline from a calibration
// run's activation samples (TEAL, Liu et al. 2024): for each layer and each
// projection input (q|k|v, o, gate|up, down) the magnitude t below which a
// share p_x of the sampled entries lies. At run time an entry is kept iff
// |x| > t (LoadOptions::activationThresholds): no per-token sort, the test the
// spMspV kernel makes (gpu/kernels/spmspv.cuh).
//
// t is the k-th smallest |x| over the input's n x d_in sampled entries with
// k = round(p_x n d_in), as gpu/spmspv_pack.h's activationThreshold picks it for
// one vector (k = 0: t = -1, every entry kept). Plain types only.
//
//   const auto t = activationThresholdsFromRun("calib.sdw.h5", 0.5);
//   LoadOptions lo;
//   lo.activationThresholds = thresholdsForModel(t, loadModelConfig(dir));

#include "gpu/model.h"
#include "gpu/model_config.h"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace sdw::gpu {

struct InputThreshold {
  std::string name;        // the input's key in the run: the first module reading it ("model.layers.0.self_attn.q_proj")
  int layer = 0;
  ProjectionInput input = ProjectionInput::Qkv;
  std::int64_t dIn = 0;
  double sparsity = 0;     // p_x asked for
  float threshold = 0;     // kept iff |x| > threshold; -1: every entry kept
  double achieved = 0;     // share of the sampled entries with |x| <= threshold
  std::int64_t entries = 0;  // sampled entries: rows x dIn
};

struct ActivationThresholds {
  std::filesystem::path run;  // the calibration run read
  std::string runId;
  std::int64_t rows = 0;      // sample rows per input
  int layers = 0;
  std::vector<InputThreshold> inputs;  // layer-major; per layer in ProjectionInput order
};

// One input's threshold from its sampled entries `x` at t.sparsity: t.threshold the k-th
// smallest |x| (k = round(p_x n); k = 0: -1, every entry kept), t.achieved the share of
// entries at or below it, t.entries n. Throws std::runtime_error naming `source` and
// t.name on a non-finite entry.
void rankInputThreshold(std::span<const float> x, const std::string& source, InputThreshold& t);

// Reads `run`'s /calibration/samples. `perLayer`: one p_x per layer of the run
// (or a single value for every layer), each in [0, 1). Throws
// std::invalid_argument for p_x out of range or a list of the wrong length,
// std::runtime_error naming the file when it is not a calibration run, has no
// activation samples ("calibrate with --sample-rows N first"), lacks an input
// of some layer or holds a non-finite sample.
ActivationThresholds activationThresholdsFromRun(const std::filesystem::path& run, const std::vector<double>& perLayer);
ActivationThresholds activationThresholdsFromRun(const std::filesystem::path& run, double sparsity);

// The thresholds as LoadOptions::activationThresholds takes them, checked
// against the model they will run on: throws std::invalid_argument when the
// run was taken on another model (layer count or an input width differs).
std::vector<InputThresholds> thresholdsForModel(const ActivationThresholds& t, const ModelConfig& config);

// Run-time activation sparsity p_x on `lo` as generate, eval and drift take
// it: per-token top-k (activationSparsity), or with `thresholdsRun` the
// thresholds from that run's samples at p_x (checked against `config`).
// Returns the thresholds set (no inputs when none). Throws as the two above.
ActivationThresholds applyActivationSparsity(LoadOptions& lo, double sparsity,
                                             const std::filesystem::path& thresholdsRun, const ModelConfig& config);

// "qkv", "o", "gate_up", "down".
const char* projectionInputName(ProjectionInput in);

}  // namespace sdw::gpu
