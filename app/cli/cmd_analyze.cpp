// sdw-cli analyze MODE: analyses over run files. Modes live in the table
// kModes below (name, options, handler); a new analysis adds one entry. The
// `analyze` command accepts the union of the modes' options and checks that
// those given belong to the chosen mode.
//
// analyze epsilon: the calibration discrepancy eps_k of calibration runs
// against a decode-time reference run (DESIGN §1, gpu/epsilon_analysis.h).
// analyze activation-thresholds: the run-time activation thresholds a
// calibration run's samples set at p_x (gpu/activation_thresholds.h).

#include "app/cli/cli_util.h"
#include "app/cli/command_modes.h"
#include "gpu/activation_thresholds.h"
#include "gpu/epsilon_analysis.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <set>

namespace sdw::cli {

// analyze drift: defined in cmd_eval.cpp (gpu/drift.h).
std::vector<OptionSpec> analyzeDriftOptions();
int runAnalyzeDrift(const Args& a);

namespace {

using nlohmann::json;

// ------------------------------------------------------------------ epsilon

// Column labels: eps(<source>), made unique when two runs share a source.
std::vector<std::string> runLabels(const std::vector<gpu::EpsilonRunInfo>& runs) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < runs.size(); ++i)
    labels.push_back(runs[i].source.empty() ? "run" + std::to_string(i) : runs[i].source);
  const std::vector<std::string> plain = labels;
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (std::count(plain.begin(), plain.end(), plain[i]) > 1) labels[i] += "#" + std::to_string(i);
  return labels;
}

json runJson(const gpu::EpsilonRunInfo& r) {
  json j = {{"path", r.path.string()}, {"run_id", r.runId},     {"status", r.status},
            {"source", r.source},      {"storage", r.storage},  {"model_dir", r.modelDir},
            {"tokens", r.tokens},      {"approximate", r.approximate()}};
  const RunDecoding& d = r.decoding;
  j["decoding"] = d.decodes ? json{{"temperature", d.decoding.temperature},
                                   {"top_k", d.decoding.topK},
                                   {"top_p", d.decoding.topP},
                                   {"describe", d.decoding.describe()}}
                            : json(nullptr);
  j["prompts"] = d.prompts.string();
  j["noise_unavailable"] = r.hasNoise() ? json(nullptr) : json(r.noiseUnavailable);
  return j;
}

json resultJson(const gpu::EpsilonResult& r, const std::vector<std::string>& labels) {
  json runs = json::array();
  for (const auto& run : r.runs) runs.push_back(runJson(run));
  json inputs = json::array();
  for (const auto& in : r.inputs) {
    json spectra = json::array();
    for (const auto& s : in.runSpectra) spectra.push_back(s);
    inputs.push_back({{"name", in.name},
                      {"modules", in.modules},
                      {"layer", in.layer},
                      {"d_in", in.dIn},
                      {"k_used", in.kUsed},
                      {"eps", in.eps},
                      {"noise", in.noise},
                      {"reference_noise", in.referenceNoise},
                      {"spectrum_reference", in.referenceSpectrum},
                      {"spectrum_runs", spectra}});
  }
  json modules = json::array();
  for (const auto& m : r.modules)
    modules.push_back({{"module", m.module}, {"layer", m.layer}, {"input", m.input}, {"eps", m.eps}, {"ratio", m.ratio},
                       {"noise", m.noise},
                       {"beyond_noise", m.beyondNoise < 0 ? json(nullptr) : json(m.beyondNoise == 1)}});
  const auto& s = r.summary;
  json summary = {{"numerator_run", s.numeratorRun}, {"denominator_run", s.denominatorRun}};
  if (s.numeratorRun >= 0) {
    summary["numerator"] = labels[static_cast<std::size_t>(s.numeratorRun)];
    summary["denominator"] = labels[static_cast<std::size_t>(s.denominatorRun)];
    summary["n_modules"] = s.modules;
    summary["n_ar_lower"] = s.arLower;
    summary["share_ar_lower"] = s.shareArLower;
    summary["median_ratio"] = s.medianRatio;
    summary["ratio_q1"] = s.ratioQ1;
    summary["ratio_q3"] = s.ratioQ3;
    summary["n_noise_modules"] = s.noise.modules;
    summary["n_beyond_noise"] = s.noise.beyond;
    summary["n_ar_lower_beyond_noise"] = s.noise.arLowerBeyond;
  }
  return {{"analysis", "epsilon"}, {"reference", runJson(r.reference)}, {"runs", runs},
          {"run_labels", labels},  {"k", r.kRequested},                 {"rel_tol", r.relTol},
          {"device", r.device},    {"precision", r.precision},          {"approximate", r.anyApproximate()},
          {"inputs", inputs},      {"modules", modules},                {"summary", summary},
          {"warnings", r.warnings}, {"notes", r.notes}};
}

