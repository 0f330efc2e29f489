#pragma once
// Quality evaluation of pruned models against their dense parent, with no
// external judge (DESIGN §3 "Quality"):
//
//  - perplexity on held-out fixed text: seeded random token windows of the
//    held-out corpus, teacher-forced, every position after the first counted;
//  - perplexity on held-out dense generations: the dense model continues the
//    held-out prompts, then every model scores prompt + continuation
//    teacher-forced, counting only the generated positions;
//  - on-policy agreement: each model decodes its own trajectory from the
//    held-out prompts (greedy, or sampled with a seed), the dense model scores
//    that trajectory: mean KL(dense || model) of the next-token distributions
//    along it, greedy agreement (argmax dense == argmax model) and the first
//    divergence step (first generated token that differs from the dense
//    argmax), for several seeds with mean and spread;
//  - side-by-side generations of the same prompt through every model.
//
// Plain types only; the engine stays behind gpu/model.h.
//
//   EvaluationSettings s;
//   s.dense = "samples/model/brown-llama";
//   s.models = {"pruned-fixed", "pruned-ar"};
//   EvaluationResult r = evaluate(s);
//   writeEvaluationRun(r, "workspace/eval.sdw.h5");  // gpu/evaluation_run.h

#include "core/decoding.h"
#include "core/decoding_checks.h"
#include "core/progress.h"
#include "gpu/model.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sdw::gpu {

struct EvaluationSettings {
  std::filesystem::path dense;                 // the dense checkpoint (also the scorer)
  std::vector<std::filesystem::path> models;   // pruned checkpoints to compare
  std::filesystem::path text;                  // held-out corpus (.txt with "# doc" headers, or .jsonl)
  std::filesystem::path prompts;               // held-out prompts (.jsonl {"id","prompt"})
  std::vector<std::uint64_t> seeds = {0, 1, 2};
  int maxNewTokens = 64;
  int window = 256;           // tokens per fixed-text window
  int windows = 16;           // windows drawn (seeded by textSeed)
  std::uint64_t textSeed = 0;
  int maxPrompts = 0;         // 0: every prompt in the file
  // On-policy decoding, the workbench's protocol by default (core/decoding.h;
  // temperature 0 is greedy, and then every seed gives the same
  // trajectories). The dense generations for perplexity use it too, with the
  // first seed.
  double temperature = kDefaultDecoding.temperature;
  int topK = kDefaultDecoding.topK;
  double topP = kDefaultDecoding.topP;
  Decoding decoding() const { return Decoding{temperature, topK, topP}; }
  void setDecoding(const Decoding& d) {
    temperature = d.temperature;
    topK = d.topK;
    topP = d.topP;
  }
  bool stopAtEos = true;      // trajectories end after an end-of-sequence token
  int sideBySidePrompts = 1;  // the first N prompts, greedy, through every model
  std::string device = "cpu";
  std::string dtype = "float32";
  // Run-time activation sparsity of the compared models (LoadOptions); the
  // dense model stays dense as the reference and scorer (pass its folder in
  // `models` too to see it under p_x).
  double activationSparsity = 0;
  // With a calibration run here: the compared models keep |x| > thresholds
  // set from its activation samples at activationSparsity (TEAL,
  // gpu/activation_thresholds.h) instead of each token's top-k.
  std::filesystem::path activationThresholds{};
};

struct Spread {
  double mean = 0, std = 0, min = 0, max = 0;  // over seeds; std is the population std (n, not n-1)
  int n = 0;
};
Spread spreadOf(const std::vector<double>& values);

// One seed's on-policy figures for one model.
struct OnPolicySeed {
  std::uint64_t seed = 0;
  double klMean = 0;            // mean over every scored step of every prompt (nats)
  double agreement = 0;         // share of steps with argmax dense == argmax model
  std::int64_t steps = 0;       // steps scored
  // Per prompt: first step whose chosen token differs from the dense argmax;
  // -1 when the whole trajectory agrees.
  std::vector<int> firstDivergence;
  std::vector<int> trajectoryLength;  // per prompt
  // Median of firstDivergence over prompts, a trajectory without divergence
  // counted as its length (censored).
  double firstDivergenceMedian = 0;
  int noDivergence = 0;         // prompts whose trajectory never diverged
};

struct ModelEvaluation {
  std::filesystem::path dir;
  std::string label;            // "dense" or the directory name
  bool isDense = false;
  double pplText = 0;           // exp(mean NLL) over the fixed-text windows
  double nllText = 0;
  std::int64_t tokensText = 0;  // positions scored
  double pplDenseGen = 0;       // over the dense generations' generated positions
  double nllDenseGen = 0;
  std::int64_t tokensDenseGen = 0;
  std::vector<OnPolicySeed> seeds;
  Spread kl, agreement, firstDivergence;  // of the per-seed values
};

struct SideBySide {
  std::string promptId;
  std::string prompt;
  std::vector<std::string> texts;  // per model, in EvaluationResult::models order
};

struct EvaluationResult {
  EvaluationSettings settings;
  std::vector<ModelEvaluation> models;  // [0] the dense model, then settings.models in order
  int prompts = 0;
  int windows = 0;
  std::vector<std::string> denseGenerations;  // decoded continuations used for pplDenseGen
  std::vector<std::vector<std::int32_t>> denseGenerationIds;  // their tokens (generated part only)
  std::vector<SideBySide> sideBySide;
  // Per pruned model (settings.models order): the calibration it was pruned
  // from, as its provenance says (found = false when it has none).
  std::vector<PrunedCalibration> calibrations;
  // Plain words for the reader (core/decoding_checks.h): a calibration
  // decoded otherwise than this evaluation, or on its prompts; what each
  // model was calibrated on; a generation_config.json asking for another
  // decoding.
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
  std::string activationThresholdsRunId;  // run_id of settings.activationThresholds (empty without)
  double seconds = 0;
};

// Progress in units of work (model x stage); returning false throws Cancelled.
EvaluationResult evaluate(const EvaluationSettings& settings, const ProgressFn& progress = {});

// ---- building blocks (tests, other panels) ----

// Mean negative log-likelihood (nats) of `ids[t]` for t in [from, ids.size())
// under the model's teacher-forced logits of ids[0..t-1]; `from` >= 1.
struct NllSum {
  double sum = 0;
  std::int64_t count = 0;
};
NllSum sequenceNll(Model& model, const std::vector<std::int32_t>& ids, std::size_t from);

// The on-policy comparison of one trajectory: `ids` = prompt + generated,
// the generated part starting at `promptLength`.
struct TrajectoryScore {
  std::vector<double> kl;        // per generated step, KL(dense || model) in nats
  std::vector<bool> agree;       // per step, argmax dense == argmax model
  int firstDivergence = -1;      // first step where ids[promptLength + t] != argmax dense
};
TrajectoryScore scoreTrajectory(Model& dense, Model& model, const std::vector<std::int32_t>& ids,
                                std::size_t promptLength);

// KL(p || q) of softmax(pLogits) and softmax(qLogits), in nats, in double.
double klDivergence(std::span<const float> pLogits, std::span<const float> qLogits);

}  // namespace sdw::gpu
