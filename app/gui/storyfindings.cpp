#include "app/gui/storyfindings.h"

#include "core/stats.h"
#include "gpu/bench.h"
#include "gpu/bench_summary.h"
#include "gpu/kernel_id.h"

#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QRegularExpression>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace sdw::app::findings {

namespace {

const QLocale kEn(QLocale::English);

QString num(double v, int decimals) { return kEn.toString(v, 'f', decimals); }
QString count(qint64 v) { return kEn.toString(v); }
QString percent(double fraction) { return QStringLiteral("%1%").arg(100.0 * fraction, 0, 'f', 1); }
QString decodingText(const Decoding& d) { return QString::fromStdString(d.describe()); }

double median(const std::vector<double>& v) { return stats::median(v); }  // NaN when empty

bool sameDir(const QString& a, const QString& b) {
  if (a.isEmpty() || b.isEmpty()) return false;
  const QString ca = QDir::cleanPath(QFileInfo(a).absoluteFilePath());
  const QString cb = QDir::cleanPath(QFileInfo(b).absoluteFilePath());
  return ca == cb || QFileInfo(ca).fileName() == QFileInfo(cb).fileName();
}

// Index of the model whose folder is `dir`, else `fallback` when in range.
template <typename Models>
int indexOf(const Models& models, const QString& dir, int fallback) {
  for (int i = 0; i < models.size(); ++i)
    if (sameDir(models[i].dir, dir)) return i;
  return fallback < models.size() ? fallback : -1;
}

}  // namespace

QString modelLoaded(const widgets::ModelSummary& s, double seconds) {
  return QStringLiteral("%1 (%2): %3 layers, %4 parameters, %5 MiB as %6 on %7, loaded in %8 s")
      .arg(QFileInfo(s.dir).fileName(), s.architecture)
      .arg(s.layers)
      .arg(count(static_cast<qint64>(s.parameters)))
      .arg(num(double(s.bytesLoaded) / (1024.0 * 1024.0), 1))
      .arg(s.dtype, s.device)
      .arg(num(seconds, 2));
}

QString generated(int tokens, double tokensPerSecond, const Decoding& decoding, const QString& device) {
  return QStringLiteral("%1 tokens at %2 tokens/s (batch 1, %3) on %4")
      .arg(tokens)
      .arg(num(tokensPerSecond, 1))
      .arg(decodingText(decoding), device);
}

QString calibration(const QString& label, const QString& panelMessage) {
  // "Complete: calib-fixed.sdw.h5 — 3,000 tokens in 4.1 s (730 tokens/s), 2.3 MiB"
  const int dash = panelMessage.indexOf(QStringLiteral(" — "));
  const QString figures = dash >= 0 ? panelMessage.mid(dash + 3).trimmed() : panelMessage.trimmed();
  return QStringLiteral("%1: %2 run file").arg(label, figures);
}

double tokensPerSecond(const QString& panelMessage) {
  static const QRegularExpression re(QStringLiteral("\\(([0-9][0-9,]*(?:\\.[0-9]+)?) tokens/s\\)"));
  const QRegularExpressionMatch m = re.match(panelMessage);
  if (!m.hasMatch()) return 0;
  QString v = m.captured(1);
  v.remove(QLatin1Char(','));
  return v.toDouble();
}

QString captureComparison(double reforwardRate, double exactRate) {
  if (reforwardRate <= 0 || exactRate <= 0) return {};
  const double r = reforwardRate / exactRate;
  if (r >= 1.0)
    return QStringLiteral("re-forward collected %1 tokens/s against %2 tokens/s for exact capture (%3x faster)")
        .arg(num(reforwardRate, 0), num(exactRate, 0), num(r, 2));
  return QStringLiteral("re-forward collected %1 tokens/s against %2 tokens/s for exact capture: exact capture was "
                        "the faster one on this run (%3x)")
      .arg(num(reforwardRate, 0), num(exactRate, 0), num(1.0 / r, 2));
}

