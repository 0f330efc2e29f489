#include "widgets/activationsparsitychart.h"

#include "widgets/benchcharts.h"
#include "widgets/csv.h"
#include "widgets/legendstrip.h"
#include "widgets/plotview.h"

#include <qcustomplot.h>

#include <QTextStream>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace sdw::widgets {

namespace {

// Projections keep their colour across models (red and black are the limit's and the median's).
const QColor kPalette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                           QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2),
                           QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf), QColor(0x7f, 0x7f, 0x7f)};
const QColor kMedianColor(0x20, 0x20, 0x20);
QColor groupColor(qsizetype i) { return kPalette[static_cast<std::size_t>(i) % std::size(kPalette)]; }

QString sparsityText(double p) { return QString::number(p, 'g', 3); }

// The other layouts' lines, in the run's order: a dash and a marker each (the legend strip's
// median entries show the dash).
struct LayoutStyle {
  Qt::PenStyle pen;
  QCPScatterStyle::ScatterShape marker;
};
const LayoutStyle kLayoutStyles[] = {{Qt::DashLine, QCPScatterStyle::ssTriangle},
                                     {Qt::DotLine, QCPScatterStyle::ssDiamond},
                                     {Qt::DashDotLine, QCPScatterStyle::ssCross}};
const LayoutStyle& layoutStyle(qsizetype i) {
  return kLayoutStyles[static_cast<std::size_t>(i) % std::size(kLayoutStyles)];
}

}  // namespace

QString ActivationSparsityChart::medianName(const QString& layout) {
  return layout.isEmpty() ? tr("median over the shapes") : tr("median, %1").arg(layout);
}
QString ActivationSparsityChart::limitName(const QString& layout) {
  return layout.isEmpty() ? tr("bytes limit (dense bytes / spMspV bytes)") : tr("bytes limit, %1").arg(layout);
}

ActivationSparsityChart::ActivationSparsityChart(QWidget* parent)
    : QWidget(parent), view_(new PlotView(this)), strip_(new LegendStrip(this)) {
  setObjectName(QStringLiteral("benchActivationChart"));
  view_->setObjectName(QStringLiteral("benchActivationPlot"));
  strip_->setObjectName(QStringLiteral("benchActivationLegend"));
  QCustomPlot* p = view_->plot();
  title_ = addChartTitle(p, QString());
  p->yAxis->setLabel(tr("speedup (x)"));
  p->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  p->xAxis->setSubTicks(false);
  // On screen the strip names the colours; a picture carries the legend of every line.
  p->legend->setVisible(false);
  p->legend->setFont(QFont(p->font().family(), 8));
  view_->setLegendInPictures(true);
  unitLine_ = new QCPItemStraightLine(p);
  unitLine_->setPen(QPen(QColor(120, 120, 120), 1, Qt::DotLine));
  unitLine_->point1->setCoords(0, 1.0);
  unitLine_->point2->setCoords(1, 1.0);
  view_->setCsvProvider([this] { return toCsv(); });
  view_->enableHover([this](const QString& series, int, double key, double value) {
    if (series.isEmpty()) return QString();
    return tr("%1\np_x %2: %3x over %4").arg(series, sparsityText(key)).arg(value, 0, 'f', 2).arg(data_.baseline);
  });
  view_->setMinimumSize(220, 150);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(strip_);
  layout->addWidget(view_, 1);
  setSpeedups({});
}

