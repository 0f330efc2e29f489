// DuoGPT and run-time activation sparsity, on the CPU:
// - the sparsifier keeps each row's largest-magnitude share;
// - a model with activation sparsity computes what a hand-written one-token
//   forward with sparsified projection inputs computes;
// - the solver against brute force in double (Eigen) on small problems: with
//   no residual (or its scale 0) it is SparseGPT bit for bit; its loss is the damped
//   asymmetric objective's increase over the objective's minimiser (computed
//   from the raw inputs by the normal equations); the saliency it picks masks
//   by is, weight by weight, twice the objective's increase when that weight
//   alone is zeroed and the later columns move optimally; on its own mask it
//   comes close to the exact constrained minimiser; it beats SparseGPT on the
//   asymmetric objective.

#include "gpu/drift.h"
#include "gpu/model.h"
#include "gpu/model_config.h"
#include "gpu/model_internal.h"
#include "gpu/prune_ops.h"
#include "gpu/pruning.h"
#include "tests/gpu/one_token_forward.h"

#include <ATen/ATen.h>
#include <Eigen/Dense>
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

using namespace sdw::gpu;
namespace fs = std::filesystem;

namespace {

const fs::path kModel = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";

using Mat = Eigen::MatrixXd;

// W [rows, cols]; Xd (dense inputs) and Xh (sparsified inputs of a perturbed
// upstream) as [cols, tokens], one column per token; their sums as the
// solver takes them (fp32, summed in double).
struct DuoProblem {
  std::int64_t rows = 0, cols = 0, tokens = 0;
  Mat W, Xd, Xh;
  std::vector<float> w, shh, cross, sdd;
};

// Keeps the round((1 - p) * n) largest |v| of each column.
Mat sparsifyColumns(const Mat& x, double p) {
  Mat out = Mat::Zero(x.rows(), x.cols());
  const auto keep = std::max<Eigen::Index>(1, static_cast<Eigen::Index>(std::llround((1 - p) * static_cast<double>(x.rows()))));
  for (Eigen::Index t = 0; t < x.cols(); ++t) {
    std::vector<Eigen::Index> idx(static_cast<std::size_t>(x.rows()));
    for (Eigen::Index i = 0; i < x.rows(); ++i) idx[static_cast<std::size_t>(i)] = i;
    std::sort(idx.begin(), idx.end(), [&](Eigen::Index a, Eigen::Index b) { return std::abs(x(a, t)) > std::abs(x(b, t)); });
    for (Eigen::Index k = 0; k < keep; ++k) out(idx[static_cast<std::size_t>(k)], t) = x(idx[static_cast<std::size_t>(k)], t);
  }
  return out;
}

std::vector<float> toFloats(const Mat& m) {  // row-major
  std::vector<float> v(static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) v[static_cast<std::size_t>(i * m.cols() + j)] = static_cast<float>(m(i, j));
  return v;
}

Mat fromFloats(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  Mat m(rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) m(i, j) = v[static_cast<std::size_t>(i * cols + j)];
  return m;
}

DuoProblem makeDuo(std::int64_t rows, std::int64_t cols, std::int64_t tokens, double px, unsigned seed) {
  DuoProblem p;
  p.rows = rows;
  p.cols = cols;
  p.tokens = tokens;
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0, 1);
  p.W = Mat(rows, cols);
  for (Eigen::Index i = 0; i < p.W.size(); ++i) p.W.data()[i] = static_cast<double>(static_cast<float>(nd(rng)));
  std::vector<double> scale(static_cast<std::size_t>(cols));
  for (auto& s : scale) s = std::exp(0.5 * nd(rng));
  p.Xd = Mat(cols, tokens);
  Mat noisy(cols, tokens);
  for (std::int64_t t = 0; t < tokens; ++t) {
    const double common = nd(rng);
    for (std::int64_t j = 0; j < cols; ++j) {
      p.Xd(j, t) = static_cast<float>(scale[static_cast<std::size_t>(j)] * (nd(rng) + 0.5 * common));
      noisy(j, t) = p.Xd(j, t) + 0.2 * scale[static_cast<std::size_t>(j)] * nd(rng);  // upstream pruning error
    }
  }
  p.Xh = sparsifyColumns(noisy, px);
  for (Eigen::Index i = 0; i < p.Xh.size(); ++i) p.Xh.data()[i] = static_cast<double>(static_cast<float>(p.Xh.data()[i]));
  p.w = toFloats(p.W);
  p.shh = toFloats(p.Xh * p.Xh.transpose());
  p.cross = toFloats((p.Xd - p.Xh) * p.Xh.transpose());
  p.sdd = toFloats(p.Xd * p.Xd.transpose());
  return p;
}

