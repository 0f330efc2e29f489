#pragma once
// The "Evaluate…" dialog of the Pruning panel: the dense model, the pruned
// checkpoints to compare (checkable; folders can be added), the held-out
// text and prompts, seeds, lengths, the compared models' run-time activation
// sparsity (each token's top-k, or thresholds from a calibration run) and
// device of a quality evaluation (gpu/evaluation.h). It only edits an
// EvaluateForm.

#include "core/decoding.h"
#include "widgets/runchoice.h"

#include <QDialog>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QListWidget;
class QSpinBox;

namespace sdw::widgets {

class ActivationSelection;

// Mirrors gpu::EvaluationSettings in plain values.
struct EvaluateForm {
  QString dense;
  QStringList models;  // pruned checkpoint folders
  QString text;        // held-out corpus
  QString prompts;     // held-out prompts (.jsonl)
  QString seeds = QStringLiteral("0,1,2");
  int maxNewTokens = 32;
  int maxPrompts = 8;  // 0: every prompt
  int windows = 8;
  int window = 128;
  int sideBySide = 3;
  // On-policy decoding (and the dense generations): the workbench's protocol
  // by default (core/decoding.h); temperature 0 is greedy.
  double temperature = kDefaultDecoding.temperature;
  int topK = kDefaultDecoding.topK;
  double topP = kDefaultDecoding.topP;
  // Run-time activation sparsity p_x of every compared model (each
  // projection input keeps its largest 1 - p_x share); the dense reference
  // stays dense. 0: dense inputs. With a calibration run the kept entries
  // are those above the thresholds its activation samples set at p_x
  // (EvaluationSettings::activationThresholds); "": each token's top-k.
  double activationSparsity = 0;
  QString activationThresholds;
  QString device = QStringLiteral("cpu");
  QString output;  // the evaluation run; "" : a new name in the workspace

  // "0, 1,2" -> {0, 1, 2}; empty when a part is not a number.
  QList<quint64> seedList() const;
};

class EvaluateDialog : public QDialog {
  Q_OBJECT
 public:
  // `candidates`: pruned folders offered; those in form.models start checked.
  EvaluateDialog(const EvaluateForm& form, const QStringList& candidates, bool cudaAvailable,
                 QWidget* parent = nullptr);
  EvaluateForm form() const;
  // Fills every field (the pruned list becomes form.models, all checked).
  void setForm(const EvaluateForm& form);
  // The workspace's calibration runs: the activation thresholds picker.
  void setCalibrationRuns(const QVector<RunChoice>& runs);
  ActivationSelection* activationSelection() const { return activationSelection_; }

 private:
  void addFolder(const QString& dir, bool checked);

  EvaluateForm base_;
  QLineEdit* dense_ = nullptr;
  QListWidget* models_ = nullptr;
  QLineEdit* text_ = nullptr;
  QLineEdit* prompts_ = nullptr;
  QLineEdit* seeds_ = nullptr;
  QSpinBox* maxNew_ = nullptr;
  QSpinBox* maxPrompts_ = nullptr;
  QSpinBox* windows_ = nullptr;
  QSpinBox* window_ = nullptr;
  QSpinBox* sideBySide_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QSpinBox* topK_ = nullptr;
  QDoubleSpinBox* topP_ = nullptr;
  QDoubleSpinBox* activationSparsity_ = nullptr;
  ActivationSelection* activationSelection_ = nullptr;
  QComboBox* device_ = nullptr;
};

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::EvaluateForm)
