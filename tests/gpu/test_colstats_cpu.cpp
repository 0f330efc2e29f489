// Column sum of squares through the plain-type API on the CPU backend,
// against a float64 loop.

#include "gpu/colstats.h"

#include <QtTest>

#include <random>

class TestColstatsCpu : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void matchesLoop_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::newRow("1x1") << 1 << 1;
    QTest::newRow("odd") << 37 << 61;
    QTest::newRow("wide") << 5 << 4096;
    QTest::newRow("tall") << 3000 << 17;
  }
  void matchesLoop() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    std::mt19937 rng(rows * 131 + cols);
    std::normal_distribution<float> nd(0.f, 2.f);
    std::vector<float> x(static_cast<std::size_t>(rows) * cols);
    for (auto& v : x) v = nd(rng);
    const auto got = sdw::gpu::columnSumSquares(x, rows, cols, sdw::gpu::Backend::Cpu);
    QCOMPARE(static_cast<int>(got.size()), cols);
    for (int c = 0; c < cols; ++c) {
      double ref = 0;
      for (int r = 0; r < rows; ++r) ref += double(x[std::size_t(r) * cols + c]) * x[std::size_t(r) * cols + c];
      QVERIFY2(std::abs(got[c] - ref) <= 1e-5 * std::max(1.0, ref),
               qPrintable(QStringLiteral("col %1: %2 vs %3").arg(c).arg(got[c]).arg(ref)));
    }
  }

  void rejectsWrongShape() {
    std::vector<float> x(10);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             sdw::gpu::columnSumSquares(x, 3, 4, sdw::gpu::Backend::Cpu));
  }
};

QTEST_GUILESS_MAIN(TestColstatsCpu)
#include "test_colstats_cpu.moc"