// "AR lower on 87.5% of modules (14/16), median ratio eps(fixed)/eps(AR) = 1.81"
std::string summaryLine(const gpu::EpsilonResult& r, const std::vector<std::string>& labels) {
  const auto& s = r.summary;
  if (s.numeratorRun < 0) return "one run: no ratio (give a fixed-text and an AR run to compare)";
  const auto num = static_cast<std::size_t>(s.numeratorRun), den = static_cast<std::size_t>(s.denominatorRun);
  const std::string denName = r.runs[den].source == "ar" ? "AR" : labels[den];
  const std::string numName = labels[num];
  std::string line = denName + " lower on " + fmt("%.1f", 100.0 * s.shareArLower) + "% of modules (" +
                     std::to_string(s.arLower) + "/" + std::to_string(s.modules) + "), median ratio eps(" +
                     numName + ")/eps(" + denName + ") = " + fmt("%.3g", s.medianRatio);
  line += " (quartiles " + fmt("%.3g", s.ratioQ1) + " - " + fmt("%.3g", s.ratioQ3) + ")";
  // How many of those differences are larger than both runs' noise floors.
  if (s.noise.modules > 0) {
    line += "; " + std::to_string(s.noise.beyond) + " of " + std::to_string(s.noise.modules) +
            " differ beyond the noise floor (" + denName + " lower on " + std::to_string(s.noise.arLowerBeyond) + ")";
  } else {
    const auto& why = !r.runs[num].hasNoise() ? r.runs[num].noiseUnavailable : r.runs[den].noiseUnavailable;
    line += "; noise floor unavailable" + (why.empty() ? std::string() : ": " + why);
  }
  return line;
}

void printRun(const char* role, const gpu::EpsilonRunInfo& r) {
  std::cout << role << r.path.string() << "\n    run " << r.runId << ", source "
            << (r.source.empty() ? "?" : r.source) << ", storage " << r.storage << ", " << r.tokens << " tokens"
            << (r.status == "complete" ? "" : ", status " + r.status) << "\n";
  if (!r.hasNoise()) std::cout << "    noise floor unavailable: " << r.noiseUnavailable << "\n";
  const RunDecoding& d = r.decoding;
  if (d.decodes)
    std::cout << "    decoded " << d.decoding.describe() << " from "
              << (d.prompts.empty() ? std::string("(prompts not recorded)") : d.prompts.filename().string()) << "\n";
}

