#include "widgets/decodebenchcharts.h"

#include "widgets/benchcharts.h"  // addChartTitle, addGroupAxisBelow, addSideBySideBars
#include "widgets/csv.h"
#include "widgets/legendstrip.h"
#include "widgets/plotview.h"

#include <qcustomplot.h>

#include <QSplitter>
#include <QTextStream>
#include <QVBoxLayout>

#include <algorithm>

namespace sdw::widgets {

namespace {

// An engine keeps the colour the kernel charts give its kernel (cuBLAS red,
// our dense GEMV orange, sparse blue / green / purple / cyan by pattern, the
// spMspV column layouts brown (col2:4) and pink (col4:8)); a larger batch is a
// darker shade of it.
QColor engineColor(const QString& linear, const QString& pattern) {
  if (linear == QLatin1String("sparse")) {
    if (pattern == QLatin1String("2:4")) return QColor(0x1f, 0x77, 0xb4);
    if (pattern == QLatin1String("4:8")) return QColor(0x2c, 0xa0, 0x2c);
    if (pattern == QLatin1String("8:16")) return QColor(0x94, 0x67, 0xbd);
    if (pattern == QLatin1String("16:32")) return QColor(0x17, 0xbe, 0xcf);
    if (pattern == QLatin1String("col4:8")) return QColor(0xe3, 0x77, 0xc2);
    if (pattern == QLatin1String("col2:4")) return QColor(0x8c, 0x56, 0x4b);
    return QColor(0xbc, 0xbd, 0x22);  // a pattern of a checkpoint's own
  }
  if (linear == QLatin1String("cublas")) return QColor(0xd6, 0x27, 0x28);
  if (linear == QLatin1String("dense")) return QColor(0xff, 0x7f, 0x0e);
  return QColor(0x7f, 0x7f, 0x7f);  // eager
}

QColor cellColor(const DecodeStepPoint& p) {
  const QColor base = engineColor(p.linear, p.pattern);
  const int shade = p.batch >= 8 ? 190 : p.batch >= 4 ? 155 : p.batch >= 2 ? 125 : 100;
  return base.darker(shade);
}

QColor patternColor(const QString& pattern) { return engineColor(QStringLiteral("sparse"), pattern); }

const QColor kLimitColor(0xc0, 0x1c, 0x28);
constexpr double kLimitHalfWidth = 0.45;  // the limit line spans its group's bars

}  // namespace

DecodeBenchCharts::DecodeBenchCharts(QWidget* parent)
    : QWidget(parent), stepView_(new PlotView(this)), speedupView_(new PlotView(this)) {
  setObjectName(QStringLiteral("decodeCharts"));
  stepView_->setObjectName(QStringLiteral("decodeStepChart"));
  speedupView_->setObjectName(QStringLiteral("decodeSpeedupChart"));

  QCustomPlot* p = stepView_->plot();
  addChartTitle(p, tr("Decode speed per timed step"));
  p->xAxis->setLabel(tr("timed steps since the run started"));
  p->yAxis->setLabel(tr("tokens/s"));
  p->yAxis->ticker()->setTickCount(4);  // a grid's legend strip leaves the chart short
  // The strip above names the cells; a picture of the chart alone carries its own legend.
  p->legend->setVisible(false);
  p->legend->setFont(QFont(p->font().family(), 8));
  stepView_->setLegendInPictures(true);
  stepView_->enableHover([](const QString& series, int, double key, double value) {
    return tr("%1\nstep %2: %3 tokens/s").arg(series).arg(key, 0, 'f', 0).arg(value, 0, 'f', 1);
  });

  QCustomPlot* sp = speedupView_->plot();
  addChartTitle(sp, tr("Sparse speed-up over the dense engine"));
  sp->yAxis->setLabel(tr("speed-up (x)"));
  // About four value labels: a dual-sparse run's limits near 3x lift the axis to ~3.5, where
  // the default five-ish put eight labels at 0.5 steps into the short bar chart.
  sp->yAxis->ticker()->setTickCount(4);
  sp->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  sp->xAxis->grid()->setVisible(false);
  sp->xAxis->setSubTicks(false);
  // Config names on a second bottom axis, once under their batches (as the kernel page puts
  // model names under its projections): "llama-3.1-8b" under every slot ran into its neighbours.
  configAxis_ = addGroupAxisBelow(sp->xAxis);
  unitLine_ = new QCPItemStraightLine(sp);
  unitLine_->setPen(QPen(QColor(120, 120, 120), 1, Qt::DotLine));
  unitLine_->point1->setCoords(0, 1.0);
  unitLine_->point2->setCoords(1, 1.0);
  // The limit is named in the legend, not in a label on the line where the
  // bars would cover it.
  limitLegend_ = sp->addGraph();
  limitLegend_->setPen(QPen(kLimitColor, 1.5, Qt::DashLine));
  limitLegend_->setSelectable(QCP::stNone);
  limitLegend_->setName(tr("bandwidth limit (dense bytes / sparse bytes per step)"));
  sp->legend->setVisible(true);
  sp->legend->setFont(QFont(sp->font().family(), 8));
  speedupView_->placeLegendAbove();
  speedupView_->setCsvProvider([this] { return speedupCsv(); });
  speedupView_->enableHover([this](const QString& series, int index, double, double value) -> QString {
    if (series.isEmpty() || series == limitLegend_->name()) return {};
    // The bar's group: the index counts the series' bars with a value, in group order.
    const int s = static_cast<int>(bars_.patterns.indexOf(series));
    if (s < 0 || s >= bars_.speedups.size()) return {};
    int seen = -1;
    for (int g = 0; g < bars_.groups.size() && g < bars_.speedups[s].size(); ++g) {
      if (bars_.speedups[s][g] <= 0 || ++seen != index) continue;
      QString group = bars_.groups[g];
      group.replace(QLatin1Char('\n'), QStringLiteral(", "));
      const double limit = g < bars_.limits.size() ? bars_.limits[g] : 0.0;
      const QString base = g < bars_.baselines.size() ? bars_.baselines[g] : QString();
      return tr("%1, sparse %2\n%3x over %4%5")
          .arg(group, series)
          .arg(value, 0, 'f', 2)
          .arg(base)
          .arg(limit > 0 ? tr(" (limit %1x)").arg(limit, 0, 'f', 2) : QString());
    }
    return {};
  });

  auto* topBox = new QWidget(this);
  auto* tl = new QVBoxLayout(topBox);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->setSpacing(0);
  strip_ = new LegendStrip(topBox);
  strip_->setObjectName(QStringLiteral("decodeLegend"));
  tl->addWidget(strip_);
  tl->addWidget(stepView_, 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(topBox);
  split->addWidget(speedupView_);
  split->setChildrenCollapsible(false);
  // The bars below get as much height as the steps above (their title, legend and two label
  // rows take half of theirs).
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({1000, 1000});
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);
  for (PlotView* v : {stepView_, speedupView_}) v->setMinimumSize(220, 150);

  replotTimer_.setSingleShot(true);
  replotTimer_.setInterval(40);
  connect(&replotTimer_, &QTimer::timeout, this, &DecodeBenchCharts::replotNow);
  clear();
}

void DecodeBenchCharts::clear() {
  stepView_->plot()->clearGraphs();
  graphs_.clear();
  cells_.clear();
  legendEngines_.clear();
  legendShades_.clear();
  legendGraphs_.clear();
  strip_->setEntries({});
  lastIndex_ = -1;
  setSpeedupBars({});
  replotNow();
}

QCPGraph* DecodeBenchCharts::graphFor(const DecodeStepPoint& p) {
  if (auto it = graphs_.find(p.cell); it != graphs_.end()) return it->second;
  QCPGraph* g = stepView_->plot()->addGraph();
  g->setName(p.cell);
  const QColor c = cellColor(p);
  // A line through the cell's steps: they are one run of the same engine,
  // and its jitter from step to step is what the chart is read for.
  g->setPen(QPen(c, 1.5));
  g->setLineStyle(QCPGraph::lsLine);
  g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, c, c, 3));
  g->removeFromLegend();
  graphs_[p.cell] = g;
  cells_ << p.cell;
  // One legend entry per engine, with a shade per batch: the configs of a run share the
  // colours and follow each other along the step axis, so naming every (config, engine,
  // batch) cell would only repeat the engines, and an entry per (engine, batch) fills five
  // lines for a whole grid. "sparse 2:4 · batch 1, 2, 4, 8" and its four shades, light to
  // dark; an engine run at one batch keeps the one sample ("dense · batch 1").
  const qsizetype sep = p.cell.indexOf(QStringLiteral(" · "));
  const QString name = sep >= 0 ? p.cell.mid(sep + 3) : p.cell;
  const qsizetype cut = name.lastIndexOf(QStringLiteral(" · batch "));
  const QString engine = cut >= 0 ? name.left(cut) : name;
  if (!legendEngines_.contains(engine)) legendEngines_ << engine;
  legendShades_[engine][p.batch] = c;
  QVector<LegendStrip::Entry> entries;
  for (const QString& e : legendEngines_) {
    const std::map<int, QColor>& shades = legendShades_[e];
    QStringList batches;
    QVector<QColor> colors;
    for (const auto& [batch, color] : shades) batches << QString::number(batch), colors << color;
    const LegendStrip::Entry entry = LegendStrip::shaded(e, QStringLiteral("batch"), batches, colors, true, false);
    entries.push_back(entry);
    QCPGraph*& lg = legendGraphs_[e];
    if (!lg) {
      lg = stepView_->plot()->addGraph();
      lg->setPen(QPen(colors.first(), 1.5));
      lg->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colors.first(), colors.first(), 3));
    }
    lg->setName(colors.size() > 1 ? entry.name + tr(" (light to dark)") : entry.name);
  }
  strip_->setEntries(entries);
  return g;
}

