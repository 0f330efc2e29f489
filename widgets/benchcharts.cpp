#include "widgets/benchcharts.h"

#include "widgets/plotview.h"

#include <qcustomplot.h>

#include <QHBoxLayout>
#include <QSplitter>
#include <QTextStream>
#include <QVBoxLayout>

#include <algorithm>

namespace sdw::widgets {

namespace {

// The same kernel keeps its colour in every chart.
QColor colorFor(const QString& kernel) {
  if (kernel.contains(QLatin1String("cuSPARSELt"))) return QColor(0x8c, 0x56, 0x4b);
  if (kernel.contains(QLatin1String("16:32"))) return QColor(0x17, 0xbe, 0xcf);
  if (kernel.contains(QLatin1String("8:16"))) return QColor(0x94, 0x67, 0xbd);
  if (kernel.contains(QLatin1String("4:8"))) return QColor(0x2c, 0xa0, 0x2c);
  if (kernel.contains(QLatin1String("2:4"))) return QColor(0x1f, 0x77, 0xb4);
  if (kernel.contains(QLatin1String("cuBLAS"))) return QColor(0xd6, 0x27, 0x28);
  if (kernel.contains(QLatin1String("dense"))) return QColor(0xff, 0x7f, 0x0e);
  return QColor(0x7f, 0x7f, 0x7f);
}

void styleRolling(QCustomPlot* p, const QString& title, const QString& yLabel) {
  p->plotLayout()->insertRow(0);
  auto* t = new QCPTextElement(p, title, QFont(QFont().family(), 10, QFont::Bold));
  p->plotLayout()->addElement(0, 0, t);
  p->xAxis->setLabel(QObject::tr("measurement"));
  p->yAxis->setLabel(yLabel);
  p->legend->setVisible(true);
  QFont lf;
  lf.setPointSize(7);
  p->legend->setFont(lf);
  p->legend->setRowSpacing(-3);
  p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
}

}  // namespace

BenchCharts::BenchCharts(QWidget* parent)
    : QWidget(parent), timeView_(new PlotView(this)), bwView_(new PlotView(this)), speedupView_(new PlotView(this)) {
  setObjectName(QStringLiteral("BenchCharts"));
  timeView_->setObjectName(QStringLiteral("BenchTimeChart"));
  bwView_->setObjectName(QStringLiteral("BenchBandwidthChart"));
  speedupView_->setObjectName(QStringLiteral("BenchSpeedupChart"));
  styleRolling(timeView_->plot(), tr("Time per call"), tr("median µs"));
  styleRolling(bwView_->plot(), tr("Achieved bandwidth"), tr("GB/s"));

  QCustomPlot* sp = speedupView_->plot();
  sp->plotLayout()->insertRow(0);
  sp->plotLayout()->addElement(
      0, 0, new QCPTextElement(sp, tr("Speedup over dense per shape"), QFont(QFont().family(), 10, QFont::Bold)));
  sp->yAxis->setLabel(tr("speedup (x)"));
  sp->legend->setVisible(true);
  QFont lf;
  lf.setPointSize(7);
  sp->legend->setFont(lf);
  sp->legend->setRowSpacing(-3);
  sp->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  sp->xAxis->setTicker(ticker);
  sp->xAxis->setTickLabelRotation(30);
  sp->xAxis->grid()->setVisible(false);

  unitLine_ = new QCPItemStraightLine(sp);
  unitLine_->setPen(QPen(QColor(120, 120, 120), 1, Qt::DotLine));
  unitLine_->point1->setCoords(0, 1.0);
  unitLine_->point2->setCoords(1, 1.0);
  limitLine_ = new QCPItemStraightLine(sp);
  limitLine_->setPen(QPen(QColor(0xc0, 0x1c, 0x28), 1.5, Qt::DashLine));
  limitText_ = new QCPItemText(sp);
  limitText_->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
  limitText_->position->setTypeY(QCPItemPosition::ptPlotCoords);
  limitText_->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
  limitText_->setColor(QColor(0xc0, 0x1c, 0x28));
  limitText_->setClipToAxisRect(false);
  setBandwidthLimit(limit_);
  speedupView_->setCsvProvider([this] { return speedupCsv(); });

  auto* top = new QSplitter(Qt::Horizontal, this);
  top->addWidget(timeView_);
  top->addWidget(bwView_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(top);
  split->addWidget(speedupView_);
  split->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);
  for (PlotView* v : {timeView_, bwView_, speedupView_}) v->setMinimumHeight(150);

  replotTimer_.setSingleShot(true);
  replotTimer_.setInterval(40);
  connect(&replotTimer_, &QTimer::timeout, this, &BenchCharts::replotNow);
  clear();
}

void BenchCharts::clear() {
  for (PlotView* v : {timeView_, bwView_}) v->plot()->clearGraphs();
  timeGraphs_.clear();
  bwGraphs_.clear();
  lastIndex_ = -1;
  setSpeedupBars({});
  replotNow();
}

QCPGraph* BenchCharts::graphFor(PlotView* view, std::map<QString, QCPGraph*>& graphs, const QString& kernel) {
  if (auto it = graphs.find(kernel); it != graphs.end()) return it->second;
  QCPGraph* g = view->plot()->addGraph();
  g->setName(kernel);
  const QColor c = colorFor(kernel);
  g->setPen(QPen(c, 1.5));
  g->setLineStyle(QCPGraph::lsLine);
  g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, c, c, 4));
  graphs[kernel] = g;
  return g;
}

