// Pruning solvers: SparseGPT against the fp64 reference (core/sparsegpt_ref),
// Wanda and magnitude against brute force, pattern exactness, dead inputs,
// the damping ladder; end to end, `sdw-cli prune` on the sample model.

#include "core/runstore.h"
#include "core/safetensors.h"
#include "core/sparse_file.h"
#include "core/sparse_format.h"
#include "core/sparsegpt_ref.h"
#include "gpu/calibration.h"
#include "gpu/model.h"
#include "gpu/pruning.h"
#include "gpu/spmspv_file.h"
#include "solver_problem.h"

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <map>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

using namespace sdw;
namespace fs = std::filesystem;

using testing::makeProblem;
using testing::Problem;

namespace {

const fs::path kModel = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";
const fs::path kCli = fs::path(SDW_BINARY_DIR) / "bin/sdw-cli";

// A calibration run of the sample model: a shipped one in samples/workspace
// when present (fixed text, full storage), else 4096 fixed-text positions
// collected here with the calibration engine.
fs::path sampleCalibration(const fs::path& scratch) {
  const fs::path ws = fs::path(SDW_SOURCE_DIR) / "samples/workspace";
  for (const auto& e : runstore::listWorkspace(ws)) {
    if (!e.summary || !e.summary->complete() || e.summary->kind != "calibration") continue;
    const auto r = runstore::RunReader::open(e.path);
    if (r.readStringAttribute("/calibration", "storage") == "full" &&
        r.readStringAttribute("/calibration", "source") == "fixed" &&
        fs::path(r.readStringAttribute("/calibration", "model_dir")).filename() == "brown-llama")
      return e.path;
  }
  gpu::CalibrationSettings s;
  s.source = gpu::CalibrationSource::Fixed;
  s.model = kModel;
  s.corpus = fs::path(SDW_SOURCE_DIR) / "samples/corpus/brown-calib.txt";
  s.tokenBudget = 4096;
  s.window = 128;
  s.batch = 8;
  s.seed = 1;
  const fs::path out = scratch / "calibration-fixed.sdw.h5";
  gpu::runCalibration(s, out);
  return out;
}

nlohmann::json runPruneCli(const QStringList& args) {
  QProcess p;
  p.start(QString::fromStdString(kCli.string()), args);
  if (!p.waitForFinished(600000)) return {};
  if (p.exitCode() != 0) {
    qWarning("%s", p.readAllStandardError().constData());
    return {};
  }
  return nlohmann::json::parse(p.readAllStandardOutput().toStdString(), nullptr, false);
}

// Every aligned group of M inputs of every row has at most N (exactly N when
// `exact`) non-zeros. Returns the first offending "row r group g", or "".
QString patternViolation(const std::vector<float>& w, std::int64_t rows, std::int64_t cols, int n, int m, bool exact) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t g = 0; g < cols / m; ++g) {
      int nz = 0;
      for (int b = 0; b < m; ++b) nz += w[static_cast<std::size_t>(r * cols + g * m + b)] != 0.f;
      if (nz > n || (exact && nz != n)) return QStringLiteral("row %1 group %2: %3 non-zeros").arg(r).arg(g).arg(nz);
    }
  return {};
}

// Column N:M: every aligned group of M rows of every column has at most N
// (exactly N when `exact`) non-zeros. Returns the first offending "column c group g", or "".
QString columnPatternViolation(const std::vector<float>& w, std::int64_t rows, std::int64_t cols, int n, int m,
                               bool exact) {
  for (std::int64_t c = 0; c < cols; ++c)
    for (std::int64_t g = 0; g < rows / m; ++g) {
      int nz = 0;
      for (int b = 0; b < m; ++b) nz += w[static_cast<std::size_t>((g * m + b) * cols + c)] != 0.f;
      if (nz > n || (exact && nz != n)) return QStringLiteral("column %1 group %2: %3 non-zeros").arg(c).arg(g).arg(nz);
    }
  return {};
}

// Brute force: per row (per column for column N:M), keep the entries a score ranks highest.
std::vector<float> bruteForce(const Problem& p, const std::vector<double>& score, const gpu::PruningPattern& pat) {
  std::vector<float> out = p.w;
  if (pat.alongColumns) {
    for (std::int64_t c = 0; c < p.cols; ++c)
      for (std::int64_t g = 0; g < p.rows / pat.m; ++g) {
        std::vector<std::int64_t> rowsOf(static_cast<std::size_t>(pat.m));
        std::iota(rowsOf.begin(), rowsOf.end(), g * pat.m);
        std::sort(rowsOf.begin(), rowsOf.end(), [&](auto a, auto b) {
          return score[static_cast<std::size_t>(a * p.cols + c)] > score[static_cast<std::size_t>(b * p.cols + c)];
        });
        for (int k = pat.n; k < pat.m; ++k)
          out[static_cast<std::size_t>(rowsOf[static_cast<std::size_t>(k)] * p.cols + c)] = 0;
      }
    return out;
  }
  for (std::int64_t r = 0; r < p.rows; ++r) {
    if (pat.unstructured) {
      std::vector<std::int64_t> idx(static_cast<std::size_t>(p.cols));
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(), [&](auto a, auto b) {
        return score[static_cast<std::size_t>(r * p.cols + a)] < score[static_cast<std::size_t>(r * p.cols + b)];
      });
      for (std::int64_t k = 0; k < p.cols / 2; ++k) out[static_cast<std::size_t>(r * p.cols + idx[static_cast<std::size_t>(k)])] = 0;
    } else {
      for (std::int64_t g = 0; g < p.cols / pat.m; ++g) {
        // enumerate: drop the M-N lowest = keep the N highest
        std::vector<std::int64_t> idx(static_cast<std::size_t>(pat.m));
        std::iota(idx.begin(), idx.end(), g * pat.m);
        std::sort(idx.begin(), idx.end(), [&](auto a, auto b) {
          return score[static_cast<std::size_t>(r * p.cols + a)] > score[static_cast<std::size_t>(r * p.cols + b)];
        });
        for (int k = pat.n; k < pat.m; ++k) out[static_cast<std::size_t>(r * p.cols + idx[static_cast<std::size_t>(k)])] = 0;
      }
    }
  }
  return out;
}

