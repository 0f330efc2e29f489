#pragma once
// What the Study panel displays: plain values built by the application from
// a study run (run_kind "study", docs/run-format.md) — the cells of the grid
// source x decoding x solver x pattern with mean and 95% confidence interval
// over the seeds, the epsilon cells, the two charts' bars and the summary in
// words. Everything is computed before it arrives (app/gui/studycontroller);
// the widgets only draw and format it.

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include <cmath>
#include <limits>

namespace sdw::widgets {

// A figure over the seeds: the interval is mean ± ci (Student's t, 95%).
struct StudyCi {
  double mean = std::numeric_limits<double>::quiet_NaN();
  double ci = 0;  // half width; 0 with one seed
  int n = 0;      // seeds that gave a value

  bool valid() const { return std::isfinite(mean); }
};

// One cell of the grid.
struct StudyCellData {
  QString source;    // "fixed", "ar", "cross-model"
  QString decoding;  // "greedy", "sampled", "t0.8"
  QString solver;    // "sparsegpt", "wanda", "magnitude"
  QString pattern;   // "2:4", "unstructured50"
  StudyCi kl, agreement, firstDivergence, pplDenseGen, pplText, meanRelError;
  int seeds = 0;  // seeds behind the cell
};

// Epsilon of one source against fixed text at one decoding.
struct StudyEpsilonData {
  QString source, decoding;
  StudyCi shareLower;   // share of modules where eps(source) < eps(fixed)
  StudyCi medianRatio;  // median over modules of eps(fixed) / eps(source)
};

// One series of a grouped bar chart: a value per group (NaN: no bar) and
// the half width of its interval (0: none drawn).
struct StudyBarSeries {
  QString name;      // legend: "AR · greedy"
  QString source;    // colour family
  int shade = 0;     // 0: the source's own colour, 1: lighter (the second decoding), ...
  QVector<double> values;
  QVector<double> ci;
  QStringList tips;  // hover text per group
};

struct StudyChartData {
  QStringList groups;  // tick labels along x
  QVector<StudyBarSeries> series;
  QString yLabel;
  QString xLabel;
  double reference = std::numeric_limits<double>::quiet_NaN();  // a horizontal guide line; NaN: none
  QString referenceLabel;
  double yMin = 0;  // the axis floor; NaN: fitted to the bars and their intervals
  double yMax = std::numeric_limits<double>::quiet_NaN();  // NaN: fitted to the bars and their intervals
  QString csv;  // what "Export CSV" writes for this chart

  bool isEmpty() const { return series.isEmpty() || groups.isEmpty(); }
};

struct StudyData {
  QString path;          // the study run file
  QString settingsText;  // the settings in words
  QString settingsTip;   // the same with full paths
  QString summary;       // the finding in words
  QVector<StudyCellData> cells;
  QVector<StudyEpsilonData> epsilon;
  StudyChartData klChart;       // on-policy KL per solver/pattern, a bar per source and decoding
  StudyChartData epsilonChart;  // share of modules where a source beats fixed text, per decoding
  int seeds = 0;
  double seconds = 0;
  int stepsReused = -1;  // -1: not known (a file opened, not run)
  QString workDir;

  bool isEmpty() const { return cells.isEmpty(); }
};

// A new study as the page asks for it (gpu::StudySettings in Qt types).
struct StudyRequest {
  QString model;
  QString crossModel;   // empty: no cross-model source
  bool ar = true;       // the model's own decoding as a source (fixed text always is one)
  bool crossSource = false;
  QStringList decodings = {QStringLiteral("greedy"), QStringLiteral("sampled")};
  QStringList solvers = {QStringLiteral("sparsegpt")};
  QStringList patterns = {QStringLiteral("2:4")};
  QString seeds = QStringLiteral("0,1,2");
  qint64 tokens = 20000;
  QString device = QStringLiteral("cpu");
  QString out;
  // "More settings"
  qint64 referenceTokens = 10000;
  int maxNewTokens = 256;
  int epsilonK = 64;
  int evalMaxNewTokens = 64;
  int evalPrompts = 0;  // 0: all
  int evalWindows = 16;
  QString corpus, prompts, heldoutPrompts, heldoutText;
};

// Display names: "fixed text", "AR", "cross-model"; "SparseGPT", "Wanda",
// "DuoGPT", "magnitude"; "2:4", "50% unstructured". Unknown names pass through.
QString studySourceName(const QString& source);
QString studySolverName(const QString& solver);
QString studyPatternName(const QString& pattern);

// "mean ± ci" with `decimals`, the mean alone with one seed, "n/a" without a value.
QString formatStudyCi(const StudyCi& v, int decimals);

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::StudyData)
Q_DECLARE_METATYPE(sdw::widgets::StudyRequest)
