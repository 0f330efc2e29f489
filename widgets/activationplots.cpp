#include "widgets/activationplots.h"

#include "widgets/csv.h"
#include "widgets/plotview.h"

#include <qcustomplot.h>

#include <QTextStream>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sdw::widgets {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Fixed text blue, AR red, cross-model green (as in the epsilon plots); a
// second run of a source a darker shade, a third a lighter one.
QColor runColor(const QVector<ActivationSeries>& series, int i) {
  const QString source = series[i].run.source;
  QColor base(0x94, 0x67, 0xbd);
  if (source == QLatin1String("fixed")) base = QColor(0x1f, 0x77, 0xb4);
  else if (source == QLatin1String("ar")) base = QColor(0xd6, 0x27, 0x28);
  else if (source == QLatin1String("cross-model")) base = QColor(0x2c, 0xa0, 0x2c);
  int same = 0;
  for (int j = 0; j < i; ++j)
    if (series[j].run.source == source) ++same;
  switch (same % 3) {
    case 1: return base.darker(160);
    case 2: return base.lighter(150);
    default: return base;
  }
}

void styleAxes(QCustomPlot* p) {
  // The legend shares the axes' column (PlotView::placeLegendAbove), and the
  // layout caps a column at its elements' maximum widths, hidden ones too: an
  // empty legend's is its margins. A wide explicit maximum lifts that cap.
  p->legend->setMaximumSize(1 << 20, QWIDGETSIZE_MAX);
  p->xAxis->grid()->setPen(QPen(QColor(0, 0, 0, 18)));
  p->yAxis->grid()->setPen(QPen(QColor(0, 0, 0, 18)));
  p->yAxis->grid()->setSubGridVisible(false);
  p->legend->setFont(QFont(p->font().family(), 8));
  p->legend->setVisible(false);
}


// On a log axis a value <= 0 has no place: a gap in the curve.
double onAxis(double v, bool log) { return log && !(v > 0) ? kNaN : v; }

// The value range of the shown curves: [lo, hi] over finite (and, on a log
// axis, positive) values; false when there is none.
bool valueRange(const QCustomPlot* p, bool log, double& lo, double& hi) {
  bool any = false;
  for (int g = 0; g < p->graphCount(); ++g)
    for (auto it = p->graph(g)->data()->constBegin(); it != p->graph(g)->data()->constEnd(); ++it) {
      const double v = it->value;
      if (!std::isfinite(v) || (log && !(v > 0))) continue;
      lo = any ? std::min(lo, v) : v;
      hi = any ? std::max(hi, v) : v;
      any = true;
    }
  return any;
}

void fitValueAxis(QCustomPlot* p, bool log, bool fromZero) {
  double lo = 0, hi = 0;
  if (!valueRange(p, log, lo, hi)) {
    p->yAxis->setRange(log ? 0.1 : 0, log ? 10 : 1);
    return;
  }
  if (log) {
    p->yAxis->setRange(lo / 1.6, hi * 1.6);
  } else {
    if (fromZero) lo = std::min(lo, 0.0);
    const double pad = hi > lo ? (hi - lo) * 0.05 : std::max(std::abs(hi) * 0.05, 1e-6);
    p->yAxis->setRange(fromZero && lo >= 0 ? 0 : lo - pad, hi + pad);
  }
}

QString number(double v) { return QString::number(v, 'g', 5); }

}  // namespace

// ---------------------------------------------------------------- histogram

ActivationHistogramPlot::ActivationHistogramPlot(QWidget* parent) : PlotView(parent) {
  styleAxes(plot());
  placeLegendAbove();
  plot()->xAxis->setLabel(tr("activation value x"));
  setLogAxis(plot()->yAxis, log_);
  plot()->yAxis->setLabel(tr("values per bin"));
  setCsvProvider([this] { return histogramCsv(); });
  enableHover([this](const QString& series, int index, double, double value) -> QString {
    for (int c = 0; c < histograms_.size() && c < data_.series.size(); ++c) {
      if (data_.series[c].run.label() != series) continue;
      const Histogram& h = histograms_[c];
      if (index < 0 || index >= h.counts.size()) return {};
      const double from = h.lower + index * h.width;
      return tr("%1\nx in [%2, %3): %4 values").arg(series, number(from), number(from + h.width)).arg(value, 0, 'f', 0);
    }
    return {};
  });
}

void ActivationHistogramPlot::setData(const ActivationInputData& data) {
  data_ = data;
  redraw();
}

