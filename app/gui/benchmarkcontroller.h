#pragma once
// Runs the kernel benchmark for the Benchmark panel as a job ("Benchmark
// kernels", progress in measured kernels, cancellable between kernels) and
// opens saved results as a job. Rows measured on the job thread reach the
// panel in coalesced batches; the controller computes what the panel draws
// from them: per-row speedups over dense, per-shape speedup bars, the
// batch-1 summary medians and the spMspV speedups per activation sparsity.
//
// Threading: the runner's per-row callback sends each row on the job's
// channel, which hands them over at most every 40 ms. One run at a time.

#include "app/jobmanager.h"
#include "gpu/bench.h"
#include "widgets/benchmarkpanel.h"
#include "widgets/benchrowdata.h"

#include <QObject>
#include <QPointer>
#include <QVector>

#include <vector>

namespace sdw::app {

// Plain computations over measured rows; free functions so tests can check them.
namespace bench {
// "cuBLAS" when a row has a cuBLAS baseline, else "our dense GEMV" / "dense (CPU)".
QString baselineName(const QVector<gpu::BenchRow>& rows);
// Per row: baseline time / row time, the baseline being cuBLAS for the row's
// shape and batch when measured, else our dense (GPU or CPU); 0 when neither.
QVector<double> speedups(const QVector<gpu::BenchRow>& rows);
// Per shape (in run order, whole-layer sequences last) at batch 1 (or the
// smallest batch run): sparse patterns, cuSPARSELt and, over cuBLAS, our dense.
widgets::SpeedupBars speedupBars(const QVector<gpu::BenchRow>& rows);
// One line: batch-1 medians per pattern over the measured projection shapes.
QString summaryLine(const QVector<gpu::BenchRow>& rows, const gpu::BenchResult& meta);
// A known model's published name ("Llama-3.1-8B" for "llama3-8b", from
// resources/shapes/), else the name itself. The shape catalogs of both
// Benchmark tabs title their models with it.
QString modelTitle(const std::string& model);
// The series name a row is plotted under: "sparse 2:4", "dense GEMV (ours)",
// "spmspv p_x 0.5" (one series per activation sparsity), ...
QString seriesName(const gpu::BenchRow& row);
// The spMspV rows (batch 1) by activation sparsity: per shape the speedup over
// our dense GEMV (GPU or CPU) of the same shape; the medians of the run's
// activation summary (gpu::summarise); the bytes limit, dense bytes / spMspV
// bytes (median over the shapes). Empty without spMspV rows.
widgets::ActivationSpeedups activationSpeedups(const QVector<gpu::BenchRow>& rows);
// A row as the panel shows it (widgets/benchrowdata.h): the one adapter from
// the benchmark's rows to the widgets' type.
widgets::BenchRowData benchRowData(const gpu::BenchRow& row);
QVector<widgets::BenchRowData> benchRowData(const QVector<gpu::BenchRow>& rows);
}  // namespace bench

class BenchmarkController : public QObject {
  Q_OBJECT
 public:
  explicit BenchmarkController(JobManager* jobs, QObject* parent = nullptr);

  // Tells the panel about the device and the shape catalog, connects it both ways.
  void attach(widgets::BenchmarkPanel* panel);

  // Starts a benchmark job; 0 (with runEnded saying why) when one is running
  // or the request is invalid.
  JobId start(const widgets::BenchRequest& request);
  void cancel();
  // Reads a results JSON (sdw-cli bench kernels --out FILE) as a job.
  JobId openResults(const QString& path);
  // .csv: the table; .json: the format Open results reads. Error text, or empty.
  QString exportTable(const QString& path) const;

  bool isRunning() const { return run_.busy(); }
  JobId runJob() const { return run_.id(); }
  const QVector<gpu::BenchRow>& rows() const { return rows_; }
  const gpu::BenchResult& result() const { return meta_; }
  // The settings of the run or file shown (a file's as far as it records them).
  const gpu::BenchSettings& settings() const { return settings_; }
  // How often streamed rows are handed to the panel (default 40 ms), from the next run on.
  void setDrainInterval(int msecs) { drainMs_ = msecs; }

 Q_SIGNALS:
  void runStarted(const QString& title);
  void measured(const QVector<sdw::widgets::BenchRowData>& rows, const QVector<sdw::widgets::BenchMeasurement>& points);
  void speedupsChanged(const QVector<double>& perRow, const QString& baseline);
  void barsChanged(const sdw::widgets::SpeedupBars& bars);
  void activationChanged(const sdw::widgets::ActivationSpeedups& speedups);
  void summaryChanged(const QString& text);
  void progressed(double fraction, const QString& text);
  void runEnded(const QString& message, bool isError);
  void resultLoaded(const QString& title, const QVector<sdw::widgets::BenchRowData>& rows,
                    const QVector<sdw::widgets::BenchMeasurement>& points);
  void info(const QString& message);
  void error(const QString& message);

 private:
  void addRows(const std::vector<gpu::BenchRow>& rows);
  void publishDerived();

  QPointer<JobManager> jobs_;
  JobSlot run_;
  JobSlot open_;
  int drainMs_ = 40;
  gpu::BenchSettings settings_;   // of the run or file shown
  gpu::BenchResult meta_;         // device, bandwidth, notes of the run or file shown
  QVector<gpu::BenchRow> rows_;   // everything shown, in run order
};

}  // namespace sdw::app
