// The decode engine's model side on the CPU (runs in CI): a pruned checkpoint
// loaded with --linear sparse keeps only packed projections and decodes the same
// greedy tokens as the dense checkpoint with zeros; a sparse file that does not
// belong to the checkpoint is refused with the file and module named; random
// sparse models and the decode benchmark grid work on the CPU.
// Label: engine.

#include "core/compressed_tensors.h"
#include "core/sparse_file.h"
#include "gpu/bench_decode.h"
#include "gpu/model.h"
#include "tests/gpu/sparse_fixture.h"

#include <QTemporaryDir>
#include <QtTest>

#include <array>
#include <cmath>
#include <filesystem>
#include <span>

using namespace sdw::gpu;
namespace fs = std::filesystem;

namespace {

const fs::path kDense = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";
// "The jury said" in the sample's tokenizer, and a second prompt.
const std::vector<std::int32_t> kPrompt = {260, 1158, 1174, 482};
const std::vector<std::int32_t> kPrompt2 = {302, 258, 362, 79, 323, 790, 1, 289};

LoadOptions withLinear(Linear l) {
  LoadOptions o;
  o.linear = l;
  return o;
}

QString errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// Both models' 40 greedy tokens from kPrompt (logits kept): the tokens and the largest
// |logit difference| over the steps.
struct GreedyPair {
  GenerationResult a, b;
  double maxDiff = 0;
};
GreedyPair greedy40(Model& dense, Model& sparse) {
  GenerationOptions go;
  go.maxNewTokens = 40;
  go.keepLogits = true;
  GreedyPair p{dense.generate(kPrompt, go), sparse.generate(kPrompt, go)};
  for (std::size_t i = 0; i < p.a.logits.size() && i < p.b.logits.size(); ++i)
    p.maxDiff = std::max(p.maxDiff, std::abs(double(p.a.logits[i]) - double(p.b.logits[i])));
  return p;
}

}  // namespace

