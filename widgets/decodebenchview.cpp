#include "widgets/decodebenchview.h"
#include "widgets/runactions.h"

#include "widgets/decodebenchcharts.h"
#include "widgets/decoderesultsmodel.h"
#include "widgets/pathfield.h"
#include "widgets/sortabletable.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFontMetrics>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStyle>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace sdw::widgets {

namespace {
struct LinearChoice {
  const char* name;
  const char* label;
  const char* tip;
};
const LinearChoice kLinears[] = {
    {"cublas", "cuBLAS", "the decode engine with cuBLAS for every projection (LibTorch's matmul on the CPU)"},
    {"dense", "our dense GEMV", "the decode engine with our dense GEMV (16-bit dtypes on the GPU; cuBLAS in float32)"},
    {"sparse", "our sparse kernels",
     "the decode engine with our sparse kernels: every projection pruned by magnitude to each pattern below, N:M "
     "through the bitmask SpMV, col2:4 / col4:8 through the spMspV (which skips the inputs activation sparsity "
     "drops); a checkpoint: its own model.sdwsparse or model.sdwcolumn"},
    {"eager", "eager LibTorch forward", "the LibTorch forward pass without the decode engine (the reference)"},
};
const char* const kPatterns[] = {"2:4", "4:8", "8:16", "16:32", "col2:4", "col4:8"};
const int kBatches[] = {1, 2, 4, 8};
constexpr int kNameRole = Qt::UserRole;

// A long message in at most `lines` lines of the narrow column, the whole of
// it in the tool tip (as the kernel page does).
void setLimitedText(QLabel* label, const QString& text, int lines, int width) {
  const QFontMetrics fm(label->font());
  const QString shown = fm.elidedText(text, Qt::ElideRight, width * lines - width / 3);
  label->setText(shown);
  label->setToolTip(shown == text ? QString() : text);
}

QStandardItem* cudaItem(QComboBox* box) {
  auto* m = qobject_cast<QStandardItemModel*>(box->model());
  const int i = box->findData(QStringLiteral("cuda"));
  return m && i >= 0 ? m->item(i) : nullptr;
}
}  // namespace