int runEpsilon(const Args& a) {
  gpu::EpsilonSettings s;
  if (!a.has("reference")) throw UsageError("--reference RUN is required");
  if (!a.has("runs")) throw UsageError("--runs RUN [RUN...] is required");
  s.reference = a.get("reference");
  for (const auto& p : a.getList("runs")) s.runs.push_back(p);
  const long long k = a.getInt("k", 64);
  if (k < 1 || k > 1'000'000) throw UsageError("--k must be >= 1, got " + std::to_string(k));
  s.k = static_cast<int>(k);
  s.device = a.get("device", "cpu");
  const std::string prec = a.get("precision", "fp64");
  if (prec != "fp64" && prec != "fp32") throw UsageError("--precision must be fp64 or fp32, got '" + prec + "'");
  s.precision = prec == "fp64" ? gpu::EigenPrecision::Fp64 : gpu::EigenPrecision::Fp32;
  if (a.has("rel-tol")) {
    try {
      s.relTol = std::stod(a.get("rel-tol"));
    } catch (const std::exception&) {
      throw UsageError("--rel-tol expects a number, got '" + a.get("rel-tol") + "'");
    }
  }
  const bool asJson = a.has("json");
  const bool tty = !asJson && ::isatty(STDERR_FILENO);

  const gpu::EpsilonResult r = gpu::analyzeEpsilon(s, [&](const Progress& p) {
    if (tty) std::fprintf(stderr, "\r  input %3.0f / %.0f  %-48s", p.done, p.total, p.stage.c_str());
    return true;
  });
  if (tty) std::fprintf(stderr, "\r%-80s\r", "");

  std::string written;
  if (a.has("out")) written = gpu::writeEpsilonAnalysis(r, a.get("out"), a.has("overwrite")).string();

  const auto labels = runLabels(r.runs);
  if (asJson) {
    json j = resultJson(r, labels);
    j["summary_line"] = summaryLine(r, labels);
    if (!written.empty()) j["out"] = written;
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  printRun("reference: ", r.reference);
  for (std::size_t i = 0; i < r.runs.size(); ++i) printRun(("run " + std::to_string(i) + ":     ").c_str(), r.runs[i]);
  std::cout << "k = " << r.kRequested << " (" << r.precision << " on " << r.device << ", dead directions below "
            << fmt("%.0e", r.relTol) << " x lambda_max left out)\n";
  std::cout << "noise(X): the eps between two runs of X's process at X's budget, from X's two halves; BEYOND: the "
               "eps differ by more than (noise + noise) / sqrt(2) (docs/epsilon.md)\n\n";

  std::size_t nameWidth = 6;
  for (const auto& m : r.modules) nameWidth = std::max(nameWidth, m.module.size());
  const bool withRatio = r.summary.numeratorRun >= 0;
  std::printf("%-*s %5s %5s", static_cast<int>(nameWidth), "MODULE", "LAYER", "K");
  // Each eps with its noise floor: the eps two runs of that process show at its budget.
  for (const auto& l : labels) std::printf(" %12s %12s", ("eps(" + l + ")").c_str(), ("noise(" + l + ")").c_str());
  if (withRatio) std::printf(" %8s %6s", "RATIO", "BEYOND");
  std::printf("\n");
  for (const auto& m : r.modules) {
    const int kUsed = r.inputs[static_cast<std::size_t>(m.input)].kUsed;
    std::printf("%-*s %5d %5d", static_cast<int>(nameWidth), m.module.c_str(), m.layer, kUsed);
    for (std::size_t j = 0; j < m.eps.size(); ++j)
      std::printf(" %12s %12s", fmt("%.4g", m.eps[j]).c_str(), fmt("%.3g", m.noise[j]).c_str());
    if (withRatio)
      std::printf(" %8s %6s", fmt("%.3f", m.ratio).c_str(), m.beyondNoise < 0 ? "-" : m.beyondNoise ? "yes" : "no");
    std::printf("\n");
  }
  std::fflush(stdout);
  std::cout << "\n" << summaryLine(r, labels) << "\n";
  {
    // The reference is a sample too: eps cannot be read finer than its own noise.
    std::vector<double> refNoise;
    for (const auto& in : r.inputs) refNoise.push_back(in.referenceNoise);
    if (r.reference.hasNoise())
      std::cout << "reference noise floor: median " << fmt("%.3g", epsilon::median(refNoise)) << " over inputs ("
                << fmt("%.3g", epsilon::quantile(refNoise, 0.0)) << " - " << fmt("%.3g", epsilon::quantile(refNoise, 1.0))
                << ")\n";
    else
      std::cout << "reference noise floor unavailable: " << r.reference.noiseUnavailable << "\n";
  }
  for (const auto& w : r.warnings) std::cout << "warning: " << w << "\n";
  for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
  if (r.reference.approximate())
    std::cout << "note: the reference stores only top-k eigenpairs; k is limited to those\n";
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    if (r.runs[i].approximate())
      std::cout << "note: run " << i << " stores only top-k eigenpairs: its eps uses H_C ~ V M V^T (approximate)\n";
    if (r.runs[i].status != "complete") std::cout << "note: run " << i << " is incomplete\n";
  }
  if (!written.empty()) std::cout << "analysis written to " << written << "\n";
  return 0;
}

// ----------------------------------------------------- activation-thresholds

