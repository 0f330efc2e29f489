#include "widgets/driftpage.h"

#include "widgets/activationselection.h"
#include "widgets/checkslabel.h"
#include "widgets/driftlayermodel.h"
#include "widgets/jobprogress.h"
#include "widgets/pathfield.h"
#include "widgets/prunedata.h"  // activationSparsityText
#include "widgets/sortabletable.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QScrollBar>
#include <QStandardItemModel>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace sdw::widgets {

namespace {
QString runFilter() { return QObject::tr("Run files (*.sdw.h5);;All files (*)"); }

// Index of the run modes combo -> the modes asked for.
QStringList runModes(int index) {
  if (index == 1) return {QStringLiteral("own")};
  if (index == 2) return {QStringLiteral("shared")};
  return {QStringLiteral("own"), QStringLiteral("shared")};
}
}  // namespace

DriftPage::DriftPage(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("driftPage"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 4, 0, 0);
  layout->setSpacing(4);
  layout->addWidget(buildNewAnalysis());

  auto* viewBox = new QGroupBox(tr("Activation drift by decode step"), this);
  auto* vl = new QVBoxLayout(viewBox);
  vl->setContentsMargins(8, 6, 8, 6);
  vl->setSpacing(3);
  vl->addWidget(buildRunRow());
  vl->addWidget(buildControls());
  layout->addWidget(viewBox);

  stack_ = new QStackedWidget(this);
  empty_ = new QLabel(stack_);
  empty_->setObjectName(QStringLiteral("driftEmpty"));
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);
  stack_->addWidget(empty_);

  auto* content = new QWidget(stack_);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(4, 0, 4, 0);
  cl->setSpacing(2);
  title_ = new QLabel(content);
  title_->setObjectName(QStringLiteral("driftTitle"));
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  title_->setStyleSheet(QStringLiteral("color: #555;"));
  summary_ = new QLabel(content);
  summary_->setObjectName(QStringLiteral("driftSummary"));
  summary_->setWordWrap(true);
  summary_->setStyleSheet(QStringLiteral("font-size: 11pt; font-weight: 600;"));
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  checks_ = new ChecksLabel(QStringLiteral("driftChecks"), content);
  cl->addWidget(title_);
  cl->addWidget(summary_);
  cl->addWidget(checks_);

  plot_ = new DriftPlot(content);
  plot_->setObjectName(QStringLiteral("driftPlot"));
  plot_->setMinimumSize(320, 220);
  layers_ = new DriftLayerModel(this);
  table_ = makeSortableTable(layers_, DriftLayerModel::ValueRole, QStringLiteral("driftLayers"), content, &proxy_);
  table_->sortByColumn(DriftLayerModel::Layer, Qt::AscendingOrder);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setMinimumSectionSize(32);
  QFont headerFont = table_->horizontalHeader()->font();
  headerFont.setPointSizeF(headerFont.pointSizeF() * 0.9);
  table_->horizontalHeader()->setFont(headerFont);
  auto* tableBox = new QWidget(content);
  auto* tl = new QVBoxLayout(tableBox);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->setSpacing(2);
  auto* tableTitle = new QLabel(tr("Per layer"), tableBox);
  tableTitle->setStyleSheet(QStringLiteral("font-weight: 600;"));
  tableTitle->setToolTip(tr("Selecting a row shows that layer alone"));
  tl->addWidget(tableTitle);
  tl->addWidget(table_, 1);

  split_ = new QSplitter(Qt::Horizontal, content);
  split_->addWidget(plot_);
  split_->addWidget(tableBox);
  split_->setStretchFactor(0, 3);
  split_->setStretchFactor(1, 1);
  cl->addWidget(split_, 1);
  stack_->addWidget(content);
  layout->addWidget(stack_, 1);

  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (!cur.isValid()) return;
    const int layer = proxy_->mapToSource(cur).row();
    if (layer + 1 != layer_->currentIndex()) layer_->setCurrentIndex(layer + 1);
  });
  clear(tr("No drift run open. Pick one above, or run a new drift analysis."));
  updateButtons();
}

