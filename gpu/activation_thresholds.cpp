// Activation-sparsity thresholds from a calibration run's activation samples
// (gpu/activation_thresholds.h). No torch: the samples are read and ranked on
// the host.

#include "gpu/activation_thresholds.h"

#include "core/runstore.h"
#include "gpu/run_read_internal.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string_view>

namespace sdw::gpu {

namespace {

namespace rs = sdw::runstore;
using runread::fail;

constexpr const char* kInputs = "/calibration/inputs";
constexpr const char* kSamples = "/calibration/samples";

// The input a run key names: "model.layers.3.mlp.gate_proj" -> GateUp. False for
// keys of no projection input.
bool inputOfKey(std::string_view key, ProjectionInput& out) {
  static const std::pair<std::string_view, ProjectionInput> kSuffixes[] = {
      {".self_attn.q_proj", ProjectionInput::Qkv},
      {".self_attn.o_proj", ProjectionInput::O},
      {".mlp.gate_proj", ProjectionInput::GateUp},
      {".mlp.down_proj", ProjectionInput::Down}};
  for (const auto& [suffix, in] : kSuffixes)
    if (key.size() > suffix.size() && key.substr(key.size() - suffix.size()) == suffix) {
      out = in;
      return true;
    }
  return false;
}

void checkSparsity(double p) {
  if (!(p >= 0 && p < 1))
    throw std::invalid_argument("activation sparsity " + std::to_string(p) + " is outside [0, 1)");
}

}  // namespace

void rankInputThreshold(std::span<const float> x, const std::string& source, InputThreshold& out) {
  const auto n = x.size();
  std::vector<float> mag(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]))
      throw std::runtime_error(source + ": " + out.name + " holds a non-finite activation sample");
    mag[i] = std::abs(x[i]);
  }
  out.entries = static_cast<std::int64_t>(n);
  const auto k = static_cast<std::size_t>(std::llround(out.sparsity * static_cast<double>(n)));
  if (k == 0) {
    out.threshold = -1.f;  // every entry kept
    out.achieved = 0;
    return;
  }
  std::nth_element(mag.begin(), mag.begin() + static_cast<std::ptrdiff_t>(k - 1), mag.end());
  out.threshold = mag[k - 1];
  const auto below = std::count_if(mag.begin(), mag.end(), [&](float v) { return v <= out.threshold; });
  out.achieved = static_cast<double>(below) / static_cast<double>(n);
}

const char* projectionInputName(ProjectionInput in) {
  switch (in) {
    case ProjectionInput::Qkv: return "qkv";
    case ProjectionInput::O: return "o";
    case ProjectionInput::GateUp: return "gate_up";
    case ProjectionInput::Down: return "down";
  }
  return "?";
}

ActivationThresholds activationThresholdsFromRun(const std::filesystem::path& run, double sparsity) {
  return activationThresholdsFromRun(run, std::vector<double>{sparsity});
}

ActivationThresholds activationThresholdsFromRun(const std::filesystem::path& run,
                                                 const std::vector<double>& perLayer) {
  if (perLayer.empty()) throw std::invalid_argument("activation thresholds: no activation sparsity given");
  for (const double p : perLayer) checkSparsity(p);
  const rs::RunReader r = rs::RunReader::open(run);
  if (r.kind() != "calibration") fail(run, " is a " + r.kind() + " run, not a calibration run");
  const std::int64_t rows = r.exists(kSamples) ? runread::intAttr(r, kSamples, "rows", 0) : 0;
  if (rows <= 0)
    fail(run, " has no activation samples: calibrate with --sample-rows N first");

  ActivationThresholds out;
  out.run = run;
  out.runId = r.runId();
  out.rows = rows;
  // Layer -> input -> key, from the keys the samples are stored under.
  std::map<int, std::map<ProjectionInput, std::string>> keys;
  for (const std::string& key : r.listGroup(kInputs)) {
    ProjectionInput in{};
    if (!inputOfKey(key, in)) continue;
    const std::string g = std::string(kInputs) + "/" + key;
    if (!r.exists(g + "/sample_rows")) fail(run, ": input " + key + " has no sample_rows");
    keys[static_cast<int>(runread::intAttr(r, g, "layer", -1))][in] = key;
  }
  out.layers = keys.empty() ? 0 : keys.rbegin()->first + 1;
  if (keys.empty() || keys.begin()->first != 0 || static_cast<int>(keys.size()) != out.layers)
    fail(run, ": the activation samples do not cover layers 0.." + std::to_string(out.layers - 1));
  if (perLayer.size() != 1 && static_cast<int>(perLayer.size()) != out.layers)
    throw std::invalid_argument("activation sparsity per layer: " + std::to_string(perLayer.size()) +
                                " values for a run of " + std::to_string(out.layers) + " layers");

  for (const auto& [layer, inputs] : keys) {
    for (int i = 0; i < kProjectionInputs; ++i) {
      const auto in = static_cast<ProjectionInput>(i);
      const auto it = inputs.find(in);
      if (it == inputs.end())
        fail(run, ": layer " + std::to_string(layer) + " has no samples of its " + projectionInputName(in) + " input");
      const rs::Array<float> x = r.readFloat32(std::string(kInputs) + "/" + it->second + "/sample_rows");
      if (x.shape.size() != 2 || static_cast<std::int64_t>(x.shape[0]) != rows)
        fail(run, ": " + it->second + "/sample_rows is not a [" + std::to_string(rows) + ", d_in] matrix");
      InputThreshold t;
      t.name = it->second;
      t.layer = layer;
      t.input = in;
      t.dIn = static_cast<std::int64_t>(x.shape[1]);
      t.sparsity = perLayer.size() == 1 ? perLayer.front() : perLayer[static_cast<std::size_t>(layer)];
      rankInputThreshold(x.data, run.filename().string(), t);
      out.inputs.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<InputThresholds> thresholdsForModel(const ActivationThresholds& t, const ModelConfig& config) {
  const std::string file = t.run.filename().string();
  if (t.layers != config.numLayers)
    throw std::invalid_argument(file + " was calibrated on a model of " + std::to_string(t.layers) +
                                " layers, this one has " + std::to_string(config.numLayers) + ": another model");
  std::vector<InputThresholds> out(static_cast<std::size_t>(t.layers), InputThresholds{});
  for (const InputThreshold& in : t.inputs) {
    const std::int64_t want = in.input == ProjectionInput::Down ? config.intermediateSize
                              : in.input == ProjectionInput::O  ? config.qDim()
                                                                : config.hiddenSize;
    if (in.dIn != want)
      throw std::invalid_argument(file + ": " + in.name + " is " + std::to_string(in.dIn) +
                                  " wide, this model's input is " + std::to_string(want) + ": another model");
    out[static_cast<std::size_t>(in.layer)][static_cast<std::size_t>(in.input)] = in.threshold;
  }
  return out;
}

ActivationThresholds applyActivationSparsity(LoadOptions& lo, double sparsity,
                                             const std::filesystem::path& thresholdsRun, const ModelConfig& config) {
  checkSparsity(sparsity);
  if (thresholdsRun.empty()) {
    lo.activationSparsity = sparsity;
    return {};
  }
  ActivationThresholds t = activationThresholdsFromRun(thresholdsRun, sparsity);
  lo.activationThresholds = thresholdsForModel(t, config);
  lo.activationSparsity = 0;
  lo.activationSparsityPerLayer.clear();
  return t;
}

}  // namespace sdw::gpu
