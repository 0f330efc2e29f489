#include "widgets/pruningpanel.h"

#include "widgets/pathfield.h"
#include "widgets/prunelayerchart.h"
#include "widgets/prunemodulemodel.h"
#include "widgets/qualitymodel.h"
#include "widgets/qualitypage.h"
#include "widgets/sortabletable.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace sdw::widgets {

namespace {

constexpr int PathRole = Qt::UserRole;

void setComboData(QComboBox* box, const QString& value) {
  const int i = box->findData(value);
  if (i >= 0) box->setCurrentIndex(i);
}

QString duration(double s) {
  if (s < 0) return QStringLiteral("–");
  if (s < 60) return QStringLiteral("%1 s").arg(s, 0, 'f', 1);
  const int t = static_cast<int>(s + 0.5);
  return QStringLiteral("%1:%2 min").arg(t / 60).arg(t % 60, 2, 10, QLatin1Char('0'));
}

}  // namespace

PruningPanel::PruningPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("pruningPanel"));
  auto* outer = new QHBoxLayout(this);
  outer->setContentsMargins(6, 6, 6, 6);
  auto* left = new QWidget(this);
  left->setMaximumWidth(360);  // the tables need the width more than the form
  auto* ll = new QVBoxLayout(left);
  ll->setContentsMargins(0, 0, 0, 0);
  ll->addWidget(buildForm());
  ll->addWidget(buildProgress(), 1);

  tabs_ = new QTabWidget(this);
  tabs_->setObjectName(QStringLiteral("pruningTabs"));
  tabs_->addTab(buildModules(), tr("Modules"));
  quality_ = new QualityPage(tabs_);
  quality_->setObjectName(QStringLiteral("qualityPage"));
  tabs_->addTab(quality_, tr("Quality"));

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({370, 630});
  outer->addWidget(split);

  connect(quality_, &QualityPage::openRequested, this, &PruningPanel::openEvaluationRequested);
  connect(quality_, &QualityPage::evaluateRequested, this, &PruningPanel::askEvaluate);
  connect(quality_, &QualityPage::exportRequested, this,
          [this] { exportCsv(tr("quality"), quality_->model()->toCsv()); });
  updateOutputPreview();
  updateButtons();
}