QWidget* DriftPage::buildRunRow() {
  auto* w = new QWidget(this);
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  runs_ = new QComboBox(w);
  runs_->setObjectName(QStringLiteral("driftRuns"));
  runs_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  runs_->setMinimumContentsLength(30);
  runs_->setToolTip(tr("Drift runs of the workspace, newest first"));
  auto* browse = new QToolButton(w);
  browse->setObjectName(QStringLiteral("driftBrowseRun"));
  browse->setText(QStringLiteral("…"));
  browse->setToolTip(tr("Open a drift run file"));
  export_ = new QPushButton(tr("Export…"), w);
  export_->setObjectName(QStringLiteral("driftExport"));
  export_->setToolTip(tr("Save the plot as PNG or PDF, or its curves as CSV"));
  h->addWidget(new QLabel(tr("Run:"), w));
  h->addWidget(runs_, 1);
  h->addWidget(browse);
  h->addSpacing(12);
  h->addWidget(export_);
  connect(runs_, &QComboBox::activated, this, [this](int i) {
    const QString path = runs_->itemData(i).toString();
    if (!path.isEmpty() && path != data_.path) Q_EMIT openRequested(path);
  });
  connect(browse, &QToolButton::clicked, this, &DriftPage::chooseRun);
  connect(export_, &QPushButton::clicked, this, &DriftPage::exportDialog);
  return w;
}

QWidget* DriftPage::buildControls() {
  auto* w = new QWidget(this);
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  mode_ = new QComboBox(w);
  mode_->setObjectName(QStringLiteral("driftMode"));
  mode_->setToolTip(tr("Own trajectory: each model decodes its own tokens (errors compound). Shared: the pruned "
                       "model reads the dense model's tokens (per-step error only)."));
  models_ = new QComboBox(w);
  models_->setObjectName(QStringLiteral("driftModels"));
  layerCurves_ = new QCheckBox(tr("Per-layer curves"), w);
  layerCurves_->setObjectName(QStringLiteral("driftLayerCurves"));
  layerCurves_->setChecked(true);
  logSteps_ = new QCheckBox(tr("Log step axis"), w);
  logSteps_->setObjectName(QStringLiteral("driftLogSteps"));
  logSteps_->setToolTip(tr("A log axis cannot show step 0: it plots decode step + 1"));
  layer_ = new QComboBox(w);
  layer_->setObjectName(QStringLiteral("driftLayer"));
  layer_->addItem(tr("all layers"));
  for (QComboBox* c : {mode_, models_, layer_}) c->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  h->addWidget(new QLabel(tr("Mode:"), w));
  h->addWidget(mode_);
  h->addSpacing(8);
  h->addWidget(new QLabel(tr("Models:"), w));
  h->addWidget(models_);
  h->addSpacing(8);
  h->addWidget(layerCurves_);
  h->addWidget(logSteps_);
  h->addSpacing(8);
  h->addWidget(new QLabel(tr("Layer:"), w));
  h->addWidget(layer_);
  h->addStretch(1);
  for (QComboBox* c : {mode_, models_, layer_})
    connect(c, &QComboBox::currentIndexChanged, this, &DriftPage::refresh);
  for (QCheckBox* c : {layerCurves_, logSteps_}) connect(c, &QCheckBox::toggled, this, &DriftPage::refresh);
  return w;
}

