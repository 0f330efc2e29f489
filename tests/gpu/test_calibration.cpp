// Calibration on CPU with the sample model (samples/model/brown-llama):
// accumulated statistics against a direct computation from observed
// activations (double precision), decode-only position accounting (a 1-token
// prompt included), exact vs re-forward capture, the prefill ablation, the
// fixed-text budget, cancel + resume, the half statistics of the noise floor
// (each half against a direct computation over its sequences), and the
// sdw-cli calibrate command end to end, including a killed process. Label:
// engine (runs in CI).

#include "core/runstore.h"
#include "gpu/calibration.h"
#include "gpu/model.h"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include <cmath>
#include <fstream>
#include <map>

using namespace sdw;
using namespace sdw::gpu;
namespace fs = std::filesystem;
namespace rs = sdw::runstore;

namespace {

const fs::path kModel = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";
const fs::path kCorpus = fs::path(SDW_SOURCE_DIR) / "samples/corpus/brown-heldout.txt";
const fs::path kCli = fs::path(SDW_BINARY_DIR) / "bin/sdw-cli";

struct Stats {
  Eigen::MatrixXd xtx;
  Eigen::VectorXd sumSq;
  std::int64_t tokens = 0;
  std::string modules;
};
using StatsMap = std::map<std::string, Stats>;

StatsMap readStats(const fs::path& run) {
  const auto r = rs::RunReader::open(run);
  StatsMap out;
  for (const auto& name : r.listGroup("/calibration/inputs")) {
    const std::string g = "/calibration/inputs/" + name;
    Stats s;
    const auto d = r.readIntAttribute(g, "d_in");
    s.tokens = r.readIntAttribute(g, "tokens");
    s.modules = r.readStringAttribute(g, "modules");
    const auto x = r.readFloat64(g + "/xtx");
    const auto q = r.readFloat64(g + "/sum_sq");
    s.xtx = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(x.data.data(), d, d);
    s.sumSq = Eigen::Map<const Eigen::VectorXd>(q.data.data(), d);
    out[name] = std::move(s);
  }
  return out;
}

// Sums of x x^T and x^2 over observed rows, in double.
struct Direct {
  std::map<std::string, Eigen::MatrixXd> xtx;
  std::map<std::string, Eigen::VectorXd> sumSq;
  std::map<std::string, std::int64_t> rows;
  void add(const std::string& name, std::span<const float> x, std::int64_t dIn, std::int64_t first, std::int64_t count) {
    if (count <= 0) return;
    Eigen::MatrixXd m = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                            x.data() + first * dIn, count, dIn).cast<double>();
    auto& g = xtx[name];
    if (g.size() == 0) g = Eigen::MatrixXd::Zero(dIn, dIn), sumSq[name] = Eigen::VectorXd::Zero(dIn);
    g += m.transpose() * m;
    sumSq[name] += m.array().square().colwise().sum().matrix().transpose();
    rows[name] += count;
  }
};

double relFro(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) { return (a - b).norm() / std::max(b.norm(), 1e-30); }

// One half's sum (xtx_a or xtx_b) and token count (tokens_a or tokens_b) per input.
std::map<std::string, std::pair<Eigen::MatrixXd, std::int64_t>> readHalf(const fs::path& run, const std::string& half) {
  const auto r = rs::RunReader::open(run);
  std::map<std::string, std::pair<Eigen::MatrixXd, std::int64_t>> out;
  for (const auto& name : r.listGroup("/calibration/inputs")) {
    const std::string g = "/calibration/inputs/" + name;
    const auto d = r.readIntAttribute(g, "d_in");
    const auto x = r.readFloat64(g + "/xtx_" + half);
    out[name] = {Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(x.data.data(), d, d),
                 r.readIntAttribute(g, "tokens_" + half)};
  }
  return out;
}

double maxRelDiff(const StatsMap& a, const StatsMap& b) {
  double worst = 0;
  for (const auto& [name, s] : b) worst = std::max(worst, relFro(a.at(name).xtx, s.xtx));
  return worst;
}

std::int64_t intAttr(const fs::path& run, const std::string& obj, const std::string& name) {
  return rs::RunReader::open(run).readIntAttribute(obj, name);
}

struct Generation {
  std::vector<std::int32_t> prompt, tokens;
  std::int64_t prefillCounted = 0, decodeCounted = 0;
};

std::vector<Generation> readGenerations(const fs::path& run) {
  const auto r = rs::RunReader::open(run);
  const std::string g = "/calibration/generations";
  const auto ids = r.readInt32(g + "/token_ids").data;
  const auto off = r.readInt64(g + "/offsets").data;
  const auto pids = r.readInt32(g + "/prompt_token_ids").data;
  const auto poff = r.readInt64(g + "/prompt_offsets").data;
  const auto ptok = r.readInt32(g + "/prompt_tokens").data;
  const auto pre = r.readInt32(g + "/prefill_counted").data;
  const auto dec = r.readInt32(g + "/decode_counted").data;
  std::vector<Generation> out;
  for (std::size_t i = 0; i + 1 < off.size(); ++i) {
    Generation x;
    x.tokens.assign(ids.begin() + off[i], ids.begin() + off[i + 1]);
    x.prompt.assign(pids.begin() + poff[i], pids.begin() + poff[i + 1]);
    if (static_cast<std::int32_t>(x.prompt.size()) != ptok[i]) throw std::runtime_error("prompt_tokens mismatch");
    x.prefillCounted = pre[i];
    x.decodeCounted = dec[i];
    out.push_back(std::move(x));
  }
  return out;
}

