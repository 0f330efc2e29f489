#include "widgets/activationdata.h"

#include <QFileInfo>
#include <QMap>

#include <algorithm>
#include <cmath>

namespace sdw::widgets {

QString ActivationRunInfo::label() const {
  const QString file = QFileInfo(path).fileName();
  return source.isEmpty() ? file : QStringLiteral("%1 (%2)").arg(file, source);
}

bool ActivationRunInfo::decodes() const {
  return source == QLatin1String("ar") || source == QLatin1String("cross-model");
}

QString ActivationInputInfo::label() const {
  return QStringLiteral("layer %1 · %2").arg(layer).arg(modules.join(QStringLiteral(", ")));
}

int ActivationCatalog::inputIndex(const QString& name) const {
  for (int i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == name) return i;
  return -1;
}

bool ActivationSeries::hasDecodeSteps() const {
  return std::any_of(decodeStep.begin(), decodeStep.end(), [](int s) { return s >= 0; });
}

double Histogram::total() const {
  double t = 0;
  for (double c : counts) t += c;
  return t;
}

Histogram histogramOf(const QVector<float>& values, double range, int bins) {
  Histogram h;
  bins = std::max(bins, 1);
  if (!(range > 0) || !std::isfinite(range)) range = 1.0;
  h.lower = -range;
  h.width = 2.0 * range / bins;
  h.counts = QVector<double>(bins, 0.0);
  for (float v : values) {
    const double x = v;
    if (!std::isfinite(x) || std::abs(x) > range) continue;
    const auto i = static_cast<int>(std::floor((x - h.lower) / h.width));
    h.counts[std::clamp(i, 0, bins - 1)] += 1.0;
  }
  return h;
}

QVector<StepGroup> groupByDecodeStep(const ActivationSeries& series, int width) {
  width = std::max(width, 1);
  QMap<int, QVector<double>> bins;  // first step of the bin -> norms
  const qsizetype n = std::min(series.decodeStep.size(), series.rowNorm.size());
  for (qsizetype i = 0; i < n; ++i) {
    const int step = series.decodeStep[i];
    const double norm = series.rowNorm[i];
    if (step < 0 || !std::isfinite(norm)) continue;
    bins[(step / width) * width].push_back(norm);
  }
  QVector<StepGroup> out;
  out.reserve(bins.size());
  for (auto it = bins.begin(); it != bins.end(); ++it) {
    QVector<double>& v = it.value();
    std::sort(v.begin(), v.end());
    const qsizetype m = v.size();
    StepGroup g;
    g.first = it.key();
    g.last = it.key() + width - 1;
    g.rows = static_cast<int>(m);
    g.median = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
    out.push_back(g);
  }
  return out;
}

QString shortModuleName(const QString& name) { return name.mid(name.lastIndexOf(QLatin1Char('.')) + 1); }

}  // namespace sdw::widgets
