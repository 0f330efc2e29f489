#include "widgets/qualitypage.h"

#include "widgets/checkslabel.h"
#include "widgets/qualitymodel.h"
#include "widgets/sortabletable.h"

#include <QAction>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace sdw::widgets {

QualityPage::QualityPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->setSpacing(4);

  auto* top = new QHBoxLayout;
  runs_ = new QComboBox(this);
  runs_->setObjectName(QStringLiteral("evaluationRuns"));
  runs_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  runs_->setMinimumContentsLength(18);
  runs_->setToolTip(tr("Evaluation runs of the workspace"));
  open_ = new QPushButton(tr("Open…"), this);
  open_->setObjectName(QStringLiteral("openEvaluation"));
  evaluate_ = new QPushButton(tr("Evaluate…"), this);
  evaluate_->setObjectName(QStringLiteral("evaluate"));
  evaluate_->setToolTip(tr("Compare pruned checkpoints with the dense model on held-out text and prompts"));
  export_ = new QPushButton(tr("Export CSV…"), this);
  export_->setObjectName(QStringLiteral("exportQuality"));
  top->addWidget(new QLabel(tr("Evaluation:"), this));
  top->addWidget(runs_, 1);
  top->addWidget(open_);
  top->addWidget(evaluate_);
  top->addWidget(export_);
  layout->addLayout(top);

  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("qualitySummary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("qualityStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->hide();
  checks_ = new ChecksLabel(QStringLiteral("qualityChecks"), this);
  layout->addWidget(summary_);
  layout->addWidget(checks_);
  layout->addWidget(status_);

  model_ = new QualityModel(this);
  table_ = makeSortableTable(model_, QualityModel::ValueRole, QStringLiteral("qualityTable"), this, &proxy_);
  // Columns as wide as their contents: a stretched last column put its
  // numbers far from the rest on a wide screen.
  table_->horizontalHeader()->setStretchLastSection(false);
  table_->setContextMenuPolicy(Qt::ActionsContextMenu);
  auto* exportAction = new QAction(tr("Export CSV…"), table_);
  connect(exportAction, &QAction::triggered, this, &QualityPage::exportRequested);
  table_->addAction(exportAction);

  auto* sbs = new QWidget(this);
  auto* sl = new QVBoxLayout(sbs);
  sl->setContentsMargins(0, 0, 0, 0);
  sl->setSpacing(3);
  auto* promptRow = new QHBoxLayout;
  auto* title = new QLabel(tr("Side by side:"), sbs);
  title->setStyleSheet(QStringLiteral("font-weight: 600;"));
  prompt_ = new QComboBox(sbs);
  prompt_->setObjectName(QStringLiteral("sideBySidePrompt"));
  prompt_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  prompt_->setMinimumContentsLength(30);
  promptRow->addWidget(title);
  promptRow->addWidget(prompt_, 1);
  sl->addLayout(promptRow);
  promptText_ = new QPlainTextEdit(sbs);
  promptText_->setObjectName(QStringLiteral("sideBySidePromptText"));
  promptText_->setReadOnly(true);
  promptText_->setMaximumHeight(48);
  promptText_->setStyleSheet(QStringLiteral("QPlainTextEdit { background: palette(window); }"));
  sl->addWidget(promptText_);
  columns_ = new QHBoxLayout;
  columns_->setSpacing(4);
  sl->addLayout(columns_, 1);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(sbs);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  split->setSizes({120, 360});
  layout->addWidget(split, 1);

  connect(runs_, &QComboBox::activated, this, [this](int i) {
    const QString p = runs_->itemData(i).toString();
    if (!p.isEmpty() && p != data_.path) Q_EMIT openRequested(p);
  });
  connect(open_, &QPushButton::clicked, this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, tr("Open an evaluation run"), workspace_,
                                                   tr("Run files (*.sdw.h5);;All files (*)"));
    if (!p.isEmpty()) Q_EMIT openRequested(p);
  });
  connect(evaluate_, &QPushButton::clicked, this, &QualityPage::evaluateRequested);
  connect(export_, &QPushButton::clicked, this, &QualityPage::exportRequested);
  connect(prompt_, &QComboBox::currentIndexChanged, this, &QualityPage::selectPrompt);
  summary_->setText(tr("No evaluation run open."));
  export_->setEnabled(false);
}

