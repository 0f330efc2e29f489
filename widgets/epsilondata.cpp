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
  // Whether those differences are larger than what two runs of the same
  // process would show at these budgets.
  if (hasNoise())
    line += tr("; %1 of %2 beyond the noise floor (%3 lower on %4)")
                .arg(beyondNoise)
                .arg(noiseModules)
                .arg(arLabel.isEmpty() ? QStringLiteral("AR") : arLabel)
                .arg(arLowerBeyondNoise);
  else
    line += tr("; noise floor unavailable");
  return line;
}

QString EpsilonData::noiseNote() const {
  if (hasNoise()) return {};
  const auto tr = [](const char* s) { return QCoreApplication::translate("EpsilonData", s); };
  QStringList why;
  if (!cNoiseNote.isEmpty() && cNoiseNote == arNoiseNote)
    why << tr("%1 and %2: %3").arg(cLabel, arLabel, cNoiseNote);
  else {
    if (!cNoiseNote.isEmpty()) why << tr("%1: %2").arg(cLabel, cNoiseNote);
    if (!arNoiseNote.isEmpty()) why << tr("%1: %2").arg(arLabel, arNoiseNote);
  }
  return why.isEmpty() ? tr("No noise floor.") : tr("No noise floor (%1).").arg(why.join(QStringLiteral("; ")));
}

}  // namespace sdw::widgets
