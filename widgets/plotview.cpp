#include "widgets/plotview.h"

#include <qcustomplot.h>

#include <QContextMenuEvent>
#include <QMouseEvent>
#include <QFile>
#include <QFileDialog>
#include <QMenu>
#include <QTextStream>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace sdw::widgets {

PlotView::PlotView(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom | QCP::iSelectPlottables);
  plot_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(plot_, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
    QMenu menu;
    menu.addAction(tr("Export PNG/PDF/CSV…"), this, [this] { showExportDialog(); });
    menu.addAction(tr("Reset view"), this, [this] {
      plot_->rescaleAxes();
      plot_->replot();
    });
    menu.exec(plot_->mapToGlobal(pos));
  });
}

int PlotView::addSeries(const QString& name, const QVector<double>& keys, const QVector<double>& values) {
  QCPGraph* g = plot_->addGraph();
  g->setName(name);
  g->setData(keys, values);
  requestReplot();
  return plot_->graphCount() - 1;
}

int PlotView::seriesCount() const { return plot_->graphCount(); }

QString PlotView::seriesName(int index) const {
  return index >= 0 && index < plot_->graphCount() ? plot_->graph(index)->name() : QString();
}

QVector<QPointF> PlotView::seriesPoints(int index) const {
  QVector<QPointF> out;
  if (index < 0 || index >= plot_->graphCount()) return out;
  const QCPGraph* g = plot_->graph(index);
  out.reserve(g->data()->size());
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) out.push_back(QPointF(it->key, it->value));
  return out;
}

void PlotView::requestReplot() { plot_->replot(QCustomPlot::rpQueuedReplot); }

namespace {

// Puts the legend into a new row right above the axis rect.
void legendRowAbove(QCustomPlot* plot) {
  QCPLayoutGrid* layout = plot->plotLayout();
  int row = 0, column = 0;
  for (int i = 0; i < layout->elementCount(); ++i)
    if (layout->elementAt(i) == plot->axisRect()) layout->indexToRowCol(i, row, column);
  layout->insertRow(row);
  layout->addElement(row, column, plot->legend);  // takes it out of the axis rect's inset layout
  layout->setRowStretchFactor(row, 0.001);        // its own height, no more
}

// Wraps the legend into the most columns whose widest entries still fit the
// plot's width side by side; true when that changed the legend.
bool fitLegendColumns(QCustomPlot* plot) {
  QCPLegend* legend = plot->legend;
  QVector<int> widths;  // the entries in order; a wrapped grid has empty cells at its end
  for (int i = 0; i < legend->elementCount(); ++i)
    if (const QCPLayoutElement* item = legend->elementAt(i)) widths << item->minimumOuterSizeHint().width();
  const int n = static_cast<int>(widths.size());
  if (n == 0) return false;
  const int avail = plot->viewport().width() - legend->margins().left() - legend->margins().right();
  // Entries fill rows first: entry i sits in column i % columns.
  int columns = n;
  for (; columns > 1; --columns) {
    QVector<int> widest(columns, 0);
    for (int i = 0; i < n; ++i) widest[i % columns] = std::max(widest[i % columns], widths[i]);
    int total = legend->columnSpacing() * (columns - 1);
    for (int w : widest) total += w;
    if (total <= avail) break;
  }
  if (legend->wrap() == columns && legend->columnCount() == std::min(n, columns)) return false;
  legend->setWrap(columns);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
  return true;
}

void styleLegendRow(QCPLegend* legend) {
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setBorderPen(Qt::NoPen);
  legend->setBrush(Qt::NoBrush);
  legend->setMargins(QMargins(4, 0, 4, 0));
  legend->setColumnSpacing(10);
  legend->setRowSpacing(0);
}

}  // namespace

void PlotView::placeLegendAbove() {
  legendRowAbove(plot_);
  styleLegendRow(plot_->legend);
  // The number of columns depends on the laid-out width: decided after each
  // layout, and a change is drawn by one more (queued) replot.
  connect(plot_, &QCustomPlot::afterLayout, this, &PlotView::fitLegend, Qt::UniqueConnection);
  requestReplot();
}

void PlotView::fitLegend() {
  if (plot_->legend->visible() && fitLegendColumns(plot_)) plot_->replot(QCustomPlot::rpQueuedReplot);
}

QRect PlotView::legendRect() const {
  return plot_->legend->realVisibility() ? plot_->legend->outerRect() : QRect();
}

QRect PlotView::dataRect() const { return plot_->axisRect()->rect(); }

QString PlotView::xAxisLabel() const { return plot_->xAxis->label(); }

std::pair<double, double> PlotView::xRange() const {
  return {plot_->xAxis->range().lower, plot_->xAxis->range().upper};
}

QString PlotView::toCsv() const {
  if (csvProvider_) return csvProvider_();
  QString out;
  QTextStream s(&out);
  s << "graph,key,value\n";
  for (int g = 0; g < plot_->graphCount(); ++g) {
    QCPGraph* graph = plot_->graph(g);
    QString name = graph->name().isEmpty() ? QStringLiteral("graph%1").arg(g) : graph->name();
    name.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
      s << '"' << name << "\"," << QString::number(it->key, 'g', 17) << ','
        << QString::number(it->value, 'g', 17) << '\n';
  }
  return out;
}

void PlotView::enableHover(HoverFormatter formatter, double radiusPx) {
  hoverFormatter_ = std::move(formatter);
  hoverRadius_ = radiusPx;
  if (hoverOn_) return;
  hoverOn_ = true;
  plot_->setMouseTracking(true);
  connect(plot_, &QCustomPlot::mouseMove, this, &PlotView::onMouseMove);
}

