#include "widgets/benchcharts.h"

#include "widgets/legendstrip.h"
#include "widgets/plotview.h"

#include <qcustomplot.h>

#include <QFontMetrics>
#include <QSplitter>
#include <QTextStream>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace sdw::widgets {

QVector<QCPBars*> addSideBySideBars(QCPAxis* xAxis, QCPAxis* yAxis, const QStringList& names,
                                    const QVector<QVector<double>>& values, const QVector<double>& centers,
                                    QColor (*color)(const QString& name)) {
  QVector<QCPBars*> out;
  const int n = static_cast<int>(names.size());
  const double width = n > 0 ? 0.8 / n : 0.8;
  for (int s = 0; s < n; ++s) {
    auto* b = new QCPBars(xAxis, yAxis);
    b->setName(names[s]);
    b->setWidth(width);
    const QColor c = color(names[s]);
    b->setPen(QPen(c.darker(130)));
    b->setBrush(c);
    QVector<double> keys, vals;
    for (int i = 0; i < centers.size() && s < values.size() && i < values[s].size(); ++i)
      if (values[s][i] > 0) {
        keys.push_back(centers[i] + (s - (n - 1) / 2.0) * width);
        vals.push_back(values[s][i]);
      }
    b->setData(keys, vals);
    out.push_back(b);
  }
  return out;
}

QCPTextElement* addChartTitle(QCustomPlot* p, const QString& title) {
  p->plotLayout()->insertRow(0);
  auto* t = new QCPTextElement(p, title, QFont(QFont().family(), 10, QFont::Bold));
  p->plotLayout()->addElement(0, 0, t);
  return t;
}

QPen limitLinePen() { return QPen(QColor(0xc0, 0x1c, 0x28), 1.5, Qt::DashLine); }

QCPAxis* addGroupAxisBelow(QCPAxis* xAxis) {
  QCPAxis* a = xAxis->axisRect()->addAxis(QCPAxis::atBottom);
  a->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  a->setBasePen(Qt::NoPen);
  a->setTickPen(Qt::NoPen);
  a->setSubTickPen(Qt::NoPen);
  a->setSubTicks(false);
  a->grid()->setVisible(false);
  a->setTickLabelPadding(0);
  a->setOffset(0);
  QFont bold = a->tickLabelFont();
  bold.setBold(true);
  a->setTickLabelFont(bold);
  QObject::connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), a,
                   qOverload<const QCPRange&>(&QCPAxis::setRange));
  return a;
}

namespace {

// The same kernel keeps its colour in every chart.
QColor colorFor(const QString& kernel) {
  // spMspV ("spmspv p_x 0.5"): one hue, darker as more of x is skipped.
  if (kernel.startsWith(QLatin1String("spmspv"))) {
    const auto at = kernel.indexOf(QLatin1String("p_x "));
    const double p = at < 0 ? 0.5 : std::clamp(kernel.mid(at + 4).section(QLatin1Char(' '), 0, 0).toDouble(), 0.0, 1.0);
    return QColor::fromHsvF(0.87f, static_cast<float>(0.35 + 0.6 * p), static_cast<float>(0.95 - 0.4 * p));
  }
  if (kernel.contains(QLatin1String("cuSPARSELt"))) return QColor(0x8c, 0x56, 0x4b);
  if (kernel.contains(QLatin1String("16:32"))) return QColor(0x17, 0xbe, 0xcf);
  if (kernel.contains(QLatin1String("8:16"))) return QColor(0x94, 0x67, 0xbd);
  if (kernel.contains(QLatin1String("4:8"))) return QColor(0x2c, 0xa0, 0x2c);
  if (kernel.contains(QLatin1String("2:4"))) return QColor(0x1f, 0x77, 0xb4);
  if (kernel.contains(QLatin1String("cuBLAS"))) return QColor(0xd6, 0x27, 0x28);
  if (kernel.contains(QLatin1String("dense"))) return QColor(0xff, 0x7f, 0x0e);
  return QColor(0x7f, 0x7f, 0x7f);
}

constexpr double kGroupGap = 0.6;  // extra slots between two models' shapes

void styleLegend(PlotView* v) {
  QCustomPlot* p = v->plot();
  p->legend->setVisible(true);
  p->legend->setFont(QFont(p->font().family(), 8));
  v->placeLegendAbove();
}

void styleGrowing(PlotView* v, const QString& title, const QString& yLabel) {
  QCustomPlot* p = v->plot();
  addChartTitle(p, title);
  // The measurement's place in this run, from 0: the same for a live run
  // and for a results file, and it matches the table's row order.
  p->xAxis->setLabel(QObject::tr("kernels timed since the run started"));
  p->yAxis->setLabel(yLabel);
  // On screen the strip above both charts names the series; a picture of
  // one chart carries its own legend.
  p->legend->setVisible(false);
  p->legend->setFont(QFont(p->font().family(), 8));
  v->setLegendInPictures(true);
}

}  // namespace