void DecodeBenchCharts::addSteps(const QVector<DecodeStepPoint>& points) {
  for (const DecodeStepPoint& p : points) {
    graphFor(p)->addData(p.index, p.tokensPerSecond);
    lastIndex_ = std::max(lastIndex_, p.index);
  }
  scheduleReplot();
}

void DecodeBenchCharts::setFollowing(bool on) {
  following_ = on;
  scheduleReplot();
}

void DecodeBenchCharts::setScrollWindow(int steps) {
  window_ = std::max(10, steps);
  scheduleReplot();
}

void DecodeBenchCharts::setSpeedupBars(const DecodeSpeedupBars& bars) {
  bars_ = bars;
  QCustomPlot* sp = speedupView_->plot();
  for (QCPBars* b : barPlottables_) sp->removePlottable(b);
  barPlottables_.clear();
  for (QCPItemLine* l : limitLines_) sp->removeItem(l);
  limitLines_.clear();
  limitValues_.clear();

  // One slot per (config, batch) group at x = 1, 2, ...; the patterns side by side in it.
  // "CONFIG\nbatch N": the batch under the slot, the config once under its consecutive slots.
  auto ticker = qSharedPointerCast<QCPAxisTickerText>(sp->xAxis->ticker());
  auto configTicker = qSharedPointerCast<QCPAxisTickerText>(configAxis_->ticker());
  ticker->clear();
  configTicker->clear();
  tickLabels_ = bars.groups;
  for (int g = 0, first = 0; g < bars.groups.size(); ++g) {
    const QString& label = bars.groups[g];
    const qsizetype cut = label.indexOf(QLatin1Char('\n'));
    ticker->addTick(g + 1.0, cut < 0 ? label : label.mid(cut + 1));
    const QString config = cut < 0 ? QString() : label.left(cut);
    const bool last = g + 1 == bars.groups.size() || !bars.groups[g + 1].startsWith(config + QLatin1Char('\n'));
    if (!last) continue;
    if (!config.isEmpty()) configTicker->addTick((first + 1.0 + g + 1.0) / 2, config);
    first = g + 1;
  }

  QVector<double> centers;
  for (int g = 0; g < bars.groups.size(); ++g) centers.push_back(g + 1.0);
  for (QCPBars* b : addSideBySideBars(sp->xAxis, sp->yAxis, bars.patterns, bars.speedups, centers, patternColor))
    barPlottables_.push_back(b);
  // The limit of each group's speed-up over its bars: the batch changes the
  // KV cache's share of the bytes, so the limit is a group's own.
  for (int g = 0; g < bars.groups.size() && g < bars.limits.size(); ++g) {
    if (bars.limits[g] <= 0) continue;
    auto* line = new QCPItemLine(sp);
    line->setPen(limitLegend_->pen());
    line->start->setCoords(g + 1.0 - kLimitHalfWidth, bars.limits[g]);
    line->end->setCoords(g + 1.0 + kLimitHalfWidth, bars.limits[g]);
    line->setSelectable(false);
    limitLines_.push_back(line);
    limitValues_.push_back(bars.limits[g]);
  }
  // The limit's entry after the bars' ones. Always there, as on the kernel
  // page: the legend's row never empties (an empty legend narrows the plot).
  limitLegend_->removeFromLegend();
  limitLegend_->addToLegend();
  QString base;
  if (!bars.baselines.isEmpty() && bars.baselines.count(bars.baselines.first()) == bars.baselines.size())
    base = bars.baselines.first();
  configAxis_->setLabel(bars.groups.isEmpty() ? QString()
                        : base.isEmpty()      ? tr("config and batch (over each group's dense baseline)")
                                              : tr("config and batch (over %1)").arg(base));
  scheduleReplot();
}

