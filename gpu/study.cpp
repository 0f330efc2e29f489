#include "gpu/study.h"
#include "core/json_limits.h"

#include "core/epsilon.h"
#include "core/runstore.h"
#include "gpu/calibration.h"
#include "gpu/epsilon_analysis.h"
#include "gpu/evaluation.h"
#include "gpu/pruning.h"
#include "gpu/pruning_run.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

namespace sdw::gpu {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool isFixed(CalibrationSource source) { return source == CalibrationSource::Fixed; }

// Intermediate names: fixed-text runs do not depend on the decoding.
std::string calibName(CalibrationSource source, const std::string& decoding, std::uint64_t seed) {
  return "calib-" + calibrationSourceName(source) + (isFixed(source) ? "" : "-" + decoding) + "-s" + std::to_string(seed);
}
std::string prunedName(CalibrationSource source, const std::string& decoding, PruneMethod solver,
                       const std::string& pattern, std::uint64_t seed) {
  std::string p = pattern;
  for (char& c : p)
    if (c == ':') c = '-';
  return calibName(source, decoding, seed) + "-" + pruneMethodName(solver) + "-" + p;
}

bool completeRun(const fs::path& p) {
  if (!fs::exists(p)) return false;
  try {
    return runstore::RunReader::open(p).status() == runstore::kStatusComplete;
  } catch (const std::exception&) {
    return false;
  }
}

// Finished epsilon and evaluation steps, one JSON object per line, appended
// as each step ends: what a resume skips. A torn last line (a crash while
// writing it) is ignored.
class DoneLog {
 public:
  explicit DoneLog(fs::path path) : path_(std::move(path)) {
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) {
      try {
        json j = parseJsonBounded(line, path_.string());
        done_[j.at("key").get<std::string>()] = j;
      } catch (const std::exception&) {
      }
    }
  }
  const json* find(const std::string& key) const {
    auto it = done_.find(key);
    return it == done_.end() ? nullptr : &it->second;
  }
  void add(const std::string& key, json j) {
    j["key"] = key;
    std::ofstream out(path_, std::ios::app);
    out << j.dump() << "\n";
    out.flush();
    if (!out) throw std::runtime_error("cannot append to " + path_.string() + " (disk full?)");
    done_[key] = std::move(j);
  }

 private:
  fs::path path_;
  std::map<std::string, json> done_;
};

void validate(const StudySettings& s) {
  auto need = [](const fs::path& p, const char* what) {
    if (p.empty()) throw std::invalid_argument(std::string("study: ") + what + " is required");
    if (!fs::exists(p)) throw std::invalid_argument(std::string("study: ") + what + " not found: " + p.string());
  };
  need(s.model, "the model (--model)");
  need(s.prompts, "the calibration prompts (--prompts)");
  need(s.heldoutPrompts, "the held-out prompts (--heldout-prompts)");
  need(s.heldoutText, "the held-out text (--heldout-text)");
  bool fixed = false;
  for (const CalibrationSource src : s.sources) {
    if (src == CalibrationSource::Fixed) fixed = true;
    else if (src == CalibrationSource::CrossModel) need(s.crossModel, "the second model (--cross-model)");
  }
  if (!fixed) throw std::invalid_argument("study: the sources must include fixed (every comparison is against it)");
  need(s.corpus, "the fixed-text corpus (--corpus)");
  if (s.sources.size() < 2) throw std::invalid_argument("study: give fixed and at least one other source");
  if (s.decodings.empty() || s.solvers.empty() || s.patterns.empty() || s.seeds.empty())
    throw std::invalid_argument("study: every axis of the grid needs at least one value");
  for (const auto& p : s.patterns) parsePruningPattern(p);  // throws with the reason
  if (s.tokens < 1 || s.referenceTokens < 1) throw std::invalid_argument("study: token budgets must be >= 1");
}

struct Runner {
  const StudySettings& s;
  fs::path work;
  const ProgressFn& progress;
  StudyResult& r;
  DoneLog log;
  int step = 0;
  int total = 0;
  std::map<fs::path, double> pruned;  // this run's checkpoints and their mean relative error

  void tick(const std::string& what) {
    reportOrThrow(progress, Progress(step, total, "steps", what));
  }
  void finished() { ++step; }
  void reused() {
    ++r.stepsReused;
    ++step;
  }

