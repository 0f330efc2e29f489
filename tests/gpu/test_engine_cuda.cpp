// The decode engine on CUDA (gpu/decode_engine.cpp, gpu/kernels/decode.cu)
// against the eager forward pass: greedy tokens equal in fp32 for every linear
// on the sample's pruned checkpoint (the sparse engine equal to the dense one on
// the same zero-filled weights); in bf16, per-step logits within bf16 tolerance
// of the eager path for every linear, every N:M pattern and batches 1-8 (ragged
// prompts), on Llama and Qwen3 shapes; the captured graph bitwise equal to the
// same kernels launched one by one. Label: gpu. Skips without a usable device.

#include "gpu/device.h"
#include "gpu/model.h"
#include "gpu/spmv.h"
#include "tests/gpu/sparse_fixture.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>

using namespace sdw::gpu;
namespace fs = std::filesystem;

namespace {

const fs::path kRef = fs::path(SDW_SOURCE_DIR) / "tests/data/reference";

LoadOptions opts(const std::string& dtype, Linear l, bool engine = true, bool graph = true) {
  LoadOptions o;
  o.device = "cuda";
  o.dtype = dtype;
  o.linear = l;
  o.decodeEngine = engine;
  o.cudaGraph = graph;
  o.tuningFile = defaultTuningPath(fs::path(SDW_SOURCE_DIR) / "resources", deviceInfo().name);
  return o;
}

std::vector<std::vector<std::int32_t>> prompts(int batch, std::int64_t vocab) {
  std::vector<std::vector<std::int32_t>> out;
  for (int b = 0; b < batch; ++b) {
    std::vector<std::int32_t> p;
    for (int t = 0; t < 5 + 3 * b; ++t) p.push_back(static_cast<std::int32_t>((17 + 31 * t + 101 * b) % vocab));
    out.push_back(p);
  }
  return out;
}

// Compares the decode-step logit rows of two runs while their inputs agree (row s
// is computed from tokens 0..s-1): the largest |difference| relative to
// max(1, |logit|max), the number of rows compared, and, where the runs pick
// different tokens, whether that was a near tie in `a` (the two tokens' logits
// within `tie` relative; two bf16 implementations may then legitimately differ).
struct StepComparison {
  double worst = 0;
  int steps = 0;
  bool divergedAtTie = true;
};
StepComparison compareSteps(const GenerationResult& a, const GenerationResult& b, std::int64_t V, double tie = 0.03) {
  StepComparison c;
  const std::size_t n = std::min(a.tokens.size(), b.tokens.size());
  for (std::size_t s = 1; s < n; ++s) {  // row 0 comes from the (shared) prefill
    if (a.tokens[s - 1] != b.tokens[s - 1]) break;
    double d = 0, m = 1;
    for (std::int64_t v = 0; v < V; ++v) {
      const double x = a.logits[s * V + v], y = b.logits[s * V + v];
      d = std::max(d, std::abs(x - y));
      m = std::max(m, std::abs(x));
    }
    c.worst = std::max(c.worst, d / m);
    ++c.steps;
    if (a.tokens[s] != b.tokens[s]) {
      const double gap = a.logits[s * V + a.tokens[s]] - a.logits[s * V + b.tokens[s]];
      c.divergedAtTie = gap <= tie * m;
      qInfo("    tokens differ at step %zu: logit gap %.4f (scale %.2f)", s, gap, m);
      break;
    }
  }
  return c;
}

ModelConfig shape(bool qwen) {
  ModelConfig c = loadModelConfig(kRef / (qwen ? "qwen3-tiny" : "llama-tiny"));
  c.hiddenSize = 512;
  c.intermediateSize = 1024;
  c.numLayers = 3;
  c.numHeads = qwen ? 10 : 8;  // Qwen3: 5 query heads per KV head
  c.numKvHeads = 2;
  c.headDim = qwen ? 64 : 128;
  c.vocabSize = 2048;
  c.maxPositionEmbeddings = 1024;
  c.tieWordEmbeddings = false;
  return c;
}

}  // namespace