QStringList DecodeBenchCharts::cellSeries() const { return cells_; }

int DecodeBenchCharts::pointCount(const QString& cell) const {
  const auto it = graphs_.find(cell);
  return it == graphs_.end() ? 0 : it->second->dataCount();
}

QStringList DecodeBenchCharts::pictureLegend() const {
  QStringList out;
  const QCPLegend* legend = stepView_->plot()->legend;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i))) out << item->plottable()->name();
  return out;
}

QColor DecodeBenchCharts::seriesColor(const QString& cell) const {
  const auto it = graphs_.find(cell);
  return it == graphs_.end() ? QColor() : it->second->pen().color();
}

QVector<QPointF> DecodeBenchCharts::points(const QString& cell) const {
  QVector<QPointF> out;
  const auto it = graphs_.find(cell);
  if (it == graphs_.end()) return out;
  for (auto d = it->second->data()->constBegin(); d != it->second->data()->constEnd(); ++d)
    out.push_back({d->key, d->value});
  return out;
}

int DecodeBenchCharts::barCount() const {
  int n = 0;
  for (const QCPBars* b : barPlottables_) n += b->dataCount();
  return n;
}

QVector<QColor> DecodeBenchCharts::barColors() const {
  QVector<QColor> out;
  for (const QCPBars* b : barPlottables_) out.push_back(b->brush().color());
  return out;
}

