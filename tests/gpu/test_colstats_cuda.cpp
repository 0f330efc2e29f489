// The column sum-of-squares CUDA kernel on LibTorch CUDA tensors against a
// LibTorch float64 reference. Label: gpu. Skips without a usable device.

#include "gpu/colstats_ops.h"
#include "gpu/device.h"
#include "tests/gpu/require_gpu.h"

#include <torch/torch.h>

#include <QtTest>

class TestColstatsCuda : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    SDW_REQUIRE_GPU();
  }

  void matchesReference_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<QString>("dtype");
    for (const char* dt : {"f32", "bf16", "f16"}) {
      QTest::addRow("1x1 %s", dt) << 1 << 1 << dt;
      QTest::addRow("odd 37x61 %s", dt) << 37 << 61 << dt;
      QTest::addRow("wide 3x14336 %s", dt) << 3 << 14336 << dt;
      QTest::addRow("tall 70000x129 %s", dt) << 70000 << 129 << dt;
      QTest::addRow("llama 2048x4096 %s", dt) << 2048 << 4096 << dt;
    }
  }

  void matchesReference() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(QString, dtype);
    const auto st = dtype == "f32" ? torch::kFloat : dtype == "bf16" ? torch::kBFloat16 : torch::kHalf;
    torch::manual_seed(rows * 7 + cols);
    const auto x = torch::randn({rows, cols}, torch::dtype(st).device(torch::kCUDA)) * 3.0;
    // Guard regions around the accumulator catch out-of-bounds writes.
    auto buf = torch::full({cols + 64}, 12345.0f, torch::dtype(torch::kFloat).device(torch::kCUDA));
    auto acc = buf.narrow(0, 32, cols);
    acc.fill_(1.0f);  // accumulate onto existing values
    sdw::gpu::accumulateColumnSumSquares(x, acc);
    torch::cuda::synchronize();
    const auto ref = x.to(torch::kDouble).square().sum(0) + 1.0;
    const double rel = ((acc.to(torch::kDouble) - ref).norm() / ref.norm()).item<double>();
    QVERIFY2(rel < 1e-5, qPrintable(QStringLiteral("relative error %1").arg(rel)));
    const auto guardLo = buf.narrow(0, 0, 32), guardHi = buf.narrow(0, 32 + cols, 32);
    QVERIFY(guardLo.eq(12345.0f).all().item<bool>());
    QVERIFY(guardHi.eq(12345.0f).all().item<bool>());
  }

  void stridedRows() {
    // A view with a row stride larger than the width (e.g. a slice of a wider activation).
    const auto wide = torch::randn({300, 512}, torch::dtype(torch::kBFloat16).device(torch::kCUDA));
    const auto x = wide.narrow(1, 64, 200);
    auto acc = torch::zeros({200}, torch::dtype(torch::kFloat).device(torch::kCUDA));
    sdw::gpu::accumulateColumnSumSquares(x, acc);
    const auto ref = x.to(torch::kDouble).square().sum(0);
    QVERIFY(((acc.to(torch::kDouble) - ref).norm() / ref.norm()).item<double>() < 1e-5);
  }
};

QTEST_GUILESS_MAIN(TestColstatsCuda)
#include "test_colstats_cuda.moc"
