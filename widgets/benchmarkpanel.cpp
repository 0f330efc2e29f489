#include "widgets/benchmarkpanel.h"
#include "widgets/runactions.h"

#include "widgets/benchresultsmodel.h"
#include "widgets/decodebenchview.h"
#include "widgets/sortabletable.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFontMetrics>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace sdw::widgets {

QStringList BenchRequest::allSpmspvLayouts() {
  QStringList out;
  for (const std::string& name : gpu::spmspvLayoutNames()) out << QString::fromStdString(name);
  return out;
}

namespace {
const char* const kPatterns[] = {"2:4", "4:8", "8:16", "16:32"};
const int kBatches[] = {1, 2, 4, 8};
constexpr int kShapeRole = Qt::UserRole;  // child items: index into the group's shapes

// A long message (a results file's whole command line, why there is no GPU)
// in at most `lines` lines of the narrow column, the whole of it in the tool
// tip: the column's controls stay in sight.
void setLimitedText(QLabel* label, const QString& text, int lines, int width) {
  const QFontMetrics fm(label->font());
  // Word wrapping loses part of each line: aim a third of a line short.
  const QString shown = fm.elidedText(text, Qt::ElideRight, width * lines - width / 3);
  label->setText(shown);
  label->setToolTip(shown == text ? QString() : text);
}
}  // namespace

BenchmarkPanel::BenchmarkPanel(QWidget* parent) : QWidget(parent) {
  qRegisterMetaType<sdw::widgets::BenchRequest>("sdw::widgets::BenchRequest");
  setObjectName(QStringLiteral("benchmarkPanel"));
  // Two pages: single kernels, and whole decode steps of a model through the
  // decode engine (what the kernels add up to).
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(6, 6, 6, 6);
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName(QStringLiteral("benchTabs"));
  outer->addWidget(tabs_);
  auto* kernelPage = new QWidget(tabs_);
  kernelPage->setObjectName(QStringLiteral("benchKernelPage"));
  auto* layout = new QHBoxLayout(kernelPage);
  layout->setContentsMargins(0, 4, 0, 0);

  // The controls column is as wide as its widest row needs, so nothing in
  // it is ever cut off at the right; should the panel get too short for the
  // settings, they scroll vertically while the actions under them stay.
  auto* column = new QWidget(this);
  column->setObjectName(QStringLiteral("benchControls"));
  auto* cl = new QVBoxLayout(column);
  cl->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea(column);
  scroll->setObjectName(QStringLiteral("benchSettingsScroll"));
  QWidget* actions = nullptr;
  QWidget* settings = buildSettings(&actions);
  scroll->setWidget(settings);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  cl->addWidget(scroll, 1);
  cl->addWidget(actions);
  const int scrollBar = scroll->style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, scroll);
  column->setFixedWidth(std::max({250, settings->minimumSizeHint().width(), actions->minimumSizeHint().width()}) +
                        scrollBar + 2);
  textWidth_ = column->width() - scrollBar - 8;
  layout->addWidget(column);

  charts_ = new BenchCharts(this);
  model_ = new BenchResultsModel(this);
  table_ = makeSortableTable(model_, BenchResultsModel::SortRole, QStringLiteral("benchResultsTable"), this, &proxy_);
  // Every column as wide as its contents: a shape's name is never elided.
  table_->horizontalHeader()->setStretchLastSection(false);
  QFont headerFont = table_->horizontalHeader()->font();
  headerFont.setPointSizeF(headerFont.pointSizeF() * 0.9);
  table_->horizontalHeader()->setFont(headerFont);
  // The speedup is what the table is read for: next to the kernel, in sight
  // without scrolling.
  table_->horizontalHeader()->moveSection(BenchResultsModel::Speedup, BenchResultsModel::Kernel + 1);
  // Chained times exist only where our kernels were launched chained (sm_90):
  // elsewhere the column would be all dashes, taking room from the others.
  const auto showChained = [this] {
    const auto& rows = model_->rows();
    const bool any = std::any_of(rows.begin(), rows.end(), [](const BenchRowData& r) { return r.usChained > 0; });
    table_->setColumnHidden(BenchResultsModel::ChainedUs, !any);
  };
  connect(model_, &QAbstractItemModel::rowsInserted, this, showChained);
  connect(model_, &QAbstractItemModel::modelReset, this, showChained);
  showChained();

  summary_ = new QLabel(tr("No results yet: start a run or open a results file."), this);
  summary_->setObjectName(QStringLiteral("benchSummary"));
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
  tabs_->addTab(kernelPage, tr("Kernels"));
  decode_ = new DecodeBenchView(tabs_);
  tabs_->addTab(decode_, tr("End-to-end decode"));
  updateButtons();
}

