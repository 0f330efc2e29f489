#pragma once
// The Benchmark panel. Its Kernels tab: choose shapes, patterns, batch
// sizes, dtype, activation sparsities (spMspV), baselines and repeats; watch
// the run live (rolling time and GB/s charts, speedup bars with the
// bandwidth limit, speedup against activation sparsity, a sortable results
// table and a summary line); open a results JSON written by `sdw-cli bench
// kernels --out FILE`; export. Display only: the controller runs the
// benchmark and computes speedups and medians; the panel asks through
// signals. Its End-to-end decode tab is a DecodeBenchView
// (widgets/decodebenchview.h) with a controller of its own.

#include "gpu/bench.h"  // BenchSettings, BenchShape: what a run asks for (results: benchrowdata.h)
#include "widgets/benchcharts.h"
#include "widgets/benchrowdata.h"

#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QTabWidget;
class QTableView;
class QTreeWidget;

namespace sdw::widgets {

class BenchResultsModel;
class DecodeBenchView;

// The projections of one known model, as the shape chooser lists them.
struct ShapeGroup {
  QString model;  // "llama3-8b"
  QString title;  // "Llama-3.1-8B"
  QVector<gpu::BenchShape> shapes;
};

// What Start asks for: the runner's settings (model shapes filled in) plus
// the text the controller parses: custom "ROWSxCOLS,..." shapes and the
// activation sparsities "0,0.5,..." (as sdw-cli bench kernels --activation-sparsity).
struct BenchRequest {
  gpu::BenchSettings settings;
  QString customShapes;
  QString activationSparsities;  // empty: no spMspV rows
  // The spMspV weight layouts to time (as --spmspv-layouts; all by default). Empty while
  // activation sparsities are asked for: the run is refused.
  QStringList spmspvLayouts = allSpmspvLayouts();
  static QStringList allSpmspvLayouts();
};

class BenchmarkPanel : public QWidget {
  Q_OBJECT
 public:
  explicit BenchmarkPanel(QWidget* parent = nullptr);

  // The device line: "GPU: ..." or "no GPU: benchmarking the CPU kernels (...)".
  // Without a GPU the cuBLAS and cuSPARSELt choices are off and say why.
  void setDevice(bool gpu, const QString& text);
  void setShapeCatalog(const QVector<ShapeGroup>& groups);

  BenchRequest request() const;
  void setRequest(const BenchRequest& r);  // model shapes are ticked where they match

  // A run: clears the view, then grows.
  void beginRun(const QString& title);
  void addMeasurements(const QVector<BenchRowData>& rows, const QVector<BenchMeasurement>& points);
  void setSpeedups(const QVector<double>& perRow, const QString& baseline);
  void setSpeedupBars(const SpeedupBars& bars);
  void setActivationSpeedups(const ActivationSpeedups& s);
  void setSummary(const QString& text);
  void setProgress(double fraction, const QString& text);
  void endRun(const QString& message, bool isError);
  // A status message that does not end anything (exports, refusals).
  void showMessage(const QString& text, bool isError) { setStatus(text, isError); }
  // A whole result at once (from a file): replaces what is shown.
  void showResult(const QString& title, const QVector<BenchRowData>& rows, const QVector<BenchMeasurement>& points);

  // For tests and for the window.
  BenchResultsModel* resultsModel() const { return model_; }
  QSortFilterProxyModel* proxyModel() const { return proxy_; }
  QTableView* tableView() const { return table_; }
  BenchCharts* charts() const { return charts_; }
  QTabWidget* innerTabs() const { return tabs_; }
  DecodeBenchView* decodeView() const { return decode_; }
  QString deviceText() const;
  QString summaryText() const;
  QString statusText() const;
  bool isRunning() const { return running_; }

 Q_SIGNALS:
  void startRequested(const sdw::widgets::BenchRequest& request);
  void cancelRequested();
  void openResultsRequested(const QString& path);
  void exportRequested(const QString& path);  // .csv or .json

 private:
  QWidget* buildSettings(QWidget** actionsOut);  // the scrolling settings; the action buttons apart
  void setStatus(const QString& text, bool isError);
  void chooseResults();
  void chooseExport();
  void updateButtons();

  QLabel* device_ = nullptr;
  QTreeWidget* shapes_ = nullptr;
  QLineEdit* custom_ = nullptr;
  QLineEdit* activation_ = nullptr;
  QVector<QCheckBox*> spmspvLayouts_;  // gpu::spmspvLayoutNames(), in order
  QVector<QCheckBox*> patterns_;
  QVector<QCheckBox*> batches_;
  QComboBox* dtype_ = nullptr;
  QCheckBox* cublas_ = nullptr;
  QCheckBox* ownDense_ = nullptr;
  QCheckBox* cusparselt_ = nullptr;
  QCheckBox* layer_ = nullptr;
  QCheckBox* forceCpu_ = nullptr;
  QSpinBox* repeats_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* open_ = nullptr;
  QPushButton* export_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* summary_ = nullptr;
  BenchCharts* charts_ = nullptr;
  BenchResultsModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  DecodeBenchView* decode_ = nullptr;
  bool running_ = false;
  bool gpu_ = false;
  QString deviceText_, statusText_;  // in full; the labels may show them shortened
  int textWidth_ = 250;              // the controls column's text width
};

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::BenchRequest)