namespace {
// Nearest data point of a data container to a pixel position, by pixel distance.
template <typename Container>
void nearestIn(const QCPAbstractPlottable* p, const Container& data, const QPointF& pos, int& bestIndex,
               double& bestDist) {
  const QCPAxis* kx = p->keyAxis();
  const QCPAxis* vy = p->valueAxis();
  if (!kx || !vy) return;
  int i = 0;
  for (auto it = data.constBegin(); it != data.constEnd(); ++it, ++i) {
    const double v = it->mainValue();
    if (!std::isfinite(it->key) || !std::isfinite(v)) continue;
    const QPointF px(kx->coordToPixel(it->key), vy->coordToPixel(v));
    const double d = std::hypot(px.x() - pos.x(), px.y() - pos.y());
    if (d < bestDist) {
      bestDist = d;
      bestIndex = i;
    }
  }
}
}  // namespace

QString PlotView::hoverTextAt(const QPoint& pos) const {
  struct Candidate {
    double dist;
    QCPAbstractPlottable* plottable;
    int index;
    double key, value;
  };
  QVector<Candidate> found;
  for (int p = 0; p < plot_->plottableCount(); ++p) {
    QCPAbstractPlottable* pl = plot_->plottable(p);
    if (!pl->visible()) continue;
    int index = -1;
    double dist = hoverRadius_;
    double key = 0, value = 0;
    if (auto* g = qobject_cast<QCPGraph*>(pl)) {
      nearestIn(pl, *g->data(), pos, index, dist);
      if (index >= 0) {
        const auto it = g->data()->constBegin() + index;
        key = it->key;
        value = it->value;
      }
    } else if (auto* b = qobject_cast<QCPBars*>(pl)) {
      nearestIn(pl, *b->data(), pos, index, dist);
      if (index >= 0) {
        const auto it = b->data()->constBegin() + index;
        key = it->key;
        value = it->value;
      }
    } else if (auto* c = qobject_cast<QCPCurve*>(pl)) {
      nearestIn(pl, *c->data(), pos, index, dist);
      if (index >= 0) {
        const auto it = c->data()->constBegin() + index;
        key = it->key;
        value = it->value;
      }
    }
    if (index >= 0) found.push_back({dist, pl, index, key, value});
  }
  std::sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) { return a.dist < b.dist; });
  for (const Candidate& c : found) {
    const QString text = hoverFormatter_ ? hoverFormatter_(c.plottable->name(), c.index, c.key, c.value)
                                         : QStringLiteral("%1\n%2, %3")
                                               .arg(c.plottable->name())
                                               .arg(c.key, 0, 'g', 6)
                                               .arg(c.value, 0, 'g', 6);
    if (!text.isEmpty()) return text;
  }
  return {};
}

void PlotView::onMouseMove(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  const QString text = hoverTextAt(pos);
  if (text.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(plot_->mapToGlobal(pos), text, plot_);
}

QString PlotView::exportTo(const QString& path) const {
  const QString lower = path.toLower();
  bool ok = false;
  // A legend shown outside the plot on screen (a strip shared by several
  // charts) is drawn into a picture of the plot alone, above its axes.
  const bool borrowLegend = legendInPictures_ && !plot_->legend->visible() && plot_->legend->elementCount() > 0 &&
                            (lower.endsWith(QLatin1String(".png")) || lower.endsWith(QLatin1String(".pdf")));
  if (borrowLegend) {
    legendRowAbove(plot_);
    styleLegendRow(plot_->legend);
    plot_->legend->setVisible(true);
    fitLegendColumns(plot_);
    plot_->replot(QCustomPlot::rpImmediateRefresh);
  }
  if (lower.endsWith(QLatin1String(".png"))) {
    ok = plot_->savePng(path, 0, 0, 2.0);
  } else if (lower.endsWith(QLatin1String(".pdf"))) {
    ok = plot_->savePdf(path);
  } else if (lower.endsWith(QLatin1String(".csv"))) {
    QFile f(path);
    if (f.open(QIODevice::WriteOnly | QIODevice::Text | QIODevice::Truncate)) {
      const QByteArray bytes = toCsv().toUtf8();
      ok = f.write(bytes) == bytes.size() && f.flush();
    }
  } else {
    return tr("unknown export format for %1 (use .png, .pdf or .csv)").arg(path);
  }
  if (borrowLegend) {
    plot_->legend->setVisible(false);
    plot_->axisRect()->insetLayout()->addElement(plot_->legend, Qt::AlignTop | Qt::AlignRight);
    plot_->plotLayout()->simplify();  // the emptied row
    plot_->replot(QCustomPlot::rpQueuedReplot);
  }
  return ok ? QString() : tr("could not write %1").arg(path);
}

void PlotView::showExportDialog() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export plot"), QStringLiteral("plot.png"),
      tr("PNG image (*.png);;PDF document (*.pdf);;CSV data (*.csv)"));
  if (path.isEmpty()) return;
  if (const QString err = exportTo(path); !err.isEmpty())
    QMessageBox::warning(this, tr("Export failed"), err);
}

void setLogAxis(QCPAxis* axis, bool log) {
  if (log) {
    axis->setScaleType(QCPAxis::stLogarithmic);
    axis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog));
    axis->setNumberFormat(QStringLiteral("eb"));
    axis->setNumberPrecision(0);
  } else {
    axis->setScaleType(QCPAxis::stLinear);
    axis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    axis->setNumberFormat(QStringLiteral("g"));
    axis->setNumberPrecision(4);
  }
}

}  // namespace sdw::widgets