// Lower Cholesky factor of the symmetric positive definite a [n, n] (row-major), in double.
std::vector<double> choleskyLower(const std::vector<double>& a, std::int64_t n) {
  std::vector<double> l(static_cast<std::size_t>(n * n), 0.0);
  auto A = [&](std::int64_t i, std::int64_t j) { return a[static_cast<std::size_t>(i * n + j)]; };
  auto L = [&](std::int64_t i, std::int64_t j) -> double& { return l[static_cast<std::size_t>(i * n + j)]; };
  for (std::int64_t j = 0; j < n; ++j) {
    double d = A(j, j);
    for (std::int64_t k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
    if (!(d > 0)) throw std::runtime_error("choleskyLower: not positive definite");
    L(j, j) = std::sqrt(d);
    for (std::int64_t i = j + 1; i < n; ++i) {
      double v = A(i, j);
      for (std::int64_t k = 0; k < j; ++k) v -= L(i, k) * L(j, k);
      L(i, j) = v / L(j, j);
    }
  }
  return l;
}

// SparseGPT with column N:M (and DuoGPT's start point), written out plainly in
// double: H = 2 xtx / tokens damped by percdamp * mean(diag H), Hinv = the
// upper Cholesky factor U of (H + damp I)^-1 (U^T U = (H + damp I)^-1), the
// start W + alpha W C (H + damp I)^-1 with C = 2 cross / tokens (no cross: W),
// then one column at a time and no blocks: column j's mask from its current
// values (per group of M rows the M - N lowest w^2 / U_jj^2), e = (w - q) / U_jj,
// every column t >= j of the row moved by -e U_jt. Returns the weights and sum e^2 / 2.
std::pair<std::vector<double>, double> columnNmObs(const Problem& p, const gpu::PruningPattern& pat, double percdamp,
                                                   const std::vector<float>& cross = {}, double alpha = 0) {
  const std::int64_t rows = p.rows, cols = p.cols, n = cols;
  std::vector<double> hd(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < hd.size(); ++i) hd[i] = 2.0 * double(p.xtx[i]) / double(p.tokens);
  double mean = 0;
  for (std::int64_t j = 0; j < n; ++j) mean += hd[static_cast<std::size_t>(j * n + j)];
  mean /= double(n);
  for (std::int64_t j = 0; j < n; ++j) hd[static_cast<std::size_t>(j * n + j)] += percdamp * mean;
  // (H + damp I)^-1 = L^-T L^-1
  const std::vector<double> l = choleskyLower(hd, n);
  std::vector<double> li(static_cast<std::size_t>(n * n), 0.0);  // L^-1, lower
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t i = c; i < n; ++i) {
      double v = i == c ? 1.0 : 0.0;
      for (std::int64_t k = c; k < i; ++k)
        v -= l[static_cast<std::size_t>(i * n + k)] * li[static_cast<std::size_t>(k * n + c)];
      li[static_cast<std::size_t>(i * n + c)] = v / l[static_cast<std::size_t>(i * n + i)];
    }
  std::vector<double> inv(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double v = 0;
      for (std::int64_t k = std::max(i, j); k < n; ++k)
        v += li[static_cast<std::size_t>(k * n + i)] * li[static_cast<std::size_t>(k * n + j)];
      inv[static_cast<std::size_t>(i * n + j)] = v;
    }
  const std::vector<double> lu = choleskyLower(inv, n);  // inv = lu lu^T, U = lu^T
  auto U = [&](std::int64_t i, std::int64_t j) { return lu[static_cast<std::size_t>(j * n + i)]; };

  std::vector<double> w(p.w.begin(), p.w.end());
  auto W = [&](std::int64_t r, std::int64_t c) -> double& { return w[static_cast<std::size_t>(r * cols + c)]; };
  if (!cross.empty()) {  // W + alpha W C inv
    std::vector<double> wc(static_cast<std::size_t>(rows * n), 0.0), shift(static_cast<std::size_t>(rows * n), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < n; ++j) {
        double v = 0;
        for (std::int64_t k = 0; k < n; ++k)
          v += W(r, k) * alpha * 2.0 * double(cross[static_cast<std::size_t>(k * n + j)]) / double(p.tokens);
        wc[static_cast<std::size_t>(r * n + j)] = v;
      }
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < n; ++j) {
        double v = 0;
        for (std::int64_t k = 0; k < n; ++k)
          v += wc[static_cast<std::size_t>(r * n + k)] * inv[static_cast<std::size_t>(k * n + j)];
        shift[static_cast<std::size_t>(r * n + j)] = v;
      }
    for (std::size_t i = 0; i < w.size(); ++i) w[i] += shift[i];
  }

  double loss = 0;
  for (std::int64_t j = 0; j < cols; ++j) {
    const double d = U(j, j);
    std::vector<char> prune(static_cast<std::size_t>(rows), 0);
    for (std::int64_t g = 0; g < rows / pat.m; ++g) {
      std::vector<std::pair<double, std::int64_t>> sc;
      for (std::int64_t r = g * pat.m; r < (g + 1) * pat.m; ++r) sc.emplace_back(W(r, j) * W(r, j) / (d * d), r);
      std::sort(sc.begin(), sc.end());
      for (int k = 0; k < pat.m - pat.n; ++k)
        prune[static_cast<std::size_t>(sc[static_cast<std::size_t>(k)].second)] = 1;
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const double q = prune[static_cast<std::size_t>(r)] ? 0.0 : W(r, j);
      const double e = (W(r, j) - q) / d;
      loss += e * e / 2;
      for (std::int64_t t = j; t < cols; ++t) W(r, t) -= e * U(j, t);
      W(r, j) = q;
    }
  }
  return {w, loss};
}

