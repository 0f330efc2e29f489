// The decode engine on CUDA (gpu/decode_engine.cpp, gpu/kernels/decode.cu)
// against the eager forward pass: greedy tokens equal in fp32 for every linear
// on the sample's pruned checkpoint (the sparse engine equal to the dense one on
// the same zero-filled weights); in bf16, per-step logits within bf16 tolerance
// of the eager path for every linear, every N:M pattern and batches 1-8 (ragged
// prompts), on Llama, Qwen3 and Gemma 3 shapes; Gemma 3 (gemma3-tiny, with final
// logit soft-capping gemma3-softcap-tiny, a pruned copy) through the engine against the
// eager pass in fp32 and bf16; the captured graph bitwise equal to the same kernels
// launched one by one; the sparse launches chosen in the step (bench decode --tune-step)
// written to a table and decoded from it. Label: gpu. Skips without a usable device.

#include "gpu/bench_decode.h"
#include "gpu/device.h"
#include "gpu/kernels/spmv_tc.h"  // spmvUseTensorCores (plain C++)
#include "gpu/model.h"
#include "gpu/spmv.h"
#include "tests/gpu/require_gpu.h"
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

// The bf16 check of an engine against the eager pass: 24 greedy steps from prompts of batch 1
// and 4, per row the decode-step logits within `tolerance` (3%) of their scale while the
// tokens agree, and (atTies) a different token only at a near tie. Returns "" or what failed.
QString bf16WithinTolerance(Model& eager, Model& m, double tolerance = 0.03, bool atTies = true,
                            const std::vector<int>& batches = {1, 4}) {
  GenerationOptions go;
  go.maxNewTokens = 24;
  go.keepLogits = true;
  for (int batch : batches) {
    const auto ps = prompts(batch, m.config().vocabSize);
    const auto a = eager.generateBatch(ps, go);
    const auto b = m.generateBatch(ps, go);
    for (int i = 0; i < batch; ++i) {
      const auto cmp =
          compareSteps(a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)], m.config().vocabSize);
      qInfo("batch %d row %d: %d decode steps compared, max relative difference %.4f", batch, i, cmp.steps, cmp.worst);
      if (cmp.steps < 1 || (atTies && !cmp.divergedAtTie))
        return QStringLiteral("batch %1 row %2: the engine picked another token where the eager pass had no near tie")
            .arg(batch)
            .arg(i);
      if (cmp.worst > tolerance)
        return QStringLiteral("batch %1 row %2: relative difference %3").arg(batch).arg(i).arg(cmp.worst);
    }
  }
  return {};
}

// A random-weight shape of the family ("llama", "qwen3", "gemma3").
ModelConfig shape(const QString& arch) {
  const bool qwen = arch == "qwen3", gemma = arch == "gemma3";
  ModelConfig c = loadModelConfig(kRef / (qwen ? "qwen3-tiny" : gemma ? "gemma3-tiny" : "llama-tiny"));
  c.hiddenSize = 512;
  c.intermediateSize = 1024;
  c.numLayers = 3;  // gemma3-tiny's layer types: sliding, sliding, full (window 8)
  c.numHeads = qwen ? 10 : 8;  // Qwen3: 5 query heads per KV head
  c.numKvHeads = 2;
  c.headDim = qwen ? 64 : gemma ? 256 : 128;  // Gemma 3: its real models' head_dim
  c.vocabSize = 2048;
  c.maxPositionEmbeddings = 1024;
  c.tieWordEmbeddings = gemma;
  if (gemma) c.finalLogitSoftcap = 10.0;
  return c;
}

// A random model of `arch` generating 40 tokens (logits kept) from one prompt, built and
// run as it is (a) and again with the environment variable `name` set to 1 (b; unset
// afterwards, also when it throws): the norm variants (SDW_FUSE_NORMS, SDW_FOLD_NORMS)
// against the default launches.
struct EnvRuns {
  ModelConfig config;
  std::vector<GenerationResult> a, b;
  QString da, db;  // the two engines' descriptions
};
EnvRuns runWithAndWithout(const char* name, const QString& arch, Linear linear, const QString& dtype) {
  EnvRuns r;
  r.config = shape(arch);
  LoadOptions o = opts(dtype.toStdString(), linear);
  if (linear == Linear::Sparse) o.randomPattern = "2:4";
  GenerationOptions go;
  go.maxNewTokens = 40;
  go.keepLogits = true;
  const auto ps = prompts(1, r.config.vocabSize);
  const auto ma = Model::randomInit(r.config, o, 9, 0.05);
  r.a = ma->generateBatch(ps, go);
  r.da = QString::fromStdString(ma->engineDescription());
  struct Scoped {
    const char* name;
    ~Scoped() { qunsetenv(name); }
  } scoped{name};
  qputenv(name, "1");
  const auto mb = Model::randomInit(r.config, o, 9, 0.05);
  r.b = mb->generateBatch(ps, go);
  r.db = QString::fromStdString(mb->engineDescription());
  if (r.a.front().tokens.size() != static_cast<std::size_t>(go.maxNewTokens))
    throw std::runtime_error("the default run stopped early");
  return r;
}

}  // namespace

