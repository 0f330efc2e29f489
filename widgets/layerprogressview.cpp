#include "widgets/layerprogressview.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace sdw::widgets {

namespace {
constexpr int kCaptionHeight = 18;
constexpr int kCellHeight = 14;
constexpr int kGap = 2;
}  // namespace

LayerProgressView::LayerProgressView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("layerProgress"));
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void LayerProgressView::setProgress(int done, int layers, const QString& label) {
  layers = std::max(layers, 0);
  done = std::clamp(done, 0, layers);
  if (layers != layers_ || done < done_ || passes_ == 0 || label != label_) ++passes_;
  layers_ = layers;
  done_ = done;
  label_ = label;
  update();
}

void LayerProgressView::setAllDone() {
  done_ = layers_;
  label_ = tr("done");
  update();
}

void LayerProgressView::reset() {
  done_ = layers_ = passes_ = 0;
  label_.clear();
  update();
}

QString LayerProgressView::caption() const {
  if (layers_ == 0) return tr("Per-layer progress appears when the job reaches the layers.");
  if (done_ >= layers_) return tr("%1: all %2 layers").arg(label_).arg(layers_);
  return tr("%1: layer %2 of %3").arg(label_).arg(done_ + 1).arg(layers_);
}

QSize LayerProgressView::sizeHint() const { return {400, kCaptionHeight + kCellHeight + 4}; }
QSize LayerProgressView::minimumSizeHint() const { return {120, kCaptionHeight + kCellHeight + 4}; }

QRect LayerProgressView::cellRect(int layer) const {
  if (layers_ <= 0) return {};
  const double w = static_cast<double>(width() - 1 + kGap) / layers_;
  const int x0 = static_cast<int>(layer * w);
  const int x1 = static_cast<int>((layer + 1) * w) - kGap;
  return QRect(x0, kCaptionHeight, std::max(1, x1 - x0), kCellHeight);
}

void LayerProgressView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QRect(0, 0, width(), kCaptionHeight), Qt::AlignLeft | Qt::AlignVCenter, caption());
  const QColor doneColor = palette().color(QPalette::Highlight);
  QColor current = doneColor;
  current.setAlpha(110);
  const QColor pending = palette().color(QPalette::Mid);
  for (int l = 0; l < layers_; ++l) {
    const QRect r = cellRect(l);
    p.fillRect(r, l < done_ ? doneColor : l == done_ ? current : pending);
  }
}

bool LayerProgressView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    const auto* help = static_cast<QHelpEvent*>(e);
    for (int l = 0; l < layers_; ++l)
      if (cellRect(l).contains(help->pos())) {
        const QString state = l < done_ ? tr("done") : l == done_ ? tr("in progress") : tr("to come");
        QToolTip::showText(help->globalPos(), tr("layer %1: %2 (%3)").arg(l).arg(state, label_), this);
        return true;
      }
    QToolTip::hideText();
    e->ignore();
    return true;
  }
  return QWidget::event(e);
}

}  // namespace sdw::widgets
