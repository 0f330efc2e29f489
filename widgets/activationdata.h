#pragma once
// What the Analysis panel's Activations tab displays: the activation samples
// of calibration runs (docs/run-format.md "Calibration runs", group
// /calibration/samples), read by the application. Per projection input and
// run: the sampled rows as stored, and what the reader derives from them (the
// mean |x| per channel, each row's L2 norm). The widgets only bin, group and
// draw them.

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include <limits>

namespace sdw::widgets {

// A calibration run that holds activation samples.
struct ActivationRunInfo {
  QString path;
  QString source;          // "fixed", "ar", "cross-model"
  int rows = 0;            // n: rows sampled
  qint64 rowsCounted = 0;  // rows the run counted (what was sampled from)
  // "calib-ar.sdw.h5 (ar)": what the legends say.
  QString label() const;
  bool decodes() const;  // AR or cross-model: rows carry a decode step
};

// One projection input (the modules reading it share it).
struct ActivationInputInfo {
  QString name;         // the first module's name: "model.layers.3.mlp.gate_proj"
  QStringList modules;  // short names: "gate_proj", "up_proj"
  int layer = 0;
  int dIn = 0;
  // "layer 3 · gate_proj, up_proj"
  QString label() const;
};

// What a workspace offers the Activations tab.
struct ActivationCatalog {
  QString dir;
  QVector<ActivationRunInfo> runs;      // complete calibration runs with samples, by file name
  QVector<ActivationInputInfo> inputs;  // of the first such run, in forward order
  QStringList withoutSamples;           // file names of the other calibration runs

  bool isEmpty() const { return runs.isEmpty() || inputs.isEmpty(); }
  int inputIndex(const QString& name) const;
};

// One input's samples in one run.
struct ActivationSeries {
  ActivationRunInfo run;
  int rows = 0;
  int dIn = 0;
  QVector<float> values;           // [rows, dIn], row-major, as stored
  QVector<double> channelMeanAbs;  // [dIn]: mean |x| of each channel over the rows
  QVector<double> rowNorm;         // [rows]: L2 norm of each row
  QVector<int> decodeStep;         // [rows]: -1 for prompt positions and fixed text
  double maxAbs = 0;               // largest finite |x|

  bool hasDecodeSteps() const;  // some row has a decode step >= 0
};

// The samples of one input across the runs that hold them.
struct ActivationInputData {
  ActivationInputInfo input;
  QVector<ActivationSeries> series;  // parallel to the catalog's runs that have the input

  bool isEmpty() const { return series.isEmpty(); }
};

// A histogram of `values` over [-range, range] in `bins` equal bins (the
// middle one centred on 0 when `bins` is odd); values outside the range (or
// not finite) are not counted.
struct Histogram {
  double lower = 0;
  double width = 0;
  QVector<double> counts;  // [bins]
  double center(int bin) const { return lower + (bin + 0.5) * width; }
  double total() const;
};
Histogram histogramOf(const QVector<float>& values, double range, int bins);

// Rows grouped by decode step in bins of `width` steps ([0, w), [w, 2w), ...),
// bins without rows left out; per bin the median of the rows' L2 norms.
struct StepGroup {
  int first = 0;  // first step of the bin
  int last = 0;   // last step of the bin
  int rows = 0;   // rows in the bin
  double median = std::numeric_limits<double>::quiet_NaN();
};
QVector<StepGroup> groupByDecodeStep(const ActivationSeries& series, int width);

// Short module name: the last component ("model.layers.0.mlp.gate_proj" -> "gate_proj").
QString shortModuleName(const QString& name);

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::ActivationCatalog)
Q_DECLARE_METATYPE(sdw::widgets::ActivationInputData)