void ActivationSparsityChart::setSpeedups(const ActivationSpeedups& s) {
  data_ = s;
  QCustomPlot* p = view_->plot();
  p->clearGraphs();
  const int n = static_cast<int>(s.sparsities.size());
  const auto addLine = [&](const QString& name, const QVector<double>& values, const QPen& pen,
                           const QCPScatterStyle& scatter) {
    QCPGraph* g = p->addGraph();
    g->setName(name);
    g->setPen(pen);
    g->setScatterStyle(scatter);
    for (int k = 0; k < n && k < values.size(); ++k)
      if (values[k] > 0) g->addData(s.sparsities[k], values[k]);
    return g;
  };

  // Colour by projection: "q" of every model alike; a custom shape is its own. The other
  // layouts' lines by their style (layoutStyle, in s.layouts' order).
  const auto layoutIndex = [&](const QString& pattern) {
    for (qsizetype k = 0; k < s.layouts.size(); ++k)
      if (s.layouts[k].pattern == pattern) return k;
    return qsizetype{0};
  };
  QStringList groups;
  for (int i = 0; i < s.shapes.size(); ++i) {
    const QString layout = i < s.shapePatterns.size() ? s.shapePatterns[i] : QString();
    const bool other = !layout.isEmpty();  // named "<shape> <pattern>"
    const QString group =
        BenchCharts::splitShapeLabel(other ? s.shapes[i].chopped(layout.size() + 1) : s.shapes[i]).second;
    if (!groups.contains(group)) groups << group;
    const QColor c = groupColor(groups.indexOf(group));
    const LayoutStyle* style = other ? &layoutStyle(layoutIndex(layout)) : nullptr;
    addLine(s.shapes[i], i < s.values.size() ? s.values[i] : QVector<double>(),
            QPen(c, 1.2, style ? style->pen : Qt::SolidLine),
            QCPScatterStyle(style ? style->marker : QCPScatterStyle::ssDisc, c, c, 4));
  }
  QVector<LegendStrip::Entry> entries;
  for (int g = 0; g < groups.size(); ++g) entries.push_back({groups[g], groupColor(g), true, true});
  if (n > 0) {
    addLine(medianName(), s.median, QPen(kMedianColor, 2.5),
            QCPScatterStyle(QCPScatterStyle::ssSquare, kMedianColor, kMedianColor, 6));
    entries.push_back({medianName(), kMedianColor, true, true});
    for (qsizetype k = 0; k < s.layouts.size(); ++k) {
      const ActivationSpeedups::Layout& l = s.layouts[k];
      addLine(medianName(l.pattern), l.median, QPen(kMedianColor, 2.5, layoutStyle(k).pen),
              QCPScatterStyle(layoutStyle(k).marker, kMedianColor, kMedianColor, 7));
      entries.push_back({medianName(l.pattern), kMedianColor, true, true, layoutStyle(k).pen});
    }
    if (std::any_of(s.bytesLimit.begin(), s.bytesLimit.end(), [](double v) { return v > 0; })) {
      addLine(limitName(), s.bytesLimit, limitLinePen(), QCPScatterStyle(QCPScatterStyle::ssNone));
      entries.push_back({limitName(), limitLinePen().color(), true, false});
      // Another layout's own limit where it is far from the main one's (by over 15%: dense weights).
      for (qsizetype k = 0; k < s.layouts.size(); ++k) {
        const ActivationSpeedups::Layout& l = s.layouts[k];
        bool differs = false;
        for (qsizetype i = 0; i < l.bytesLimit.size() && i < s.bytesLimit.size(); ++i)
          differs = differs || (l.bytesLimit[i] > 0 && s.bytesLimit[i] > 0 &&
                                std::abs(l.bytesLimit[i] / s.bytesLimit[i] - 1.0) > 0.15);
        if (!differs) continue;
        QPen pen = limitLinePen();
        pen.setStyle(layoutStyle(k).pen);
        addLine(limitName(l.pattern), l.bytesLimit, pen, QCPScatterStyle(QCPScatterStyle::ssNone));
        entries.push_back({limitName(l.pattern), pen.color(), true, false, pen.style()});
      }
    }
  }
  strip_->setEntries(entries);

  auto ticker = qSharedPointerCast<QCPAxisTickerText>(p->xAxis->ticker());
  ticker->clear();
  for (double x : s.sparsities) ticker->addTick(x, sparsityText(x));
  // Short lines: the chart may get half of the row beside the bars.
  title_->setText(n > 0 ? tr("spMspV speedup over %1").arg(s.baseline) : tr("spMspV speedup"));
  p->xAxis->setLabel(n == 0                ? tr("no spMspV rows: set an activation sparsity and run")
                     : s.layouts.isEmpty() ? tr("activation sparsity p_x (batch 1, 50% weights)")
                                           : tr("activation sparsity p_x (batch 1)"));
  replot();
}

void ActivationSparsityChart::replot() {
  QCustomPlot* p = view_->plot();
  double top = 1.0;
  for (int g = 0; g < p->graphCount(); ++g)
    for (auto it = p->graph(g)->data()->constBegin(); it != p->graph(g)->data()->constEnd(); ++it)
      top = std::max(top, it->value);
  p->yAxis->setRange(0, top * 1.15);
  if (data_.sparsities.isEmpty()) {
    p->xAxis->setRange(0, 1);
  } else {
    const double lo = data_.sparsities.first(), hi = data_.sparsities.last();
    const double pad = std::max(0.05, 0.08 * (hi - lo));
    p->xAxis->setRange(lo - pad, hi + pad);
  }
  view_->requestReplot();
}

QVector<QPointF> ActivationSparsityChart::points(const QString& series) const {
  for (int g = 0; g < view_->seriesCount(); ++g)
    if (view_->seriesName(g) == series) return view_->seriesPoints(g);
  return {};
}

QStringList ActivationSparsityChart::seriesNames() const {
  QStringList out;
  for (int g = 0; g < view_->seriesCount(); ++g) out << view_->seriesName(g);
  return out;
}

QString ActivationSparsityChart::toCsv() const {
  QString out;
  QTextStream s(&out);
  s << "series,activation_sparsity,speedup,baseline\n";
  for (int g = 0; g < view_->seriesCount(); ++g)
    for (const QPointF& pt : view_->seriesPoints(g))
      s << csvField(view_->seriesName(g)) << ',' << csvNumber(pt.x()) << ',' << csvNumber(pt.y()) << ','
        << csvField(data_.baseline) << '\n';
  return out;
}

}  // namespace sdw::widgets
