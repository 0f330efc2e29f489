// The study grid (gpu/study.h) on the sample model with tiny budgets: the
// rows it produces, the 95% intervals against a hand computation, the study
// file read back equal to what was computed, a second run that reuses every
// step from the work folder with identical figures, and a cancelled study
// that resumes where it stopped. Plus Student's t intervals on known values.

#include "core/runstore.h"
#include "core/stats.h"
#include "gpu/study.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <set>

namespace fs = std::filesystem;
using sdw::gpu::StudyResult;
using sdw::gpu::StudySettings;

namespace {

StudySettings tiny(const fs::path& work) {
  StudySettings s;
  const fs::path samples = fs::path(SDW_SOURCE_DIR) / "samples";
  s.model = samples / "model" / "brown-llama";
  s.corpus = samples / "corpus" / "brown-calib.txt";
  s.prompts = samples / "prompts" / "brown-calib.jsonl";
  s.heldoutPrompts = samples / "prompts" / "brown-heldout.jsonl";
  s.heldoutText = samples / "corpus" / "brown-heldout.txt";
  s.sources = {sdw::gpu::CalibrationSource::Ar, sdw::gpu::CalibrationSource::Fixed};  // fixed is moved first by the study
  s.decodings = {sdw::gpu::parseStudyDecoding("greedy"), sdw::gpu::parseStudyDecoding("sampled")};
  s.solvers = {sdw::gpu::PruneMethod::SparseGpt};
  s.patterns = {"2:4"};
  s.seeds = {0, 1};
  s.tokens = 600;
  s.referenceTokens = 400;
  s.maxNewTokens = 32;
  s.window = 64;
  s.epsilonK = 16;
  s.evalMaxNewTokens = 8;
  s.evalPrompts = 4;
  s.evalWindows = 2;
  s.workDir = work;
  return s;
}

}  // namespace

