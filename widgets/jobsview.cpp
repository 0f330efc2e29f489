#include "widgets/jobsview.h"

#include <QGridLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include <cmath>

namespace sdw::widgets {

JobsView::JobsView(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(6, 6, 6, 6);
  grid_ = new QGridLayout;
  grid_->setColumnStretch(1, 1);
  grid_->setColumnMinimumWidth(0, 160);
  grid_->setColumnMinimumWidth(2, 260);
  empty_ = new QLabel(tr("No jobs yet. Long work (loading, calibration, pruning, benchmarks) shows up here."), this);
  empty_->setEnabled(false);
  grid_->addWidget(empty_, 0, 0, 1, 4);
  outer->addLayout(grid_);
  outer->addStretch(1);
}

QString JobsView::formatRate(double perSecond, const QString& unit) {
  if (perSecond <= 0) return QStringLiteral("–");
  const QString u = unit.isEmpty() ? tr("items") : unit;
  if (perSecond >= 1e6) return QStringLiteral("%1 M%2/s").arg(perSecond / 1e6, 0, 'f', 2).arg(u);
  if (perSecond >= 1e3) return QStringLiteral("%1 k%2/s").arg(perSecond / 1e3, 0, 'f', 1).arg(u);
  return QStringLiteral("%1 %2/s").arg(perSecond, 0, 'f', perSecond < 10 ? 2 : 0).arg(u);
}

QString JobsView::formatDuration(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return QStringLiteral("–");
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) return QStringLiteral("%1 s").arg(s);
  if (s < 3600) return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60);
  return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

void JobsView::addJob(quint64 id, const QString& name) {
  empty_->hide();
  Row r;
  r.name = new QLabel(name, this);
  r.bar = new QProgressBar(this);
  r.bar->setRange(0, 0);  // busy until the first progress sample
  r.bar->setTextVisible(true);
  r.status = new QLabel(tr("starting…"), this);
  r.cancel = new QPushButton(tr("Cancel"), this);
  r.cancel->setObjectName(QStringLiteral("cancel-%1").arg(id));
  connect(r.cancel, &QPushButton::clicked, this, [this, id, b = r.cancel] {
    b->setEnabled(false);
    b->setText(tr("Stopping…"));
    Q_EMIT cancelRequested(id);
  });
  const int row = nextRow_++;
  grid_->addWidget(r.name, row, 0);
  grid_->addWidget(r.bar, row, 1);
  grid_->addWidget(r.status, row, 2);
  grid_->addWidget(r.cancel, row, 3);
  rows_.insert(id, r);
}

void JobsView::setProgress(quint64 id, const QString& stage, double fraction, double done,
                           double total, double ratePerSecond, const QString& unit, double etaSeconds) {
  auto it = rows_.find(id);
  if (it == rows_.end()) return;
  if (fraction >= 0) {
    it->bar->setRange(0, 1000);
    it->bar->setValue(static_cast<int>(std::lround(fraction * 1000)));
    it->bar->setFormat(QStringLiteral("%1%").arg(fraction * 100, 0, 'f', 1));
  }
  QString text = stage.isEmpty() ? QString() : stage + QStringLiteral(" · ");
  if (total > 0) text += QStringLiteral("%1/%2 · ").arg(done, 0, 'g', 6).arg(total, 0, 'g', 6);
  text += formatRate(ratePerSecond, unit) + QStringLiteral(" · ETA ") + formatDuration(etaSeconds);
  it->status->setText(text);
}

void JobsView::endJob(quint64 id, End how, const QString& message) {
  auto it = rows_.find(id);
  if (it == rows_.end()) return;
  it->ended = true;
  it->cancel->setEnabled(false);
  it->cancel->setText(tr("Cancel"));
  switch (how) {
    case End::Finished:
      it->bar->setRange(0, 1000);
      it->bar->setValue(1000);
      it->bar->setFormat(QStringLiteral("100%"));
      it->status->setText(message.isEmpty() ? tr("done") : message);
      break;
    case End::Failed:
      if (it->bar->maximum() == 0) it->bar->setRange(0, 1000);
      it->status->setText(tr("failed: %1").arg(message));
      it->status->setStyleSheet(QStringLiteral("color: #b00020"));
      break;
    case End::Cancelled:
      if (it->bar->maximum() == 0) it->bar->setRange(0, 1000);
      it->status->setText(message.isEmpty() ? tr("cancelled") : message);
      break;
  }
  it->status->setToolTip(it->status->text());
}

void JobsView::clearEnded() {
  for (auto it = rows_.begin(); it != rows_.end();) {
    if (it->ended) {
      delete it->name;
      delete it->bar;
      delete it->status;
      delete it->cancel;
      it = rows_.erase(it);
    } else {
      ++it;
    }
  }
  if (rows_.isEmpty()) empty_->show();
}

QString JobsView::statusText(quint64 id) const {
  const auto it = rows_.find(id);
  return it == rows_.end() ? QString() : it->status->text();
}

int JobsView::progressValue(quint64 id) const {
  const auto it = rows_.find(id);
  if (it == rows_.end() || it->bar->maximum() == 0) return -1;
  return it->bar->value();
}

}  // namespace sdw::widgets
