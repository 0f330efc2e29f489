// pruneModel: the layer loop. Reads the calibration statistics, solves each
// attention and MLP projection, and in sequential order re-captures layer i's
// statistics through the model whose layers before i are already pruned: the
// run's own counted positions (its windows, or its prompts and generations as
// stored) teacher-forced again, collecting layer i only; nothing is generated
// again and nothing is written to disk.

#include "core/disk_checks.h"
#include "core/runstore.h"
#include "core/safetensors.h"
#include "gpu/calibration.h"
#include "gpu/calibration_internal.h"
#include "gpu/model_config.h"
#include "gpu/model_internal.h"
#include "gpu/prune_internal.h"
#include "gpu/prune_ops.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace sdw::gpu {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One shared projection input's statistics, as the solvers take them.
struct SolverInput {
  std::int64_t dIn = 0, tokens = 0;
  std::vector<float> xtx;    // [dIn, dIn] raw sum; empty with top-k storage
  std::vector<float> sumSq;  // [dIn]
};

// module name -> input group name, for every input of the run.
std::map<std::string, std::string> moduleInputs(const runstore::RunFile& run) {
  std::map<std::string, std::string> out;
  for (const auto& g : run.listGroup("/calibration/inputs")) {
    const std::string path = "/calibration/inputs/" + g;
    std::stringstream ss(run.readStringAttribute(path, "modules"));
    for (std::string m; std::getline(ss, m, ',');)
      if (!m.empty()) out[m] = g;
  }
  return out;
}

SolverInput readInput(const runstore::RunFile& run, const std::string& group, bool needXtx) {
  const std::string path = "/calibration/inputs/" + group;
  SolverInput s;
  s.dIn = run.readIntAttribute(path, "d_in");
  s.tokens = run.readIntAttribute(path, "tokens");
  s.sumSq = run.read<float>(path + "/sum_sq").data;
  if (run.exists(path + "/xtx")) s.xtx = run.read<float>(path + "/xtx").data;
  else if (needXtx)
    throw std::runtime_error(run.path().string() + ": input " + group +
                             " has no xtx (storage \"topk\"); SparseGPT needs storage \"full\"");
  if (s.tokens < 1) throw std::runtime_error(run.path().string() + ": input " + group + " counted no tokens");
  return s;
}

std::vector<float> hostFloats(const at::Tensor& t) {
  const at::Tensor h = t.to(at::kCPU, at::kFloat).contiguous();
  return {h.data_ptr<float>(), h.data_ptr<float>() + h.numel()};
}

at::Tensor& layerTensor(LayerWeights& L, const std::string& kind) {
  if (kind == "q_proj") return L.q;
  if (kind == "k_proj") return L.k;
  if (kind == "v_proj") return L.v;
  if (kind == "o_proj") return L.o;
  if (kind == "gate_proj") return L.gate;
  if (kind == "up_proj") return L.up;
  if (kind == "down_proj") return L.down;
  throw std::logic_error("not a projection: " + kind);
}

}  // namespace

std::string pruneMethodName(PruneMethod method) { return std::string(nameOf(kPruneMethodNames, method)); }
PruneMethod parsePruneMethod(std::string_view name) { return parseName(kPruneMethodNames, "method", name); }
std::string pruneOrderName(PruneOrder order) { return std::string(nameOf(kPruneOrderNames, order)); }
PruneOrder parsePruneOrder(std::string_view name) { return parseName(kPruneOrderNames, "order", name); }

