#include "widgets/prunelayerchart.h"

#include <qcustomplot.h>

#include <algorithm>

namespace sdw::widgets {

namespace {
const QColor kDone(0x1f, 0x77, 0xb4);
const QColor kCurrent(0xff, 0x7f, 0x0e);
const QColor kError(0x2c, 0x2c, 0x2c);
}  // namespace

PruneLayerChart::PruneLayerChart(QWidget* parent) : PlotView(parent) {
  QCustomPlot* p = plot();
  p->setInteractions({});
  doneBars_ = new QCPBars(p->xAxis, p->yAxis);
  doneBars_->setName(tr("solved"));
  doneBars_->setPen(Qt::NoPen);
  doneBars_->setBrush(kDone);
  doneBars_->setWidth(0.7);
  currentBar_ = new QCPBars(p->xAxis, p->yAxis);
  currentBar_->setName(tr("current layer"));
  currentBar_->setPen(QPen(kCurrent, 1.5));
  currentBar_->setBrush(QColor(kCurrent.red(), kCurrent.green(), kCurrent.blue(), 150));
  currentBar_->setWidth(0.7);
  error_ = p->addGraph(p->xAxis, p->yAxis2);
  error_->setName(tr("mean rel. error"));
  error_->setLineStyle(QCPGraph::lsLine);
  error_->setPen(QPen(kError, 1.2, Qt::DashLine));
  error_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, kError, Qt::white, 6));
  p->xAxis->setLabel(tr("decoder layer"));
  p->yAxis->setLabel(tr("solved (%)"));
  p->yAxis->setRange(0, 112);
  p->yAxis2->setVisible(true);
  p->yAxis2->setLabel(tr("mean rel. error"));
  p->xAxis->grid()->setVisible(false);
  QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
  ticker->setTickStep(1);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  p->xAxis->setTicker(ticker);
  // The legend sits in its own row above the axes: inside, it would hide the bars.
  p->legend->setVisible(true);
  p->legend->setFont(QFont(font().family(), 8));
  p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  p->legend->setBorderPen(Qt::NoPen);
  p->legend->setMargins(QMargins(2, 0, 2, 0));
  p->axisRect()->insetLayout()->take(p->legend);
  p->plotLayout()->insertRow(0);
  p->plotLayout()->addElement(0, 0, p->legend);
  p->plotLayout()->setRowStretchFactor(0, 0.001);
  p->legend->setMaximumSize(QWIDGETSIZE_MAX, 22);
  label_ = new QCPItemText(p);
  label_->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
  label_->setColor(kCurrent.darker(130));
  label_->setFont(QFont(font().family(), 8, QFont::DemiBold));
  label_->setVisible(false);
  hint_ = new QCPItemText(p);
  hint_->position->setType(QCPItemPosition::ptAxisRectRatio);
  hint_->position->setCoords(0.5, 0.45);
  hint_->setText(tr("Layers appear here as a pruning runs or a record opens."));
  hint_->setColor(QColor(120, 120, 120));
  enableHover([this](const QString& name, int index, double key, double value) -> QString {
    const int layer = static_cast<int>(key + 0.5);
    if (layer < 0 || layer >= layerCount()) return {};
    Q_UNUSED(index);
    if (name == error_->name()) return tr("layer %1: mean rel. error %2").arg(layer).arg(value, 0, 'g', 4);
    QString text = tr("layer %1: %2 of %3 modules solved").arg(layer).arg(modulesDone(layer)).arg(modulesInLayer(layer));
    if (layer == current_ && !stage_.isEmpty()) text += QStringLiteral(" (%1)").arg(stage_);
    return text;
  });
  redraw();
}

void PruneLayerChart::reset(const QVector<int>& modulesPerLayer) {
  total_ = modulesPerLayer;
  done_ = QVector<int>(total_.size(), 0);
  errSum_ = QVector<double>(total_.size(), 0.0);
  current_ = -1;
  stage_.clear();
  redraw();
}

void PruneLayerChart::addModule(int layer, double relError) {
  if (layer < 0) return;
  if (layer >= total_.size()) {  // a layer the plan did not know: grow rather than drop it
    total_.resize(layer + 1);
    done_.resize(layer + 1);
    errSum_.resize(layer + 1);
  }
  ++done_[layer];
  total_[layer] = std::max(total_[layer], done_[layer]);
  errSum_[layer] += relError;
  redraw();
}

void PruneLayerChart::setCurrent(int layer, const QString& stage) {
  current_ = layer;
  stage_ = layer >= 0 ? stage : QString();
  redraw();
}

void PruneLayerChart::showModules(const QVector<PruneModuleData>& rows) {
  int layers = 0;
  for (const PruneModuleData& m : rows) layers = std::max(layers, m.layer + 1);
  reset(QVector<int>(layers, 0));
  for (const PruneModuleData& m : rows) addModule(m.layer, m.relOutputError);
}

int PruneLayerChart::modulesDone(int layer) const { return layer >= 0 && layer < done_.size() ? done_[layer] : 0; }
int PruneLayerChart::modulesInLayer(int layer) const {
  return layer >= 0 && layer < total_.size() ? total_[layer] : 0;
}

int PruneLayerChart::layersComplete() const {
  int n = 0;
  for (int l = 0; l < total_.size(); ++l) n += (total_[l] > 0 && done_[l] >= total_[l]) ? 1 : 0;
  return n;
}

void PruneLayerChart::redraw() {
  QCustomPlot* p = plot();
  const int n = layerCount();
  QVector<double> keys, shares, errKeys, errs;
  double errTop = 0;
  for (int l = 0; l < n; ++l) {
    keys << l;
    shares << (total_[l] > 0 ? 100.0 * done_[l] / total_[l] : 0.0);
    if (done_[l] > 0) {
      errKeys << l;
      errs << errSum_[l] / done_[l];
      errTop = std::max(errTop, errs.back());
    }
  }
  doneBars_->setData(keys, shares, true);
  if (current_ >= 0 && current_ < n) {
    currentBar_->setData({double(current_)}, {std::max(shares[current_], 4.0)}, true);
    label_->position->setCoords(current_, std::max(shares[current_], 4.0) + 2);
    label_->setText(stage_);
    label_->setVisible(!stage_.isEmpty());
  } else {
    currentBar_->data()->clear();
    label_->setVisible(false);
  }
  error_->setData(errKeys, errs, true);
  hint_->setVisible(n == 0);
  p->xAxis->setRange(-0.6, std::max(n, 1) - 0.4);
  p->yAxis2->setRange(0, errTop > 0 ? errTop * 1.15 : 1);
  requestReplot();
}

}  // namespace sdw::widgets
