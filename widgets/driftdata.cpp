#include "widgets/driftdata.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>

namespace sdw::widgets {

namespace {
QString tr(const char* s) { return QCoreApplication::translate("DriftData", s); }
}  // namespace

QString formatDrift(double v) {
  if (std::isnan(v)) return QStringLiteral("–");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  return QString::number(v, 'g', 3);
}

QString driftModeTitle(const QString& mode) {
  if (mode == QLatin1String("own")) return tr("own trajectory");
  if (mode == QLatin1String("shared")) return tr("shared trajectory");
  return mode;
}

const DriftCurveSet* DriftData::curves(int model, int mode) const {
  if (model < 0 || model >= models.size()) return nullptr;
  const DriftModelData& m = models[model];
  if (mode < 0 || mode >= m.curves.size()) return nullptr;
  return &m.curves[mode];
}

double DriftData::ratio(int model, int mode, int step, int layer) const {
  const DriftCurveSet* c = curves(model, mode);
  if (!c || step < 0 || step >= steps || layer < 0 || layer >= layers) return std::nan("");
  const qsizetype i = qsizetype(step) * layers + layer;
  return i < c->ratio.size() ? c->ratio[i] : std::nan("");
}

QString DriftData::summaryLine(int mode, const QVector<int>& shown) const {
  if (mode < 0 || mode >= modes.size()) return tr("No drift curves for this mode.");
  QStringList plateaus;
  int lo = -1, hi = -1;
  for (int m : shown) {
    const DriftCurveSet* c = curves(m, mode);
    if (!c) continue;
    plateaus << QStringLiteral("%1 (%2)").arg(formatDrift(c->medianPlateau), models[m].shortLabel);
    if (c->step90Min >= 0) lo = lo < 0 ? c->step90Min : std::min(lo, c->step90Min);
    hi = std::max(hi, c->step90Max);
  }
  if (plateaus.isEmpty()) return tr("No model selected.");
  QString line = tr("%1: median plateau %2").arg(driftModeTitle(modes[mode]), plateaus.join(tr(" vs ")));
  const int pct = static_cast<int>(std::lround(plateauFraction * 100));
  if (lo < 0)
    line += tr("; no layer drifts (plateau 0)");
  else if (lo == hi)
    line += tr("; %1% of the plateau first reached at decode step %2").arg(pct).arg(lo);
  else
    line += tr("; %1% of the plateau first reached at decode steps %2–%3").arg(pct).arg(lo).arg(hi);
  return line;
}

}  // namespace sdw::widgets