DecodeBenchView::DecodeBenchView(QWidget* parent) : QWidget(parent) {
  qRegisterMetaType<sdw::widgets::DecodeBenchRequest>("sdw::widgets::DecodeBenchRequest");
  setObjectName(QStringLiteral("decodeBenchView"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 4, 0, 0);

  // The controls column as the kernel page has it: as wide as its widest row,
  // the settings scrolling vertically above actions that stay in sight.
  auto* column = new QWidget(this);
  column->setObjectName(QStringLiteral("decodeControls"));
  auto* cl = new QVBoxLayout(column);
  cl->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea(column);
  scroll->setObjectName(QStringLiteral("decodeSettingsScroll"));
  QWidget* actions = nullptr;
  QWidget* settings = buildSettings(&actions);
  scroll->setWidget(settings);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  cl->addWidget(scroll, 1);
  auto* baseRow = new QWidget(column);
  auto* brl = new QHBoxLayout(baseRow);
  brl->setContentsMargins(0, 0, 0, 0);
  brl->addWidget(new QLabel(tr("Speed-up over"), baseRow));
  brl->addWidget(baseline_, 1);
  cl->addWidget(baseRow);
  cl->addWidget(actions);
  const int scrollBar = scroll->style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, scroll);
  column->setFixedWidth(std::max({250, settings->minimumSizeHint().width(), actions->minimumSizeHint().width()}) +
                        scrollBar + 2);
  textWidth_ = column->width() - scrollBar - 8;
  layout->addWidget(column);

  charts_ = new DecodeBenchCharts(this);
  model_ = new DecodeResultsModel(this);
  table_ = makeSortableTable(model_, DecodeResultsModel::SortRole, QStringLiteral("decodeResultsTable"), this, &proxy_);
  table_->horizontalHeader()->setStretchLastSection(true);  // the engine's description takes what is left

  summary_ = new QLabel(tr("No results yet: start a run or open a results file."), this);
  summary_->setObjectName(QStringLiteral("decodeSummary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* bottom = new QWidget(this);
  auto* bl = new QVBoxLayout(bottom);
  bl->setContentsMargins(0, 0, 0, 0);
  bl->addWidget(summary_);
  bl->addWidget(table_, 1);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(charts_);
  split->addWidget(bottom);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setChildrenCollapsible(false);
  layout->addWidget(split, 1);
  updateButtons();
}

QWidget* DecodeBenchView::buildSettings(QWidget** actionsOut) {
  auto* w = new QWidget(this);
  auto* v = new QVBoxLayout(w);
  v->setContentsMargins(0, 0, 4, 0);

  device_ = new QLabel(w);
  device_->setObjectName(QStringLiteral("decodeDevice"));
  device_->setWordWrap(true);
  v->addWidget(device_);

  auto* modelsBox = new QGroupBox(tr("Models"), w);
  auto* ml = new QVBoxLayout(modelsBox);
  configs_ = new QListWidget(modelsBox);
  configs_->setObjectName(QStringLiteral("decodeConfigs"));
  configs_->setToolTip(tr("Model shapes with random weights: decode speed does not depend on the values"));
  configs_->setMinimumHeight(66);
  configs_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Ignored);
  ml->addWidget(configs_, 1);
  auto* ckRow = new QWidget(modelsBox);
  auto* ckl = new QHBoxLayout(ckRow);
  ckl->setContentsMargins(0, 0, 0, 0);
  const PathField ck = makePathField(ckRow, tr("Checkpoint folder"), true);
  checkpoint_ = ck.edit;
  checkpoint_->setObjectName(QStringLiteral("decodeCheckpoint"));
  checkpoint_->setPlaceholderText(tr("and/or a checkpoint folder"));
  checkpoint_->setToolTip(
      tr("A real checkpoint (config.json, *.safetensors) decoded instead of random weights; "
         "the sparse engine reads its model.sdwsparse"));
  ckl->addWidget(checkpoint_, 1);
  ckl->addWidget(ck.browse);
  ml->addWidget(ckRow);
  v->addWidget(modelsBox, 1);  // the model list gets whatever height is left

  auto* engineBox = new QGroupBox(tr("Engines"), w);
  auto* el = new QVBoxLayout(engineBox);
  for (const LinearChoice& l : kLinears) {
    auto* c = new QCheckBox(tr(l.label), engineBox);
    c->setObjectName(QStringLiteral("decodeLinear_%1").arg(QLatin1String(l.name)));
    c->setProperty("linear", QLatin1String(l.name));
    c->setToolTip(tr(l.tip));
    c->setChecked(QLatin1String(l.name) != QLatin1String("eager"));
    el->addWidget(c);
    linears_.push_back(c);
  }
  // Two rows of two, as on the kernel page.
  auto* pat = new QWidget(engineBox);
  auto* pl = new QGridLayout(pat);
  pl->setContentsMargins(16, 0, 0, 0);  // under the sparse engine they belong to
  pl->setVerticalSpacing(2);
  for (const char* p : kPatterns) {
    auto* c = new QCheckBox(QString::fromLatin1(p), pat);
    c->setObjectName(
        QStringLiteral("decodePattern_%1").arg(QString::fromLatin1(p).replace(QLatin1Char(':'), QLatin1Char('_'))));
    c->setChecked(QLatin1String(p) == QLatin1String("2:4"));
    pl->addWidget(c, static_cast<int>(patterns_.size()) / 2, static_cast<int>(patterns_.size()) % 2);
    patterns_.push_back(c);
  }
  el->addWidget(pat);
  QCheckBox* sparse = linears_[2];
  const auto patternsFollow = [this, sparse] {
    for (QCheckBox* c : patterns_) c->setEnabled(sparse->isChecked() && !running_);
  };
  connect(sparse, &QCheckBox::toggled, this, patternsFollow);
  v->addWidget(engineBox);

  auto* runBox = new QGroupBox(tr("Run"), w);
  auto* form = new QFormLayout(runBox);
  auto* bat = new QWidget(runBox);
  auto* bal = new QHBoxLayout(bat);
  bal->setContentsMargins(0, 0, 0, 0);
  for (int b : kBatches) {
    auto* c = new QCheckBox(QString::number(b), bat);
    c->setObjectName(QStringLiteral("decodeBatch_%1").arg(b));
    c->setChecked(b == 1);
    batches_.push_back(c);
    bal->addWidget(c);
  }
  form->addRow(tr("Batch"), bat);
  context_ = new QSpinBox(runBox);
  context_->setObjectName(QStringLiteral("decodeContext"));
  context_->setRange(1, 1 << 20);
  context_->setValue(512);
  context_->setToolTip(tr("Tokens already in the KV cache: every timed step attends to this many plus itself"));
  form->addRow(tr("Context"), context_);
  activation_ = new QDoubleSpinBox(runBox);
  activation_->setObjectName(QStringLiteral("decodeActivationSparsity"));
  activation_->setRange(0.0, 0.95);
  activation_->setSingleStep(0.05);
  activation_->setDecimals(2);
  activation_->setValue(0.0);
  activation_->setToolTip(
      tr("Run-time activation sparsity p_x of every engine: each projection input keeps its "
         "largest 1 - p_x entries. The col2:4 / col4:8 engines (spMspV) then skip the dropped "
         "inputs' weight bytes; the others only zero them. 0: off."));
  thresholds_ = new QCheckBox(tr("thresholds"), runBox);
  thresholds_->setObjectName(QStringLiteral("decodeActivationThresholds"));
  thresholds_->setToolTip(
      tr("Drop each input's p_x share by fixed |x| thresholds per layer and input (TEAL), set from "
         "the model's own activations over a prefill of the context, instead of each token's "
         "top-k: the spMspV kernels compare them as they read the inputs, with no selection launch."));
  thresholds_->setEnabled(false);
  connect(activation_, &QDoubleSpinBox::valueChanged, thresholds_,
          [this](double p) { thresholds_->setEnabled(p > 0); });
  auto* act = new QWidget(runBox);
  auto* al = new QHBoxLayout(act);
  al->setContentsMargins(0, 0, 0, 0);
  al->addWidget(activation_);
  al->addWidget(thresholds_);
  form->addRow(tr("Activation\nsparsity"), act);
  // Warm-up and timed steps on one row: the column's height goes to the lists above.
  auto* steps = new QWidget(runBox);
  auto* sl = new QHBoxLayout(steps);
  sl->setContentsMargins(0, 0, 0, 0);
  warmup_ = new QSpinBox(steps);
  warmup_->setObjectName(QStringLiteral("decodeWarmup"));
  warmup_->setRange(0, 100000);
  warmup_->setValue(50);
  warmup_->setToolTip(tr("Untimed decode steps first"));
  tokens_ = new QSpinBox(steps);
  tokens_->setObjectName(QStringLiteral("decodeTokens"));
  tokens_->setRange(1, 100000);
  tokens_->setValue(50);
  tokens_->setToolTip(tr("Timed decode steps; the table shows their median"));
  sl->addWidget(warmup_, 1);
  auto* timedLabel = new QLabel(tr("Timed"), steps);
  timedLabel->setBuddy(tokens_);
  sl->addWidget(timedLabel);
  sl->addWidget(tokens_, 1);
  form->addRow(tr("Warm-up"), steps);
  auto* devRow = new QWidget(runBox);
  auto* dl = new QHBoxLayout(devRow);
  dl->setContentsMargins(0, 0, 0, 0);
  deviceBox_ = new QComboBox(devRow);
  deviceBox_->setObjectName(QStringLiteral("decodeDeviceChoice"));
  deviceBox_->addItem(QStringLiteral("cuda"), QStringLiteral("cuda"));
  deviceBox_->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  dtype_ = new QComboBox(devRow);
  dtype_->setObjectName(QStringLiteral("decodeDtype"));
  for (const char* d : {"bfloat16", "float16", "float32"}) dtype_->addItem(QLatin1String(d), QLatin1String(d));
  dl->addWidget(deviceBox_, 1);
  dl->addWidget(dtype_, 1);
  form->addRow(tr("Device"), devRow);
  connect(deviceBox_, &QComboBox::currentIndexChanged, this, &DecodeBenchView::deviceChanged);
  v->addWidget(runBox);

  // How the results are compared: over our dense engine (the GEMV the sparse kernels replace),
  // or over the best dense engine of each group (at batch 2-8 cuBLAS is often the faster one).
  // A display choice: it redraws what is shown, run or opened; it stays in sight above the
  // actions (the constructor places it).
  baseline_ = new QComboBox(this);
  baseline_->setObjectName(QStringLiteral("decodeBaseline"));
  baseline_->addItem(tr("our dense engine"), static_cast<int>(DecodeBaseline::OwnDense));
  baseline_->addItem(tr("the best dense engine"), static_cast<int>(DecodeBaseline::BestDense));
  baseline_->setToolTip(
      tr("What the speed-up bars and the summary divide by: our dense GEMV engine (where it "
         "ran), or whichever dense engine (cuBLAS or ours) decoded faster in that model and batch"));
  connect(baseline_, &QComboBox::currentIndexChanged, this, [this] { Q_EMIT baselineChanged(baseline()); });

  const RunActions ra = makeRunActions(
      this, {QStringLiteral("decode"), tr("A JSON file written by sdw-cli bench decode --json (or saved here)"),
             tr("Save results…"), QStringLiteral("decodeSave"),
             tr("The results as the JSON sdw-cli bench decode writes (Open results… reads it back), "
                "or the table as CSV")});
  start_ = ra.start;
  cancel_ = ra.cancel;
  open_ = ra.open;
  save_ = ra.save;
  bar_ = ra.bar;
  status_ = ra.status;
  QWidget* actions = ra.widget;
  *actionsOut = actions;

  connect(start_, &QPushButton::clicked, this, [this] { Q_EMIT startRequested(request()); });
  connect(cancel_, &QPushButton::clicked, this, &DecodeBenchView::cancelRequested);
  connect(open_, &QPushButton::clicked, this, &DecodeBenchView::chooseResults);
  connect(save_, &QPushButton::clicked, this, &DecodeBenchView::chooseSave);
  return w;
}

void DecodeBenchView::setDevice(bool gpu, const QString& text) {
  gpu_ = gpu;
  deviceText_ = text;
  setLimitedText(device_, text, 4, textWidth_);
  device_->setStyleSheet(gpu ? QString() : QStringLiteral("color: #9a6700;"));
  if (QStandardItem* item = cudaItem(deviceBox_)) {
    item->setEnabled(gpu);
    item->setToolTip(gpu ? QString() : tr("no GPU here: %1").arg(text));
  }
  deviceBox_->setCurrentIndex(deviceBox_->findData(gpu ? QStringLiteral("cuda") : QStringLiteral("cpu")));
  deviceChanged();
}

void DecodeBenchView::deviceChanged() {
  // The CLI's defaults: bfloat16 on the GPU; float32 on the CPU, whose 16-bit
  // matmuls are not vectorised.
  const bool cpu = deviceBox_->currentData().toString() == QLatin1String("cpu");
  dtype_->setCurrentIndex(dtype_->findData(cpu ? QStringLiteral("float32") : QStringLiteral("bfloat16")));
}

void DecodeBenchView::setConfigCatalog(const QVector<DecodeConfigChoice>& configs) {
  configs_->clear();
  for (const DecodeConfigChoice& c : configs) {
    auto* item = new QListWidgetItem(
        c.title.isEmpty() || c.title == c.name ? c.name : QStringLiteral("%1 (%2)").arg(c.title, c.name), configs_);
    item->setData(kNameRole, c.name);
    item->setToolTip(c.detail);
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Unchecked);
  }
  // What the CLI decodes by default: Llama-3.1-8B on a GPU, the tiny shape on the CPU.
  const QString preferred = gpu_ ? QStringLiteral("llama3-8b") : QStringLiteral("bench-tiny");
  for (int i = 0; i < configs_->count(); ++i)
    if (configs_->item(i)->data(kNameRole).toString() == preferred) configs_->item(i)->setCheckState(Qt::Checked);
}