// A stand-in for DuoGPT's cross term sum (x~ - x^) x^T on `p`, [cols, cols]:
// a fifth of the problem's xtx plus small noise of the same scale.
std::vector<float> randomCross(const Problem& p, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  const auto at = [&](std::int64_t i, std::int64_t j) { return p.xtx[static_cast<std::size_t>(i * p.cols + j)]; };
  std::vector<float> c(static_cast<std::size_t>(p.cols * p.cols));
  for (std::int64_t i = 0; i < p.cols; ++i)
    for (std::int64_t j = 0; j < p.cols; ++j)
      c[static_cast<std::size_t>(i * p.cols + j)] = 0.2f * at(i, j) + 0.05f * std::sqrt(at(i, i) * at(j, j)) * nd(rng);
  return c;
}

}  // namespace

class TestSolvers : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void sparseGptMatchesReference_data();
  void sparseGptMatchesReference();
  void wandaAndMagnitudeMatchBruteForce_data();
  void wandaAndMagnitudeMatchBruteForce();
  void patternExactness_data();
  void patternExactness();
  void deadInputsAreZeroed();
  void dampingLadderIsReported();
  void badPatternsAreRefused();
  void settingNamesRoundTrip();
  void sparseGptBeatsWandaBeatsMagnitude();
  void columnPatternParsesAndFits();
  void columnPatternExactness_data();
  void columnPatternExactness();
  void columnSparseGptMatchesDoubleLoop_data();
  void columnSparseGptMatchesDoubleLoop();
  void columnWandaIsMagnitude();
  void endToEndOnSampleModel();
};

void TestSolvers::sparseGptMatchesReference_data() {
  QTest::addColumn<int>("rows");
  QTest::addColumn<int>("cols");
  QTest::addColumn<int>("blocksize");
  QTest::addColumn<QString>("pattern");
  QTest::addColumn<double>("percdamp");
  for (const QString& pat : {QStringLiteral("unstructured50"), QStringLiteral("2:4"), QStringLiteral("4:8")}) {
    for (const int bs : {32, 128}) {
      QTest::addRow("16x64 bs%d %s", bs, qPrintable(pat)) << 16 << 64 << bs << pat << 0.01;
      QTest::addRow("32x128 bs%d %s", bs, qPrintable(pat)) << 32 << 128 << bs << pat << 0.01;
    }
  }
  QTest::addRow("24x96 bs32 8:16 (partial last block)") << 24 << 96 << 64 << QStringLiteral("8:16") << 0.01;
  QTest::addRow("16x64 bs32 2:4 percdamp 0.1") << 16 << 64 << 32 << QStringLiteral("2:4") << 0.1;
}

void TestSolvers::sparseGptMatchesReference() {
  QFETCH(int, rows);
  QFETCH(int, cols);
  QFETCH(int, blocksize);
  QFETCH(QString, pattern);
  QFETCH(double, percdamp);
  const Problem p = makeProblem(rows, cols, static_cast<std::uint32_t>(rows * 7919 + cols + blocksize));
  const auto pat = gpu::parsePruningPattern(pattern.toStdString());
  gpu::SparseGptOptions o;
  o.percdamp = percdamp;
  o.blocksize = blocksize;
  const auto r = gpu::solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, pat, o);
  QCOMPARE(r.dampingSteps, 0);
  QCOMPARE(r.percdampUsed, percdamp);

  ref::SparseGptRefOptions ro;
  ro.unstructured = pat.unstructured;
  ro.sparsity = pat.sparsity;
  ro.n = pat.n;
  ro.m = pat.m;
  ro.percdamp = percdamp;
  ro.blocksize = blocksize;
  std::vector<double> h(p.xtx.size());
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = 2.0 * static_cast<double>(p.xtx[i]) / static_cast<double>(p.tokens);
  const auto ref = ref::sparseGptReference(std::vector<double>(p.w.begin(), p.w.end()), p.rows, p.cols, h, ro);
  QVERIFY(ref.ok);

  double diff = 0, norm = 0;
  int maskMismatch = 0;
  for (std::size_t i = 0; i < p.w.size(); ++i) {
    maskMismatch += (r.weight[i] == 0.f) != (ref.weight[i] == 0.0);
    diff += std::pow(r.weight[i] - ref.weight[i], 2);
    norm += ref.weight[i] * ref.weight[i];
  }
  QCOMPARE(maskMismatch, 0);
  const double rel = std::sqrt(diff / norm);
  QVERIFY2(rel < 1e-4, qPrintable(QStringLiteral("relative weight difference %1").arg(rel)));
  QVERIFY2(std::abs(r.loss - ref.loss) <= 1e-4 * ref.loss,
           qPrintable(QStringLiteral("loss %1 vs reference %2").arg(r.loss).arg(ref.loss)));
  // The OBS losses add up to the output error under the damped H:
  // tr(dW (H + lambda I) dW^T) / 2 = outputLoss + lambda ||dW||^2 / 2, lambda = percdamp * mean(diag H).
  QVERIFY(r.outputLoss > 0);
  double meanDiag = 0, dW2 = 0;
  for (int j = 0; j < p.cols; ++j) meanDiag += h[std::size_t(j) * std::size_t(p.cols) + std::size_t(j)];
  meanDiag /= p.cols;
  for (std::size_t i = 0; i < p.w.size(); ++i) dW2 += std::pow(double(p.w[i]) - double(r.weight[i]), 2);
  const double damped = r.outputLoss + r.percdampUsed * meanDiag * dW2 / 2;
  QVERIFY2(r.loss >= r.outputLoss * (1 - 1e-4) && std::abs(r.loss - damped) <= 1e-3 * damped,
           qPrintable(QStringLiteral("OBS loss %1 vs outputLoss %2, damped output loss %3")
                          .arg(r.loss).arg(r.outputLoss).arg(damped)));
  QVERIFY(r.relOutputError > 0 && r.relOutputError < 1);
  QCOMPARE(r.sparsity, 0.5);
}

