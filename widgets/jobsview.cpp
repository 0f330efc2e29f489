#include "widgets/jobsview.h"

#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include <cmath>

namespace sdw::widgets {

namespace {
constexpr int kRecent = 12;  // folded jobs named in the summary's tool tip
}

JobsView::JobsView(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(6, 4, 6, 4);
  outer->setSpacing(2);

  // The rows scroll: many jobs at once never make the dock (and with it the
  // window) taller than it was given.
  auto* scroll = new QScrollArea(this);
  scroll->setObjectName(QStringLiteral("jobsScroll"));
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* rows = new QWidget(scroll);
  auto* rowsLayout = new QVBoxLayout(rows);
  rowsLayout->setContentsMargins(0, 0, 0, 0);
  grid_ = new QGridLayout;
  grid_->setVerticalSpacing(2);
  grid_->setColumnStretch(1, 1);
  grid_->setColumnMinimumWidth(0, 140);
  grid_->setColumnMinimumWidth(2, 220);
  rowsLayout->addLayout(grid_);
  rowsLayout->addStretch(1);
  scroll->setWidget(rows);
  outer->addWidget(scroll, 1);

  // One line above the rows: what runs, what finished, and Clear.
  auto* line = new QHBoxLayout;
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("jobsSummary"));
  summary_->setWordWrap(true);
  clear_ = new QPushButton(tr("Clear"), this);
  clear_->setObjectName(QStringLiteral("jobsClear"));
  clear_->setToolTip(tr("Forget the finished jobs and dismiss the failed ones"));
  connect(clear_, &QPushButton::clicked, this, &JobsView::clearEnded);
  line->addWidget(summary_, 1);
  line->addWidget(clear_);
  outer->insertLayout(0, line);
  updateSummary();
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

void JobsView::setFinishedLinger(int ms) {
  lingerMs_ = std::max(0, ms);
  if (lingerMs_ > 0) return;
  QList<quint64> done;
  for (auto it = rows_.cbegin(); it != rows_.cend(); ++it)
    if (it->ended && !it->failed) done << it.key();
  for (quint64 id : done) fold(id);
}

void JobsView::addJob(quint64 id, const QString& name) {
  Row r;
  QWidget* parent = grid_->parentWidget();
  r.name = new QLabel(name, parent);
  r.name->setToolTip(name);
  r.bar = new QProgressBar(parent);
  r.bar->setRange(0, 0);  // busy until the first progress sample
  r.bar->setTextVisible(true);
  r.status = new QLabel(tr("starting…"), parent);
  r.button = new QPushButton(tr("Cancel"), parent);
  r.button->setObjectName(QStringLiteral("cancel%1").arg(id));
  connect(r.button, &QPushButton::clicked, this, [this, id] {
    const auto it = rows_.find(id);
    if (it == rows_.end()) return;
    if (it->ended) {
      dismiss(id);
      return;
    }
    it->button->setEnabled(false);
    it->button->setText(tr("Stopping…"));
    Q_EMIT cancelRequested(id);
  });
  const int row = nextRow_++;
  grid_->addWidget(r.name, row, 0);
  grid_->addWidget(r.bar, row, 1);
  grid_->addWidget(r.status, row, 2);
  grid_->addWidget(r.button, row, 3);
  rows_.insert(id, r);
  updateSummary();
}

void JobsView::setProgress(quint64 id, const QString& stage, double fraction, double done,
                           double total, double ratePerSecond, const QString& unit, double etaSeconds) {
  auto it = rows_.find(id);
  if (it == rows_.end() || it->ended) return;
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
  switch (how) {
    case End::Finished:
      it->bar->setRange(0, 1000);
      it->bar->setValue(1000);
      it->bar->setFormat(QStringLiteral("100%"));
      it->status->setText(message.isEmpty() ? tr("done") : message);
      break;
    case End::Failed:
      it->failed = true;
      if (it->bar->maximum() == 0) it->bar->setRange(0, 1000);
      it->status->setText(tr("failed: %1").arg(message));
      it->status->setStyleSheet(QStringLiteral("color: #b00020"));
      break;
    case End::Cancelled:
      it->cancelled = true;
      if (it->bar->maximum() == 0) it->bar->setRange(0, 1000);
      it->status->setText(message.isEmpty() ? tr("cancelled") : message);
      break;
  }
  it->status->setToolTip(it->status->text());
  if (it->failed) {
    // A failure is kept in sight until the user has read it.
    it->button->setEnabled(true);
    it->button->setText(tr("Dismiss"));
    it->button->setToolTip(tr("Remove this failed job from the list"));
  } else {
    it->button->setEnabled(false);
    it->button->setText(tr("Cancel"));
    if (lingerMs_ == 0) fold(id);
    else QTimer::singleShot(lingerMs_, this, [this, id] { fold(id); });
  }
  updateSummary();
}

void JobsView::fold(quint64 id) {
  const auto it = rows_.constFind(id);
  if (it == rows_.cend() || !it->ended || it->failed) return;
  ++folded_;
  if (it->cancelled) ++foldedCancelled_;
  recent_.prepend(QStringLiteral("%1: %2").arg(it->name->text(), it->status->text()));
  while (recent_.size() > kRecent) recent_.removeLast();
  removeRow(id);
}

void JobsView::dismiss(quint64 id) {
  const auto it = rows_.constFind(id);
  if (it == rows_.cend() || !it->ended) return;
  removeRow(id);
}

void JobsView::removeRow(quint64 id) {
  const auto it = rows_.find(id);
  if (it == rows_.end()) return;
  // deleteLater: the row's own button may be the one whose click got us here.
  for (QWidget* w : {static_cast<QWidget*>(it->name), static_cast<QWidget*>(it->bar),
                     static_cast<QWidget*>(it->status), static_cast<QWidget*>(it->button)}) {
    grid_->removeWidget(w);
    w->hide();
    w->deleteLater();
  }
  rows_.erase(it);
  updateSummary();
}

void JobsView::clearEnded() {
  QList<quint64> ended;
  for (auto it = rows_.cbegin(); it != rows_.cend(); ++it)
    if (it->ended) ended << it.key();
  for (quint64 id : ended) removeRow(id);
  folded_ = 0;
  foldedCancelled_ = 0;
  recent_.clear();
  updateSummary();
}

QString JobsView::summaryText() const { return summary_->text(); }

void JobsView::updateSummary() {
  int running = 0, failed = 0;
  for (const Row& r : rows_) {
    if (!r.ended) ++running;
    if (r.failed) ++failed;
  }
  QStringList parts;
  if (running > 0) parts << tr("%n running", nullptr, running);
  else if (folded_ > 0 || failed > 0) parts << tr("No running jobs");
  if (folded_ > 0) {
    parts << (foldedCancelled_ > 0 ? tr("%n finished (%1 cancelled)", nullptr, folded_).arg(foldedCancelled_)
                                   : tr("%n finished", nullptr, folded_));
  }
  if (failed > 0) parts << tr("%n failed", nullptr, failed);
  summary_->setText(parts.isEmpty()
                        ? tr("No jobs running. Long work (loading, calibration, pruning, benchmarks) shows up here.")
                        : parts.join(QStringLiteral(" · ")));
  summary_->setToolTip(recent_.isEmpty() ? QString()
                                         : tr("Recently finished:\n%1").arg(recent_.join(QLatin1Char('\n'))));
  clear_->setVisible(folded_ > 0 || failed > 0);
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
