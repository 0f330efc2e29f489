#pragma once
// The Analysis panel. Epsilon tab: pick a decode-time reference run and two
// calibration runs (fixed text "C4" and AR) and k, ask for an analysis, or
// open an existing analysis run; the result shows in an EpsilonPage, and a
// second analysis can be opened beside it (Compare…). Drift tab: a
// DriftPage (activation drift by decode step). Activations tab: an
// ActivationsPage (the activation samples of calibration runs). Display
// only: analyses run elsewhere and arrive as EpsilonData.

#include "widgets/epsilondata.h"
#include "widgets/runchoice.h"

#include <QString>
#include <QVector>
#include <QWidget>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTabWidget;

namespace sdw::widgets {

class ActivationsPage;
class DriftPage;
class EpsilonPage;

class AnalysisPanel : public QWidget {
  Q_OBJECT
 public:
  enum Slot { Main = 0, Comparison = 1 };
  explicit AnalysisPanel(QWidget* parent = nullptr);

  void setWorkspace(const QString& dir);  // where the file dialogs start
  void setCalibrationRuns(const QVector<RunChoice>& runs);
  void setRunPaths(const QString& reference, const QString& fixedText, const QString& ar);
  void setK(int k);
  void setDevice(const QString& device);  // "cpu" / "cuda"
  void setCudaAvailable(bool available, const QString& reason);

  QString referencePath() const;
  QString fixedTextPath() const;
  QString arPath() const;
  int k() const;
  QString device() const;

  void beginAnalysis(const QString& what);
  void setProgress(double fraction, const QString& text);  // fraction < 0: unknown
  void endAnalysis(const QString& message, bool isError);
  void showAnalysis(const EpsilonData& data, int slot = Main);
  void closeComparison();

  EpsilonPage* page(int slot = Main) const;
  bool isComparing() const;
  bool isBusy() const { return busy_; }
  QString statusText() const;
  QTabWidget* innerTabs() const { return tabs_; }
  DriftPage* driftPage() const { return drift_; }
  ActivationsPage* activationsPage() const { return activations_; }

 Q_SIGNALS:
  void analyzeRequested(const QString& reference, const QString& fixedText, const QString& ar, int k,
                        const QString& device);
  void openRequested(const QString& path, int slot);
  void cancelRequested();

 private:
  QWidget* buildInputs();
  void chooseFile(QComboBox* into);
  void chooseAnalysis(int slot);
  void setStatus(const QString& text, bool isError);
  void updateButtons();

  QString workspace_;
  QComboBox* reference_ = nullptr;
  QComboBox* fixed_ = nullptr;
  QComboBox* ar_ = nullptr;
  QSpinBox* k_ = nullptr;
  QComboBox* device_ = nullptr;
  QPushButton* analyze_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* open_ = nullptr;
  QPushButton* compare_ = nullptr;
  QPushButton* closeCompare_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QSplitter* split_ = nullptr;
  EpsilonPage* pages_[2] = {nullptr, nullptr};
  DriftPage* drift_ = nullptr;
  ActivationsPage* activations_ = nullptr;
  bool busy_ = false;
};

}  // namespace sdw::widgets