void validatePruneSettings(const PruneSettings& s) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  parsePruningPattern(s.pattern);
  if (!(s.percdamp >= 0)) bad("percdamp must be >= 0");
  if (s.blocksize < 1) bad("blocksize must be >= 1");
  if (s.model.empty()) bad("no model folder given");
  if (const std::string p = checkpointFolderProblem(s.model); !p.empty()) bad(s.model.string() + ": " + p);
  if (s.calibration.empty() || !fs::is_regular_file(s.calibration))
    bad("calibration run '" + s.calibration.string() + "' does not exist");
  if (s.out.empty()) bad("an output folder is needed");
  if (fs::exists(s.out) && fs::equivalent(s.out, s.model)) bad("the output folder must differ from the model folder");
  if (!s.record.empty() && s.record.string().find(".sdw.h5") == std::string::npos)
    bad("the pruning record must end in .sdw.h5");
  if (s.method == PruneMethod::DuoGpt && !(s.activationSparsity >= 0 && s.activationSparsity < 1))
    bad("activation sparsity must be in [0, 1)");
  if (s.method == PruneMethod::DuoGpt && !(s.residualScale >= 0 && s.residualScale <= 1))
    bad("the residual scale must be in [0, 1]");
}

PruneResult pruneModel(const PruneSettings& settings, const ProgressFn& progress,
                       const std::function<void(const ModulePruneRow&)>& onModule) {
  validatePruneSettings(settings);
  const bool duo = settings.method == PruneMethod::DuoGpt;
  PruneSettings s = settings;
  if (duo) s.order = PruneOrder::Sequential;  // inputs through the pruned layers, as the method needs
  else s.activationSparsity = 0;
  c10::NoGradGuard noGrad;
  const auto t0 = Clock::now();
  const PruningPattern pattern = parsePruningPattern(s.pattern);
  const bool sparsegpt = s.method == PruneMethod::SparseGpt || duo;  // blocked OBS
  if (!s.overwrite && fs::exists(s.out / "model.safetensors"))
    throw std::runtime_error(s.out.string() + " already holds a model.safetensors (pass overwrite to replace it)");
  {
    // Before any solving: the outputs' folder is writable and holds the
    // checkpoint (the source's size) plus the bitmask file (under 0.6 of it).
    std::uint64_t sourceBytes = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(s.model, ec))
      if (e.is_regular_file(ec) && e.path().extension() == ".safetensors") sourceBytes += e.file_size(ec);
    checkCanWrite(s.out, sourceBytes + sourceBytes * 3 / 5 + (std::uint64_t(16) << 20));
    if (!s.record.empty()) checkCanWrite(s.record, std::uint64_t(16) << 20);
  }

  const auto calib = runstore::RunReader::open(s.calibration);
  if (calib.kind() != "calibration")
    throw std::runtime_error(s.calibration.string() + " is a run of kind '" + calib.kind() + "', not calibration");
  if (!calib.summary().complete())
    throw std::runtime_error(s.calibration.string() + " is incomplete; resume it first (sdw-cli calibrate --resume)");
  const auto inputOf = moduleInputs(calib);

  const ModelConfig config = loadModelConfig(s.model);
  const auto ckpt = SafetensorsCheckpoint::open(s.model);
  std::vector<ModuleInfo> modules;
  for (auto& m : projectionModules(config, "float32"))
    if (m.layer >= 0) modules.push_back(m);  // never lm_head (nor the embedding)
  for (const auto& m : modules) {
    checkPatternFits(pattern, m.outFeatures, m.inFeatures, sparsegpt ? s.blocksize : 0);
    if (!inputOf.count(m.name))
      throw std::runtime_error(s.calibration.string() + " has no statistics for " + m.name +
                               " (calibrated on another model?)");
  }

  PruneResult result;
  result.calibrationRunId = calib.runId();
  PruneRecordInfo info;
  info.calibrationRunId = calib.runId();
  info.calibrationSource = calib.readStringAttribute("/calibration", "source");
  info.calibrationModelDir = calib.readStringAttribute("/calibration", "model_dir");
  info.calibrationTokens = calib.readIntAttribute("/calibration", "tokens_collected");
  info.calibration = calibrationRunDecoding(calib);
  info.calibration.run = std::filesystem::absolute(s.calibration).lexically_normal();

  SparseGptOptions gptOptions;
  gptOptions.percdamp = s.percdamp;
  gptOptions.blocksize = s.blocksize;
  gptOptions.device = s.device;

  std::map<std::string, PrunedTensor> pruned;
  std::map<std::string, std::vector<float>> prunedFloat;  // sequential: waiting to be swapped into the re-capture model
  const bool sequential = s.order == PruneOrder::Sequential;
  const int total = static_cast<int>(modules.size());
  int done = 0;

  // Sequential order: the dense model once, its layers replaced by their
  // pruned versions as the loop moves on, and the run's counted sequences.
  std::unique_ptr<Model> recaptureModel;
  std::unique_ptr<Model> denseModel;  // DuoGPT: the targets' inputs
  std::vector<ForwardRows> replay;
  int replayBatch = 1;
  if (sequential) {
    const auto tr = Clock::now();
    CalibrationSettings cs = calibrationSettingsFromJson(calib.provenance().settingsJson, s.calibration);
    cs.model = s.model;
    LoadOptions lo;
    lo.device = s.device;
    lo.dtype = cs.dtype;
    recaptureModel = Model::load(s.model, lo);
    if (duo) denseModel = Model::load(s.model, lo);
    replay = replaySequences(calib, cs);
    replayBatch = std::max(cs.batch, 1);
    result.recaptureSeconds += since(tr);
  }

  for (int layer = 0; layer < config.numLayers; ++layer) {
    const std::string layerText = "layer " + std::to_string(layer + 1) + "/" + std::to_string(config.numLayers);
    reportOrThrow(progress, Progress{static_cast<double>(done), static_cast<double>(total), "modules", layerText, "prune"});
    // Statistics for this layer's inputs: the run's, or re-captured through the pruned layers.
    std::map<std::string, SolverInput> stats;
    std::map<std::string, DuoInput> duoStats;
    const auto recaptureProgress = [&](std::size_t b, std::size_t n) {
      reportOrThrow(progress, Progress{static_cast<double>(b), static_cast<double>(n), "batches",
                                       "recapture " + layerText + ": batch " + std::to_string(b) + "/" +
                                           std::to_string(n),
                                       "recapture"});
    };
    if (sequential && layer > 0) {
      auto& impl = recaptureModel->impl();
      for (const auto& mod : modules) {
        if (mod.layer != layer - 1) continue;
        at::Tensor& t = layerTensor(impl.w.layers[static_cast<std::size_t>(mod.layer)], mod.kind);
        const auto& v = prunedFloat.at(mod.name);
        // copy = true: on CPU in fp32, to() would otherwise alias the vector erased below
        t = at::from_blob(const_cast<float*>(v.data()), {mod.outFeatures, mod.inFeatures}, at::kFloat)
                .to(t.device(), t.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
        prunedFloat.erase(mod.name);
      }
    }
    if (duo) {
      // The pruned layers < layer decode with activation sparsity; this layer's
      // inputs are sparsified in the pairing (collectDuoStats).
      const auto tr = Clock::now();
      std::vector<double> px(static_cast<std::size_t>(config.numLayers), 0.0);
      for (int l = 0; l < layer; ++l) px[static_cast<std::size_t>(l)] = s.activationSparsity;
      setActivationSparsity(recaptureModel->impl(), px);
      duoStats = collectDuoStats(*denseModel, *recaptureModel, replay, replayBatch, layer, s.activationSparsity,
                                 recaptureProgress);
      result.recaptureSeconds += since(tr);
    } else if (sequential && layer > 0) {
      const auto tr = Clock::now();
      auto& impl = recaptureModel->impl();
      StatsAccumulator acc(recaptureModel->config(), impl.device, layer);
      replayCollect(*recaptureModel, replay, replayBatch, acc, recaptureProgress);
      for (const auto& in : acc.inputs()) {
        SolverInput si;
        si.dIn = in.dIn;
        si.tokens = in.tokens;
        const at::Tensor xtx = in.xtx.to(at::kCPU, at::kFloat).contiguous();
        const at::Tensor sq = in.sumSq.to(at::kCPU, at::kFloat).contiguous();
        si.xtx.assign(xtx.data_ptr<float>(), xtx.data_ptr<float>() + xtx.numel());
        si.sumSq.assign(sq.data_ptr<float>(), sq.data_ptr<float>() + sq.numel());
        stats.emplace(in.name, std::move(si));
      }
      result.recaptureSeconds += since(tr);
    }

    for (const auto& mod : modules) {
      if (mod.layer != layer) continue;
      const std::string& group = inputOf.at(mod.name);
      if (duo && !stats.count(group)) {
        const auto it = duoStats.find(group);
        if (it == duoStats.end()) throw std::logic_error("DuoGPT: no statistics captured for " + group);
        SolverInput si;
        si.dIn = it->second.dIn;
        si.tokens = it->second.tokens;
        si.xtx = hostFloats(it->second.shh);
        stats.emplace(group, std::move(si));
      }
      if (!stats.count(group)) stats[group] = readInput(calib, group, sparsegpt);
      const SolverInput& in = stats.at(group);
      if (in.dIn != mod.inFeatures)
        throw std::runtime_error("calibration input " + group + " has d_in " + std::to_string(in.dIn) + ", " +
                                 mod.name + " reads " + std::to_string(mod.inFeatures));
      const auto entry = ckpt.find(mod.name + ".weight");
      if (!entry.view) throw std::runtime_error(s.model.string() + ": no tensor " + mod.name + ".weight");
      const TensorView& tv = *entry.view;
      if (tv.shape != std::vector<std::int64_t>{mod.outFeatures, mod.inFeatures})
        throw std::runtime_error(s.model.string() + ": " + mod.name + ".weight has an unexpected shape");
      const std::vector<float> w = decodeToFloat(tv.dtype, tv.bytes.data(), tv.numel());

      SolveResult r;
      switch (s.method) {
        case PruneMethod::SparseGpt:
          r = solveSparseGpt(w, mod.outFeatures, mod.inFeatures, in.xtx, in.tokens, pattern, gptOptions);
          break;
        case PruneMethod::Wanda:
          r = solveWanda(w, mod.outFeatures, mod.inFeatures, in.sumSq, in.xtx, in.tokens, pattern, s.device);
          break;
        case PruneMethod::Magnitude:
          r = solveMagnitude(w, mod.outFeatures, mod.inFeatures, in.xtx, in.tokens, pattern, s.device);
          break;
        case PruneMethod::DuoGpt: {
          const DuoInput& d = duoStats.at(group);
          r = solveDuoGpt(w, mod.outFeatures, mod.inFeatures, in.xtx, hostFloats(d.cross), hostFloats(d.sdd),
                          in.tokens, pattern, gptOptions, s.residualScale);
          break;
        }
      }

      ModulePruneRow row;
      row.name = mod.name;
      row.layer = mod.layer;
      row.rows = mod.outFeatures;
      row.cols = mod.inFeatures;
      row.loss = r.loss;
      row.outputLoss = r.outputLoss;
      row.relOutputError = r.relOutputError;
      row.sparsity = r.sparsity;
      row.percdampUsed = sparsegpt ? r.percdampUsed : 0;
      row.dampingSteps = r.dampingSteps;
      row.deadInputs = r.deadInputs;
      row.seconds = r.seconds;
      PrunedTensor pt;
      pt.dtype = tv.dtype;
      pt.shape = tv.shape;
      pt.bytes = encodeFromFloat(tv.dtype, r.weight.data(), tv.numel());
      pruned.emplace(mod.name, std::move(pt));
      if (sequential && layer + 1 < config.numLayers) prunedFloat.emplace(mod.name, std::move(r.weight));
      result.modules.push_back(row);
      if (onModule) onModule(row);
      ++done;
      reportOrThrow(progress, Progress{static_cast<double>(done), static_cast<double>(total), "modules", layerText, "prune"});
    }
  }

  writePrunedOutputs(s, pattern, pruned, info, result);
  result.seconds = since(t0);
  result.record = s.record.empty() ? s.out / "pruning.sdw.h5" : s.record;
  writePruningRun({s, info, result}, result.record);
  return result;
}

}  // namespace sdw::gpu