void TestSolvers::wandaAndMagnitudeMatchBruteForce_data() {
  QTest::addColumn<QString>("method");
  QTest::addColumn<QString>("pattern");
  for (const QString& m : {QStringLiteral("wanda"), QStringLiteral("magnitude")})
    for (const QString& pat :
         {QStringLiteral("unstructured50"), QStringLiteral("2:4"), QStringLiteral("4:8"), QStringLiteral("8:16"),
          QStringLiteral("16:32"), QStringLiteral("1:4"), QStringLiteral("3:8"), QStringLiteral("col2:4"),
          QStringLiteral("col4:8"), QStringLiteral("col3:4")})
      QTest::addRow("%s %s", qPrintable(m), qPrintable(pat)) << m << pat;
}

void TestSolvers::wandaAndMagnitudeMatchBruteForce() {
  QFETCH(QString, method);
  QFETCH(QString, pattern);
  const auto pat = gpu::parsePruningPattern(pattern.toStdString());
  const Problem p = makeProblem(pat.alongColumns ? 16 : 12, 64, 11);
  std::vector<double> score(p.w.size());
  for (std::int64_t r = 0; r < p.rows; ++r)
    for (std::int64_t j = 0; j < p.cols; ++j) {
      const auto i = static_cast<std::size_t>(r * p.cols + j);
      score[i] = std::abs(static_cast<double>(p.w[i])) *
                 (method == QLatin1String("wanda") ? std::sqrt(static_cast<double>(p.sumSq[static_cast<std::size_t>(j)])) : 1.0);
    }
  const auto expected = bruteForce(p, score, pat);
  const auto r = method == QLatin1String("wanda") ? gpu::solveWanda(p.w, p.rows, p.cols, p.sumSq, p.xtx, p.tokens, pat)
                                                  : gpu::solveMagnitude(p.w, p.rows, p.cols, p.xtx, p.tokens, pat);
  QCOMPARE(r.weight.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (r.weight[i] != expected[i]) QFAIL(qPrintable(QStringLiteral("entry %1: %2 vs brute force %3").arg(i).arg(r.weight[i]).arg(expected[i])));
  const double expectSparsity = pat.unstructured ? 0.5 : 1.0 - static_cast<double>(pat.n) / pat.m;
  QCOMPARE(r.sparsity, expectSparsity);
  QVERIFY(r.relOutputError > 0);
}

void TestSolvers::patternExactness_data() {
  QTest::addColumn<QString>("method");
  QTest::addColumn<QString>("pattern");
  for (const QString& m : {QStringLiteral("sparsegpt"), QStringLiteral("wanda"), QStringLiteral("magnitude")})
    for (const QString& pat : {QStringLiteral("2:4"), QStringLiteral("4:8"), QStringLiteral("8:16"), QStringLiteral("16:32"),
                              QStringLiteral("unstructured50")})
      QTest::addRow("%s %s", qPrintable(m), qPrintable(pat)) << m << pat;
}

void TestSolvers::patternExactness() {
  QFETCH(QString, method);
  QFETCH(QString, pattern);
  const Problem p = makeProblem(20, 128, 5);
  const auto pat = gpu::parsePruningPattern(pattern.toStdString());
  gpu::SolveResult r;
  if (method == QLatin1String("sparsegpt")) {
    gpu::SparseGptOptions o;
    o.blocksize = 64;
    r = gpu::solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, pat, o);
  } else if (method == QLatin1String("wanda")) {
    r = gpu::solveWanda(p.w, p.rows, p.cols, p.sumSq, p.xtx, p.tokens, pat);
  } else {
    r = gpu::solveMagnitude(p.w, p.rows, p.cols, p.xtx, p.tokens, pat);
  }
  if (!pat.unstructured) {
    const QString bad = patternViolation(r.weight, p.rows, p.cols, pat.n, pat.m, /*exact=*/true);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
  } else if (method == QLatin1String("sparsegpt")) {
    // comparison group: each block of 64 columns over all rows
    for (std::int64_t b = 0; b < p.cols; b += 64) {
      int zeros = 0;
      for (std::int64_t r2 = 0; r2 < p.rows; ++r2)
        for (std::int64_t j = b; j < b + 64; ++j) zeros += r.weight[static_cast<std::size_t>(r2 * p.cols + j)] == 0.f;
      QCOMPARE(zeros, static_cast<int>(p.rows * 64 / 2));
    }
  } else {
    for (std::int64_t r2 = 0; r2 < p.rows; ++r2) {
      int zeros = 0;
      for (std::int64_t j = 0; j < p.cols; ++j) zeros += r.weight[static_cast<std::size_t>(r2 * p.cols + j)] == 0.f;
      QCOMPARE(zeros, static_cast<int>(p.cols / 2));
    }
  }
  QCOMPARE(r.sparsity, 0.5);
}

void TestSolvers::deadInputsAreZeroed() {
  Problem p = makeProblem(8, 32, 3);
  for (const std::int64_t dead : {3, 17}) {
    for (std::int64_t j = 0; j < p.cols; ++j) {
      p.xtx[static_cast<std::size_t>(dead * p.cols + j)] = 0;
      p.xtx[static_cast<std::size_t>(j * p.cols + dead)] = 0;
    }
    p.sumSq[static_cast<std::size_t>(dead)] = 0;
  }
  gpu::SparseGptOptions o;
  o.blocksize = 16;
  const auto pat = gpu::parsePruningPattern("2:4");
  const auto r = gpu::solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, pat, o);
  QCOMPARE(r.deadInputs, 2);
  for (std::int64_t row = 0; row < p.rows; ++row) {
    QCOMPARE(r.weight[static_cast<std::size_t>(row * p.cols + 3)], 0.f);
    QCOMPARE(r.weight[static_cast<std::size_t>(row * p.cols + 17)], 0.f);
  }
  QVERIFY(patternViolation(r.weight, p.rows, p.cols, 2, 4, false).isEmpty());
  // The reference agrees with the same convention.
  ref::SparseGptRefOptions ro;
  ro.blocksize = 16;
  std::vector<double> h(p.xtx.size());
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = 2.0 * p.xtx[i] / static_cast<double>(p.tokens);
  const auto ref = ref::sparseGptReference(std::vector<double>(p.w.begin(), p.w.end()), p.rows, p.cols, h, ro);
  QVERIFY(ref.ok);
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < p.w.size(); ++i) {
    diff += std::pow(r.weight[i] - ref.weight[i], 2);
    norm += ref.weight[i] * ref.weight[i];
  }
  QVERIFY(std::sqrt(diff / norm) < 1e-4);
}

