// sdw-cli eval: quality of pruned models against the dense model
// (gpu/evaluation.h), and the `analyze drift` mode (gpu/drift.h), whose
// handler lives here next to `eval` and is listed in cmd_analyze.cpp's table.

#include "app/cli/cli_decoding.h"
#include "app/cli/cli_util.h"
#include "app/cli/command.h"
#include "gpu/drift_run.h"
#include "gpu/evaluation_run.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace sdw::cli {

namespace {

using nlohmann::json;



json spreadJson(const gpu::Spread& s) {
  return {{"mean", s.mean}, {"std", s.std}, {"min", s.min}, {"max", s.max}, {"n", s.n}};
}

json evaluationJson(const gpu::EvaluationResult& r) {
  json models = json::array();
  for (const auto& m : r.models) {
    json seeds = json::array();
    for (const auto& s : m.seeds)
      seeds.push_back({{"seed", s.seed},
                       {"kl_mean", s.klMean},
                       {"agreement", s.agreement},
                       {"steps", s.steps},
                       {"first_divergence", s.firstDivergence},
                       {"trajectory_length", s.trajectoryLength},
                       {"first_divergence_median", s.firstDivergenceMedian},
                       {"no_divergence", s.noDivergence}});
    models.push_back({{"label", m.label},
                      {"dir", m.dir.string()},
                      {"dense", m.isDense},
                      {"ppl_text", m.pplText},
                      {"tokens_text", m.tokensText},
                      {"ppl_dense_gen", m.pplDenseGen},
                      {"tokens_dense_gen", m.tokensDenseGen},
                      {"kl", spreadJson(m.kl)},
                      {"agreement", spreadJson(m.agreement)},
                      {"first_divergence_median", spreadJson(m.firstDivergence)},
                      {"seeds", seeds}});
  }
  json side = json::array();
  for (const auto& s : r.sideBySide) side.push_back({{"id", s.promptId}, {"prompt", s.prompt}, {"texts", s.texts}});
  const auto& st = r.settings;
  return {{"prompts", r.prompts},
          {"windows", r.windows},
          {"window", st.window},
          {"max_new_tokens", st.maxNewTokens},
          {"temperature", st.temperature},
          {"top_k", st.topK},
          {"top_p", st.topP},
          {"decoding", st.decoding().describe()},
          {"warnings", r.warnings},
          {"notes", r.notes},
          {"seeds", st.seeds},
          {"activation_sparsity", st.activationSparsity},
          {"activation_thresholds", st.activationThresholds.string()},
          {"activation_thresholds_run_id", r.activationThresholdsRunId},
          {"seconds", r.seconds},
          {"models", models},
          {"side_by_side", side}};
}

int runEval(const Args& a) {
  gpu::EvaluationSettings s;
  if (!a.has("dense")) throw UsageError("--dense DIR is required");
  if (!a.has("models")) throw UsageError("--models DIR [DIR...] is required");
  s.dense = a.get("dense");
  for (const auto& p : a.getList("models")) s.models.push_back(p);
  s.text = a.get("text");
  s.prompts = a.get("prompts");
  s.seeds = parseSeeds(a.get("seeds"));
  s.maxNewTokens = static_cast<int>(a.getInt("max-new-tokens", 64));
  s.window = static_cast<int>(a.getInt("window", 256));
  s.windows = static_cast<int>(a.getInt("windows", 16));
  s.maxPrompts = static_cast<int>(a.getInt("max-prompts", 0));
  s.setDecoding(decodingFrom(a));
  s.device = a.get("device", "cpu");
  s.dtype = a.get("dtype", "float32");
  const ActivationSparsityArgs sparsity = activationSparsityFrom(a);
  s.activationSparsity = sparsity.sparsity;
  s.activationThresholds = sparsity.thresholds;
  if (s.maxNewTokens < 1) throw UsageError("--max-new-tokens must be >= 1");
  if (s.window < 2) throw UsageError("--window must be >= 2");
  const bool asJson = a.has("json");
  const bool tty = !asJson && ::isatty(STDERR_FILENO);

  const gpu::EvaluationResult r = gpu::evaluate(s, ttyProgress(tty));
  if (tty) std::fprintf(stderr, "\r%-80s\r", "");
  std::string written;
  if (a.has("out")) written = gpu::writeEvaluationRun(r, a.get("out"), a.has("overwrite")).string();

  if (asJson) {
    json j = evaluationJson(r);
    if (!written.empty()) j["out"] = written;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::string seeds;
  for (const auto v : s.seeds) seeds += (seeds.empty() ? "" : ",") + std::to_string(v);
  std::cout << "dense: " << s.dense.string() << "\n"
            << r.windows << " text windows of " << s.window << " tokens, " << r.prompts << " prompts, "
            << s.maxNewTokens << " new tokens, seeds " << seeds << "\n";
  printDecoding(std::cout, s.decoding(), {});
  printActivationSparsity(std::cout, sparsity, r.activationThresholdsRunId, "the compared models");
  printChecks(std::cout, r.warnings, r.notes);
  std::cout << "\n";
  std::size_t w = 5;
  for (const auto& m : r.models) w = std::max(w, m.label.size());
  std::printf("%-*s %10s %10s %21s %17s %14s\n", static_cast<int>(w), "MODEL", "PPL(TEXT)", "PPL(DGEN)",
              "KL(dense||m)", "AGREEMENT", "1ST DIV (MED)");
  for (const auto& m : r.models) {
    const std::string kl = fmt("%.4f", m.kl.mean) + " ± " + fmt("%.4f", m.kl.std);
    const std::string ag = fmt("%.3f", m.agreement.mean) + " ± " + fmt("%.3f", m.agreement.std);
    const std::string dv = fmt("%.1f", m.firstDivergence.mean) + " ± " + fmt("%.1f", m.firstDivergence.std);
    std::printf("%-*s %10s %10s %22s %18s %14s\n", static_cast<int>(w), m.label.c_str(), fmt("%.3f", m.pplText).c_str(),
                fmt("%.3f", m.pplDenseGen).c_str(), kl.c_str(), ag.c_str(), dv.c_str());
  }
  std::fflush(stdout);
  std::cout << "\n(mean ± std over seeds; first divergence: median over prompts of the first step whose token\n"
               " differs from the dense argmax, a trajectory without one counted as its length)\n";
  for (const auto& sb : r.sideBySide) {
    std::cout << "\nprompt " << sb.promptId << ": " << sb.prompt << "\n";
    for (std::size_t i = 0; i < sb.texts.size() && i < r.models.size(); ++i)
      std::cout << "  [" << r.models[i].label << "] " << sb.texts[i] << "\n";
  }
  if (!written.empty()) std::cout << "\nevaluation written to " << written << "\n";
  return 0;
}

Command makeEvalCommand() {
  Command c{
    "eval",
    "quality of pruned models against the dense model (perplexity, on-policy KL and agreement)",
    "eval --dense DIR --models DIR [DIR...] [--text F] [--prompts F] [--seeds 0,1,2] [--max-new-tokens 64] "
    "[--window 256] [--activation-sparsity P [--activation-thresholds RUN]] [--out RUN] [--json]",
    "Teacher-forced perplexity on held-out fixed text (seeded windows) and on the dense model's\n"
    "continuations of the held-out prompts (generated positions only); on-policy agreement: each\n"
    "model decodes its own trajectory, the dense model scores it (mean KL(dense || model),\n"
    "greedy agreement, first divergence step), per seed with mean and spread; greedy side-by-side\n"
    "generations of the first prompt. The dense model is evaluated too, as the reference row.\n"
    "Trajectories and dense generations follow the workbench's decoding protocol (sampled from the\n"
    "model's own distribution, temperature 1, top-k off, top-p 1) unless --temperature / --top-k /\n"
    "--top-p say otherwise: the default of calibrate and analyze drift too. A warning says when a\n"
    "pruned model's calibration (found through its pruning provenance) decoded otherwise.\n"
    "--activation-sparsity P runs every compared model with run-time activation sparsity (each\n"
    "projection input keeps its largest 1-P share, DuoGPT's p_x); the dense reference stays dense.\n"
    "With --activation-thresholds RUN the kept entries are those above per-layer, per-input\n"
    "thresholds set from RUN's activation samples at P (TEAL); RUN is recorded with the results.",
    {{"dense", "DIR", "the dense checkpoint", ""},
     {"models", "DIR", "pruned checkpoints; more may follow as arguments", ""},
     {"text", "F", "held-out corpus", SDW_SOURCE_DIR "/samples/corpus/brown-heldout.txt"},
     {"prompts", "F", "held-out prompts (.jsonl)", SDW_SOURCE_DIR "/samples/prompts/brown-heldout.jsonl"},
     {"seeds", "LIST", "comma-separated seeds for on-policy decoding", "0,1,2"},
     {"max-new-tokens", "N", "tokens generated per prompt", "64"},
     {"window", "N", "tokens per fixed-text window", "256"},
     {"windows", "N", "fixed-text windows (seeded, seed 0)", "16"},
     {"max-prompts", "N", "use the first N prompts (0: all)", "0"},
     {"device", "DEV", "cpu, cuda or cuda:N", "cpu"},
     {"dtype", "T", "float32, bfloat16 or float16", "float32"},
     {"out", "RUN", "write an evaluation run (*.sdw.h5)", ""},
     {"overwrite", "", "replace RUN if it exists", ""},
     {"json", "", "machine-readable output", ""}},
    0,
    1000,
    runEval};
  const auto at = std::find_if(c.options.begin(), c.options.end(),
                               [](const OptionSpec& o) { return o.name == "max-prompts"; });
  const auto decoding = decodingOptions("the trajectories and the dense generations");
  c.options.insert(at + 1, decoding.begin(), decoding.end());
  const auto dtype = std::find_if(c.options.begin(), c.options.end(),
                                  [](const OptionSpec& o) { return o.name == "dtype"; });
  const auto sparsity = activationSparsityOptions("the compared models");
  c.options.insert(dtype + 1, sparsity.begin(), sparsity.end());
  return c;
}

const Register reg{makeEvalCommand()};

json curvesJson(const gpu::DriftCurves& c) {
  return {{"mode", gpu::driftModeName(c.mode)}, {"ratio", c.ratio},       {"plateau", c.summary.plateau},
          {"step90", c.summary.step90},         {"median", c.summary.median}, {"q1", c.summary.q1},
          {"q3", c.summary.q3}};
}

}  // namespace

// ---- analyze drift (listed in cmd_analyze.cpp's mode table)

std::vector<OptionSpec> analyzeDriftOptions() {
  std::vector<OptionSpec> options{{"dense", "DIR", "the dense checkpoint", ""},
          {"pruned", "DIR", "pruned checkpoint; a second one may follow as an argument", ""},
          {"prompts", "F", "held-out prompts (.jsonl)", ""},
          {"steps", "N", "decode steps per prompt", "128"},
          {"mode", "M", "own, shared or both", "both"},
          {"max-prompts", "N", "use the first N prompts (0: all)", "0"},
          {"device", "DEV", "cpu, cuda or cuda:N", "cpu"},
          {"dtype", "T", "float32, bfloat16 or float16", "float32"},
          {"out", "RUN", "write a drift run (*.sdw.h5)", ""},
          {"overwrite", "", "replace RUN if it exists", ""},
          {"json", "", "machine-readable output, curves included", ""}};
  const auto decoding = decodingOptions("the trajectories (dense and pruned alike)");
  options.insert(options.begin() + 6, decoding.begin(), decoding.end());
  options.insert(options.begin() + 6 + static_cast<std::ptrdiff_t>(decoding.size()),
                 OptionSpec{"seed", "S", "sampling seed: prompt i uses S * 1000003 + i, for the dense and the pruned "
                                         "model alike", "0"});
  const auto dtype =
      std::find_if(options.begin(), options.end(), [](const OptionSpec& o) { return o.name == "dtype"; });
  const auto sparsity = activationSparsityOptions("the pruned models");
  options.insert(dtype + 1, sparsity.begin(), sparsity.end());
  return options;
}

int runAnalyzeDrift(const Args& a) {
  gpu::DriftSettings s;
  if (!a.has("dense")) throw UsageError("--dense DIR is required");
  if (!a.has("pruned")) throw UsageError("--pruned DIR is required");
  if (!a.has("prompts")) throw UsageError("--prompts F is required");
  s.dense = a.get("dense");
  s.pruned.push_back(a.get("pruned"));
  for (const auto& p : a.positional) s.pruned.push_back(p);
  s.prompts = a.get("prompts");
  s.steps = static_cast<int>(a.getInt("steps", 128));
  if (s.steps < 1) throw UsageError("--steps must be >= 1");
  const std::string mode = a.get("mode", "both");
  if (mode == "own") s.modes = {gpu::DriftMode::Own};
  else if (mode == "shared") s.modes = {gpu::DriftMode::Shared};
  else if (mode == "both") s.modes = {gpu::DriftMode::Own, gpu::DriftMode::Shared};
  else throw UsageError("--mode must be own, shared or both, got '" + mode + "'");
  s.maxPrompts = static_cast<int>(a.getInt("max-prompts", 0));
  s.decoding = decodingFrom(a);
  const long long seed = a.getInt("seed", 0);
  if (seed < 0) throw UsageError("--seed must be >= 0, got " + std::to_string(seed));
  s.seed = static_cast<std::uint64_t>(seed);
  s.device = a.get("device", "cpu");
  s.dtype = a.get("dtype", "float32");
  const ActivationSparsityArgs sparsity = activationSparsityFrom(a);
  s.activationSparsity = sparsity.sparsity;
  s.activationThresholds = sparsity.thresholds;
  const bool asJson = a.has("json");
  const bool tty = !asJson && ::isatty(STDERR_FILENO);

  const gpu::DriftResult r = gpu::analyzeDrift(s, ttyProgress(tty));
  if (tty) std::fprintf(stderr, "\r%-80s\r", "");
  std::string written;
  if (a.has("out")) written = gpu::writeDriftRun(r, a.get("out"), a.has("overwrite")).string();

  if (asJson) {
    json models = json::array();
    for (const auto& m : r.models) {
      json curves = json::array();
      for (const auto& c : m.curves) curves.push_back(curvesJson(c));
      models.push_back({{"label", m.label}, {"dir", m.dir.string()}, {"curves", curves}});
    }
    json j = {{"analysis", "drift"},
              {"dense", s.dense.string()},
              {"prompts", r.prompts},
              {"steps", s.steps},
              {"activation_sparsity", s.activationSparsity},
              {"activation_thresholds", s.activationThresholds.string()},
              {"activation_thresholds_run_id", r.activationThresholdsRunId},
              {"layers", r.layers},
              {"temperature", s.decoding.temperature},
              {"top_k", s.decoding.topK},
              {"top_p", s.decoding.topP},
              {"seed", s.seed},
              {"decoding", s.decoding.describe()},
              {"warnings", r.warnings},
              {"notes", r.notes},
              {"seconds", r.seconds},
              {"models", models}};
    if (!written.empty()) j["out"] = written;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "dense: " << s.dense.string() << "; " << r.prompts << " prompts, " << s.steps << " decode steps, seed "
            << s.seed << "\n";
  printDecoding(std::cout, s.decoding, {});
  printActivationSparsity(std::cout, sparsity, r.activationThresholdsRunId, "the pruned models");
  printChecks(std::cout, r.warnings, r.notes);
  std::cout << "activation: attention input of each layer (what q/k/v_proj read); "
               "ratio = ||a_pruned - a_dense|| / ||a_dense||\n";
  for (const auto& m : r.models)
    for (const auto& c : m.curves) {
      std::cout << "\n" << m.label << ", " << gpu::driftModeName(c.mode) << " trajectory\n";
      std::printf("  %5s %10s %8s\n", "LAYER", "PLATEAU", "STEP90");
      for (int l = 0; l < c.layers; ++l)
        std::printf("  %5d %10s %8d\n", l, fmt("%.4f", c.summary.plateau[static_cast<std::size_t>(l)]).c_str(),
                    c.summary.step90[static_cast<std::size_t>(l)]);
      std::printf("  median across layers (q1-q3) at steps:");
      for (const int t : {0, 1, 3, 7, 15, 31, 63, 127, 255, 511})
        if (t < c.steps)
          std::printf(" %d: %s (%s-%s)", t, fmt("%.3f", c.summary.median[static_cast<std::size_t>(t)]).c_str(),
                      fmt("%.3f", c.summary.q1[static_cast<std::size_t>(t)]).c_str(),
                      fmt("%.3f", c.summary.q3[static_cast<std::size_t>(t)]).c_str());
      std::printf("\n");
      std::fflush(stdout);
    }
  if (!written.empty()) std::cout << "\ndrift written to " << written << "\n";
  return 0;
}

}  // namespace sdw::cli
