#include "app/gui/driftrun.h"

#include "app/gui/workspace.h"
#include "core/decoding.h"
#include "core/drift.h"
#include "core/runstore.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace sdw::app {

namespace {

namespace rs = sdw::runstore;
namespace fs = std::filesystem;


[[noreturn]] void fail(const QString& path, const QString& why) {
  throw std::runtime_error(QStringLiteral("%1: %2").arg(QFileInfo(path).fileName(), why).toStdString());
}

QVector<double> toDoubles(const std::vector<double>& v, std::size_t first, std::size_t n) {
  return QVector<double>(v.begin() + static_cast<std::ptrdiff_t>(first),
                         v.begin() + static_cast<std::ptrdiff_t>(first + n));
}

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
  const rs::RunReader r = rs::RunReader::open(toPath(path));
  if (r.kind() != "drift") fail(path, QStringLiteral("not a drift run (run kind \"%1\")").arg(qs(r.kind())));
  if (!r.exists("/drift")) fail(path, QStringLiteral("no /drift group"));
  widgets::DriftData d;
  d.path = path;
  const auto str = [&](const char* name) {
    return r.hasAttribute("/drift", name) ? qs(r.readStringAttribute("/drift", name)) : QString();
  };
  d.denseDir = str("dense_dir");
  d.promptsFile = str("prompts_file");
  d.activation = str("activation");
  d.prompts = static_cast<int>(r.readIntAttribute("/drift", "prompts"));
  d.steps = static_cast<int>(r.readIntAttribute("/drift", "steps"));
  d.layers = static_cast<int>(r.readIntAttribute("/drift", "layers"));
  if (r.hasAttribute("/drift", "plateau_fraction"))
    d.plateauFraction = r.readDoubleAttribute("/drift", "plateau_fraction");
  if (r.hasAttribute("/drift", "seconds")) d.seconds = r.readDoubleAttribute("/drift", "seconds");
  // Runs written before the decoding was recorded decoded greedily.
  if (r.hasAttribute("/drift", "temperature")) d.temperature = r.readDoubleAttribute("/drift", "temperature");
  if (r.hasAttribute("/drift", "top_k")) d.topK = static_cast<int>(r.readIntAttribute("/drift", "top_k"));
  if (r.hasAttribute("/drift", "top_p")) d.topP = r.readDoubleAttribute("/drift", "top_p");
  if (r.hasAttribute("/drift", "seed")) d.seed = r.readIntAttribute("/drift", "seed");
  d.decoding = qs(Decoding{d.temperature, d.topK, d.topP}.describe());
  for (const char* name : {"warnings", "notes"}) {
    const std::string ds = std::string("/drift/") + name;
    if (!r.exists(ds)) continue;
    QStringList& lines = std::string(name) == "warnings" ? d.warnings : d.notes;
    for (const auto& line : r.readStrings(ds)) lines << qs(line);
  }
  if (d.steps < 1 || d.layers < 1) fail(path, QStringLiteral("steps and layers must be positive"));

  const std::vector<std::string> labels = r.readStrings("/drift/pruned_labels");
  const std::vector<std::string> dirs =
      r.exists("/drift/pruned_dirs") ? r.readStrings("/drift/pruned_dirs") : std::vector<std::string>{};
  const std::size_t K = labels.size();
  if (K == 0) fail(path, QStringLiteral("no pruned model"));
  QStringList names;
  for (const auto& l : labels) names << qs(l);
  const QStringList shortNames = distinguishingLabels(names);
  for (std::size_t k = 0; k < K; ++k) {
    widgets::DriftModelData m;
    m.label = names[qsizetype(k)];
    m.shortLabel = shortNames[qsizetype(k)];
    m.dir = k < dirs.size() ? qs(dirs[k]) : QString();
    d.models.push_back(m);
  }

  const auto T = static_cast<std::size_t>(d.steps);
  const auto L = static_cast<std::size_t>(d.layers);
  for (const char* mode : {"own", "shared"}) {
    const std::string g = std::string("/drift/") + mode;
    if (!r.exists(g)) continue;
    const auto expect = [&](const std::string& name, std::vector<hsize_t> shape) {
      const auto s = r.shape(g + "/" + name);
      if (s != shape)
        fail(path, QStringLiteral("%1/%2 has the wrong shape").arg(qs(g), qs(name)));
    };
    const hsize_t Kh = K, Th = T, Lh = L;
    expect("ratio", {Kh, Th, Lh});
    expect("plateau", {Kh, Lh});
    expect("step90", {Kh, Lh});
    for (const char* q : {"median", "q1", "q3"}) expect(q, {Kh, Th});
    const auto ratio = r.read<double>(g + "/ratio").data;
    const auto plateau = r.read<double>(g + "/plateau").data;
    const auto step90 = r.read<std::int64_t>(g + "/step90").data;
    const auto median = r.read<double>(g + "/median").data;
    const auto q1 = r.read<double>(g + "/q1").data;
    const auto q3 = r.read<double>(g + "/q3").data;
    d.modes << QString::fromLatin1(mode);
    for (std::size_t k = 0; k < K; ++k) {
      widgets::DriftCurveSet c;
      c.ratio = toDoubles(ratio, k * T * L, T * L);
      c.plateau = toDoubles(plateau, k * L, L);
      for (std::size_t l = 0; l < L; ++l) c.step90 << static_cast<int>(step90[k * L + l]);
      c.median = toDoubles(median, k * T, T);
      c.q1 = toDoubles(q1, k * T, T);
      c.q3 = toDoubles(q3, k * T, T);
      c.medianPlateau = drift::quantile(std::vector<double>(c.plateau.begin(), c.plateau.end()), 0.5);
      for (int s : c.step90) {
        if (s < 0) continue;
        c.step90Min = c.step90Min < 0 ? s : std::min(c.step90Min, s);
        c.step90Max = std::max(c.step90Max, s);
      }
      d.models[qsizetype(k)].curves.push_back(std::move(c));
    }
  }
  if (d.modes.isEmpty()) fail(path, QStringLiteral("no drift curves (neither /drift/own nor /drift/shared)"));
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
      const rs::RunReader r = rs::RunReader::open(e.path);
      QStringList labels;
      for (const auto& l : r.readStrings("/drift/pruned_labels")) labels << qs(l);
      c.description = QStringLiteral("%1, %2 steps, %3 prompts")
                          .arg(labels.join(QStringLiteral(" vs ")))
                          .arg(r.readIntAttribute("/drift", "steps"))
                          .arg(r.readIntAttribute("/drift", "prompts"));
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
  return out;
}

}  // namespace sdw::app