void TestSolvers::dampingLadderIsReported() {
  // H = 4 * ones: rank 1, the second Cholesky pivot is exactly 0 without damping.
  const std::int64_t rows = 8, cols = 32;
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (auto& v : w) v = nd(rng);
  const std::vector<float> xtx(static_cast<std::size_t>(cols * cols), 2.f);  // H = 2 xtx / 1 = 4
  gpu::SparseGptOptions o;
  o.percdamp = 0;
  o.blocksize = 32;
  const auto r = gpu::solveSparseGpt(w, rows, cols, xtx, 1, gpu::parsePruningPattern("2:4"), o);
  QVERIFY(r.dampingSteps >= 1);
  QVERIFY(r.percdampUsed > 0);
  for (const float v : r.weight) QVERIFY(std::isfinite(v));
  QVERIFY(patternViolation(r.weight, rows, cols, 2, 4, false).isEmpty());
  // The requested damping suffices: no ladder step.
  o.percdamp = 0.01;
  const Problem p = makeProblem(rows, cols, 9);
  QCOMPARE(gpu::solveSparseGpt(p.w, rows, cols, p.xtx, p.tokens, gpu::parsePruningPattern("2:4"), o).dampingSteps, 0);
  // A ladder that may not climb far enough throws instead of falling back.
  o.percdamp = 0;
  o.maxPercdamp = 0;
  QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                           gpu::solveSparseGpt(w, rows, cols, xtx, 1, gpu::parsePruningPattern("2:4"), o));
}

void TestSolvers::badPatternsAreRefused() {
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::parsePruningPattern("4:2"));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::parsePruningPattern("2-4"));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::parsePruningPattern("0:4"));
  QCOMPARE(gpu::parsePruningPattern("16:32").name(), std::string("16:32"));
  QVERIFY(gpu::parsePruningPattern("unstructured50").unstructured);
  const Problem p = makeProblem(4, 36, 2);
  gpu::SparseGptOptions o;
  o.blocksize = 36;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           gpu::solveSparseGpt(p.w, 4, 36, p.xtx, p.tokens, gpu::parsePruningPattern("16:32"), o));
  o.blocksize = 30;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           gpu::solveSparseGpt(p.w, 4, 36, p.xtx, p.tokens, gpu::parsePruningPattern("2:4"), o));
}

// Every method and order goes to its name and back; the names are the ones
// run files and the CLI carry; anything else is refused, naming the choices.
void TestSolvers::settingNamesRoundTrip() {
  QCOMPARE(std::size(gpu::kPruneMethodNames), std::size_t{4});
  for (const auto& e : gpu::kPruneMethodNames) QCOMPARE(gpu::parsePruneMethod(gpu::pruneMethodName(e.value)), e.value);
  QCOMPARE(gpu::pruneMethodName(gpu::PruneMethod::SparseGpt), std::string("sparsegpt"));
  QCOMPARE(gpu::pruneMethodName(gpu::PruneMethod::Wanda), std::string("wanda"));
  QCOMPARE(gpu::pruneMethodName(gpu::PruneMethod::Magnitude), std::string("magnitude"));
  QCOMPARE(gpu::pruneMethodName(gpu::PruneMethod::DuoGpt), std::string("duogpt"));
  QCOMPARE(std::size(gpu::kPruneOrderNames), std::size_t{2});
  for (const auto& e : gpu::kPruneOrderNames) QCOMPARE(gpu::parsePruneOrder(gpu::pruneOrderName(e.value)), e.value);
  QCOMPARE(gpu::pruneOrderName(gpu::PruneOrder::Parallel), std::string("parallel"));
  QCOMPARE(gpu::pruneOrderName(gpu::PruneOrder::Sequential), std::string("sequential"));
  try {
    (void)gpu::parsePruneMethod("SparseGPT");
    QFAIL("a misspelt method was accepted");
  } catch (const std::invalid_argument& e) {
    QCOMPARE(std::string(e.what()), std::string("method must be sparsegpt, wanda, magnitude or duogpt, got 'SparseGPT'"));
  }
  try {
    (void)gpu::parsePruneOrder("");
    QFAIL("an empty order was accepted");
  } catch (const std::invalid_argument& e) {
    QCOMPARE(std::string(e.what()), std::string("order must be parallel or sequential, got ''"));
  }
}

void TestSolvers::sparseGptBeatsWandaBeatsMagnitude() {
  const Problem p = makeProblem(32, 128, 21);
  const auto pat = gpu::parsePruningPattern("2:4");
  const auto s = gpu::solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, pat);
  const auto w = gpu::solveWanda(p.w, p.rows, p.cols, p.sumSq, p.xtx, p.tokens, pat);
  const auto m = gpu::solveMagnitude(p.w, p.rows, p.cols, p.xtx, p.tokens, pat);
  QVERIFY2(s.outputLoss < w.outputLoss && w.outputLoss < m.outputLoss,
           qPrintable(QStringLiteral("%1 %2 %3").arg(s.outputLoss).arg(w.outputLoss).arg(m.outputLoss)));
}

