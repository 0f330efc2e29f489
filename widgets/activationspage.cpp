#include "widgets/activationspage.h"

#include "widgets/activationplots.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace sdw::widgets {

namespace {

QWidget* titled(QWidget* plot, QLabel** labelOut) {
  auto* box = new QWidget;
  auto* l = new QVBoxLayout(box);
  l->setContentsMargins(2, 2, 2, 2);
  l->setSpacing(2);
  auto* label = new QLabel(box);
  label->setStyleSheet(QStringLiteral("font-weight: 600;"));
  label->setWordWrap(true);
  l->addWidget(label);
  l->addWidget(plot, 1);
  *labelOut = label;
  return box;
}

}  // namespace

QString ActivationsPage::noSamplesHint() {
  return tr(
      "No activation samples: calibrate with --sample-rows N or tick 'Keep activation samples' in the "
      "Calibration panel");
}

ActivationsPage::ActivationsPage(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("activationsPage"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 4, 0, 0);
  layout->setSpacing(4);

  auto* box = new QGroupBox(tr("Activation samples of the calibration runs: fixed text against AR"), this);
  auto* bl = new QVBoxLayout(box);
  bl->setContentsMargins(8, 6, 8, 6);
  bl->setSpacing(3);
  bl->addWidget(buildControls());
  runs_ = new QLabel(box);
  runs_->setObjectName(QStringLiteral("activationRuns"));
  runs_->setWordWrap(true);
  runs_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  runs_->setStyleSheet(QStringLiteral("color: #555;"));
  status_ = new QLabel(box);
  status_->setObjectName(QStringLiteral("activationStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bl->addWidget(runs_);
  bl->addWidget(status_);
  layout->addWidget(box);

  stack_ = new QStackedWidget(this);
  hint_ = new QLabel(stack_);
  hint_->setObjectName(QStringLiteral("activationsEmpty"));
  hint_->setAlignment(Qt::AlignCenter);
  hint_->setWordWrap(true);
  hint_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stack_->addWidget(hint_);

  auto* content = new QWidget(stack_);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(4, 0, 4, 0);
  histogram_ = new ActivationHistogramPlot(content);
  histogram_->setObjectName(QStringLiteral("activationHistogram"));
  channels_ = new ChannelMagnitudePlot(content);
  channels_->setObjectName(QStringLiteral("activationChannels"));
  steps_ = new DecodeStepPlot(content);
  steps_->setObjectName(QStringLiteral("activationDecodeSteps"));
  for (PlotView* p :
       {static_cast<PlotView*>(histogram_), static_cast<PlotView*>(channels_), static_cast<PlotView*>(steps_)})
    p->setMinimumSize(260, 170);
  auto* top = new QSplitter(Qt::Horizontal, content);
  top->addWidget(titled(histogram_, &histogramTitle_));
  top->addWidget(titled(steps_, &stepsTitle_));
  top->setStretchFactor(0, 1);
  top->setStretchFactor(1, 1);
  auto* vertical = new QSplitter(Qt::Vertical, content);
  vertical->addWidget(top);
  vertical->addWidget(titled(channels_, &channelsTitle_));
  vertical->setStretchFactor(0, 1);
  vertical->setStretchFactor(1, 1);
  cl->addWidget(vertical, 1);
  stack_->addWidget(content);
  layout->addWidget(stack_, 1);

  setCatalog({});
}

QWidget* ActivationsPage::buildControls() {
  auto* w = new QWidget(this);
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  input_ = new QComboBox(w);
  input_->setObjectName(QStringLiteral("activationInput"));
  input_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  input_->setMinimumContentsLength(26);
  input_->setToolTip(
      tr("A projection input, named by the modules that read it (q/k/v share one, gate/up share "
         "one)"));
  logCount_ = new QCheckBox(tr("Log count"), w);
  logCount_->setObjectName(QStringLiteral("activationLogCount"));
  logCount_->setChecked(true);  // as the histogram starts
  logCount_->setToolTip(tr("The histogram's count axis on a log scale: the tails of the distribution show"));
  logChannels_ = new QCheckBox(tr("Log mean |x|"), w);
  logChannels_->setObjectName(QStringLiteral("activationLogChannels"));
  logChannels_->setToolTip(tr("The per-channel plot's mean |x| axis on a log scale"));
  stepBin_ = new QSpinBox(w);
  stepBin_->setObjectName(QStringLiteral("activationStepBin"));
  stepBin_->setRange(1, 4096);
  stepBin_->setValue(1);
  stepBin_->setToolTip(
      tr("Decode steps per point of the decode-step plot: with few sampled rows per step, wider "
         "bins give steadier medians"));
  export_ = new QToolButton(w);
  export_->setObjectName(QStringLiteral("activationExport"));
  export_->setText(tr("Export"));
  export_->setToolTip(tr("Save a plot as PNG or PDF, or its data as CSV"));
  export_->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(export_);
  menu->addAction(tr("Histogram…"), this, [this] { exportDialog(Histogram); });
  menu->addAction(tr("Mean |x| per channel…"), this, [this] { exportDialog(Channels); });
  menu->addAction(tr("By decode step…"), this, [this] { exportDialog(DecodeSteps); });
  export_->setMenu(menu);

  h->addWidget(new QLabel(tr("Input:"), w));
  h->addWidget(input_, 1);
  h->addSpacing(10);
  h->addWidget(logCount_);
  h->addWidget(logChannels_);
  h->addSpacing(10);
  h->addWidget(new QLabel(tr("Steps per point:"), w));
  h->addWidget(stepBin_);
  h->addSpacing(10);
  h->addWidget(export_);

  connect(input_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0) Q_EMIT inputRequested(input_->itemData(i).toString());
  });
  connect(logCount_, &QCheckBox::toggled, this, [this](bool on) { histogram_->setLogCount(on); });
  connect(logChannels_, &QCheckBox::toggled, this, [this](bool on) { channels_->setLogScale(on); });
  connect(stepBin_, &QSpinBox::valueChanged, this, [this](int v) { steps_->setStepsPerBin(v); });
  return w;
}

