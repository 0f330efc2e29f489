#include "widgets/analysispanel.h"

#include "widgets/activationspage.h"
#include "widgets/driftpage.h"
#include "widgets/epsilonpage.h"
#include "widgets/jobprogress.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace sdw::widgets {

namespace {
QString runFilter() { return QObject::tr("Run files (*.sdw.h5 *.sdw.h5.partial);;All files (*)"); }

void setPath(QComboBox* box, const QString& path) {
  if (path.isEmpty()) {
    box->setCurrentIndex(-1);
    box->setEditText(QString());
    return;
  }
  const int i = box->findData(path);
  if (i >= 0) box->setCurrentIndex(i);
  else box->setEditText(path);
}

QString pathOf(const QComboBox* box) {
  const QString text = box->currentText().trimmed();
  const int i = box->currentIndex();
  // The item text is "name — source"; the data is the path.
  if (i >= 0 && box->itemText(i) == text) return box->itemData(i).toString();
  return text;
}
}  // namespace

AnalysisPanel::AnalysisPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName(QStringLiteral("analysisTabs"));

  auto* epsilonTab = new QWidget(tabs_);
  auto* el = new QVBoxLayout(epsilonTab);
  el->setContentsMargins(0, 4, 0, 0);
  el->addWidget(buildInputs());
  split_ = new QSplitter(Qt::Horizontal, epsilonTab);
  for (int s = 0; s < 2; ++s) {
    pages_[s] = new EpsilonPage(split_);
    pages_[s]->setObjectName(s == 0 ? QStringLiteral("epsilonPage") : QStringLiteral("epsilonComparePage"));
    split_->addWidget(pages_[s]);
  }
  pages_[0]->clear(tr("No epsilon analysis open. Pick a reference and two calibration runs and press "
                      "Analyze, or open an analysis run."));
  pages_[1]->hide();
  el->addWidget(split_, 1);
  tabs_->addTab(epsilonTab, tr("Epsilon"));

  drift_ = new DriftPage(tabs_);
  tabs_->addTab(drift_, tr("Drift"));
  activations_ = new ActivationsPage(tabs_);
  tabs_->addTab(activations_, tr("Activations"));
  layout->addWidget(tabs_);
  updateButtons();
}