class TestEngineCuda : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path kPruned;  // the sample pruned 2:4 by magnitude, with its packed file

 private Q_SLOTS:
  void initTestCase() {
    const auto& d = deviceInfo();
    if (!d.cudaAvailable) QSKIP(qPrintable(QStringLiteral("no usable GPU: %1").arg(QString::fromStdString(d.reason))));
    qInfo("device: %s", describeDevice(d).c_str());
    QVERIFY(tmp_.isValid());
    kPruned = fs::path(tmp_.path().toStdString()) / "pruned-2-4";
    sdw::testing::writeNmPruned(kPruned, {2, 4});
  }

  // fp32: the engine's greedy tokens equal the eager forward's, every linear.
  void fp32TokensEqualEager() {
    const auto eager = Model::load(kPruned, opts("float32", Linear::Cublas, false));
    GenerationOptions go;
    go.maxNewTokens = 40;
    go.keepLogits = true;
    const std::vector<std::int32_t> p = {260, 1158, 1174, 482};
    const auto ref = eager->generate(p, go);
    for (const Linear l : {Linear::Cublas, Linear::Dense, Linear::Sparse}) {
      const auto m = Model::load(kPruned, opts("float32", l));
      qInfo("%s: %s", linearName(l).c_str(), m->engineDescription().c_str());
      QVERIFY(QString::fromStdString(m->engineDescription()).startsWith("CUDA graph"));
      const auto r = m->generate(p, go);
      QCOMPARE(r.tokens, ref.tokens);
      const auto cmp = compareSteps(ref, r, m->config().vocabSize);
      qInfo("  max relative logit difference over %d steps: %g", cmp.steps, cmp.worst);
      QVERIFY(cmp.worst < 1e-4);
      // Ragged batch of 3.
      const auto batch = prompts(3, m->config().vocabSize);
      const auto rb = m->generateBatch(batch, go);
      const auto eb = eager->generateBatch(batch, go);
      for (std::size_t i = 0; i < rb.size(); ++i) QCOMPARE(rb[i].tokens, eb[i].tokens);
    }
  }

  // bf16 checkpoints with goldens (Llama, tied Llama, Qwen3): engine vs eager per step.
  void bf16CheckpointsWithinTolerance_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("linear");
    for (const char* m : {"llama-tiny", "llama-tiny-tied", "qwen3-tiny", "qwen2-tiny", "mistral-tiny"})
      for (const Linear l : {Linear::Cublas, Linear::Dense})
        QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(m).arg(QString::fromStdString(linearName(l)))))
            << m << static_cast<int>(l);
    QTest::newRow("brown-llama pruned sparse") << "pruned" << static_cast<int>(Linear::Sparse);
  }
  void bf16CheckpointsWithinTolerance() {
    QFETCH(QString, model);
    QFETCH(int, linear);
    const fs::path dir = model == "pruned" ? kPruned : kRef / model.toStdString();
    const auto eager = Model::load(dir, opts("bfloat16", Linear::Cublas, false));
    const auto m = Model::load(dir, opts("bfloat16", static_cast<Linear>(linear)));
    GenerationOptions go;
    go.maxNewTokens = 24;
    go.keepLogits = true;
    for (int batch : {1, 4}) {
      const auto ps = prompts(batch, m->config().vocabSize);
      const auto a = eager->generateBatch(ps, go);
      const auto b = m->generateBatch(ps, go);
      for (int i = 0; i < batch; ++i) {
        const auto cmp = compareSteps(a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)],
                                      m->config().vocabSize);
        qInfo("batch %d row %d: %d decode steps compared, max relative difference %.4f", batch, i, cmp.steps,
              cmp.worst);
        QVERIFY2(cmp.steps >= 1 && cmp.divergedAtTie, "the engine picked another token where the eager pass had no near tie");
        QVERIFY2(cmp.worst <= 0.03, qPrintable(QString::number(cmp.worst)));
      }
    }
  }

  // Gemma 3 has no engine kernels: with the engine asked for, decode steps run the eager
  // forward pass (said in the description) and give its tokens and logits, every linear.
  void gemma3FallsBackToEager() {
    const fs::path dir = kRef / "gemma3-tiny";
    if (!fs::exists(dir))
      QSKIP("tests/data/reference/gemma3-tiny: golden not generated yet (tools/reference/arch_goldens.py)");
    const auto eager = Model::load(dir, opts("bfloat16", Linear::Cublas, false));
    GenerationOptions go;
    go.maxNewTokens = 24;  // the prompts and the steps cross the window of 8
    go.keepLogits = true;
    const auto ps = prompts(3, eager->config().vocabSize);
    const auto ref = eager->generateBatch(ps, go);
    for (const Linear l : {Linear::Cublas, Linear::Dense}) {
      const auto m = Model::load(dir, opts("bfloat16", l));
      const QString d = QString::fromStdString(m->engineDescription());
      qInfo("%s: %s", linearName(l).c_str(), qPrintable(d));
      QVERIFY2(d.startsWith("eager forward, cuBLAS") && d.contains("no Gemma3ForCausalLM kernels"), qPrintable(d));
      const auto r = m->generateBatch(ps, go);
      for (std::size_t i = 0; i < r.size(); ++i) {
        QCOMPARE(r[i].tokens, ref[i].tokens);
        QCOMPARE(r[i].logits, ref[i].logits);
      }
    }
    // Packed projections decode through the eager pass too (each unpacked for cuBLAS).
    const ModelConfig c = eager->config();
    const auto sp = Model::randomInit(c, opts("bfloat16", Linear::Sparse), 4, 0.1);
    QVERIFY(QString::fromStdString(sp->engineDescription()).contains("projections packed"));
    const auto rs = sp->generate(ps[0], go);
    QCOMPARE(rs.tokens.size(), std::size_t(24));
    for (const float v : rs.logits) QVERIFY(std::isfinite(v));
  }

  // Every pattern, every batch 1-8, Llama and Qwen3 shapes, every linear: the engine
  // against the eager forward pass on the same (random, packed where sparse) weights.
  void patternsAndBatches_data() {
    QTest::addColumn<bool>("qwen");
    QTest::addColumn<int>("linear");
    QTest::addColumn<QString>("pattern");
    for (const bool qwen : {false, true}) {
      const char* arch = qwen ? "qwen3" : "llama";
      QTest::newRow(qPrintable(QStringLiteral("%1 cublas").arg(arch))) << qwen << int(Linear::Cublas) << "";
      QTest::newRow(qPrintable(QStringLiteral("%1 dense").arg(arch))) << qwen << int(Linear::Dense) << "";
      for (const char* p : {"2:4", "4:8", "8:16", "16:32"})
        QTest::newRow(qPrintable(QStringLiteral("%1 sparse %2").arg(arch, p))) << qwen << int(Linear::Sparse) << p;
    }
  }
  void patternsAndBatches() {
    QFETCH(bool, qwen);
    QFETCH(int, linear);
    QFETCH(QString, pattern);
    const ModelConfig c = shape(qwen);
    LoadOptions eo = opts("bfloat16", static_cast<Linear>(linear), false);
    LoadOptions go_ = opts("bfloat16", static_cast<Linear>(linear));
    if (!pattern.isEmpty()) eo.randomPattern = go_.randomPattern = pattern.toStdString();
    const auto eager = Model::randomInit(c, eo, 7, 0.05);
    const auto m = Model::randomInit(c, go_, 7, 0.05);
    if (!pattern.isEmpty())
      QVERIFY(QString::fromStdString(m->engineDescription()).contains(pattern + " (" + QString::number(7 * 3) + " of"));
    GenerationOptions go;
    go.maxNewTokens = 12;
    go.keepLogits = true;
    for (int batch = 1; batch <= 8; ++batch) {
      const auto ps = prompts(batch, c.vocabSize);
      const auto a = eager->generateBatch(ps, go);
      const auto b = m->generateBatch(ps, go);
      double worst = 0;
      int minSteps = 1 << 20, total = 0;
      for (int i = 0; i < batch; ++i) {
        const auto cmp = compareSteps(a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)], c.vocabSize);
        worst = std::max(worst, cmp.worst);
        minSteps = std::min(minSteps, cmp.steps);
        total += cmp.steps;
        QVERIFY2(cmp.divergedAtTie, qPrintable(QStringLiteral("batch %1 row %2: another token without a near tie").arg(batch).arg(i)));
      }
      qInfo("batch %d: max relative difference %.4f, %d decode steps compared (at least %d per row)", batch, worst, total,
            minSteps);
      QVERIFY(minSteps >= 1);
      QVERIFY2(worst <= 0.03, qPrintable(QStringLiteral("batch %1: %2").arg(batch).arg(worst)));
    }
  }

  // The captured graph replays exactly what the kernels compute launched one by one.
  void graphEqualsLaunches() {
    for (const Linear l : {Linear::Cublas, Linear::Dense, Linear::Sparse}) {
      const auto g = Model::load(kPruned, opts("bfloat16", l, true, true));
      const auto u = Model::load(kPruned, opts("bfloat16", l, true, false));
      QVERIFY(QString::fromStdString(u->engineDescription()).startsWith("fused kernels, no CUDA graph"));
      GenerationOptions go;
      go.maxNewTokens = 30;
      go.keepLogits = true;
      const auto ps = prompts(3, g->config().vocabSize);
      const auto a = g->generateBatch(ps, go), b = u->generateBatch(ps, go);
      for (std::size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(a[i].tokens, b[i].tokens);
        QVERIFY(a[i].logits == b[i].logits);
      }
      // A second call of another length re-captures for its cache and still agrees.
      go.maxNewTokens = 200;
      const auto c1 = g->generate(ps[0], go), c2 = u->generate(ps[0], go);
      QCOMPARE(c1.tokens, c2.tokens);
    }
  }

  // The sparse engine keeps no dense copy of a packed projection.
  void sparseHoldsNoDenseCopy() {
    const auto d = Model::load(kPruned, opts("bfloat16", Linear::Dense));
    const auto s = Model::load(kPruned, opts("bfloat16", Linear::Sparse));
    const std::uint64_t projDense = 6ull * (2 * 256 * 256 + 2 * 128 * 256 + 3 * 256 * 768) * 2;  // brown-llama, bf16
    const std::uint64_t projPacked = projDense / 2 + projDense / 16;  // values + one mask bit per weight
    qInfo("device bytes: dense %llu, sparse %llu", static_cast<unsigned long long>(d->deviceBytes()),
          static_cast<unsigned long long>(s->deviceBytes()));
    QVERIFY(d->deviceBytes() - s->deviceBytes() >= projDense - projPacked - 4096);
  }
};

QTEST_GUILESS_MAIN(TestEngineCuda)
#include "test_engine_cuda.moc"
