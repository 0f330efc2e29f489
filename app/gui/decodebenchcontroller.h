#pragma once
// Runs the end-to-end decode benchmark for the Benchmark panel's End-to-end
// decode tab as a job ("Benchmark decode", progress in decode steps,
// cancellable at the next progress report) and opens and saves its results
// in the JSON of `sdw-cli bench decode --json` (gpu/bench_decode_report.h).
// The grid is the CLI's: one read-bandwidth probe first, then per (config,
// linear, pattern) one model and gpu::runDecodeBenchBatches over the batch
// sizes. Every timed step (DecodeBenchOptions::onStep, on the job's thread)
// and every finished cell's rows go through the job's channel, handed to the
// view at most every 40 ms; the controller turns the rows into the table,
// the speed-up bars and the summary line (gpu::decodeSummaryJson).
//
// Threading: the rows and the results' metadata are touched on the GUI
// thread only. One run at a time.

#include "app/jobmanager.h"
#include "gpu/model_config.h"
#include "widgets/decodebenchdata.h"
#include "widgets/decodebenchview.h"

#include <nlohmann/json.hpp>

#include <QObject>
#include <QPointer>
#include <QVector>

#include <cstdint>
#include <string>
#include <vector>

namespace sdw::app {

// Plain computations over result rows (the CLI's JSON rows); free functions
// so tests can check them.
namespace decode {
// The shapes the kernel page offers (gpu::knownModels(), titled as there),
// then the configs shipped in resources/configs/ that are none of them
// (bench-tiny, the CPU's shape).
QVector<widgets::DecodeConfigChoice> configCatalog();
// A catalog name as `sdw-cli bench decode --config NAME` resolves it
// (app/cli/cli_util.cpp): llama3-8b is the built-in Llama-3.1-8B config,
// reported as "llama-3.1-8b"; any other name is resources/configs/NAME.json.
// Throws std::invalid_argument for an unknown name.
gpu::ModelConfig resolveConfig(const std::string& name, std::string& reportName);
// The live chart's series of a cell: "bench-tiny · sparse 2:4 · batch 2".
QString cellName(const QString& config, const QString& linear, const QString& pattern, int batch);
// A row as the view shows it (widgets/decodebenchdata.h): the one adapter
// from the benchmark's JSON rows to the widgets' type.
widgets::DecodeRowData rowData(const nlohmann::json& row);
QVector<widgets::DecodeRowData> rowData(const std::vector<nlohmann::json>& rows);
// Every row's timed steps as chart points, in row order from `firstIndex`:
// the same x a live run gave them.
QVector<widgets::DecodeStepPoint> stepPoints(const std::vector<nlohmann::json>& rows, int firstIndex = 0);
// From gpu::decodeSummaryJson: per (config, batch) with a sparse row, each
// pattern's speed-up over our dense engine, else over the best dense run
// (BestDense: over the best dense run always), and the largest speedup_limit
// of the group.
widgets::DecodeSpeedupBars speedupBars(const nlohmann::json& summary,
                                       widgets::DecodeBaseline baseline = widgets::DecodeBaseline::OwnDense);
// One line: the read bandwidth, then per group the speed-ups with their limits.
QString summaryLine(const nlohmann::json& summary, double readGBs,
                    widgets::DecodeBaseline baseline = widgets::DecodeBaseline::OwnDense);
// A results document checked and completed: a "decode-e2e" grid (the CLI's
// grid output, or a file saved here) or one "decode" row (the CLI's output
// for a single cell, e.g. bench/results/engine/h200-decode-llama3-8b.json,
// whose rows predate the linear field: "eager" then). Throws
// std::runtime_error naming `source` and the row at fault.
struct Results {
  nlohmann::json meta = nlohmann::json::object();  // the top-level fields but rows and summary
  std::vector<nlohmann::json> rows;
};
Results parseResults(const nlohmann::json& document, const std::string& source);
// The CLI's grid layout: meta, "rows" and "summary".
nlohmann::json resultsJson(const Results& results);
}  // namespace decode

class DecodeBenchController : public QObject {
  Q_OBJECT
 public:
  explicit DecodeBenchController(JobManager* jobs, QObject* parent = nullptr);

  // Tells the view about the device and the model catalog, connects it both ways.
  void attach(widgets::DecodeBenchView* view);

  // Starts the grid as a job; 0 (with runEnded saying why) when one is
  // running or the request cannot run.
  JobId start(const widgets::DecodeBenchRequest& request);
  void cancel();
  // Reads a results JSON (sdw-cli bench decode --json, or one saved here) as a job.
  JobId openResults(const QString& path);
  // .json: the CLI's layout, which openResults reads back; .csv: the table.
  // Error text, or empty.
  QString saveResults(const QString& path) const;

  bool isRunning() const { return run_.busy(); }
  JobId runJob() const { return run_.id(); }
  const std::vector<nlohmann::json>& rows() const { return results_.rows; }
  const nlohmann::json& meta() const { return results_.meta; }
  // How often streamed steps are handed to the view (default 40 ms), from the next run on.
  void setDrainInterval(int msecs) { drainMs_ = msecs; }
  // Bytes the read-bandwidth probe reads (default the CLI's 4 GiB; the CPU
  // probe reads at most 256 MiB), from the next run on.
  void setBandwidthProbeBytes(std::uint64_t bytes) { probeBytes_ = bytes; }
  // What the bars and the summary compare the sparse engines with; redraws them.
  void setBaseline(widgets::DecodeBaseline baseline);
  widgets::DecodeBaseline baseline() const { return baseline_; }

 Q_SIGNALS:
  void runStarted(const QString& title);
  void stepsMeasured(const QVector<sdw::widgets::DecodeStepPoint>& points);
  void rowsMeasured(const QVector<sdw::widgets::DecodeRowData>& rows);
  void barsChanged(const sdw::widgets::DecodeSpeedupBars& bars);
  void summaryChanged(const QString& text);
  void progressed(double fraction, const QString& text);
  void runEnded(const QString& message, bool isError);
  void resultLoaded(const QString& title, const QVector<sdw::widgets::DecodeRowData>& rows,
                    const QVector<sdw::widgets::DecodeStepPoint>& points);
  void info(const QString& message);
  void error(const QString& message);

 private:
  void publishDerived();

  QPointer<JobManager> jobs_;
  JobSlot run_;
  JobSlot open_;
  int drainMs_ = 40;
  std::uint64_t probeBytes_ = 4ull << 30;
  decode::Results results_;  // the run or file shown
  int steps_ = 0;            // timed steps drawn so far in this run
  widgets::DecodeBaseline baseline_ = widgets::DecodeBaseline::OwnDense;
};

}  // namespace sdw::app
