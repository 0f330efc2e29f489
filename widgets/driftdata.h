#pragma once
// What the drift page displays: plain values read by the application from a
// drift run (docs/run-format.md "Drift runs"). Curves, plateaus, step90 and
// the across-layer median and quartiles arrive as stored; the few summary
// numbers (median plateau, step90 range) are computed by the reader. The
// widgets only draw and format them.

#include "core/decoding.h"

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include <limits>

namespace sdw::widgets {

// One model in one mode: T decode steps, L layers.
struct DriftCurveSet {
  QVector<double> ratio;     // [T, L] row-major; NaN where no prompt reached the step
  QVector<double> plateau;   // [L]
  QVector<int> step90;       // [L]; -1: no plateau
  QVector<double> median, q1, q3;  // [T], across layers
  // Summary across layers (reader): median of the plateaus, range of step90
  // over the layers that have one (-1 when none).
  double medianPlateau = std::numeric_limits<double>::quiet_NaN();
  int step90Min = -1;
  int step90Max = -1;
};

struct DriftModelData {
  QString label;       // as stored: the checkpoint folder's name ("sgpt24-fixed")
  QString shortLabel;  // what tells the models apart ("fixed", "AR")
  QString dir;
  QVector<DriftCurveSet> curves;  // parallel to DriftData::modes
};

struct DriftData {
  QString path;         // the run file
  QString denseDir;
  QString promptsFile;
  QString activation;
  int prompts = 0;
  int steps = 0;        // T
  int layers = 0;       // L
  double plateauFraction = 0.9;
  double seconds = 0;
  // How the trajectories were decoded (runs written before it was recorded
  // were greedy), the seed, and the engine's warnings and notes.
  double temperature = 0;
  int topK = 0;
  double topP = 1.0;
  qint64 seed = 0;
  QString decoding;  // in words: "sampled, T=1.0, top-k off, top-p 1.0" or "greedy"
  // Run-time activation sparsity p_x of the pruned models (the dense model
  // stays dense); 0 for runs without it. With thresholds: the calibration run
  // they were set from (as recorded) and its run id; "" for each token's top-k.
  double activationSparsity = 0;
  QString activationThresholds;
  QString activationThresholdsRunId;
  QStringList warnings, notes;
  QStringList modes;    // "own", "shared": only those stored
  QVector<DriftModelData> models;

  bool isEmpty() const { return models.isEmpty() || steps < 1 || layers < 1; }
  int modeIndex(const QString& mode) const { return static_cast<int>(modes.indexOf(mode)); }
  // nullptr when the model or the mode is absent.
  const DriftCurveSet* curves(int model, int mode) const;
  double ratio(int model, int mode, int step, int layer) const;
  // "own trajectory: median plateau 0.21 (fixed) vs 0.17 (AR); 90% of the
  // plateau reached within 2–6 steps"; `models` are the model indices shown.
  QString summaryLine(int mode, const QVector<int>& models) const;
};

// A drift run offered in the page's run picker.
struct DriftRunChoice {
  QString path;
  QString description;  // "sgpt24-fixed vs sgpt24-ar, 128 steps, 40 prompts"
  QString created;      // UTC, ISO 8601: newest first
};

// A new drift analysis as the page asks for it (gpu::DriftSettings in Qt types).
struct DriftRequest {
  QString dense;
  QStringList pruned;   // one or two checkpoint folders
  QString prompts;      // .jsonl
  int steps = 128;
  int maxPrompts = 0;   // 0: all
  QStringList modes = {QStringLiteral("own"), QStringLiteral("shared")};
  // The trajectories' decoding: the workbench's protocol by default
  // (core/decoding.h); temperature 0 is greedy. Prompt i: seed * 1000003 + i.
  double temperature = kDefaultDecoding.temperature;
  int topK = kDefaultDecoding.topK;
  double topP = kDefaultDecoding.topP;
  quint64 seed = 0;
  QString device = QStringLiteral("cpu");
  // Run-time activation sparsity p_x of the pruned models (DriftSettings::activationSparsity),
  // and a calibration run whose samples set thresholds instead of each
  // token's top-k (DriftSettings::activationThresholds; "" : top-k).
  double activationSparsity = 0;
  QString activationThresholds;
};

// "own trajectory", "shared trajectory".
QString driftModeTitle(const QString& mode);
// Number formatting shared by the table, the tool tips and the summary.
QString formatDrift(double v);

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::DriftData)
Q_DECLARE_METATYPE(sdw::widgets::DriftRunChoice)
Q_DECLARE_METATYPE(sdw::widgets::DriftRequest)