DecodeBenchRequest DecodeBenchView::request() const {
  DecodeBenchRequest r;
  for (int i = 0; i < configs_->count(); ++i)
    if (configs_->item(i)->checkState() == Qt::Checked) r.configs << configs_->item(i)->data(kNameRole).toString();
  r.checkpoint = checkpoint_->text().trimmed();
  for (QCheckBox* c : linears_)
    if (c->isChecked()) r.linears << c->property("linear").toString();
  if (r.linears.contains(QLatin1String("sparse")))
    for (QCheckBox* c : patterns_)
      if (c->isChecked()) r.patterns << c->text();
  for (QCheckBox* c : batches_)
    if (c->isChecked()) r.batches << c->text().toInt();
  r.context = context_->value();
  r.activationSparsity = activation_->value();
  r.activationThresholds = r.activationSparsity > 0 && thresholds_->isChecked();
  r.warmup = warmup_->value();
  r.tokens = tokens_->value();
  r.device = deviceBox_->currentData().toString();
  r.dtype = dtype_->currentData().toString();
  return r;
}

void DecodeBenchView::setRequest(const DecodeBenchRequest& r) {
  for (int i = 0; i < configs_->count(); ++i) {
    QListWidgetItem* item = configs_->item(i);
    item->setCheckState(r.configs.contains(item->data(kNameRole).toString()) ? Qt::Checked : Qt::Unchecked);
  }
  checkpoint_->setText(r.checkpoint);
  for (QCheckBox* c : linears_) c->setChecked(r.linears.contains(c->property("linear").toString()));
  for (QCheckBox* c : patterns_) c->setChecked(r.patterns.contains(c->text()));
  for (QCheckBox* c : batches_) c->setChecked(r.batches.contains(c->text().toInt()));
  context_->setValue(r.context);
  activation_->setValue(r.activationSparsity);
  thresholds_->setChecked(r.activationThresholds);
  warmup_->setValue(r.warmup);
  tokens_->setValue(r.tokens);
  if (const int i = deviceBox_->findData(r.device); i >= 0) deviceBox_->setCurrentIndex(i);
  if (const int i = dtype_->findData(r.dtype); i >= 0) dtype_->setCurrentIndex(i);
}

