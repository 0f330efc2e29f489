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

void PlotView::requestReplot() { plot_->replot(QCustomPlot::rpQueuedReplot); }

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

}  // namespace sdw::widgets
