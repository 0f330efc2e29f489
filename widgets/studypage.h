#pragma once
// The Study panel: the fixed-text vs AR comparison as a grid (calibration
// source x decoding x solver x pattern x seed, gpu/study.h). A compact form
// runs a study as a job (Start, Cancel, a progress bar over the grid's
// steps; a second Start with the same output resumes from its work folder),
// Open… shows a study file; the result is a sortable table of the cells
// ("mean ± CI" over the seeds), a chart of on-policy KL per solver and
// pattern, a chart of the epsilon share against the 0.5 line, and the
// finding in words. Display only: studies are read, run and summarised in
// app/gui/studycontroller and arrive as StudyData.

#include "widgets/studydata.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QSplitter;
class QStackedWidget;
class QTableView;
class QToolButton;

namespace sdw::widgets {

class StudyCellModel;
class StudyChart;

class StudyPage : public QWidget {
  Q_OBJECT
 public:
  explicit StudyPage(QWidget* parent = nullptr);

  // ---- the study shown
  void setData(const StudyData& data);
  void clear(const QString& message);  // no study: the results hide, `message` says why
  const StudyData& data() const { return data_; }

  // ---- a new study
  void setWorkspace(const QString& dir) { workspace_ = dir; }  // where the file dialogs start
  void setRequest(const StudyRequest& request);
  StudyRequest request() const;
  void setModelDir(const QString& dir);
  void setOutput(const QString& path);
  QString output() const;
  void setCudaAvailable(bool available, const QString& reason);
  void setMoreSettingsVisible(bool on);

  void beginJob(const QString& what);
  void setProgress(double fraction, const QString& text);  // fraction < 0: unknown
  void endJob(const QString& message, bool isError);
  void showStatus(const QString& text, bool isError) { setStatus(text, isError); }
  bool isBusy() const { return busy_; }
  QString statusText() const;
  QString progressText() const;

  // Exports: the table as CSV; a chart by extension (.png, .pdf, .csv).
  // An error message, empty on success.
  QString exportTable(const QString& path) const;

  StudyChart* klChart() const { return kl_; }
  StudyChart* epsilonChart() const { return eps_; }
  StudyCellModel* cellModel() const { return cells_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  QPushButton* startButton() const { return start_; }
  QPushButton* cancelButton() const { return cancel_; }
  QString summaryText() const;
  QString titleText() const;
  QString emptyText() const;

 protected:
  void showEvent(QShowEvent* e) override;

 Q_SIGNALS:
  void startRequested(const sdw::widgets::StudyRequest& request);
  void cancelRequested();
  void openRequested(const QString& path);

 private:
  QWidget* buildForm();
  QWidget* buildMore();
  QWidget* buildResults();
  void chooseStudy();
  void exportTableDialog();
  void setStatus(const QString& text, bool isError);
  void updateButtons();
  void updateResumeTip();
  void sizeSplit();

  StudyData data_;
  QString workspace_;
  bool busy_ = false;

  // form
  QLineEdit* model_ = nullptr;
  QLineEdit* crossModel_ = nullptr;
  QLineEdit* out_ = nullptr;
  QCheckBox* fixed_ = nullptr;
  QCheckBox* ar_ = nullptr;
  QCheckBox* cross_ = nullptr;
  QCheckBox* greedy_ = nullptr;
  QCheckBox* sampled_ = nullptr;
  QCheckBox* sparsegpt_ = nullptr;
  QCheckBox* wanda_ = nullptr;
  QCheckBox* p24_ = nullptr;
  QCheckBox* p48_ = nullptr;
  QCheckBox* unstructured_ = nullptr;
  QLineEdit* seeds_ = nullptr;
  QSpinBox* tokens_ = nullptr;
  QComboBox* device_ = nullptr;
  QToolButton* moreToggle_ = nullptr;
  QWidget* more_ = nullptr;
  QSpinBox* referenceTokens_ = nullptr;
  QSpinBox* maxNewTokens_ = nullptr;
  QSpinBox* epsilonK_ = nullptr;
  QSpinBox* evalMaxNewTokens_ = nullptr;
  QSpinBox* evalPrompts_ = nullptr;
  QSpinBox* evalWindows_ = nullptr;
  QLineEdit* corpus_ = nullptr;
  QLineEdit* prompts_ = nullptr;
  QLineEdit* heldoutPrompts_ = nullptr;
  QLineEdit* heldoutText_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QLabel* status_ = nullptr;

  // results
  QStackedWidget* stack_ = nullptr;
  QLabel* empty_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* summary_ = nullptr;
  QPushButton* exportTable_ = nullptr;
  StudyChart* kl_ = nullptr;
  StudyChart* eps_ = nullptr;
  StudyCellModel* cells_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QSplitter* split_ = nullptr;
  bool userSplit_ = false;  // the user moved the split: it stays where they put it
};

}  // namespace sdw::widgets
