#include "widgets/activationselection.h"

#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QSignalBlocker>
#include <QStandardItemModel>

namespace sdw::widgets {

namespace {
constexpr int kTopK = 0;
constexpr int kThresholds = 1;
constexpr int kSampleRowsRole = Qt::UserRole + 1;
}  // namespace

ActivationSelection::ActivationSelection(const QString& namePrefix, QWidget* parent) : QWidget(parent) {
  auto* h = new QHBoxLayout(this);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(4);
  selection_ = new QComboBox(this);
  selection_->setObjectName(namePrefix + QStringLiteral("ActivationSelection"));
  selection_->addItem(tr("top-k per token"), QStringLiteral("topk"));
  selection_->addItem(tr("thresholds"), QStringLiteral("thresholds"));  // of the run beside it
  selection_->setItemData(kTopK, tr("Each token keeps the largest (1 - p_x) share of every projection input"),
                          Qt::ToolTipRole);
  selection_->setToolTip(tr("Which entries activation sparsity keeps: each token's largest (1 - p_x) share, or "
                            "the entries above fixed per-layer, per-input thresholds set from a calibration run's "
                            "activation samples (TEAL)"));
  run_ = new QComboBox(this);
  run_->setObjectName(namePrefix + QStringLiteral("ThresholdsRun"));
  // Long run names stay in the popup and the tool tip: the field keeps its width.
  run_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  run_->setMinimumContentsLength(10);
  h->addWidget(selection_);
  h->addWidget(run_, 1);
  connect(selection_, &QComboBox::currentIndexChanged, this, [this] {
    refresh();
    Q_EMIT changed();
  });
  connect(run_, &QComboBox::currentIndexChanged, this, [this] {
    refresh();
    Q_EMIT changed();
  });
  refresh();
}

void ActivationSelection::addRun(const RunChoice& c) {
  QString text = QFileInfo(c.path).fileName();
  QString tip = c.path;
  if (c.sampleRows > 0) {
    tip += QLatin1Char('\n') + tr("%1 activation sample rows per input").arg(c.sampleRows);
  } else if (c.sampleRows == 0) {
    text += tr(" (no samples)");
    tip += QLatin1Char('\n') + tr("No activation samples: thresholds need a calibration run that keeps them "
                                  "(Calibration panel: Keep activation samples; sdw-cli calibrate --sample-rows N)");
  }
  run_->addItem(text, c.path);
  run_->setItemData(run_->count() - 1, tip, Qt::ToolTipRole);
  run_->setItemData(run_->count() - 1, c.sampleRows, kSampleRowsRole);
}

int ActivationSelection::runIndex(const QString& path) {
  const int i = run_->findData(path);
  if (i >= 0) return i;
  RunChoice c;
  c.path = path;
  c.sampleRows = -1;  // not known
  addRun(c);
  return run_->count() - 1;
}

void ActivationSelection::setRuns(const QVector<RunChoice>& runs) {
  const QString before = run_->currentData().toString();
  // A run picked for thresholds stays; one only preselected gives way to a
  // run with samples.
  const bool keep =
      !before.isEmpty() && (thresholdsChosen() || run_->currentData(kSampleRowsRole).toLongLong() > 0);
  {
    const QSignalBlocker block(run_);
    run_->clear();
    for (const RunChoice& c : runs) addRun(c);
    int i = keep ? run_->findData(before) : -1;
    if (i < 0 && !before.isEmpty() && thresholdsChosen()) i = runIndex(before);  // the run chosen is kept
    for (qsizetype k = 0; i < 0 && k < runs.size(); ++k)
      if (runs[k].sampleRows > 0) i = static_cast<int>(k);
    if (i < 0 && run_->count() > 0) i = 0;
    run_->setCurrentIndex(i);
  }
  refresh();
  if (run_->currentData().toString() != before) Q_EMIT changed();
}

void ActivationSelection::setSparsity(double p) {
  sparsity_ = p;
  refresh();
}

bool ActivationSelection::thresholdsChosen() const { return selection_->currentIndex() == kThresholds; }

QString ActivationSelection::thresholdsRun() const {
  return thresholdsChosen() && sparsity_ > 0 ? run_->currentData().toString() : QString();
}

void ActivationSelection::setThresholdsRun(const QString& run) {
  {
    const QSignalBlocker b1(selection_), b2(run_);
    if (!run.isEmpty()) run_->setCurrentIndex(runIndex(run));
    selection_->setCurrentIndex(run.isEmpty() ? kTopK : kThresholds);
  }
  refresh();
  Q_EMIT changed();
}

void ActivationSelection::refresh() {
  const bool haveRuns = run_->count() > 0;
  if (auto* m = qobject_cast<QStandardItemModel*>(selection_->model()))
    if (QStandardItem* item = m->item(kThresholds)) {
      item->setEnabled(haveRuns);
      item->setToolTip(haveRuns ? tr("Keep the entries above fixed per-layer, per-input thresholds: those below "
                                     "which a share p_x of the chosen calibration run's activation samples lies")
                                : tr("The workspace has no calibration run: thresholds need one that keeps "
                                     "activation samples (Calibration panel: Keep activation samples)"));
    }
  if (!haveRuns && thresholdsChosen()) {
    const QSignalBlocker block(selection_);
    selection_->setCurrentIndex(kTopK);
  }
  run_->setEnabled(thresholdsChosen() && sparsity_ > 0);
  if (!haveRuns) run_->setPlaceholderText(tr("no calibration run"));
  const QString tip = run_->currentData(Qt::ToolTipRole).toString();
  run_->setToolTip(!thresholdsChosen() ? tr("The calibration run whose activation samples set the thresholds "
                                            "(choose thresholds to use it)")
                   : sparsity_ > 0     ? tip
                                       : tr("Thresholds need p_x > 0"));
}

}  // namespace sdw::widgets
