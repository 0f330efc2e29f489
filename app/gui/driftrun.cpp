#include "app/gui/driftrun.h"

#include "app/gui/workspace.h"
#include "core/drift.h"
#include "core/runstore.h"
#include "gpu/drift_run.h"
#include "widgets/prunedata.h"  // activationSparsityText

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

namespace sdw::app {

namespace {

namespace rs = sdw::runstore;
namespace fs = std::filesystem;


QVector<double> toDoubles(const std::vector<double>& v) { return QVector<double>(v.begin(), v.end()); }

// Splits a label into tokens at '-', '_', '.' and spaces, keeping the separators.
QStringList tokens(const QString& s) {
  QStringList out;
  QString cur;
  for (const QChar c : s) {
    cur += c;
    if (c == QLatin1Char('-') || c == QLatin1Char('_') || c == QLatin1Char('.') || c == QLatin1Char(' ')) {
      out << cur;
      cur.clear();
    }
  }
  if (!cur.isEmpty()) out << cur;
  return out;
}

}  // namespace

QStringList distinguishingLabels(const QStringList& labels) {
  if (labels.size() < 2) return labels;
  QVector<QStringList> parts;
  for (const QString& l : labels) parts << tokens(l);
  qsizetype shortest = parts.front().size();
  for (const auto& p : parts) shortest = std::min(shortest, p.size());
  qsizetype head = 0, tail = 0;
  const auto sameAt = [&](auto index) {
    for (const auto& p : parts)
      if (p[index(p)] != parts.front()[index(parts.front())]) return false;
    return true;
  };
  while (head < shortest - 1 && sameAt([&](const QStringList&) { return head; })) ++head;
  while (tail < shortest - 1 - head && sameAt([&](const QStringList& p) { return p.size() - 1 - tail; })) ++tail;
  QStringList out;
  for (qsizetype i = 0; i < labels.size(); ++i) {
    QString s = parts[i].mid(head, parts[i].size() - head - tail).join(QString());
    while (!s.isEmpty() && QStringLiteral("-_. ").contains(s.back())) s.chop(1);
    if (s.compare(QLatin1String("ar"), Qt::CaseInsensitive) == 0) s = QStringLiteral("AR");
    else if (s.compare(QLatin1String("c4"), Qt::CaseInsensitive) == 0) s = QStringLiteral("C4");
    out << (s.isEmpty() ? labels[i] : s);
  }
  if (out.removeDuplicates() > 0) return labels;  // nothing tells them apart: keep the full names
  return out;
}

widgets::DriftData readDriftRun(const QString& path) {
  const gpu::DriftResult r = gpu::readDriftRun(toPath(path));
  const gpu::DriftSettings& s = r.settings;
  widgets::DriftData d;
  d.path = path;
  d.denseDir = qs(s.dense.string());
  d.promptsFile = qs(s.prompts.string());
  d.activation = qs(r.activation);
  d.prompts = r.prompts;
  d.steps = s.steps;
  d.layers = r.layers;
  d.plateauFraction = r.plateauFraction;
  d.seconds = r.seconds;
  d.temperature = s.decoding.temperature;
  d.topK = s.decoding.topK;
  d.topP = s.decoding.topP;
  d.seed = static_cast<qint64>(s.seed);
  d.decoding = qs(s.decoding.describe());
  d.activationSparsity = s.activationSparsity;
  d.activationThresholds = qs(s.activationThresholds.string());
  d.activationThresholdsRunId = qs(r.activationThresholdsRunId);
  for (const auto& line : r.warnings) d.warnings << qs(line);
  for (const auto& line : r.notes) d.notes << qs(line);
  for (const gpu::DriftMode mode : s.modes) d.modes << QString::fromLatin1(gpu::driftModeName(mode));

  QStringList names;
  for (const gpu::DriftModelResult& m : r.models) names << qs(m.label);
  const QStringList shortNames = distinguishingLabels(names);
  for (std::size_t k = 0; k < r.models.size(); ++k) {
    widgets::DriftModelData m;
    m.label = names[qsizetype(k)];
    m.shortLabel = shortNames[qsizetype(k)];
    m.dir = qs(r.models[k].dir.string());
    for (const gpu::DriftCurves& curves : r.models[k].curves) {
      const drift::DriftSummary& sum = curves.summary;
      widgets::DriftCurveSet c;
      c.ratio = toDoubles(curves.ratio);
      c.plateau = toDoubles(sum.plateau);
      c.step90 = QVector<int>(sum.step90.begin(), sum.step90.end());
      c.median = toDoubles(sum.median);
      c.q1 = toDoubles(sum.q1);
      c.q3 = toDoubles(sum.q3);
      c.medianPlateau = drift::quantile(sum.plateau, 0.5);
      for (int step : c.step90) {
        if (step < 0) continue;
        c.step90Min = c.step90Min < 0 ? step : std::min(c.step90Min, step);
        c.step90Max = std::max(c.step90Max, step);
      }
      m.curves.push_back(std::move(c));
    }
    d.models.push_back(std::move(m));
  }
  return d;
}

DriftInputs findDriftInputs(const QString& dir) {
  DriftInputs out;
  out.dir = dir;
  if (!QFileInfo(dir).isDir()) return out;
  for (const rs::WorkspaceEntry& e : rs::listWorkspace(toPath(dir))) {
    if (!e.summary || e.partial || e.summary->kind != "drift" || !e.summary->complete()) continue;
    widgets::DriftRunChoice c;
    c.path = fromPath(e.path);
    c.created = qs(e.summary->provenance.createdUtc);
    try {
      const gpu::DriftResult r = gpu::readDriftRun(e.path);
      QStringList labels;
      for (const gpu::DriftModelResult& m : r.models) labels << qs(m.label);
      c.description = QStringLiteral("%1, %2 steps, %3 prompts")
                          .arg(labels.join(QStringLiteral(" vs ")))
                          .arg(r.settings.steps)
                          .arg(r.prompts);
      if (r.settings.activationSparsity > 0)
        c.description += QStringLiteral(", ") +
                         widgets::activationSparsityText(r.settings.activationSparsity,
                                                         qs(r.settings.activationThresholds.string()));
    } catch (const std::exception&) {
      continue;  // not a usable drift run: not offered (opening it by hand says why)
    }
    out.runs.push_back(c);
  }
  std::stable_sort(out.runs.begin(), out.runs.end(),
                   [](const widgets::DriftRunChoice& a, const widgets::DriftRunChoice& b) { return a.created > b.created; });
  const QDir pruned(QDir(dir).filePath(QStringLiteral("pruned")));
  if (pruned.exists())
    for (const QString& sub : pruned.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
      if (QFileInfo::exists(pruned.filePath(sub + QStringLiteral("/config.json")))) out.prunedDirs << pruned.filePath(sub);
  out.calibrationRuns = findCalibrationRuns(dir);
  return out;
}

}  // namespace sdw::app
