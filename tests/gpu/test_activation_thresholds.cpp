// Run-time activation sparsity by thresholds set from calibration samples
// (TEAL, gpu/activation_thresholds.h), on the CPU with the sample model:
// - each threshold is the quantile of |x| over the input's stored samples
//   (brute force here: every sample sorted), per layer too;
// - the forward pass zeroes exactly the entries at or below the threshold of
//   their layer and input (a hand-written one-token forward);
// - held-out perplexity under thresholds at p_x 0.5 is close to per-token
//   top-k at 0.5; the run file records where the thresholds came from;
// - the errors: no samples, p_x out of range, another model; and the CLI.
// Label: engine.

#include "core/paths.h"
#include "core/runstore.h"
#include "gpu/activation_thresholds.h"
#include "gpu/calibration.h"
#include "gpu/evaluation_run.h"
#include "gpu/model_internal.h"
#include "tests/gpu/one_token_forward.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

using namespace sdw;
using namespace sdw::gpu;
namespace fs = std::filesystem;

namespace {

const fs::path kModel = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";
const fs::path kCli = fs::path(SDW_BINARY_DIR) / "bin/sdw-cli";

const char* const kSuffix[kProjectionInputs] = {".self_attn.q_proj", ".self_attn.o_proj", ".mlp.gate_proj",
                                                ".mlp.down_proj"};

fs::path calibrate(const fs::path& out, int tokens, int sampleRows) {
  CalibrationSettings s;
  s.source = CalibrationSource::Fixed;
  s.model = kModel;
  s.corpus = fs::path(SDW_SOURCE_DIR) / "samples/corpus/brown-calib.txt";
  s.tokenBudget = tokens;
  s.window = 128;
  s.sampleRows = sampleRows;
  const CalibrationResult r = runCalibration(s, out);
  if (!r.complete) throw std::runtime_error("calibration did not complete");
  return out;
}

// Brute force: every sampled |x| sorted; the k-th smallest with k = round(p n).
struct Quantile {
  float threshold = -1;
  double below = 0;
};
Quantile bruteQuantile(const std::vector<float>& x, double p) {
  std::vector<double> mag;
  for (const float v : x) mag.push_back(std::abs(static_cast<double>(v)));
  std::sort(mag.begin(), mag.end());
  const auto k = static_cast<std::size_t>(std::llround(p * static_cast<double>(mag.size())));
  Quantile q;
  if (k == 0) return q;
  q.threshold = static_cast<float>(mag[k - 1]);
  q.below = static_cast<double>(std::upper_bound(mag.begin(), mag.end(), mag[k - 1]) - mag.begin()) /
            static_cast<double>(mag.size());
  return q;
}

struct CliResult {
  int exitCode = -1;
  QByteArray out, err;
};
CliResult runCli(const QStringList& args) {
  QProcess p;
  p.start(QString::fromStdString(kCli.string()), args);
  CliResult r;
  if (!p.waitForFinished(300000)) return r;
  r.exitCode = p.exitCode();
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

QString qs(const fs::path& p) { return QString::fromStdString(p.string()); }

}  // namespace

class TestActivationThresholds : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path calib_, noSamples_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    const fs::path dir = tmp_.path().toStdString();
    calib_ = calibrate(dir / "calib.sdw.h5", 2048, 256);
    noSamples_ = calibrate(dir / "nosamples.sdw.h5", 256, 0);
  }

  void thresholdsAreTheSampleQuantile_data() {
    QTest::addColumn<double>("p");
    for (const double p : {0.0, 0.3, 0.5, 0.9}) QTest::newRow(qPrintable(QString::number(p))) << p;
  }
  void thresholdsAreTheSampleQuantile() {
    QFETCH(double, p);
    const ActivationThresholds t = activationThresholdsFromRun(calib_, p);
    const auto run = runstore::RunReader::open(calib_);
    QCOMPARE(t.runId, run.runId());
    QCOMPARE(t.rows, std::int64_t(256));
    QCOMPARE(t.layers, 6);
    QCOMPARE(t.inputs.size(), std::size_t(6 * kProjectionInputs));
    for (std::size_t i = 0; i < t.inputs.size(); ++i) {
      const InputThreshold& in = t.inputs[i];
      QCOMPARE(in.layer, static_cast<int>(i / kProjectionInputs));
      QCOMPARE(static_cast<int>(in.input), static_cast<int>(i % kProjectionInputs));
      QCOMPARE(in.name, "model.layers." + std::to_string(in.layer) + kSuffix[i % kProjectionInputs]);
      const auto x = run.readFloat32("/calibration/inputs/" + in.name + "/sample_rows");
      QCOMPARE(in.dIn, static_cast<std::int64_t>(x.shape[1]));
      QCOMPARE(in.entries, static_cast<std::int64_t>(x.data.size()));
      const Quantile q = bruteQuantile(x.data, p);
      QCOMPARE(in.sparsity, p);
      QCOMPARE(in.threshold, q.threshold);
      QCOMPARE(in.achieved, q.below);
      // Continuous activations: the share below lands on p (ties aside).
      QVERIFY2(std::abs(in.achieved - p) <= 1e-3, qPrintable(QString::number(in.achieved)));
    }
    if (p == 0.5)
      qInfo("p_x 0.5, layer 0: qkv %.4g, o %.4g, gate_up %.4g, down %.4g", t.inputs[0].threshold,
            t.inputs[1].threshold, t.inputs[2].threshold, t.inputs[3].threshold);
  }

  void perLayerSparsity() {
    const std::vector<double> perLayer = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    const ActivationThresholds t = activationThresholdsFromRun(calib_, perLayer);
    for (int l = 0; l < 6; ++l) {
      const ActivationThresholds one = activationThresholdsFromRun(calib_, perLayer[static_cast<std::size_t>(l)]);
      for (int i = 0; i < kProjectionInputs; ++i) {
        const auto k = static_cast<std::size_t>(l * kProjectionInputs + i);
        QCOMPARE(t.inputs[k].sparsity, perLayer[static_cast<std::size_t>(l)]);
        QCOMPARE(t.inputs[k].threshold, one.inputs[k].threshold);
      }
    }
    // Larger p_x, larger thresholds (layer 5 at 0.6 against layer 0 at 0.1 of the same run at 0.1).
    const ActivationThresholds low = activationThresholdsFromRun(calib_, 0.1);
    QVERIFY(t.inputs[20].threshold > low.inputs[20].threshold);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, activationThresholdsFromRun(calib_, std::vector<double>{0.5, 0.5}));
  }

  void sparsifierZeroesAtOrBelowTheThreshold() {
    at::manual_seed(5);
    const at::Tensor x = at::randn({4, 64});
    const float t = 0.7f;
    const at::Tensor y = thresholdActivations(x, t);
    QVERIFY(at::equal(y, at::where(x.abs() > t, x, at::zeros_like(x))));
    QVERIFY(y.eq(0).sum().item<std::int64_t>() > 0);
    QVERIFY(thresholdActivations(x, -1.f).is_same(x));
    // bf16: compared in fp32, an entry equal to the threshold is dropped, one ulp above kept.
    const at::Tensor b = at::tensor({0.5f, -0.5f, 0.50390625f, 0.25f}).to(at::kBFloat16);
    const at::Tensor yb = thresholdActivations(b, 0.5f).to(at::kFloat);
    QVERIFY(at::equal(yb, at::tensor({0.f, 0.f, 0.50390625f, 0.f})));
  }

  // One token through a one-layer model with a different threshold per input,
  // each at the median |x| of that input in the dense pass (so each bites):
  // the model's logits are the hand-written forward's that keeps |x| > t only.
  void forwardKeepsOnlyEntriesAboveTheirThreshold() {
    ModelConfig c = loadModelConfig(kModel);
    c.numLayers = 1;
    const std::int32_t token = 123;
    const auto dense = Model::randomInit(c, {}, 11, 0.05);
    InputThresholds t{};
    const auto dense0 = testing::oneTokenLogits(*dense, token, [&](const at::Tensor& x, ProjectionInput in) {
      t[static_cast<std::size_t>(in)] = x.abs().flatten().median().item<float>();
      return x;
    });
    LoadOptions o;
    o.activationThresholds = {t};
    const auto m = Model::randomInit(c, o, 11, 0.05);
    QVERIFY(QString::fromStdString(m->engineDescription()).contains(QStringLiteral("activation thresholds")));
    std::vector<std::int64_t> zeroed(kProjectionInputs, 0);
    const at::Tensor ref = testing::oneTokenLogits(*m, token, [&](const at::Tensor& x, ProjectionInput in) {
      const float ti = t[static_cast<std::size_t>(in)];
      const at::Tensor kept = x.abs() > ti;
      zeroed[static_cast<std::size_t>(in)] = kept.logical_not().sum().item<std::int64_t>();
      return at::where(kept, x, at::zeros_like(x));
    });
    for (int i = 0; i < kProjectionInputs; ++i) QVERIFY2(zeroed[static_cast<std::size_t>(i)] > 0, "every threshold bites");
    const auto logits = m->logits(std::vector<std::int32_t>{token});
    const testing::LogitDiff diff = testing::compareLogits(logits, ref);
    QVERIFY2(diff.within(1e-5), qPrintable(QString::number(diff.maxDiff)));
    QVERIFY(!testing::compareLogits(logits, dense0).within(1e-3));  // and the thresholds changed the result
    // Every threshold negative: every entry kept, the dense model's logits.
    o.activationThresholds = {InputThresholds{-1.f, -1.f, -1.f, -1.f}};
    const auto none = Model::randomInit(c, o, 11, 0.05);
    QVERIFY(!QString::fromStdString(none->engineDescription()).contains(QStringLiteral("activation thresholds")));
    QVERIFY(testing::compareLogits(none->logits(std::vector<std::int32_t>{token}), dense0).within(1e-5));
  }

  void loadOptionsAreChecked() {
    LoadOptions o;
    o.activationThresholds = {InputThresholds{}, InputThresholds{}};
    validateActivationSparsity(o, 2);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validateActivationSparsity(o, 3));  // one entry per layer
    o.activationSparsity = 0.5;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validateActivationSparsity(o, 2));  // not with top-k
    o.activationSparsity = 0;
    o.activationThresholds[1][2] = std::numeric_limits<float>::quiet_NaN();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validateActivationSparsity(o, 2));
  }

  // Held-out perplexity of the sample model itself under activation sparsity
  // 0.5: per-token top-k against thresholds from the calibration samples.
  void evalThresholdsCloseToTopK() {
    EvaluationSettings s;
    s.dense = kModel;
    s.models = {kModel};
    s.text = fs::path(SDW_SOURCE_DIR) / "samples/corpus/brown-heldout.txt";
    s.prompts = fs::path(SDW_SOURCE_DIR) / "samples/prompts/brown-heldout.jsonl";
    s.seeds = {0};
    s.maxNewTokens = 4;
    s.maxPrompts = 1;
    s.temperature = 0;
    s.activationSparsity = 0.5;
    const EvaluationResult topK = evaluate(s);
    s.activationThresholds = calib_;
    const EvaluationResult thr = evaluate(s);
    const double dense = topK.models[0].pplText, a = topK.models[1].pplText, b = thr.models[1].pplText;
    qInfo("held-out perplexity (16 windows of 256): dense %.2f, top-k p_x 0.5 %.2f, thresholds p_x 0.5 %.2f (%+.1f%%)",
          dense, a, b, 100 * (b / a - 1));
    QCOMPARE(thr.models[0].pplText, dense);  // the reference stays dense
    QVERIFY(a > dense && b > dense);
    QVERIFY2(std::abs(b / a - 1) < 0.05, qPrintable(QStringLiteral("%1 vs %2").arg(b).arg(a)));
    QCOMPARE(thr.activationThresholdsRunId, runstore::RunReader::open(calib_).runId());
    QVERIFY(topK.activationThresholdsRunId.empty());

    // The run records where the thresholds came from.
    const fs::path out = fs::path(tmp_.path().toStdString()) / "eval-thresholds.sdw.h5";
    writeEvaluationRun(thr, out);
    const EvaluationResult back = readEvaluationRun(out);
    QCOMPARE(back.settings.activationThresholds.string(), recordedPath(calib_));
    QCOMPARE(back.activationThresholdsRunId, thr.activationThresholdsRunId);
    QCOMPARE(back.settings.activationSparsity, 0.5);
  }

  void errors() {
    try {
      (void)activationThresholdsFromRun(noSamples_, 0.5);
      QFAIL("a run without samples was accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("calibrate with --sample-rows N first") != std::string::npos, e.what());
    }
    try {
      (void)activationThresholdsFromRun(fs::path(SDW_SOURCE_DIR) / "samples/workspace/eval-sample.sdw.h5", 0.5);
      QFAIL("an evaluation run was accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("not a calibration run") != std::string::npos, e.what());
    }
    for (const double p : {1.0, -0.1, std::numeric_limits<double>::quiet_NaN()})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, activationThresholdsFromRun(calib_, p));
    // Another model: a layer count or a width that differs.
    const ActivationThresholds t = activationThresholdsFromRun(calib_, 0.5);
    const ModelConfig same = loadModelConfig(kModel);
    QCOMPARE(thresholdsForModel(t, same).size(), std::size_t(6));
    QCOMPARE(thresholdsForModel(t, same)[2][3], t.inputs[2 * kProjectionInputs + 3].threshold);
    ModelConfig fewer = same;
    fewer.numLayers = 4;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, thresholdsForModel(t, fewer));
    ModelConfig wider = same;
    wider.intermediateSize = 1024;
    try {
      (void)thresholdsForModel(t, wider);
      QFAIL("another width was accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("down_proj is 768 wide") != std::string::npos, e.what());
    }
  }

  void cli() {
    if (!fs::exists(kCli)) QSKIP("sdw-cli not built");
    const CliResult a = runCli({"analyze", "activation-thresholds", "--calibration", qs(calib_),
                                "--activation-sparsity", "0.5", "--json"});
    QVERIFY2(a.exitCode == 0, a.err.constData());
    const auto j = nlohmann::json::parse(a.out.toStdString());
    const ActivationThresholds t = activationThresholdsFromRun(calib_, 0.5);
    QCOMPARE(j.at("run_id").get<std::string>(), t.runId);
    QCOMPARE(j.at("inputs").size(), t.inputs.size());
    for (std::size_t i = 0; i < t.inputs.size(); ++i) {
      QCOMPARE(j.at("inputs")[i].at("threshold").get<float>(), t.inputs[i].threshold);
      QCOMPARE(j.at("inputs")[i].at("fraction_below").get<double>(), t.inputs[i].achieved);
    }
    const CliResult none = runCli({"analyze", "activation-thresholds", "--calibration", qs(noSamples_),
                                   "--activation-sparsity", "0.5"});
    QVERIFY(none.exitCode != 0);
    QVERIFY2(none.err.contains("--sample-rows N first"), none.err.constData());

    const CliResult g = runCli({"generate", "--model", qs(kModel), "--prompt", "The house", "--max-new-tokens", "3",
                                "--activation-sparsity", "0.5", "--activation-thresholds", qs(calib_), "--json"});
    QVERIFY2(g.exitCode == 0, g.err.constData());
    const auto jg = nlohmann::json::parse(g.out.toStdString());
    QVERIFY(jg.at("engine").get<std::string>().find("activation thresholds") != std::string::npos);
    QCOMPARE(jg.at("activation_thresholds").get<std::string>(), calib_.string());

    // Thresholds need the share they are set at.
    const CliResult bad = runCli({"eval", "--dense", qs(kModel), "--models", qs(kModel), "--activation-thresholds",
                                  qs(calib_)});
    QVERIFY(bad.exitCode != 0);
    QVERIFY2(bad.err.contains("needs --activation-sparsity"), bad.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestActivationThresholds)
#include "test_activation_thresholds.moc"
