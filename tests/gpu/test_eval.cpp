// Quality evaluation and activation drift on the sample model (CPU): the
// dense model against itself (perplexity by hand, KL 0, agreement 1, no
// divergence, drift 0) and against a "pruned" copy made here by zeroing the
// smaller half of every projection by magnitude; the run files and the CLI.

#include "core/decoding.h"
#include "core/run_decoding.h"
#include "core/runstore.h"
#include "core/safetensors.h"
#include "core/tokenizer.h"
#include "gpu/drift_run.h"
#include "gpu/evaluation_run.h"

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

namespace fs = std::filesystem;
using namespace sdw;
using namespace sdw::gpu;

namespace {

const fs::path kModel = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";
const fs::path kText = fs::path(SDW_SOURCE_DIR) / "samples/corpus/brown-heldout.txt";
const fs::path kPrompts = fs::path(SDW_SOURCE_DIR) / "samples/prompts/brown-heldout.jsonl";
const fs::path kCli = fs::path(SDW_BINARY_DIR) / "bin/sdw-cli";

float bf16ToFloat(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

// The sample checkpoint with the smaller-magnitude half of every attention and
// MLP projection set to zero (a crude 50% magnitude pruning); `metadata`
// lands in model.safetensors (the provenance pruneModel writes there).
void writeMagnitudePruned(const fs::path& dst, const std::map<std::string, std::string>& metadata = {}) {
  fs::create_directories(dst);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(kModel / f, dst / f, fs::copy_options::overwrite_existing);
  const auto file = SafetensorsFile::open(kModel / "model.safetensors");
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorToWrite> out;
  for (const auto& [name, v] : file.tensors()) {
    std::vector<std::byte> bytes(v.bytes.begin(), v.bytes.end());
    const bool proj = name.find("_proj.weight") != std::string::npos;
    if (proj) {
      QVERIFY2(v.dtype == "BF16", "the sample model is stored in bfloat16");
      const auto n = static_cast<std::size_t>(v.numel());
      std::vector<std::uint16_t> h(n);
      std::memcpy(h.data(), bytes.data(), n * 2);
      std::vector<std::size_t> order(n);
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::abs(bf16ToFloat(h[a])) < std::abs(bf16ToFloat(h[b]));
      });
      for (std::size_t i = 0; i < n / 2; ++i) h[order[i]] = 0;
      std::memcpy(bytes.data(), h.data(), n * 2);
    }
    storage.push_back(std::move(bytes));
    out.push_back({name, v.dtype, v.shape, std::span<const std::byte>(storage.back())});
  }
  writeSafetensors(dst / "model.safetensors", out, metadata);
}

// A pruned copy whose provenance says: calibrated by AR decoding with `d`
// from `prompts` (what pruneModel records; read by findPrunedCalibration).
void writePrunedFromAr(const fs::path& dst, const Decoding& d, const fs::path& prompts) {
  RunDecoding c;
  c.run = dst.parent_path() / "calib-ar.sdw.h5";
  c.source = "ar";
  c.decodes = true;
  c.decoding = d;
  c.prompts = prompts;
  writeMagnitudePruned(dst, calibrationMetadata(c, dst / "pruning.sdw.h5"));
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::vector<std::vector<std::int32_t>> heldoutPromptIds(int n) {
  const Tokenizer tok = Tokenizer::fromFile(kModel / "tokenizer.json");
  std::vector<std::vector<std::int32_t>> out;
  std::ifstream in(kPrompts);
  std::string line;
  while (static_cast<int>(out.size()) < n && std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::int32_t> ids = {*tok.bosId()};
    const auto body = tok.encode(nlohmann::json::parse(line).at("prompt").get<std::string>());
    ids.insert(ids.end(), body.begin(), body.end());
    out.push_back(std::move(ids));
  }
  return out;
}

// NLL of ids[from..] by hand from Model::logits, in double.
double handNll(Model& m, const std::vector<std::int32_t>& ids, std::size_t from, std::int64_t& count) {
  const std::vector<float> lg = m.logits(ids);
  const auto V = static_cast<std::size_t>(m.config().vocabSize);
  double sum = 0;
  for (std::size_t t = from; t < ids.size(); ++t) {
    const float* row = lg.data() + (t - 1) * V;
    double mx = row[0];
    for (std::size_t j = 0; j < V; ++j) mx = std::max(mx, double(row[j]));
    double z = 0;
    for (std::size_t j = 0; j < V; ++j) z += std::exp(double(row[j]) - mx);
    sum += -(double(row[ids[t]]) - mx - std::log(z));
    ++count;
  }
  return sum;
}

}  // namespace

