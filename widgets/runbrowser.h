#pragma once
// The workspace/run browser dock: the folder, its run files, and the selected
// run's provenance (or why it cannot be read).

#include "widgets/runlistmodel.h"

#include <QWidget>

class QLabel;
class QTextBrowser;
class QTreeView;

namespace sdw::widgets {

class RunBrowser : public QWidget {
  Q_OBJECT
 public:
  explicit RunBrowser(QWidget* parent = nullptr);

  void setWorkspace(const QString& dir);
  void setRuns(QVector<RunRow> rows);
  void selectPath(const QString& path);
  // Shows a run that is not (or not yet) in the list, e.g. opened by path.
  void showDetails(const RunRow& row);

  RunListModel* model() const { return model_; }
  QString detailsText() const;

 Q_SIGNALS:
  void openWorkspaceRequested();
  void refreshRequested();
  void runSelected(const QString& path);

 private:
  void onCurrentChanged();
  QLabel* folder_;
  QTreeView* view_;
  RunListModel* model_;
  QTextBrowser* details_;
};

}  // namespace sdw::widgets
