#include "app/gui/walkthrough.h"

#include "app/gui/mainwindow.h"
#include "gpu/device.h"
#include "widgets/walkthroughview.h"

#include <QDateTime>
#include <QDir>
#include <QStandardPaths>
#include <QVBoxLayout>

namespace sdw::app {

StoryOptions walkthroughOptions() {
  StoryOptions o = gpu::gpuUsable() ? gpuStoryOptions() : StoryOptions{};
  o.workDir = QDir(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation))
                  .filePath(QStringLiteral("walkthrough-%1")
                                .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"))));
  return o;
}

WalkthroughDialog::WalkthroughDialog(MainWindow* window, const StoryOptions& options) : QDialog(window) {
  setObjectName(QStringLiteral("walkthroughDialog"));
  setWindowTitle(tr("Guided walkthrough: fixed text vs AR"));
  setModal(false);
  resize(1180, 760);
  driver_ = new StoryDriver(window, options, this);
  view_ = new widgets::WalkthroughView(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(view_);

  QVector<widgets::WalkthroughStep> steps;
  for (const StoryStepInfo& s : driver_->steps()) steps.push_back({s.title, s.explanation});
  view_->setSteps(steps);
  const StoryOptions& o = driver_->options();
  const QString decoding = tr("one decoding for every step: %1").arg(QString::fromStdString(o.decoding.describe()));
  const QString where =
      o.device == QLatin1String("cuda")
          ? tr("Runs on the GPU: %1, %2 weights.").arg(QString::fromStdString(gpu::describeDevice(gpu::deviceInfo())), o.dtype)
          : tr("Runs on the CPU, %1 weights (%2).").arg(o.dtype, QString::fromStdString(gpu::describeDevice(gpu::deviceInfo())));
  const QString why =
      o.decoding.greedy()
          ? tr(" Why greedy: on this sample model the study (docs/study.md) finds the AR-calibrated model "
               "closer to the dense one when every step decodes greedily, and no difference when every step "
               "samples at T = 1; the panels start from sampling at T = 1, the paper's protocol.")
          : QString();
  view_->setDeviceText(tr("%1 Budgets: %2 tokens for fixed text and AR each, %3 for exact capture, %4 for the "
                          "held-out reference; %5.%7 Runs and pruned models go to %6, which the window opens as its "
                          "workspace.")
                           .arg(where)
                           .arg(o.calibrationTokens)
                           .arg(o.exactTokens)
                           .arg(o.referenceTokens)
                           .arg(decoding, QDir::toNativeSeparators(o.workDir), why));
  view_->setStatus(tr("Select a step and press Run step, or Run all."));

  connect(view_, &widgets::WalkthroughView::runStepRequested, driver_, &StoryDriver::runStep);
  connect(view_, &widgets::WalkthroughView::runAllRequested, driver_, &StoryDriver::runAll);
  connect(view_, &widgets::WalkthroughView::cancelRequested, driver_, &StoryDriver::cancel);
  connect(view_, &widgets::WalkthroughView::closeRequested, this, &QWidget::close);
  connect(driver_, &StoryDriver::stepStarted, this, &WalkthroughDialog::stepStarted);
  connect(driver_, &StoryDriver::stepFinished, this, &WalkthroughDialog::stepFinished);
  connect(driver_, &StoryDriver::allFinished, this, &WalkthroughDialog::allFinished);
}

void WalkthroughDialog::stepStarted(int index) {
  view_->setStepState(index, widgets::WalkthroughView::State::Running);
  view_->setCurrentStep(index);
  view_->setRunning(true);
  view_->setStatus(tr("Running step %1 on the %2 panel…").arg(index + 1).arg(driver_->steps()[index].panel));
}

void WalkthroughDialog::stepFinished(int index, const StoryStepResult& r) {
  using State = widgets::WalkthroughView::State;
  const State state = r.outcome == StoryOutcome::Ok       ? State::Done
                      : r.outcome == StoryOutcome::Failed ? State::Failed
                                                          : State::Cancelled;
  const QString detail = tr("%1 s on %2").arg(r.seconds, 0, 'f', r.seconds < 10 ? 2 : 1).arg(r.device);
  // A step that did not succeed has no finding: its message says why.
  view_->setStepState(index, state, detail, r.outcome == StoryOutcome::Ok ? r.finding : r.message);
  view_->setRunning(driver_->isRunning());
  if (!driver_->isRunning())
    view_->setStatus(r.outcome == StoryOutcome::Ok ? tr("Step %1 done.").arg(index + 1)
                                                   : tr("Step %1 %2.").arg(index + 1).arg(storyOutcomeName(r.outcome)),
                     r.outcome == StoryOutcome::Failed);
}

void WalkthroughDialog::allFinished(bool ok) {
  view_->setRunning(false);
  view_->setStatus(ok ? tr("All %1 steps done.").arg(driver_->steps().size())
                      : tr("Stopped after %1 step(s).").arg(driver_->results().size()),
                   !ok);
}

void WalkthroughDialog::reject() {
  // Close, Esc and the title bar all end here (QDialog::closeEvent rejects).
  if (driver_->isRunning()) driver_->cancel();
  QDialog::reject();
}

WalkthroughDialog* showWalkthrough(MainWindow* window) {
  auto* dialog = window->findChild<WalkthroughDialog*>(QStringLiteral("walkthroughDialog"));
  if (!dialog) dialog = new WalkthroughDialog(window, walkthroughOptions());
  dialog->show();
  dialog->raise();
  dialog->activateWindow();
  return dialog;
}

}  // namespace sdw::app