QWidget* AnalysisPanel::buildInputs() {
  auto* box = new QGroupBox(tr("Calibration discrepancy eps_k against decode time"), this);
  auto* g = new QGridLayout(box);
  g->setContentsMargins(8, 6, 8, 6);
  g->setVerticalSpacing(3);
  auto picker = [&](int row, const QString& label, const QString& tip, const QString& name) {
    auto* combo = new QComboBox(box);
    combo->setObjectName(name);
    combo->setEditable(true);
    combo->setInsertPolicy(QComboBox::NoInsert);
    combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo->setMinimumContentsLength(28);
    combo->setToolTip(tip);
    auto* browse = new QToolButton(box);
    browse->setText(QStringLiteral("…"));
    browse->setToolTip(tr("Choose a run file"));
    connect(browse, &QToolButton::clicked, this, [this, combo] { chooseFile(combo); });
    g->addWidget(new QLabel(label, box), row, 0);
    g->addWidget(combo, row, 1);
    g->addWidget(browse, row, 2);
    return combo;
  };
  reference_ = picker(0, tr("Reference (decode time):"),
                      tr("A calibration run of the dense model's decoding on held-out prompts: H_D"),
                      QStringLiteral("referenceRun"));
  fixed_ = picker(1, tr("Fixed text (C4):"), tr("The fixed-text (teacher-forced) calibration run"),
                  QStringLiteral("fixedRun"));
  ar_ = picker(2, tr("AR decoding:"), tr("The decoding-aware (AR) calibration run"), QStringLiteral("arRun"));

  auto* right = new QGridLayout;
  k_ = new QSpinBox(box);
  k_->setObjectName(QStringLiteral("k"));
  k_->setRange(1, 65536);
  k_->setValue(64);
  k_->setToolTip(tr("Top-k eigen-directions of H_D"));
  device_ = new QComboBox(box);
  device_->setObjectName(QStringLiteral("analysisDevice"));
  device_->addItem(QStringLiteral("cpu"));
  device_->addItem(QStringLiteral("cuda"));
  right->addWidget(new QLabel(tr("k:"), box), 0, 0);
  right->addWidget(k_, 0, 1);
  right->addWidget(new QLabel(tr("Device:"), box), 1, 0);
  right->addWidget(device_, 1, 1);
  g->addLayout(right, 0, 3, 2, 1);

  analyze_ = new QPushButton(tr("Analyze"), box);
  analyze_->setObjectName(QStringLiteral("analyze"));
  cancel_ = new QPushButton(tr("Cancel"), box);
  cancel_->setObjectName(QStringLiteral("cancelAnalysis"));
  open_ = new QPushButton(tr("Open analysis…"), box);
  open_->setObjectName(QStringLiteral("openAnalysis"));
  compare_ = new QPushButton(tr("Compare…"), box);
  compare_->setObjectName(QStringLiteral("compareAnalysis"));
  compare_->setToolTip(tr("Open a second analysis run beside this one"));
  closeCompare_ = new QPushButton(tr("Close comparison"), box);
  closeCompare_->setObjectName(QStringLiteral("closeComparison"));
  auto* buttons = new QHBoxLayout;
  for (QPushButton* b : {analyze_, cancel_, open_, compare_, closeCompare_}) buttons->addWidget(b);
  buttons->addStretch(1);
  bar_ = new QProgressBar(box);
  bar_->setMaximumWidth(180);
  bar_->setTextVisible(true);
  bar_->hide();
  buttons->addWidget(bar_);
  status_ = new QLabel(box);
  status_->setObjectName(QStringLiteral("analysisStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  g->addLayout(buttons, 3, 0, 1, 4);
  g->addWidget(status_, 4, 0, 1, 4);
  g->setColumnStretch(1, 1);

  connect(analyze_, &QPushButton::clicked, this, [this] {
    Q_EMIT analyzeRequested(referencePath(), fixedTextPath(), arPath(), k(), device());
  });
  connect(cancel_, &QPushButton::clicked, this, &AnalysisPanel::cancelRequested);
  connect(open_, &QPushButton::clicked, this, [this] { chooseAnalysis(Main); });
  connect(compare_, &QPushButton::clicked, this, [this] { chooseAnalysis(Comparison); });
  connect(closeCompare_, &QPushButton::clicked, this, &AnalysisPanel::closeComparison);
  return box;
}

void AnalysisPanel::setWorkspace(const QString& dir) { workspace_ = dir; }

void AnalysisPanel::setCalibrationRuns(const QVector<RunChoice>& runs) {
  for (QComboBox* box : {reference_, fixed_, ar_}) {
    const QString keep = pathOf(box);
    box->clear();
    for (const RunChoice& r : runs) {
      QString text = QFileInfo(r.path).fileName();
      QStringList notes;
      if (!r.source.isEmpty()) notes << r.source;
      if (r.tokens > 0) notes << tr("%1 tokens").arg(r.tokens);
      if (r.status != QLatin1String("complete") && !r.status.isEmpty()) notes << r.status;
      if (!notes.isEmpty()) text += QStringLiteral(" — ") + notes.join(QStringLiteral(", "));
      box->addItem(text, r.path);
    }
    setPath(box, keep);
  }
}

void AnalysisPanel::setRunPaths(const QString& reference, const QString& fixedText, const QString& ar) {
  setPath(reference_, reference);
  setPath(fixed_, fixedText);
  setPath(ar_, ar);
}

void AnalysisPanel::setK(int k) { k_->setValue(k); }

void AnalysisPanel::setDevice(const QString& device) {
  const int i = device_->findText(device);
  if (i >= 0) device_->setCurrentIndex(i);
}

void AnalysisPanel::setCudaAvailable(bool available, const QString& reason) {
  auto* m = qobject_cast<QStandardItemModel*>(device_->model());
  if (QStandardItem* item = m ? m->item(1) : nullptr) {
    item->setEnabled(available);
    item->setToolTip(available ? QString() : reason);
  }
  if (!available) device_->setCurrentIndex(0);
}

QString AnalysisPanel::referencePath() const { return pathOf(reference_); }
QString AnalysisPanel::fixedTextPath() const { return pathOf(fixed_); }
QString AnalysisPanel::arPath() const { return pathOf(ar_); }
int AnalysisPanel::k() const { return k_->value(); }
QString AnalysisPanel::device() const { return device_->currentText(); }

void AnalysisPanel::beginAnalysis(const QString& what) {
  busy_ = true;
  showJobProgress(bar_, -1);
  bar_->show();
  setStatus(what, false);
  updateButtons();
}

void AnalysisPanel::setProgress(double fraction, const QString& text) {
  showJobProgress(bar_, fraction, text);
}

void AnalysisPanel::endAnalysis(const QString& message, bool isError) {
  busy_ = false;
  bar_->hide();
  setStatus(message, isError);
  updateButtons();
}

void AnalysisPanel::showAnalysis(const EpsilonData& data, int slot) {
  const int s = slot == Comparison ? 1 : 0;
  pages_[s]->setData(data);
  if (s == 1) {
    pages_[1]->show();
    split_->setSizes({1, 1});
  }
  // No switch to the Epsilon tab: analyses are asked for there, and the one
  // opened on start must not pull the Drift tab away.
  updateButtons();
}

void AnalysisPanel::closeComparison() {
  pages_[1]->clear(QString());
  pages_[1]->hide();
  updateButtons();
}

EpsilonPage* AnalysisPanel::page(int slot) const { return pages_[slot == Comparison ? 1 : 0]; }
bool AnalysisPanel::isComparing() const { return !pages_[1]->isHidden(); }
QString AnalysisPanel::statusText() const { return status_->text(); }

void AnalysisPanel::chooseFile(QComboBox* into) {
  const QString path = QFileDialog::getOpenFileName(this, tr("Choose a calibration run"), workspace_, runFilter());
  if (!path.isEmpty()) setPath(into, path);
}

void AnalysisPanel::chooseAnalysis(int slot) {
  const QString path = QFileDialog::getOpenFileName(
      this, slot == Comparison ? tr("Open an analysis to compare") : tr("Open an analysis run"), workspace_,
      runFilter());
  if (!path.isEmpty()) Q_EMIT openRequested(path, slot);
}

void AnalysisPanel::setStatus(const QString& text, bool isError) {
  status_->setText(text);
  status_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
}

void AnalysisPanel::updateButtons() {
  analyze_->setEnabled(!busy_);
  cancel_->setEnabled(busy_);
  open_->setEnabled(!busy_);
  compare_->setEnabled(!busy_ && !pages_[0]->data().isEmpty());
  closeCompare_->setEnabled(isComparing());
}

}  // namespace sdw::widgets