void ActivationsPage::setCatalog(const ActivationCatalog& catalog) {
  const QString keep = currentInput();
  catalog_ = catalog;
  {
    const QSignalBlocker block(input_);
    input_->clear();
    for (const ActivationInputInfo& in : catalog.inputs) {
      input_->addItem(in.label(), in.name);
      input_->setItemData(
          input_->count() - 1,
          tr("%1\nmodules: %2\nd_in %3").arg(in.name, in.modules.join(QStringLiteral(", "))).arg(in.dIn),
          Qt::ToolTipRole);
    }
    const int i = input_->findData(keep);
    input_->setCurrentIndex(i >= 0 ? i : (input_->count() > 0 ? 0 : -1));
  }

  QStringList with;
  for (const ActivationRunInfo& r : catalog.runs)
    with << tr("%1 (%2, %3 of %4 rows)").arg(QFileInfo(r.path).fileName(), r.source).arg(r.rows).arg(r.rowsCounted);
  QString runs;
  if (!with.isEmpty()) runs = tr("Runs with samples: %1.").arg(with.join(QStringLiteral(", ")));
  if (!catalog.withoutSamples.isEmpty())
    runs += (runs.isEmpty() ? QString() : QStringLiteral(" ")) +
            tr("Without samples (not shown): %1.").arg(catalog.withoutSamples.join(QStringLiteral(", ")));
  runs_->setText(runs);
  runs_->setVisible(!runs.isEmpty());

  const bool empty = catalog.isEmpty();
  for (QWidget* c :
       {static_cast<QWidget*>(input_), static_cast<QWidget*>(logCount_), static_cast<QWidget*>(logChannels_),
        static_cast<QWidget*>(stepBin_), static_cast<QWidget*>(export_)})
    c->setEnabled(!empty);
  if (empty) {
    data_ = {};
    histogram_->clear();
    channels_->clear();
    steps_->clear();
    QString hint = noSamplesHint();
    const auto without = catalog.withoutSamples.size();
    if (without == 1) hint += QStringLiteral("\n\n") + tr("The one calibration run of this workspace has none.");
    else if (without > 1)
      hint += QStringLiteral("\n\n") + tr("None of the %1 calibration runs of this workspace has any.").arg(without);
    hint_->setText(hint);
    stack_->setCurrentWidget(hint_);
  } else {
    stack_->setCurrentIndex(1);
  }
}