// The damped objective from the raw inputs: ||W Xd - W' Xh||^2 / N + damp/2 ||W' - W||^2.
double objective(const DuoProblem& p, const Mat& wq, double damp) {
  const double n = static_cast<double>(p.tokens);
  return (p.W * p.Xd - wq * p.Xh).squaredNorm() / n + 0.5 * damp * (wq - p.W).squaredNorm();
}

// The solver's damping: percdamp * mean(diag H), H = 2 shh / N (fp32 sums, as it reads them).
double dampOf(const DuoProblem& p, double percdamp) {
  const Mat s = fromFloats(p.shh, p.cols, p.cols);
  return percdamp * (2.0 * s.diagonal().mean() / static_cast<double>(p.tokens));
}

// Row i's minimiser of the damped objective with the weights in `fixed`
// (column -> value) held, from the normal equations of the raw objective.
Eigen::RowVectorXd rowMinimiser(const DuoProblem& p, Eigen::Index i, double damp,
                                const std::vector<std::pair<Eigen::Index, double>>& fixed) {
  const double n = static_cast<double>(p.tokens);
  const Mat A = 2.0 / n * p.Xh * p.Xh.transpose() + damp * Mat::Identity(p.cols, p.cols);
  const Eigen::RowVectorXd b = 2.0 / n * (p.W.row(i) * p.Xd) * p.Xh.transpose() + damp * p.W.row(i);
  std::vector<bool> isFixed(static_cast<std::size_t>(p.cols), false);
  Eigen::RowVectorXd w = Eigen::RowVectorXd::Zero(p.cols);
  for (const auto& [j, v] : fixed) {
    isFixed[static_cast<std::size_t>(j)] = true;
    w(j) = v;
  }
  std::vector<Eigen::Index> freeIdx;
  for (Eigen::Index j = 0; j < p.cols; ++j)
    if (!isFixed[static_cast<std::size_t>(j)]) freeIdx.push_back(j);
  const auto nf = static_cast<Eigen::Index>(freeIdx.size());
  if (nf == 0) return w;
  Mat Aff(nf, nf);
  Eigen::VectorXd rhs(nf);
  for (Eigen::Index a = 0; a < nf; ++a) {
    double r = b(freeIdx[static_cast<std::size_t>(a)]);
    for (const auto& [j, v] : fixed) r -= A(freeIdx[static_cast<std::size_t>(a)], j) * v;
    rhs(a) = r;
    for (Eigen::Index c = 0; c < nf; ++c) Aff(a, c) = A(freeIdx[static_cast<std::size_t>(a)], freeIdx[static_cast<std::size_t>(c)]);
  }
  const Eigen::VectorXd sol = Aff.ldlt().solve(rhs);
  for (Eigen::Index a = 0; a < nf; ++a) w(freeIdx[static_cast<std::size_t>(a)]) = sol(a);
  return w;
}

Mat unconstrainedMinimiser(const DuoProblem& p, double damp) {
  Mat t(p.rows, p.cols);
  for (Eigen::Index i = 0; i < p.rows; ++i) t.row(i) = rowMinimiser(p, i, damp, {});
  return t;
}

at::Tensor tensorOf(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  return at::from_blob(const_cast<float*>(v.data()), {rows, cols}, at::kFloat).clone();
}

}  // namespace

