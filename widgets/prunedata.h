#pragma once
// What the Pruning panel displays: plain values built by the application
// from pruning records (run_kind "pruning") and evaluation runs (run_kind
// "evaluation"), docs/run-format.md. Everything computed (means, spreads)
// arrives ready; the widgets only draw and format it.

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

namespace sdw::widgets {

// One pruned projection: a row of /pruning/modules, or a row the engine
// reported while pruning.
struct PruneModuleData {
  QString module;  // "model.layers.0.self_attn.q_proj"
  int layer = 0;
  qint64 rows = 0, cols = 0;
  double loss = 0;
  double outputLoss = 0;
  double relOutputError = 0;
  double sparsity = 0;
  double percdampUsed = 0;
  int dampingSteps = 0;
  int deadInputs = 0;
  double seconds = 0;
  bool packed = false;
};

// A pruning record (the run file written next to, or for, a pruned checkpoint).
struct PruningRecordData {
  QString path;  // the record file
  QString method, pattern, order, device;
  double percdamp = 0;
  qint64 blocksize = 0;
  double activationSparsity = 0;  // DuoGPT's p_x; 0 for the other methods
  QString modelDir;
  QString calibrationRun;     // absolute path at pruning time
  QString calibrationSource;  // "fixed", "ar", ...
  qint64 calibrationTokens = 0;
  QString outDir, checkpoint, sparseFile;
  bool checkpointExists = false;  // on this machine, now
  double totalSeconds = 0;
  double recaptureSeconds = 0;
  QVector<PruneModuleData> modules;

  double meanRelError() const;  // over modules; 0 without any
  // "sparsegpt 2:4, parallel · calibration fixed, 20,000 tokens (calib-fixed) · 42 modules in 3.1 s · mean rel.
  // error 0.0123"; DuoGPT's p_x after the order ("duogpt 2:4, sequential, p_x 0.50 · ...").
  QString summaryLine() const;
};

// A pruning record offered in the record picker.
struct PruningRecordChoice {
  QString path;
  QString label;   // "sparsegpt 2:4 parallel, fixed"
  QString outDir;  // the pruned checkpoint folder
  bool checkpointExists = false;
};

// Mean and population std over seeds.
struct SeedSpread {
  double mean = 0, std = 0;
};

// One model of an evaluation run: row `index` of its datasets.
struct QualityModelData {
  QString label;  // "dense", then the pruned folders' names
  QString dir;
  bool dense = false;
  double pplText = 0, pplDenseGen = 0;
  qint64 tokensText = 0, tokensDenseGen = 0;
  SeedSpread kl, agreement, firstDivergence;
  int seeds = 0;
};

struct SideBySideData {
  QString promptId;
  QString prompt;
  QStringList texts;  // one per model, in QualityData::models order
};

struct QualityData {
  QString path;  // the evaluation run
  QString denseDir, textFile, promptsFile;
  int prompts = 0, windows = 0, maxNewTokens = 0;
  double temperature = 0;  // the on-policy decoding, as recorded
  int topK = 0;
  double topP = 1.0;
  QString decoding;        // in words: "sampled, T=1.0, top-k off, top-p 1.0" or "greedy"
  // Run-time activation sparsity p_x of the compared (pruned) models; the
  // dense reference stays dense. With a calibration run the kept entries are
  // those above its thresholds (as recorded, and the run's id), else each
  // token's top-k.
  double activationSparsity = 0;
  QString activationThresholds;
  QString activationThresholdsRunId;
  // Recorded by the engine (core/decoding_checks.h): a pruned model whose
  // calibration decoded otherwise, or decoded these prompts; what each model
  // was calibrated on.
  QStringList warnings, notes;
  double seconds = 0;
  QVector<QualityModelData> models;  // [0] dense
  QVector<SideBySideData> sideBySide;

  // "eval-sample.sdw.h5 · 3 models, 3 seeds, 8 prompts, 32 new tokens, T = 0.8"; with p_x > 0
  // " · compared models at activation sparsity p_x 0.50 (dense reference dense)" after it
  // ("p_x 0.50 (thresholds: calib-fixed; dense reference dense)" with thresholds).
  QString summaryLine() const;
};

// The default folder name of a pruned model: <method><pattern>-<run stem>,
// the pattern without ':' ("sparsegpt24-calib-fixed"); DuoGPT's p_x in
// percent after the pattern ("duogpt24-px50-calib-fixed").
QString defaultPruneFolderName(const QString& method, const QString& pattern, const QString& calibrationRun,
                               double activationSparsity = 0);
// "p_x 0.50": an activation sparsity as the panels show it.
QString activationSparsityText(double p);
// With thresholds from a calibration run (gpu/activation_thresholds.h):
// "p_x 0.50 (thresholds: calib-fixed)", the run's file name without
// ".sdw.h5"; "p_x 0.50" when `thresholdsRun` is empty (each token's top-k).
QString activationSparsityText(double p, const QString& thresholdsRun);
// A run file's name without ".sdw.h5".
QString runStem(const QString& path);

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::PruneModuleData)
Q_DECLARE_METATYPE(sdw::widgets::PruningRecordData)
Q_DECLARE_METATYPE(sdw::widgets::QualityData)
