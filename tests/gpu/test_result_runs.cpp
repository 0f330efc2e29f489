// The run files of pruning, evaluation and drift (gpu/pruning_run.h,
// gpu/evaluation_run.h, gpu/drift_run.h): each written from a hand-made
// result and read back field by field, the shipped samples of
// samples/workspace read with their known sizes, and the reader's refusals.

#include "core/runstore.h"
#include "gpu/drift_run.h"
#include "gpu/evaluation_run.h"
#include "gpu/pruning_run.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace sdw;
using namespace sdw::gpu;

namespace {

const fs::path kWorkspace = fs::path(SDW_SOURCE_DIR) / "samples/workspace";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Equal, NaN equal to NaN.
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }
bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}
bool same(const Spread& a, const Spread& b) {
  return same(a.mean, b.mean) && same(a.std, b.std) && same(a.min, b.min) && same(a.max, b.max) && a.n == b.n;
}

}  // namespace

class TestResultRuns : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path dir_;

  // A folder that exists (the writers hash the model files in it: none here).
  fs::path folder(const char* name) const {
    fs::create_directories(dir_ / name);
    return dir_ / name;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    dir_ = fs::path(tmp_.path().toStdString()).lexically_normal();
  }

  void pruningRoundTrip() {
    PruningRun w;
    PruneSettings& s = w.settings;
    s.model = folder("dense");
    s.calibration = dir_ / "calib-ar.sdw.h5";
    s.method = PruneMethod::SparseGpt;
    s.pattern = "4:8";
    s.order = PruneOrder::Sequential;
    s.percdamp = 0.02;
    s.blocksize = 64;
    s.device = "cpu";
    s.out = dir_ / "pruned";
    w.info.calibrationRunId = "20250101T000000Z-0123abcd";
    w.info.calibrationSource = "ar";
    w.info.calibrationTokens = 1234;
    w.info.calibration.decodes = true;
    w.info.calibration.decoding = Decoding{0.7, 40, 0.95};
    w.info.calibration.prompts = "samples/prompts/brown-calib.jsonl";
    w.info.calibration.corpus = "";
    w.result.checkpoint = dir_ / "pruned/model.safetensors";
    w.result.sparseFile = dir_ / "pruned/model.sdwsparse";
    w.result.seconds = 3.5;
    w.result.recaptureSeconds = 1.25;
    w.result.modules = {
        {"model.layers.0.self_attn.q_proj", 0, 64, 64, 0.5, 0.25, 0.125, 0.5, 0.02, 0, 0, 0.75, true},
        {"model.layers.1.mlp.down_proj", 1, 64, 172, 1.5, 1.25, 0.0625, 0.5, 0.2, 1, 3, 0.5, false},
    };
    const fs::path file = dir_ / "pruning.sdw.h5";
    writePruningRun(w, file);

    const PruningRun r = readPruningRun(file);
    QCOMPARE(r.settings.model, s.model);
    QCOMPARE(r.settings.calibration, s.calibration);
    QCOMPARE(r.settings.method, s.method);
    QCOMPARE(r.settings.pattern, s.pattern);
    QCOMPARE(r.settings.order, s.order);
    QCOMPARE(r.settings.percdamp, s.percdamp);
    QCOMPARE(r.settings.blocksize, s.blocksize);
    QCOMPARE(r.settings.device, s.device);
    QCOMPARE(r.settings.out, s.out);
    QCOMPARE(r.settings.record, file);
    QCOMPARE(r.info.calibrationRunId, w.info.calibrationRunId);
    QCOMPARE(r.info.calibrationSource, w.info.calibrationSource);
    QCOMPARE(r.info.calibrationTokens, w.info.calibrationTokens);
    QCOMPARE(r.info.calibration.run, s.calibration);
    QCOMPARE(r.info.calibration.source, w.info.calibrationSource);
    QCOMPARE(r.info.calibration.decodes, true);
    QCOMPARE(r.info.calibration.decoding.temperature, 0.7);
    QCOMPARE(r.info.calibration.decoding.topK, 40);
    QCOMPARE(r.info.calibration.decoding.topP, 0.95);
    QCOMPARE(r.info.calibration.prompts, w.info.calibration.prompts);
    QCOMPARE(r.info.calibration.corpus, w.info.calibration.corpus);
    QCOMPARE(r.result.record, file);
    QCOMPARE(r.result.calibrationRunId, w.info.calibrationRunId);
    QCOMPARE(r.result.checkpoint, w.result.checkpoint);
    QCOMPARE(r.result.sparseFile, w.result.sparseFile);
    QCOMPARE(r.result.seconds, w.result.seconds);
    QCOMPARE(r.result.recaptureSeconds, w.result.recaptureSeconds);
    QCOMPARE(r.result.modules.size(), w.result.modules.size());
    for (std::size_t i = 0; i < w.result.modules.size(); ++i) {
      const ModulePruneRow &a = r.result.modules[i], &b = w.result.modules[i];
      QCOMPARE(a.name, b.name);
      QCOMPARE(a.layer, b.layer);
      QCOMPARE(a.rows, b.rows);
      QCOMPARE(a.cols, b.cols);
      QCOMPARE(a.loss, b.loss);
      QCOMPARE(a.outputLoss, b.outputLoss);
      QCOMPARE(a.relOutputError, b.relOutputError);
      QCOMPARE(a.sparsity, b.sparsity);
      QCOMPARE(a.percdampUsed, b.percdampUsed);
      QCOMPARE(a.dampingSteps, b.dampingSteps);
      QCOMPARE(a.deadInputs, b.deadInputs);
      QCOMPARE(a.seconds, b.seconds);
      QCOMPARE(a.packed, b.packed);
    }
    // The words stored for other readers.
    const auto f = runstore::RunReader::open(file);
    QCOMPARE(f.readStringAttribute("/pruning", "calibration_decoding"), std::string("sampled, T=0.7, top-k 40, top-p 0.95"));
    QCOMPARE(f.readIntAttribute("/pruning", "module_count"), std::int64_t{2});
  }

  void evaluationRoundTrip() {
    EvaluationResult w;
    EvaluationSettings& s = w.settings;
    s.dense = folder("dense");
    s.models = {dir_ / "pruned-a", dir_ / "pruned-b"};
    s.text = dir_ / "heldout.txt";
    s.prompts = dir_ / "heldout.jsonl";
    s.seeds = {3, 7};
    s.maxNewTokens = 16;
    s.window = 32;
    s.windows = 4;
    s.textSeed = 9;
    s.maxPrompts = 2;
    s.setDecoding(Decoding{0.8, 5, 0.9});
    s.stopAtEos = false;
    s.sideBySidePrompts = 1;
    s.device = "cpu";
    s.dtype = "bfloat16";
    w.prompts = 2;
    w.windows = 3;
    const std::vector<std::string> labels = {"dense", "pruned-a", "pruned-b"};
    for (std::size_t m = 0; m < 3; ++m) {
      ModelEvaluation e;
      e.dir = m == 0 ? s.dense : s.models[m - 1];
      e.label = labels[m];
      e.isDense = m == 0;
      const double b = static_cast<double>(m);
      e.pplText = 10 + b;
      e.nllText = 2 + b / 4;
      e.tokensText = 100 + static_cast<std::int64_t>(m);
      e.pplDenseGen = 5 + b;
      e.nllDenseGen = 1 + b / 8;
      e.tokensDenseGen = 30 + static_cast<std::int64_t>(m);
      for (std::size_t k = 0; k < s.seeds.size(); ++k) {
        OnPolicySeed p;
        p.seed = s.seeds[k];
        p.klMean = b / 2 + static_cast<double>(k) / 16;
        p.agreement = 1 - b / 4;
        p.steps = 32 - static_cast<std::int64_t>(k);
        p.firstDivergence = {m == 0 ? -1 : static_cast<int>(k), 5};
        p.trajectoryLength = {16, 16 - static_cast<int>(k)};
        p.firstDivergenceMedian = m == 0 ? kNaN : 2.5;
        p.noDivergence = m == 0 ? 2 : 0;
        e.seeds.push_back(p);
      }
      e.kl = {b, b / 2, b / 4, b * 2, 2};
      e.agreement = {1 - b / 4, 0.125, 0.5, 1, 2};
      e.firstDivergence = {m == 0 ? kNaN : 2.5, 0, 2.5, 2.5, 2};
      w.models.push_back(e);
    }
    w.denseGenerations = {"the dog", "a cat"};
    w.sideBySide = {{"p0", "Once upon", {"dense text", "a text", "b text"}}};
    PrunedCalibration known;
    known.found = true;
    known.calibration.run = dir_ / "calib-fixed.sdw.h5";
    known.calibration.source = "fixed";
    w.calibrations = {known, PrunedCalibration{}};
    w.warnings = {"a warning"};
    w.notes = {"note one", "note two"};
    w.seconds = 12.5;
    const fs::path file = writeEvaluationRun(w, dir_ / "eval.sdw.h5");

    const EvaluationResult r = readEvaluationRun(file);
    QCOMPARE(r.settings.dense, s.dense);
    QCOMPARE(r.settings.models, s.models);
    QCOMPARE(r.settings.text, s.text);
    QCOMPARE(r.settings.prompts, s.prompts);
    QCOMPARE(r.settings.seeds, s.seeds);
    QCOMPARE(r.settings.maxNewTokens, s.maxNewTokens);
    QCOMPARE(r.settings.window, s.window);
    QCOMPARE(r.settings.windows, s.windows);
    QCOMPARE(r.settings.textSeed, s.textSeed);
    QCOMPARE(r.settings.maxPrompts, s.maxPrompts);
    QCOMPARE(r.settings.temperature, s.temperature);
    QCOMPARE(r.settings.topK, s.topK);
    QCOMPARE(r.settings.topP, s.topP);
    QCOMPARE(r.settings.stopAtEos, s.stopAtEos);
    QCOMPARE(r.settings.sideBySidePrompts, s.sideBySidePrompts);
    QCOMPARE(r.settings.device, s.device);
    QCOMPARE(r.settings.dtype, s.dtype);
    QCOMPARE(r.prompts, w.prompts);
    QCOMPARE(r.windows, w.windows);
    QCOMPARE(r.models.size(), w.models.size());
    for (std::size_t m = 0; m < w.models.size(); ++m) {
      const ModelEvaluation &a = r.models[m], &b = w.models[m];
      QCOMPARE(a.dir, b.dir);
      QCOMPARE(a.label, b.label);
      QCOMPARE(a.isDense, b.isDense);
      QCOMPARE(a.pplText, b.pplText);
      QCOMPARE(a.nllText, b.nllText);
      QCOMPARE(a.tokensText, b.tokensText);
      QCOMPARE(a.pplDenseGen, b.pplDenseGen);
      QCOMPARE(a.nllDenseGen, b.nllDenseGen);
      QCOMPARE(a.tokensDenseGen, b.tokensDenseGen);
      QVERIFY(same(a.kl, b.kl));
      QVERIFY(same(a.agreement, b.agreement));
      QVERIFY(same(a.firstDivergence, b.firstDivergence));
      QCOMPARE(a.seeds.size(), b.seeds.size());
      for (std::size_t k = 0; k < b.seeds.size(); ++k) {
        QCOMPARE(a.seeds[k].seed, b.seeds[k].seed);
        QCOMPARE(a.seeds[k].klMean, b.seeds[k].klMean);
        QCOMPARE(a.seeds[k].agreement, b.seeds[k].agreement);
        QCOMPARE(a.seeds[k].steps, b.seeds[k].steps);
        QCOMPARE(a.seeds[k].firstDivergence, b.seeds[k].firstDivergence);
        QCOMPARE(a.seeds[k].trajectoryLength, b.seeds[k].trajectoryLength);
        QVERIFY(same(a.seeds[k].firstDivergenceMedian, b.seeds[k].firstDivergenceMedian));
        QCOMPARE(a.seeds[k].noDivergence, b.seeds[k].noDivergence);
      }
    }
    QCOMPARE(r.denseGenerations, w.denseGenerations);
    QCOMPARE(r.sideBySide.size(), std::size_t{1});
    QCOMPARE(r.sideBySide[0].promptId, w.sideBySide[0].promptId);
    QCOMPARE(r.sideBySide[0].prompt, w.sideBySide[0].prompt);
    QCOMPARE(r.sideBySide[0].texts, w.sideBySide[0].texts);
    QCOMPARE(r.warnings, w.warnings);
    QCOMPARE(r.notes, w.notes);
    QCOMPARE(r.seconds, w.seconds);
    // Stored only as words, for other readers; the reader leaves them out.
    QVERIFY(r.calibrations.empty());
    QVERIFY(r.denseGenerationIds.empty());
    const auto f = runstore::RunReader::open(file);
    QCOMPARE(f.readStrings("/evaluation/calibration_runs"),
             (std::vector<std::string>{"", known.calibration.run.string(), ""}));
    QCOMPARE(f.readStrings("/evaluation/calibration_decodings"), (std::vector<std::string>{"", "none (fixed)", ""}));
    QCOMPARE(f.readStringAttribute("/evaluation", "decoding"), s.decoding().describe());
  }

  void driftRoundTrip() {
    constexpr int T = 3, L = 2;
    DriftResult w;
    DriftSettings& s = w.settings;
    s.dense = folder("dense");
    s.pruned = {dir_ / "sgpt24-fixed", dir_ / "sgpt24-ar"};
    s.prompts = dir_ / "heldout.jsonl";
    s.steps = T;
    s.modes = {DriftMode::Own, DriftMode::Shared};
    s.maxPrompts = 5;
    s.decoding = Decoding{0.5, 0, 0.75};
    s.seed = 11;
    s.device = "cpu";
    s.dtype = "bfloat16";
    w.prompts = 5;
    w.layers = L;
    for (std::size_t k = 0; k < s.pruned.size(); ++k) {
      DriftModelResult m;
      m.dir = s.pruned[k];
      m.label = s.pruned[k].filename().string();
      for (const DriftMode mode : s.modes) {
        DriftCurves c;
        c.mode = mode;
        c.steps = T;
        c.layers = L;
        const double base = static_cast<double>(k) + (mode == DriftMode::Shared ? 0.5 : 0.0);
        for (int i = 0; i < T * L; ++i) {
          c.ratio.push_back(base + i * 0.125);  // exact in float32, as stored
          c.count.push_back(5 - i % 2);
        }
        c.ratio[T * L - 1] = kNaN;  // no prompt reached the last step of the last layer
        c.count[T * L - 1] = 0;
        c.summary.steps = T;
        c.summary.layers = L;
        c.summary.plateau = {base + 0.25, base + 0.375};
        c.summary.step90 = {1, k == 0 ? -1 : 2};
        c.summary.median = {base, base + 0.25, base + 0.5};
        c.summary.q1 = {base - 0.125, base, base + 0.25};
        c.summary.q3 = {base + 0.125, base + 0.5, base + 0.75};
        m.curves.push_back(c);
      }
      w.models.push_back(m);
    }
    w.warnings = {};
    w.notes = {"sgpt24-fixed: fixed text"};
    w.seconds = 2.5;
    const fs::path file = writeDriftRun(w, dir_ / "drift.sdw.h5");

    const DriftResult r = readDriftRun(file);
    QCOMPARE(r.settings.dense, s.dense);
    QCOMPARE(r.settings.pruned, s.pruned);
    QCOMPARE(r.settings.prompts, s.prompts);
    QCOMPARE(r.settings.steps, s.steps);
    QVERIFY(r.settings.modes == s.modes);
    QCOMPARE(r.settings.maxPrompts, s.maxPrompts);
    QCOMPARE(r.settings.decoding.temperature, s.decoding.temperature);
    QCOMPARE(r.settings.decoding.topK, s.decoding.topK);
    QCOMPARE(r.settings.decoding.topP, s.decoding.topP);
    QCOMPARE(r.settings.seed, s.seed);
    QCOMPARE(r.settings.device, s.device);
    QCOMPARE(r.settings.dtype, s.dtype);
    QCOMPARE(r.prompts, w.prompts);
    QCOMPARE(r.layers, w.layers);
    QCOMPARE(r.activation, w.activation);
    QCOMPARE(r.plateauFraction, w.plateauFraction);
    QCOMPARE(r.warnings, w.warnings);
    QCOMPARE(r.notes, w.notes);
    QCOMPARE(r.seconds, w.seconds);
    QVERIFY(r.calibrations.empty());
    QCOMPARE(r.models.size(), w.models.size());
    for (std::size_t k = 0; k < w.models.size(); ++k) {
      QCOMPARE(r.models[k].dir, w.models[k].dir);
      QCOMPARE(r.models[k].label, w.models[k].label);
      QCOMPARE(r.models[k].curves.size(), w.models[k].curves.size());
      for (std::size_t c = 0; c < w.models[k].curves.size(); ++c) {
        const DriftCurves &a = r.models[k].curves[c], &b = w.models[k].curves[c];
        QVERIFY(a.mode == b.mode);
        QCOMPARE(a.steps, b.steps);
        QCOMPARE(a.layers, b.layers);
        QVERIFY(same(a.ratio, b.ratio));
        QCOMPARE(a.count, b.count);
        QCOMPARE(a.summary.steps, b.summary.steps);
        QCOMPARE(a.summary.layers, b.summary.layers);
        QVERIFY(same(a.summary.plateau, b.summary.plateau));
        QCOMPARE(a.summary.step90, b.summary.step90);
        QVERIFY(same(a.summary.median, b.summary.median));
        QVERIFY(same(a.summary.q1, b.summary.q1));
        QVERIFY(same(a.summary.q3, b.summary.q3));
        QVERIFY(a.trace.denseInputs.empty() && a.trace.prunedInputs.empty());
      }
    }
  }

  // The shipped samples (samples/README.md): sizes the GUI tests rely on too.
  void readsSamplePruningRecord() {
    const PruningRun r = readPruningRun(kWorkspace / "pruning-sgpt24-fixed.sdw.h5");
    QCOMPARE(r.result.modules.size(), std::size_t{42});  // 6 layers x 7 projections
    QCOMPARE(pruneMethodName(r.settings.method), std::string("sparsegpt"));
    QCOMPARE(r.settings.pattern, std::string("2:4"));
    QCOMPARE(pruneOrderName(r.settings.order), std::string("parallel"));
    QCOMPARE(r.info.calibrationSource, std::string("fixed"));
    QCOMPARE(r.info.calibration.decodes, false);
    QCOMPARE(r.result.modules.front().name, std::string("model.layers.0.self_attn.q_proj"));
    for (const ModulePruneRow& m : r.result.modules) {
      QVERIFY(m.layer >= 0 && m.layer < 6);
      QVERIFY(m.rows > 0 && m.cols > 0);
      QCOMPARE(m.sparsity, 0.5);
    }
  }

  void readsSampleEvaluation() {
    const EvaluationResult r = readEvaluationRun(kWorkspace / "eval-sample.sdw.h5");
    QCOMPARE(r.models.size(), std::size_t{3});  // dense and the two pruned models
    QVERIFY(r.models[0].isDense);
    QCOMPARE(r.models[0].label, std::string("dense"));
    QCOMPARE(r.settings.models.size(), std::size_t{2});
    QVERIFY(r.settings.decoding().greedy());
    QVERIFY(r.prompts > 0);
    QCOMPARE(r.denseGenerations.size(), static_cast<std::size_t>(r.prompts));
    for (const ModelEvaluation& m : r.models) {
      QCOMPARE(m.seeds.size(), r.settings.seeds.size());
      QCOMPARE(m.kl.n, static_cast<int>(r.settings.seeds.size()));
      for (const OnPolicySeed& p : m.seeds) QCOMPARE(p.firstDivergence.size(), static_cast<std::size_t>(r.prompts));
    }
    QCOMPARE(r.models[0].kl.mean, 0.0);  // the dense model against itself
    QVERIFY(!r.sideBySide.empty());
    QCOMPARE(r.sideBySide[0].texts.size(), std::size_t{3});
  }

  void readsSampleDrift() {
    const DriftResult r = readDriftRun(kWorkspace / "drift-sample.sdw.h5");
    QCOMPARE(r.prompts, 40);
    QCOMPARE(r.settings.steps, 128);
    QCOMPARE(r.layers, 6);
    QVERIFY(r.settings.decoding.greedy());
    QVERIFY(r.settings.modes == (std::vector<DriftMode>{DriftMode::Own, DriftMode::Shared}));
    QCOMPARE(r.models.size(), std::size_t{2});
    QCOMPARE(r.models[0].label, std::string("sgpt24-fixed"));
    QCOMPARE(r.models[1].label, std::string("sgpt24-ar"));
    for (const DriftModelResult& m : r.models) {
      QCOMPARE(m.curves.size(), std::size_t{2});
      for (const DriftCurves& c : m.curves) {
        QCOMPARE(c.ratio.size(), std::size_t{128 * 6});
        QCOMPARE(c.summary.plateau.size(), std::size_t{6});
        QCOMPARE(c.summary.median.size(), std::size_t{128});
      }
    }
  }

  void refusesOtherKinds() {
    const fs::path drift = kWorkspace / "drift-sample.sdw.h5";
    const fs::path eval = kWorkspace / "eval-sample.sdw.h5";
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, readPruningRun(drift));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, readEvaluationRun(drift));
    try {
      readDriftRun(eval);
      QFAIL("an evaluation run read as a drift run");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("eval-sample.sdw.h5: not a drift run") != std::string::npos, e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestResultRuns)
#include "test_result_runs.moc"