void DecodeBenchView::beginRun(const QString& title) {
  running_ = true;
  model_->clear();
  charts_->clear();
  charts_->setFollowing(true);
  summary_->setText(QString());
  bar_->setValue(0);
  setStatus(title, false);
  updateButtons();
}

void DecodeBenchView::addSteps(const QVector<DecodeStepPoint>& points) { charts_->addSteps(points); }

void DecodeBenchView::addRows(const QVector<DecodeRowData>& rows) {
  model_->appendRows(rows);
  updateButtons();
}

DecodeBaseline DecodeBenchView::baseline() const {
  return static_cast<DecodeBaseline>(baseline_->currentData().toInt());
}

void DecodeBenchView::setBaseline(DecodeBaseline baseline) {
  const int i = baseline_->findData(static_cast<int>(baseline));
  if (i >= 0) baseline_->setCurrentIndex(i);
}

void DecodeBenchView::setSpeedupBars(const DecodeSpeedupBars& bars) { charts_->setSpeedupBars(bars); }

void DecodeBenchView::setSummary(const QString& text) { summary_->setText(text); }

QString DecodeBenchView::summaryText() const { return summary_->text(); }

void DecodeBenchView::setProgress(double fraction, const QString& text) {
  bar_->setRange(0, fraction < 0 ? 0 : 1000);
  if (fraction >= 0) bar_->setValue(static_cast<int>(fraction * 1000));
  setStatus(text, false);
}

