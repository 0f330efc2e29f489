#include "widgets/walkthroughview.h"

#include <QButtonGroup>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QSplitter>
#include <QVBoxLayout>

namespace sdw::widgets {

namespace {

QString stateText(WalkthroughView::State s) {
  switch (s) {
    case WalkthroughView::State::Pending: return QObject::tr("—");
    case WalkthroughView::State::Running: return QObject::tr("running…");
    case WalkthroughView::State::Done: return QObject::tr("done");
    case WalkthroughView::State::Failed: return QObject::tr("failed");
    case WalkthroughView::State::Cancelled: return QObject::tr("cancelled");
  }
  return {};
}

QColor stateColor(WalkthroughView::State s) {
  switch (s) {
    case WalkthroughView::State::Running: return QColor(0x1f, 0x5f, 0xa8);
    case WalkthroughView::State::Done: return QColor(0x1a, 0x7f, 0x37);
    case WalkthroughView::State::Failed: return QColor(0xb0, 0x00, 0x20);
    case WalkthroughView::State::Cancelled: return QColor(0x8a, 0x5a, 0x00);
    default: return {};
  }
}

}  // namespace

WalkthroughView::WalkthroughView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("walkthroughView"));
  auto* layout = new QVBoxLayout(this);
  device_ = new QLabel(this);
  device_->setObjectName(QStringLiteral("walkthroughDevice"));
  device_->setWordWrap(true);
  device_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(device_);

  // The steps as rows of labels in a scroll area: findings are sentences and
  // must wrap, which item views do poorly.
  group_ = new QButtonGroup(this);
  group_->setExclusive(true);
  list_ = new QWidget;
  list_->setObjectName(QStringLiteral("walkthroughSteps"));
  auto* rowsLayout = new QVBoxLayout(list_);
  rowsLayout->setContentsMargins(4, 4, 4, 4);
  rowsLayout->setSpacing(2);
  rowsLayout->addStretch(1);
  scroll_ = new QScrollArea(this);
  scroll_->setWidgetResizable(true);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll_->setWidget(list_);

  auto* detail = new QWidget(this);
  auto* dl = new QVBoxLayout(detail);
  dl->setContentsMargins(8, 0, 0, 0);
  title_ = new QLabel(detail);
  title_->setObjectName(QStringLiteral("walkthroughTitle"));
  title_->setWordWrap(true);
  title_->setStyleSheet(QStringLiteral("font-size: 12pt; font-weight: 600;"));
  explanation_ = new QLabel(detail);
  explanation_->setObjectName(QStringLiteral("walkthroughExplanation"));
  explanation_->setWordWrap(true);
  explanation_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  explanation_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  finding_ = new QLabel(detail);
  finding_->setObjectName(QStringLiteral("walkthroughFinding"));
  finding_->setWordWrap(true);
  finding_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  finding_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  finding_->setStyleSheet(QStringLiteral("font-weight: 600;"));
  dl->addWidget(title_);
  dl->addWidget(explanation_);
  dl->addSpacing(8);
  dl->addWidget(finding_);
  dl->addStretch(1);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(scroll_);
  split->addWidget(detail);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setChildrenCollapsible(false);
  scroll_->setMinimumWidth(360);
  split->setSizes({640, 460});  // the list and its findings get the larger part
  layout->addWidget(split, 1);

  auto* buttons = new QHBoxLayout;
  runStep_ = new QPushButton(tr("Run step"), this);
  runStep_->setObjectName(QStringLiteral("walkthroughRunStep"));
  runStep_->setToolTip(tr("Run the selected step on its panel"));
  runAll_ = new QPushButton(tr("Run all"), this);
  runAll_->setObjectName(QStringLiteral("walkthroughRunAll"));
  runAll_->setToolTip(tr("Run every step in order; stop at the first that does not succeed"));
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName(QStringLiteral("walkthroughCancel"));
  cancel_->setToolTip(tr("Cancel the running step's job, as its panel's Cancel button does"));
  close_ = new QPushButton(tr("Close"), this);
  close_->setObjectName(QStringLiteral("walkthroughClose"));
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("walkthroughStatus"));
  status_->setWordWrap(true);
  buttons->addWidget(runStep_);
  buttons->addWidget(runAll_);
  buttons->addWidget(cancel_);
  buttons->addWidget(status_, 1);
  buttons->addWidget(close_);
  layout->addLayout(buttons);

  connect(group_, &QButtonGroup::idToggled, this, [this](int, bool on) {
    if (on) showSelected();
  });
  connect(runStep_, &QPushButton::clicked, this, [this] {
    if (currentStep() >= 0) Q_EMIT runStepRequested(currentStep());
  });
  connect(runAll_, &QPushButton::clicked, this, &WalkthroughView::runAllRequested);
  connect(cancel_, &QPushButton::clicked, this, &WalkthroughView::cancelRequested);
  connect(close_, &QPushButton::clicked, this, &WalkthroughView::closeRequested);
  setRunning(false);
}

