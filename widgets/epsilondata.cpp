#include "widgets/epsilondata.h"

#include <QCoreApplication>

#include <cmath>

namespace sdw::widgets {

QString formatEps(double v) {
  if (std::isnan(v)) return QStringLiteral("–");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  return QString::number(v, 'g', 4);
}

QString EpsilonData::summaryLine() const {
  const auto tr = [](const char* s) { return QCoreApplication::translate("EpsilonData", s); };
  if (!hasPair) return tr("One calibration run: no ratio (analyze a fixed-text and an AR run).");
  if (summaryModules == 0 || std::isnan(shareArLower)) return tr("No module has both eps defined.");
  QString line = tr("%1 lower on %2% of modules (%3 of %4), median ratio %5")
                     .arg(arLabel.isEmpty() ? QStringLiteral("AR") : arLabel)
                     .arg(shareArLower * 100.0, 0, 'f', 1)
                     .arg(summaryArLower)
                     .arg(summaryModules)
                     .arg(formatEps(medianRatio));
  if (!std::isnan(ratioQ1) && !std::isnan(ratioQ3))
    line += tr(" (IQR %1–%2)").arg(formatEps(ratioQ1), formatEps(ratioQ3));
  return line;
}

}  // namespace sdw::widgets
