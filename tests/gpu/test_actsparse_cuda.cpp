// Run-time activation sparsity in the CUDA decode engine (gpu/kernels/actsparse.cu,
// gpu/decode_engine.cpp): the row kernel against the eager pass's own functions
// (sparsifyActivations: per-token top-k with ties kept; thresholdActivations) on
// random and tie-heavy rows of every dtype, both input layouts; then whole models:
// greedy decoding through the engine equals the eager forward pass under top-k
// (one p_x and per layer) and under fixed thresholds, fp32 tokens equal and logits
// within 1e-4 relative (float32; why not bf16: engineEqualsEager_data). Label: gpu.
// Skips without a usable device.

#include "gpu/device.h"
#include "gpu/model.h"
#include "gpu/model_internal.h"
#include "tests/gpu/require_gpu.h"

#include <torch/types.h>
#ifdef SDW_TORCH_CUDA
#include "gpu/kernels/actsparse.cuh"

#include <c10/cuda/CUDAStream.h>
#endif

#include <QtTest>

#include <cmath>
#include <filesystem>

using namespace sdw::gpu;
namespace fs = std::filesystem;

namespace {

const fs::path kRef = fs::path(SDW_SOURCE_DIR) / "tests/data/reference";

LoadOptions opts(const std::string& dtype, bool engine) {
  LoadOptions o;
  o.device = "cuda";
  o.dtype = dtype;
  o.decodeEngine = engine;
  return o;
}

// Largest |a - b| over the decode steps' logits while the tokens agree, relative
// to max(1, |a| max).
double worstStep(const GenerationResult& a, const GenerationResult& b, std::int64_t V) {
  double worst = 0;
  const std::size_t n = std::min(a.tokens.size(), b.tokens.size());
  for (std::size_t s = 1; s < n; ++s) {
    if (a.tokens[s - 1] != b.tokens[s - 1]) break;
    double d = 0, m = 1;
    for (std::int64_t v = 0; v < V; ++v) {
      d = std::max(d, std::abs(static_cast<double>(a.logits[s * V + v]) - b.logits[s * V + v]));
      m = std::max(m, std::abs(static_cast<double>(a.logits[s * V + v])));
    }
    worst = std::max(worst, d / m);
  }
  return worst;
}

}  // namespace