// "colN:M": the name goes back and forth, the N and M rules are the row
// pattern's, and what must tile is the output width (rows), for any input
// width and block size.
void TestSolvers::columnPatternParsesAndFits() {
  for (const char* name : {"col2:4", "col4:8", "col8:16", "col16:32", "col1:4", "col3:4"}) {
    const auto p = gpu::parsePruningPattern(name);
    QVERIFY(p.alongColumns);
    QVERIFY(!p.unstructured);
    QCOMPARE(p.name(), std::string(name));
    QCOMPARE(gpu::parsePruningPattern(p.name()).n, p.n);
  }
  QCOMPARE(gpu::parsePruningPattern("col2:4").n, 2);
  QCOMPARE(gpu::parsePruningPattern("col2:4").m, 4);
  QVERIFY(!gpu::parsePruningPattern("2:4").alongColumns);
  QCOMPARE(gpu::parsePruningPattern("2:4").name(), std::string("2:4"));
  for (const char* bad : {"col4:2", "col0:4", "col2:2", "col2-4", "col", "col:4", "col2:", "colx2:4", "col2:4x",
                          "cols2:4", "Col2:4", "col-2:4", "2:4col", "col unstructured50"}) {
    try {
      (void)gpu::parsePruningPattern(bad);
      QFAIL(qPrintable(QStringLiteral("'%1' was accepted").arg(QLatin1String(bad))));
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("colN:M") != std::string::npos, e.what());
    }
  }

  // rows must be a multiple of M, for every method
  const Problem p = makeProblem(6, 32, 4);
  const auto pat = gpu::parsePruningPattern("col2:4");
  gpu::SparseGptOptions o;
  o.blocksize = 16;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::solveSparseGpt(p.w, 6, 32, p.xtx, p.tokens, pat, o));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::solveWanda(p.w, 6, 32, p.sumSq, p.xtx, p.tokens, pat));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::solveMagnitude(p.w, 6, 32, p.xtx, p.tokens, pat));
  const std::vector<float> cross(32 * 32, 0.f);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           gpu::solveDuoGpt(p.w, 6, 32, p.xtx, cross, {}, p.tokens, pat, o, 0.25));
  try {
    (void)gpu::solveSparseGpt(p.w, 6, 32, p.xtx, p.tokens, pat, o);
  } catch (const std::invalid_argument& e) {
    QVERIFY2(std::string(e.what()).find("rows") != std::string::npos, e.what());
  }
  // ... while neither the input width nor the block size need be (row 2:4 refuses both)
  const Problem q = makeProblem(8, 30, 6);
  o.blocksize = 7;
  const auto r = gpu::solveSparseGpt(q.w, 8, 30, q.xtx, q.tokens, pat, o);
  QVERIFY(columnPatternViolation(r.weight, 8, 30, 2, 4, true).isEmpty());
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           gpu::solveSparseGpt(q.w, 8, 30, q.xtx, q.tokens, gpu::parsePruningPattern("2:4"), o));
  QVERIFY(columnPatternViolation(gpu::solveWanda(q.w, 8, 30, q.sumSq, q.xtx, q.tokens, pat).weight, 8, 30, 2, 4, true)
              .isEmpty());
}

void TestSolvers::columnPatternExactness_data() {
  QTest::addColumn<QString>("method");
  QTest::addColumn<QString>("pattern");
  for (const QString& m :
       {QStringLiteral("sparsegpt"), QStringLiteral("duogpt"), QStringLiteral("wanda"), QStringLiteral("magnitude")})
    for (const QString& pat : {QStringLiteral("col2:4"), QStringLiteral("col4:8"), QStringLiteral("col16:32"),
                               QStringLiteral("col1:4"), QStringLiteral("col3:4")})
      QTest::addRow("%s %s", qPrintable(m), qPrintable(pat)) << m << pat;
}

// Exactly N non-zeros in every aligned group of M rows of every column, and
// not the row pattern of the same N:M (the groups do run down the columns).
void TestSolvers::columnPatternExactness() {
  QFETCH(QString, method);
  QFETCH(QString, pattern);
  const Problem p = makeProblem(32, 96, 8);
  const auto pat = gpu::parsePruningPattern(pattern.toStdString());
  gpu::SparseGptOptions o;
  o.blocksize = 40;  // not a multiple of M, a partial last block
  gpu::SolveResult r;
  if (method == QLatin1String("sparsegpt")) r = gpu::solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, pat, o);
  else if (method == QLatin1String("duogpt"))
    r = gpu::solveDuoGpt(p.w, p.rows, p.cols, p.xtx, randomCross(p, 3), {}, p.tokens, pat, o, 1.0);
  else if (method == QLatin1String("wanda")) r = gpu::solveWanda(p.w, p.rows, p.cols, p.sumSq, p.xtx, p.tokens, pat);
  else r = gpu::solveMagnitude(p.w, p.rows, p.cols, p.xtx, p.tokens, pat);
  const QString bad = columnPatternViolation(r.weight, p.rows, p.cols, pat.n, pat.m, /*exact=*/true);
  QVERIFY2(bad.isEmpty(), qPrintable(bad));
  QVERIFY(!patternViolation(r.weight, p.rows, p.cols, pat.n, pat.m, /*exact=*/true).isEmpty());
  QCOMPARE(r.sparsity, 1.0 - static_cast<double>(pat.n) / pat.m);
}

void TestSolvers::columnSparseGptMatchesDoubleLoop_data() {
  QTest::addColumn<int>("rows");
  QTest::addColumn<int>("cols");
  QTest::addColumn<int>("blocksize");
  QTest::addColumn<QString>("pattern");
  QTest::addColumn<double>("alpha");  // < 0: SparseGPT; else DuoGPT with this residual scale
  QTest::addRow("16x64 bs32 col2:4") << 16 << 64 << 32 << QStringLiteral("col2:4") << -1.0;
  QTest::addRow("32x48 bs20 col4:8 (partial last block)") << 32 << 48 << 20 << QStringLiteral("col4:8") << -1.0;
  QTest::addRow("24x40 bs128 col1:4") << 24 << 40 << 128 << QStringLiteral("col1:4") << -1.0;
  QTest::addRow("16x64 bs1 col3:4") << 16 << 64 << 1 << QStringLiteral("col3:4") << -1.0;
  QTest::addRow("duogpt 16x64 bs32 col2:4 alpha 1") << 16 << 64 << 32 << QStringLiteral("col2:4") << 1.0;
  QTest::addRow("duogpt 32x48 bs16 col4:8 alpha 0.25") << 32 << 48 << 16 << QStringLiteral("col4:8") << 0.25;
}