QWidget* BenchmarkPanel::buildSettings(QWidget** actionsOut) {
  auto* w = new QWidget(this);
  auto* v = new QVBoxLayout(w);
  v->setContentsMargins(0, 0, 4, 0);

  device_ = new QLabel(w);
  device_->setObjectName(QStringLiteral("benchDevice"));
  device_->setWordWrap(true);
  v->addWidget(device_);

  auto* shapesBox = new QGroupBox(tr("Shapes"), w);
  auto* sl = new QVBoxLayout(shapesBox);
  shapes_ = new QTreeWidget(shapesBox);
  shapes_->setHeaderHidden(true);
  shapes_->setColumnCount(2);
  shapes_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  shapes_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  shapes_->header()->setStretchLastSection(false);
  shapes_->setMinimumHeight(66);  // the three models, folded
  // Its preferred height would push the baselines out of sight: it takes
  // what is left over instead.
  shapes_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Ignored);
  sl->addWidget(shapes_);
  custom_ = new QLineEdit(shapesBox);
  custom_->setPlaceholderText(tr("custom: ROWSxCOLS, e.g. 4096x4096,1024x4096"));
  custom_->setToolTip(tr("Extra shapes, rows = out features, cols = in features (a multiple of 32)"));
  sl->addWidget(custom_);
  v->addWidget(shapesBox, 1);  // the shape list gets whatever height is left

  auto* runBox = new QGroupBox(tr("Kernels"), w);
  auto* form = new QFormLayout(runBox);
  // Two rows of two: four in a row made the column too wide for the window.
  auto* pat = new QWidget(runBox);
  auto* pl = new QGridLayout(pat);
  pl->setContentsMargins(0, 0, 0, 0);
  pl->setVerticalSpacing(2);
  for (const char* p : kPatterns) {
    auto* c = new QCheckBox(QString::fromLatin1(p), pat);
    c->setChecked(true);
    pl->addWidget(c, static_cast<int>(patterns_.size()) / 2, static_cast<int>(patterns_.size()) % 2);
    patterns_.push_back(c);
  }
  form->addRow(tr("Patterns"), pat);
  auto* bat = new QWidget(runBox);
  auto* bal = new QHBoxLayout(bat);
  bal->setContentsMargins(0, 0, 0, 0);
  for (int b : kBatches) {
    auto* c = new QCheckBox(QString::number(b), bat);
    c->setChecked(b == 1);
    batches_.push_back(c);
    bal->addWidget(c);
  }
  form->addRow(tr("Batch"), bat);
  dtype_ = new QComboBox(runBox);
  dtype_->addItems({QStringLiteral("bf16"), QStringLiteral("fp16")});
  repeats_ = new QSpinBox(runBox);
  repeats_->setRange(1, 1000);
  repeats_->setValue(7);
  repeats_->setToolTip(tr("Timed repeats per kernel; the table shows their median"));
  // One row for both: the column's height goes to the lists above.
  auto* dtypeRow = new QWidget(runBox);
  auto* dl = new QHBoxLayout(dtypeRow);
  dl->setContentsMargins(0, 0, 0, 0);
  dl->addWidget(dtype_, 1);
  auto* repeatsLabel = new QLabel(tr("Repeats"), dtypeRow);
  repeatsLabel->setBuddy(repeats_);
  dl->addWidget(repeatsLabel);
  dl->addWidget(repeats_, 1);
  form->addRow(tr("Dtype"), dtypeRow);
  activation_ = new QLineEdit(runBox);
  activation_->setObjectName(QStringLiteral("benchActivationSparsity"));
  activation_->setPlaceholderText(tr("off, or e.g. 0,0.25,0.5,0.75"));
  activation_->setToolTip(
      tr("Activation sparsities p_x in [0, 1), comma separated: also time the spMspV kernel "
         "(batch 1) skipping that fraction of x, in the weight layouts checked below. Empty: off."));
  // The p_x list and, under it, the spMspV weight layouts (as sdw-cli bench kernels
  // --spmspv-layouts), all by default: one form row, beside the two-line label.
  auto* activationCell = new QWidget(runBox);
  auto* al = new QVBoxLayout(activationCell);
  al->setContentsMargins(0, 0, 0, 0);
  al->setSpacing(0);
  al->addWidget(activation_);
  auto* layoutRow = new QWidget(activationCell);
  layoutRow->setObjectName(QStringLiteral("benchSpmspvLayouts"));
  layoutRow->setToolTip(tr("The spMspV weight layouts timed at each activation sparsity"));
  auto* ll = new QHBoxLayout(layoutRow);
  ll->setContentsMargins(0, 0, 0, 0);
  ll->setSpacing(4);
  const QStringList layoutTips{tr("spMspV: 50% unstructured weights, bitmask chunks"),
                               tr("spMspV: 2 of every 4 rows of each column (prune --pattern col2:4)"),
                               tr("spMspV: 4 of every 8 rows of each column (prune --pattern col4:8)"),
                               tr("spMspV: every weight, column-major: activation sparsity alone (TEAL)")};
  for (const std::string& name : gpu::spmspvLayoutNames()) {
    auto* c = new QCheckBox(QString::fromStdString(name), layoutRow);
    c->setChecked(true);
    const auto i = spmspvLayouts_.size();
    if (i < layoutTips.size()) c->setToolTip(layoutTips[i]);
    ll->addWidget(c);
    spmspvLayouts_.push_back(c);
  }
  ll->addStretch(1);
  al->addWidget(layoutRow);
  form->addRow(tr("Activation\nsparsity"), activationCell);
  v->addWidget(runBox);

  auto* baseBox = new QGroupBox(tr("Baselines"), w);
  auto* bl = new QVBoxLayout(baseBox);
  cublas_ = new QCheckBox(tr("cuBLAS dense (LibTorch)"), baseBox);
  ownDense_ = new QCheckBox(tr("our dense GEMV"), baseBox);
  cusparselt_ = new QCheckBox(tr("cuSPARSELt 2:4"), baseBox);
  layer_ = new QCheckBox(tr("whole-layer sequence"), baseBox);
  layer_->setToolTip(tr("A model's selected projections back to back (GPU only)"));
  for (QCheckBox* c : {cublas_, ownDense_, cusparselt_, layer_}) {
    c->setChecked(true);
    bl->addWidget(c);
  }
  // On a GPU machine the CPU kernels are only timed when asked for (a run
  // that must stay on the CPU, e.g. to compare with a CPU-only machine).
  forceCpu_ = new QCheckBox(tr("CPU kernels instead of the GPU"), baseBox);
  forceCpu_->setObjectName(QStringLiteral("benchForceCpu"));
  forceCpu_->setEnabled(false);
  bl->addWidget(forceCpu_);
  v->addWidget(baseBox);

  // The actions stay in sight under the settings, however far those scroll.
  const RunActions ra = makeRunActions(
      this, {QStringLiteral("bench"), tr("A JSON file written by sdw-cli bench kernels --json --out FILE"),
             tr("Export table…"), QStringLiteral("benchExport"),
             tr("The results as CSV, or as JSON that Open results… reads back")});
  start_ = ra.start;
  cancel_ = ra.cancel;
  open_ = ra.open;
  export_ = ra.save;
  bar_ = ra.bar;
  status_ = ra.status;
  QWidget* actions = ra.widget;
  *actionsOut = actions;

  connect(start_, &QPushButton::clicked, this, [this] { Q_EMIT startRequested(request()); });
  connect(cancel_, &QPushButton::clicked, this, &BenchmarkPanel::cancelRequested);
  connect(open_, &QPushButton::clicked, this, &BenchmarkPanel::chooseResults);
  connect(export_, &QPushButton::clicked, this, &BenchmarkPanel::chooseExport);
  return w;
}