void ActivationHistogramPlot::setLogCount(bool on) {
  if (log_ == on) return;
  log_ = on;
  setLogAxis(plot()->yAxis, on);
  redraw();
}

void ActivationHistogramPlot::setBins(int bins) {
  bins_ = std::max(bins, 1);
  redraw();
}

void ActivationHistogramPlot::clear() {
  data_ = {};
  redraw();
}

void ActivationHistogramPlot::redraw() {
  QCustomPlot* p = plot();
  p->clearGraphs();
  histograms_.clear();
  double range = 0;
  for (const ActivationSeries& s : data_.series) range = std::max(range, s.maxAbs);
  for (int i = 0; i < data_.series.size(); ++i) {
    const ActivationSeries& s = data_.series[i];
    const Histogram h = histogramOf(s.values, range, bins_);
    histograms_.push_back(h);
    QVector<double> keys(h.counts.size()), values(h.counts.size());
    for (int b = 0; b < h.counts.size(); ++b) {
      keys[b] = h.center(b);
      values[b] = onAxis(h.counts[b], log_);
    }
    QCPGraph* g = p->addGraph();
    g->setName(s.run.label());
    g->setLineStyle(QCPGraph::lsStepCenter);
    g->setPen(QPen(runColor(data_.series, i), 1.5));
    g->setData(keys, values, true);
  }
  if (!histograms_.isEmpty()) {
    const Histogram& h = histograms_.front();
    p->xAxis->setRange(h.lower, -h.lower);
  } else {
    p->xAxis->setRange(-1, 1);
  }
  fitValueAxis(p, log_, true);
  p->yAxis->setLabel(log_ ? tr("values per bin (log)") : tr("values per bin"));
  p->legend->setVisible(p->graphCount() > 0);
  requestReplot();
}

QString ActivationHistogramPlot::histogramCsv() const {
  QString out;
  QTextStream s(&out);
  s << "run,source,bin_lower,bin_upper,count\n";
  for (int c = 0; c < histograms_.size() && c < data_.series.size(); ++c) {
    const Histogram& h = histograms_[c];
    const ActivationRunInfo& run = data_.series[c].run;
    for (int b = 0; b < h.counts.size(); ++b) {
      const double from = h.lower + b * h.width;
      s << csvField(run.path) << ',' << csvField(run.source) << ',' << csvNumber(from) << ','
        << csvNumber(from + h.width) << ',' << csvNumber(h.counts[b]) << '\n';
    }
  }
  return out;
}

// ---------------------------------------------------------------- per channel

ChannelMagnitudePlot::ChannelMagnitudePlot(QWidget* parent) : PlotView(parent) {
  styleAxes(plot());
  placeLegendAbove();
  plot()->xAxis->setLabel(tr("channel (input feature index)"));
  plot()->yAxis->setLabel(tr("mean |x| over the sampled rows"));
  setLogAxis(plot()->yAxis, log_);
  setCsvProvider([this] { return channelCsv(); });
  enableHover(
      [](const QString& series, int index, double, double value) -> QString {
        return tr("%1\nchannel %2: mean |x| = %3").arg(series).arg(index).arg(number(value));
      },
      12.0);
}

void ChannelMagnitudePlot::setData(const ActivationInputData& data) {
  data_ = data;
  redraw();
}

void ChannelMagnitudePlot::setLogScale(bool on) {
  if (log_ == on) return;
  log_ = on;
  setLogAxis(plot()->yAxis, on);
  redraw();
}

void ChannelMagnitudePlot::clear() {
  data_ = {};
  redraw();
}

void ChannelMagnitudePlot::redraw() {
  QCustomPlot* p = plot();
  p->clearGraphs();
  int channels = 0;
  for (int i = 0; i < data_.series.size(); ++i) {
    const ActivationSeries& s = data_.series[i];
    QVector<double> keys(s.channelMeanAbs.size()), values(s.channelMeanAbs.size());
    for (int c = 0; c < keys.size(); ++c) {
      keys[c] = c;
      values[c] = onAxis(s.channelMeanAbs[c], log_);
    }
    channels = std::max(channels, static_cast<int>(keys.size()));
    QCPGraph* g = p->addGraph();
    g->setName(s.run.label());
    QColor color = runColor(data_.series, i);
    color.setAlpha(data_.series.size() > 1 ? 190 : 255);
    g->setPen(QPen(color, 1.0));
    g->setData(keys, values, true);
  }
  p->xAxis->setRange(-0.5, std::max(channels, 1) - 0.5);
  fitValueAxis(p, log_, true);
  p->legend->setVisible(p->graphCount() > 0);
  requestReplot();
}