QVector<double> DecodeBenchCharts::limitLineValues() const { return limitValues_; }

QStringList DecodeBenchCharts::groupTickLabels() const { return tickLabels_; }

QStringList DecodeBenchCharts::drawnTickLabels() const {
  const auto t = qSharedPointerCast<QCPAxisTickerText>(speedupView_->plot()->xAxis->ticker());
  return QStringList(t->ticks().begin(), t->ticks().end());
}

QStringList DecodeBenchCharts::configAxisLabels() const {
  const auto t = qSharedPointerCast<QCPAxisTickerText>(configAxis_->ticker());
  return QStringList(t->ticks().begin(), t->ticks().end());
}

QVector<QPair<int, int>> DecodeBenchCharts::drawnLabelSpans(bool configRow) const {
  const QCPAxis* axis = configRow ? configAxis_ : speedupView_->plot()->xAxis;
  const QFontMetrics fm(axis->tickLabelFont());
  const auto t = qSharedPointerCast<QCPAxisTickerText>(axis->ticker());
  QVector<QPair<int, int>> out;
  for (auto it = t->ticks().begin(); it != t->ticks().end(); ++it) {
    const int w = fm.horizontalAdvance(it.value());
    const int cx = static_cast<int>(std::lround(axis->coordToPixel(it.key())));
    out.push_back({cx - w / 2, cx - w / 2 + w});
  }
  return out;
}

