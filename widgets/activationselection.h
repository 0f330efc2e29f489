#pragma once
// How run-time activation sparsity picks the entries each projection input
// keeps, beside a panel's p_x field: each token's top-k (its largest 1 - p_x
// share), or fixed per-layer, per-input thresholds set from a calibration
// run's activation samples (TEAL; gpu/activation_thresholds.h, as sdw-cli's
// --activation-thresholds RUN). Two combos side by side: the selection and
// the calibration run (the workspace's, listed by the controller; runs
// without samples are listed as such). The run picker is enabled only for
// thresholds at p_x > 0. Display only: the run is read where the model
// loads, in the controllers' jobs, and a run that cannot give thresholds
// fails there with its own error.

#include "widgets/runchoice.h"

#include <QString>
#include <QVector>
#include <QWidget>

class QComboBox;

namespace sdw::widgets {

class ActivationSelection : public QWidget {
  Q_OBJECT
 public:
  // Object names: <prefix>ActivationSelection (the selection) and
  // <prefix>ThresholdsRun (the run picker).
  explicit ActivationSelection(const QString& namePrefix, QWidget* parent = nullptr);

  // The workspace's calibration runs. With thresholds chosen their run stays
  // (listed by its file name when the workspace no longer has it); else the
  // run shown stays if it has activation samples, or the first run that has
  // them is shown. Without any run the thresholds choice is off and says why.
  void setRuns(const QVector<RunChoice>& runs);
  // The p_x of the field beside it: at 0 the run picker is off.
  void setSparsity(double p);

  bool thresholdsChosen() const;  // the selection says thresholds (whatever p_x)
  // The run the thresholds come from: "" for top-k or at p_x 0.
  QString thresholdsRun() const;
  // "": top-k per token; else thresholds from `run` (listed when it is not).
  void setThresholdsRun(const QString& run);

  QComboBox* selectionBox() const { return selection_; }
  QComboBox* runBox() const { return run_; }

 Q_SIGNALS:
  void changed();  // the selection or the run, by the user or a setter

 private:
  void addRun(const RunChoice& c);
  // The index of `path` in the run picker, added (known by its path only) when absent.
  int runIndex(const QString& path);
  void refresh();  // what is enabled, the tool tips

  QComboBox* selection_ = nullptr;
  QComboBox* run_ = nullptr;
  double sparsity_ = 0;
};

}  // namespace sdw::widgets
