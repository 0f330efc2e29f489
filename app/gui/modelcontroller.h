#pragma once
// Owns the loaded model and its tokenizer for the Model panel: loads a
// checkpoint as a job ("Load model", progress in bytes, cancellable: the
// previous model stays) and generates as a job ("Generate", progress in
// tokens) whose decoded text reaches the panel in coalesced chunks (the
// job's channel, at most every 30 ms).
//
// Threading: the model and tokenizer are only touched inside jobs. A
// generation keeps its own reference to the model it started with, so a load
// finishing meanwhile swaps the current model without disturbing it. One
// generation at a time.
//
// Run-time activation sparsity is a load option: p_x with each token's top-k,
// or with thresholds set from a calibration run's activation samples (read
// inside the load job, gpu::applyActivationSparsity, as sdw-cli generate
// --activation-thresholds does). The workspace's calibration runs are listed
// for the panel's picker (setWorkspace).

#include "app/jobmanager.h"
#include "widgets/modelpanel.h"

#include <QObject>
#include <QPointer>

#include <memory>

namespace sdw::app {

struct LoadedModel;   // model + tokenizer + their display summary

// The embedded sample model: $SDW_SAMPLES_DIR/model/brown-llama, else
// samples/ next to the build tree or install, else the source tree's.
QString sampleModelDir();

class ModelController : public QObject {
  Q_OBJECT
 public:
  explicit ModelController(JobManager* jobs, QObject* parent = nullptr);

  // Connects a panel both ways and tells it about CUDA and the sample folder.
  void attach(widgets::ModelPanel* panel);

  // Starts a load job and returns its id. A load already running is
  // cancelled and its result dropped. `linear` is the decode engine's
  // ("cublas", "dense", "sparse"); sparse needs the folder's model.sdwsparse,
  // without one the model loads with cuBLAS and the log says so.
  // `activationSparsity` is the run-time activation sparsity p_x in [0, 1)
  // (gpu::LoadOptions::activationSparsity; > 0: decoding runs the eager
  // forward pass). With `activationThresholds`, a calibration run, the kept
  // entries are those above the thresholds its activation samples set at
  // p_x (gpu::LoadOptions::activationThresholds) instead of each token's
  // top-k; a run without samples, or of another model, fails the load with
  // its error (the previous model stays).
  JobId load(const QString& dir, const QString& device = QStringLiteral("cpu"),
             const QString& dtype = QStringLiteral("float32"), const QString& linear = QStringLiteral("cublas"),
             double activationSparsity = 0, const QString& activationThresholds = QString());
  void cancelLoad();
  // Lists the calibration runs of `dir` for the thresholds picker (a job).
  JobId setWorkspace(const QString& dir);
  // Starts a generation job; 0 (with generationEnded carrying the reason)
  // when there is no model, no tokenizer, or a generation is running.
  JobId generate(const widgets::GenerateSettings& settings);
  void stop();

  bool hasModel() const { return current_ != nullptr; }
  QString modelDir() const;
  widgets::ModelSummary summary() const;
  bool isLoading() const { return load_.busy(); }
  bool isGenerating() const { return generate_.busy(); }
  JobId loadJob() const { return load_.id(); }
  JobId generateJob() const { return generate_.id(); }
  JobId scanJob() const { return scan_.id(); }
  // How often streamed text is handed to the panel (default 30 ms), from the
  // next generation on.
  void setChunkInterval(int msecs) { chunkMs_ = msecs; }

 Q_SIGNALS:
  void loadStarted(const QString& dir);
  void loadProgress(double fraction, const QString& text);
  void modelLoaded(const sdw::widgets::ModelSummary& summary, const QVector<sdw::widgets::ModuleRow>& modules);
  // A load that did not replace the model: failed or cancelled.
  void loadEnded(const QString& message, bool isError);
  void calibrationRunsFound(const QVector<sdw::widgets::RunChoice>& runs);
  void generationStarted(const QString& promptText);
  void textStreamed(const QString& chunk, int tokens, double tokensPerSecond);
  void generationEnded(const QString& outcome, bool isError);
  void info(const QString& message);
  void error(const QString& message);

 private:
  QPointer<JobManager> jobs_;
  std::shared_ptr<LoadedModel> current_;
  JobSlot load_;
  JobSlot generate_;
  JobSlot scan_;
  int chunkMs_ = 30;
};

}  // namespace sdw::app