QVector<int> DecodeBenchCharts::valueLabelRows(bool speedup) const {
  const QCPAxis* axis = (speedup ? speedupView_ : stepView_)->plot()->yAxis;
  QVector<int> out;
  for (const double v : axis->tickVector())
    if (axis->range().contains(v)) out.push_back(static_cast<int>(std::lround(axis->coordToPixel(v))));
  std::sort(out.begin(), out.end());
  return out;
}

int DecodeBenchCharts::valueLabelHeight() const {
  return QFontMetrics(speedupView_->plot()->yAxis->tickLabelFont()).height();
}

QString DecodeBenchCharts::speedupCsv() const {
  QString out;
  QTextStream s(&out);
  s << "group,pattern,baseline,speedup,speedup_limit\n";
  for (int p = 0; p < bars_.patterns.size() && p < bars_.speedups.size(); ++p)
    for (int g = 0; g < bars_.groups.size() && g < bars_.speedups[p].size(); ++g) {
      if (bars_.speedups[p][g] <= 0) continue;
      QString group = bars_.groups[g];
      group.replace(QLatin1Char('\n'), QLatin1Char(' '));
      s << csvField(group) << ',' << csvField(bars_.patterns[p]) << ','
        << csvField(g < bars_.baselines.size() ? bars_.baselines[g] : QString()) << ','
        << csvNumber(bars_.speedups[p][g]) << ',' << csvNumber(g < bars_.limits.size() ? bars_.limits[g] : 0.0) << '\n';
    }
  return out;
}

void DecodeBenchCharts::scheduleReplot() {
  if (!replotTimer_.isActive()) replotTimer_.start();
}

void DecodeBenchCharts::replotNow() {
  QCustomPlot* p = stepView_->plot();
  // Live: the newest steps scroll in at the right; otherwise the whole run.
  const double last = std::max(0, lastIndex_);
  if (following_ && lastIndex_ + 1 > window_) p->xAxis->setRange(last - window_ + 0.5, last + 0.5);
  else p->xAxis->setRange(-0.5, std::max(following_ ? window_ - 0.5 : 10.0, last + 0.5));
  // Tokens/s from 0 over the steps in view: the axis shows their real ratios.
  double top = 0;
  for (const auto& [name, g] : graphs_) {
    bool found = false;
    const QCPRange r = g->getValueRange(found, QCP::sdBoth, p->xAxis->range());
    if (found) top = std::max(top, r.upper);
  }
  p->yAxis->setRange(0, top > 0 ? top * 1.1 : 1.0);
  stepView_->requestReplot();

  QCustomPlot* sp = speedupView_->plot();
  double high = 1.0;
  for (const auto& series : bars_.speedups)
    for (double v : series) high = std::max(high, v);
  for (double v : limitValues_) high = std::max(high, v);
  sp->yAxis->setRange(0, high * 1.15);
  sp->xAxis->setRange(0.4, std::max(1.6, bars_.groups.size() + 0.6));
  speedupView_->requestReplot();
}

}  // namespace sdw::widgets