// Teacher-forced single-sequence passes through Model::logits, keeping the
// positions each generation says were counted: an implementation of the
// position bookkeeping independent of the engine's batches and padding.
Direct directFromGenerations(const std::vector<Generation>& gens) {
  auto model = Model::load(kModel);
  Direct d;
  std::int64_t begin = 0, end = 0;
  model->addObserver([&](const ActivationEvent& ev, std::span<const float> x) {
    const std::int64_t lo = std::max<std::int64_t>(ev.position, begin), hi = std::min<std::int64_t>(ev.position + ev.tokens, end);
    d.add(ev.modules.front(), x, ev.dIn, lo - ev.position, hi - lo);
  });
  for (const auto& g : gens) {
    if (g.prefillCounted + g.decodeCounted == 0) continue;
    std::vector<std::int32_t> seq = g.prompt;
    seq.insert(seq.end(), g.tokens.begin(), g.tokens.begin() + g.decodeCounted);
    const auto L = static_cast<std::int64_t>(g.prompt.size());
    begin = g.prefillCounted > 0 ? 0 : L;
    end = begin + g.prefillCounted + g.decodeCounted;
    if (g.prefillCounted > 0 && g.prefillCounted < L) end = g.prefillCounted;
    (void)model->logits(seq);
  }
  return d;
}

void compareToDirect(const StatsMap& s, const Direct& d, std::int64_t tokens) {
  QCOMPARE(s.size(), std::size_t{24});  // 6 layers x (qkv, o, gate/up, down)
  for (const auto& [name, st] : s) {
    QCOMPARE(st.tokens, tokens);
    QCOMPARE(d.rows.at(name), tokens);
    const double e = relFro(st.xtx, d.xtx.at(name));
    const double q = (st.sumSq - d.sumSq.at(name)).norm() / d.sumSq.at(name).norm();
    if (e > 1e-5 || q > 1e-5) QFAIL(qPrintable(QString("%1: xtx rel %2, sum_sq rel %3").arg(name.c_str()).arg(e).arg(q)));
    // The diagonal of sum x x^T is sum x^2.
    QVERIFY((st.xtx.diagonal() - st.sumSq).norm() <= 1e-5 * st.sumSq.norm());
  }
}

fs::path writePrompts(const fs::path& dir) {
  const fs::path p = dir / "prompts.jsonl";
  std::ofstream out(p);
  out << R"({"id": "a", "prompt": "The committee said on Monday that"})" << "\n"
      << R"({"id": "one", "prompt": ""})" << "\n"  // bos only: a 1-token prompt
      << R"({"id": "b", "prompt": "In the spring of that year the farmers"})" << "\n"
      << R"({"id": "c", "prompt": "He walked into the room and"})" << "\n";
  return p;
}

CalibrationSettings arSettings(const fs::path& prompts, const std::string& capture, std::int64_t budget) {
  CalibrationSettings s;
  s.source = CalibrationSource::Ar;
  s.model = kModel;
  s.prompts = prompts;
  s.tokenBudget = budget;
  s.maxNewTokens = 12;
  s.batch = 3;
  s.capture = parseCaptureMode(capture);
  return s;
}

CalibrationSettings fixedSettings(std::int64_t budget) {
  CalibrationSettings s;
  s.source = CalibrationSource::Fixed;
  s.model = kModel;
  s.corpus = kCorpus;
  s.tokenBudget = budget;
  s.window = 32;
  s.batch = 3;
  s.seed = 7;
  return s;
}

fs::path tmpPath(const QTemporaryDir& dir, const std::string& name) { return fs::path(dir.path().toStdString()) / name; }

}  // namespace