void BenchCharts::addMeasurements(const QVector<BenchMeasurement>& ms) {
  for (const BenchMeasurement& m : ms) {
    graphFor(timeView_, timeGraphs_, m.kernel)->addData(m.index, m.us);
    graphFor(bwView_, bwGraphs_, m.kernel)->addData(m.index, m.gbs);
    lastIndex_ = std::max(lastIndex_, m.index);
  }
  if (window_ > 0 && lastIndex_ >= window_)
    for (auto* graphs : {&timeGraphs_, &bwGraphs_})
      for (auto& [name, g] : *graphs) g->data()->removeBefore(lastIndex_ - window_ + 1);
  scheduleReplot();
}

void BenchCharts::setSpeedupBars(const SpeedupBars& bars) {
  bars_ = bars;
  QCustomPlot* sp = speedupView_->plot();
  for (QCPBars* b : barPlottables_) sp->removePlottable(b);
  barPlottables_.clear();
  auto ticker = qSharedPointerCast<QCPAxisTickerText>(sp->xAxis->ticker());
  ticker->clear();
  for (int i = 0; i < bars.shapes.size(); ++i) ticker->addTick(i + 1, bars.shapes[i]);
  const int n = static_cast<int>(bars.series.size());
  const double width = n > 0 ? 0.8 / n : 0.8;
  for (int s = 0; s < n; ++s) {
    auto* b = new QCPBars(sp->xAxis, sp->yAxis);
    b->setName(bars.series[s]);
    b->setWidth(width);
    const QColor c = colorFor(bars.series[s]);
    b->setPen(QPen(c.darker(130)));
    b->setBrush(c);
    QVector<double> keys, values;
    for (int i = 0; i < bars.shapes.size() && s < bars.values.size() && i < bars.values[s].size(); ++i)
      if (bars.values[s][i] > 0) {
        keys.push_back(i + 1 + (s - (n - 1) / 2.0) * width);
        values.push_back(bars.values[s][i]);
      }
    b->setData(keys, values, true);
    barPlottables_.push_back(b);
  }
  const QString base = bars.baseline.isEmpty() ? tr("dense") : bars.baseline;
  sp->xAxis->setLabel(bars.shapes.isEmpty() ? QString() : tr("shape (batch %1, over %2)").arg(bars.batch).arg(base));
  scheduleReplot();
}

void BenchCharts::setBandwidthLimit(double speedup) {
  limit_ = speedup;
  limitLine_->point1->setCoords(0, limit_);
  limitLine_->point2->setCoords(1, limit_);
  limitText_->position->setCoords(0.995, limit_);
  limitText_->setText(bandwidthLimitLabel());
  scheduleReplot();
}

QString BenchCharts::bandwidthLimitLabel() const {
  return tr("bandwidth limit %1x (2 / 1.125 bytes per weight)").arg(limit_, 0, 'f', 2);
}

QStringList BenchCharts::kernelSeries() const {
  QStringList out;
  for (const auto& [name, g] : timeGraphs_) out << name;
  return out;
}

int BenchCharts::pointCount(const QString& kernel) const {
  const auto it = timeGraphs_.find(kernel);
  return it == timeGraphs_.end() ? 0 : it->second->dataCount();
}

int BenchCharts::barCount() const {
  int n = 0;
  for (const QCPBars* b : barPlottables_) n += b->dataCount();
  return n;
}

QString BenchCharts::speedupCsv() const {
  QString out;
  QTextStream s(&out);
  s << "shape,series,batch,baseline,speedup\n";
  for (int k = 0; k < bars_.series.size() && k < bars_.values.size(); ++k)
    for (int i = 0; i < bars_.shapes.size() && i < bars_.values[k].size(); ++i)
      if (bars_.values[k][i] > 0)
        s << '"' << bars_.shapes[i] << "\",\"" << bars_.series[k] << "\"," << bars_.batch << ",\"" << bars_.baseline
          << "\"," << QString::number(bars_.values[k][i], 'g', 8) << '\n';
  return out;
}

void BenchCharts::scheduleReplot() {
  if (!replotTimer_.isActive()) replotTimer_.start();
}

void BenchCharts::replotNow() {
  for (PlotView* v : {timeView_, bwView_}) {
    QCustomPlot* p = v->plot();
    if (p->graphCount() > 0) {
      p->rescaleAxes();
      const double lo = std::max(0, lastIndex_ - window_ + 1);
      p->xAxis->setRange(lo - 0.5, std::max(lo + 10.0, lastIndex_ + 0.5));
      p->yAxis->setRangeLower(0);
      p->yAxis->setRangeUpper(p->yAxis->range().upper * 1.1);
    } else {
      p->xAxis->setRange(0, 10);
      p->yAxis->setRange(0, 1);
    }
    v->requestReplot();
  }
  QCustomPlot* sp = speedupView_->plot();
  double top = limit_;
  for (const auto& series : bars_.values)
    for (double v : series) top = std::max(top, v);
  sp->yAxis->setRange(0, top * 1.15);
  sp->xAxis->setRange(0.4, std::max<qsizetype>(1, bars_.shapes.size()) + 0.6);
  speedupView_->requestReplot();
}

}  // namespace sdw::widgets