void BenchmarkPanel::setDevice(bool gpu, const QString& text) {
  gpu_ = gpu;
  deviceText_ = text;
  setLimitedText(device_, text, 4, textWidth_);
  device_->setStyleSheet(gpu ? QString() : QStringLiteral("color: #9a6700;"));
  const QString why = gpu ? QString() : tr("no GPU here: %1").arg(text);
  for (QCheckBox* c : {cublas_, cusparselt_, layer_}) {
    c->setEnabled(gpu);
    c->setToolTip(gpu ? c->toolTip() : why);
  }
  forceCpu_->setEnabled(gpu);
  forceCpu_->setToolTip(gpu ? tr("Time the CPU kernels although a GPU is present") : why);
}

void BenchmarkPanel::setShapeCatalog(const QVector<ShapeGroup>& groups) {
  shapes_->clear();
  for (const ShapeGroup& g : groups) {
    auto* top = new QTreeWidgetItem(shapes_, {g.title.isEmpty() ? g.model : g.title});
    top->setData(0, kShapeRole, g.model);
    top->setFlags(top->flags() | Qt::ItemIsUserCheckable | Qt::ItemIsAutoTristate);
    top->setCheckState(0, Qt::Unchecked);
    for (const gpu::BenchShape& s : g.shapes) {
      auto* item = new QTreeWidgetItem(top, {QString::fromStdString(s.module),
                                             QStringLiteral("%1x%2").arg(s.rows).arg(s.cols)});
      item->setData(0, kShapeRole, QString::fromStdString(s.module));
      item->setData(1, kShapeRole, QVariant::fromValue(QPair<qlonglong, qlonglong>(s.rows, s.cols)));
      item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
      item->setCheckState(0, Qt::Unchecked);
    }
  }
  if (shapes_->topLevelItemCount() > 0) shapes_->topLevelItem(0)->setCheckState(0, Qt::Checked);
}