void WalkthroughView::setSteps(const QVector<WalkthroughStep>& steps) {
  steps_ = steps;
  states_ = QVector<State>(steps.size(), State::Pending);
  findings_ = QVector<QString>(steps.size());
  for (const Row& r : rows_) {
    group_->removeButton(r.title);
    delete r.title->parentWidget();
  }
  rows_.clear();
  auto* rowsLayout = static_cast<QVBoxLayout*>(list_->layout());
  for (int i = 0; i < steps.size(); ++i) {
    auto* box = new QWidget(list_);
    auto* g = new QGridLayout(box);
    g->setContentsMargins(2, 2, 2, 4);
    g->setVerticalSpacing(0);
    Row r;
    r.title = new QRadioButton(QStringLiteral("%1. %2").arg(i + 1).arg(steps[i].title), box);
    r.title->setObjectName(QStringLiteral("walkthroughStep%1").arg(i));
    r.status = new QLabel(stateText(State::Pending), box);
    r.status->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    r.finding = new QLabel(box);
    r.finding->setWordWrap(true);
    r.finding->setTextInteractionFlags(Qt::TextSelectableByMouse);
    r.finding->setContentsMargins(22, 0, 0, 0);  // under the title, past the radio mark
    r.finding->setStyleSheet(QStringLiteral("color: #444;"));
    r.finding->hide();
    g->addWidget(r.title, 0, 0);
    g->addWidget(r.status, 0, 1);
    g->addWidget(r.finding, 1, 0, 1, 2);
    g->setColumnStretch(0, 1);
    group_->addButton(r.title, i);
    rowsLayout->insertWidget(i, box);
    rows_.push_back(r);
  }
  if (!steps.isEmpty()) setCurrentStep(0);
}

void WalkthroughView::setDeviceText(const QString& text) { device_->setText(text); }

void WalkthroughView::setCurrentStep(int index) {
  if (index < 0 || index >= rows_.size()) return;
  rows_[index].title->setChecked(true);
  scroll_->ensureWidgetVisible(rows_[index].title->parentWidget());
  showSelected();
}

void WalkthroughView::setStepState(int index, State state, const QString& detail, const QString& finding) {
  if (index < 0 || index >= rows_.size()) return;
  states_[index] = state;
  findings_[index] = finding;
  const Row& r = rows_[index];
  r.status->setText(detail.isEmpty() ? stateText(state) : stateText(state) + QStringLiteral(", ") + detail);
  const QColor c = stateColor(state);
  r.status->setStyleSheet(c.isValid() ? QStringLiteral("color: %1;").arg(c.name()) : QString());
  r.finding->setText(finding);
  r.finding->setVisible(!finding.isEmpty());
  r.finding->setStyleSheet(state == State::Failed ? QStringLiteral("color: #b00020;") : QStringLiteral("color: #444;"));
  if (index == currentStep()) showSelected();
}

void WalkthroughView::setRunning(bool running) {
  runStep_->setEnabled(!running);
  runAll_->setEnabled(!running);
  cancel_->setEnabled(running);
}

void WalkthroughView::setStatus(const QString& text, bool isError) {
  status_->setText(text);
  status_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
}

void WalkthroughView::showSelected() {
  const int i = currentStep();
  if (i < 0 || i >= steps_.size()) {
    title_->clear();
    explanation_->clear();
    finding_->clear();
    return;
  }
  title_->setText(QStringLiteral("%1. %2").arg(i + 1).arg(steps_[i].title));
  explanation_->setText(steps_[i].explanation);
  finding_->setText(findings_[i].isEmpty() ? QString() : tr("Finding: %1").arg(findings_[i]));
}

int WalkthroughView::stepCount() const { return static_cast<int>(rows_.size()); }
int WalkthroughView::currentStep() const { return group_->checkedId(); }
QString WalkthroughView::stepTitle(int index) const {
  return index >= 0 && index < steps_.size() ? steps_[index].title : QString();
}
WalkthroughView::State WalkthroughView::stepState(int index) const {
  return index >= 0 && index < states_.size() ? states_[index] : State::Pending;
}
QString WalkthroughView::stepFinding(int index) const {
  return index >= 0 && index < findings_.size() ? findings_[index] : QString();
}
QString WalkthroughView::stepStatusText(int index) const {
  return index >= 0 && index < rows_.size() ? rows_[index].status->text() : QString();
}
QString WalkthroughView::stepFindingText(int index) const {
  return index >= 0 && index < rows_.size() ? rows_[index].finding->text() : QString();
}
QString WalkthroughView::titleText() const { return title_->text(); }
QString WalkthroughView::explanationText() const { return explanation_->text(); }
QString WalkthroughView::findingText() const { return finding_->text(); }
QString WalkthroughView::deviceText() const { return device_->text(); }
QString WalkthroughView::statusText() const { return status_->text(); }

}  // namespace sdw::widgets
