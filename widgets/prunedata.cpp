#include "widgets/prunedata.h"

#include <QFileInfo>
#include <QLocale>

#include <cmath>

namespace sdw::widgets {

double PruningRecordData::meanRelError() const {
  if (modules.isEmpty()) return 0;
  double s = 0;
  for (const PruneModuleData& m : modules) s += m.relOutputError;
  return s / static_cast<double>(modules.size());
}

QString PruningRecordData::summaryLine() const {
  const QLocale en(QLocale::English);
  QString order_ = order.isEmpty() ? QStringLiteral("?") : order;
  QString calib = calibrationSource.isEmpty() ? QStringLiteral("?") : calibrationSource;
  if (method == QLatin1String("duogpt")) order_ += QStringLiteral(", ") + activationSparsityText(activationSparsity);
  QString line = QStringLiteral("%1 %2, %3 · calibration %4, %5 tokens (%6) · %7 modules in %8 s")
                     .arg(method, pattern, order_, calib, en.toString(calibrationTokens), runStem(calibrationRun))
                     .arg(modules.size())
                     .arg(totalSeconds, 0, 'f', totalSeconds < 10 ? 2 : 1);
  if (recaptureSeconds > 0) line += QStringLiteral(" (re-capture %1 s)").arg(recaptureSeconds, 0, 'f', 1);
  line += QStringLiteral(" · mean rel. error %1").arg(meanRelError(), 0, 'g', 4);
  return line;
}

QString QualityData::summaryLine() const {
  const int seeds = models.isEmpty() ? 0 : models.front().seeds;
  const QString sampling = decoding.isEmpty() ? (temperature > 0 ? QStringLiteral("T = %1").arg(temperature, 0, 'g', 3)
                                                                  : QStringLiteral("greedy"))
                                              : decoding;
  QString line = QStringLiteral("%1 · %2 models, %3 seeds, %4 prompts, %5 new tokens, %6, %7 text windows")
                     .arg(QFileInfo(path).fileName())
                     .arg(models.size())
                     .arg(seeds)
                     .arg(prompts)
                     .arg(maxNewTokens)
                     .arg(sampling)
                     .arg(windows);
  if (activationSparsity > 0 && !activationThresholds.isEmpty())
    line += QStringLiteral(" · compared models at activation sparsity %1 (thresholds: %2; dense reference dense)")
                .arg(activationSparsityText(activationSparsity), runStem(activationThresholds));
  else if (activationSparsity > 0)
    line += QStringLiteral(" · compared models at activation sparsity %1 (dense reference dense)")
                .arg(activationSparsityText(activationSparsity));
  return line;
}

QString activationSparsityText(double p) { return QStringLiteral("p_x %1").arg(p, 0, 'f', 2); }

QString activationSparsityText(double p, const QString& thresholdsRun) {
  if (thresholdsRun.isEmpty()) return activationSparsityText(p);
  return QStringLiteral("%1 (thresholds: %2)").arg(activationSparsityText(p), runStem(thresholdsRun));
}

QString runStem(const QString& path) {
  QString name = QFileInfo(path).fileName();
  if (name.endsWith(QLatin1String(".sdw.h5"))) name.chop(7);
  return name;
}

QString defaultPruneFolderName(const QString& method, const QString& pattern, const QString& calibrationRun,
                               double activationSparsity) {
  QString p = pattern;
  p.remove(QLatin1Char(':'));
  // DuoGPT models of different p_x differ: the name tells them apart.
  if (method == QLatin1String("duogpt"))
    p += QStringLiteral("-px%1").arg(static_cast<int>(std::lround(activationSparsity * 100)));
  return QStringLiteral("%1%2-%3").arg(method, p, runStem(calibrationRun));
}

}  // namespace sdw::widgets