void ActivationsPage::setInputData(const ActivationInputData& data) {
  data_ = data;
  if (!data.input.name.isEmpty() && currentInput() != data.input.name) {
    const QSignalBlocker block(input_);
    const int i = input_->findData(data.input.name);
    if (i >= 0) input_->setCurrentIndex(i);
  }
  histogram_->setData(data);
  channels_->setData(data);
  steps_->setData(data);
  QStringList rows;
  for (const ActivationSeries& s : data.series) rows << QString::number(s.rows);
  rows.removeDuplicates();
  const QString label = data.input.label();
  histogramTitle_->setText(tr("Histogram of the sampled values (%1 rows × d_in %2 per run)")
                               .arg(rows.join(QStringLiteral(" / ")))
                               .arg(data.input.dIn));
  channelsTitle_->setText(tr("Mean |x| per channel of %1").arg(label));
  stepsTitle_->setText(tr("Median ‖x‖₂ of the sampled rows by decode step"));
  stepsTitle_->setToolTip(tr("Runs that decode (AR, cross-model) only: fixed text has no decode step"));
  histogramTitle_->setToolTip(tr("%1 (%2)").arg(label, data.input.name));
  channelsTitle_->setToolTip(data.input.name);
}

void ActivationsPage::beginLoad(const QString& what) { setStatus(what, false); }

void ActivationsPage::endLoad(const QString& message, bool isError) { setStatus(message, isError); }

QString ActivationsPage::currentInput() const {
  return input_->currentIndex() >= 0 ? input_->currentData().toString() : QString();
}

bool ActivationsPage::selectInput(const QString& name) {
  const int i = input_->findData(name);
  if (i < 0) return false;
  input_->setCurrentIndex(i);
  return true;
}

PlotView* ActivationsPage::plotOf(Plot which) const {
  switch (which) {
    case Histogram: return histogram_;
    case Channels: return channels_;
    case DecodeSteps: return steps_;
  }
  return histogram_;
}

QString ActivationsPage::exportTo(Plot which, const QString& path) const { return plotOf(which)->exportTo(path); }

void ActivationsPage::exportDialog(Plot which) {
  static const char* const stems[] = {"histogram", "channels", "decode-steps"};
  QString input = data_.input.name.isEmpty()
                      ? QStringLiteral("activations")
                      : QStringLiteral("layer%1-%2").arg(data_.input.layer).arg(shortModuleName(data_.input.name));
  const QString name = QStringLiteral("activations-%1-%2.png").arg(input, QLatin1String(stems[which]));
  const QString start = QDir(workspace_.isEmpty() ? QDir::homePath() : workspace_).filePath(name);
  const QString path = QFileDialog::getSaveFileName(this, tr("Export the plot"), start,
                                                    tr("PNG image (*.png);;PDF document (*.pdf);;CSV data (*.csv)"));
  if (path.isEmpty()) return;
  if (const QString err = exportTo(which, path); !err.isEmpty()) {
    setStatus(err, true);
    QMessageBox::warning(this, tr("Export failed"), err);
  } else {
    setStatus(tr("Exported %1").arg(path), false);
  }
}

bool ActivationsPage::showsHint() const { return stack_->currentWidget() == hint_; }
QString ActivationsPage::hintText() const { return showsHint() ? hint_->text() : QString(); }
QString ActivationsPage::runsText() const { return runs_->text(); }
QString ActivationsPage::statusText() const { return status_->text(); }

void ActivationsPage::setStatus(const QString& text, bool isError) {
  status_->setText(text);
  status_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
  status_->setVisible(!text.isEmpty());
}

}  // namespace sdw::widgets