class TestEval : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path pruned_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    pruned_ = fs::path(tmp_.path().toStdString()) / "pruned";
    writeMagnitudePruned(pruned_);
    auto m = Model::load(pruned_);
    QCOMPARE(m->config().numLayers, std::int64_t{6});
  }

  void klOfEqualRowsIsZero() {
    const std::vector<float> a = {1, 2, 3, -1};
    QCOMPARE(klDivergence(a, a), 0.0);
    const std::vector<float> b = {3, 2, 1, -1};
    QVERIFY(klDivergence(a, b) > 0.1);
  }

  void denseAgainstItselfAndPruned() {
    EvaluationSettings s;
    s.dense = kModel;
    s.models = {pruned_};
    s.text = kText;
    s.prompts = kPrompts;
    s.seeds = {0, 1};
    s.maxNewTokens = 12;
    s.window = 48;
    s.windows = 2;
    s.maxPrompts = 3;
    s.temperature = 0;  // greedy: the dense trajectory never leaves its own argmax
    const EvaluationResult r = evaluate(s);
    QCOMPARE(r.models.size(), std::size_t{2});
    QCOMPARE(r.prompts, 3);
    const ModelEvaluation& d = r.models[0];
    const ModelEvaluation& p = r.models[1];
    QVERIFY(d.isDense);

    // Perplexity of the dense model on its own greedy generations, by hand.
    auto dense = Model::load(kModel);
    const auto prompts = heldoutPromptIds(3);
    QCOMPARE(r.denseGenerationIds.size(), std::size_t{3});
    double sum = 0;
    std::int64_t count = 0;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      std::vector<std::int32_t> seq = prompts[i];
      seq.insert(seq.end(), r.denseGenerationIds[i].begin(), r.denseGenerationIds[i].end());
      sum += handNll(*dense, seq, prompts[i].size(), count);
    }
    QCOMPARE(d.tokensDenseGen, count);
    QVERIFY(count > 0);
    const double ppl = std::exp(sum / double(count));
    QVERIFY2(std::abs(d.pplDenseGen - ppl) <= 1e-9 * ppl,
             qPrintable(QString("ppl %1 vs by hand %2").arg(d.pplDenseGen, 0, 'g', 17).arg(ppl, 0, 'g', 17)));
    QCOMPARE(d.tokensText, std::int64_t{2 * 47});
    QVERIFY(std::isfinite(d.pplText) && d.pplText > 1);

    // Dense vs dense: KL 0, agreement 1, no divergence, for every seed.
    QCOMPARE(d.seeds.size(), std::size_t{2});
    for (const auto& ps : d.seeds) {
      QCOMPARE(ps.klMean, 0.0);
      QCOMPARE(ps.agreement, 1.0);
      QCOMPARE(ps.noDivergence, 3);
      for (const int f : ps.firstDivergence) QCOMPARE(f, -1);
    }
    QCOMPARE(d.kl.mean, 0.0);
    QCOMPARE(d.kl.n, 2);

    // The magnitude-pruned copy differs from the dense model.
    QVERIFY(p.kl.mean > 0);
    QVERIFY(p.kl.min > 0);
    QVERIFY(p.agreement.mean < 1.0);
    QVERIFY(std::abs(p.pplDenseGen - d.pplDenseGen) > 1e-6);
    QCOMPARE(p.tokensDenseGen, d.tokensDenseGen);  // the same dense sequences scored
    QCOMPARE(r.sideBySide.size(), std::size_t{1});
    QCOMPARE(r.sideBySide[0].texts.size(), std::size_t{2});

    // The evaluation run.
    const fs::path run = fs::path(tmp_.path().toStdString()) / "eval.sdw.h5";
    writeEvaluationRun(r, run);
    const auto rr = runstore::RunReader::open(run);
    QCOMPARE(rr.kind(), std::string("evaluation"));
    const auto kl = rr.readFloat64("/evaluation/onpolicy/kl_mean");
    QCOMPARE(kl.shape, (std::vector<hsize_t>{2, 2}));
    QCOMPARE(kl(0, 0), 0.0);
    QCOMPARE(kl(1, 1), p.seeds[1].klMean);
    QCOMPARE(rr.readFloat64("/evaluation/ppl_dense_gen").data[0], d.pplDenseGen);
    QCOMPARE(rr.shape("/evaluation/onpolicy/first_divergence"), (std::vector<hsize_t>{2, 2, 3}));
    QCOMPARE(rr.readStrings("/evaluation/side_by_side/texts").size(), std::size_t{2});
  }

  void sampledSeedsSpread() {
    EvaluationSettings s;
    s.dense = kModel;
    s.models = {pruned_};
    s.prompts = kPrompts;
    s.seeds = {0, 1, 2};
    s.maxNewTokens = 10;
    s.windows = 0;
    s.maxPrompts = 2;
    s.temperature = 1.0;
    s.sideBySidePrompts = 0;
    const EvaluationResult r = evaluate(s);
    const ModelEvaluation& d = r.models[0];
    const ModelEvaluation& p = r.models[1];
    // Sampled trajectories differ per seed; the dense model scoring its own
    // samples still has KL 0 and full greedy agreement.
    for (const auto& ps : d.seeds) {
      QCOMPARE(ps.klMean, 0.0);
      QCOMPARE(ps.agreement, 1.0);
    }
    QCOMPARE(p.kl.n, 3);
    QVERIFY(p.kl.min <= p.kl.mean && p.kl.mean <= p.kl.max);
    QVERIFY(p.kl.std >= 0);
    QVERIFY(p.kl.max > p.kl.min);  // different seeds, different trajectories
  }

  void driftDenseVsDenseIsZero() {
    auto a = Model::load(kModel);
    auto b = Model::load(kModel);
    const auto prompts = heldoutPromptIds(3);
    const auto curves = measureDrift(*a, *b, prompts, 10, {DriftMode::Own, DriftMode::Shared});
    QCOMPARE(curves.size(), std::size_t{2});
    for (const auto& c : curves) {
      QCOMPARE(c.steps, 10);
      QCOMPARE(c.layers, 6);
      for (std::size_t i = 0; i < c.ratio.size(); ++i) {
        QCOMPARE(c.ratio[i], 0.0);
        QCOMPARE(c.count[i], 3LL);
      }
      for (const int s90 : c.summary.step90) QCOMPARE(s90, -1);
    }
  }

  void driftSharedUsesDenseTokens() {
    auto dense = Model::load(kModel);
    auto pruned = Model::load(pruned_);
    const auto prompts = heldoutPromptIds(3);
    const int steps = 10;
    // The default decoding samples; prompt i with seed 0 * 1000003 + i for both models.
    const auto curves = measureDrift(*dense, *pruned, prompts, steps, {DriftMode::Own, DriftMode::Shared}, {}, true);
    GenerationOptions g;
    g.maxNewTokens = steps;
    g.sampling = samplingOptions(kDefaultDecoding, 0);
    const auto denseGen = dense->generateBatch(prompts, g);
    const auto prunedGen = pruned->generateBatch(prompts, g);
    const DriftCurves& own = curves[0];
    const DriftCurves& shared = curves[1];
    QCOMPARE(shared.mode, DriftMode::Shared);
    bool trajectoriesDiffer = false;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      std::vector<std::int32_t> d = prompts[i], p = prompts[i];
      d.insert(d.end(), denseGen[i].tokens.begin(), denseGen[i].tokens.end());
      p.insert(p.end(), prunedGen[i].tokens.begin(), prunedGen[i].tokens.end());
      QCOMPARE(d.size(), prompts[i].size() + steps);
      // shared: the pruned model reads exactly the dense model's sequence
      QCOMPARE(shared.trace.denseInputs[i], d);
      QCOMPARE(shared.trace.prunedInputs[i], d);
      // own: each model reads its own sampled continuation
      QCOMPARE(own.trace.denseInputs[i], d);
      QCOMPARE(own.trace.prunedInputs[i], p);
      trajectoriesDiffer = trajectoriesDiffer || p != d;
    }
    QVERIFY(trajectoriesDiffer);
    // Layer 0 reads the (unpruned) embedding of the token: identical tokens,
    // identical input. Deeper layers see the pruned projections' effect.
    for (const auto& c : curves)
      for (int t = 0; t < c.steps; ++t)
        for (int l = 1; l < c.layers; ++l) QVERIFY(c.ratio[std::size_t(t * c.layers + l)] > 0);
    for (int t = 0; t < shared.steps; ++t) QCOMPARE(shared.ratio[std::size_t(t * shared.layers)], 0.0);
  }

  // Own trajectories follow the decoding: sampled at temperature 1 they
  // differ from greedy ones, the same seed gives the same tokens and curves,
  // another seed other tokens; dense and pruned read their own samples.
  void driftSampledTrajectoriesAreSeeded() {
    auto dense = Model::load(kModel);
    auto pruned = Model::load(pruned_);
    const auto prompts = heldoutPromptIds(2);
    const int steps = 8;
    const std::vector<DriftMode> own = {DriftMode::Own};
    const DriftDecoding greedy{Decoding{0.0, 0, 1.0}, 0};
    const DriftDecoding sampled{Decoding{1.0, 0, 1.0}, 0};
    const DriftDecoding otherSeed{Decoding{1.0, 0, 1.0}, 1};
    const auto g = measureDrift(*dense, *pruned, prompts, steps, own, greedy, true);
    const auto s0 = measureDrift(*dense, *pruned, prompts, steps, own, sampled, true);
    const auto s0again = measureDrift(*dense, *pruned, prompts, steps, own, sampled, true);
    const auto s1 = measureDrift(*dense, *pruned, prompts, steps, own, otherSeed, true);
    QCOMPARE(s0[0].trace.denseInputs, s0again[0].trace.denseInputs);
    QCOMPARE(s0[0].trace.prunedInputs, s0again[0].trace.prunedInputs);
    for (std::size_t i = 0; i < s0[0].ratio.size(); ++i) QCOMPARE(s0[0].ratio[i], s0again[0].ratio[i]);
    QVERIFY(s0[0].trace.denseInputs != g[0].trace.denseInputs);
    QVERIFY(s0[0].trace.prunedInputs != g[0].trace.prunedInputs);
    QVERIFY(s0[0].trace.denseInputs != s1[0].trace.denseInputs);
    // Each model's own samples: the dense rows are what generateBatch gives
    // the dense model with the same seeds.
    GenerationOptions o;
    o.maxNewTokens = steps;
    o.sampling = samplingOptions(kDefaultDecoding, 0);
    const auto denseGen = dense->generateBatch(prompts, o);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      std::vector<std::int32_t> d = prompts[i];
      d.insert(d.end(), denseGen[i].tokens.begin(), denseGen[i].tokens.end());
      QCOMPARE(s0[0].trace.denseInputs[i], d);
    }
    // pruned = dense: the same samples, so no drift in either mode.
    auto copy = Model::load(kModel);
    for (const auto& c : measureDrift(*dense, *copy, prompts, steps, {DriftMode::Own, DriftMode::Shared}, sampled))
      for (const double v : c.ratio) QCOMPARE(v, 0.0);
  }

  // A pruned model's calibration decoded greedily: evaluation and drift at
  // the default (sampled) decoding warn, at greedy they do not; the runs
  // record the decoding and the warnings.
  void decodingWarnings() {
    const fs::path dir = fs::path(tmp_.path().toStdString());
    const fs::path greedyCal = dir / "pruned-greedy-cal";
    writePrunedFromAr(greedyCal, Decoding{0.0, 0, 1.0}, fs::path(SDW_SOURCE_DIR) / "samples/prompts/brown-calib.jsonl");
    const PrunedCalibration found = findPrunedCalibration(greedyCal);
    QVERIFY(found.found);
    QVERIFY(found.calibration.decodes);
    QVERIFY(found.calibration.decoding.greedy());

    EvaluationSettings s;
    s.dense = kModel;
    s.models = {greedyCal};
    s.prompts = kPrompts;
    s.seeds = {0};
    s.maxNewTokens = 4;
    s.windows = 0;
    s.maxPrompts = 1;
    s.sideBySidePrompts = 0;
    const EvaluationResult sampledEval = evaluate(s);  // the default decoding
    QCOMPARE(sampledEval.warnings.size(), std::size_t{1});
    QVERIFY2(sampledEval.warnings[0].find("decoded greedy, but this evaluation decodes sampled, T=1.0, top-k off, "
                                          "top-p 1.0") != std::string::npos,
             sampledEval.warnings[0].c_str());
    s.temperature = 0;
    const EvaluationResult greedyEval = evaluate(s);
    QVERIFY2(greedyEval.warnings.empty(), joined(greedyEval.warnings).c_str());
    QVERIFY(joined(greedyEval.notes).find("pruned-greedy-cal: calib-ar.sdw.h5, AR, greedy") != std::string::npos);

    // The run records the decoding and the warnings.
    const fs::path run = dir / "eval-warned.sdw.h5";
    writeEvaluationRun(sampledEval, run);
    {
      const auto rr = runstore::RunReader::open(run);
      QCOMPARE(rr.readDoubleAttribute("/evaluation", "temperature"), 1.0);
      QCOMPARE(rr.readIntAttribute("/evaluation", "top_k"), std::int64_t{0});
      QCOMPARE(rr.readDoubleAttribute("/evaluation", "top_p"), 1.0);
      QCOMPARE(rr.readStringAttribute("/evaluation", "decoding"), std::string("sampled, T=1.0, top-k off, top-p 1.0"));
      QCOMPARE(rr.readStrings("/evaluation/warnings"), sampledEval.warnings);
      QCOMPARE(rr.readStrings("/evaluation/calibration_decodings"), (std::vector<std::string>{"", "greedy"}));
    }

    DriftSettings d;
    d.dense = kModel;
    d.pruned = {greedyCal};
    d.prompts = kPrompts;
    d.steps = 3;
    d.maxPrompts = 1;
    const DriftResult sampledDrift = analyzeDrift(d);
    QCOMPARE(sampledDrift.warnings.size(), std::size_t{1});
    QVERIFY(sampledDrift.warnings[0].find("but this drift analysis decodes sampled") != std::string::npos);
    const fs::path driftRun = dir / "drift-warned.sdw.h5";
    writeDriftRun(sampledDrift, driftRun);
    {
      const auto rr = runstore::RunReader::open(driftRun);
      QCOMPARE(rr.readDoubleAttribute("/drift", "temperature"), 1.0);
      QCOMPARE(rr.readIntAttribute("/drift", "top_k"), std::int64_t{0});
      QCOMPARE(rr.readDoubleAttribute("/drift", "top_p"), 1.0);
      QCOMPARE(rr.readIntAttribute("/drift", "seed"), std::int64_t{0});
      QCOMPARE(rr.readStrings("/drift/warnings"), sampledDrift.warnings);
    }
    d.decoding = Decoding{0.0, 0, 1.0};
    QVERIFY(analyzeDrift(d).warnings.empty());

    // Held-out prompts that the calibration decoded are called out.
    d.prompts = fs::path(SDW_SOURCE_DIR) / "samples/prompts/brown-calib.jsonl";
    const DriftResult leaked = analyzeDrift(d);
    QCOMPARE(leaked.warnings.size(), std::size_t{1});
    QVERIFY(leaked.warnings[0].find("the same prompts file this drift analysis decodes") != std::string::npos);
  }

  void cliAnalyzeDriftAndEval() {
    if (!fs::exists(kCli)) QSKIP("sdw-cli not built");
    const QString out = tmp_.path() + "/drift.sdw.h5";
    QProcess p;
    p.start(QString::fromStdString(kCli.string()),
            {"analyze", "drift", "--dense", QString::fromStdString(kModel.string()), "--pruned",
             QString::fromStdString(pruned_.string()), "--prompts", QString::fromStdString(kPrompts.string()),
             "--steps", "6", "--max-prompts", "2", "--out", out, "--json"});
    QVERIFY(p.waitForFinished(300000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(j.at("layers").get<int>(), 6);
    QCOMPARE(j.at("models").size(), std::size_t{1});
    const auto rr = runstore::RunReader::open(out.toStdString());
    QCOMPARE(rr.kind(), std::string("drift"));
    QCOMPARE(rr.shape("/drift/own/ratio"), (std::vector<hsize_t>{1, 6, 6}));
    QCOMPARE(rr.shape("/drift/shared/step90"), (std::vector<hsize_t>{1, 6}));
    QCOMPARE(rr.shape("/drift/shared/median"), (std::vector<hsize_t>{1, 6}));

    QProcess e;
    e.start(QString::fromStdString(kCli.string()),
            {"eval", "--dense", QString::fromStdString(kModel.string()), "--models",
             QString::fromStdString(pruned_.string()), "--seeds", "0", "--max-new-tokens", "6", "--max-prompts", "2",
             "--windows", "1", "--window", "32", "--json"});
    QVERIFY(e.waitForFinished(300000));
    QVERIFY2(e.exitCode() == 0, e.readAllStandardError().constData());
    const auto je = nlohmann::json::parse(e.readAllStandardOutput().toStdString());
    QCOMPARE(je.at("models").size(), std::size_t{2});
    QCOMPARE(je.at("models")[0].at("kl").at("mean").get<double>(), 0.0);
  }
};

QTEST_GUILESS_MAIN(TestEval)
#include "test_eval.moc"
