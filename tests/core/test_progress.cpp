// ProgressMeter: fraction, smoothed rate and ETA from progress samples.

#include "core/progress.h"

#include <QtTest>

using namespace std::chrono_literals;
using Clock = sdw::ProgressMeter::Clock;

class TestProgress : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void steadyRateGivesExactEta() {
    const auto t0 = Clock::time_point{};
    sdw::ProgressMeter m(3.0, t0);
    sdw::ProgressStatus s;
    for (int i = 1; i <= 10; ++i) s = m.update({100.0 * i, 2000, "tokens", ""}, t0 + i * 1s);
    QCOMPARE(s.fraction, 0.5);
    QVERIFY(std::abs(s.ratePerSecond - 100.0) < 1e-9);
    QVERIFY(s.etaSeconds.has_value());
    QVERIFY(std::abs(*s.etaSeconds - 10.0) < 1e-9);
    QCOMPARE(s.elapsedSeconds, 10.0);
  }

  void unknownTotalHasNoEta() {
    const auto t0 = Clock::time_point{};
    sdw::ProgressMeter m(3.0, t0);
    m.update({10, 0, "files", ""}, t0 + 1s);
    const auto s = m.update({20, 0, "files", ""}, t0 + 2s);
    QCOMPARE(s.fraction, -1.0);
    QVERIFY(!s.etaSeconds.has_value());
    QVERIFY(std::abs(s.ratePerSecond - 10.0) < 1e-9);
  }

  void rateFollowsAChangeSmoothly() {
    const auto t0 = Clock::time_point{};
    sdw::ProgressMeter m(2.0, t0);
    double done = 0;
    sdw::ProgressStatus s;
    for (int i = 1; i <= 5; ++i) s = m.update({done += 100, 1e6, "", ""}, t0 + i * 1s);
    QVERIFY(std::abs(s.ratePerSecond - 100) < 1e-9);
    s = m.update({done += 200, 1e6, "", ""}, t0 + 6s);  // one faster second
    QVERIFY(s.ratePerSecond > 100 && s.ratePerSecond < 200);
    for (int i = 7; i <= 40; ++i) s = m.update({done += 200, 1e6, "", ""}, t0 + i * 1s);
    QVERIFY(std::abs(s.ratePerSecond - 200) < 1);
  }

  void fractionIsClamped() {
    sdw::ProgressMeter m;
    QCOMPARE(m.update({12, 10, "", ""}).fraction, 1.0);
  }

  void reportOrThrowStops() {
    int calls = 0;
    sdw::ProgressFn fn = [&](const sdw::Progress& p) {
      ++calls;
      return p.done < 3;
    };
    sdw::reportOrThrow(fn, {1, 10, "", ""});
    QVERIFY_THROWS_EXCEPTION(sdw::Cancelled, sdw::reportOrThrow(fn, {5, 10, "", ""}));
    QCOMPARE(calls, 2);
    sdw::reportOrThrow({}, {5, 10, "", ""});  // no callback: never stops
  }
};

QTEST_GUILESS_MAIN(TestProgress)
#include "test_progress.moc"