  // One calibration step: reused when complete, continued when a stopped
  // study left it incomplete, else run.
  fs::path calibrate(const fs::path& out, const std::string& what, const CalibrationSettings& c) {
    if (completeRun(out)) {
      reused();
      return out;
    }
    tick(what);
    if (fs::exists(out)) resumeCalibration(out, {}, {}, s.device);
    else runCalibration(c, out);
    finished();
    return out;
  }

  // What every calibration of the study shares: model, budgets, device, decoding.
  CalibrationSettings base(const StudyDecoding& dec, std::uint64_t seed) const {
    CalibrationSettings c;
    c.model = s.model;
    c.maxNewTokens = s.maxNewTokens;
    c.batch = s.batch;
    c.sampling.temperature = dec.temperature;
    c.sampling.topK = dec.topK;
    c.sampling.topP = dec.topP;
    c.seed = seed;
    c.device = s.device;
    c.dtype = s.dtype;
    return c;
  }

  fs::path calibration(CalibrationSource source, const StudyDecoding& dec, std::uint64_t seed) {
    CalibrationSettings c = base(dec, seed);
    c.source = source;
    c.corpus = s.corpus;
    c.prompts = s.prompts;
    c.crossModel = s.crossModel;
    c.tokenBudget = s.tokens;
    c.window = s.window;
    const std::string name = calibName(source, dec.name, seed);
    return calibrate(work / (name + ".sdw.h5"), "calibrate " + name, c);
  }

  fs::path reference(const StudyDecoding& dec, std::uint64_t seed) {
    CalibrationSettings c = base(dec, seed + 1000);  // a reference never shares its draws with a calibration run
    c.source = CalibrationSource::Ar;
    c.prompts = s.heldoutPrompts;
    c.tokenBudget = s.referenceTokens;
    const std::string name = "reference-" + dec.name + "-s" + std::to_string(seed);
    return calibrate(work / (name + ".sdw.h5"), name, c);
  }