class TestActSparseCuda : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    SDW_REQUIRE_GPU();
  }

  void rowsMatchEagerFunctions_data() {
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("cols");
    QTest::addColumn<double>("p");
    QTest::addColumn<bool>("ties");
    QTest::addColumn<bool>("interleaved");
    for (const char* dt : {"float32", "bfloat16", "float16"}) {
      QTest::addRow("%s 1x4096 p0.5", dt) << dt << 1 << 4096 << 0.5 << false << false;
      QTest::addRow("%s 3x14336 p0.4", dt) << dt << 3 << 14336 << 0.4 << false << false;
      QTest::addRow("%s 2x1000 p0.75 ties", dt) << dt << 2 << 1000 << 0.75 << true << false;
      QTest::addRow("%s 5x4096 p0.5 interleaved", dt) << dt << 5 << 4096 << 0.5 << false << true;
      QTest::addRow("%s 4x33 p0.9 ties interleaved", dt) << dt << 4 << 33 << 0.9 << true << true;
    }
  }
  void rowsMatchEagerFunctions() {
#ifndef SDW_TORCH_CUDA
    QSKIP("built without CUDA");
#else
    QFETCH(QString, dtype);
    QFETCH(int, batch);
    QFETCH(int, cols);
    QFETCH(double, p);
    QFETCH(bool, ties);
    QFETCH(bool, interleaved);
    const auto st = dtype == "float32" ? torch::kFloat : dtype == "bfloat16" ? torch::kBFloat16 : torch::kHalf;
    const auto dt = dtype == "float32" ? sdw::kernels::DType::F32
                    : dtype == "bfloat16" ? sdw::kernels::DType::BF16
                                          : sdw::kernels::DType::F16;
    torch::manual_seed(7 + cols);
    const auto dev = torch::TensorOptions().device(torch::kCUDA);
    torch::Tensor x = torch::randn({batch, cols}, dev.dtype(torch::kFloat));
    if (ties) x = (x * 3).round() / 4;  // few distinct magnitudes: many ties at the cut
    x = x.to(st);
    const auto run = [&](int keep, float t) {
      // Row-major [batch, cols], or the SpMV's interleaved [cols, 8] (row b in column b).
      torch::Tensor buf = interleaved ? torch::full({cols, 8}, 3.0, dev.dtype(st)) : x.clone();
      if (interleaved) buf.narrow(1, 0, batch).copy_(x.t());
      const sdw::kernels::XLayout l = interleaved ? sdw::kernels::XLayout{1, 8} : sdw::kernels::XLayout{cols, 1};
      const auto e = sdw::kernels::launchSparsifyRows(buf.data_ptr(), dt, cols, batch, l, keep, t,
                                                      c10::cuda::getCurrentCUDAStream(), true);
      if (e != cudaSuccess) qFatal("launch: %s", cudaGetErrorString(e));
      if (interleaved) {
        if (!buf.narrow(1, batch, 8 - batch).eq(3.0).all().item<bool>())  // columns past the batch untouched
          qFatal("the kernel wrote columns past the batch");
        return buf.narrow(1, 0, batch).t().contiguous();
      }
      return buf;
    };
    const int keep = static_cast<int>(std::clamp<long long>(std::llround((1.0 - p) * cols), 1, cols));
    const torch::Tensor want = sparsifyActivations(x, p);
    const torch::Tensor got = run(keep, -1.f);
    QVERIFY(got.equal(want));
    const auto kept = got.ne(0).sum(1);
    qInfo("kept per row: %lld to %lld of %d (keep %d)", static_cast<long long>(kept.min().item<std::int64_t>()),
          static_cast<long long>(kept.max().item<std::int64_t>()), cols, keep);
    QVERIFY(kept.ge(keep - x.eq(0).sum(1).max().item<int>()).all().item<bool>());
    // The threshold form, at the median magnitude of the first row.
    const float t = x.narrow(0, 0, 1).abs().to(torch::kFloat).median().item<float>();
    QVERIFY(run(0, t).equal(thresholdActivations(x, t)));
    QVERIFY(run(0, 0.f).equal(thresholdActivations(x, 0.f)));
#endif
  }

  // Whole models: the engine under activation sparsity decodes as the eager pass.
  void engineEqualsEager_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<QString>("mode");
    for (const char* m : {"llama-tiny", "qwen3-tiny", "qwen2-tiny"}) {
      // float32 only: in bf16 the engine's norm rounds a few inputs differently from the
      // eager pass, so an entry at the cut can be kept by one and dropped by the other (a
      // whole entry of a 64-wide input of these tiny models). Measured on the H200: bf16
      // logits 0.11-0.23 relative apart under top-k, 0.031-0.036 under thresholds, while
      // the kernel itself equals the eager functions in every dtype (rowsMatchEagerFunctions).
      for (const char* mode : {"topk", "perlayer", "thresholds"})
        QTest::addRow("%s float32 %s", m, mode) << m << "float32" << mode;
    }
  }
  void engineEqualsEager() {
    QFETCH(QString, model);
    QFETCH(QString, dtype);
    QFETCH(QString, mode);
    const fs::path dir = kRef / model.toStdString();
    const ModelConfig c = loadModelConfig(dir);
    const auto setSparsity = [&](LoadOptions& o) {
      if (mode == "topk") o.activationSparsity = 0.5;
      if (mode == "perlayer")
        for (int l = 0; l < c.numLayers; ++l) o.activationSparsityPerLayer.push_back(0.2 + 0.5 * l / c.numLayers);
      if (mode == "thresholds")
        for (int l = 0; l < c.numLayers; ++l) o.activationThresholds.push_back({0.5f + 0.1f * l, 0.05f, -1.f, 0.02f});
    };
    LoadOptions eo = opts(dtype.toStdString(), false), go = opts(dtype.toStdString(), true);
    setSparsity(eo);
    setSparsity(go);
    const auto eager = Model::load(dir, eo);
    const auto engine = Model::load(dir, go);
    const QString desc = QString::fromStdString(engine->engineDescription());
    qInfo("%s", qPrintable(desc));
    QVERIFY2(desc.startsWith("CUDA graph"), qPrintable(desc));
    GenerationOptions gen;
    gen.maxNewTokens = 24;
    gen.keepLogits = true;
    const std::vector<std::int32_t> p = {1, 5, 9, 13, 17};
    const auto ref = eager->generate(p, gen);
    const auto got = engine->generate(p, gen);
    const double worst = worstStep(ref, got, c.vocabSize);
    qInfo("max relative logit difference: %g", worst);
    QCOMPARE(got.tokens, ref.tokens);
    QVERIFY(worst < 1e-4);
  }
};

QTEST_GUILESS_MAIN(TestActSparseCuda)
#include "test_actsparse_cuda.moc"
