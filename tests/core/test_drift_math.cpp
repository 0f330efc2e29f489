// core/drift: relative discrepancy, per-cell averaging, plateau, the step
// reaching 90% of it, and the median / inter-quartile band across layers, on
// hand-made curves.

#include "core/drift.h"

#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

using namespace sdw::drift;

class TestDriftMath : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void relativeDiscrepancyValues() {
    const std::vector<float> d = {3, 4};        // ||d|| = 5
    const std::vector<float> p = {3, 4 + 2.5f}; // ||p - d|| = 2.5
    QCOMPARE(relativeDiscrepancy(p, d), 0.5);
    QCOMPARE(relativeDiscrepancy(d, d), 0.0);
    const std::vector<float> z = {0, 0};
    QCOMPARE(relativeDiscrepancy(z, z), 0.0);
    QVERIFY(std::isinf(relativeDiscrepancy(d, z)));
    const std::vector<float> three = {1, 2, 3};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, relativeDiscrepancy(three, d));
  }

  void accumulatorAverages() {
    DriftAccumulator acc(2, 3);
    acc.add(0, 0, 1.0);
    acc.add(0, 0, 3.0);
    acc.add(1, 2, 5.0);
    const auto m = acc.mean();
    QCOMPARE(m.size(), std::size_t{6});
    QCOMPARE(m[0], 2.0);
    QCOMPARE(m[5], 5.0);
    QVERIFY(std::isnan(m[1]));  // no value: NaN, not 0
    QCOMPARE(acc.counts()[0], 2LL);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, acc.add(2, 0, 1.0));
  }

  void quantileMatchesNumpy() {
    // numpy.quantile([1, 2, 3, 4], [0.25, 0.5, 0.75]) = [1.75, 2.5, 3.25]
    QCOMPARE(quantile({4, 1, 3, 2}, 0.25), 1.75);
    QCOMPARE(quantile({4, 1, 3, 2}, 0.5), 2.5);
    QCOMPARE(quantile({4, 1, 3, 2}, 0.75), 3.25);
    QCOMPARE(quantile({7}, 0.25), 7.0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    QCOMPARE(quantile({nan, 1, 3}, 0.5), 2.0);  // NaNs ignored
    QVERIFY(std::isnan(quantile({nan}, 0.5)));
  }

  void plateauAndStep90() {
    // 8 steps, 3 layers. Layer 0 saturates at 1.0 from step 3 on (0, .5, .8,
    // then 1): plateau 1, 90% (0.9) first reached at step 3. Layer 1 is flat
    // 0.2: plateau 0.2, step 0. Layer 2 is all zeros: no drift, step90 -1.
    const int T = 8, L = 3;
    std::vector<double> r(T * L, 0.0);
    const double l0[T] = {0, 0.5, 0.8, 1, 1, 1, 1, 1};
    for (int t = 0; t < T; ++t) {
      r[t * L + 0] = l0[t];
      r[t * L + 1] = 0.2;
    }
    const DriftSummary s = summarizeDrift(r, T, L);
    QCOMPARE(s.plateau[0], 1.0);
    QCOMPARE(s.step90[0], 3);
    QVERIFY(std::abs(s.plateau[1] - 0.2) < 1e-15);
    QCOMPARE(s.step90[1], 0);
    QCOMPARE(s.plateau[2], 0.0);
    QCOMPARE(s.step90[2], -1);
  }

  void plateauIsMeanOfLastHalf() {
    // 5 steps: last half = steps 2, 3, 4 (from 5/2 = 2). Values 10, 20, 1, 2, 3:
    // plateau 2; 90% = 1.8, first reached at step 0 (10 >= 1.8).
    const std::vector<double> r = {10, 20, 1, 2, 3};
    const DriftSummary s = summarizeDrift(r, 5, 1);
    QCOMPARE(s.plateau[0], 2.0);
    QCOMPARE(s.step90[0], 0);
    // A rising curve 0..0.9 over 10 steps: plateau = mean(0.5..0.9) = 0.7,
    // 0.63 first reached at step 7 (0.7).
    std::vector<double> rise;
    for (int t = 0; t < 10; ++t) rise.push_back(0.1 * t);
    const DriftSummary s2 = summarizeDrift(rise, 10, 1);
    QVERIFY(std::abs(s2.plateau[0] - 0.7) < 1e-12);
    QCOMPARE(s2.step90[0], 7);
  }

  void medianAndIqrAcrossLayers() {
    // 2 steps, 4 layers. Step 0: layers 1, 2, 3, 4 -> median 2.5, q1 1.75, q3 3.25.
    // Step 1: layers 0, 0, 0, 8 -> median 0, q1 0, q3 2.
    const std::vector<double> r = {4, 1, 3, 2, 0, 8, 0, 0};
    const DriftSummary s = summarizeDrift(r, 2, 4);
    QCOMPARE(s.median[0], 2.5);
    QCOMPARE(s.q1[0], 1.75);
    QCOMPARE(s.q3[0], 3.25);
    QCOMPARE(s.median[1], 0.0);
    QCOMPARE(s.q1[1], 0.0);
    QCOMPARE(s.q3[1], 2.0);
  }

  void badShapesThrow() {
    const std::vector<double> r = {1, 2, 3};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, summarizeDrift(r, 2, 2));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, summarizeDrift(r, 0, 3));
  }
};

QTEST_APPLESS_MAIN(TestDriftMath)
#include "test_drift_math.moc"