QString ChannelMagnitudePlot::channelCsv() const {
  QString out;
  QTextStream s(&out);
  s << "run,source,channel,mean_abs\n";
  for (const ActivationSeries& series : data_.series)
    for (int c = 0; c < series.channelMeanAbs.size(); ++c)
      s << csvField(series.run.path) << ',' << csvField(series.run.source) << ',' << c << ','
        << csvNumber(series.channelMeanAbs[c]) << '\n';
  return out;
}

// ---------------------------------------------------------------- by decode step

DecodeStepPlot::DecodeStepPlot(QWidget* parent) : PlotView(parent) {
  styleAxes(plot());
  placeLegendAbove();
  plot()->xAxis->setLabel(tr("decode step (0: the input reading the first generated token)"));
  plot()->yAxis->setLabel(tr("median ‖x‖₂ of the sampled rows"));
  note_ = new QCPItemText(plot());
  note_->position->setType(QCPItemPosition::ptAxisRectRatio);
  note_->position->setCoords(0.5, 0.5);
  note_->setPositionAlignment(Qt::AlignCenter);
  note_->setColor(QColor(0x66, 0x66, 0x66));
  note_->setVisible(false);
  setCsvProvider([this] { return stepCsv(); });
  enableHover([this](const QString& series, int index, double, double value) -> QString {
    for (int c = 0; c < runs_.size(); ++c) {
      if (runs_[c].label() != series || index < 0 || index >= groups_[c].size()) continue;
      const StepGroup& g = groups_[c][index];
      const QString steps = g.first == g.last ? tr("step %1").arg(g.first) : tr("steps %1–%2").arg(g.first).arg(g.last);
      return tr("%1\n%2: median ‖x‖₂ = %3 (%4 rows)").arg(series, steps, number(value)).arg(g.rows);
    }
    return {};
  });
}

void DecodeStepPlot::setData(const ActivationInputData& data) {
  data_ = data;
  redraw();
}

void DecodeStepPlot::setStepsPerBin(int steps) {
  width_ = std::max(steps, 1);
  redraw();
}

void DecodeStepPlot::clear() {
  data_ = {};
  redraw();
}

QString DecodeStepPlot::noteText() const { return note_->visible() ? note_->text() : QString(); }

void DecodeStepPlot::redraw() {
  QCustomPlot* p = plot();
  p->clearGraphs();
  runs_.clear();
  groups_.clear();
  int maxStep = 0;
  for (int i = 0; i < data_.series.size(); ++i) {
    const ActivationSeries& s = data_.series[i];
    if (!s.hasDecodeSteps()) continue;
    const QVector<StepGroup> groups = groupByDecodeStep(s, width_);
    QVector<double> keys, values;
    for (const StepGroup& g : groups) {
      keys << 0.5 * (g.first + g.last);
      values << g.median;
      maxStep = std::max(maxStep, g.last);
    }
    const QColor color = runColor(data_.series, i);
    QCPGraph* g = p->addGraph();
    g->setName(s.run.label());
    g->setPen(QPen(color, 1.4));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, Qt::white, 5));
    g->setData(keys, values, true);
    runs_ << s.run;
    groups_ << groups;
  }
  const bool none = p->graphCount() == 0;
  note_->setText(data_.series.isEmpty()
                     ? QString()
                     : tr("No run here has decode steps:\nonly AR and cross-model runs sample decode positions"));
  note_->setVisible(none && !data_.series.isEmpty());
  p->xAxis->setRange(-0.5, std::max(maxStep, 1) + 0.5);
  fitValueAxis(p, false, false);  // the medians' own range: a drift with the step shows
  p->legend->setVisible(!none);
  requestReplot();
}

QString DecodeStepPlot::stepCsv() const {
  QString out;
  QTextStream s(&out);
  s << "run,source,step_first,step_last,rows,median_l2_norm\n";
  for (int c = 0; c < runs_.size(); ++c)
    for (const StepGroup& g : groups_[c])
      s << csvField(runs_[c].path) << ',' << csvField(runs_[c].source) << ',' << g.first << ',' << g.last << ','
        << g.rows << ',' << csvNumber(g.median) << '\n';
  return out;
}

}  // namespace sdw::widgets