class TestEngineCpu : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path kPruned, kOther;  // the sample pruned 2:4 and 4:8 by magnitude, with their packed files

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    kPruned = fs::path(tmp_.path().toStdString()) / "pruned-2-4";
    kOther = fs::path(tmp_.path().toStdString()) / "pruned-4-8";
    sdw::testing::writeNmPruned(kPruned, {2, 4});
    sdw::testing::writeNmPruned(kOther, {4, 8});
  }

  void linearNames() {
    QCOMPARE(QString::fromStdString(linearName(Linear::Sparse)), QStringLiteral("sparse"));
    QCOMPARE(parseLinear("dense"), Linear::Dense);
    QVERIFY(errorOf([] { (void)parseLinear("fast"); }).contains("cublas, dense or sparse"));
  }

  void sparseDecodesAsDense() {
    const auto dense = Model::load(kPruned, withLinear(Linear::Cublas));
    const auto sparse = Model::load(kPruned, withLinear(Linear::Sparse));
    QVERIFY(QString::fromStdString(sparse->engineDescription()).contains("42 of 42 projections packed"));
    // No dense copy of a packed projection: the packed model holds far fewer bytes.
    qInfo("device bytes: dense %llu, sparse %llu", static_cast<unsigned long long>(dense->deviceBytes()),
          static_cast<unsigned long long>(sparse->deviceBytes()));
    QVERIFY(sparse->deviceBytes() < dense->deviceBytes() * 6 / 10);

    const auto g = greedy40(*dense, *sparse);
    QCOMPARE(g.b.tokens, g.a.tokens);
    QCOMPARE(g.b.tokens.size(), std::size_t{40});
    qInfo("max |logit difference| sparse vs dense over 40 steps: %g", g.maxDiff);
    QVERIFY2(g.maxDiff < 1e-3, qPrintable(QString::number(g.maxDiff)));

    // Ragged batches go through the same path.
    GenerationOptions go;
    go.maxNewTokens = 40;
    const auto ba = dense->generateBatch({kPrompt, kPrompt2}, go);
    const auto bb = sparse->generateBatch({kPrompt, kPrompt2}, go);
    QCOMPARE(bb[0].tokens, ba[0].tokens);
    QCOMPARE(bb[1].tokens, ba[1].tokens);

    // Teacher-forced logits (prefill path) agree as well.
    const auto la = dense->logits(kPrompt2), lb = sparse->logits(kPrompt2);
    for (std::size_t i = 0; i < la.size(); ++i) QVERIFY(std::abs(la[i] - lb[i]) < 1e-3f);
  }

  // A column-pruned checkpoint (col2:4, col4:8) with its column file: --linear sparse keeps
  // only the column layouts and decodes as the dense checkpoint with zeros, with and
  // without run-time activation sparsity (the spMspV reference skips the dropped entries).
  void columnSparseDecodesAsDense() {
    for (const auto& [n, mm] : {std::pair{2, 4}, std::pair{4, 8}}) {
      const fs::path dir =
          fs::path(tmp_.path().toStdString()) / ("col-" + std::to_string(n) + "-" + std::to_string(mm));
      sdw::testing::writeColumnPruned(dir, n, mm);
      for (const double px : {0.0, 0.5, -1.0}) {  // -1: fixed thresholds (TEAL), 0.02 on every input
        LoadOptions od = withLinear(Linear::Cublas), os = withLinear(Linear::Sparse);
        if (px >= 0) od.activationSparsity = os.activationSparsity = px;
        else
          od.activationThresholds = os.activationThresholds =
              std::vector<InputThresholds>(6, InputThresholds{0.02f, 0.02f, 0.02f, 0.02f});
        const auto dense = Model::load(dir, od);
        const auto sparse = Model::load(dir, os);
        const QString desc = QString::fromStdString(sparse->engineDescription());
        QVERIFY2(desc.contains(QStringLiteral("CPU spMspV col%1:%2 (42 of 42 projections packed)").arg(n).arg(mm)),
                 qPrintable(desc));
        QVERIFY(sparse->deviceBytes() < dense->deviceBytes() * 6 / 10);
        const auto g = greedy40(*dense, *sparse);
        QCOMPARE(g.b.tokens, g.a.tokens);
        qInfo("col%d:%d p_x %.1f: max |logit difference| spMspV vs dense over 40 steps: %g", n, mm, px, g.maxDiff);
        QVERIFY2(g.maxDiff < 1e-3, qPrintable(QString::number(g.maxDiff)));
        const auto la = dense->logits(kPrompt2), lb = sparse->logits(kPrompt2);
        float worst = 0;
        for (std::size_t i = 0; i < la.size(); ++i) worst = std::max(worst, std::abs(la[i] - lb[i]));
        // With a fixed threshold an input within summation-order rounding of it can be kept by
        // one pass and dropped by the other (1.6e-2 here on the prompt); top-k and none: 1e-3.
        QVERIFY2(worst < (px < 0 ? 5e-2f : 1e-3f),
                 qPrintable(QStringLiteral("teacher-forced logits differ by %1").arg(worst)));
      }
    }
    // The column file of another pruning is refused, naming the file and a module.
    LoadOptions o = withLinear(Linear::Sparse);
    o.sparseFile = fs::path(tmp_.path().toStdString()) / "col-4-8" / "model.sdwcolumn";
    const QString e = errorOf([&] { (void)Model::load(fs::path(tmp_.path().toStdString()) / "col-2-4", o); });
    QVERIFY2(e.contains("col-4-8/model.sdwcolumn") && e.contains("module 'model.layers.0.") && e.contains("differ"),
             qPrintable(e));
  }

  void refusesForeignSparseFiles() {
    // Another pruning of the same model.
    LoadOptions o = withLinear(Linear::Sparse);
    o.sparseFile = kOther / "model.sdwsparse";
    QString e = errorOf([&] { (void)Model::load(kPruned, o); });
    QVERIFY2(e.contains("pruned-4-8/model.sdwsparse") && e.contains("module 'model.layers.0.") &&
                 e.contains("differ"),
             qPrintable(e));
    // No file.
    e = errorOf([&] { (void)Model::load(kDense, withLinear(Linear::Sparse)); });
    QVERIFY2(e.contains("no packed sparse file"), qPrintable(e));
    // Loaded in the other 16-bit dtype.
    o = withLinear(Linear::Sparse);
    o.dtype = "float16";
    e = errorOf([&] { (void)Model::load(kPruned, o); });
    QVERIFY2(e.contains("holds bf16 values") && e.contains("float16"), qPrintable(e));

    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    auto mods = sdw::sparse::readSparseFile(kPruned / "model.sdwsparse");
    // A name that is no projection of this model.
    auto renamed = mods;
    renamed[3].name = "model.layers.99.mlp.up_proj";
    sdw::sparse::writeSparseFile(dir / "renamed.sdwsparse", renamed);
    o = withLinear(Linear::Sparse);
    o.sparseFile = dir / "renamed.sdwsparse";
    e = errorOf([&] { (void)Model::load(kPruned, o); });
    QVERIFY2(e.contains("'model.layers.99.mlp.up_proj' is not a projection of this model"), qPrintable(e));
    // A module of the wrong shape (q_proj's matrix under k_proj's name).
    auto reshaped = mods;
    std::size_t q = 0, k = 0;
    for (std::size_t i = 0; i < mods.size(); ++i) {
      if (mods[i].name == "model.layers.0.self_attn.q_proj") q = i;
      if (mods[i].name == "model.layers.0.self_attn.k_proj") k = i;
    }
    reshaped[k].matrix = mods[q].matrix;
    sdw::sparse::writeSparseFile(dir / "reshaped.sdwsparse", reshaped);
    o.sparseFile = dir / "reshaped.sdwsparse";
    e = errorOf([&] { (void)Model::load(kPruned, o); });
    QVERIFY2(e.contains("'model.layers.0.self_attn.k_proj' is [256, 256] in the sparse file, the checkpoint's is [128, 256]"),
             qPrintable(e));
    // A file with only some projections: those stay dense.
    std::vector<sdw::sparse::SparseModule> some(mods.begin(), mods.begin() + 5);
    sdw::sparse::writeSparseFile(dir / "some.sdwsparse", some);
    o.sparseFile = dir / "some.sdwsparse";
    const auto partial = Model::load(kPruned, o);
    QVERIFY(QString::fromStdString(partial->engineDescription()).contains("5 of 42 projections packed"));
    const auto dense = Model::load(kPruned);
    GenerationOptions go;
    go.maxNewTokens = 12;
    QCOMPARE(partial->generate(kPrompt, go).tokens, dense->generate(kPrompt, go).tokens);
  }

  // A compressed-tensors export opens as a checkpoint: decompressed for the dense
  // linears, straight to the packed format for the sparse one (no model.sdwsparse read).
  void compressedTensorsCheckpoints() {
    const fs::path base(tmp_.path().toStdString());
    struct Case {
      fs::path src;
      sdw::ct::Format format;
      const char* structure;
      const char* described;
    };
    for (const Case& c : {Case{kPruned, sdw::ct::Format::Sparse24Bitmask, "2:4", "2:4 (42 of 42"},
                          Case{kOther, sdw::ct::Format::SparseBitmask, "4:8", "4:8 (42 of 42"}}) {
      const fs::path out = base / ("ct-" + sdw::ct::formatName(c.format));
      sdw::ct::exportCompressedTensors(c.src, out, c.format, c.structure);
      fs::remove(out / "model.sdwsparse");  // the packed projections must come from the compressed tensors
      const auto ref = Model::load(c.src);
      const auto dense = Model::load(out);
      const auto sparse = Model::load(out, withLinear(Linear::Sparse));
      QVERIFY2(QString::fromStdString(sparse->engineDescription()).contains(QString::fromLatin1(c.described)),
               sparse->engineDescription().c_str());
      GenerationOptions go;
      go.maxNewTokens = 24;
      const auto want = ref->generate(kPrompt, go).tokens;
      QCOMPARE(dense->generate(kPrompt, go).tokens, want);
      QCOMPARE(sparse->generate(kPrompt, go).tokens, want);
      QCOMPARE(dense->logits(kPrompt2), ref->logits(kPrompt2));  // the decompressed weights are the pruned ones
    }
    // The sparse linear on an unstructured export: a clear refusal.
    const fs::path un = base / "ct-unstructured";
    sdw::ct::exportCompressedTensors(kPruned, un, sdw::ct::Format::SparseBitmask, "unstructured");
    const QString e = errorOf([&] { (void)Model::load(un, withLinear(Linear::Sparse)); });
    QVERIFY2(e.contains("sparsity (unstructured) is no 50% N:M pattern"), qPrintable(e));
  }

  // Gemma 3 (its four norms, GELU-tanh, sliding and global layers) through the CPU
  // bitmask SpMV: a 2:4 pruned copy of gemma3-tiny decodes as its dense copy with zeros.
  void gemma3SparseDecodesAsDense() {
    const fs::path src = fs::path(SDW_SOURCE_DIR) / "tests/data/reference/gemma3-tiny";
    if (!fs::exists(src))
      QSKIP("tests/data/reference/gemma3-tiny: golden not generated yet (tools/reference/arch_goldens.py)");
    const fs::path dir = fs::path(tmp_.path().toStdString()) / "gemma3-2-4";
    sdw::testing::writeNmPruned(dir, {2, 4}, src);
    const auto dense = Model::load(dir, withLinear(Linear::Cublas));
    const auto sparse = Model::load(dir, withLinear(Linear::Sparse));
    QVERIFY(QString::fromStdString(sparse->engineDescription()).contains("21 of 21 projections packed"));
    GenerationOptions go;
    go.maxNewTokens = 24;  // crosses the sliding window of 8
    go.keepLogits = true;
    const std::vector<std::int32_t> p1 = {17, 301, 5, 99, 260}, p2 = {7, 8, 9};
    const auto a = dense->generateBatch({p1, p2}, go);
    const auto b = sparse->generateBatch({p1, p2}, go);
    for (std::size_t r = 0; r < a.size(); ++r) {
      QCOMPARE(b[r].tokens, a[r].tokens);
      double maxDiff = 0;
      for (std::size_t i = 0; i < a[r].logits.size(); ++i)
        maxDiff = std::max(maxDiff, std::abs(double(a[r].logits[i]) - double(b[r].logits[i])));
      QVERIFY2(maxDiff < 1e-3, qPrintable(QString::number(maxDiff)));
    }
  }

  void randomSparseModels() {
    ModelConfig c = loadModelConfig(kDense);
    for (const char* pat : {"2:4", "4:8", "8:16", "16:32"}) {
      LoadOptions o = withLinear(Linear::Sparse);
      o.randomPattern = pat;
      const auto m = Model::randomInit(c, o, 3, 0.05);
      QVERIFY(QString::fromStdString(m->engineDescription()).contains(QStringLiteral("%1 (42 of 42").arg(pat)));
      const auto l = m->logits(kPrompt);
      for (const float v : l) QVERIFY(std::isfinite(v));
    }
    // The column patterns: every projection in its column layout, decoded by the spMspV reference.
    for (const char* pat : {"col2:4", "col4:8"}) {
      LoadOptions o = withLinear(Linear::Sparse);
      o.randomPattern = pat;
      o.activationSparsity = 0.5;
      const auto m = Model::randomInit(c, o, 3, 0.05);
      QVERIFY(QString::fromStdString(m->engineDescription()).contains(QStringLiteral("spMspV %1 (42 of 42").arg(pat)));
      const auto l = m->logits(kPrompt);
      for (const float v : l) QVERIFY(std::isfinite(v));
    }
  }

  // TEAL thresholds from a prefill of random tokens on the sample model: one per layer and
  // input, at p_x of the prefill's entries; in force (LoadOptions), they drop about p_x of
  // each input's entries on text they were not set from (the greedy decode of kPrompt2).
  void prefillThresholdsHoldOnOtherTokens() {
    LoadOptions lo;
    lo.activationSparsity = 0.5;
    auto m = Model::load(kDense, lo);
    const ModelConfig c = m->config();
    DecodeBenchOptions o;
    o.device = "cpu";
    o.context = 64;
    o.activationSparsity = 0.5;
    const ActivationThresholds t = prefillActivationThresholds(*m, o);
    QCOMPARE(t.inputs.size(), static_cast<std::size_t>(c.numLayers * kProjectionInputs));
    for (std::size_t k = 0; k < t.inputs.size(); ++k) {
      const InputThreshold& in = t.inputs[k];
      QCOMPARE(in.layer, static_cast<int>(k / kProjectionInputs));
      QCOMPARE(static_cast<int>(in.input), static_cast<int>(k % kProjectionInputs));
      QCOMPARE(in.entries, 64 * in.dIn);
      QCOMPARE(in.dIn, in.input == ProjectionInput::Down ? c.intermediateSize
                       : in.input == ProjectionInput::O  ? c.qDim()
                                                         : c.hiddenSize);
      QVERIFY2(in.threshold > 0 && std::abs(in.achieved - 0.5) < 1e-3, in.name.c_str());
    }
    QCOMPARE(QString::fromStdString(t.inputs[6].name), QStringLiteral("model.layers.1.mlp.gate_proj"));

    LoadOptions lt;
    lt.activationThresholds = thresholdsForModel(t, c);
    auto teal = Model::load(kDense, lt);
    std::vector<double> below(t.inputs.size(), 0), total(t.inputs.size(), 0);
    const std::array<std::pair<QString, int>, kProjectionInputs> kSuffix{
        {{".q_proj", 0}, {".o_proj", 1}, {".gate_proj", 2}, {".down_proj", 3}}};
    teal->addObserver([&](const ActivationEvent& ev, std::span<const float> x) {
      if (ev.phase != Phase::Decode) return;
      for (const auto& [suffix, input] : kSuffix) {
        if (!QString::fromStdString(ev.modules.front()).endsWith(suffix)) continue;
        const std::size_t k = static_cast<std::size_t>(ev.layer) * kProjectionInputs + static_cast<std::size_t>(input);
        for (const float v : x) below[k] += std::abs(v) <= t.inputs[k].threshold ? 1 : 0;
        total[k] += static_cast<double>(x.size());
      }
    });
    GenerationOptions go;
    go.maxNewTokens = 40;
    (void)teal->generate(kPrompt2, go);
    for (std::size_t k = 0; k < t.inputs.size(); ++k) {
      QVERIFY(total[k] > 0);
      const double share = below[k] / total[k];
      qInfo("%s: threshold %.4g, share at or below on the decode %.3f", t.inputs[k].name.c_str(),
            double(t.inputs[k].threshold), share);
      QVERIFY2(share > 0.3 && share < 0.7, t.inputs[k].name.c_str());
    }
  }

  void benchmarkGrid() {
    DecodeBenchOptions o;
    o.device = "cpu";
    o.dtype = "float32";
    o.config = loadModelConfig(kDense);
    o.configName = "brown-llama";
    o.context = 16;
    o.tokens = 3;
    o.warmup = 1;
    o.readGBs = 10;  // no probe
    o.linear = Linear::Sparse;
    o.pattern = "4:8";
    const auto rs = runDecodeBenchBatches(o, {1, 3});
    QCOMPARE(rs.size(), std::size_t{2});
    QCOMPARE(rs[1].batch, 3);
    QCOMPARE(QString::fromStdString(rs[0].pattern), QStringLiteral("4:8"));
    QCOMPARE(rs[0].packedProjections, 42);
    for (const auto& r : rs) {
      QCOMPARE(r.stepMs.size(), std::size_t{3});
      QVERIFY(r.tokensPerSecond > 0 && r.gpuMemoryBytes > 0);
    }
    // Packed projections read half the values plus one mask bit per weight.
    o.linear = Linear::Cublas;
    const auto dense = runDecodeBench(o);
    const double ratio = double(dense.weightBytesPerStep) / double(rs[0].weightBytesPerStep);
    QVERIFY2(ratio > 1.2 && ratio < 1.78, qPrintable(QString::number(ratio)));

    // The column layouts with activation sparsity: the spMspV engine, its bytes per step
    // the kept columns' chunks (half the columns at p_x 0.5).
    o.linear = Linear::Sparse;
    o.pattern = "col2:4";
    const auto col = runDecodeBench(o);
    o.activationSparsity = 0.5;
    const auto dual = runDecodeBench(o);
    QCOMPARE(QString::fromStdString(dual.pattern), QStringLiteral("col2:4"));
    QCOMPARE(dual.activationSparsity, 0.5);
    QVERIFY2(QString::fromStdString(dual.engine).contains(QStringLiteral("CPU spMspV col2:4 (42 of 42")),
             dual.engine.c_str());
    QVERIFY(dual.tokensPerSecond > 0);
    // The projections' share halves; lm_head (fp32 here) stays dense and whole.
    qInfo("weight bytes per step: dense %llu, col2:4 %llu, col2:4 at p_x 0.5 %llu",
          static_cast<unsigned long long>(dense.weightBytesPerStep),
          static_cast<unsigned long long>(col.weightBytesPerStep),
          static_cast<unsigned long long>(dual.weightBytesPerStep));
    QVERIFY(double(dual.weightBytesPerStep) < 0.75 * double(col.weightBytesPerStep));
    QCOMPARE(QString::fromStdString(dual.activationSelection), QStringLiteral("top-k"));
    QVERIFY(QString::fromStdString(col.activationSelection).isEmpty());

    // Fixed thresholds (TEAL) from the model's own prefill: each input's threshold ranked at
    // p_x over the prefill's 16 x d_in entries, so half of them at or below it; the same
    // bytes per step, no top-k left in the model.
    o.activationThresholds = true;
    const auto teal = runDecodeBench(o);
    QCOMPARE(QString::fromStdString(teal.activationSelection), QStringLiteral("thresholds (prefill)"));
    QVERIFY2(std::abs(teal.thresholdsAchieved - 0.5) < 0.01, qPrintable(QString::number(teal.thresholdsAchieved)));
    QVERIFY2(
        QString::fromStdString(teal.engine).contains(QStringLiteral("activation thresholds per layer and input")) &&
            !QString::fromStdString(teal.engine).contains(QStringLiteral("activation sparsity")),
        teal.engine.c_str());
    QCOMPARE(teal.weightBytesPerStep, dual.weightBytesPerStep);
    QVERIFY(teal.tokensPerSecond > 0 && teal.stepMs.size() == 3);
    // A run that is not there is named.
    o.thresholdsRun = "no-such-run.sdw.h5";
    QVERIFY_THROWS_EXCEPTION(std::exception, (void)runDecodeBench(o));
    o.thresholdsRun.clear();
    o.activationThresholds = false;
    o.pattern = "col3:4";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, (void)runDecodeBench(o));
  }
};

QTEST_GUILESS_MAIN(TestEngineCpu)
#include "test_engine_cpu.moc"
