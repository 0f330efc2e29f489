#include "widgets/studychart.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace sdw::widgets {

QColor studySeriesColor(const QString& source, int shade) {
  QColor base(0x7f, 0x7f, 0x7f);
  if (source == QLatin1String("fixed")) base = QColor(0x1f, 0x77, 0xb4);
  else if (source == QLatin1String("ar")) base = QColor(0xd6, 0x27, 0x28);
  else if (source == QLatin1String("cross-model")) base = QColor(0x2c, 0xa0, 0x2c);
  return shade <= 0 ? base : base.lighter(100 + 45 * std::min(shade, 3));
}

StudyChart::StudyChart(const QString& title, QWidget* parent) : PlotView(parent) {
  QCustomPlot* p = plot();
  p->plotLayout()->insertRow(0);
  p->plotLayout()->addElement(0, 0, new QCPTextElement(p, title, QFont(QFont().family(), 10, QFont::Bold)));
  p->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  p->xAxis->grid()->setVisible(false);
  p->xAxis->setSubTicks(false);
  p->xAxis->setTickLength(0, 4);
  p->yAxis->grid()->setSubGridVisible(false);
  // Bars keep their place: only the value axis zooms and drags.
  p->axisRect()->setRangeDrag(Qt::Vertical);
  p->axisRect()->setRangeZoom(Qt::Vertical);

  reference_ = new QCPItemStraightLine(p);
  reference_->setPen(QPen(QColor(90, 90, 90), 1.2, Qt::DashLine));
  reference_->setVisible(false);
  referenceLegend_ = p->addGraph();
  referenceLegend_->setPen(reference_->pen());
  referenceLegend_->setSelectable(QCP::stNone);
  referenceLegend_->removeFromLegend();

  p->legend->setVisible(true);
  p->legend->setFont(QFont(p->font().family(), 8));
  placeLegendAbove();
  setCsvProvider([this] { return chart_.csv; });
  enableHover([this](const QString& name, int index, double, double) -> QString {
    for (int s = 0; s < bars_.size(); ++s) {
      if (bars_[s]->name() != name || index < 0 || index >= barGroups_[s].size()) continue;
      const int g = barGroups_[s][index];
      const QStringList& tips = chart_.series[s].tips;
      return g < tips.size() ? tips[g] : QString();
    }
    return {};
  });
}

void StudyChart::setChart(const StudyChartData& chart) {
  chart_ = chart;
  QCustomPlot* p = plot();
  for (QCPErrorBars* e : errors_) p->removePlottable(e);
  for (QCPBars* b : bars_) p->removePlottable(b);
  errors_.clear();
  bars_.clear();
  barGroups_.clear();

  const int n = static_cast<int>(chart.series.size());
  const double width = n > 0 ? 0.8 / n : 0.8;
  double top = 0, bottom = 0;
  for (int s = 0; s < n; ++s) {
    const StudyBarSeries& series = chart.series[s];
    auto* b = new QCPBars(p->xAxis, p->yAxis);
    b->setName(series.name);
    b->setWidth(width * 0.92);
    const QColor c = studySeriesColor(series.source, series.shade);
    b->setPen(QPen(c.darker(135)));
    b->setBrush(c);
    QVector<double> keys, values, errs;
    QVector<int> groups;
    for (int g = 0; g < chart.groups.size() && g < series.values.size(); ++g) {
      const double v = series.values[g];
      if (!std::isfinite(v)) continue;
      const double e = g < series.ci.size() && std::isfinite(series.ci[g]) ? series.ci[g] : 0.0;
      keys << g + (s - (n - 1) / 2.0) * width;
      values << v;
      errs << e;
      groups << g;
      top = std::max(top, v + e);
      bottom = std::min(bottom, v - e);
    }
    b->setData(keys, values, true);
    auto* eb = new QCPErrorBars(p->xAxis, p->yAxis);
    eb->removeFromLegend();
    eb->setSelectable(QCP::stNone);
    eb->setDataPlottable(b);
    eb->setErrorType(QCPErrorBars::etValueError);
    eb->setPen(QPen(QColor(40, 40, 40), 1.2));
    eb->setWhiskerWidth(std::clamp(int(60 * width), 4, 12));
    eb->setData(errs);
    bars_ << b;
    errors_ << eb;
    barGroups_ << groups;
  }

  auto ticker = qSharedPointerCast<QCPAxisTickerText>(p->xAxis->ticker());
  ticker->clear();
  for (int g = 0; g < chart.groups.size(); ++g) ticker->addTick(g, chart.groups[g]);
  p->xAxis->setLabel(chart.xLabel);
  p->yAxis->setLabel(chart.yLabel);
  p->xAxis->setRange(-0.6, std::max<double>(static_cast<double>(chart.groups.size()) - 0.4, 0.6));

  const bool guide = std::isfinite(chart.reference);
  reference_->setVisible(guide);
  if (guide) {
    reference_->point1->setCoords(0, chart.reference);
    reference_->point2->setCoords(1, chart.reference);
    top = std::max(top, chart.reference);
  }
  // The guide's entry after the bars' ones.
  referenceLegend_->removeFromLegend();
  referenceLegend_->setName(chart.referenceLabel);
  if (guide && !chart.referenceLabel.isEmpty()) referenceLegend_->addToLegend();

  // The floor is the figure's own (KL and shares are not negative): an
  // interval reaching below it is cut at the axis.
  const double lo = std::isfinite(chart.yMin) ? chart.yMin : bottom;
  const double hi = std::isfinite(chart.yMax) ? std::max(chart.yMax, top) : (top > lo ? top * 1.08 : lo + 1.0);
  p->yAxis->setRange(lo, hi);
  p->legend->setVisible(n > 0);
  requestReplot();
}

int StudyChart::barCount() const {
  int n = 0;
  for (const QCPBars* b : bars_) n += b->dataCount();
  return n;
}

QVector<double> StudyChart::barValues() const {
  QVector<double> out;
  for (const QCPBars* b : bars_)
    for (auto it = b->data()->constBegin(); it != b->data()->constEnd(); ++it) out << it->value;
  return out;
}

QVector<double> StudyChart::errorValues() const {
  QVector<double> out;
  for (const QCPErrorBars* e : errors_)
    for (auto it = e->data()->constBegin(); it != e->data()->constEnd(); ++it) out << it->errorPlus;
  return out;
}

QStringList StudyChart::legendNames() const {
  QStringList out;
  QCPLegend* legend = plot()->legend;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i))) out << item->plottable()->name();
  return out;
}

QStringList StudyChart::groupLabels() const { return chart_.groups; }

bool StudyChart::hasReferenceLine() const { return reference_->visible(); }

double StudyChart::referenceValue() const {
  return reference_->visible() ? reference_->point1->coords().y() : std::nan("");
}

QPoint StudyChart::barPixel(int series, int group) const {
  if (series < 0 || series >= bars_.size()) return {-1, -1};
  const int index = static_cast<int>(barGroups_[series].indexOf(group));
  if (index < 0) return {-1, -1};
  const auto it = bars_[series]->data()->constBegin() + index;
  return QPoint(int(plot()->xAxis->coordToPixel(it->key)), int(plot()->yAxis->coordToPixel(it->value)));
}

}  // namespace sdw::widgets