BenchRequest BenchmarkPanel::request() const {
  BenchRequest r;
  gpu::BenchSettings& s = r.settings;
  for (int t = 0; t < shapes_->topLevelItemCount(); ++t) {
    const QTreeWidgetItem* top = shapes_->topLevelItem(t);
    for (int c = 0; c < top->childCount(); ++c) {
      const QTreeWidgetItem* item = top->child(c);
      if (item->checkState(0) != Qt::Checked) continue;
      const auto rc = item->data(1, kShapeRole).value<QPair<qlonglong, qlonglong>>();
      s.shapes.push_back({top->data(0, kShapeRole).toString().toStdString(),
                          item->data(0, kShapeRole).toString().toStdString(), rc.first, rc.second});
    }
  }
  r.customShapes = custom_->text().trimmed();
  r.activationSparsities = activation_->text().trimmed();
  r.spmspvLayouts.clear();
  for (QCheckBox* c : spmspvLayouts_)
    if (c->isChecked()) r.spmspvLayouts << c->text();
  s.patterns.clear();
  for (QCheckBox* c : patterns_)
    if (c->isChecked()) s.patterns.push_back(c->text().toStdString());
  s.batches.clear();
  for (QCheckBox* c : batches_)
    if (c->isChecked()) s.batches.push_back(c->text().toInt());
  s.dtype = dtype_->currentText().toStdString();
  s.repeats = repeats_->value();
  s.library = cublas_->isChecked();
  s.ownDense = ownDense_->isChecked();
  s.cusparselt = cusparselt_->isChecked();
  s.layer = layer_->isChecked();
  s.forceCpu = forceCpu_->isChecked();
  return r;
}

