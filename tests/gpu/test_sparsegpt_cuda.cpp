// SparseGPT on CUDA (the column loop as one kernel launch per block,
// gpu/kernels/sparsegpt.cu) against the same solver on the CPU (the ATen
// loop, itself checked against an fp64 reference in test_solvers): the same
// pruned positions, the same weights and losses up to fp32 rounding, for N:M
// patterns up to 16:32, unstructured 50%, a short last block and a row count
// that does not fill the last CUDA block; the pattern holds on the device.

#include "gpu/device.h"
#include "gpu/pruning.h"
#include "solver_problem.h"

#include <QtTest>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using namespace sdw::gpu;

using sdw::testing::makeProblem;
using sdw::testing::Problem;

class TestSparseGptCuda : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    const DeviceInfo& d = deviceInfo();
    if (!d.cudaAvailable) QSKIP(qPrintable(QStringLiteral("no usable GPU: %1").arg(QString::fromStdString(d.reason))));
    QVERIFY(d.kernelsBuilt);
  }

  void cudaMatchesCpu_data() {
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::newRow("2:4 200x256") << "2:4" << 200 << 256;
    QTest::newRow("4:8 64x160 (short last block)") << "4:8" << 64 << 160;
    QTest::newRow("8:16 130x384") << "8:16" << 130 << 384;
    QTest::newRow("16:32 97x256") << "16:32" << 97 << 256;
    QTest::newRow("unstructured50 150x192") << "unstructured50" << 150 << 192;
  }
  void cudaMatchesCpu() {
    QFETCH(QString, pattern);
    QFETCH(int, rows);
    QFETCH(int, cols);
    const Problem p = makeProblem(rows, cols, static_cast<std::uint32_t>(rows * 31 + cols));
    const PruningPattern pat = parsePruningPattern(pattern.toStdString());
    SparseGptOptions cpu;
    SparseGptOptions cuda;
    cuda.device = "cuda";
    const SolveResult a = solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, pat, cpu);
    const SolveResult b = solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, pat, cuda);
    QCOMPARE(b.weight.size(), a.weight.size());

    std::int64_t differ = 0, zerosB = 0;
    double maxDiff = 0, maxAbs = 0;
    for (std::size_t k = 0; k < a.weight.size(); ++k) {
      const bool za = a.weight[k] == 0.f, zb = b.weight[k] == 0.f;
      zerosB += zb;
      if (za != zb) ++differ;
      else maxDiff = std::max(maxDiff, static_cast<double>(std::fabs(a.weight[k] - b.weight[k])));
      maxAbs = std::max(maxAbs, static_cast<double>(std::fabs(a.weight[k])));
    }
    qInfo("%s: %lld of %zu positions pruned differently; max |dw| %.3g (max |w| %.3g); loss cpu %.6g cuda %.6g",
          qPrintable(pattern), static_cast<long long>(differ), a.weight.size(), maxDiff, maxAbs, a.loss, b.loss);
    QVERIFY2(differ * 1000 <= static_cast<std::int64_t>(a.weight.size()), "more than 0.1% of positions differ");
    QVERIFY(maxDiff <= 1e-3 * maxAbs);
    QVERIFY(std::fabs(a.loss - b.loss) <= 1e-3 * std::fabs(a.loss));
    QVERIFY(std::fabs(a.outputLoss - b.outputLoss) <= 1e-3 * std::fabs(a.outputLoss));
    QCOMPARE(zerosB * 2, static_cast<std::int64_t>(b.weight.size()));  // 50% in every pattern here

    if (!pat.unstructured) {  // at most N kept in every group of M on the device's result
      for (int r = 0; r < rows; ++r)
        for (int g = 0; g < cols; g += pat.m) {
          int kept = 0;
          for (int j = 0; j < pat.m; ++j) kept += b.weight[static_cast<std::size_t>(r * cols + g + j)] != 0.f;
          QVERIFY(kept <= pat.n);
        }
    }
  }
};

QTEST_GUILESS_MAIN(TestSparseGptCuda)
#include "test_sparsegpt_cuda.moc"