QString epsilon(const widgets::EpsilonData& d) {
  if (!d.hasPair || !std::isfinite(d.shareArLower) || !std::isfinite(d.medianRatio))
    return QStringLiteral("no paired summary: %1 inputs analysed, %2 modules with both eps finite")
        .arg(d.inputs.size())
        .arg(d.summaryModules);
  int layers = 0;
  for (const auto& m : d.modules) layers = std::max(layers, m.layer + 1);
  QString s = QStringLiteral("AR lower on %1 of modules (%2 of %3), median ratio eps(C4)/eps(AR) %4 (IQR %5-%6), "
                             "k = %7. ")
                  .arg(percent(d.shareArLower))
                  .arg(d.summaryArLower)
                  .arg(d.summaryModules)
                  .arg(num(d.medianRatio, 2), num(d.ratioQ1, 2), num(d.ratioQ3, 2))
                  .arg(d.k);
  const bool arShare = d.shareArLower > 0.5;
  const bool arRatio = d.medianRatio > 1.0;
  if (arShare && arRatio)
    s += QStringLiteral("On this sample the AR run matches decode time better than the fixed-text run on most "
                        "modules. ");
  else if (!arShare && !arRatio)
    s += QStringLiteral("On this sample AR calibration does not lower epsilon: the fixed-text run matches decode "
                        "time as well or better on most modules. ");
  else
    s += QStringLiteral("On this sample the picture is mixed (%1 of modules favour AR, but the median ratio is "
                        "%2): no clear winner. ")
             .arg(percent(d.shareArLower), num(d.medianRatio, 2));
  // How much of that is more than two runs of the same process would show.
  if (d.hasNoise())
    s += QStringLiteral("%1 of %2 modules differ beyond the runs' noise floors (the eps two runs of the same "
                        "process show at these budgets)%3. ")
             .arg(d.beyondNoise)
             .arg(d.noiseModules)
             .arg(d.beyondNoise == 0 ? QStringLiteral(": at these budgets the comparison is within sampling noise")
                                     : QStringLiteral(", AR lower on %1 of them").arg(d.arLowerBeyondNoise));
  // A comparison that mixes decodings or leaks the reference's prompts says so.
  for (const QString& w : d.warnings) s += QStringLiteral("Warning: %1 ").arg(w);
  const QString shareVsPaper = d.shareArLower >= 0.87 ? QStringLiteral("at or above") : QStringLiteral("below");
  const QString ratioVsPaper = d.medianRatio < 1.81   ? QStringLiteral("below")
                               : d.medianRatio <= 3.26 ? QStringLiteral("within")
                                                       : QStringLiteral("above");
  s += QStringLiteral("The paper reports AR lower on at least 87% of modules with median ratio 1.81-3.26 on "
                      "Qwen3-14B/32B; here the share is %1 the paper's and the median ratio %2 its range, on a "
                      "%3-layer sample model with small budgets.")
           .arg(shareVsPaper, ratioVsPaper)
           .arg(layers);
  return s;
}

QString pruning(const widgets::PruningRecordData& r) {
  double sparsity = 0;
  for (const auto& m : r.modules) sparsity += m.sparsity;
  if (!r.modules.isEmpty()) sparsity /= double(r.modules.size());
  return QStringLiteral("%1 %2 from %3 (%4, %5 tokens): %6 modules at %7 sparsity, mean relative output error %8 "
                        "(on its own calibration data), %9 s")
      .arg(r.method, r.pattern, widgets::runStem(r.calibrationRun), r.calibrationSource,
           count(r.calibrationTokens))
      .arg(r.modules.size())
      .arg(percent(sparsity))
      .arg(num(r.meanRelError(), 4))
      .arg(num(r.totalSeconds, 1));
}