std::pair<QString, QString> BenchCharts::splitShapeLabel(const QString& shape) {
  // "layer (llama3-8b)": the whole-layer sequence, drawn with its model.
  if (shape.startsWith(QLatin1String("layer (")) && shape.endsWith(QLatin1Char(')')))
    return {shape.mid(7, shape.size() - 8), QStringLiteral("layer")};
  // "llama3-8b q_proj": the model's name goes under the group.
  if (const auto space = shape.lastIndexOf(QLatin1Char(' ')); space > 0) {
    QString module = shape.mid(space + 1);
    if (module.endsWith(QLatin1String("_proj"))) module.chop(5);
    return {shape.left(space), module};
  }
  return {QString(), shape};  // a custom ROWSxCOLS
}

BenchCharts::BenchCharts(QWidget* parent)
    : QWidget(parent),
      timeView_(new PlotView(this)),
      bwView_(new PlotView(this)),
      speedupView_(new PlotView(this)),
      activation_(new ActivationSparsityChart(this)) {
  setObjectName(QStringLiteral("benchCharts"));
  timeView_->setObjectName(QStringLiteral("benchTimeChart"));
  bwView_->setObjectName(QStringLiteral("benchBandwidthChart"));
  speedupView_->setObjectName(QStringLiteral("benchSpeedupChart"));
  styleGrowing(timeView_, tr("Time per call"), tr("median µs"));
  styleGrowing(bwView_, tr("Achieved bandwidth"), tr("GB/s"));

  QCustomPlot* sp = speedupView_->plot();
  addChartTitle(sp, tr("Speedup over dense per shape"));
  sp->yAxis->setLabel(tr("speedup (x)"));
  sp->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  sp->xAxis->setTickLabelRotation(0);
  sp->xAxis->grid()->setVisible(false);
  sp->xAxis->setSubTicks(false);
  // Model names on a second bottom axis under the projection labels: short
  // labels side by side instead of long rotated ones that run into each other.
  groupAxis_ = addGroupAxisBelow(sp->xAxis);

  unitLine_ = new QCPItemStraightLine(sp);
  unitLine_->setPen(QPen(QColor(120, 120, 120), 1, Qt::DotLine));
  unitLine_->point1->setCoords(0, 1.0);
  unitLine_->point2->setCoords(1, 1.0);
  limitLine_ = new QCPItemStraightLine(sp);
  limitLine_->setPen(limitLinePen());
  // The limit is named in the legend, outside the data, not in a label on
  // the line where the bars would cover it.
  limitLegend_ = sp->addGraph();
  limitLegend_->setPen(limitLine_->pen());
  limitLegend_->setSelectable(QCP::stNone);
  styleLegend(speedupView_);
  setBandwidthLimit(limit_);
  speedupView_->setCsvProvider([this] { return speedupCsv(); });
  connect(sp, &QCustomPlot::afterLayout, this, &BenchCharts::fitShapeLabels);

  // Time and bandwidth show the same kernels in the same colours: one legend
  // strip above the pair.
  auto* topBox = new QWidget(this);
  auto* tl = new QVBoxLayout(topBox);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->setSpacing(0);
  strip_ = new LegendStrip(topBox);
  strip_->setObjectName(QStringLiteral("benchLegend"));
  tl->addWidget(strip_);
  auto* top = new QSplitter(Qt::Horizontal, topBox);
  top->addWidget(timeView_);
  top->addWidget(bwView_);
  top->setChildrenCollapsible(false);
  tl->addWidget(top, 1);
  // The activation-sparsity chart beside the bars, while there is something to show in it.
  bottom_ = new QSplitter(Qt::Horizontal, this);
  bottom_->addWidget(speedupView_);
  bottom_->addWidget(activation_);
  bottom_->setChildrenCollapsible(false);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(topBox);
  split->addWidget(bottom_);
  split->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);
  for (PlotView* v : {timeView_, bwView_, speedupView_}) v->setMinimumSize(220, 150);

  replotTimer_.setSingleShot(true);
  replotTimer_.setInterval(40);
  connect(&replotTimer_, &QTimer::timeout, this, &BenchCharts::replotNow);
  clear();
}

