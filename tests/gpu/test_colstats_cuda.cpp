// The column sum-of-squares CUDA kernel on LibTorch CUDA tensors against a
// LibTorch float64 reference, and the calibration accumulator's sum x x^T of 16-bit
// rows (multiplied on TF32 tensor cores) against float64. Label: gpu. Skips without a
// usable device.

#include "gpu/calibration_internal.h"
#include "gpu/colstats_ops.h"
#include "gpu/device.h"
#include "gpu/model_config.h"
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

  // bf16 and fp16 rows are exact in TF32: the accumulator's sums of them stay within fp32
  // accumulation error of a float64 sum x x^T (an fp32 row turns TF32 off for good).
  void accumulatorSixteenBitRows_data() {
    QTest::addColumn<QString>("dtype");
    QTest::newRow("bf16") << "bf16";
    QTest::newRow("fp16") << "fp16";
    QTest::newRow("fp32") << "fp32";
  }
  void accumulatorSixteenBitRows() {
    QFETCH(QString, dtype);
    const auto st = dtype == "fp32" ? torch::kFloat : dtype == "bf16" ? torch::kBFloat16 : torch::kHalf;
    sdw::gpu::ModelConfig c = sdw::gpu::parseModelConfig(
        R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
            "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64,
            "max_position_embeddings": 128, "rms_norm_eps": 1e-5})");
    sdw::gpu::StatsAccumulator acc(c, torch::Device(torch::kCUDA), -1, true);
    torch::manual_seed(3);
    const std::string first = acc.inputs().front().name;
    std::vector<torch::Tensor> all;
    for (const int n : {5, 700, 1, 3000, 64}) {  // staged decode-sized groups and large direct ones
      const auto x = (torch::randn({n, 256}, torch::dtype(torch::kFloat).device(torch::kCUDA)) * 4.0).to(st);
      acc.add(first, x, static_cast<int>(all.size() % 2));
      all.push_back(x);
    }
    acc.flush();
    torch::cuda::synchronize();
    const auto& s = acc.inputs().front();
    auto ref = torch::zeros({256, 256}, torch::kDouble), refA = torch::zeros({256, 256}, torch::kDouble);
    for (std::size_t i = 0; i < all.size(); ++i) {
      const auto xd = all[i].to(torch::kCPU).to(torch::kDouble);
      ref += xd.t().mm(xd);
      if (i % 2 == 0) refA += xd.t().mm(xd);
    }
    const double rel = ((s.xtx.cpu().to(torch::kDouble) - ref).norm() / ref.norm()).item<double>();
    const double relA = ((s.xtxA.cpu().to(torch::kDouble) - refA).norm() / refA.norm()).item<double>();
    qInfo("%s: sum x x^T relative error %.3g, half a %.3g", qPrintable(dtype), rel, relA);
    QVERIFY2(rel < 1e-6 && relA < 1e-6, qPrintable(QStringLiteral("relative error %1, half a %2").arg(rel).arg(relA)));
    QCOMPARE(s.tokens, std::int64_t{5 + 700 + 1 + 3000 + 64});
  }
};

QTEST_GUILESS_MAIN(TestColstatsCuda)
#include "test_colstats_cuda.moc"
