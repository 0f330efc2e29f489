#include "app/gui/workspace.h"

#include "core/runstore.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <nlohmann/json.hpp>

namespace sdw::app {

std::filesystem::path toPath(const QString& s) { return std::filesystem::path(QFile::encodeName(s).toStdString()); }
QString fromPath(const std::filesystem::path& p) { return QFile::decodeName(QByteArray::fromStdString(p.string())); }

namespace {

QString provenanceHtml(const runstore::RunSummary& s) {
  const Provenance& p = s.provenance;
  QString html = QStringLiteral("<h3>%1</h3><table cellspacing=2>").arg(qs(s.path.filename().string()).toHtmlEscaped());
  auto row = [&html](const QString& k, const QString& v) {
    html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(k, v.toHtmlEscaped());
  };
  row(QStringLiteral("Kind"), qs(s.kind));
  row(QStringLiteral("Status"), qs(s.status));
  row(QStringLiteral("Run id"), qs(s.runId));
  row(QStringLiteral("Schema"), QString::number(s.schemaVersion));
  row(QStringLiteral("Checkpoints"), QString::number(s.checkpoint));
  row(QStringLiteral("Tool"), qs(p.toolName + " " + p.toolVersion));
  row(QStringLiteral("Host"), qs(p.host));
  row(QStringLiteral("OS"), qs(p.os));
  row(QStringLiteral("GPU"), qs(p.gpu));
  row(QStringLiteral("Model"), qs(p.modelId));
  row(QStringLiteral("Created"), qs(p.createdUtc));
  row(QStringLiteral("Updated"), qs(p.updatedUtc));
  row(QStringLiteral("Finished"), p.finishedUtc.empty() ? QStringLiteral("(not finished)") : qs(p.finishedUtc));
  html += QStringLiteral("</table>");
  if (!p.modelFiles.empty()) {
    html += QStringLiteral("<p><b>Model files</b></p><table cellspacing=2>");
    for (const auto& f : p.modelFiles)
      html += QStringLiteral("<tr><td>%1</td><td align=right>%2 B</td><td><tt>%3…</tt></td></tr>")
                  .arg(qs(f.path).toHtmlEscaped())
                  .arg(f.bytes)
                  .arg(qs(f.sha256.substr(0, 16)));
    html += QStringLiteral("</table>");
  }
  QString settings = qs(p.settingsJson);
  try {
    settings = qs(nlohmann::json::parse(p.settingsJson).dump(2));
  } catch (const std::exception&) {
    // shown as stored
  }
  html += QStringLiteral("<p><b>Settings</b></p><pre>%1</pre>").arg(settings.toHtmlEscaped());
  return html;
}

sdw::widgets::RunRow toRow(const std::filesystem::path& path, const runstore::RunSummary* s,
                           const std::string& error, bool partial) {
  sdw::widgets::RunRow r;
  r.path = qs(path.string());
  r.fileName = qs(path.filename().string());
  if (s) {
    r.kind = qs(s->kind);
    r.status = partial ? QStringLiteral("partial") : qs(s->status);
    r.model = qs(s->provenance.modelId);
    r.created = qs(s->provenance.createdUtc);
    r.detailsHtml = provenanceHtml(*s);
  } else {
    r.status = QStringLiteral("invalid");
    r.error = qs(error);
  }
  return r;
}

}  // namespace

WorkspaceScan scanWorkspace(const QString& dir, const sdw::ProgressFn& progress) {
  WorkspaceScan scan;
  scan.dir = dir;
  const auto entries = runstore::listWorkspace(dir.toStdString());
  const double total = static_cast<double>(entries.size());
  double done = 0;
  reportOrThrow(progress, {done, total, "files", "listing"});
  for (const auto& e : entries) {
    scan.rows.push_back(toRow(e.path, e.summary ? &*e.summary : nullptr, e.error, e.partial));
    reportOrThrow(progress, {++done, total, "files", e.path.filename().string()});
  }
  return scan;
}

sdw::widgets::RunRow inspectRunRow(const QString& path) {
  const std::filesystem::path p = path.toStdString();
  try {
    const runstore::RunSummary s = runstore::inspectRun(p);
    return toRow(p, &s, {}, p.extension() == ".partial");
  } catch (const std::exception& e) {
    return toRow(p, nullptr, e.what(), false);
  }
}

sdw::widgets::RunChoice readCalibrationChoice(const std::filesystem::path& run) {
  const runstore::RunReader r = runstore::RunReader::open(run);
  sdw::widgets::RunChoice c;
  c.path = fromPath(run);
  c.status = qs(r.summary().status);
  if (r.hasAttribute("/calibration", "source")) c.source = qs(r.readStringAttribute("/calibration", "source"));
  if (r.hasAttribute("/calibration", "tokens_collected")) c.tokens = r.readIntAttribute("/calibration", "tokens_collected");
  if (r.exists("/calibration/samples") && r.hasAttribute("/calibration/samples", "rows"))
    c.sampleRows = r.readIntAttribute("/calibration/samples", "rows");
  return c;
}

QVector<sdw::widgets::RunChoice> findCalibrationRuns(const QString& dir) {
  QVector<sdw::widgets::RunChoice> out;
  if (!QFileInfo(dir).isDir()) return out;
  for (const runstore::WorkspaceEntry& e : runstore::listWorkspace(toPath(dir))) {
    if (!e.summary || e.partial || e.summary->kind != "calibration") continue;
    try {
      out.push_back(readCalibrationChoice(e.path));
    } catch (const std::exception&) {
      // unreadable runs are the browser's business; they are simply not offered
    }
  }
  return out;
}

bool isReferenceRun(const QString& path) {
  const QString n = QFileInfo(path).fileName();
  return n.contains(QLatin1String("reference")) || n.contains(QLatin1String("heldout"));
}

QString sampleWorkspaceDir() {
  if (const QByteArray env = qgetenv("SDW_SAMPLES_DIR"); !env.isEmpty())
    return QDir(QString::fromLocal8Bit(env)).filePath(QStringLiteral("workspace"));
  // build/bin/sdw -> <source>/samples/workspace when run from the build tree
  const QDir exeDir(QCoreApplication::applicationDirPath());
  for (const QString& rel : {QStringLiteral("../../samples/workspace"), QStringLiteral("../share/sdw/samples/workspace")}) {
    const QString cand = QDir::cleanPath(exeDir.filePath(rel));
    if (QFileInfo(cand).isDir()) return cand;
  }
  return QStringLiteral(SDW_SOURCE_DIR "/samples/workspace");
}

}  // namespace sdw::app