class TestEngineCuda : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path kPruned;       // the sample pruned 2:4 by magnitude, with its packed file
  fs::path kGemmaPruned;  // gemma3-tiny pruned 2:4 the same way
  fs::path kColumn24, kColumn48;  // the sample pruned col2:4 / col4:8 by magnitude, with its column file

 private Q_SLOTS:
  void initTestCase() {
    SDW_REQUIRE_GPU();
    QVERIFY(tmp_.isValid());
    kPruned = fs::path(tmp_.path().toStdString()) / "pruned-2-4";
    sdw::testing::writeNmPruned(kPruned, {2, 4});
    kGemmaPruned = fs::path(tmp_.path().toStdString()) / "gemma3-2-4";
    if (fs::exists(kRef / "gemma3-tiny")) sdw::testing::writeNmPruned(kGemmaPruned, {2, 4}, kRef / "gemma3-tiny");
    kColumn24 = fs::path(tmp_.path().toStdString()) / "col-2-4";
    kColumn48 = fs::path(tmp_.path().toStdString()) / "col-4-8";
    sdw::testing::writeColumnPruned(kColumn24, 2, 4);
    sdw::testing::writeColumnPruned(kColumn48, 4, 8);
  }

  // The column file (col2:4, col4:8) in bf16, with and without activation sparsity: the
  // engine's step runs each projection through the spMspV kernel (one launch per batch row)
  // and agrees with the eager pass over the dense checkpoint with zeros as the bitmask
  // engine does (rows 1 and 4); the model holds no dense copy of a packed projection.
  // px < 0: fixed thresholds instead (TEAL; 0.02 on every input), which the spMspV ops
  // compare themselves (no sparsify launch before them). Under top-k (px 0.5) in bf16 the
  // engine and the eager pass can keep different entries at the cut (their norms round a few
  // inputs differently: a whole entry of the sample's narrow inputs), which the H200 measured as
  // 0.07-0.16 relative here (commit 8f23e09) and 0.11-0.23 for the dense engine
  // (test_actsparse_cuda engineEqualsEager); those rows hold 0.25 and let the tokens part
  // anywhere. The exact check of top-k through the column kernels is the fp32 one on the CPU
  // (test_engine_cpu columnSparseDecodesAsDense) and the kernel's (test_spmspv_cuda).
  void columnLayoutsWithinTolerance_data() {
    QTest::addColumn<int>("group");
    QTest::addColumn<double>("px");
    for (int g : {4, 8})
      for (double px : {0.0, 0.5}) QTest::addRow("col%d:%d p_x %.1f", g / 2, g, px) << g << px;
    QTest::addRow("col2:4 thresholds") << 4 << -1.0;
  }
  void columnLayoutsWithinTolerance() {
    QFETCH(int, group);
    QFETCH(double, px);
    const fs::path dir = group == 4 ? kColumn24 : kColumn48;
    LoadOptions oe = opts("bfloat16", Linear::Cublas, false), os = opts("bfloat16", Linear::Sparse);
    if (px >= 0) {
      oe.activationSparsity = os.activationSparsity = px;
    } else {
      const auto layers = static_cast<std::size_t>(loadModelConfig(dir).numLayers);
      oe.activationThresholds = os.activationThresholds =
          std::vector<InputThresholds>(layers, InputThresholds{0.02f, 0.02f, 0.02f, 0.02f});
    }
    const auto eager = Model::load(dir, oe);
    const auto m = Model::load(dir, os);
    const QString d = QString::fromStdString(m->engineDescription());
    QVERIFY2(d.startsWith("CUDA graph of fused kernels") &&
                 d.contains(QStringLiteral("spMspV col%1:%2 (42 of 42").arg(group / 2).arg(group)),
             qPrintable(d));
    QVERIFY(m->deviceBytes() < Model::load(dir, opts("bfloat16", Linear::Dense))->deviceBytes());
    const QString failed = px > 0 ? bf16WithinTolerance(*eager, *m, 0.25, false) : bf16WithinTolerance(*eager, *m);
    QVERIFY2(failed.isEmpty(), qPrintable(failed));
    // The eager pass of the sparse model (prefill and observed steps: one spMspV launch per
    // token row) agrees too.
    LoadOptions ose = opts("bfloat16", Linear::Sparse, false);  // the same activation sparsity
    ose.activationSparsity = oe.activationSparsity;
    ose.activationThresholds = oe.activationThresholds;
    const auto eagerSparse = Model::load(dir, ose);
    const auto pe = prompts(1, m->config().vocabSize).front();
    const auto la = eager->logits(pe), lb = eagerSparse->logits(pe);
    double worst = 0, scale = 1;
    for (std::size_t i = 0; i < la.size(); ++i) {
      worst = std::max(worst, std::abs(double(la[i]) - double(lb[i])));
      scale = std::max(scale, std::abs(double(la[i])));
    }
    QVERIFY2(worst / scale <= (px > 0 ? 0.25 : 0.03), qPrintable(QString::number(worst / scale)));
  }

  fs::path modelDir(const QString& model) const {
    if (model == "pruned") return kPruned;
    if (model == "gemma3-pruned") return kGemmaPruned;
    return kRef / model.toStdString();
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
    for (const char* m : {"llama-tiny", "llama-tiny-tied", "qwen3-tiny", "qwen2-tiny", "mistral-tiny", "gemma3-tiny",
                          "gemma3-softcap-tiny"})
      for (const Linear l : {Linear::Cublas, Linear::Dense})
        QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(m).arg(QString::fromStdString(linearName(l)))))
            << m << static_cast<int>(l);
    QTest::newRow("brown-llama pruned sparse") << "pruned" << static_cast<int>(Linear::Sparse);
    QTest::newRow("gemma3-tiny pruned sparse") << "gemma3-pruned" << static_cast<int>(Linear::Sparse);
  }
  void bf16CheckpointsWithinTolerance() {
    QFETCH(QString, model);
    QFETCH(int, linear);
    const fs::path dir = modelDir(model);
    if (!fs::exists(dir / "config.json")) QSKIP(qPrintable(QStringLiteral("%1: no checkpoint").arg(model)));
    const auto eager = Model::load(dir, opts("bfloat16", Linear::Cublas, false));
    const auto m = Model::load(dir, opts("bfloat16", static_cast<Linear>(linear)));
    const QString d = QString::fromStdString(m->engineDescription());
    QVERIFY2(d.startsWith("CUDA graph of fused kernels"), qPrintable(d));
    const QString failed = bf16WithinTolerance(*eager, *m);
    QVERIFY2(failed.isEmpty(), qPrintable(failed));
  }

  // Gemma 3 through the engine (scaled embedding, (1 + w) norms with the attention and
  // MLP outputs normalised before the residual adds, GELU-tanh, sliding and global layers
  // with their RoPE tables, final logit soft-capping in gemma3-softcap-tiny): in fp32 the
  // greedy tokens equal the eager pass's and the logits agree as for the sample (single
  // prompt and a ragged batch of 3); the description says the engine decodes.
  void gemma3Fp32TokensEqualEager_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("linear");
    for (const char* m : {"gemma3-tiny", "gemma3-softcap-tiny"})
      for (const Linear l : {Linear::Cublas, Linear::Dense})
        QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(m).arg(QString::fromStdString(linearName(l)))))
            << m << static_cast<int>(l);
    QTest::newRow("gemma3-tiny pruned sparse") << "gemma3-pruned" << static_cast<int>(Linear::Sparse);
  }
  void gemma3Fp32TokensEqualEager() {
    QFETCH(QString, model);
    QFETCH(int, linear);
    const fs::path dir = modelDir(model);
    if (!fs::exists(dir / "config.json"))
      QSKIP(qPrintable(QStringLiteral("%1: golden not generated yet (tools/reference/arch_goldens.py)").arg(model)));
    const auto eager = Model::load(dir, opts("float32", Linear::Cublas, false));
    const auto m = Model::load(dir, opts("float32", static_cast<Linear>(linear)));
    const ModelConfig& c = m->config();
    QVERIFY(c.architecture == Architecture::Gemma3);
    const QString d = QString::fromStdString(m->engineDescription());
    qInfo("%s: %s", linearName(static_cast<Linear>(linear)).c_str(), qPrintable(d));
    QVERIFY2(d.startsWith("CUDA graph of fused kernels") && !d.contains("eager") && !d.contains("has no"), qPrintable(d));
    if (model == "gemma3-softcap-tiny") QVERIFY(c.finalLogitSoftcap > 0);
    GenerationOptions go;
    go.maxNewTokens = 24;  // the prompt and the steps cross the sliding window of 8
    go.keepLogits = true;
    const std::vector<std::int32_t> p = {2, 17, 301, 5, 99, 260, 41, 7, 150, 88};
    const auto ref = eager->generate(p, go);
    const auto r = m->generate(p, go);
    QCOMPARE(r.tokens, ref.tokens);
    const auto cmp = compareSteps(ref, r, c.vocabSize);
    qInfo("  max relative logit difference over %d steps: %g", cmp.steps, cmp.worst);
    QVERIFY(cmp.steps >= 20);
    QVERIFY(cmp.worst < 1e-4);
    if (c.finalLogitSoftcap > 0)  // the engine's logits are the capped ones
      for (const float v : r.logits) QVERIFY(std::abs(v) <= c.finalLogitSoftcap);
    // Ragged batch of 3 (5, 8 and 11 prompt tokens).
    const auto batch = prompts(3, c.vocabSize);
    const auto rb = m->generateBatch(batch, go);
    const auto eb = eager->generateBatch(batch, go);
    for (std::size_t i = 0; i < rb.size(); ++i) {
      QCOMPARE(rb[i].tokens, eb[i].tokens);
      const auto ci = compareSteps(eb[i], rb[i], c.vocabSize);
      qInfo("  batch row %zu: max relative logit difference over %d steps: %g", i, ci.steps, ci.worst);
      QVERIFY(ci.worst < 1e-4);
    }
  }

  // Every pattern, every batch 1-8, Llama, Qwen3 and Gemma 3 shapes (Gemma: head_dim 256,
  // tied lm_head, soft-capped logits), every linear: the engine against the eager forward
  // pass on the same (random, packed where sparse) weights.
  void patternsAndBatches_data() {
    QTest::addColumn<QString>("arch");
    QTest::addColumn<int>("linear");
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<bool>("tensorCores");  // every pattern at batch 2-8 through the tensor-core SpMV
    for (const char* a : {"llama", "qwen3", "gemma3"}) {
      const QString arch = QString::fromLatin1(a);
      QTest::newRow(qPrintable(QStringLiteral("%1 cublas").arg(arch))) << arch << int(Linear::Cublas) << "" << false;
      QTest::newRow(qPrintable(QStringLiteral("%1 dense").arg(arch))) << arch << int(Linear::Dense) << "" << false;
      for (const char* p : {"2:4", "4:8", "8:16", "16:32"})
        QTest::newRow(qPrintable(QStringLiteral("%1 sparse %2").arg(arch, p)))
            << arch << int(Linear::Sparse) << p << false;
      for (const char* p :
           {"2:4", "4:8", "8:16", "16:32"})  // the tensor cores from batch 2 (by default 4; 8:16 and 16:32 5)
        QTest::newRow(qPrintable(QStringLiteral("%1 sparse %2 tensor cores").arg(arch, p)))
            << arch << int(Linear::Sparse) << p << true;
    }
  }
  void patternsAndBatches() {
    QFETCH(QString, arch);
    QFETCH(int, linear);
    QFETCH(QString, pattern);
    QFETCH(bool, tensorCores);
    if (arch == "gemma3" && !fs::exists(kRef / "gemma3-tiny")) QSKIP("tests/data/reference/gemma3-tiny is missing");
    const ModelConfig c = shape(arch);
    LoadOptions eo = opts("bfloat16", static_cast<Linear>(linear), false);
    LoadOptions go_ = opts("bfloat16", static_cast<Linear>(linear));
    go_.sparseTensorCores = tensorCores ? 1 : 0;  // the FMA kernel at every batch in the other rows
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

  // The sparse engine's launches chosen in its step (bench decode --tune-step): 2:4 at batch 1,
  // batch 2 (x by shuffle among the candidates) and batch 4 (on the tensor cores), and 16:32 at
  // batch 4 (x by shuffle) and 5 (the tensor cores' longer expansion), entries of their own, and our dense GEMV (the
  // dense engine) at batch 1 and 2. The table it writes holds a step entry of that batch and path
  // for each projection of the layer (q|k|v, o, gate|up, down; the dense engine's lm_head too),
  // and a model built on that table decodes within bf16 tolerance of the eager pass at those
  // batches, as the patterns-and-batches rows do (the launches compute the same products; split-K
  // changes only the order of the sums).
  void stepTunedLaunchesDecode_data() {
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<QList<int>>("batches");
    QTest::addRow("2:4") << QStringLiteral("2:4") << QList<int>{1, 2, 4};
    QTest::addRow("16:32") << QStringLiteral("16:32") << QList<int>{4, 5};
    QTest::addRow("dense") << QString() << QList<int>{1, 2};
  }
  void stepTunedLaunchesDecode() {
    QFETCH(QString, pattern);
    QFETCH(QList<int>, batches);
    const bool dense = pattern.isEmpty();
    const Linear linear = dense ? Linear::Dense : Linear::Sparse;
    const int M = pattern == "16:32" ? 32 : 4;
    const ModelConfig c = shape("llama");  // hidden 512, intermediate 1024, 8 x 128 query and 2 x 128 KV heads
    const QString table =
        tmp_.filePath("step-" + (dense ? QStringLiteral("dense") : QString(pattern).replace(':', '-')) + ".json");
    DecodeBenchOptions b;
    b.config = c;
    b.configName = "llama-shape";
    b.linear = linear;
    b.pattern = pattern.toStdString();
    b.context = 64;
    b.tokens = 4;
    b.warmup = 2;
    b.readGBs = 1000;  // no bandwidth probe
    b.tuningFile = opts("bfloat16", linear).tuningFile;
    b.tuneStepOut = table.toStdString();
    const std::vector<DecodeBenchResult> rs = runDecodeBenchBatches(b, {batches.begin(), batches.end()});
    QCOMPARE(rs.size(), static_cast<std::size_t>(batches.size()));
    const TuningTable t = TuningTable::load(table.toStdString());
    const std::int64_t shapes[4][2] = {{8 * 128 + 2 * 2 * 128, 512}, {512, 8 * 128}, {2 * 1024, 512}, {512, 1024}};
    for (const DecodeBenchResult& r : rs) {
      qInfo("step tuning, %s batch %d: %s", qPrintable(pattern), r.batch, r.stepTuning.c_str());
      QVERIFY(r.tokensPerSecond > 0);
      const bool tc = sdw::kernels::spmvUseTensorCores(-1, r.batch, M);  // the engine's default path
      for (const auto& sh : shapes) {
        QVERIFY2(r.stepTuning.find(std::to_string(sh[0]) + "x" + std::to_string(sh[1])) != std::string::npos,
                 r.stepTuning.c_str());
        if (dense) {
          QVERIFY2(t.denseStep(sh[0], sh[1], r.batch, "bf16").has_value(),
                   qPrintable(QStringLiteral("%1 at batch %2").arg(sh[0]).arg(r.batch)));
          QVERIFY(!t.exact(sh[0], sh[1], r.batch, "bf16")->sparseStep);
          continue;
        }
        const auto step = t.sparseStep(sh[0], sh[1], r.batch, "bf16", tc, M);
        QVERIFY2(step.has_value(), qPrintable(QStringLiteral("%1 at batch %2").arg(sh[0]).arg(r.batch)));
        QCOMPARE(onTensorCores(*step), tc);
        QVERIFY(!t.sparseStep(sh[0], sh[1], r.batch, "bf16", !tc, M));  // not on the other path
      }
      // lm_head (our dense GEMV in both engines at batch 1 and 2)
      if (r.batch <= 2) QVERIFY(t.denseStep(c.vocabSize, c.hiddenSize, r.batch, "bf16").has_value());
    }
    // Read back from the table, every SpMV / GEMV launch of the step takes its step entry.
    DecodeBenchOptions rb = b;
    rb.tuneStepOut.clear();
    rb.tuningFile = table.toStdString();
    for (const DecodeBenchResult& r : runDecodeBenchBatches(rb, {batches.begin(), batches.end()})) {
      QVERIFY2(r.engineLaunches > 0, qPrintable(QStringLiteral("batch %1").arg(r.batch)));
      QCOMPARE(r.stepEntryLaunches, r.engineLaunches);
      QVERIFY(r.stepTuning.empty());
    }
    LoadOptions eo = opts("bfloat16", linear, false), go_ = opts("bfloat16", linear);
    if (!dense) eo.randomPattern = go_.randomPattern = pattern.toStdString();
    go_.tuningFile = table.toStdString();
    const auto eager = Model::randomInit(c, eo, 7, 0.05);
    const auto m = Model::randomInit(c, go_, 7, 0.05);
    const QString why = bf16WithinTolerance(*eager, *m, 0.03, true, {batches.begin(), batches.end()});
    QVERIFY2(why.isEmpty(), qPrintable(why));
  }

  // Small enough for compute-sanitizer (tools/gpu/engine-check.sh): every kernel of the
  // step (each family's variants, every linear, an N:M pattern, a ragged batch of 3 and
  // batch 1, run-time activation sparsity) on small random models (2 layers; Gemma 3: 3,
  // sliding and full) with 4 decode steps, the graph and the launches one by one; they
  // agree bitwise.
  void smallStepsForSanitizers_data() {
    QTest::addColumn<QString>("arch");
    QTest::addColumn<int>("linear");
    for (const char* arch : {"llama", "qwen3", "gemma3"})
      for (const Linear l : {Linear::Cublas, Linear::Dense, Linear::Sparse})
        QTest::addRow("%s %s", arch, linearName(l).c_str()) << arch << static_cast<int>(l);
  }
  void smallStepsForSanitizers() {
    QFETCH(QString, arch);
    QFETCH(int, linear);
    if (arch == "gemma3" && !fs::exists(kRef / "gemma3-tiny")) QSKIP("tests/data/reference/gemma3-tiny is missing");
    ModelConfig c = shape(arch);
    if (arch != "gemma3") c.numLayers = 2;  // gemma3 keeps its 3 (sliding, sliding, full) layer types
    c.hiddenSize = 256;
    c.intermediateSize = 512;
    c.vocabSize = 512;
    for (const bool sparsity : {false, true}) {
      LoadOptions g = opts("bfloat16", static_cast<Linear>(linear), true, true);
      LoadOptions u = opts("bfloat16", static_cast<Linear>(linear), true, false);
      if (sparsity) g.activationSparsity = u.activationSparsity = 0.5;
      const auto mg = Model::randomInit(c, g, 3, 0.05);
      const auto mu = Model::randomInit(c, u, 3, 0.05);
      QVERIFY(QString::fromStdString(mg->engineDescription()).startsWith("CUDA graph"));
      GenerationOptions go;
      go.maxNewTokens = 4;
      go.keepLogits = true;
      for (const int batch : {1, 3}) {
        const auto ps = prompts(batch, c.vocabSize);
        const auto a = mg->generateBatch(ps, go), b = mu->generateBatch(ps, go);
        for (std::size_t i = 0; i < a.size(); ++i) {
          QCOMPARE(a[i].tokens, b[i].tokens);
          QVERIFY(a[i].logits == b[i].logits);
        }
      }
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

  // The attention's two merges of its splits (a thread-block cluster through distributed
  // shared memory, the default on sm_90 up to 1024 cache slots; the workspace and a
  // ticket) compute the same floats: tokens and logits bitwise equal over 5 splits,
  // with grouped queries of 4 and 5 per KV head, head_dim 64-256, Gemma 3's sliding
  // window (splits without a slot), batch 1 and a ragged batch of 3.
  void attentionMergesAgree_data() {
    QTest::addColumn<QString>("arch");
    for (const char* a : {"llama", "qwen3", "gemma3"}) QTest::newRow(a) << QString::fromLatin1(a);
  }
  void attentionMergesAgree() {
    QFETCH(QString, arch);
    if (arch == "gemma3" && !fs::exists(kRef / "gemma3-tiny")) QSKIP("tests/data/reference/gemma3-tiny is missing");
    ModelConfig c = shape(arch);
    if (arch != "gemma3") c.numLayers = 2;  // gemma3 keeps its 3 (sliding, sliding, full) layer types
    GenerationOptions go;
    go.maxNewTokens = 560;  // the cache rounds up to 640 slots: 5 splits of 128
    go.keepLogits = true;
    for (const int batch : {1, 3}) {
      const auto ps = prompts(batch, c.vocabSize);
      std::vector<GenerationResult> runs[2];
      for (const int i : {0, 1}) {
        qputenv("SDW_ATTENTION", i == 0 ? "ticket" : "cluster");
        const auto m = Model::randomInit(c, opts("bfloat16", Linear::Dense), 5, 0.05);
        try {
          runs[i] = m->generateBatch(ps, go);
        } catch (const std::exception& e) {
          qunsetenv("SDW_ATTENTION");
          if (i == 1 && QString::fromUtf8(e.what()).contains("needs sm_90")) QSKIP(e.what());
          QFAIL(e.what());
        }
      }
      qunsetenv("SDW_ATTENTION");
      for (int r = 0; r < batch; ++r) {
        const auto& a = runs[0][static_cast<std::size_t>(r)];
        const auto& b = runs[1][static_cast<std::size_t>(r)];
        QCOMPARE(a.tokens.size(), static_cast<std::size_t>(go.maxNewTokens));
        QCOMPARE(a.tokens, b.tokens);
        QVERIFY2(a.logits == b.logits, qPrintable(QStringLiteral("batch %1 row %2: logits differ").arg(batch).arg(r)));
      }
    }
  }

  // The residual add + RMSNorm after the o and down projections run as those projections'
  // last block (kernels::NormTail, batch 1, SDW_FUSE_NORMS=1): tokens and logits bitwise
  // those of the separate norm launches (the default), for the dense GEMV and the sparse
  // kernel, Llama and Qwen3 shapes, bf16 and fp16; every norm but layer 0's input norm is fused.
  void normTailsMatchLaunches_data() {
    QTest::addColumn<QString>("arch");
    QTest::addColumn<int>("linear");
    QTest::addColumn<QString>("dtype");
    QTest::newRow("llama dense bf16") << "llama" << int(Linear::Dense) << "bfloat16";
    QTest::newRow("llama sparse bf16") << "llama" << int(Linear::Sparse) << "bfloat16";
    QTest::newRow("qwen3 dense fp16") << "qwen3" << int(Linear::Dense) << "float16";
    QTest::newRow("qwen3 sparse bf16") << "qwen3" << int(Linear::Sparse) << "bfloat16";
  }
  void normTailsMatchLaunches() {
    QFETCH(QString, arch);
    QFETCH(int, linear);
    QFETCH(QString, dtype);
    EnvRuns r;
    try {
      r = runWithAndWithout("SDW_FUSE_NORMS", arch, static_cast<Linear>(linear), dtype);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    qInfo("%s | %s", qPrintable(r.da), qPrintable(r.db));
    const int sites = 2 * static_cast<int>(r.config.numLayers) + 1;
    QVERIFY2(!r.da.contains(QStringLiteral("norms in the projection")), qPrintable(r.da));
    QVERIFY2(r.db.contains(QStringLiteral("%1 of %2 norms in the projection").arg(sites - 1).arg(sites)),
             qPrintable(r.db));
    QCOMPARE(r.a.front().tokens, r.b.front().tokens);
    QVERIFY2(r.a.front().logits == r.b.front().logits, "logits differ");
  }

  // The norms folded into the dense GEMVs around them (SDW_FOLD_NORMS=1): 2L - 1 of the
  // 2L + 1 norms (layer 0's input norm and the final norm stay launches), logits within the
  // engine's bf16/fp16 tolerance of the launches' and the same tokens up to a near tie (the
  // sum of squares is added in another order, so not bitwise); the sparse engine has
  // nothing to fold and is unchanged.
  void foldedNormsMatchLaunches_data() {
    QTest::addColumn<QString>("arch");
    QTest::addColumn<int>("linear");
    QTest::addColumn<QString>("dtype");
    QTest::newRow("llama dense bf16") << "llama" << int(Linear::Dense) << "bfloat16";
    QTest::newRow("qwen3 dense fp16") << "qwen3" << int(Linear::Dense) << "float16";
    QTest::newRow("llama sparse bf16") << "llama" << int(Linear::Sparse) << "bfloat16";
  }
  void foldedNormsMatchLaunches() {
    QFETCH(QString, arch);
    QFETCH(int, linear);
    QFETCH(QString, dtype);
    const bool sparse = static_cast<Linear>(linear) == Linear::Sparse;
    EnvRuns r;
    try {
      r = runWithAndWithout("SDW_FOLD_NORMS", arch, static_cast<Linear>(linear), dtype);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    qInfo("%s", qPrintable(r.db));
    const int sites = 2 * static_cast<int>(r.config.numLayers) + 1;
    if (sparse) {  // nothing folded: the same step
      QVERIFY2(!r.db.contains(QStringLiteral("folded")), qPrintable(r.db));
      QCOMPARE(r.a.front().tokens, r.b.front().tokens);
      QVERIFY2(r.a.front().logits == r.b.front().logits, "logits differ");
      return;
    }
    QVERIFY2(r.db.contains(QStringLiteral("%1 of %2 norms folded").arg(sites - 2).arg(sites)), qPrintable(r.db));
    const auto cmp = compareSteps(r.a.front(), r.b.front(), r.config.vocabSize);
    qInfo("max relative logit difference %.4f over %d decode steps", cmp.worst, cmp.steps);
    QVERIFY2(cmp.divergedAtTie, "another token without a near tie");
    QVERIFY(cmp.steps >= 1);
    QVERIFY2(cmp.worst <= 0.03, qPrintable(QStringLiteral("%1").arg(cmp.worst)));
  }

  // Two or four lanes per cache slot (SDW_ATTENTION_LANES; more warps per block over the
  // same slots, the partial dots added by shuffles): in bf16 within the engine's tolerance
  // of the one-lane kernel (only the order of the dot products' additions differs), for
  // both merges, over several splits, Llama (head_dim 128, 4 queries per KV head), Qwen3
  // (64, 5) and Gemma 3 (256, sliding window), batch 1 and a ragged batch of 3. "keys": one
  // lane without the value rows prefetched (SDW_ATTENTION_PV=0, the variant the engine takes
  // where it keeps a large grid in fewer waves; the key rows' shared memory reused for them).
  void attentionLanesMatchOneLane_data() {
    QTest::addColumn<QString>("arch");
    QTest::addColumn<QString>("lanes");
    QTest::addColumn<QString>("merge");
    for (const char* a : {"llama", "qwen3", "gemma3"})
      for (const char* l : {"2", "4", "keys"})
        for (const char* m : {"cluster", "ticket"})
          QTest::addRow("%s lanes %s %s", a, l, m)
              << QString::fromLatin1(a) << QString::fromLatin1(l) << QString::fromLatin1(m);
  }
  void attentionLanesMatchOneLane() {
    QFETCH(QString, arch);
    QFETCH(QString, lanes);
    QFETCH(QString, merge);
    if (arch == "gemma3" && !fs::exists(kRef / "gemma3-tiny")) QSKIP("tests/data/reference/gemma3-tiny is missing");
    ModelConfig c = shape(arch);
    if (arch != "gemma3") c.numLayers = 2;  // gemma3 keeps its 3 (sliding, sliding, full) layer types
    GenerationOptions go;
    go.maxNewTokens = 300;  // a cache of 384 slots: 3 splits
    go.keepLogits = true;
    for (const int batch : {1, 3}) {
      const auto ps = prompts(batch, c.vocabSize);
      std::vector<GenerationResult> a, b;
      try {
        qputenv("SDW_ATTENTION", merge.toLatin1());
        qputenv("SDW_ATTENTION_LANES", "1");
        qputenv("SDW_ATTENTION_PV", "1");
        a = Model::randomInit(c, opts("bfloat16", Linear::Dense), 5, 0.05)->generateBatch(ps, go);
        if (lanes == "keys") qputenv("SDW_ATTENTION_PV", "0");
        else qputenv("SDW_ATTENTION_LANES", lanes.toLatin1());
        b = Model::randomInit(c, opts("bfloat16", Linear::Dense), 5, 0.05)->generateBatch(ps, go);
      } catch (const std::exception& e) {
        qunsetenv("SDW_ATTENTION_PV");
        qunsetenv("SDW_ATTENTION_LANES");
        qunsetenv("SDW_ATTENTION");
        if (QString::fromUtf8(e.what()).contains("needs sm_90")) QSKIP(e.what());
        QFAIL(e.what());
      }
      qunsetenv("SDW_ATTENTION_PV");
      qunsetenv("SDW_ATTENTION_LANES");
      qunsetenv("SDW_ATTENTION");
      double worst = 0;
      int minSteps = 1 << 20;
      for (int i = 0; i < batch; ++i) {
        const auto cmp = compareSteps(a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)], c.vocabSize);
        worst = std::max(worst, cmp.worst);
        minSteps = std::min(minSteps, cmp.steps);
        QVERIFY2(cmp.divergedAtTie,
                 qPrintable(QStringLiteral("batch %1 row %2: another token without a near tie").arg(batch).arg(i)));
      }
      qInfo("batch %d: max relative difference %.4f, at least %d decode steps compared per row", batch, worst,
            minSteps);
      QVERIFY(minSteps >= 1);
      QVERIFY2(worst <= 0.03, qPrintable(QStringLiteral("batch %1: %2").arg(batch).arg(worst)));
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