class TestDuoGpt : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void sparsifierKeepsTheLargest() {
    at::manual_seed(7);
    const at::Tensor x = at::randn({5, 40});
    const at::Tensor y = sparsifyActivations(x, 0.5);
    for (std::int64_t r = 0; r < 5; ++r) {
      const at::Tensor row = y[r], orig = x[r];
      QCOMPARE(row.ne(0).sum().item<std::int64_t>(), std::int64_t(20));
      const at::Tensor kept = orig.abs().masked_select(row.ne(0));
      const at::Tensor dropped = orig.abs().masked_select(row.eq(0));
      QVERIFY(kept.min().item<float>() >= dropped.max().item<float>());
      QVERIFY(at::equal(row.masked_select(row.ne(0)), orig.masked_select(row.ne(0))));  // values untouched
    }
    QVERIFY(sparsifyActivations(x, 0.0).is_same(x));
    // 0.3 of 40: 28 kept; 0.99: one (the largest) kept.
    QCOMPARE(sparsifyActivations(x, 0.3).ne(0).sum(1).min().item<std::int64_t>(), std::int64_t(28));
    const at::Tensor one = sparsifyActivations(x, 0.99);
    QCOMPARE(one.ne(0).sum(1).max().item<std::int64_t>(), std::int64_t(1));
    QVERIFY(at::equal(one.abs().argmax(1), x.abs().argmax(1)));
    // Ties at the threshold are kept.
    const at::Tensor flat = at::ones({1, 8});
    QCOMPARE(sparsifyActivations(flat, 0.5).ne(0).sum().item<std::int64_t>(), std::int64_t(8));
    // Out of range is refused where options enter.
    LoadOptions o;
    o.activationSparsity = 1.0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validateActivationSparsity(o, 2));
    o.activationSparsity = 0.5;
    o.activationSparsityPerLayer = {0.5};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validateActivationSparsity(o, 2));
  }

  // One token through a one-layer model (attention over one key is its value;
  // RoPE at position 0 is the identity), written out by hand.
  void modelSparsifiesEveryProjectionInput() {
    ModelConfig c = loadModelConfig(kModel);
    c.numLayers = 1;
    const std::int32_t token = 123;
    for (const double px : {0.0, 0.5, 0.8}) {
      LoadOptions o;
      o.activationSparsity = px;
      const auto m = Model::randomInit(c, o, 11, 0.05);
      const auto logits = m->logits(std::vector<std::int32_t>{token});
      const at::Tensor ref = testing::oneTokenLogits(
          *m, token, [px](const at::Tensor& x, ProjectionInput) { return sparsifyActivations(x, px); });
      QCOMPARE(static_cast<std::int64_t>(logits.size()), ref.numel());
      const testing::LogitDiff diff = testing::compareLogits(logits, ref);
      QVERIFY2(diff.within(1e-5), qPrintable(QStringLiteral("p %1: max diff %2").arg(px).arg(diff.maxDiff)));
      if (px > 0) QVERIFY(QString::fromStdString(m->engineDescription()).contains(QStringLiteral("activation sparsity")));
    }
    // Per layer: only the listed layers' inputs are sparsified.
    ModelConfig c2 = loadModelConfig(kModel);
    LoadOptions dense, perLayer, all;
    perLayer.activationSparsityPerLayer.assign(static_cast<std::size_t>(c2.numLayers), 0.0);
    perLayer.activationSparsityPerLayer.back() = 0.5;
    all.activationSparsity = 0.5;
    const std::vector<std::int32_t> ids{5, 17, 200, 9};
    const auto a = Model::randomInit(c2, dense, 3, 0.05)->logits(ids);
    const auto b = Model::randomInit(c2, perLayer, 3, 0.05)->logits(ids);
    const auto d = Model::randomInit(c2, all, 3, 0.05)->logits(ids);
    QVERIFY(a != b);
    QVERIFY(b != d);
  }

  // Activation drift with the "pruned" model being the dense one itself: none
  // without activation sparsity, some with it (on the shared trajectory, from
  // layer 1 on: layer 0's input is the embedding, read before sparsification).
  void driftUnderActivationSparsity() {
    DriftSettings s;
    s.dense = kModel;
    s.pruned = {kModel};
    s.prompts = fs::path(SDW_SOURCE_DIR) / "samples/prompts/brown-heldout.jsonl";
    s.steps = 6;
    s.maxPrompts = 2;
    s.modes = {DriftMode::Shared};
    s.decoding = sdw::Decoding{0.0, 0, 1.0};
    for (const double px : {0.0, 0.5}) {
      s.activationSparsity = px;
      const DriftResult r = analyzeDrift(s);
      const DriftCurves& c = r.models.at(0).curves.at(0);
      double layer0 = 0, later = 0;
      for (int t = 0; t < c.steps; ++t) {
        layer0 = std::max(layer0, c.ratio[static_cast<std::size_t>(t * c.layers)]);
        for (int l = 1; l < c.layers; ++l) later = std::max(later, c.ratio[static_cast<std::size_t>(t * c.layers + l)]);
      }
      QCOMPARE(layer0, 0.0);
      if (px == 0.0) QCOMPARE(later, 0.0);
      else QVERIFY2(later > 0.05, qPrintable(QString::number(later)));
    }
  }

  // With no residual (x~ = x^) DuoGPT is SparseGPT, bit for bit.
  void reducesToSparseGpt() {
    const DuoProblem p = makeDuo(12, 64, 300, 0.0, 1);
    const std::vector<float> zero(p.shh.size(), 0.f);
    for (const char* pat : {"unstructured50", "2:4"}) {
      SparseGptOptions o;
      o.blocksize = 32;
      const auto pattern = parsePruningPattern(pat);
      const SolveResult s = solveSparseGpt(p.w, p.rows, p.cols, p.shh, p.tokens, pattern, o);
      const SolveResult d = solveDuoGpt(p.w, p.rows, p.cols, p.shh, zero, p.shh, p.tokens, pattern, o);
      QVERIFY2(s.weight == d.weight, pat);
      QCOMPARE(d.loss, s.loss);
      QVERIFY(std::abs(d.outputLoss - s.outputLoss) <= 1e-4 * s.outputLoss);
    }
    // A residual scaled by 0 is none either.
    const DuoProblem q = makeDuo(12, 64, 300, 0.5, 5);
    SparseGptOptions o;
    o.blocksize = 32;
    const auto pattern = parsePruningPattern("2:4");
    const SolveResult s = solveSparseGpt(q.w, q.rows, q.cols, q.shh, q.tokens, pattern, o);
    const SolveResult d0 = solveDuoGpt(q.w, q.rows, q.cols, q.shh, q.cross, q.sdd, q.tokens, pattern, o, 0.0);
    const SolveResult d1 = solveDuoGpt(q.w, q.rows, q.cols, q.shh, q.cross, q.sdd, q.tokens, pattern, o, 1.0);
    QVERIFY(s.weight == d0.weight);
    QVERIFY(s.weight != d1.weight);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             solveDuoGpt(q.w, q.rows, q.cols, q.shh, q.cross, q.sdd, q.tokens, pattern, o, 1.5));
  }

  // Loss, output loss and saliency against their definitions, from the raw inputs.
  void againstBruteForce() {
    for (const char* pat : {"unstructured50", "2:4"}) {
      const DuoProblem p = makeDuo(6, 32, 400, 0.5, 2);
      SparseGptOptions o;
      o.blocksize = 16;
      const auto pattern = parsePruningPattern(pat);
      const SolveResult r = solveDuoGpt(p.w, p.rows, p.cols, p.shh, p.cross, p.sdd, p.tokens, pattern, o);
      QCOMPARE(r.dampingSteps, 0);
      const double damp = dampOf(p, r.percdampUsed);
      const Mat wq = fromFloats(r.weight, p.rows, p.cols);
      const Mat t = unconstrainedMinimiser(p, damp);
      const double increase = objective(p, wq, damp) - objective(p, t, damp);
      QVERIFY2(std::abs(r.loss - increase) <= 2e-3 * increase,
               qPrintable(QStringLiteral("%1: loss %2, objective increase %3").arg(pat).arg(r.loss).arg(increase)));
      const double out = (p.W * p.Xd - wq * p.Xh).squaredNorm() / static_cast<double>(p.tokens);
      QVERIFY2(std::abs(r.outputLoss - out) <= 1e-4 * out, qPrintable(QStringLiteral("%1 vs %2").arg(r.outputLoss).arg(out)));
      QVERIFY(std::abs(r.relOutputError - out * p.tokens / (p.W * p.Xd).squaredNorm()) <= 1e-4 * r.relOutputError);
      QCOMPARE(r.sparsity, 0.5);

      // On its own mask, the exact constrained minimiser is only a little better.
      Mat best(p.rows, p.cols);
      for (Eigen::Index i = 0; i < p.rows; ++i) {
        std::vector<std::pair<Eigen::Index, double>> zeros;
        for (Eigen::Index j = 0; j < p.cols; ++j)
          if (wq(i, j) == 0) zeros.push_back({j, 0.0});
        best.row(i) = rowMinimiser(p, i, damp, zeros);
      }
      const double exactIncrease = objective(p, best, damp) - objective(p, t, damp);
      qInfo("%s: increase over the minimiser %.5g, exact on the same mask %.5g", pat, increase, exactIncrease);
      QVERIFY(exactIncrease <= increase * (1 + 1e-6));
      QVERIFY2(increase <= 1.25 * exactIncrease, qPrintable(QStringLiteral("%1 vs %2").arg(increase).arg(exactIncrease)));
    }

    // The saliency: for weight (i, q), zero it, hold the columns before q at
    // the start point, let the columns after it move optimally.
    const DuoProblem p = makeDuo(4, 12, 200, 0.5, 3);
    SparseGptOptions o;
    const at::Tensor h = tensorOf(p.shh, p.cols, p.cols) * (2.0 / static_cast<double>(p.tokens));
    const at::Tensor c = tensorOf(p.cross, p.cols, p.cols) * (2.0 / static_cast<double>(p.tokens));
    const ObsStart start = obsStart(tensorOf(p.w, p.rows, p.cols), h, o, c);
    const at::Tensor scores = obsScores(start).contiguous();
    const double damp = dampOf(p, start.percdampUsed);
    const Mat t = unconstrainedMinimiser(p, damp);
    QVERIFY((fromFloats(std::vector<float>(start.w.data_ptr<float>(), start.w.data_ptr<float>() + start.w.numel()),
                        p.rows, p.cols) - t).cwiseAbs().maxCoeff() <= 1e-4 * t.cwiseAbs().maxCoeff());
    double worst = 0;
    for (Eigen::Index i = 0; i < p.rows; ++i) {
      const double base = objective(p, t, damp);
      for (Eigen::Index q = 0; q < p.cols; ++q) {
        std::vector<std::pair<Eigen::Index, double>> held;
        for (Eigen::Index j = 0; j < q; ++j) held.push_back({j, t(i, j)});
        held.push_back({q, 0.0});
        Mat moved = t;
        moved.row(i) = rowMinimiser(p, i, damp, held);
        const double def = 2 * (objective(p, moved, damp) - base);
        const double got = scores.data_ptr<float>()[i * p.cols + q];
        worst = std::max(worst, std::abs(got - def) / std::max(def, 1e-3));
      }
    }
    qInfo("saliency vs definition: worst relative difference %.2g", worst);
    QVERIFY2(worst <= 2e-3, qPrintable(QString::number(worst)));
  }

  // DuoGPT minimises the asymmetric objective; SparseGPT, given only x^, does not.
  void beatsSparseGptOnTheAsymmetricObjective() {
    for (const char* pat : {"unstructured50", "2:4"}) {
      const DuoProblem p = makeDuo(16, 64, 500, 0.5, 4);
      const auto pattern = parsePruningPattern(pat);
      SparseGptOptions o;
      o.blocksize = 32;
      const SolveResult duo = solveDuoGpt(p.w, p.rows, p.cols, p.shh, p.cross, p.sdd, p.tokens, pattern, o);
      const SolveResult sg = solveSparseGpt(p.w, p.rows, p.cols, p.shh, p.tokens, pattern, o);
      const Mat ws = fromFloats(sg.weight, p.rows, p.cols);
      const double sgAsym = (p.W * p.Xd - ws * p.Xh).squaredNorm() / static_cast<double>(p.tokens);
      qInfo("%s: ||W X~ - W' X^||^2 / N: DuoGPT %.4f, SparseGPT %.4f", pat, duo.outputLoss, sgAsym);
      QVERIFY(duo.outputLoss < 0.95 * sgAsym);
    }
  }
};

QTEST_GUILESS_MAIN(TestDuoGpt)
#include "test_duogpt.moc"