int runActivationThresholds(const Args& a) {
  if (!a.has("calibration")) throw UsageError("--calibration RUN is required");
  if (!a.has("activation-sparsity")) throw UsageError("--activation-sparsity P is required");
  const double p = activationSparsityFrom(a).sparsity;
  const gpu::ActivationThresholds t = gpu::activationThresholdsFromRun(a.get("calibration"), p);
  if (a.has("json")) {
    json inputs = json::array();
    for (const auto& in : t.inputs)
      inputs.push_back({{"name", in.name},           {"layer", in.layer},
                        {"input", gpu::projectionInputName(in.input)}, {"d_in", in.dIn},
                        {"activation_sparsity", in.sparsity}, {"threshold", in.threshold},
                        {"fraction_below", in.achieved}, {"entries", in.entries}});
    const json j = {{"analysis", "activation-thresholds"}, {"calibration", t.run.string()}, {"run_id", t.runId},
                    {"rows", t.rows},   {"layers", t.layers}, {"activation_sparsity", p}, {"inputs", inputs}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "calibration: " << t.run.string() << " (run " << t.runId << "), " << t.rows
            << " sample rows per input\n"
            << "p_x " << fmt("%.3g", p) << ": an entry is kept iff |x| > THRESHOLD; BELOW: share of the sampled "
            << "entries at or below it\n\n";
  std::printf("%5s %-8s %6s %12s %8s\n", "LAYER", "INPUT", "D_IN", "THRESHOLD", "BELOW");
  for (const auto& in : t.inputs)
    std::printf("%5d %-8s %6lld %12s %8s\n", in.layer, gpu::projectionInputName(in.input),
                static_cast<long long>(in.dIn), fmt("%.5g", in.threshold).c_str(), fmt("%.4f", in.achieved).c_str());
  return 0;
}

// ------------------------------------------------------------- dispatcher

const std::vector<CommandMode>& modes() {
  static const std::vector<CommandMode> kModes = {
      {"epsilon",
       "calibration discrepancy eps_k of calibration runs against a decode-time reference",
       "analyze epsilon --reference RUN --runs RUN [RUN...] [--k K] [--device cpu|cuda] [--out FILE] [--json]",
       {{"reference", "RUN", "decode-time reference calibration run (held-out prompts)", ""},
        {"runs", "RUN", "calibration runs to compare; more may follow as arguments. With a fixed-text and an AR "
                        "run the ratio is eps(fixed)/eps(AR), else the first over the second", ""},
        {"k", "K", "top eigen-directions of the reference Hessian", "64"},
        {"device", "DEV", "cpu, cuda or cuda:N", "cpu"},
        {"precision", "P", "eigensolver precision: fp64 or fp32", "fp64"},
        {"rel-tol", "X", "reference eigenvalues <= X * lambda_max are dead directions and left out", "1e-6"},
        {"out", "FILE", "write the analysis run (*.sdw.h5) with eps and spectra", ""},
        {"overwrite", "", "replace FILE if it exists", ""},
        {"json", "", "machine-readable output, spectra included", ""}},
       1000,
       runEpsilon},
      {"drift",
       "activation drift of pruned models by decode step and layer (own / shared trajectory)",
       "analyze drift --dense DIR --pruned DIR [DIR2] --prompts F [--steps 128] [--mode own|shared|both] "
       "[--activation-sparsity P [--activation-thresholds RUN]] [--out RUN] [--json]",
       analyzeDriftOptions(),
       1,
       runAnalyzeDrift},
      {"activation-thresholds",
       "run-time activation thresholds per layer and projection input from a calibration run's samples (TEAL)",
       "analyze activation-thresholds --calibration RUN --activation-sparsity P [--json]",
       {{"calibration", "RUN", "calibration run with activation samples (calibrate --sample-rows N)", ""},
        {"activation-sparsity", "P", "p_x in [0, 1): the share of each input's sampled entries below its threshold",
         ""},
        {"json", "", "machine-readable output", ""}},
       0,
       runActivationThresholds},
  };
  return kModes;
}

int runAnalyze(const Args& a) { return runMode(modes(), a, "analyze", "analysis"); }

Command makeCommand() {
  Command c{"analyze", "analyses of run files (modes: " + modeNames(modes()) + ")", "analyze MODE [OPTIONS]",
            "Runs an analysis over run files; MODE picks it. Options belong to one mode each.\n\nmodes:", {},
            0, 1 + 1000, runAnalyze};  // a missing MODE is reported by runAnalyze, naming the modes
  std::set<std::string> seen;
  for (const auto& m : modes()) {
    c.description += "\n  " + m.name + ": " + m.summary + "\n    usage: sdw-cli " + m.usage;
    for (const auto& o : m.options)
      if (seen.insert(o.name).second) {
        OptionSpec shown = o;
        shown.defaultValue.clear();  // defaults are applied per mode
        shown.help = "[" + m.name + "] " + o.help + (o.defaultValue.empty() ? "" : " (default: " + o.defaultValue + ")");
        c.options.push_back(shown);
      }
  }
  c.description +=
      "\n\nepsilon: for every projection input, the top-k eigenpairs of the reference Hessian H_D,\n"
      "eps_k(C) = ||L_k^-1/2 U_k^T H_C U_k L_k^-1/2 - I||_op for each run C (0: C matches decode\n"
      "time in those directions), per-module rows and ratio, the share of modules where AR is\n"
      "lower and the median ratio. Next to each eps its noise floor: the eps two runs of the same\n"
      "process show at that budget, from the run's two half statistics, and how many modules\n"
      "differ beyond the floors, |eps(C) - eps(AR)| > (noise(C) + noise(AR)) / sqrt(2). Errors\n"
      "(exit 1): a file that is not a calibration run, runs of different models, a missing input.";
  return c;
}

const Register reg{makeCommand()};

}  // namespace
}  // namespace sdw::cli