// The blocked solver (lazy updates, fp32) picks the same column masks as the
// plain column loop in double, and ends at the same weights and loss.
void TestSolvers::columnSparseGptMatchesDoubleLoop() {
  QFETCH(int, rows);
  QFETCH(int, cols);
  QFETCH(int, blocksize);
  QFETCH(QString, pattern);
  QFETCH(double, alpha);
  const Problem p = makeProblem(rows, cols, static_cast<std::uint32_t>(rows * 31 + cols + blocksize));
  const auto pat = gpu::parsePruningPattern(pattern.toStdString());
  gpu::SparseGptOptions o;
  o.blocksize = blocksize;
  const bool duo = alpha >= 0;
  const std::vector<float> cross = duo ? randomCross(p, 17) : std::vector<float>{};
  const auto r = duo ? gpu::solveDuoGpt(p.w, p.rows, p.cols, p.xtx, cross, {}, p.tokens, pat, o, alpha)
                     : gpu::solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, pat, o);
  QCOMPARE(r.dampingSteps, 0);
  const auto [ref, refLoss] = columnNmObs(p, pat, o.percdamp, cross, alpha);

  double diff = 0, norm = 0;
  int maskMismatch = 0;
  for (std::size_t i = 0; i < p.w.size(); ++i) {
    maskMismatch += (r.weight[i] == 0.f) != (ref[i] == 0.0);
    diff += std::pow(double(r.weight[i]) - ref[i], 2);
    norm += ref[i] * ref[i];
  }
  QCOMPARE(maskMismatch, 0);
  QVERIFY(columnPatternViolation(r.weight, p.rows, p.cols, pat.n, pat.m, true).isEmpty());
  const double rel = std::sqrt(diff / norm);
  qInfo("relative weight difference %.3g, loss %.6g vs %.6g", rel, r.loss, refLoss);
  QVERIFY2(rel < 1e-5, qPrintable(QStringLiteral("relative weight difference %1").arg(rel)));
  QVERIFY2(std::abs(r.loss - refLoss) <= 1e-5 * refLoss,
           qPrintable(QStringLiteral("loss %1 vs double loop %2").arg(r.loss).arg(refLoss)));
}

// Within one input column Wanda's input norm is one factor: column N:M
// selects by |W| alone, so Wanda and magnitude agree bit for bit. SparseGPT,
// which also moves the kept weights, has the lower output error.
void TestSolvers::columnWandaIsMagnitude() {
  const Problem p = makeProblem(32, 128, 21);
  const auto pat = gpu::parsePruningPattern("col2:4");
  const auto w = gpu::solveWanda(p.w, p.rows, p.cols, p.sumSq, p.xtx, p.tokens, pat);
  const auto m = gpu::solveMagnitude(p.w, p.rows, p.cols, p.xtx, p.tokens, pat);
  QCOMPARE(w.weight, m.weight);
  const auto s = gpu::solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, pat);
  const auto row = gpu::solveSparseGpt(p.w, p.rows, p.cols, p.xtx, p.tokens, gpu::parsePruningPattern("2:4"));
  qInfo("relative output error, col2:4: sparsegpt %.4f, wanda = magnitude %.4f; row 2:4 sparsegpt %.4f",
        s.relOutputError, m.relOutputError, row.relOutputError);
  QVERIFY2(s.outputLoss < 0.8 * m.outputLoss,
           qPrintable(QStringLiteral("sparsegpt %1, magnitude %2").arg(s.outputLoss).arg(m.outputLoss)));
}