QWidget* PruningPanel::buildForm() {
  auto* box = new QGroupBox(tr("Prune"), this);
  auto* g = new QGridLayout(box);
  g->setVerticalSpacing(3);

  const PathField model = makePathField(box, tr("Dense model"), true, {}, [this] { return workspace_; });
  model_ = model.edit;
  model_->setObjectName(QStringLiteral("pruneModel"));
  model_->setToolTip(tr("The dense model to prune (a Hugging Face folder); the calibration runs must be of it"));
  auto* modelRow = new QHBoxLayout;
  modelRow->addWidget(model_, 1);
  modelRow->addWidget(model.browse);
  g->addWidget(new QLabel(tr("Model:"), box), 0, 0);
  g->addLayout(modelRow, 0, 1, 1, 3);

  runs_ = new QListWidget(box);
  runs_->setObjectName(QStringLiteral("calibrationRuns"));
  runs_->setToolTip(tr("Calibration runs; each checked run is pruned in turn into its own folder"));
  runs_->setMaximumHeight(66);
  runs_->setTextElideMode(Qt::ElideMiddle);
  runs_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* addRun = new QToolButton(box);
  addRun->setText(QStringLiteral("…"));
  addRun->setToolTip(tr("Add a calibration run file"));
  connect(addRun, &QToolButton::clicked, this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, tr("Calibration run"), workspace_,
                                                   tr("Run files (*.sdw.h5);;All files (*)"));
    if (p.isEmpty()) return;
    for (int i = 0; i < runs_->count(); ++i)
      if (runs_->item(i)->data(PathRole).toString() == p) {
        runs_->item(i)->setCheckState(Qt::Checked);
        return;
      }
    RunChoice c;
    c.path = p;
    addCalibrationRun(c, true);
  });
  auto* runsRow = new QHBoxLayout;
  runsRow->addWidget(runs_, 1);
  runsRow->addWidget(addRun, 0, Qt::AlignTop);
  auto* runsLabel = new QLabel(tr("Calibration:"), box);
  g->addWidget(runsLabel, 1, 0, Qt::AlignTop);
  g->addLayout(runsRow, 1, 1, 1, 3);
  connect(runs_, &QListWidget::itemChanged, this, [this] {
    updateOutputPreview();
    updateButtons();
  });

  method_ = new QComboBox(box);
  method_->setObjectName(QStringLiteral("pruneMethod"));
  method_->addItem(QStringLiteral("SparseGPT"), QStringLiteral("sparsegpt"));
  method_->addItem(QStringLiteral("Wanda"), QStringLiteral("wanda"));
  method_->addItem(tr("Magnitude"), QStringLiteral("magnitude"));
  method_->addItem(QStringLiteral("DuoGPT"), QStringLiteral("duogpt"));
  method_->setItemData(method_->count() - 1,
                       tr("SparseGPT's solver, calibrated for the activation sparsity p_x the model decodes with"),
                       Qt::ToolTipRole);
  pattern_ = new QComboBox(box);
  pattern_->setObjectName(QStringLiteral("prunePattern"));
  for (const char* p : {"2:4", "4:8", "8:16", "16:32"}) pattern_->addItem(QLatin1String(p), QLatin1String(p));
  pattern_->addItem(tr("50% unstructured"), QStringLiteral("unstructured50"));
  for (const char* p : {"col2:4", "col4:8"}) {
    const QString name = QLatin1String(p);
    pattern_->addItem(name, name);
    pattern_->setItemData(pattern_->count() - 1,
                          tr("%1 of every %2 consecutive rows of each input column: packed into model.sdwcolumn, the "
                             "column layout of the sparse x sparse kernel (decode it with the sparse engine)")
                              .arg(name.mid(3, 1), name.mid(5)),
                          Qt::ToolTipRole);
  }
  order_ = new QComboBox(box);
  order_->setObjectName(QStringLiteral("pruneOrder"));
  order_->addItem(tr("parallel"), QStringLiteral("parallel"));
  order_->addItem(tr("sequential"), QStringLiteral("sequential"));
  order_->setToolTip(tr("parallel: every statistic from the dense model; sequential: layer i re-captured through "
                        "the pruned layers before it"));
  orderTip_ = order_->toolTip();
  device_ = new QComboBox(box);
  device_->setObjectName(QStringLiteral("pruneDevice"));
  device_->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  device_->addItem(QStringLiteral("cuda"), QStringLiteral("cuda"));
  percdamp_ = new QDoubleSpinBox(box);
  percdamp_->setObjectName(QStringLiteral("prunePercdamp"));
  percdamp_->setDecimals(4);
  percdamp_->setRange(0.0001, 10.0);
  percdamp_->setSingleStep(0.005);
  percdamp_->setValue(0.01);
  percdamp_->setToolTip(tr("SparseGPT damping, a fraction of mean(diag H); raised x10 per step when a Cholesky "
                           "factorisation fails"));
  blocksize_ = new QSpinBox(box);
  blocksize_->setObjectName(QStringLiteral("pruneBlocksize"));
  blocksize_->setRange(1, 1 << 16);
  blocksize_->setValue(128);
  blocksize_->setToolTip(tr("SparseGPT columns per lazy-update block (a multiple of M)"));
  activationSparsity_ = new QDoubleSpinBox(box);
  activationSparsity_->setObjectName(QStringLiteral("pruneActivationSparsity"));
  activationSparsity_->setDecimals(2);
  activationSparsity_->setRange(0.0, 0.95);
  activationSparsity_->setSingleStep(0.05);
  activationSparsity_->setValue(0.5);
  activationSparsity_->setToolTip(
      tr("DuoGPT: the run-time activation sparsity p_x the pruned model decodes with: at "
         "decode time each projection input keeps its largest (1 - p_x) share. DuoGPT "
         "calibrates the weights for it; the other methods see dense inputs."));
  auto* activationLabel = new QLabel(tr("Activation sparsity p_x:"), box);
  activationLabel->setToolTip(activationSparsity_->toolTip());
  g->addWidget(new QLabel(tr("Method:"), box), 2, 0);
  g->addWidget(method_, 2, 1);
  g->addWidget(new QLabel(tr("Pattern:"), box), 2, 2);
  g->addWidget(pattern_, 2, 3);
  g->addWidget(new QLabel(tr("Order:"), box), 3, 0);
  g->addWidget(order_, 3, 1);
  g->addWidget(new QLabel(tr("Device:"), box), 3, 2);
  g->addWidget(device_, 3, 3);
  g->addWidget(new QLabel(tr("Damping:"), box), 4, 0);
  g->addWidget(percdamp_, 4, 1);
  g->addWidget(new QLabel(tr("Block size:"), box), 4, 2);
  g->addWidget(blocksize_, 4, 3);
  g->addWidget(activationLabel, 5, 0, 1, 3);
  g->addWidget(activationSparsity_, 5, 3);
  exportCt_ = new QCheckBox(tr("Also export as compressed-tensors"), box);
  exportCt_->setObjectName(QStringLiteral("pruneExportCompressedTensors"));
  exportCt_->setToolTip(tr("Writes <pruned>/compressed-tensors, llm-compressor's format, next to the dense "
                           "checkpoint: sparse-24-bitmask for 2:4, sparse-bitmask otherwise (docs/sparse-format.md)"));
  connect(method_, &QComboBox::currentIndexChanged, this, [this] {
    updateMethodFields();
    updateOutputPreview();
  });
  connect(pattern_, &QComboBox::currentIndexChanged, this, &PruningPanel::updateOutputPreview);
  connect(activationSparsity_, &QDoubleSpinBox::valueChanged, this, &PruningPanel::updateOutputPreview);
  updateMethodFields();

  const PathField output = makePathField(box, tr("Output folder"), true, {}, [this] { return workspace_; });
  output_ = output.edit;
  output_->setObjectName(QStringLiteral("pruneOutput"));
  output_->setToolTip(tr("Folder the pruned models go to, one sub-folder per calibration run"));
  connect(output_, &QLineEdit::textChanged, this, [this] {
    if (!settingOutput_) outputEdited_ = true;
    updateOutputPreview();
  });
  auto* outRow = new QHBoxLayout;
  outRow->addWidget(output_, 1);
  outRow->addWidget(output.browse);
  g->addWidget(new QLabel(tr("Output:"), box), 6, 0);
  g->addLayout(outRow, 6, 1, 1, 3);
  outputPreview_ = new QLabel(box);
  outputPreview_->setObjectName(QStringLiteral("pruneOutputPreview"));
  outputPreview_->setStyleSheet(QStringLiteral("color: #555;"));
  outputPreview_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  g->addWidget(outputPreview_, 7, 1, 1, 3);
  g->addWidget(exportCt_, 8, 1, 1, 3);

  prune_ = new QPushButton(tr("Prune"), box);
  prune_->setObjectName(QStringLiteral("prune"));
  cancel_ = new QPushButton(tr("Cancel"), box);
  cancel_->setObjectName(QStringLiteral("cancelPrune"));
  cancel_->setToolTip(tr("Stop after the current module; nothing half-written is left"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(prune_);
  buttons->addWidget(cancel_);
  buttons->addStretch(1);
  g->addLayout(buttons, 9, 0, 1, 4);
  g->setColumnStretch(1, 1);
  g->setColumnStretch(3, 1);
  connect(prune_, &QPushButton::clicked, this, [this] { Q_EMIT pruneRequested(form()); });
  connect(cancel_, &QPushButton::clicked, this, &PruningPanel::cancelRequested);
  return box;
}

QWidget* PruningPanel::buildProgress() {
  auto* box = new QGroupBox(tr("Progress"), this);
  auto* v = new QVBoxLayout(box);
  v->setSpacing(3);
  bar_ = new QProgressBar(box);
  bar_->setObjectName(QStringLiteral("pruneProgress"));
  bar_->setRange(0, 1000);
  bar_->setValue(0);
  bar_->setFormat(QString());
  status_ = new QLabel(tr("Idle."), box);
  status_->setObjectName(QStringLiteral("pruneStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  time_ = new QLabel(box);
  time_->setObjectName(QStringLiteral("pruneTime"));
  time_->setStyleSheet(QStringLiteral("color: #555;"));
  chart_ = new PruneLayerChart(box);
  chart_->setObjectName(QStringLiteral("pruneLayers"));
  chart_->setMinimumHeight(150);
  v->addWidget(bar_);
  v->addWidget(status_);
  v->addWidget(time_);
  v->addWidget(chart_, 1);
  return box;
}

QWidget* PruningPanel::buildModules() {
  auto* page = new QWidget(this);
  auto* v = new QVBoxLayout(page);
  v->setContentsMargins(4, 4, 4, 4);
  v->setSpacing(4);
  auto* top = new QHBoxLayout;
  records_ = new QComboBox(page);
  records_->setObjectName(QStringLiteral("pruningRecords"));
  records_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  records_->setMinimumContentsLength(20);
  records_->setToolTip(tr("Pruning records of the workspace"));
  auto* open = new QPushButton(tr("Open…"), page);
  open->setObjectName(QStringLiteral("openRecord"));
  exportModules_ = new QPushButton(tr("Export CSV…"), page);
  exportModules_->setObjectName(QStringLiteral("exportModules"));
  top->addWidget(new QLabel(tr("Record:"), page));
  top->addWidget(records_, 1);
  top->addWidget(open);
  top->addWidget(exportModules_);
  v->addLayout(top);

  summary_ = new QLabel(tr("No pruning record open."), page);
  summary_->setObjectName(QStringLiteral("pruneSummary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setStyleSheet(QStringLiteral("font-weight: 600;"));
  modulesError_ = new QLabel(page);
  modulesError_->setObjectName(QStringLiteral("pruneModulesError"));
  modulesError_->setWordWrap(true);
  modulesError_->setStyleSheet(QStringLiteral("color: #b00020;"));
  modulesError_->hide();
  v->addWidget(summary_);
  v->addWidget(modulesError_);

  modules_ = new PruneModuleModel(this);
  table_ = makeSortableTable(modules_, PruneModuleModel::ValueRole, QStringLiteral("pruneModules"), page, &proxy_);
  // Columns as wide as their contents: a stretched last column put its
  // numbers far from the rest on a wide screen.
  table_->horizontalHeader()->setStretchLastSection(false);
  // Most columns are as wide as their header: a smaller header font keeps
  // more of them in sight on a narrow window.
  QFont headerFont = table_->horizontalHeader()->font();
  headerFont.setPointSizeF(headerFont.pointSizeF() * 0.9);
  table_->horizontalHeader()->setFont(headerFont);
  table_->setContextMenuPolicy(Qt::ActionsContextMenu);
  auto* exportAction = new QAction(tr("Export CSV…"), table_);
  table_->addAction(exportAction);
  v->addWidget(table_, 1);

  const auto doExport = [this] { exportCsv(tr("modules"), modules_->toCsv()); };
  connect(exportAction, &QAction::triggered, this, doExport);
  connect(exportModules_, &QPushButton::clicked, this, doExport);
  connect(records_, &QComboBox::activated, this, [this](int i) {
    const QString p = records_->itemData(i).toString();
    if (!p.isEmpty() && p != record_.path) Q_EMIT openRecordRequested(p);
  });
  connect(open, &QPushButton::clicked, this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, tr("Open a pruning record"), workspace_,
                                                   tr("Run files (*.sdw.h5);;All files (*)"));
    if (!p.isEmpty()) Q_EMIT openRecordRequested(p);
  });
  exportModules_->setEnabled(false);
  return page;
}

// ---------------------------------------------------------------- form

PruneForm PruningPanel::form() const {
  PruneForm f;
  f.model = model_->text().trimmed();
  for (int i = 0; i < runs_->count(); ++i)
    if (runs_->item(i)->checkState() == Qt::Checked) f.calibrationRuns << runs_->item(i)->data(PathRole).toString();
  f.method = method_->currentData().toString();
  f.pattern = pattern_->currentData().toString();
  f.order = order_->currentData().toString();
  f.percdamp = percdamp_->value();
  f.blocksize = blocksize_->value();
  f.activationSparsity = activationSparsity_->value();
  f.device = device_->currentData().toString();
  f.outputDir = output_->text().trimmed();
  f.exportCompressedTensors = exportCt_->isChecked();
  return f;
}

void PruningPanel::setForm(const PruneForm& f) {
  model_->setText(f.model);
  setCheckedRuns(f.calibrationRuns);
  setComboData(method_, f.method);
  setComboData(pattern_, f.pattern);
  if (!orderForced_) setComboData(order_, f.order);  // DuoGPT's order is fixed
  percdamp_->setValue(f.percdamp);
  blocksize_->setValue(f.blocksize);
  activationSparsity_->setValue(f.activationSparsity);
  exportCt_->setChecked(f.exportCompressedTensors);
  setComboData(device_, f.device);
  if (!f.outputDir.isEmpty()) output_->setText(f.outputDir);
  updateOutputPreview();
  updateButtons();
}

void PruningPanel::setSampleModel(const QString& dir) {
  sampleModel_ = dir;
  if (model_->text().isEmpty()) model_->setText(dir);
}

void PruningPanel::setModelDir(const QString& dir) {
  if (!busy_ && !dir.isEmpty()) model_->setText(dir);
}

void PruningPanel::setWorkspace(const QString& dir) {
  workspace_ = dir;
  quality_->setWorkspace(dir);
  if (!outputEdited_ && !dir.isEmpty()) {
    settingOutput_ = true;
    output_->setText(QDir(dir).filePath(QStringLiteral("pruned")));
    settingOutput_ = false;
  }
}

void PruningPanel::addCalibrationRun(const RunChoice& c, bool checked) {
  const QLocale en(QLocale::English);
  QString text = runStem(c.path);
  QStringList detail;
  if (!c.source.isEmpty()) detail << c.source;
  if (c.tokens > 0) detail << tr("%1 tokens").arg(en.toString(c.tokens));
  if (!c.status.isEmpty() && c.status != QLatin1String("complete")) detail << c.status;
  if (!detail.isEmpty()) text += QStringLiteral("  (%1)").arg(detail.join(QStringLiteral(", ")));
  auto* item = new QListWidgetItem(text, runs_);
  item->setData(PathRole, c.path);
  item->setToolTip(c.path);
  item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
  item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
}

void PruningPanel::setCalibrationRuns(const QVector<RunChoice>& runs, const QString& defaultChecked) {
  calibrationChoices_ = runs;
  if (evaluateDialog_) evaluateDialog_->setCalibrationRuns(runs);
  QStringList checked = form().calibrationRuns;
  if (checked.isEmpty() && !defaultChecked.isEmpty()) checked << defaultChecked;
  const QSignalBlocker block(runs_);
  runs_->clear();
  for (const RunChoice& c : runs) addCalibrationRun(c, checked.contains(c.path));
  updateOutputPreview();
  updateButtons();
}

void PruningPanel::setCheckedRuns(const QStringList& paths) {
  {
    const QSignalBlocker block(runs_);
    for (int i = 0; i < runs_->count(); ++i)
      runs_->item(i)->setCheckState(paths.contains(runs_->item(i)->data(PathRole).toString()) ? Qt::Checked
                                                                                                : Qt::Unchecked);
    for (const QString& p : paths) {
      bool found = false;
      for (int i = 0; i < runs_->count() && !found; ++i) found = runs_->item(i)->data(PathRole).toString() == p;
      if (!found) {
        RunChoice c;
        c.path = p;
        addCalibrationRun(c, true);
      }
    }
  }
  updateOutputPreview();
  updateButtons();
}

QStringList PruningPanel::outputFolders() const {
  const PruneForm f = form();
  QStringList out;
  for (const QString& r : f.calibrationRuns)
    out << QDir(f.outputDir).filePath(defaultPruneFolderName(f.method, f.pattern, r, f.activationSparsity));
  return out;
}

void PruningPanel::updateMethodFields() {
  const QString method = method_->currentData().toString();
  const bool duo = method == QLatin1String("duogpt");
  const bool gpt = duo || method == QLatin1String("sparsegpt");  // SparseGPT's solver
  percdamp_->setEnabled(gpt);
  blocksize_->setEnabled(gpt);
  activationSparsity_->setEnabled(duo);
  if (duo && !orderForced_) {
    orderForced_ = true;
    userOrder_ = order_->currentData().toString();
    setComboData(order_, QStringLiteral("sequential"));
    order_->setEnabled(false);
    order_->setToolTip(
        tr("DuoGPT prunes in sequential order: layer i's inputs come through the pruned layers "
           "before it, sparsified to p_x; its targets from the dense model"));
  } else if (!duo && orderForced_) {
    orderForced_ = false;
    setComboData(order_, userOrder_);
    order_->setEnabled(true);
    order_->setToolTip(orderTip_);
  }
}

void PruningPanel::updateOutputPreview() {
  const QStringList folders = outputFolders();
  if (folders.isEmpty()) {
    outputPreview_->setText(tr("→ check a calibration run"));
    return;
  }
  QStringList names;
  for (const QString& f : folders) names << QFileInfo(f).fileName();
  outputPreview_->setText(QStringLiteral("→ %1").arg(names.join(QStringLiteral(", "))));
  outputPreview_->setToolTip(folders.join(QLatin1Char('\n')));
}

void PruningPanel::setCudaAvailable(bool available, const QString& reason) {
  cudaAvailable_ = available;
  auto* m = qobject_cast<QStandardItemModel*>(device_->model());
  if (QStandardItem* item = m ? m->item(1) : nullptr) {
    item->setEnabled(available);
    item->setToolTip(available ? QString() : reason);
  }
  if (!available) device_->setCurrentIndex(0);
}

void PruningPanel::updateButtons() {
  prune_->setEnabled(!busy_ && !form().calibrationRuns.isEmpty());
  cancel_->setEnabled(busy_);
  quality_->setBusy(busy_);
}

// ---------------------------------------------------------------- records

void PruningPanel::setPruningRecords(const QVector<PruningRecordChoice>& records) {
  recordChoices_ = records;
  records_->clear();
  for (const PruningRecordChoice& r : records) {
    records_->addItem(QStringLiteral("%1 — %2").arg(QFileInfo(r.path).fileName(), r.label), r.path);
    records_->setItemData(records_->count() - 1, r.outDir, Qt::ToolTipRole);
  }
  if (!record_.path.isEmpty()) {
    if (records_->findData(record_.path) < 0) records_->addItem(QFileInfo(record_.path).fileName(), record_.path);
    records_->setCurrentIndex(records_->findData(record_.path));
  }
}

void PruningPanel::showRecord(const PruningRecordData& record) {
  record_ = record;
  modules_->setRows(record.modules);
  chart_->showModules(record.modules);
  QString text = record.summaryLine();
  if (!record.checkpointExists && !record.outDir.isEmpty())
    text += tr(" · checkpoint not on this machine");
  summary_->setText(text);
  summary_->setToolTip(tr("record %1\ncheckpoint %2").arg(record.path, record.outDir));
  modulesError_->hide();
  exportModules_->setEnabled(!record.modules.isEmpty());
  if (!busy_)
    setStatus(tr("Showing %1: %2 modules in %3 layers.")
                  .arg(QFileInfo(record.path).fileName())
                  .arg(record.modules.size())
                  .arg(chart_->layerCount()),
              false);
  if (records_->findData(record.path) < 0) records_->addItem(QFileInfo(record.path).fileName(), record.path);
  records_->setCurrentIndex(records_->findData(record.path));
}

void PruningPanel::showModulesError(const QString& message) {
  modulesError_->setText(message);
  modulesError_->show();
}

// ---------------------------------------------------------------- jobs

void PruningPanel::beginJob(const QString& what) {
  busy_ = true;
  bar_->setRange(0, 1000);
  bar_->setValue(0);
  bar_->setFormat(QStringLiteral("%p%"));
  time_->setText(tr("elapsed 0.0 s"));
  setStatus(what, false);
  updateButtons();
}

void PruningPanel::beginPruneRun(const QString& what, const QVector<int>& modulesPerLayer) {
  record_ = {};
  modules_->clear();
  chart_->reset(modulesPerLayer);
  summary_->setText(what);
  modulesError_->hide();
  exportModules_->setEnabled(false);
  tabs_->setCurrentIndex(0);
}

void PruningPanel::addModuleRow(const PruneModuleData& row) {
  modules_->appendRow(row);
  chart_->addModule(row.layer, row.relOutputError);
  exportModules_->setEnabled(true);
}

void PruningPanel::setLayerState(int layer, const QString& stage) { chart_->setCurrent(layer, stage); }

void PruningPanel::setJobProgress(double fraction, const QString& text, double elapsed, double eta) {
  if (fraction >= 0) {
    bar_->setRange(0, 1000);
    bar_->setValue(static_cast<int>(1000.0 * std::clamp(fraction, 0.0, 1.0)));
  } else {
    bar_->setRange(0, 0);  // busy indicator
  }
  if (!text.isEmpty()) status_->setText(text);
  time_->setText(eta >= 0 ? tr("elapsed %1 · ETA %2").arg(duration(elapsed), duration(eta))
                          : tr("elapsed %1").arg(duration(elapsed)));
}

void PruningPanel::endJob(const QString& message, Outcome outcome) {
  busy_ = false;
  bar_->setRange(0, 1000);
  if (outcome == Outcome::Complete) bar_->setValue(1000);
  chart_->setCurrent(-1, QString());
  if (outcome != Outcome::Complete && record_.path.isEmpty() && modules_->rowCount() > 0)
    summary_->setText(tr("%n module(s) solved before the job stopped; none of them was saved.", nullptr,
                         modules_->rowCount()));
  setStatus(message, outcome == Outcome::Failed);
  if (outcome == Outcome::Cancelled) status_->setStyleSheet(QStringLiteral("color: #8a5a00; font-weight: 600;"));
  updateButtons();
}

void PruningPanel::setStatus(const QString& text, bool isError) {
  status_->setText(text);
  status_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
}

// ---------------------------------------------------------------- quality

void PruningPanel::setEvaluationRuns(const QStringList& paths) { quality_->setRuns(paths); }
void PruningPanel::showQuality(const QualityData& data) { quality_->setData(data); }
void PruningPanel::showQualityError(const QString& message) { quality_->setStatus(message, true); }

void PruningPanel::setEvaluationDefaults(const QString& text, const QString& prompts) {
  evalText_ = text;
  evalPrompts_ = prompts;
}

QStringList PruningPanel::prunedCandidates() const {
  QStringList out;
  const auto add = [&out](const QString& dir) {
    if (!dir.isEmpty() && !out.contains(dir) && QFileInfo::exists(QDir(dir).filePath(QStringLiteral("config.json"))))
      out << dir;
  };
  if (record_.checkpointExists) add(record_.outDir);
  for (const PruningRecordChoice& r : recordChoices_)
    if (r.checkpointExists) add(r.outDir);
  return out;
}

EvaluateForm PruningPanel::evaluateDefaults() const {
  EvaluateForm f;
  f.dense = model_->text().trimmed();
  f.models = prunedCandidates();
  f.text = evalText_;
  f.prompts = evalPrompts_;
  f.device = device_->currentData().toString();
  return f;
}

void PruningPanel::askEvaluate() {
  if (evaluateDialog_ && evaluateDialog_->isVisible()) {
    evaluateDialog_->raise();
    evaluateDialog_->activateWindow();
    return;
  }
  // Window-modal but not a nested event loop: jobs keep reporting while it is open.
  auto* dialog = new EvaluateDialog(evaluateDefaults(), prunedCandidates(), cudaAvailable_, this);
  dialog->setCalibrationRuns(calibrationChoices_);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  evaluateDialog_ = dialog;
  connect(dialog, &QDialog::accepted, this, [this, dialog] { Q_EMIT evaluateRequested(dialog->form()); });
  dialog->open();
}

void PruningPanel::exportCsv(const QString& what, const QString& csv) {
  const QString start = workspace_.isEmpty() ? QDir::homePath() : workspace_;
  const QString path = QFileDialog::getSaveFileName(this, tr("Export the %1 table").arg(what),
                                                    QDir(start).filePath(what + QStringLiteral(".csv")),
                                                    tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text) || f.write(csv.toUtf8()) < 0) {
    setStatus(tr("Cannot write %1: %2").arg(path, f.errorString()), true);
    return;
  }
  setStatus(tr("Exported the %1 table to %2").arg(what, path), false);
}

// ---------------------------------------------------------------- queries

QString PruningPanel::statusText() const { return status_->text(); }
QString PruningPanel::timeText() const { return time_->text(); }
QString PruningPanel::modulesSummary() const { return summary_->text(); }
QString PruningPanel::modulesError() const { return modulesError_->isHidden() ? QString() : modulesError_->text(); }
double PruningPanel::progressFraction() const {
  return bar_->maximum() > 0 ? double(bar_->value()) / bar_->maximum() : 0.0;
}

}  // namespace sdw::widgets