class TestCalibration : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void fixedTextMatchesDirectAndStopsAtBudget() {
    QTemporaryDir dir;
    const auto out = tmpPath(dir, "fixed.sdw.h5");
    Direct d;
    CalibrationHooks hooks;
    hooks.modelLoaded = [&](Model& m) {
      m.addObserver([&](const ActivationEvent& ev, std::span<const float> x) {
        QCOMPARE(ev.phase, Phase::Prefill);
        d.add(ev.modules.front(), x, ev.dIn, 0, ev.tokens);
      });
    };
    const auto r = runCalibration(fixedSettings(100), out, {}, hooks);  // 3 full windows of 32 + 4 positions
    QVERIFY(r.complete);
    QCOMPARE(r.tokensCollected, std::int64_t{100});
    QCOMPARE(r.windowsDone, std::int64_t{4});
    compareToDirect(readStats(out), d, 100);
    const auto rd = rs::RunReader::open(out);
    QCOMPARE(rd.status(), std::string("complete"));
    QCOMPARE(rd.kind(), std::string("calibration"));
    QCOMPARE(rd.readStringAttribute("/calibration", "source"), std::string("fixed"));
    QCOMPARE(rd.readIntAttribute("/calibration", "tokens_collected"), std::int64_t{100});
    QCOMPARE(rd.readIntAttribute("/calibration", "windows_done"), std::int64_t{4});
    QCOMPARE(rd.readInt32("/calibration/windows/counted").data, (std::vector<std::int32_t>{32, 32, 32, 4}));
    QCOMPARE(rd.readStringAttribute("/calibration/inputs/model.layers.0.self_attn.q_proj", "modules"),
             std::string("model.layers.0.self_attn.q_proj,model.layers.0.self_attn.k_proj,model.layers.0.self_attn.v_proj"));
    QCOMPARE(rd.readIntAttribute("/calibration/inputs/model.layers.5.mlp.down_proj", "d_in"), std::int64_t{768});
  }

  void topkStorageHoldsTheLeadingEigenpairs() {
    QTemporaryDir dir;
    const auto full = tmpPath(dir, "full.sdw.h5"), topk = tmpPath(dir, "topk.sdw.h5");
    auto s = fixedSettings(100);
    (void)runCalibration(s, full);
    s.storage = StatsStorage::Topk;
    s.topK = 16;
    (void)runCalibration(s, topk);
    const auto stats = readStats(full);
    const auto r = rs::RunReader::open(topk);
    QCOMPARE(r.readStringAttribute("/calibration", "storage"), std::string("topk"));
    for (const auto& [name, st] : stats) {
      const std::string g = "/calibration/inputs/" + name;
      QVERIFY(!r.exists(g + "/xtx"));
      const auto d = st.xtx.rows();
      const auto vals = r.readFloat64(g + "/eigvals");
      const auto vecs = r.readFloat64(g + "/eigvecs");
      const auto diag = r.readFloat64(g + "/diag");
      QCOMPARE(vals.shape, (std::vector<hsize_t>{16}));
      QCOMPARE(vecs.shape, (std::vector<hsize_t>{16, static_cast<hsize_t>(d)}));
      const Eigen::MatrixXd H = st.xtx / static_cast<double>(st.tokens);
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(H);  // ascending
      const Eigen::MatrixXd U = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
          vecs.data.data(), 16, d);
      for (int i = 0; i < 16; ++i) {
        const double want = eig.eigenvalues()(d - 1 - i);
        QVERIFY2(std::abs(vals.data[static_cast<std::size_t>(i)] - want) <= 1e-4 * eig.eigenvalues()(d - 1),
                 qPrintable(QString("%1: eigenvalue %2: %3 vs %4").arg(name.c_str()).arg(i).arg(vals.data[static_cast<std::size_t>(i)]).arg(want)));
        if (i > 0) QVERIFY(vals.data[static_cast<std::size_t>(i)] <= vals.data[static_cast<std::size_t>(i - 1)]);
        // Row i is an eigenvector: H u = lambda u, |u| = 1.
        const Eigen::VectorXd u = U.row(i).transpose();
        QVERIFY(std::abs(u.norm() - 1) < 1e-4);
        QVERIFY((H * u - vals.data[static_cast<std::size_t>(i)] * u).norm() <= 1e-3 * eig.eigenvalues()(d - 1));
      }
      const Eigen::VectorXd dg = Eigen::Map<const Eigen::VectorXd>(diag.data.data(), d);
      QVERIFY((dg - st.xtx.diagonal()).norm() <= 1e-6 * st.xtx.diagonal().norm());
      // The halves over the stored eigenvectors: U (xtx_half / tokens_half) U^T, [16, 16].
      for (const std::string half : {"a", "b"}) {
        const auto h = readHalf(full, half).at(name);
        const auto p = r.readFloat64(g + "/eigproj_" + half);
        QCOMPARE(p.shape, (std::vector<hsize_t>{16, 16}));
        const Eigen::MatrixXd P = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            p.data.data(), 16, 16);
        QCOMPARE(r.readIntAttribute(g, "tokens_" + half), h.second);
        QVERIFY2(relFro(P, U * (h.first / static_cast<double>(h.second)) * U.transpose()) <= 1e-4, (name + " " + half).c_str());
      }
    }
  }

  void arDecodeOnlyCounts_data() {
    QTest::addColumn<QString>("capture");
    QTest::newRow("exact") << "exact";
    QTest::newRow("reforward") << "reforward";
  }
  // Per-layer progress: each pass over the 6 layers reports layers done in
  // order (capture during forward passes, then the final eigendecomposition
  // or write), always with parts = 6; the final pass reaches 6 of 6.
  void perLayerProgressFollowsThePasses() {
    QTemporaryDir dir;
    for (const std::string storage : {"full", "topk"}) {
      auto s = fixedSettings(100);
      s.storage = parseStatsStorage(storage);
      s.topK = 8;
      std::vector<std::pair<std::string, int>> reports;
      std::vector<int> parts;
      (void)runCalibration(s, tmpPath(dir, storage + ".sdw.h5"), [&](const Progress& p) {
        if (p.parts > 0) {
          parts.push_back(p.parts);
          reports.emplace_back(p.partLabel, p.part);
        }
        return true;
      });
      QVERIFY(std::all_of(parts.begin(), parts.end(), [](int n) { return n == 6; }));
      const std::string last = storage == "full" ? "writing" : "eigendecomposition";
      std::vector<int> finalPass;
      for (const auto& [label, part] : reports) {
        QVERIFY(part >= 1 && part <= 6);
        QVERIFY2(label == "capture" || label == last, label.c_str());
        if (label == last) finalPass.push_back(part);
      }
      QVERIFY(std::any_of(reports.begin(), reports.end(), [](const auto& r) { return r.first == "capture"; }));
      QCOMPARE(finalPass, (std::vector<int>{1, 2, 3, 4, 5, 6}));  // one report per layer, in order
    }
  }

  void arDecodeOnlyCounts() {
    QFETCH(QString, capture);
    QTemporaryDir dir;
    const auto prompts = writePrompts(fs::path(dir.path().toStdString()));
    const auto out = tmpPath(dir, "ar.sdw.h5");
    // Every row the model reads while decoding (whether or not it is counted):
    // one layer-0 q/k/v row per generated token fed back.
    std::int64_t decodeRows = 0, prefillOfOneTokenPrompt = 0;
    CalibrationHooks hooks;
    hooks.modelLoaded = [&](Model& m) {
      m.addObserver([&](const ActivationEvent& ev, std::span<const float>) {
        if (ev.layer != 0 || ev.modules.size() != 3) return;
        if (ev.phase == Phase::Decode) decodeRows += ev.tokens;
        if (ev.phase == Phase::Prefill && ev.tokens == 1 && ev.position == 0) ++prefillOfOneTokenPrompt;
      });
    };
    const std::int64_t budget = 60;
    const auto r = runCalibration(arSettings(prompts, capture.toStdString(), budget), out, {}, hooks);
    QCOMPARE(r.tokensCollected, budget);
    const auto gens = readGenerations(out);
    QCOMPARE(static_cast<std::int64_t>(gens.size()), r.promptsDone);
    QVERIFY(gens.size() % 3 == 0);  // whole batches
    QVERIFY(prefillOfOneTokenPrompt > 0);  // the 1-token prompt was generated from
    std::int64_t fedBack = 0, counted = 0;
    for (std::size_t i = 0; i < gens.size(); ++i) {
      const auto& g = gens[i];
      QCOMPARE(g.prefillCounted, std::int64_t{0});
      fedBack += static_cast<std::int64_t>(g.tokens.size()) - 1;
      counted += g.decodeCounted;
      QVERIFY(g.decodeCounted <= static_cast<std::int64_t>(g.tokens.size()) - 1);
      if (i + 3 < gens.size()) QCOMPARE(g.decodeCounted, static_cast<std::int64_t>(g.tokens.size()) - 1);
    }
    QCOMPARE(counted, budget);
    QVERIFY(fedBack >= budget);
    if (capture == "exact") QCOMPARE(decodeRows, fedBack);  // decode events = generated tokens read back
    QCOMPARE(gens[1].prompt.size(), std::size_t{1});        // "one": bos alone
    QVERIFY(gens[1].decodeCounted > 0);
    // The statistics are those of the counted decode positions, nothing else
    // (position 0 of the 1-token prompt in particular).
    compareToDirect(readStats(out), directFromGenerations(gens), budget);
  }

  void exactAgreesWithReforward() {
    QTemporaryDir dir;
    const auto prompts = writePrompts(fs::path(dir.path().toStdString()));
    const auto a = tmpPath(dir, "exact.sdw.h5"), b = tmpPath(dir, "reforward.sdw.h5");
    (void)runCalibration(arSettings(prompts, "exact", 150), a);
    (void)runCalibration(arSettings(prompts, "reforward", 150), b);
    const auto ga = readGenerations(a), gb = readGenerations(b);
    QCOMPARE(ga.size(), gb.size());
    for (std::size_t i = 0; i < ga.size(); ++i) {
      QCOMPARE(ga[i].tokens, gb[i].tokens);
      QCOMPARE(ga[i].decodeCounted, gb[i].decodeCounted);
    }
    const double rel = maxRelDiff(readStats(a), readStats(b));
    qInfo("exact vs re-forward: max relative Frobenius difference %.3g", rel);
    QVERIFY(rel <= 1e-3);
  }

  void includePrefillAddsPromptPositions_data() {
    QTest::addColumn<QString>("capture");
    QTest::newRow("exact") << "exact";
    QTest::newRow("reforward") << "reforward";
  }
  void includePrefillAddsPromptPositions() {
    QFETCH(QString, capture);
    QTemporaryDir dir;
    const auto prompts = writePrompts(fs::path(dir.path().toStdString()));
    // One batch of all four prompts; its generation lengths fix the budgets.
    auto s = arSettings(prompts, capture.toStdString(), 1);
    s.batch = 4;
    const auto pilot = tmpPath(dir, "pilot.sdw.h5");
    (void)runCalibration(s, pilot);
    const auto gens = readGenerations(pilot);
    QCOMPARE(gens.size(), std::size_t{4});
    std::int64_t decode = 0, prompt = 0;
    for (const auto& g : gens) {
      decode += static_cast<std::int64_t>(g.tokens.size()) - 1;
      prompt += static_cast<std::int64_t>(g.prompt.size());
    }
    const auto a = tmpPath(dir, "decode.sdw.h5"), b = tmpPath(dir, "prefill.sdw.h5");
    s.tokenBudget = decode;
    (void)runCalibration(s, a);
    s.tokenBudget = decode + prompt;
    s.includePrefill = true;
    (void)runCalibration(s, b);
    QCOMPARE(intAttr(a, "/calibration", "prompts_done"), std::int64_t{4});
    QCOMPARE(intAttr(b, "/calibration", "prompts_done"), std::int64_t{4});
    QCOMPARE(intAttr(b, "/calibration", "include_prefill"), std::int64_t{1});
    // b - a = the prompt positions, computed directly.
    std::vector<Generation> promptsOnly;
    for (const auto& g : gens) promptsOnly.push_back({g.prompt, {}, static_cast<std::int64_t>(g.prompt.size()), 0});
    const Direct d = directFromGenerations(promptsOnly);
    const auto sa = readStats(a), sb = readStats(b);
    for (const auto& [name, st] : sb) {
      QCOMPARE(st.tokens - sa.at(name).tokens, prompt);
      const double e = relFro(st.xtx - sa.at(name).xtx, d.xtx.at(name));
      if (e > 1e-4) QFAIL(qPrintable(QString("%1: prefill difference off by %2").arg(name.c_str()).arg(e)));
    }
  }

  void crossModelWithItselfEqualsAr() {
    // Generations of "another" model that is the same checkpoint: the
    // teacher-forced pass must give the AR run's sums.
    QTemporaryDir dir;
    const auto prompts = writePrompts(fs::path(dir.path().toStdString()));
    const auto a = tmpPath(dir, "ar.sdw.h5"), b = tmpPath(dir, "cross.sdw.h5");
    auto s = arSettings(prompts, "reforward", 80);
    (void)runCalibration(s, a);
    s.source = CalibrationSource::CrossModel;
    s.crossModel = kModel;
    (void)runCalibration(s, b);
    QCOMPARE(rs::RunReader::open(b).readStringAttribute("/calibration", "source"), std::string("cross-model"));
    const auto ga = readGenerations(a), gb = readGenerations(b);
    QCOMPARE(ga.size(), gb.size());
    for (std::size_t i = 0; i < ga.size(); ++i) QCOMPARE(gb[i].tokens, ga[i].tokens);
    QVERIFY(maxRelDiff(readStats(b), readStats(a)) <= 1e-6);
    s.capture = CaptureMode::Exact;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, runCalibration(s, tmpPath(dir, "bad.sdw.h5")));
  }

  // The noise floor's half statistics: fixed text splits by window parity,
  // AR by the parity of the prompt's line (so each prompt stays in one half);
  // each half equals a direct computation over its own sequences, and the
  // two add up to the total.
  void halvesSplitBySequence_data() {
    QTest::addColumn<QString>("capture");
    QTest::newRow("exact") << "exact";
    QTest::newRow("reforward") << "reforward";
  }
  void halvesSplitBySequence() {
    QFETCH(QString, capture);
    QTemporaryDir dir;
    const auto prompts = writePrompts(fs::path(dir.path().toStdString()));  // 4 prompts: a, one, b, c
    const auto out = tmpPath(dir, "ar.sdw.h5");
    const std::int64_t budget = 100;
    (void)runCalibration(arSettings(prompts, capture.toStdString(), budget), out);
    const auto r = rs::RunReader::open(out);
    QCOMPARE(r.readIntAttribute("/calibration", "halves"), std::int64_t{1});
    QCOMPARE(r.readStringAttribute("/calibration", "half_split"), std::string("prompt"));
    const auto gens = readGenerations(out);
    const auto seq = r.readInt64("/calibration/generations/sequence").data;
    QCOMPARE(seq.size(), gens.size());
    std::vector<Generation> even, odd;
    for (std::size_t i = 0; i < gens.size(); ++i) ((seq[i] % 4) % 2 == 0 ? even : odd).push_back(gens[i]);
    QVERIFY(gens.size() > 4);  // more than one pass: each prompt's generations stay in its half
    const Direct da = directFromGenerations(even), db = directFromGenerations(odd);
    const auto a = readHalf(out, "a"), b = readHalf(out, "b");
    const auto total = readStats(out);
    for (const auto& [name, st] : total) {
      QCOMPARE(a.at(name).second, da.rows.at(name));
      QCOMPARE(b.at(name).second, db.rows.at(name));
      QCOMPARE(a.at(name).second + b.at(name).second, budget);
      const double ea = relFro(a.at(name).first, da.xtx.at(name)), eb = relFro(b.at(name).first, db.xtx.at(name));
      if (ea > 1e-5 || eb > 1e-5) QFAIL(qPrintable(QString("%1: half a rel %2, half b rel %3").arg(name.c_str()).arg(ea).arg(eb)));
      QVERIFY(relFro(a.at(name).first + b.at(name).first, st.xtx) <= 1e-6);
      QVERIFY(relFro(a.at(name).first / a.at(name).second, b.at(name).first / b.at(name).second) > 1e-3);  // two samples
    }

    // Fixed text: windows 0, 2 in half a; 1, 3 in b (32, 32 | 32, 4 positions).
    const auto fixed = tmpPath(dir, "fixed.sdw.h5");
    (void)runCalibration(fixedSettings(100), fixed);
    QCOMPARE(rs::RunReader::open(fixed).readStringAttribute("/calibration", "half_split"), std::string("window"));
    const auto fa = readHalf(fixed, "a"), fb = readHalf(fixed, "b");
    for (const auto& [name, st] : readStats(fixed)) {
      QCOMPARE(fa.at(name).second, std::int64_t{64});
      QCOMPARE(fb.at(name).second, std::int64_t{36});
      QVERIFY(relFro(fa.at(name).first + fb.at(name).first, st.xtx) <= 1e-6);
    }

    // Without halves: none stored, and the run says so.
    auto s = fixedSettings(100);
    s.halves = false;
    const auto plain = tmpPath(dir, "plain.sdw.h5");
    (void)runCalibration(s, plain);
    const auto rp = rs::RunReader::open(plain);
    QCOMPARE(rp.readIntAttribute("/calibration", "halves"), std::int64_t{0});
    QVERIFY(!rp.exists("/calibration/inputs/model.layers.0.self_attn.q_proj/xtx_a"));
  }

  void cancelKeepsIncompleteAndResumeCompletes_data() {
    QTest::addColumn<QString>("source");
    QTest::newRow("fixed") << "fixed";
    QTest::newRow("ar") << "ar";
  }
  void cancelKeepsIncompleteAndResumeCompletes() {
    QFETCH(QString, source);
    QTemporaryDir dir;
    const auto prompts = writePrompts(fs::path(dir.path().toStdString()));
    auto s = source == "fixed" ? fixedSettings(400) : arSettings(prompts, "reforward", 120);
    s.checkpointSeconds = 0;  // statistics written after every batch
    const auto whole = tmpPath(dir, "whole.sdw.h5"), cut = tmpPath(dir, "cut.sdw.h5");
    (void)runCalibration(s, whole);

    int batches = 0;
    const ProgressFn stopAfterTwo = [&](const Progress& p) {
      // one report per finished batch; per-layer reports (parts > 0) repeat the stage
      if (p.parts == 0 && (p.stage.rfind("windows ", 0) == 0 || p.stage.rfind("generations ", 0) == 0)) ++batches;
      return batches < 2;
    };
    QVERIFY_THROWS_EXCEPTION(Cancelled, runCalibration(s, cut, stopAfterTwo));
    QVERIFY(fs::exists(cut));
    QVERIFY(!fs::exists(rs::partialPathFor(cut)));
    const auto summary = rs::inspectRun(cut);
    QCOMPARE(summary.status, std::string("incomplete"));
    QCOMPARE(summary.kind, std::string("calibration"));
    const auto collected = intAttr(cut, "/calibration", "tokens_collected");
    QVERIFY(collected > 0 && collected < s.tokenBudget);
    for (const auto& [name, st] : readStats(cut)) QCOMPARE(st.tokens, collected);
    if (source == "fixed") {
      QCOMPARE(intAttr(cut, "/calibration", "windows_done"), std::int64_t{6});
      QCOMPARE(collected, std::int64_t{6 * 32});
    } else {
      QCOMPARE(intAttr(cut, "/calibration", "prompts_done"), std::int64_t{6});
      std::int64_t sum = 0;
      for (const auto& g : readGenerations(cut)) sum += g.decodeCounted;
      QCOMPARE(sum, collected);
    }

    const auto r = resumeCalibration(cut);
    QVERIFY(r.complete);
    QCOMPARE(rs::inspectRun(cut).status, std::string("complete"));
    QCOMPARE(intAttr(cut, "/calibration", "tokens_collected"), s.tokenBudget);
    QCOMPARE(intAttr(cut, "/calibration", "prompts_done"), intAttr(whole, "/calibration", "prompts_done"));
    QCOMPARE(intAttr(cut, "/calibration", "windows_done"), intAttr(whole, "/calibration", "windows_done"));
    if (source == "ar") {
      const auto gw = readGenerations(whole), gc = readGenerations(cut);
      QCOMPARE(gc.size(), gw.size());
      for (std::size_t i = 0; i < gw.size(); ++i) QCOMPARE(gc[i].tokens, gw[i].tokens);
    } else {
      const auto rw = rs::RunReader::open(whole), rc = rs::RunReader::open(cut);
      QCOMPARE(rc.readInt64("/calibration/windows/start").data, rw.readInt64("/calibration/windows/start").data);
    }
    const double rel = maxRelDiff(readStats(cut), readStats(whole));
    qInfo("resumed vs uninterrupted: max relative Frobenius difference %.3g", rel);
    QVERIFY(rel <= 1e-5);
    // The halves carry on across the resume too.
    const auto ha = readHalf(cut, "a"), wa = readHalf(whole, "a");
    for (const auto& [name, h] : wa) {
      QCOMPARE(ha.at(name).second, h.second);
      QVERIFY(relFro(ha.at(name).first, h.first) <= 1e-5);
    }
  }

  // Every choice goes to its name and back; the names are the ones run files,
  // the settings JSON and the CLI carry; anything else is refused, naming the choices.
  void settingNamesRoundTrip() {
    for (const auto& e : kCalibrationSourceNames) QCOMPARE(parseCalibrationSource(calibrationSourceName(e.value)), e.value);
    for (const auto& e : kCaptureModeNames) QCOMPARE(parseCaptureMode(captureModeName(e.value)), e.value);
    for (const auto& e : kStatsStorageNames) QCOMPARE(parseStatsStorage(statsStorageName(e.value)), e.value);
    for (const auto& e : kChatModeNames) QCOMPARE(parseChatMode(chatModeName(e.value)), e.value);
    QCOMPARE(calibrationSourceName(CalibrationSource::Fixed), std::string("fixed"));
    QCOMPARE(calibrationSourceName(CalibrationSource::Ar), std::string("ar"));
    QCOMPARE(calibrationSourceName(CalibrationSource::CrossModel), std::string("cross-model"));
    QCOMPARE(captureModeName(CaptureMode::Exact), std::string("exact"));
    QCOMPARE(captureModeName(CaptureMode::Reforward), std::string("reforward"));
    QCOMPARE(statsStorageName(StatsStorage::Full), std::string("full"));
    QCOMPARE(statsStorageName(StatsStorage::Topk), std::string("topk"));
    QCOMPARE(chatModeName(ChatMode::Auto), std::string("auto"));
    QCOMPARE(chatModeName(ChatMode::Plain), std::string("plain"));
    const auto message = [](auto parse, const char* text) {
      try {
        (void)parse(text);
      } catch (const std::invalid_argument& e) {
        return std::string(e.what());
      }
      return std::string("accepted");
    };
    QCOMPARE(message(parseCalibrationSource, "AR"), std::string("source must be fixed, ar or cross-model, got 'AR'"));
    QCOMPARE(message(parseCaptureMode, "both"), std::string("capture must be exact or reforward, got 'both'"));
    QCOMPARE(message(parseStatsStorage, ""), std::string("storage must be full or topk, got ''"));
    QCOMPARE(message(parseChatMode, "chat"), std::string("chat must be auto or plain, got 'chat'"));
    // The settings JSON carries the names, and reads them back.
    auto s = fixedSettings(10);
    s.source = CalibrationSource::CrossModel;
    s.capture = CaptureMode::Exact;
    s.storage = StatsStorage::Topk;
    s.chat = ChatMode::Plain;
    const auto j = nlohmann::json::parse(calibrationSettingsToJson(s));
    QCOMPARE(j.at("source").get<std::string>(), std::string("cross-model"));
    QCOMPARE(j.at("capture").get<std::string>(), std::string("exact"));
    QCOMPARE(j.at("storage").get<std::string>(), std::string("topk"));
    QCOMPARE(j.at("chat").get<std::string>(), std::string("plain"));
    const auto back = calibrationSettingsFromJson(j.dump());
    QCOMPARE(back.source, s.source);
    QCOMPARE(back.capture, s.capture);
    QCOMPARE(back.storage, s.storage);
    QCOMPARE(back.chat, s.chat);
  }

  void badSettingsAreRefused() {
    QTemporaryDir dir;
    auto s = fixedSettings(10);
    s.corpus = "/nonexistent/corpus.txt";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, runCalibration(s, tmpPath(dir, "x.sdw.h5")));
    s = fixedSettings(0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, runCalibration(s, tmpPath(dir, "x.sdw.h5")));
    s = fixedSettings(10);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, runCalibration(s, tmpPath(dir, "x.h5")));
    QVERIFY(!fs::exists(tmpPath(dir, "x.sdw.h5.partial")));
  }

  void estimateOf8B() {
    CalibrationSettings s;
    s.source = CalibrationSource::Ar;
    s.tokenBudget = 1'000'000;
    const auto e = estimateCalibration(llama31_8bConfig(), s);
    QCOMPARE(e.inputs, 128);
    // 32 x (3 x 4096^2 + 14336^2) fp32 values: about 32.7 GB, twice that with
    // the sums of half a kept apart (the default).
    QVERIFY(e.accumulatorBytes > std::uint64_t{65'000'000'000} && e.accumulatorBytes < std::uint64_t{66'000'000'000});
    QVERIFY(e.fileBytesFull > std::uint64_t{98'000'000'000} && e.fileBytesFull < std::uint64_t{99'000'000'000});
    QVERIFY(e.fileBytesTopk < e.fileBytesFull / 50);
    s.halves = false;
    const auto plain = estimateCalibration(llama31_8bConfig(), s);
    QVERIFY(plain.accumulatorBytes > std::uint64_t{32'000'000'000} && plain.accumulatorBytes < std::uint64_t{33'000'000'000});
    QVERIFY(plain.fileBytesFull < e.fileBytesFull / 2);
  }

  // ---------------------------------------------------------------- CLI
  void cliEndToEnd_data() {
    QTest::addColumn<QString>("source");
    QTest::newRow("fixed") << "fixed";
    QTest::newRow("ar") << "ar";
  }
  void cliEndToEnd() {
    QFETCH(QString, source);
    QTemporaryDir dir;
    const QString out = dir.filePath("run.sdw.h5");
    QStringList args{"calibrate", "--model", QString::fromStdString(kModel.string()), "--source", source,
                     "--tokens", "2000", "--out", out, "--json"};
    if (source == "fixed")
      args << "--corpus" << QString::fromStdString(kCorpus.string()) << "--window" << "128";
    else
      args << "--prompts" << QString(SDW_SOURCE_DIR) + "/samples/prompts/brown-heldout.jsonl" << "--max-new-tokens"
           << "64" << "--batch" << "8";
    QProcess p;
    p.start(QString::fromStdString(kCli.string()), args);
    QVERIFY(p.waitForFinished(300000));
    QCOMPARE(p.exitCode(), 0);
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(j.at("tokens_collected").get<std::int64_t>(), std::int64_t{2000});
    const auto r = rs::RunReader::open(out.toStdString());
    QCOMPARE(r.status(), std::string("complete"));
    QCOMPARE(r.readStringAttribute("/calibration", "source"), source.toStdString());
    QCOMPARE(r.readIntAttribute("/calibration", "tokens_collected"), std::int64_t{2000});
    QCOMPARE(r.readIntAttribute("/calibration", "token_budget"), std::int64_t{2000});
    QCOMPARE(r.readStringAttribute("/calibration", "storage"), std::string("full"));
    QCOMPARE(r.listGroup("/calibration/inputs").size(), std::size_t{24});
    if (source == "ar") {
      QCOMPARE(r.readStringAttribute("/calibration", "capture"), std::string("reforward"));
      const auto n = r.readIntAttribute("/calibration", "prompts_done");
      QCOMPARE(static_cast<std::int64_t>(r.readStrings("/calibration/generations/text").size()), n);
      QCOMPARE(static_cast<std::int64_t>(r.shape("/calibration/generations/offsets").at(0)), n + 1);
    }
  }

  void cliDryRunAndErrors() {
    QTemporaryDir dir;
    QProcess p;
    p.start(QString::fromStdString(kCli.string()),
            {"calibrate", "--model", QString::fromStdString(kModel.string()), "--source", "fixed", "--corpus",
             QString::fromStdString(kCorpus.string()), "--tokens", "1000", "--out", dir.filePath("d.sdw.h5"),
             "--dry-run", "--json"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    // 6 x (3 x 256^2 + 768^2) + sums: 4.7 M floats of xtx.
    QCOMPARE(j.at("estimate").at("inputs").get<int>(), 24);
    QVERIFY(j.at("estimate").at("file_bytes_full").get<std::uint64_t>() > 18'000'000);
    QVERIFY(!QFile::exists(dir.filePath("d.sdw.h5.partial")));

    p.start(QString::fromStdString(kCli.string()),
            {"calibrate", "--model", QString::fromStdString(kModel.string()), "--source", "ar", "--prompts",
             dir.filePath("missing.jsonl"), "--tokens", "100", "--out", dir.filePath("e.sdw.h5")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 1);
    const QString err = QString::fromUtf8(p.readAllStandardError()).trimmed();
    QVERIFY2(err.contains("prompts file not found") && !err.contains('\n'), qPrintable(err));
  }

  void cliKilledLeavesValidIncompleteFile() {
    QTemporaryDir dir;
    const QString out = dir.filePath("killed.sdw.h5");
    QProcess p;
    p.setProcessChannelMode(QProcess::SeparateChannels);
    p.start(QString::fromStdString(kCli.string()),
            {"calibrate", "--model", QString::fromStdString(kModel.string()), "--source", "fixed", "--corpus",
             QString::fromStdString(kCorpus.string()), "--tokens", "10000000", "--window", "64", "--batch", "4",
             "--checkpoint-seconds", "2", "--out", out});
    QVERIFY(p.waitForStarted());
    // Kill just after the second checkpoint, well before the next one.
    QString err;
    QElapsedTimer t;
    t.start();
    while (!err.contains("[checkpoint 3]") && t.elapsed() < 120000) {
      p.waitForReadyRead(1000);
      err += QString::fromUtf8(p.readAllStandardError());
      QVERIFY2(p.state() == QProcess::Running, qPrintable(err));
    }
    QVERIFY2(err.contains("[checkpoint 3]"), qPrintable(err));
    p.kill();
    QVERIFY(p.waitForFinished(30000));
    const fs::path partial = rs::partialPathFor(out.toStdString());
    QVERIFY(fs::exists(partial));
    const auto summary = rs::inspectRun(partial);
    QCOMPARE(summary.status, std::string("incomplete"));
    QVERIFY(summary.checkpoint >= 3);
    const auto r = rs::RunReader::open(partial);
    const auto collected = r.readIntAttribute("/calibration", "tokens_collected");
    const auto windows = r.readIntAttribute("/calibration", "windows_done");
    QVERIFY(collected > 0);
    QCOMPARE(collected, windows * 64);
    QCOMPARE(static_cast<std::int64_t>(r.shape("/calibration/windows/counted").at(0)), windows);
    for (const auto& name : r.listGroup("/calibration/inputs"))
      QCOMPARE(r.readIntAttribute("/calibration/inputs/" + name, "tokens"), collected);
    const auto x = r.readFloat32("/calibration/inputs/model.layers.0.self_attn.q_proj/xtx");
    QCOMPARE(x.shape, (std::vector<hsize_t>{256, 256}));
    QVERIFY(std::isfinite(x.data[0]) && x.data[0] > 0);
  }
};

QTEST_GUILESS_MAIN(TestCalibration)
#include "test_calibration.moc"
