// sdw-cli study: the paper's comparison as a grid (gpu/study.h) — calibration
// source x decoding x solver x pattern x seed — with epsilon and on-policy
// quality per cell, 95% confidence intervals over the seeds, one study run
// file, and a resumable work folder.

#include "app/cli/cli_util.h"
#include "app/cli/command.h"
#include "gpu/study.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace sdw::cli {

namespace {

using nlohmann::json;

std::string ci(const stats::MeanCi& m, const char* f) {
  if (std::isnan(m.mean)) return "n/a";
  char a[64], b[64];
  std::snprintf(a, sizeof a, f, m.mean);
  if (m.n < 2) return a;
  std::snprintf(b, sizeof b, f, m.halfWidth);
  return std::string(a) + " ± " + b;
}

json ciJson(const stats::MeanCi& m) {
  return {{"mean", std::isnan(m.mean) ? json(nullptr) : json(m.mean)}, {"ci95", m.halfWidth}, {"n", m.n}};
}

json studyJson(const gpu::StudyResult& r) {
  json cells = json::array();
  for (const auto& c : r.cells)
    cells.push_back({{"source", c.source},
                     {"decoding", c.decoding},
                     {"solver", c.solver},
                     {"pattern", c.pattern},
                     {"kl", ciJson(c.kl)},
                     {"agreement", ciJson(c.agreement)},
                     {"first_divergence", ciJson(c.firstDivergence)},
                     {"ppl_dense_gen", ciJson(c.pplDenseGen)},
                     {"ppl_text", ciJson(c.pplText)},
                     {"mean_rel_error", ciJson(c.meanRelError)}});
  json eps = json::array();
  for (const auto& e : r.epsilonCells)
    eps.push_back({{"source", e.source},
                   {"decoding", e.decoding},
                   {"share_lower", ciJson(e.shareLower)},
                   {"median_ratio", ciJson(e.medianRatio)}});
  return {{"cells", cells},
          {"epsilon", eps},
          {"seconds", r.seconds},
          {"steps_reused", r.stepsReused},
          {"work_dir", r.workDir.string()}};
}

void printStudy(const gpu::StudyResult& r) {
  std::cout << "epsilon: share of modules where eps(source) < eps(fixed), median eps(fixed)/eps(source)\n";
  std::printf("%-12s %-9s %22s %22s\n", "SOURCE", "DECODING", "SHARE LOWER", "MEDIAN RATIO");
  for (const auto& e : r.epsilonCells)
    std::printf("%-12s %-9s %22s %22s\n", e.source.c_str(), e.decoding.c_str(), ci(e.shareLower, "%.3f").c_str(),
                ci(e.medianRatio, "%.3f").c_str());
  std::cout << "\non-policy quality against the dense model (decoded as the cell's decoding)\n";
  std::printf("%-12s %-9s %-10s %-15s %20s %20s %20s %16s\n", "SOURCE", "DECODING", "SOLVER", "PATTERN", "KL",
              "AGREEMENT", "PPL(DENSE GEN)", "1ST DIV");
  for (const auto& c : r.cells)
    std::printf("%-12s %-9s %-10s %-15s %21s %21s %21s %17s\n", c.source.c_str(), c.decoding.c_str(),
                c.solver.c_str(), c.pattern.c_str(), ci(c.kl, "%.4f").c_str(), ci(c.agreement, "%.3f").c_str(),
                ci(c.pplDenseGen, "%.2f").c_str(), ci(c.firstDivergence, "%.1f").c_str());
  std::cout << "\n(mean ± half-width of the 95% confidence interval over seeds, Student's t)\n";
}

int runStudyCommand(const Args& a) {
  if (a.has("show")) {  // print a study file written before
    const gpu::StudyResult r = gpu::readStudy(a.get("show"));
    if (a.has("json")) std::cout << studyJson(r).dump(2) << "\n";
    else printStudy(r);
    return 0;
  }
  if (!a.has("out")) throw UsageError("--out STUDY.sdw.h5 is required");
  gpu::StudySettings s;
  s.model = a.get("model");
  s.crossModel = a.get("cross-model");
  s.corpus = a.get("corpus");
  s.prompts = a.get("prompts");
  s.heldoutPrompts = a.get("heldout-prompts");
  s.heldoutText = a.get("heldout-text");
  s.sources.clear();
  for (const auto& src : splitComma(a.get("sources"))) s.sources.push_back(gpu::parseCalibrationSource(src));
  if (!s.crossModel.empty() &&
      std::find(s.sources.begin(), s.sources.end(), gpu::CalibrationSource::CrossModel) == s.sources.end())
    s.sources.push_back(gpu::CalibrationSource::CrossModel);
  s.decodings.clear();
  try {
    for (const auto& d : splitComma(a.get("decodings"))) s.decodings.push_back(gpu::parseStudyDecoding(d));
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--decodings: ") + e.what());
  }
  s.solvers.clear();
  for (const auto& m : splitComma(a.get("solvers"))) s.solvers.push_back(gpu::parsePruneMethod(m));
  s.patterns = splitComma(a.get("patterns"));
  s.seeds = parseSeeds(a.get("seeds"));
  s.tokens = a.getInt("tokens", 20000);
  s.referenceTokens = a.getInt("reference-tokens", 10000);
  s.maxNewTokens = static_cast<int>(a.getInt("max-new-tokens", 256));
  s.epsilonK = static_cast<int>(a.getInt("k", 64));
  s.evalMaxNewTokens = static_cast<int>(a.getInt("eval-max-new-tokens", 64));
  s.evalPrompts = static_cast<int>(a.getInt("eval-prompts", 0));
  s.evalWindows = static_cast<int>(a.getInt("eval-windows", 16));
  s.device = a.get("device", "cpu");
  s.dtype = a.get("dtype", "float32");
  s.workDir = a.get("work");
  const bool asJson = a.has("json");
  const bool tty = !asJson && ::isatty(STDERR_FILENO);
  if (!asJson)
    std::cerr << "study: " << gpu::studySteps(s) << " steps (calibrations, references, epsilon, prunings, "
              << "evaluations); finished ones in the work folder are reused\n";
  gpu::StudyResult r;
  try {
    r = gpu::runStudy(s, a.get("out"), ttyProgress(tty));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (tty) std::fprintf(stderr, "\r%-80s\r", "");
  const auto written = gpu::writeStudy(r, a.get("out"), a.has("overwrite"));
  if (asJson) {
    json j = studyJson(r);
    j["out"] = written.string();
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  printStudy(r);
  std::cout << "\nstudy written to " << written.string() << " (" << r.stepsReused << " steps reused from "
            << r.workDir.string() << ")\n";
  return 0;
}

const Register reg{Command{
    "study",
    "the fixed-text vs AR comparison as a grid over sources, decodings, solvers, patterns and seeds",
    "study --out STUDY.sdw.h5 [--model DIR] [--cross-model DIR] [--sources fixed,ar] [--decodings greedy,sampled] "
    "[--solvers sparsegpt,wanda] [--patterns 2:4,4:8,unstructured50] [--seeds 0,1,2] [--tokens N] [--device D] "
    "[--json] | study --show STUDY.sdw.h5",
    "Per seed and decoding: calibrates the model from fixed text and from its own decoding (and a\n"
    "second model's, with --cross-model) with equal budgets, builds a decode-time reference on the\n"
    "held-out prompts decoded the same way, measures epsilon of each source against fixed text,\n"
    "prunes with each solver and pattern, and evaluates every pruned model on-policy with the\n"
    "same decoding (KL, agreement, first divergence, perplexity of dense generations). Cells are\n"
    "summarised over the seeds with 95% confidence intervals. Intermediate runs stay in the work\n"
    "folder (<out>.work): run the same command again to resume after a cancel.",
    {{"out", "RUN", "the study run file to write (*.sdw.h5)", ""},
     {"show", "RUN", "print a study file instead of running one", ""},
     {"model", "DIR", "the dense checkpoint", SDW_SOURCE_DIR "/samples/model/brown-llama"},
     {"cross-model", "DIR", "a second model whose generations calibrate the first (adds source cross-model)", ""},
     {"corpus", "F", "fixed-text corpus", SDW_SOURCE_DIR "/samples/corpus/brown-calib.txt"},
     {"prompts", "F", "calibration prompts (.jsonl)", SDW_SOURCE_DIR "/samples/prompts/brown-calib.jsonl"},
     {"heldout-prompts", "F", "held-out prompts: reference and evaluation", SDW_SOURCE_DIR "/samples/prompts/brown-heldout.jsonl"},
     {"heldout-text", "F", "held-out text for perplexity", SDW_SOURCE_DIR "/samples/corpus/brown-heldout.txt"},
     {"sources", "LIST", "calibration sources: fixed, ar, cross-model", "fixed,ar"},
     {"decodings", "LIST", "greedy, sampled (T = 1), tN.N", "greedy,sampled"},
     {"solvers", "LIST", "sparsegpt, wanda, magnitude", "sparsegpt,wanda"},
     {"patterns", "LIST", "2:4, 4:8, 8:16, 16:32, unstructured50", "2:4,4:8,unstructured50"},
     {"seeds", "LIST", "seeds (calibration draws and sampling, evaluation)", "0,1,2"},
     {"tokens", "N", "calibration budget of each source", "20000"},
     {"reference-tokens", "N", "decode tokens of the held-out reference", "10000"},
     {"max-new-tokens", "N", "generation length of AR calibration and the reference", "256"},
     {"k", "K", "top-k directions of the reference for epsilon", "64"},
     {"eval-max-new-tokens", "N", "tokens decoded per held-out prompt in evaluation", "64"},
     {"eval-prompts", "N", "use the first N held-out prompts (0: all)", "0"},
     {"eval-windows", "N", "held-out text windows for perplexity", "16"},
     {"device", "DEV", "cpu, cuda or cuda:N", "cpu"},
     {"dtype", "T", "float32, bfloat16 or float16", "float32"},
     {"work", "DIR", "work folder for the intermediate runs (default <out>.work)", ""},
     {"overwrite", "", "replace the study file if it exists", ""},
     {"json", "", "machine-readable output", ""}},
    0,
    0,
    runStudyCommand}};

}  // namespace

}  // namespace sdw::cli
