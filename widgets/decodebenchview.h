#pragma once
// The Benchmark panel's End-to-end decode tab: choose model shapes (or a
// real checkpoint folder), the linears the decode engine runs (cuBLAS, our
// dense GEMV, our bitmask SpMV per N:M pattern, or the eager LibTorch forward
// pass), batch sizes, context, warm-up and timed steps, device and dtype;
// watch tokens/s per timed step live, one line per engine cell; then the
// sparse speed-ups over the dense engine (ours, or the best one of each group)
// against their bandwidth limit and
// a sortable table of the rows. Results open from and save to the JSON of
// `sdw-cli bench decode --json`. Display only: the controller
// (app/gui/decodebenchcontroller.h) runs the grid and computes what is drawn.

#include "widgets/decodebenchdata.h"

#include <QString>
#include <QVector>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QDoubleSpinBox;
class QSpinBox;
class QTableView;

namespace sdw::widgets {

class DecodeBenchCharts;
class DecodeResultsModel;

class DecodeBenchView : public QWidget {
  Q_OBJECT
 public:
  explicit DecodeBenchView(QWidget* parent = nullptr);

  // The device line; without a GPU the cuda choice is off and says why.
  void setDevice(bool gpu, const QString& text);
  void setConfigCatalog(const QVector<DecodeConfigChoice>& configs);

  DecodeBenchRequest request() const;
  void setRequest(const DecodeBenchRequest& r);  // configs are ticked where they match

  // A run: clears the view, then grows.
  void beginRun(const QString& title);
  void addSteps(const QVector<DecodeStepPoint>& points);
  void addRows(const QVector<DecodeRowData>& rows);
  void setSpeedupBars(const DecodeSpeedupBars& bars);
  void setSummary(const QString& text);
  void setProgress(double fraction, const QString& text);
  void endRun(const QString& message, bool isError);
  // A status message that does not end anything (saves, refusals).
  void showMessage(const QString& text, bool isError) { setStatus(text, isError); }
  // A whole result at once (from a file): replaces what is shown.
  void showResult(const QString& title, const QVector<DecodeRowData>& rows, const QVector<DecodeStepPoint>& points);

  // For tests and for the window.
  DecodeResultsModel* resultsModel() const { return model_; }
  QSortFilterProxyModel* proxyModel() const { return proxy_; }
  QTableView* tableView() const { return table_; }
  DecodeBenchCharts* charts() const { return charts_; }
  // What the speed-ups are over (the "Speed-up over" choice above the table).
  DecodeBaseline baseline() const;
  void setBaseline(DecodeBaseline baseline);
  QComboBox* baselineBox() const { return baseline_; }
  QString deviceText() const { return deviceText_; }
  QString summaryText() const;
  QString statusText() const { return statusText_; }
  bool isRunning() const { return running_; }

 Q_SIGNALS:
  void startRequested(const sdw::widgets::DecodeBenchRequest& request);
  void cancelRequested();
  void openResultsRequested(const QString& path);
  void saveResultsRequested(const QString& path);  // .json (the CLI's format) or .csv (the table)
  void baselineChanged(sdw::widgets::DecodeBaseline baseline);

 private:
  QWidget* buildSettings(QWidget** actionsOut);
  void setStatus(const QString& text, bool isError);
  void chooseResults();
  void chooseSave();
  void deviceChanged();
  void updateButtons();

  QLabel* device_ = nullptr;
  QListWidget* configs_ = nullptr;
  QLineEdit* checkpoint_ = nullptr;
  QVector<QCheckBox*> linears_;
  QVector<QCheckBox*> patterns_;
  QVector<QCheckBox*> batches_;
  QSpinBox* context_ = nullptr;
  QDoubleSpinBox* activation_ = nullptr;
  QCheckBox* thresholds_ = nullptr;
  QSpinBox* warmup_ = nullptr;
  QSpinBox* tokens_ = nullptr;
  QComboBox* deviceBox_ = nullptr;
  QComboBox* dtype_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* open_ = nullptr;
  QPushButton* save_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* summary_ = nullptr;
  QComboBox* baseline_ = nullptr;
  DecodeBenchCharts* charts_ = nullptr;
  DecodeResultsModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  bool running_ = false;
  bool gpu_ = false;
  QString deviceText_, statusText_;
  int textWidth_ = 250;
};

}  // namespace sdw::widgets