  void epsilon(const StudyDecoding& dec, std::uint64_t seed, const fs::path& ref,
               const std::map<CalibrationSource, fs::path>& calib) {
    const std::string key = "eps|" + dec.name + "|" + std::to_string(seed);
    if (const json* j = log.find(key)) {
      for (const auto& row : j->at("rows")) {
        StudyEpsilonRow e;
        e.source = row.at("source");
        e.decoding = dec.name;
        e.seed = seed;
        e.modules = row.at("modules");
        e.lower = row.at("lower");
        e.shareLower = row.at("share_lower");
        e.medianRatio = row.at("median_ratio");
        e.medianEps = row.at("median_eps");
        e.medianEpsFixed = row.at("median_eps_fixed");
        r.epsilonRows.push_back(e);
      }
      reused();
      return;
    }
    tick("epsilon " + dec.name + " seed " + std::to_string(seed));
    EpsilonSettings es;
    es.reference = ref;
    es.k = s.epsilonK;
    es.device = s.device;
    std::vector<CalibrationSource> order;
    for (const CalibrationSource src : s.sources) {
      es.runs.push_back(calib.at(src));
      order.push_back(src);
    }
    const EpsilonResult er = analyzeEpsilon(es);
    const std::size_t fixedIdx = 0;  // validate() keeps "fixed" first in `sources`
    json rows = json::array();
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (i == fixedIdx) continue;
      StudyEpsilonRow e;
      e.source = calibrationSourceName(order[i]);
      e.decoding = dec.name;
      e.seed = seed;
      std::vector<double> ratios, eps, epsFixed;
      for (const auto& m : er.modules) {
        const double a = m.eps[fixedIdx], b = m.eps[i];
        if (std::isnan(a) || std::isnan(b)) continue;
        ++e.modules;
        if (b < a) ++e.lower;
        if (b > 0) ratios.push_back(a / b);
        eps.push_back(b);
        epsFixed.push_back(a);
      }
      e.shareLower = e.modules ? static_cast<double>(e.lower) / e.modules : kNaN;
      e.medianRatio = ratios.empty() ? kNaN : epsilon::median(ratios);
      e.medianEps = eps.empty() ? kNaN : epsilon::median(eps);
      e.medianEpsFixed = epsFixed.empty() ? kNaN : epsilon::median(epsFixed);
      r.epsilonRows.push_back(e);
      rows.push_back({{"source", e.source},
                      {"modules", e.modules},
                      {"lower", e.lower},
                      {"share_lower", e.shareLower},
                      {"median_ratio", e.medianRatio},
                      {"median_eps", e.medianEps},
                      {"median_eps_fixed", e.medianEpsFixed}});
    }
    log.add(key, {{"rows", rows}});
    finished();
  }

  // The pruned checkpoint and its mean relative output error.
  std::pair<fs::path, double> prune(CalibrationSource source, const StudyDecoding& dec, PruneMethod solver,
                                    const std::string& pattern, std::uint64_t seed, const fs::path& calib) {
    const fs::path dir = work / "pruned" / prunedName(source, dec.name, solver, pattern, seed);
    // A fixed-text model serves every decoding: one step, counted once.
    if (auto it = pruned.find(dir); it != pruned.end()) return {dir, it->second};
    const fs::path record = dir / "pruning.sdw.h5";
    if (!(completeRun(record) && fs::exists(dir / "config.json"))) {
      tick("prune " + prunedName(source, dec.name, solver, pattern, seed));
      PruneSettings p;
      p.model = s.model;
      p.calibration = calib;
      p.method = solver;
      p.pattern = pattern;
      p.device = s.device;
      p.out = dir;
      p.record = record;
      p.overwrite = true;  // a half-written folder from a stopped study
      pruneModel(p);
      finished();
    } else {
      reused();
    }
    const auto rows = readPruningRun(record).result.modules;
    double sum = 0;
    for (const ModulePruneRow& row : rows) sum += row.relOutputError;
    const double mean = rows.empty() ? kNaN : sum / static_cast<double>(rows.size());
    pruned[dir] = mean;
    return {dir, mean};
  }

  void evaluateCell(const StudyDecoding& dec, PruneMethod solverId, const std::string& pattern, std::uint64_t seed,
                    const std::vector<std::pair<CalibrationSource, std::pair<fs::path, double>>>& pruned) {
    const std::string solver = pruneMethodName(solverId);
    const std::string key = "eval|" + dec.name + "|" + solver + "|" + pattern + "|" + std::to_string(seed);
    const json* done = log.find(key);
    json rows = json::array();
    if (done) {
      rows = done->at("rows");
      reused();
    } else {
      tick("evaluate " + dec.name + " " + solver + " " + pattern + " seed " + std::to_string(seed));
      EvaluationSettings es;
      es.dense = s.model;
      for (const auto& [src, p] : pruned) es.models.push_back(p.first);
      es.text = s.heldoutText;
      es.prompts = s.heldoutPrompts;
      es.seeds = {seed};
      es.maxNewTokens = s.evalMaxNewTokens;
      es.windows = s.evalWindows;
      es.maxPrompts = s.evalPrompts;
      es.temperature = dec.temperature;
      es.topK = dec.topK;
      es.topP = dec.topP;
      es.sideBySidePrompts = 0;
      es.device = s.device;
      es.dtype = s.dtype;
      const EvaluationResult er = evaluate(es);
      for (std::size_t i = 0; i < pruned.size(); ++i) {
        const ModelEvaluation& m = er.models.at(i + 1);  // [0] is the dense model
        rows.push_back({{"source", calibrationSourceName(pruned[i].first)},
                        {"kl", m.kl.mean},
                        {"agreement", m.agreement.mean},
                        {"first_divergence", m.firstDivergence.mean},
                        {"ppl_dense_gen", m.pplDenseGen},
                        {"ppl_text", m.pplText},
                        {"mean_rel_error", pruned[i].second.second}});
      }
      log.add(key, {{"rows", rows}});
      finished();
    }
    for (const auto& row : rows) {
      StudySeedRow x;
      x.source = row.at("source");
      x.decoding = dec.name;
      x.solver = solver;
      x.pattern = pattern;
      x.seed = seed;
      x.kl = row.at("kl");
      x.agreement = row.at("agreement");
      x.firstDivergence = row.at("first_divergence");
      x.pplDenseGen = row.at("ppl_dense_gen");
      x.pplText = row.at("ppl_text");
      x.meanRelError = row.at("mean_rel_error");
      r.seedRows.push_back(x);
    }
  }
};

}  // namespace

StudyDecoding parseStudyDecoding(const std::string& name) {
  if (name == "greedy") return {"greedy", 0, 0, 1.0};
  if (name == "sampled") return {"sampled", 1.0, 0, 1.0};
  if (name.size() > 1 && name[0] == 't') {
    try {
      std::size_t used = 0;
      const double t = std::stod(name.substr(1), &used);
      if (used + 1 == name.size() && t >= 0) return {name, t, 0, 1.0};
    } catch (const std::exception&) {
    }
  }
  throw std::invalid_argument("unknown decoding '" + name + "' (use greedy, sampled (T = 1), or tN.N, e.g. t0.8)");
}