void QualityPage::setRuns(const QStringList& paths) {
  runs_->clear();
  for (const QString& p : paths) runs_->addItem(QFileInfo(p).fileName(), p);
  if (!data_.path.isEmpty()) {
    if (runs_->findData(data_.path) < 0) runs_->addItem(QFileInfo(data_.path).fileName(), data_.path);
    runs_->setCurrentIndex(runs_->findData(data_.path));
  }
}

void QualityPage::setData(const QualityData& data) {
  data_ = data;
  model_->setData(data);
  summary_->setText(data.summaryLine());
  checks_->setChecks(data.warnings, data.notes);
  if (runs_->findData(data.path) < 0) runs_->addItem(QFileInfo(data.path).fileName(), data.path);
  runs_->setCurrentIndex(runs_->findData(data.path));
  export_->setEnabled(!data.models.isEmpty());
  rebuildColumns();
  prompt_->blockSignals(true);
  prompt_->clear();
  for (const SideBySideData& s : data.sideBySide) {
    QString head = s.prompt.simplified();
    if (head.size() > 70) head = head.left(67) + QStringLiteral("…");
    prompt_->addItem(QStringLiteral("%1: %2").arg(s.promptId, head));
  }
  prompt_->blockSignals(false);
  selectPrompt(data.sideBySide.isEmpty() ? -1 : 0);
  setStatus(QString(), false);
}

void QualityPage::rebuildColumns() {
  for (QLabel* l : labels_) {
    QWidget* box = l->parentWidget();
    columns_->removeWidget(box);
    box->hide();
    box->deleteLater();
  }
  labels_.clear();
  texts_.clear();
  for (const QualityModelData& m : data_.models) {
    auto* box = new QWidget(this);
    auto* bl = new QVBoxLayout(box);
    bl->setContentsMargins(0, 0, 0, 0);
    bl->setSpacing(1);
    auto* label = new QLabel(m.label, box);
    label->setStyleSheet(QStringLiteral("font-weight: 600;"));
    label->setToolTip(m.dir);
    auto* text = new QPlainTextEdit(box);
    text->setReadOnly(true);
    text->setObjectName(QStringLiteral("sideBySideText"));
    bl->addWidget(label);
    bl->addWidget(text, 1);
    columns_->addWidget(box, 1);
    labels_ << label;
    texts_ << text;
  }
}

void QualityPage::selectPrompt(int index) {
  const bool valid = index >= 0 && index < data_.sideBySide.size();
  if (valid && prompt_->currentIndex() != index) {
    prompt_->setCurrentIndex(index);  // comes back here through currentIndexChanged
    return;
  }
  promptText_->setPlainText(valid ? data_.sideBySide[index].prompt : tr("No side-by-side generations."));
  for (int m = 0; m < texts_.size(); ++m) {
    const QStringList& t = valid ? data_.sideBySide[index].texts : QStringList();
    texts_[m]->setPlainText(m < t.size() ? t[m] : QString());
  }
}

int QualityPage::promptCount() const { return prompt_->count(); }
QString QualityPage::shownPrompt() const { return promptText_->toPlainText(); }

QStringList QualityPage::shownTexts() const {
  QStringList out;
  for (const QPlainTextEdit* t : texts_) out << t->toPlainText();
  return out;
}

QStringList QualityPage::shownLabels() const {
  QStringList out;
  for (const QLabel* l : labels_) out << l->text();
  return out;
}

void QualityPage::setStatus(const QString& text, bool isError) {
  status_->setText(text);
  status_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
  status_->setVisible(!text.isEmpty());
}

void QualityPage::setBusy(bool busy) { evaluate_->setEnabled(!busy); }

QString QualityPage::summaryText() const { return summary_->text(); }
QStringList QualityPage::shownWarnings() const { return checks_->isVisibleTo(this) ? checks_->warnings() : QStringList(); }
QString QualityPage::statusText() const { return status_->text(); }

}  // namespace sdw::widgets