void BenchCharts::clear() {
  for (PlotView* v : {timeView_, bwView_}) v->plot()->clearGraphs();
  timeGraphs_.clear();
  bwGraphs_.clear();
  stripKeys_.clear();
  spmspvShades_.clear();
  strip_->setEntries({});
  lastIndex_ = -1;
  setSpeedupBars({});
  setActivationSpeedups({});
  replotNow();
}

void BenchCharts::setActivationSpeedups(const ActivationSpeedups& s) {
  activation_->setSpeedups(s);
  const bool wasHidden = activation_->isHidden();
  activation_->setVisible(!s.isEmpty());
  if (wasHidden && !s.isEmpty()) {
    // Coming into view: half the row each (the splitter would go by size hints).
    const int half = std::max(1, bottom_->width() / 2);
    bottom_->setSizes({half, half});
  }
}

QCPGraph* BenchCharts::graphFor(PlotView* view, std::map<QString, QCPGraph*>& graphs, const QString& kernel) {
  if (auto it = graphs.find(kernel); it != graphs.end()) return it->second;
  QCPGraph* g = view->plot()->addGraph();
  g->setName(kernel);
  const QColor c = colorFor(kernel);
  // Points only: each is one kernel on one shape and batch, and a line from
  // one shape to the next would suggest a trend that is not there.
  g->setPen(QPen(c, 1.5));
  g->setLineStyle(QCPGraph::lsNone);
  g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, c, c, 5));
  graphs[kernel] = g;
  if (view == timeView_) {
    // The strip lists the kernels in the order they first appeared; the spMspV kernels of one
    // layout share an entry, a shade per p_x ("spmspv col2:4 · p_x 0, 0.25, 0.5, 0.75"): an
    // entry each took five lines for a four-p_x, four-layout run.
    QString key = kernel;
    double px = 0;
    const qsizetype at = kernel.indexOf(QLatin1String(" p_x "));
    if (kernel.startsWith(QLatin1String("spmspv")) && at >= 0) {
      const QString value = kernel.mid(at + 5).section(QLatin1Char(' '), 0, 0);
      px = value.toDouble();
      key = (kernel.left(at) + kernel.mid(at + 5 + value.size())).simplified();
      spmspvShades_[key][px] = {value, c};
    }
    if (!stripKeys_.contains(key)) stripKeys_ << key;
    QVector<LegendStrip::Entry> entries;
    for (const QString& k : stripKeys_) {
      const auto it = spmspvShades_.find(k);
      if (it == spmspvShades_.end()) {
        entries.push_back({k, colorFor(k), false, true});
        continue;
      }
      QStringList values;
      QVector<QColor> shades;
      for (const auto& [p, vc] : it->second) values << vc.first, shades << vc.second;
      entries.push_back(LegendStrip::shaded(k, QStringLiteral("p_x"), values, shades, false, true));
    }
    strip_->setEntries(entries);
  }
  return g;
}

void BenchCharts::addMeasurements(const QVector<BenchMeasurement>& ms) {
  for (const BenchMeasurement& m : ms) {
    graphFor(timeView_, timeGraphs_, m.kernel)->addData(m.index, m.us);
    graphFor(bwView_, bwGraphs_, m.kernel)->addData(m.index, m.gbs);
    lastIndex_ = std::max(lastIndex_, m.index);
  }
  scheduleReplot();
}

void BenchCharts::setSpeedupBars(const SpeedupBars& bars) {
  bars_ = bars;
  QCustomPlot* sp = speedupView_->plot();
  for (QCPBars* b : barPlottables_) sp->removePlottable(b);
  barPlottables_.clear();

  // Display order: each model's shapes together, in the order they came;
  // custom shapes form a group without a name.
  QStringList groups;
  QVector<QVector<int>> members;
  QStringList labels;
  for (int i = 0; i < bars.shapes.size(); ++i) {
    const auto [group, label] = splitShapeLabel(bars.shapes[i]);
    labels << label;
    auto g = groups.indexOf(group);
    if (g < 0) {
      g = groups.size();
      groups << group;
      members.push_back({});
    }
    members[g].push_back(i);
  }
  order_.clear();
  positions_.clear();
  tickLabels_.clear();
  groupNames_.clear();
  groupCenters_.clear();
  QVector<double> positionOf(bars.shapes.size(), 0.0);
  double x = 1.0;
  for (int g = 0; g < groups.size(); ++g) {
    if (g > 0) x += kGroupGap;
    const double first = x;
    for (int i : members[g]) {
      order_ << i;
      positions_ << x;
      positionOf[i] = x;
      tickLabels_ << labels[i];
      x += 1.0;
    }
    if (!groups[g].isEmpty()) {
      groupNames_ << groups[g];
      groupCenters_ << (first + x - 1.0) / 2.0;
    }
  }
  applyShapeTicks();

  for (QCPBars* b : addSideBySideBars(sp->xAxis, sp->yAxis, bars.series, bars.values, positionOf, colorFor))
    barPlottables_.push_back(b);
  // The limit's entry after the bars' ones.
  limitLegend_->removeFromLegend();
  limitLegend_->addToLegend();
  const QString base = bars.baseline.isEmpty() ? tr("dense") : bars.baseline;
  groupAxis_->setLabel(bars.shapes.isEmpty() ? QString() : tr("shape (batch %1, over %2)").arg(bars.batch).arg(base));
  scheduleReplot();
}