QString quality(const widgets::QualityData& d, const QString& fixedDir, const QString& arDir) {
  if (d.models.isEmpty()) return QStringLiteral("no models in the evaluation (0 rows)");
  const int dense = 0;
  const int fixed = indexOf(d.models, fixedDir, 1);
  const int ar = indexOf(d.models, arDir, 2);
  const auto& D = d.models[dense];
  QString s = QStringLiteral("%1 prompts, %2 seed(s), %3 new tokens, %4. Dense: ppl %5 on held-out text, %6 on its "
                             "own generations. ")
                  .arg(d.prompts)
                  .arg(D.seeds)
                  .arg(d.maxNewTokens)
                  .arg(d.decoding.isEmpty() ? decodingText(Decoding{d.temperature, d.topK, d.topP}) : d.decoding,
                       num(D.pplText, 2), num(D.pplDenseGen, 2));
  const auto row = [&](int i, const QString& name) {
    const auto& m = d.models[i];
    return QStringLiteral("%1: KL %2, agreement %3, first divergence %4, ppl %5 / %6. ")
        .arg(name, num(m.kl.mean, 4), percent(m.agreement.mean), num(m.firstDivergence.mean, 1),
             num(m.pplText, 2), num(m.pplDenseGen, 2));
  };
  if (fixed >= 0) s += row(fixed, QStringLiteral("Fixed-text pruned"));
  if (ar >= 0) s += row(ar, QStringLiteral("AR pruned"));
  // A comparison that mixes decodings or leaks prompts says so first.
  for (const QString& w : d.warnings) s += QStringLiteral("Warning: %1 ").arg(w);
  if (fixed < 0 || ar < 0 || fixed == ar) return s + QStringLiteral("(one of the two pruned models is missing)");

  const auto& F = d.models[fixed];
  const auto& A = d.models[ar];
  QStringList arBetter, fixedBetter;
  const auto compare = [&](const QString& what, double f, double a, bool lowerIsBetter) {
    if (f == a) return;
    ((a < f) == lowerIsBetter ? arBetter : fixedBetter) << what;
  };
  compare(QStringLiteral("KL"), F.kl.mean, A.kl.mean, true);
  compare(QStringLiteral("agreement"), F.agreement.mean, A.agreement.mean, false);
  compare(QStringLiteral("held-out ppl"), F.pplText, A.pplText, true);
  compare(QStringLiteral("ppl on dense generations"), F.pplDenseGen, A.pplDenseGen, true);
  if (fixedBetter.isEmpty() && !arBetter.isEmpty())
    s += QStringLiteral("On this sample the AR-pruned model is closer to the dense model on all %1 measures.")
             .arg(arBetter.size());
  else if (arBetter.isEmpty() && !fixedBetter.isEmpty())
    s += QStringLiteral("On this sample the fixed-text pruned model is closer to the dense model on all %1 measures: "
                        "no AR advantage here.")
             .arg(fixedBetter.size());
  else if (arBetter.isEmpty())
    s += QStringLiteral("The two pruned models score the same on all 4 measures.");
  else
    s += QStringLiteral("Mixed: AR is closer on %1 of 4 (%2), fixed text on %3 (%4).")
             .arg(arBetter.size())
             .arg(arBetter.join(QStringLiteral(", ")))
             .arg(fixedBetter.size())
             .arg(fixedBetter.join(QStringLiteral(", ")));
  return s;
}

QString drift(const widgets::DriftData& d, const QString& fixedDir, const QString& arDir) {
  if (d.isEmpty()) return QStringLiteral("no drift curves (0 models)");
  const int fixed = indexOf(d.models, fixedDir, 0);
  const int ar = indexOf(d.models, arDir, 1);
  QString s = QStringLiteral("%1 prompts, %2 decode steps (%3), %4 layers. ")
                  .arg(d.prompts)
                  .arg(d.steps)
                  .arg(d.decoding.isEmpty() ? QStringLiteral("greedy") : d.decoding)
                  .arg(d.layers);
  for (const QString& w : d.warnings) s += QStringLiteral("Warning: %1 ").arg(w);
  int arLower = 0, fixedLower = 0, same = 0, latest = -1;
  QStringList parts;
  for (int mode = 0; mode < d.modes.size(); ++mode) {
    QStringList perModel;
    for (const auto& [i, name] : {std::pair{fixed, QStringLiteral("fixed")}, std::pair{ar, QStringLiteral("AR")}}) {
      const widgets::DriftCurveSet* c = i >= 0 ? d.curves(i, mode) : nullptr;
      if (!c) continue;
      latest = std::max(latest, c->step90Max);
      const QString reach = c->step90Min < 0 ? QStringLiteral("no plateau")
                            : c->step90Min == c->step90Max
                                ? QStringLiteral("90% at step %1").arg(c->step90Min)
                                : QStringLiteral("90% at steps %1-%2").arg(c->step90Min).arg(c->step90Max);
      perModel << QStringLiteral("%1 plateau %2 (%3)").arg(name, num(c->medianPlateau, 3), reach);
    }
    const widgets::DriftCurveSet* cf = fixed >= 0 ? d.curves(fixed, mode) : nullptr;
    const widgets::DriftCurveSet* ca = ar >= 0 ? d.curves(ar, mode) : nullptr;
    if (cf && ca && std::isfinite(cf->medianPlateau) && std::isfinite(ca->medianPlateau)) {
      // Within 2% of each other the plateaus are the same for a reader.
      const double rel = std::abs(ca->medianPlateau - cf->medianPlateau) /
                         std::max(std::abs(cf->medianPlateau), 1e-12);
      if (rel < 0.02) ++same;
      else if (ca->medianPlateau < cf->medianPlateau) ++arLower;
      else ++fixedLower;
    }
    QString title = widgets::driftModeTitle(d.modes[mode]);
    if (!title.isEmpty()) title[0] = title[0].toUpper();
    parts << QStringLiteral("%1: %2").arg(title, perModel.join(QStringLiteral(" vs ")));
  }
  s += parts.join(QStringLiteral(". ")) + QStringLiteral(". ");
  const int modes = static_cast<int>(d.modes.size());
  if (same == modes && modes > 0)
    s += QStringLiteral("Both pruned models drift alike (plateaus within 2%) in every mode measured. ");
  else if (arLower == modes && modes > 0)
    s += QStringLiteral("The AR-pruned model drifts less in every mode measured. ");
  else if (fixedLower == modes && modes > 0)
    s += QStringLiteral("The fixed-text pruned model drifts less in every mode measured: no AR advantage here. ");
  else
    s += QStringLiteral("Neither model drifts less in every mode (AR lower in %1 of %2, alike within 2% in %3). ")
             .arg(arLower)
             .arg(modes)
             .arg(same);
  if (latest >= 0)
    s += QStringLiteral("Every layer reaches 90% of its plateau by step %1; the paper reports plateaus within about "
                        "12 decode steps%2.")
             .arg(latest)
             .arg(latest <= 12 ? QStringLiteral(", which this run agrees with")
                               : QStringLiteral(", earlier than this run"));
  return s;
}