QWidget* DriftPage::buildNewAnalysis() {
  auto* box = new QGroupBox(tr("New drift analysis: dense model against one or two pruned checkpoints"), this);
  auto* g = new QGridLayout(box);
  g->setContentsMargins(8, 6, 8, 6);
  g->setVerticalSpacing(3);
  auto pathField = [&](int row, int col, const QString& label, const QString& name, const QString& tip, bool folder,
                       const QString& filter) {
    const auto [edit, browse] = makePathField(box, label, folder, filter, [this] { return workspace_; });
    edit->setObjectName(name);
    edit->setToolTip(tip);
    edit->setMinimumWidth(120);
    browse->setToolTip(folder ? tr("Choose a checkpoint folder") : tr("Choose a file"));
    g->addWidget(new QLabel(label, box), row, col);
    g->addWidget(edit, row, col + 1);
    g->addWidget(browse, row, col + 2);
    return edit;
  };
  dense_ = pathField(0, 0, tr("Dense:"), QStringLiteral("driftDense"),
                     tr("The dense model (Hugging Face checkpoint folder)"), true, {});
  prompts_ = pathField(0, 3, tr("Prompts:"), QStringLiteral("driftPrompts"),
                       tr("Held-out prompts, JSON lines {\"id\", \"prompt\"}"), false,
                       tr("Prompts (*.jsonl);;All files (*)"));
  prunedA_ = pathField(1, 0, tr("Pruned A:"), QStringLiteral("driftPrunedA"),
                       tr("A pruned checkpoint of the dense model (e.g. calibrated on fixed text)"), true, {});
  prunedB_ = pathField(1, 3, tr("Pruned B:"), QStringLiteral("driftPrunedB"),
                       tr("Optional: a second pruned checkpoint (e.g. AR calibrated), overlaid with A"), true, {});

  auto* opts = new QHBoxLayout;
  steps_ = new QSpinBox(box);
  steps_->setObjectName(QStringLiteral("driftSteps"));
  steps_->setRange(1, 4096);
  steps_->setValue(128);
  steps_->setToolTip(tr("Decode steps per prompt (no stop token)"));
  maxPrompts_ = new QSpinBox(box);
  maxPrompts_->setObjectName(QStringLiteral("driftMaxPrompts"));
  maxPrompts_->setRange(0, 1000000);
  maxPrompts_->setSpecialValueText(tr("all"));
  maxPrompts_->setToolTip(tr("Use at most this many prompts (the first ones)"));
  runModes_ = new QComboBox(box);
  runModes_->setObjectName(QStringLiteral("driftRunModes"));
  runModes_->addItems({tr("own + shared"), tr("own"), tr("shared")});
  device_ = new QComboBox(box);
  device_->setObjectName(QStringLiteral("driftDevice"));
  device_->addItems({QStringLiteral("cpu"), QStringLiteral("cuda")});
  analyze_ = new QPushButton(tr("Run drift analysis"), box);
  analyze_->setObjectName(QStringLiteral("driftAnalyze"));
  cancel_ = new QPushButton(tr("Cancel"), box);
  cancel_->setObjectName(QStringLiteral("driftCancel"));
  bar_ = new QProgressBar(box);
  bar_->setObjectName(QStringLiteral("driftProgress"));
  bar_->setMaximumWidth(220);
  bar_->hide();
  opts->addWidget(new QLabel(tr("Steps:"), box));
  opts->addWidget(steps_);
  opts->addSpacing(6);
  opts->addWidget(new QLabel(tr("Max prompts:"), box));
  opts->addWidget(maxPrompts_);
  opts->addSpacing(6);
  opts->addWidget(new QLabel(tr("Modes:"), box));
  opts->addWidget(runModes_);
  opts->addSpacing(6);
  opts->addWidget(new QLabel(tr("Device:"), box));
  opts->addWidget(device_);
  opts->addStretch(1);
  opts->addWidget(bar_);
  opts->addWidget(analyze_);
  opts->addWidget(cancel_);
  g->addLayout(opts, 2, 0, 1, 6);

  // The trajectories' decoding: dense and pruned alike, the protocol by default.
  auto* dec = new QHBoxLayout;
  temperature_ = new QDoubleSpinBox(box);
  temperature_->setObjectName(QStringLiteral("driftTemperature"));
  temperature_->setRange(0.0, 5.0);
  temperature_->setSingleStep(0.1);
  temperature_->setDecimals(2);
  temperature_->setSpecialValueText(tr("0 (greedy)"));
  temperature_->setValue(kDefaultDecoding.temperature);
  temperature_->setToolTip(tr("Decoding of the dense and pruned trajectories. Default: the workbench's protocol, "
                              "%1, as AR calibration and evaluation decode; 0 decodes greedily.")
                               .arg(QString::fromStdString(kDefaultDecoding.describe())));
  topK_ = new QSpinBox(box);
  topK_->setObjectName(QStringLiteral("driftTopK"));
  topK_->setRange(0, 1 << 20);
  topK_->setSpecialValueText(tr("off"));
  topK_->setValue(kDefaultDecoding.topK);
  topP_ = new QDoubleSpinBox(box);
  topP_->setObjectName(QStringLiteral("driftTopP"));
  topP_->setRange(0.01, 1.0);
  topP_->setSingleStep(0.05);
  topP_->setDecimals(2);
  topP_->setValue(kDefaultDecoding.topP);
  seed_ = new QSpinBox(box);
  seed_->setObjectName(QStringLiteral("driftSeed"));
  seed_->setRange(0, 1 << 30);
  seed_->setToolTip(tr("Prompt i is sampled with seed * 1000003 + i, the same for the dense and the pruned model"));
  dec->addWidget(new QLabel(tr("Temperature:"), box));
  dec->addWidget(temperature_);
  dec->addSpacing(6);
  dec->addWidget(new QLabel(tr("Top-k:"), box));
  dec->addWidget(topK_);
  dec->addSpacing(6);
  dec->addWidget(new QLabel(tr("Top-p:"), box));
  dec->addWidget(topP_);
  dec->addSpacing(6);
  dec->addWidget(new QLabel(tr("Seed:"), box));
  dec->addWidget(seed_);
  // Run-time activation sparsity of the pruned models; the dense model stays dense.
  activation_ = new QDoubleSpinBox(box);
  activation_->setObjectName(QStringLiteral("driftActivationSparsity"));
  activation_->setDecimals(2);
  activation_->setRange(0.0, 0.95);
  activation_->setSingleStep(0.05);
  activation_->setValue(0.0);
  activation_->setToolTip(tr("Run-time activation sparsity of the pruned models: each projection input keeps its "
                             "largest (1 - p_x) share per token, or with thresholds from a calibration run the "
                             "entries above them; the dense model stays dense. The compared activation is read "
                             "before it is sparsified."));
  auto* activationLabel = new QLabel(tr("Activation sparsity p_x:"), box);
  activationLabel->setBuddy(activation_);
  activationLabel->setToolTip(activation_->toolTip());
  selection_ = new ActivationSelection(QStringLiteral("drift"), box);
  selection_->setSparsity(activation_->value());
  connect(activation_, &QDoubleSpinBox::valueChanged, selection_, &ActivationSelection::setSparsity);
  dec->addStretch(1);
  g->addLayout(dec, 3, 0, 1, 6);
  // p_x and how it selects on a row of their own: beside the decoding they
  // would widen the page.
  auto* act = new QHBoxLayout;
  act->addWidget(activationLabel);
  act->addWidget(activation_);
  act->addWidget(selection_);
  act->addStretch(1);
  g->addLayout(act, 4, 0, 1, 6);

  status_ = new QLabel(box);
  status_->setObjectName(QStringLiteral("driftStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  g->addWidget(status_, 5, 0, 1, 6);
  for (int c : {1, 4}) g->setColumnStretch(c, 1);

  connect(analyze_, &QPushButton::clicked, this, [this] { Q_EMIT analyzeRequested(request()); });
  connect(cancel_, &QPushButton::clicked, this, &DriftPage::cancelRequested);
  return box;
}

void DriftPage::setData(const DriftData& data) {
  data_ = data;
  {
    const QSignalBlocker b1(mode_), b2(models_), b3(layer_);
    const QString keepMode = mode_->currentData().toString();
    mode_->clear();
    for (const QString& m : data.modes) mode_->addItem(driftModeTitle(m), m);
    const int mi = mode_->findData(keepMode);
    mode_->setCurrentIndex(mi >= 0 ? mi : 0);

    const int keepModels = models_->currentIndex() < 0 ? DriftView::Both : models_->currentIndex();
    models_->clear();
    for (int k = 0; k < 2; ++k)
      models_->addItem(k < data.models.size() ? tr("%1 only").arg(data.models[k].label) : tr("(no second model)"));
    models_->addItem(tr("both overlaid"));
    if (auto* m = qobject_cast<QStandardItemModel*>(models_->model()))
      for (int k = 0; k < 3; ++k)
        if (QStandardItem* item = m->item(k)) item->setEnabled(k < data.models.size() || (k == 2 && data.models.size() > 1));
    models_->setCurrentIndex(data.models.size() > 1 ? keepModels : 0);

    const int keepLayer = layer_->currentIndex();
    layer_->clear();
    layer_->addItem(tr("all layers"));
    for (int l = 0; l < data.layers; ++l) layer_->addItem(tr("layer %1").arg(l));
    layer_->setCurrentIndex(keepLayer > 0 && keepLayer <= data.layers ? keepLayer : 0);

    const int ri = runs_->findData(data.path);
    if (ri >= 0) {
      runs_->setCurrentIndex(ri);
    } else if (!data.path.isEmpty()) {
      runs_->addItem(QFileInfo(data.path).fileName(), data.path);
      runs_->setCurrentIndex(runs_->count() - 1);
    }
  }
  QStringList models;
  for (const DriftModelData& m : data.models) models << m.label;
  // The pruned models' run-time activation sparsity, where the run used one.
  const QString sparsity =
      data.activationSparsity > 0
          ? tr("; pruned models at activation sparsity %1")
                .arg(activationSparsityText(data.activationSparsity, data.activationThresholds))
          : QString();
  title_->setText(tr("%1 — dense %2 vs %3; %4 prompts (%5), %6 decode steps, %7%8; %9 layers; activation: q/k/v "
                     "input")
                      .arg(QFileInfo(data.path).fileName(), QFileInfo(data.denseDir).fileName(),
                           models.join(QStringLiteral(", ")))
                      .arg(data.prompts)
                      .arg(QFileInfo(data.promptsFile).fileName())
                      .arg(data.steps)
                      .arg(data.decoding.isEmpty() ? tr("greedy") : data.decoding, sparsity)
                      .arg(data.layers));
  checks_->setChecks(data.warnings, data.notes);
  QString tip = tr("dense: %1\npruned: %2\nprompts: %3\nactivation: %4\n%5 s")
                    .arg(data.denseDir, models.join(QStringLiteral(", ")), data.promptsFile, data.activation)
                    .arg(data.seconds, 0, 'f', 1);
  if (!data.activationThresholds.isEmpty())
    tip += tr("\nactivation thresholds of the pruned models: %1 (run %2)")
               .arg(data.activationThresholds, data.activationThresholdsRunId);
  title_->setToolTip(tip);
  stack_->setCurrentIndex(1);
  refresh();
  updateButtons();
}

void DriftPage::clear(const QString& message) {
  data_ = {};
  checks_->setChecks({}, {});
  plot_->clear();
  layers_->setData(data_, 0);
  empty_->setText(message);
  stack_->setCurrentWidget(empty_);
  updateButtons();
}

void DriftPage::setRuns(const QVector<DriftRunChoice>& runs) {
  const QSignalBlocker block(runs_);
  runs_->clear();
  for (const DriftRunChoice& r : runs) {
    QString text = QFileInfo(r.path).fileName();
    if (!r.description.isEmpty()) text += QStringLiteral(" — ") + r.description;
    runs_->addItem(text, r.path);
    runs_->setItemData(runs_->count() - 1, r.path, Qt::ToolTipRole);
  }
  if (!data_.path.isEmpty()) {
    const int i = runs_->findData(data_.path);
    if (i < 0) runs_->addItem(QFileInfo(data_.path).fileName(), data_.path);
    runs_->setCurrentIndex(i >= 0 ? i : runs_->count() - 1);
  } else {
    runs_->setCurrentIndex(-1);
  }
}

void DriftPage::setView(const DriftView& v) {
  {
    const QSignalBlocker b1(mode_), b2(models_), b3(layer_), b4(layerCurves_), b5(logSteps_);
    if (v.mode >= 0 && v.mode < mode_->count()) mode_->setCurrentIndex(v.mode);
    if (v.models >= 0 && v.models < models_->count()) models_->setCurrentIndex(v.models);
    layerCurves_->setChecked(v.layerCurves);
    logSteps_->setChecked(v.logSteps);
    if (v.layer + 1 >= 0 && v.layer + 1 < layer_->count()) layer_->setCurrentIndex(v.layer + 1);
  }
  refresh();
}

DriftView DriftPage::view() const {
  DriftView v;
  v.mode = std::max(mode_->currentIndex(), 0);
  v.models = models_->currentIndex() < 0 ? DriftView::Both : models_->currentIndex();
  v.layerCurves = layerCurves_->isChecked();
  v.logSteps = logSteps_->isChecked();
  v.layer = layer_->currentIndex() - 1;
  return v;
}

void DriftPage::refresh() {
  if (data_.isEmpty()) return;
  const DriftView v = view();
  plot_->setData(data_, v);
  layers_->setData(data_, v.mode);
  summary_->setText(data_.summaryLine(v.mode, plot_->shownModels()));
  table_->resizeColumnsToContents();
  sizeSplit();
  // The table follows the layer filter.
  const QSignalBlocker block(table_->selectionModel());
  if (v.layer >= 0) {
    const QModelIndex idx = proxy_->mapFromSource(layers_->index(v.layer, 0));
    table_->setCurrentIndex(idx);
  } else {
    table_->clearSelection();
    table_->setCurrentIndex({});
  }
}

void DriftPage::sizeSplit() {
  // Once, when a run is first on screen: the table gets the width of its
  // columns, up to 45% (it scrolls beyond); later the user's split stays.
  if (splitSized_ || data_.isEmpty() || !split_->isVisible()) return;
  splitSized_ = true;
  const int total = split_->width() - split_->handleWidth();
  const int need = table_->horizontalHeader()->length() + 2 * table_->frameWidth() +
                   table_->verticalScrollBar()->sizeHint().width();
  const int tableWidth = std::min(need, total * 45 / 100);
  split_->setSizes({total - tableWidth, tableWidth});
}

void DriftPage::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  // The layout has run when the event loop comes back.
  QTimer::singleShot(0, this, &DriftPage::sizeSplit);
}

void DriftPage::setDenseModel(const QString& dir) { dense_->setText(dir); }

void DriftPage::setPrunedDirs(const QStringList& dirs) {
  prunedA_->setText(dirs.value(0));
  prunedB_->setText(dirs.value(1));
}

void DriftPage::setPromptsFile(const QString& path) { prompts_->setText(path); }

void DriftPage::setRequest(const DriftRequest& r) {
  dense_->setText(r.dense);
  setPrunedDirs(r.pruned);
  prompts_->setText(r.prompts);
  steps_->setValue(r.steps);
  maxPrompts_->setValue(r.maxPrompts);
  const bool own = r.modes.contains(QStringLiteral("own"));
  const bool shared = r.modes.contains(QStringLiteral("shared"));
  runModes_->setCurrentIndex(own && shared ? 0 : (own ? 1 : 2));
  temperature_->setValue(r.temperature);
  topK_->setValue(r.topK);
  topP_->setValue(r.topP);
  seed_->setValue(static_cast<int>(std::min<quint64>(r.seed, static_cast<quint64>(seed_->maximum()))));
  activation_->setValue(r.activationSparsity);
  selection_->setThresholdsRun(r.activationThresholds);
  const int d = device_->findText(r.device);
  if (d >= 0) device_->setCurrentIndex(d);
}

DriftRequest DriftPage::request() const {
  DriftRequest r;
  r.dense = dense_->text().trimmed();
  for (const QLineEdit* e : {prunedA_, prunedB_})
    if (!e->text().trimmed().isEmpty()) r.pruned << e->text().trimmed();
  r.prompts = prompts_->text().trimmed();
  r.steps = steps_->value();
  r.maxPrompts = maxPrompts_->value();
  r.modes = runModes(runModes_->currentIndex());
  r.temperature = temperature_->value();
  r.topK = topK_->value();
  r.topP = topP_->value();
  r.seed = static_cast<quint64>(seed_->value());
  r.device = device_->currentText();
  r.activationSparsity = activation_->value();
  r.activationThresholds = selection_->thresholdsRun();
  return r;
}

void DriftPage::setCudaAvailable(bool available, const QString& reason) {
  auto* m = qobject_cast<QStandardItemModel*>(device_->model());
  if (QStandardItem* item = m ? m->item(1) : nullptr) {
    item->setEnabled(available);
    item->setToolTip(available ? QString() : reason);
  }
  if (!available) device_->setCurrentIndex(0);
}

void DriftPage::setCalibrationRuns(const QVector<RunChoice>& runs) { selection_->setRuns(runs); }

void DriftPage::beginJob(const QString& what) {
  busy_ = true;
  showJobProgress(bar_, -1);
  bar_->setFormat(QString());
  bar_->show();
  setStatus(what, false);
  updateButtons();
}

void DriftPage::setProgress(double fraction, const QString& text) {
  showJobProgress(bar_, fraction, text);
}

void DriftPage::endJob(const QString& message, bool isError) {
  busy_ = false;
  bar_->hide();
  setStatus(message, isError);
  updateButtons();
}

QString DriftPage::statusText() const { return status_->text(); }
QString DriftPage::summaryText() const { return summary_->text(); }
QStringList DriftPage::shownWarnings() const { return checks_->isVisibleTo(this) ? checks_->warnings() : QStringList(); }
QString DriftPage::titleText() const { return title_->text(); }

void DriftPage::chooseRun() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open a drift run"), workspace_, runFilter());
  if (!path.isEmpty()) Q_EMIT openRequested(path);
}

void DriftPage::exportDialog() {
  const QString stem = data_.path.isEmpty() ? QStringLiteral("drift") : QFileInfo(data_.path).completeBaseName();
  const QString start = QDir(workspace_.isEmpty() ? QDir::homePath() : workspace_)
                            .filePath(stem.section(QLatin1Char('.'), 0, 0) + QStringLiteral(".png"));
  const QString path = QFileDialog::getSaveFileName(this, tr("Export the drift plot"), start,
                                                    tr("PNG image (*.png);;PDF document (*.pdf);;CSV data (*.csv)"));
  if (path.isEmpty()) return;
  if (const QString err = exportTo(path); !err.isEmpty()) {
    setStatus(err, true);
    QMessageBox::warning(this, tr("Export failed"), err);
  } else {
    setStatus(tr("Exported %1").arg(path), false);
  }
}

void DriftPage::setStatus(const QString& text, bool isError) {
  status_->setText(text);
  status_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
}

void DriftPage::updateButtons() {
  analyze_->setEnabled(!busy_);
  cancel_->setEnabled(busy_);
  export_->setEnabled(!data_.isEmpty());
}

}  // namespace sdw::widgets
