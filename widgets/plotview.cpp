#include "widgets/plotview.h"

#include <qcustomplot.h>

#include <QContextMenuEvent>
#include <QFile>
#include <QFileDialog>
#include <QMenu>
#include <QTextStream>
#include <QVBoxLayout>

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