void DecodeBenchView::endRun(const QString& message, bool isError) {
  running_ = false;
  charts_->setFollowing(false);  // the whole run in view
  bar_->setRange(0, 1000);
  bar_->setValue(isError ? 0 : bar_->value());
  setStatus(message, isError);
  updateButtons();
}

void DecodeBenchView::showResult(const QString& title, const QVector<DecodeRowData>& rows,
                                 const QVector<DecodeStepPoint>& points) {
  model_->clear();
  charts_->clear();
  charts_->setFollowing(false);
  charts_->addSteps(points);
  model_->appendRows(rows);
  setStatus(title, false);
  updateButtons();
}

void DecodeBenchView::setStatus(const QString& text, bool isError) {
  statusText_ = text;
  setLimitedText(status_, text, 3, textWidth_);
  status_->setStyleSheet(isError ? QStringLiteral("color: #c01c28;") : QString());
}

void DecodeBenchView::chooseResults() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open decode benchmark results"), QString(),
                                                    tr("Decode benchmark results (*.json);;All files (*)"));
  if (!path.isEmpty()) Q_EMIT openResultsRequested(path);
}

void DecodeBenchView::chooseSave() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save decode benchmark results"), QStringLiteral("decode.json"),
                                   tr("Results JSON (*.json);;CSV table (*.csv)"));
  if (!path.isEmpty()) Q_EMIT saveResultsRequested(path);
}

void DecodeBenchView::updateButtons() {
  start_->setEnabled(!running_);
  cancel_->setEnabled(running_);
  open_->setEnabled(!running_);
  save_->setEnabled(!running_ && model_->rowCount() > 0);
  for (QCheckBox* c : patterns_) c->setEnabled(linears_[2]->isChecked() && !running_);
}

}  // namespace sdw::widgets