void BenchmarkPanel::setRequest(const BenchRequest& r) {
  const gpu::BenchSettings& s = r.settings;
  for (int t = 0; t < shapes_->topLevelItemCount(); ++t) {
    QTreeWidgetItem* top = shapes_->topLevelItem(t);
    const std::string model = top->data(0, kShapeRole).toString().toStdString();
    for (int c = 0; c < top->childCount(); ++c) {
      QTreeWidgetItem* item = top->child(c);
      const std::string module = item->data(0, kShapeRole).toString().toStdString();
      const bool on = std::any_of(s.shapes.begin(), s.shapes.end(),
                                  [&](const gpu::BenchShape& b) { return b.model == model && b.module == module; });
      item->setCheckState(0, on ? Qt::Checked : Qt::Unchecked);
    }
  }
  custom_->setText(r.customShapes);
  activation_->setText(r.activationSparsities);
  for (QCheckBox* c : spmspvLayouts_)  // none named: every layout
    c->setChecked(s.spmspvLayouts.empty() || std::find(s.spmspvLayouts.begin(), s.spmspvLayouts.end(),
                                                       c->text().toStdString()) != s.spmspvLayouts.end());
  for (QCheckBox* c : patterns_)
    c->setChecked(std::find(s.patterns.begin(), s.patterns.end(), c->text().toStdString()) != s.patterns.end());
  for (QCheckBox* c : batches_)
    c->setChecked(std::find(s.batches.begin(), s.batches.end(), c->text().toInt()) != s.batches.end());
  dtype_->setCurrentText(QString::fromStdString(s.dtype));
  repeats_->setValue(s.repeats);
  cublas_->setChecked(s.library);
  ownDense_->setChecked(s.ownDense);
  cusparselt_->setChecked(s.cusparselt);
  layer_->setChecked(s.layer);
  forceCpu_->setChecked(s.forceCpu);
}

void BenchmarkPanel::beginRun(const QString& title) {
  running_ = true;
  model_->clear();
  charts_->clear();
  summary_->setText(QString());
  bar_->setValue(0);
  setStatus(title, false);
  updateButtons();
}

void BenchmarkPanel::addMeasurements(const QVector<BenchRowData>& rows, const QVector<BenchMeasurement>& points) {
  model_->appendRows(rows);
  charts_->addMeasurements(points);
}

void BenchmarkPanel::setSpeedups(const QVector<double>& perRow, const QString& baseline) {
  model_->setSpeedupBaseline(baseline);
  model_->setSpeedups(perRow);
}

void BenchmarkPanel::setSpeedupBars(const SpeedupBars& bars) { charts_->setSpeedupBars(bars); }

void BenchmarkPanel::setActivationSpeedups(const ActivationSpeedups& s) { charts_->setActivationSpeedups(s); }

void BenchmarkPanel::setSummary(const QString& text) { summary_->setText(text); }

void BenchmarkPanel::setProgress(double fraction, const QString& text) {
  bar_->setRange(0, fraction < 0 ? 0 : 1000);
  if (fraction >= 0) bar_->setValue(static_cast<int>(fraction * 1000));
  setStatus(text, false);
}

void BenchmarkPanel::endRun(const QString& message, bool isError) {
  running_ = false;
  bar_->setRange(0, 1000);
  bar_->setValue(isError ? 0 : bar_->value());
  setStatus(message, isError);
  updateButtons();
}

void BenchmarkPanel::showResult(const QString& title, const QVector<BenchRowData>& rows,
                                const QVector<BenchMeasurement>& points) {
  model_->clear();
  charts_->clear();
  charts_->addMeasurements(points);
  model_->appendRows(rows);
  setStatus(title, false);
  updateButtons();
}

QString BenchmarkPanel::deviceText() const { return deviceText_; }
QString BenchmarkPanel::summaryText() const { return summary_->text(); }
QString BenchmarkPanel::statusText() const { return statusText_; }

void BenchmarkPanel::setStatus(const QString& text, bool isError) {
  statusText_ = text;
  setLimitedText(status_, text, 3, textWidth_);
  status_->setStyleSheet(isError ? QStringLiteral("color: #c01c28;") : QString());
}

void BenchmarkPanel::chooseResults() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open benchmark results"), QString(),
                                                    tr("Benchmark results (*.json);;All files (*)"));
  if (!path.isEmpty()) Q_EMIT openResultsRequested(path);
}

void BenchmarkPanel::chooseExport() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export results"), QStringLiteral("bench.csv"),
                                                    tr("CSV table (*.csv);;Results JSON (*.json)"));
  if (!path.isEmpty()) Q_EMIT exportRequested(path);
}

void BenchmarkPanel::updateButtons() {
  start_->setEnabled(!running_);
  cancel_->setEnabled(running_);
  open_->setEnabled(!running_);
  export_->setEnabled(model_->rowCount() > 0 || !running_);
}

}  // namespace sdw::widgets