void TestSolvers::endToEndOnSampleModel() {
  QTemporaryDir dir;
  const fs::path tmp = dir.path().toStdString();
  const fs::path calib = sampleCalibration(tmp);
  std::map<std::string, nlohmann::json> reports;
  for (const char* method : {"sparsegpt", "wanda", "magnitude"}) {
    const fs::path out = tmp / method;
    const auto j = runPruneCli({"prune", "--model", QString::fromStdString(kModel.string()), "--calibration",
                                QString::fromStdString(calib.string()), "--method", method, "--pattern", "2:4",
                                "--out", QString::fromStdString(out.string()), "--json"});
    QVERIFY2(j.is_object(), method);
    reports[method] = j;
    QCOMPARE(j["modules"].size(), std::size_t{6 * 7});

    // The checkpoint loads, and every projection follows 2:4 as read from the file.
    const auto model = gpu::Model::load(out);
    QCOMPARE(model->config().numLayers, std::int64_t{6});
    const auto src = SafetensorsCheckpoint::open(kModel);
    const auto dst = SafetensorsCheckpoint::open(out);
    QCOMPARE(dst.names(), src.names());
    const auto packed = sparse::readSparseFile(out / "model.sdwsparse");  // validates every module
    QCOMPARE(packed.size(), std::size_t{6 * 7});
    std::map<std::string, const sparse::PackedMatrix*> byName;
    for (const auto& m : packed) byName[m.name] = &m.matrix;
    for (const auto& name : dst.names()) {
      const TensorView& v = *dst.find(name).view;
      const TensorView& o = *src.find(name).view;
      QCOMPARE(v.dtype, o.dtype);
      QCOMPARE(v.shape, o.shape);
      const bool projection = name.find("_proj.weight") != std::string::npos;
      if (!projection) {
        QVERIFY2(std::memcmp(v.bytes.data(), o.bytes.data(), v.bytes.size()) == 0, name.c_str());
        continue;
      }
      QCOMPARE(v.dtype, std::string("BF16"));
      std::vector<float> w(static_cast<std::size_t>(v.numel()));
      for (std::size_t i = 0; i < w.size(); ++i) {
        std::uint16_t h;
        std::memcpy(&h, v.bytes.data() + 2 * i, 2);
        w[i] = sparse::bf16ToFloat(h);
      }
      const QString bad = patternViolation(w, v.shape[0], v.shape[1], 2, 4, false);
      QVERIFY2(bad.isEmpty(), qPrintable(QString::fromStdString(name) + ": " + bad));
      const std::string module = name.substr(0, name.size() - 7);
      QVERIFY2(byName.count(module), module.c_str());
      QCOMPARE(sparse::unpack(*byName.at(module)), w);
    }
    QVERIFY(!dst.find("lm_head.weight").view || std::memcmp(dst.find("lm_head.weight").view->bytes.data(),
                                                            src.find("lm_head.weight").view->bytes.data(),
                                                            src.find("lm_head.weight").view->bytes.size()) == 0);

    const auto rec = runstore::RunReader::open(out / "pruning.sdw.h5");
    QCOMPARE(rec.kind(), std::string("pruning"));
    QCOMPARE(rec.readStringAttribute("/pruning", "method"), std::string(method));
    QCOMPARE(rec.readStringAttribute("/pruning", "pattern"), std::string("2:4"));
    QCOMPARE(rec.readStringAttribute("/pruning", "calibration_run_id"), runstore::RunReader::open(calib).runId());
    QCOMPARE(rec.readStrings("/pruning/modules/name").size(), std::size_t{42});
    for (const double sp : rec.read<double>("/pruning/modules/sparsity").data) QVERIFY(sp >= 0.5);
  }

  // Per layer (summed over its 7 projections): SparseGPT <= Wanda <= magnitude.
  for (std::size_t l = 0; l < 6; ++l) {
    const double s = reports["sparsegpt"]["layers"][l]["output_loss"];
    const double w = reports["wanda"]["layers"][l]["output_loss"];
    const double m = reports["magnitude"]["layers"][l]["output_loss"];
    qInfo("layer %zu output loss: sparsegpt %.5g  wanda %.5g  magnitude %.5g", l, s, w, m);
    QVERIFY2(s <= w && w <= m, qPrintable(QStringLiteral("layer %1: %2 %3 %4").arg(l).arg(s).arg(w).arg(m)));
  }

  // Sequential order: layer 0 sees the same statistics as in parallel order;
  // later layers are calibrated through the pruned ones.
  const fs::path seqOut = tmp / "sequential";
  const auto seq = runPruneCli({"prune", "--model", QString::fromStdString(kModel.string()), "--calibration",
                                QString::fromStdString(calib.string()), "--method", "sparsegpt", "--pattern", "4:8",
                                "--order", "sequential", "--out", QString::fromStdString(seqOut.string()), "--json"});
  QVERIFY(seq.is_object());
  const auto par = runPruneCli({"prune", "--model", QString::fromStdString(kModel.string()), "--calibration",
                                QString::fromStdString(calib.string()), "--method", "sparsegpt", "--pattern", "4:8",
                                "--out", QString::fromStdString((tmp / "parallel48").string()), "--json"});
  QVERIFY(par.is_object());
  QVERIFY(double(seq["recapture_seconds"]) > 0);
  QCOMPARE(double(seq["layers"][0]["output_loss"]), double(par["layers"][0]["output_loss"]));
  QVERIFY(double(seq["layers"][5]["output_loss"]) != double(par["layers"][5]["output_loss"]));
  QVERIFY(fs::exists(seqOut / "model.sdwsparse"));
  QVERIFY(!fs::exists(seqOut / ".recapture"));

  // Column 2:4: every projection keeps 2 of every 4 rows of each column; there is no
  // bitmask file (row N:M only) but the column file (the spMspV kernel's layout), whose
  // modules unpack to the checkpoint's weights.
  const fs::path colOut = tmp / "magnitude-col24";
  const auto col = runPruneCli({"prune", "--model", QString::fromStdString(kModel.string()), "--calibration",
                                QString::fromStdString(calib.string()), "--method", "magnitude", "--pattern", "col2:4",
                                "--out", QString::fromStdString(colOut.string()), "--json"});
  QVERIFY(col.is_object());
  QCOMPARE(col["pattern"].get<std::string>(), std::string("col2:4"));
  QCOMPARE(col["sparse_file"].get<std::string>(), (colOut / "model.sdwcolumn").string());
  QVERIFY(!fs::exists(colOut / "model.sdwsparse"));
  for (const auto& m : col["modules"]) QVERIFY(m["packed"].get<bool>());
  const auto colRec = runstore::RunReader::open(colOut / "pruning.sdw.h5");
  QCOMPARE(colRec.readStringAttribute("/pruning", "pattern"), std::string("col2:4"));
  QCOMPARE(colRec.readStringAttribute("/pruning", "sparse_file"), (colOut / "model.sdwcolumn").string());
  const auto columnMods = gpu::readSpmspvFile(colOut / "model.sdwcolumn");  // validates every module
  QCOMPARE(columnMods.size(), std::size_t{6 * 7});
  const auto colCkpt = SafetensorsCheckpoint::open(colOut);
  for (const auto& mod : columnMods) {
    QVERIFY(mod.matrix.format == kernels::SpmspvFormat::Column24);
    const TensorView& v = *colCkpt.find(mod.name + ".weight").view;
    std::vector<std::uint16_t> h(static_cast<std::size_t>(v.numel()));
    std::memcpy(h.data(), v.bytes.data(), h.size() * 2);
    for (auto& x : h)
      if ((x & 0x7fff) == 0) x = 0;  // -0 unpacks as +0
    QVERIFY2(gpu::unpackSpmspv(mod.matrix) == h, mod.name.c_str());
  }
  int projections = 0;
  for (const auto& name : colCkpt.names()) {
    if (name.find("_proj.weight") == std::string::npos) continue;
    const TensorView& v = *colCkpt.find(name).view;
    std::vector<float> w(static_cast<std::size_t>(v.numel()));
    for (std::size_t i = 0; i < w.size(); ++i) {
      std::uint16_t h;
      std::memcpy(&h, v.bytes.data() + 2 * i, 2);
      w[i] = sparse::bf16ToFloat(h);
    }
    const QString bad = columnPatternViolation(w, v.shape[0], v.shape[1], 2, 4, false);
    QVERIFY2(bad.isEmpty(), qPrintable(QString::fromStdString(name) + ": " + bad));
    QVERIFY(!patternViolation(w, v.shape[0], v.shape[1], 2, 4, false).isEmpty());
    ++projections;
  }
  QCOMPARE(projections, 6 * 7);
  QCOMPARE(gpu::Model::load(colOut)->config().numLayers, std::int64_t{6});
}

QTEST_GUILESS_MAIN(TestSolvers)
#include "test_solvers.moc"