int studySteps(const StudySettings& s) {
  const int seeds = static_cast<int>(s.seeds.size()), decs = static_cast<int>(s.decodings.size());
  const int others = static_cast<int>(s.sources.size()) - 1;  // besides fixed
  const int cellsPerSeed = static_cast<int>(s.solvers.size() * s.patterns.size());
  const int calibrations = seeds * (1 + others * decs);
  const int references = seeds * decs;
  const int epsilon = seeds * decs;
  const int prunes = seeds * cellsPerSeed * (1 + others * decs);
  const int evaluations = seeds * decs * cellsPerSeed;
  return calibrations + references + epsilon + prunes + evaluations;
}

StudyResult runStudy(const StudySettings& settingsIn, const fs::path& out, const ProgressFn& progress) {
  StudySettings s = settingsIn;
  // "fixed" first: every comparison is against it.
  std::stable_partition(s.sources.begin(), s.sources.end(), isFixed);
  validate(s);
  const auto t0 = std::chrono::steady_clock::now();
  StudyResult r;
  r.settings = s;
  r.workDir = s.workDir.empty() ? fs::path(out.string() + ".work") : s.workDir;
  fs::create_directories(r.workDir / "pruned");
  Runner run{s, r.workDir, progress, r, DoneLog(r.workDir / "done.jsonl"), 0, studySteps(s), {}};

  for (std::uint64_t seed : s.seeds) {
    const fs::path fixedRun = run.calibration(CalibrationSource::Fixed, s.decodings.front(), seed);
    for (const StudyDecoding& dec : s.decodings) {
      std::map<CalibrationSource, fs::path> calib{{CalibrationSource::Fixed, fixedRun}};
      for (const CalibrationSource src : s.sources)
        if (!isFixed(src)) calib[src] = run.calibration(src, dec, seed);
      const fs::path ref = run.reference(dec, seed);
      run.epsilon(dec, seed, ref, calib);
      for (const PruneMethod solver : s.solvers)
        for (const auto& pattern : s.patterns) {
          std::vector<std::pair<CalibrationSource, std::pair<fs::path, double>>> pruned;
          for (const CalibrationSource src : s.sources)
            pruned.emplace_back(src, run.prune(src, dec, solver, pattern, seed, calib.at(src)));
          run.evaluateCell(dec, solver, pattern, seed, pruned);
        }
    }
  }
  reportOrThrow(progress, Progress(run.total, run.total, "steps", "done"));
  summariseStudy(r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void summariseStudy(StudyResult& r) {
  using CellKey = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<CellKey, std::vector<const StudySeedRow*>> cells;
  std::vector<CellKey> order;
  for (const auto& row : r.seedRows) {
    const CellKey k{row.source, row.decoding, row.solver, row.pattern};
    if (!cells.count(k)) order.push_back(k);
    cells[k].push_back(&row);
  }
  r.cells.clear();
  for (const auto& k : order) {
    const auto& rows = cells[k];
    auto ci = [&rows](double StudySeedRow::*field) {
      std::vector<double> v;
      for (const auto* row : rows) v.push_back(row->*field);
      return stats::meanCi95(v);
    };
    StudyCell c;
    std::tie(c.source, c.decoding, c.solver, c.pattern) = k;
    c.kl = ci(&StudySeedRow::kl);
    c.agreement = ci(&StudySeedRow::agreement);
    c.firstDivergence = ci(&StudySeedRow::firstDivergence);
    c.pplDenseGen = ci(&StudySeedRow::pplDenseGen);
    c.pplText = ci(&StudySeedRow::pplText);
    c.meanRelError = ci(&StudySeedRow::meanRelError);
    r.cells.push_back(c);
  }
  std::map<std::pair<std::string, std::string>, std::vector<const StudyEpsilonRow*>> eps;
  std::vector<std::pair<std::string, std::string>> epsOrder;
  for (const auto& row : r.epsilonRows) {
    const auto k = std::make_pair(row.source, row.decoding);
    if (!eps.count(k)) epsOrder.push_back(k);
    eps[k].push_back(&row);
  }
  r.epsilonCells.clear();
  for (const auto& k : epsOrder) {
    std::vector<double> share, ratio;
    for (const auto* row : eps[k]) {
      share.push_back(row->shareLower);
      ratio.push_back(row->medianRatio);
    }
    r.epsilonCells.push_back({k.first, k.second, stats::meanCi95(share), stats::meanCi95(ratio)});
  }
}

}  // namespace sdw::gpu