class TestStudy : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  StudyResult first_;

  fs::path path(const char* name) const { return fs::path(dir_.filePath(QLatin1String(name)).toStdString()); }

 private Q_SLOTS:
  void studentIntervals() {
    const std::vector<double> v = {1, 2, 3};
    const auto m = sdw::stats::meanCi95(v);
    QCOMPARE(m.n, 3);
    QCOMPARE(m.mean, 2.0);
    QCOMPARE(m.sd, 1.0);
    QVERIFY(std::abs(m.halfWidth - 4.303 / std::sqrt(3.0)) < 1e-12);
    const std::vector<double> one = {5};
    QCOMPARE(sdw::stats::meanCi95(one).halfWidth, 0.0);
    const std::vector<double> withNan = {1, std::nan(""), 3};
    QCOMPARE(sdw::stats::meanCi95(withNan).n, 2);
    QCOMPARE(sdw::stats::tQuantile975(1), 12.706);
    QCOMPARE(sdw::stats::tQuantile975(1000), 1.96);
  }

  void badSettingsAreRefused() {
    StudySettings s = tiny(path("bad.work"));
    s.sources = {sdw::gpu::CalibrationSource::Ar};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sdw::gpu::runStudy(s, path("bad.sdw.h5")));
    s = tiny(path("bad.work"));
    s.patterns = {"3:5x"};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sdw::gpu::runStudy(s, path("bad.sdw.h5")));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sdw::gpu::parseStudyDecoding("warm"));
    QCOMPARE(sdw::gpu::parseStudyDecoding("t0.8").temperature, 0.8);
  }

  void gridRowsAndIntervals() {
    QVERIFY(dir_.isValid());
    const StudySettings s = tiny(path("study.work"));
    // 2 seeds x (fixed + ar x 2 decodings) calibrations, 2 x 2 references,
    // 2 x 2 epsilon, 2 x 3 prunings, 2 x 2 evaluations.
    QCOMPARE(sdw::gpu::studySteps(s), 6 + 4 + 4 + 6 + 4);
    int lastDone = -1;
    first_ = sdw::gpu::runStudy(s, path("study.sdw.h5"), [&lastDone](const sdw::Progress& p) {
      lastDone = static_cast<int>(p.done);
      return true;
    });
    QCOMPARE(lastDone, 24);
    QCOMPARE(first_.stepsReused, 0);
    // Seed rows: source x decoding x seed (one solver, one pattern).
    QCOMPARE(int(first_.seedRows.size()), 2 * 2 * 2);
    QCOMPARE(int(first_.cells.size()), 2 * 2);
    QCOMPARE(int(first_.epsilonRows.size()), 2 * 2);  // ar vs fixed per decoding and seed
    QCOMPARE(int(first_.epsilonCells.size()), 2);
    std::set<std::string> sources;
    for (const auto& r : first_.seedRows) {
      sources.insert(r.source);
      QVERIFY(r.kl >= 0);
      QVERIFY(r.agreement >= 0 && r.agreement <= 1);
      QVERIFY(r.pplDenseGen > 1);
      QVERIFY(r.meanRelError > 0 && r.meanRelError < 1);
    }
    QCOMPARE(sources, (std::set<std::string>{"fixed", "ar"}));
    for (const auto& e : first_.epsilonRows) {
      QCOMPARE(e.source, std::string("ar"));
      QCOMPARE(e.modules, 42);
      QCOMPARE(e.shareLower, double(e.lower) / 42);
    }
    // Every cell's interval is the t interval of its two seed rows.
    for (const auto& c : first_.cells) {
      std::vector<double> kl;
      for (const auto& r : first_.seedRows)
        if (r.source == c.source && r.decoding == c.decoding) kl.push_back(r.kl);
      QCOMPARE(int(kl.size()), 2);
      QCOMPARE(c.kl.n, 2);
      QVERIFY(std::abs(c.kl.mean - 0.5 * (kl[0] + kl[1])) < 1e-12);
      const double sd = std::abs(kl[0] - kl[1]) / std::sqrt(2.0);
      QVERIFY(std::abs(c.kl.halfWidth - 12.706 * sd / std::sqrt(2.0)) < 1e-9);
    }
    // Sampled evaluation differs from greedy on the same pruned model.
    double greedyKl = -1, sampledKl = -1;
    for (const auto& r : first_.seedRows)
      if (r.source == "fixed" && r.seed == 0) (r.decoding == "greedy" ? greedyKl : sampledKl) = r.kl;
    QVERIFY(greedyKl >= 0 && sampledKl >= 0 && greedyKl != sampledKl);

    // The study file holds the same rows and cells.
    const fs::path written = sdw::gpu::writeStudy(first_, path("study.sdw.h5"), false);
    QVERIFY(fs::exists(written));
    QVERIFY(!fs::exists(written.string() + ".partial"));
    const StudyResult back = sdw::gpu::readStudy(written);
    QCOMPARE(back.seedRows.size(), first_.seedRows.size());
    for (std::size_t i = 0; i < back.seedRows.size(); ++i) {
      QCOMPARE(back.seedRows[i].kl, first_.seedRows[i].kl);
      QCOMPARE(back.seedRows[i].source, first_.seedRows[i].source);
    }
    QCOMPARE(back.cells.size(), first_.cells.size());
    QCOMPARE(back.cells[0].kl.halfWidth, first_.cells[0].kl.halfWidth);
    QCOMPARE(back.epsilonCells[0].shareLower.mean, first_.epsilonCells[0].shareLower.mean);
    QCOMPARE(back.settings.seeds, first_.settings.seeds);
  }

  void secondRunReusesEverything() {
    const StudyResult again = sdw::gpu::runStudy(tiny(path("study.work")), path("study.sdw.h5"));
    QCOMPARE(again.stepsReused, 24);
    QCOMPARE(again.seedRows.size(), first_.seedRows.size());
    for (std::size_t i = 0; i < again.seedRows.size(); ++i) QCOMPARE(again.seedRows[i].kl, first_.seedRows[i].kl);
  }

  void cancelThenResume() {
    const StudySettings s = tiny(path("cancel.work"));
    int calls = 0;
    QVERIFY_THROWS_EXCEPTION(sdw::Cancelled, sdw::gpu::runStudy(s, path("cancel.sdw.h5"), [&calls](const sdw::Progress&) {
                               return ++calls < 5;  // stop before the fifth step starts
                             }));
    const StudyResult resumed = sdw::gpu::runStudy(s, path("cancel.sdw.h5"));
    QCOMPARE(resumed.stepsReused, 4);
    QCOMPARE(resumed.seedRows.size(), first_.seedRows.size());
    // Same settings and seeds: the same figures as the uninterrupted study.
    for (std::size_t i = 0; i < resumed.seedRows.size(); ++i)
      QCOMPARE(resumed.seedRows[i].kl, first_.seedRows[i].kl);
  }

  void readerRefusesOtherKinds() {
    bool threw = false;
    try {
      sdw::gpu::readStudy(path("study.work") / "calib-fixed-s0.sdw.h5");
    } catch (const std::runtime_error& e) {
      threw = QString::fromUtf8(e.what()).contains(QStringLiteral("not a study run"));
    }
    QVERIFY(threw);
  }
};

QTEST_GUILESS_MAIN(TestStudy)
#include "test_study.moc"
