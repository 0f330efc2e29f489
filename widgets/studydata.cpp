#include "widgets/studydata.h"

#include <QObject>

namespace sdw::widgets {

QString formatStudyCi(const StudyCi& v, int decimals) {
  if (!v.valid()) return QStringLiteral("n/a");
  const QString mean = QString::number(v.mean, 'f', decimals);
  if (v.n < 2 || !std::isfinite(v.ci)) return mean;
  return QStringLiteral("%1 ± %2").arg(mean, QString::number(v.ci, 'f', decimals));
}

QString studySourceName(const QString& source) {
  if (source == QLatin1String("fixed")) return QObject::tr("fixed text");
  if (source == QLatin1String("ar")) return QObject::tr("AR");
  return source;
}

QString studySolverName(const QString& solver) {
  if (solver == QLatin1String("sparsegpt")) return QStringLiteral("SparseGPT");
  if (solver == QLatin1String("wanda")) return QStringLiteral("Wanda");
  if (solver == QLatin1String("duogpt")) return QStringLiteral("DuoGPT");
  return solver;
}

QString studyPatternName(const QString& pattern) {
  if (pattern == QLatin1String("unstructured50")) return QObject::tr("50% unstructured");
  return pattern;
}

}  // namespace sdw::widgets
