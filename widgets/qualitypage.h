#pragma once
// The quality part of the Pruning panel: pick an evaluation run, see the
// quality table (one row per model: perplexities, on-policy KL, agreement and
// first divergence over seeds) and the side-by-side generations (a prompt
// selector and one read-only text per model). Display only: runs are opened
// and evaluations run elsewhere; results arrive as QualityData.

#include "widgets/prunedata.h"

#include <QWidget>

class QComboBox;
class QHBoxLayout;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace sdw::widgets {

class ChecksLabel;
class QualityModel;

class QualityPage : public QWidget {
  Q_OBJECT
 public:
  explicit QualityPage(QWidget* parent = nullptr);

  void setWorkspace(const QString& dir) { workspace_ = dir; }  // where dialogs start
  // Evaluation runs offered in the picker (paths); the shown one stays selected.
  void setRuns(const QStringList& paths);
  void setData(const QualityData& data);
  void setStatus(const QString& text, bool isError);
  void setBusy(bool busy);

  const QualityData& data() const { return data_; }
  QualityModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  QString summaryText() const;
  QString statusText() const;
  QStringList shownWarnings() const;  // the warnings line(s) under the summary
  // The side-by-side view: the prompt shown and each model's text.
  void selectPrompt(int index);
  int promptCount() const;
  QString shownPrompt() const;
  QStringList shownTexts() const;
  QStringList shownLabels() const;

 Q_SIGNALS:
  void openRequested(const QString& path);
  void evaluateRequested();
  void exportRequested();

 private:
  void rebuildColumns();

  QString workspace_;
  QualityData data_;
  QComboBox* runs_ = nullptr;
  QPushButton* open_ = nullptr;
  QPushButton* evaluate_ = nullptr;
  QPushButton* export_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* status_ = nullptr;
  ChecksLabel* checks_ = nullptr;
  QualityModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QComboBox* prompt_ = nullptr;
  QPlainTextEdit* promptText_ = nullptr;
  QHBoxLayout* columns_ = nullptr;
  QVector<QLabel*> labels_;
  QVector<QPlainTextEdit*> texts_;
};

}  // namespace sdw::widgets