void BenchCharts::applyShapeTicks() {
  QCustomPlot* sp = speedupView_->plot();
  auto ticker = qSharedPointerCast<QCPAxisTickerText>(sp->xAxis->ticker());
  ticker->clear();
  for (int k = 0; k < positions_.size(); ++k)
    ticker->addTick(positions_[k], staggered_ && k % 2 == 1 ? QStringLiteral("\n") + tickLabels_[k] : tickLabels_[k]);
  auto groupTicker = qSharedPointerCast<QCPAxisTickerText>(groupAxis_->ticker());
  groupTicker->clear();
  for (int g = 0; g < groupNames_.size(); ++g) groupTicker->addTick(groupCenters_[g], groupNames_[g]);
}

void BenchCharts::fitShapeLabels() {
  // Labels alternate between two lines when the widest does not fit in the
  // space one shape gets at this width.
  QCustomPlot* sp = speedupView_->plot();
  const double slot = std::abs(sp->xAxis->coordToPixel(1.0) - sp->xAxis->coordToPixel(0.0));
  const QFontMetrics fm(sp->xAxis->tickLabelFont());
  int widest = 0;
  for (const QString& l : tickLabels_) widest = std::max(widest, fm.horizontalAdvance(l));
  const bool stagger = tickLabels_.size() > 1 && widest + 6 > slot;
  if (stagger == staggered_) return;
  staggered_ = stagger;
  applyShapeTicks();
  sp->replot(QCustomPlot::rpQueuedReplot);
}

QStringList BenchCharts::shapeTickLabels() const { return tickLabels_; }
QStringList BenchCharts::shapeGroupLabels() const { return groupNames_; }

QVector<QRect> BenchCharts::shapeLabelRects() const {
  const QCustomPlot* sp = speedupView_->plot();
  QVector<QRect> out;
  const QFontMetrics fm(sp->xAxis->tickLabelFont());
  const int top = sp->axisRect()->bottom() + sp->xAxis->tickLabelPadding();
  for (int k = 0; k < positions_.size(); ++k) {
    const int w = fm.horizontalAdvance(tickLabels_[k]);
    const int cx = static_cast<int>(std::lround(sp->xAxis->coordToPixel(positions_[k])));
    const int line = staggered_ && k % 2 == 1 ? 1 : 0;
    out << QRect(cx - w / 2, top + line * fm.lineSpacing(), w, fm.height());
  }
  return out;
}

void BenchCharts::setBandwidthLimit(double speedup) {
  limit_ = speedup;
  limitLine_->point1->setCoords(0, limit_);
  limitLine_->point2->setCoords(1, limit_);
  limitLegend_->setName(bandwidthLimitLabel());
  scheduleReplot();
}

QString BenchCharts::bandwidthLimitLabel() const {
  return tr("bandwidth limit %1x").arg(limit_, 0, 'f', 2);
}

QColor BenchCharts::seriesColor(const QString& kernel) const {
  const auto it = timeGraphs_.find(kernel);
  return it == timeGraphs_.end() ? QColor() : it->second->pen().color();
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
    // The whole run from its first measurement: the axis starts at 0.
    p->xAxis->setRange(-0.5, std::max(10.0, lastIndex_ + 0.5));
    if (p->graphCount() > 0) {
      p->yAxis->rescale();
      p->yAxis->setRange(0, std::max(p->yAxis->range().upper * 1.1, 1e-9));
    } else {
      p->yAxis->setRange(0, 1);
    }
    v->requestReplot();
  }
  QCustomPlot* sp = speedupView_->plot();
  double top = limit_;
  for (const auto& series : bars_.values)
    for (double v : series) top = std::max(top, v);
  sp->yAxis->setRange(0, top * 1.15);
  if (positions_.isEmpty()) sp->xAxis->setRange(0.4, 1.6);
  else sp->xAxis->setRange(positions_.first() - 0.6, positions_.last() + 0.6);
  speedupView_->requestReplot();
}

}  // namespace sdw::widgets
