// Activation drift: dense vs pruned attention-input activations per decode
// step and layer, in own- and shared-trajectory modes (the run file:
// gpu/drift_run.cpp).

#include "gpu/drift.h"

#include "core/chat_format.h"
#include "core/tokenizer.h"
#include "gpu/activation_thresholds.h"
#include "gpu/calibration_sources.h"
#include "gpu/device.h"
#include "gpu/model_internal.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

namespace sdw::gpu {

namespace {

constexpr std::size_t kBatch = 16;  // prompts per generateBatch call

bool isAttentionInput(const ActivationEvent& ev) {
  const std::string& m = ev.modules.front();
  return m.size() >= 6 && m.compare(m.size() - 6, 6, "q_proj") == 0;
}

// Removes a tensor observer when leaving scope.
struct ObserverGuard {
  Model& model;
  int id;
  ~ObserverGuard() { model.removeObserver(id); }
};

// Attention-input activations of generated positions [from, from + n) for
// every layer: [layers][n * hidden] fp32 host, from one teacher-forced pass.
std::vector<std::vector<float>> attentionInputs(Model& model, const std::vector<std::int32_t>& ids, std::size_t from) {
  const auto layers = static_cast<std::size_t>(model.config().numLayers);
  std::vector<std::vector<float>> out(layers);
  const auto n = static_cast<std::int64_t>(ids.size() - from);
  const int id = addTensorObserver(model, [&](const ActivationEvent& ev, const at::Tensor& x) {
    if (!isAttentionInput(ev)) return;
    const std::int64_t begin = static_cast<std::int64_t>(from) - ev.position;  // x: [tokens, hidden]
    if (begin < 0 || begin + n > ev.tokens) throw std::logic_error("drift: observed rows do not cover the steps");
    const at::Tensor rows = x.narrow(0, begin, n).to(at::kCPU, at::kFloat).contiguous();  // [n, hidden]
    out[static_cast<std::size_t>(ev.layer)].assign(rows.data_ptr<float>(), rows.data_ptr<float>() + rows.numel());
  });
  const ObserverGuard guard{model, id};
  (void)model.logits(ids);
  return out;
}

// Prompt i is sampled with seed `options.sampling.seed + i` (generateBatch
// gives row b seed + b), whichever model decodes it.
std::vector<GenerationResult> generateAll(Model& model, const std::vector<std::vector<std::int32_t>>& prompts,
                                          GenerationOptions options) {
  std::vector<GenerationResult> out;
  const std::uint64_t base = options.sampling.seed;
  for (std::size_t i = 0; i < prompts.size(); i += kBatch) {
    const std::size_t n = std::min(kBatch, prompts.size() - i);
    std::vector<std::vector<std::int32_t>> chunk(prompts.begin() + static_cast<std::ptrdiff_t>(i),
                                                 prompts.begin() + static_cast<std::ptrdiff_t>(i + n));
    options.sampling.seed = base + i;
    auto r = model.generateBatch(chunk, options);
    for (auto& g : r) out.push_back(std::move(g));
  }
  return out;
}

std::string labelFor(const std::filesystem::path& dir) {
  auto p = dir;
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

const char* driftModeName(DriftMode mode) { return mode == DriftMode::Own ? "own" : "shared"; }

std::vector<DriftCurves> measureDrift(Model& dense, Model& pruned, const std::vector<std::vector<std::int32_t>>& prompts,
                                      int steps, const std::vector<DriftMode>& modes, const DriftDecoding& decoding,
                                      bool keepTrace, const ProgressFn& progress) {
  if (steps < 1) throw std::invalid_argument("drift: steps must be >= 1");
  if (prompts.empty()) throw std::invalid_argument("drift: no prompts");
  if (modes.empty()) throw std::invalid_argument("drift: no mode");
  validateDecoding(decoding.decoding, "drift");
  const auto& dc = dense.config();
  const auto& pc = pruned.config();
  if (dc.numLayers != pc.numLayers || dc.hiddenSize != pc.hiddenSize || dc.vocabSize != pc.vocabSize)
    throw std::invalid_argument("drift: the dense and pruned models have different shapes");
  const int layers = static_cast<int>(dc.numLayers);
  const auto hidden = static_cast<std::size_t>(dc.hiddenSize);

  GenerationOptions gen;  // no stop token: `steps` tokens per prompt
  gen.maxNewTokens = steps;
  gen.sampling = samplingOptions(decoding.decoding, decoding.seed * 1000003ULL);
  const auto denseGen = generateAll(dense, prompts, gen);
  const bool own = std::find(modes.begin(), modes.end(), DriftMode::Own) != modes.end();
  std::vector<GenerationResult> prunedGen;
  if (own) prunedGen = generateAll(pruned, prompts, gen);

  std::vector<drift::DriftAccumulator> acc(modes.size(), drift::DriftAccumulator(steps, layers));
  std::vector<DriftCurves> curves(modes.size());
  for (std::size_t p = 0; p < prompts.size(); ++p) {
    reportOrThrow(progress, {static_cast<double>(p), static_cast<double>(prompts.size()), "prompts",
                             "prompt " + std::to_string(p + 1) + "/" + std::to_string(prompts.size())});
    const std::size_t L = prompts[p].size();
    std::vector<std::int32_t> denseIds = prompts[p];
    denseIds.insert(denseIds.end(), denseGen[p].tokens.begin(), denseGen[p].tokens.end());
    if (denseIds.size() <= L) continue;  // no room left in the context
    const auto denseActs = attentionInputs(dense, denseIds, L);
    for (std::size_t mi = 0; mi < modes.size(); ++mi) {
      std::vector<std::int32_t> ids = prompts[p];
      const auto& tokens = modes[mi] == DriftMode::Shared ? denseGen[p].tokens : prunedGen[p].tokens;
      ids.insert(ids.end(), tokens.begin(), tokens.end());
      const std::size_t n = std::min(ids.size(), denseIds.size()) - L;
      ids.resize(L + n);
      if (keepTrace) {
        curves[mi].trace.denseInputs.push_back(denseIds);
        curves[mi].trace.prunedInputs.push_back(ids);
      }
      if (n == 0) continue;
      const auto acts = attentionInputs(pruned, ids, L);
      for (int l = 0; l < layers; ++l) {
        const auto& a = acts[static_cast<std::size_t>(l)];
        const auto& d = denseActs[static_cast<std::size_t>(l)];
        for (std::size_t t = 0; t < n; ++t)
          acc[mi].add(static_cast<int>(t), l,
                      drift::relativeDiscrepancy(std::span<const float>(a.data() + t * hidden, hidden),
                                                 std::span<const float>(d.data() + t * hidden, hidden)));
      }
    }
  }
  reportOrThrow(progress, {static_cast<double>(prompts.size()), static_cast<double>(prompts.size()), "prompts", "done"});
  for (std::size_t mi = 0; mi < modes.size(); ++mi) {
    DriftCurves& c = curves[mi];
    c.mode = modes[mi];
    c.steps = steps;
    c.layers = layers;
    c.ratio = acc[mi].mean();
    c.count = acc[mi].counts();
    c.summary = drift::summarizeDrift(c.ratio, steps, layers);
  }
  return curves;
}

DriftResult analyzeDrift(const DriftSettings& settings, const ProgressFn& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  if (settings.pruned.empty()) throw std::invalid_argument("drift: no pruned model");
  validateDecoding(settings.decoding, "drift");
  DriftResult res;
  res.settings = settings;
  const Tokenizer tok = Tokenizer::fromFile(settings.dense / "tokenizer.json");
  const ChatFamily family = detectChatFamily(tok, settings.dense);
  const std::vector<Prompt> prompts = readPromptSubset(settings.prompts, settings.maxPrompts, "drift");
  std::vector<std::vector<std::int32_t>> ids;
  for (const auto& p : prompts) ids.push_back(encodePrompt(tok, family, p.prompt));
  res.prompts = static_cast<int>(ids.size());

  // What each pruned model was calibrated on, against this decoding.
  for (const auto& p : settings.pruned) res.calibrations.push_back(findPrunedCalibration(p));
  DecodingCheck check = checkPrunedCalibrations(res.calibrations, settings.decoding, settings.prompts,
                                                DecodingJob::DriftAnalysis);
  if (const std::string note = generationConfigNote(settings.dense, settings.decoding); !note.empty())
    check.notes.push_back(note);
  res.warnings = std::move(check.warnings);
  res.notes = std::move(check.notes);

  const LoadOptions lo{settings.device, settings.dtype};
  std::unique_ptr<Model> dense = Model::load(settings.dense, lo);
  res.layers = static_cast<int>(dense->config().numLayers);
  LoadOptions plo = lo;  // the pruned models': with activation sparsity
  res.activationThresholdsRunId =
      applyActivationSparsity(plo, settings.activationSparsity, settings.activationThresholds, dense->config()).runId;
  const double total = static_cast<double>(settings.pruned.size() * ids.size());
  for (std::size_t k = 0; k < settings.pruned.size(); ++k) {
    std::unique_ptr<Model> pruned = Model::load(settings.pruned[k], plo);
    DriftModelResult mr;
    mr.dir = settings.pruned[k];
    mr.label = labelFor(mr.dir);
    const double base = static_cast<double>(k * ids.size());
    const DriftDecoding decoding{settings.decoding, settings.seed};
    mr.curves = measureDrift(*dense, *pruned, ids, settings.steps, settings.modes, decoding, false,
                             [&](const Progress& p) {
                               return !progress || progress({base + p.done, total, "prompts", mr.label + ": " + p.stage});
                             });
    res.models.push_back(std::move(mr));
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace sdw::gpu
