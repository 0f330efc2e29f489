// Replay of a calibration run's counted positions (gpu/calibration_internal.h),
// the re-capture behind sequential-order pruning: the rebuilt sequences count
// exactly the run's rows, and teacher-forcing them through the same dense
// model gives back the stored sums, for fixed text, AR (re-forward and exact
// capture) and the prefill ablation; a one-layer accumulator collects that
// layer only; a corpus that no longer gives the stored windows is refused.

#include "core/runstore.h"
#include "gpu/calibration.h"
#include "gpu/calibration_internal.h"
#include "gpu/model.h"

#include <ATen/ATen.h>

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace sdw::gpu;
namespace fs = std::filesystem;
namespace rs = sdw::runstore;

namespace {

const fs::path kModel = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";
const fs::path kCorpus = fs::path(SDW_SOURCE_DIR) / "samples/corpus/brown-heldout.txt";

fs::path writePrompts(const fs::path& dir) {
  const fs::path p = dir / "prompts.jsonl";
  std::ofstream(p) << R"({"id": "a", "prompt": "The jury said"})" << "\n"
                   << R"({"id": "one", "prompt": ""})" << "\n"
                   << R"({"id": "b", "prompt": "In the spring of that year the farmers"})" << "\n";
  return p;
}

// max over inputs of ||replayed - stored||_F / ||stored||_F, for the inputs `acc` holds.
double maxRelativeDifference(const StatsAccumulator& acc, const rs::RunReader& run) {
  double worst = 0;
  for (const auto& in : acc.inputs()) {
    const std::string g = "/calibration/inputs/" + in.name;
    const auto stored = run.read<float>(g + "/xtx");
    const at::Tensor ref = at::from_blob(const_cast<float*>(stored.data.data()), {in.dIn, in.dIn}, at::kFloat);
    const at::Tensor got = in.xtx.to(at::kCPU, at::kFloat);
    worst = std::max(worst, ((got - ref).norm() / ref.norm()).item<double>());
    if (in.tokens != run.readIntAttribute(g, "tokens")) return 1e9;
  }
  return worst;
}

}  // namespace

class TestReplay : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void replayGivesBackTheStoredSums_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("capture");
    QTest::addColumn<bool>("prefill");
    QTest::newRow("fixed") << "fixed" << "teacher-forced" << false;
    QTest::newRow("ar reforward") << "ar" << "reforward" << false;
    QTest::newRow("ar exact") << "ar" << "exact" << false;
    QTest::newRow("ar reforward + prefill") << "ar" << "reforward" << true;
  }
  void replayGivesBackTheStoredSums() {
    QFETCH(QString, source);
    QFETCH(QString, capture);
    QFETCH(bool, prefill);
    QTemporaryDir dir;
    const fs::path tmp = dir.path().toStdString();
    CalibrationSettings s;
    s.source = parseCalibrationSource(source.toStdString());
    s.model = kModel;
    s.seed = 5;
    if (source == "fixed") {
      s.corpus = kCorpus;
      s.tokenBudget = 150;  // 4 windows of 32 and a cut one
      s.window = 32;
      s.batch = 2;
    } else {
      s.prompts = writePrompts(tmp);
      s.tokenBudget = prefill ? 60 : 40;  // the budget runs out inside a batch
      s.maxNewTokens = 10;
      s.batch = capture == "exact" ? 1 : 2;
      s.capture = parseCaptureMode(capture.toStdString());
      s.includePrefill = prefill;
    }
    const fs::path out = tmp / "run.sdw.h5";
    (void)runCalibration(s, out);
    const auto run = rs::RunReader::open(out);
    const CalibrationSettings stored = calibrationSettingsFromJson(run.provenance().settingsJson);

    const auto seqs = replaySequences(run, stored);
    std::int64_t rows = 0;
    for (const auto& f : seqs) rows += f.count;
    QCOMPARE(rows, run.readIntAttribute("/calibration", "tokens_collected"));

    auto model = Model::load(kModel);
    StatsAccumulator all(model->config(), model->impl().device);
    std::size_t batches = 0;
    replayCollect(*model, seqs, stored.batch, all, [&](std::size_t done, std::size_t total) {
      batches = done;
      QVERIFY(done <= total);
    });
    QCOMPARE(batches, (seqs.size() + static_cast<std::size_t>(stored.batch) - 1) / static_cast<std::size_t>(stored.batch));
    QCOMPARE(all.inputs().size(), std::size_t{24});
    const double full = maxRelativeDifference(all, run);
    qInfo("max relative Frobenius difference, all inputs: %.3g", full);
    QVERIFY2(full < 1e-5, qPrintable(QString::number(full)));

    StatsAccumulator one(model->config(), model->impl().device, 2);
    replayCollect(*model, seqs, stored.batch, one);
    QCOMPARE(one.inputs().size(), std::size_t{4});
    for (const auto& in : one.inputs()) QCOMPARE(in.layer, 2);
    QVERIFY(maxRelativeDifference(one, run) < 1e-5);
  }

  // Time-driven checkpoints: at the interval asked, but writing never takes more than a
  // tenth of the run; an interval of 0 checkpoints after every batch.
  void checkpointSpacing() {
    using sdw::gpu::checkpointDue;
    QVERIFY(!checkpointDue(29.9, 30, 0.01));
    QVERIFY(checkpointDue(30.0, 30, 0.01));
    QVERIFY(checkpointDue(30.0, 30, 3.3));    // 9 x 3.3 = 29.7 s: the interval rules
    QVERIFY(!checkpointDue(30.0, 30, 16.0));  // a 16 s write: the next one 144 s later
    QVERIFY(!checkpointDue(143.9, 30, 16.0));
    QVERIFY(checkpointDue(144.0, 30, 16.0));
    QVERIFY(checkpointDue(0.0, 0, 16.0));    // 0: every batch, whatever a write costs
    QVERIFY(checkpointDue(30.0, 30, -1.0));  // a clock that went back counts as no cost
  }

  void changedCorpusIsRefused() {
    QTemporaryDir dir;
    const fs::path tmp = dir.path().toStdString();
    CalibrationSettings s;
    s.source = CalibrationSource::Fixed;
    s.model = kModel;
    s.corpus = kCorpus;
    s.tokenBudget = 64;
    s.window = 32;
    const fs::path out = tmp / "fixed.sdw.h5";
    (void)runCalibration(s, out);
    const auto run = rs::RunReader::open(out);
    CalibrationSettings other = calibrationSettingsFromJson(run.provenance().settingsJson);
    QCOMPARE(replaySequences(run, other).size(), std::size_t{2});
    other.seed += 1;  // draws other windows
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, replaySequences(run, other));
  }
};

QTEST_GUILESS_MAIN(TestReplay)
#include "test_replay.moc"
