#pragma once
// The Pruning panel: turn a calibration run into a pruned model (method,
// pattern, layer order), watch it per layer, inspect the per-module results,
// and compare pruned models' quality and generations. Display only: the
// pruning and evaluation jobs run in app/gui/pruningcontroller.
//
// Left: the prune form (model, calibration runs to prune one after the
// other, method, pattern, order, SparseGPT damping and block size, DuoGPT's
// activation sparsity, device, output folder) and the progress (bar, elapsed / ETA, one bar per decoder
// layer). Right: the Modules tab (a pruning record's per-module table, live
// while a pruning runs) and the Quality tab (QualityPage).

#include "widgets/prunedata.h"
#include "widgets/qualitydialog.h"
#include "widgets/runchoice.h"

#include <QMetaType>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QCheckBox;
class QSpinBox;
class QTabWidget;
class QTableView;

namespace sdw::widgets {

class PruneLayerChart;
class PruneModuleModel;
class QualityPage;

// What the user chose: plain values, mirrored on gpu::PruneSettings.
struct PruneForm {
  QString model;
  QStringList calibrationRuns;  // pruned one after the other
  QString method = QStringLiteral("sparsegpt");  // "sparsegpt" | "wanda" | "magnitude" | "duogpt"
  QString pattern = QStringLiteral("2:4");       // "2:4" ... "16:32" | "unstructured50" | "col2:4" | "col4:8"
  QString order = QStringLiteral("parallel");    // "parallel" | "sequential" (duogpt: always sequential)
  double percdamp = 0.01;
  int blocksize = 128;
  // DuoGPT: the run-time activation sparsity p_x the pruned model decodes
  // with (each projection input keeps its largest 1 - p_x share).
  double activationSparsity = 0.5;
  QString device = QStringLiteral("cpu");
  // Parent of the pruned models: run r goes to
  // <outputDir>/<defaultPruneFolderName(method, pattern, r, activationSparsity)>.
  QString outputDir;
  // Also write <pruned>/compressed-tensors: the llm-compressor sparse format
  // (sparse-24-bitmask for 2:4, sparse-bitmask otherwise).
  bool exportCompressedTensors = false;
};

class PruningPanel : public QWidget {
  Q_OBJECT
 public:
  enum class Outcome { Complete, Cancelled, Failed };
  Q_ENUM(Outcome)

  explicit PruningPanel(QWidget* parent = nullptr);

  // ---- the prune form
  PruneForm form() const;
  void setForm(const PruneForm& f);
  void setSampleModel(const QString& dir);  // the model field's default
  void setModelDir(const QString& dir);     // e.g. the model loaded in the Model panel
  // Outputs default to <dir>/pruned; file dialogs start here.
  void setWorkspace(const QString& dir);
  // Calibration runs offered; runs checked before stay checked, else
  // `defaultChecked` is.
  void setCalibrationRuns(const QVector<RunChoice>& runs, const QString& defaultChecked);
  void setCheckedRuns(const QStringList& paths);
  // The folder each checked run is pruned into.
  QStringList outputFolders() const;
  void setCudaAvailable(bool available, const QString& reason);

  // ---- pruning records and the per-module table
  void setPruningRecords(const QVector<PruningRecordChoice>& records);
  void showRecord(const PruningRecordData& record);
  void showModulesError(const QString& message);

  // ---- a running job (pruning or evaluation): one at a time
  void beginJob(const QString& what);
  // A pruning of one calibration run starts: the table and the layer chart empty.
  void beginPruneRun(const QString& what, const QVector<int>& modulesPerLayer);
  void addModuleRow(const PruneModuleData& row);
  void setLayerState(int layer, const QString& stage);
  // fraction < 0: unknown; elapsed / eta in seconds (eta < 0: unknown).
  void setJobProgress(double fraction, const QString& text, double elapsed, double eta);
  void endJob(const QString& message, Outcome outcome);

  // ---- quality
  void setEvaluationRuns(const QStringList& paths);
  void showQuality(const QualityData& data);
  void showQualityError(const QString& message);
  void setEvaluationDefaults(const QString& text, const QString& prompts);
  // The Evaluate… dialog's starting values: the form's model as the dense
  // one, the checkpoints of the workspace's pruning records that exist.
  EvaluateForm evaluateDefaults() const;
  QStringList prunedCandidates() const;

  bool isBusy() const { return busy_; }
  QString statusText() const;
  QString timeText() const;
  QString modulesSummary() const;
  QString modulesError() const;
  double progressFraction() const;  // [0, 1]
  PruneModuleModel* moduleModel() const { return modules_; }
  QSortFilterProxyModel* moduleProxy() const { return proxy_; }
  QTableView* moduleTable() const { return table_; }
  PruneLayerChart* layerChart() const { return chart_; }
  QualityPage* qualityPage() const { return quality_; }
  QTabWidget* tabs() const { return tabs_; }
  const PruningRecordData& shownRecord() const { return record_; }
  // The Evaluate… dialog while it is open (nullptr otherwise).
  EvaluateDialog* evaluateDialog() const {
    return evaluateDialog_ && evaluateDialog_->isVisible() ? evaluateDialog_.data() : nullptr;
  }

 Q_SIGNALS:
  void pruneRequested(const sdw::widgets::PruneForm& form);
  void cancelRequested();
  void openRecordRequested(const QString& path);
  void openEvaluationRequested(const QString& path);
  void evaluateRequested(const sdw::widgets::EvaluateForm& form);

 private:
  QWidget* buildForm();
  QWidget* buildProgress();
  QWidget* buildModules();
  void addCalibrationRun(const RunChoice& c, bool checked);
  void updateOutputPreview();
  void updateButtons();
  // The fields the chosen method uses: SparseGPT's damping and block size
  // (SparseGPT, DuoGPT), DuoGPT's p_x, and the order DuoGPT fixes.
  void updateMethodFields();
  void setStatus(const QString& text, bool isError);
  void exportCsv(const QString& what, const QString& csv);
  void askEvaluate();

  QString workspace_;
  QString sampleModel_;
  QString evalText_, evalPrompts_;
  QLineEdit* model_ = nullptr;
  QListWidget* runs_ = nullptr;
  QComboBox* method_ = nullptr;
  QComboBox* pattern_ = nullptr;
  QComboBox* order_ = nullptr;
  QDoubleSpinBox* percdamp_ = nullptr;
  QSpinBox* blocksize_ = nullptr;
  QDoubleSpinBox* activationSparsity_ = nullptr;
  QCheckBox* exportCt_ = nullptr;
  QComboBox* device_ = nullptr;
  QLineEdit* output_ = nullptr;
  QLabel* outputPreview_ = nullptr;
  QPushButton* prune_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* time_ = nullptr;
  PruneLayerChart* chart_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QComboBox* records_ = nullptr;
  QPushButton* exportModules_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* modulesError_ = nullptr;
  PruneModuleModel* modules_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QualityPage* quality_ = nullptr;
  QPointer<EvaluateDialog> evaluateDialog_;
  QVector<RunChoice> calibrationChoices_;  // the workspace's: the dialog's activation thresholds picker
  QVector<PruningRecordChoice> recordChoices_;
  PruningRecordData record_;
  // While DuoGPT is chosen the order shows "sequential", disabled; the
  // user's own choice comes back when another method is chosen.
  bool orderForced_ = false;
  QString userOrder_;
  QString orderTip_;
  bool outputEdited_ = false;
  bool settingOutput_ = false;
  bool busy_ = false;
  bool cudaAvailable_ = false;
};

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::PruneForm)