QString bench(const QVector<gpu::BenchRow>& rows, const QString& backend) {
  if (rows.isEmpty()) return QStringLiteral("no measurements (0 rows)");
  int batch = rows.front().batch;
  for (const auto& r : rows) batch = std::min(batch, r.batch);
  // Per shape at that batch: the sparse 2:4 time and its speed-ups over the
  // baselines measured for the same shape (gpu/bench_summary.h).
  gpu::BaselineTimes base;
  for (const auto& r : rows) base.add(r);
  std::vector<double> sparseUs, denseUs, libraryUs, overDense, overLibrary, overCusparselt;
  const auto push = [](std::vector<double>& v, double x) {
    if (x > 0) v.push_back(x);
  };
  for (const auto& r : rows) {
    if (r.batch != batch || gpu::isLayerSequence(r)) continue;
    const auto& k = gpu::kernelInfo(r.id);
    if (k.baseline == gpu::Baseline::OwnDense) denseUs.push_back(r.us);
    if (k.baseline == gpu::Baseline::Cublas) libraryUs.push_back(r.us);
    if (!k.sparse || r.pattern != "2:4") continue;
    sparseUs.push_back(r.us);
    push(overDense, base.speedup(r, gpu::Baseline::OwnDense));
    push(overLibrary, base.speedup(r, gpu::Baseline::Cublas));
    push(overCusparselt, base.speedup(r, gpu::Baseline::Cusparselt));
  }
  const bool gpu = backend == QLatin1String("cuda");
  QString s = QStringLiteral("Batch %1, %2 shape(s) on %3: sparse 2:4 median %4 us per call")
                  .arg(batch)
                  .arg(sparseUs.size())
                  .arg(gpu ? QStringLiteral("the GPU") : QStringLiteral("the CPU kernels"))
                  .arg(num(median(sparseUs), 1));
  if (!overDense.empty())
    s += QStringLiteral(", our dense GEMV %1 us: %2x").arg(num(median(denseUs), 1), num(median(overDense), 2));
  if (!overLibrary.empty())
    s += QStringLiteral(", cuBLAS %1 us: %2x").arg(num(median(libraryUs), 1), num(median(overLibrary), 2));
  else
    s += gpu ? QStringLiteral(", no library baseline measured")
             : QStringLiteral("; no library baseline on the CPU");
  if (!overCusparselt.empty())
    s += QStringLiteral(", cuSPARSELt 2:4 (a matrix-matrix library at batch 1): %1x").arg(num(median(overCusparselt), 2));
  s += QStringLiteral(" (median per-shape speedups). ");
  const double best = !overDense.empty() ? median(overDense) : (!overLibrary.empty() ? median(overLibrary) : 0);
  if (best > 0 && best < 1)
    s += QStringLiteral("The sparse kernel is slower than dense here. ");
  s += QStringLiteral("At 50% sparsity the kernel reads 1.125 bytes per weight against 2, a 1.78x bandwidth limit; "
                      "the paper's kernel reaches 1.42x end to end on an A100.");
  if (!gpu) s += QStringLiteral(" CPU timings say nothing about the GPU kernel.");
  return s;
}

}  // namespace sdw::app::findings
