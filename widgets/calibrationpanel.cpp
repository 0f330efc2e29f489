#include "widgets/calibrationpanel.h"

#include "widgets/layerprogressview.h"
#include "widgets/pathfield.h"
#include "widgets/plotview.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace sdw::widgets {

namespace {

QString bytesText(quint64 b) {
  const double v = static_cast<double>(b);
  if (v >= 1024.0 * 1024 * 1024) return QStringLiteral("%1 GiB").arg(v / (1024.0 * 1024 * 1024), 0, 'f', 2);
  if (v >= 1024.0 * 1024) return QStringLiteral("%1 MiB").arg(v / (1024.0 * 1024), 0, 'f', 1);
  if (v >= 1024.0) return QStringLiteral("%1 KiB").arg(v / 1024.0, 0, 'f', 1);
  return QStringLiteral("%1 B").arg(b);
}

QString tokensText(double t) { return QLocale(QLocale::English).toString(static_cast<qint64>(t)); }

void setComboData(QComboBox* box, const QString& value) {
  const int i = box->findData(value);
  if (i >= 0) box->setCurrentIndex(i);
}

}  // namespace

CalibrationPanel::CalibrationPanel(QWidget* parent) : QWidget(parent) {
  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(150);
  connect(debounce_, &QTimer::timeout, this, [this] { Q_EMIT settingsChanged(form()); });

  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(6, 6, 6, 6);
  auto* top = new QHBoxLayout;
  top->addWidget(buildSource(), 3);
  top->addWidget(buildBudget(), 2);
  outer->addLayout(top);
  outer->addWidget(buildRun(), 1);
  updateVisibility();
  updateButtons();
}

QLineEdit* CalibrationPanel::pathRow(QWidget* parent, QGridLayout* grid, int row, const QString& label, bool folder,
                                     const QString& name, const QString& filter) {
  const auto [edit, browse] = makePathField(parent, label, folder, filter, [this] { return outputDir_; });
  edit->setObjectName(name);
  auto* l = new QLabel(label, parent);
  grid->addWidget(l, row, 0);
  grid->addWidget(edit, row, 1);
  grid->addWidget(browse, row, 2);
  connect(edit, &QLineEdit::textChanged, this, &CalibrationPanel::changed);
  if (name == QLatin1String("corpus")) fixedOnly_ << l << edit << browse;
  if (name == QLatin1String("prompts")) arOnly_ << l << edit << browse;
  if (name == QLatin1String("crossModel")) crossOnly_ << l << edit << browse;
  return edit;
}

QWidget* CalibrationPanel::buildSource() {
  auto* box = new QGroupBox(tr("Model and source"), this);
  auto* g = new QGridLayout(box);
  g->setVerticalSpacing(3);
  model_ = pathRow(box, g, 0, tr("Model:"), true, QStringLiteral("model"), QString());
  model_->setToolTip(tr("The dense model whose projection inputs are collected (a Hugging Face folder)"));
  source_ = new QComboBox(box);
  source_->setObjectName(QStringLiteral("source"));
  source_->addItem(tr("Fixed text, teacher-forced (\"C4\")"), QStringLiteral("fixed"));
  source_->addItem(tr("AR decoding: the model's own tokens, decode positions only"), QStringLiteral("ar"));
  source_->addItem(tr("Cross-model: another model's generations, teacher-forced"), QStringLiteral("cross-model"));
  g->addWidget(new QLabel(tr("Source:"), box), 1, 0);
  g->addWidget(source_, 1, 1, 1, 2);
  corpus_ = pathRow(box, g, 2, tr("Corpus:"), false, QStringLiteral("corpus"),
                    tr("Text corpus (*.txt *.jsonl);;All files (*)"));
  prompts_ = pathRow(box, g, 3, tr("Prompts:"), false, QStringLiteral("prompts"),
                     tr("Prompts (*.jsonl);;All files (*)"));
  crossModel_ = pathRow(box, g, 4, tr("Generating model:"), true, QStringLiteral("crossModel"), QString());

  capture_ = new QComboBox(box);
  capture_->setObjectName(QStringLiteral("capture"));
  capture_->addItem(tr("fast re-forward (generate, then one teacher-forced pass)"), QStringLiteral("reforward"));
  capture_->addItem(tr("exact (observed during KV-cache decoding)"), QStringLiteral("exact"));
  prefill_ = new QCheckBox(tr("include prefill (ablation: prompt positions count too)"), box);
  prefill_->setObjectName(QStringLiteral("includePrefill"));
  auto* captureLabel = new QLabel(tr("Capture:"), box);
  g->addWidget(captureLabel, 5, 0);
  g->addWidget(capture_, 5, 1, 1, 2);
  g->addWidget(prefill_, 6, 1, 1, 2);
  arOnly_ << captureLabel << capture_ << prefill_;

  auto* sampling = new QHBoxLayout;
  temperature_ = new QDoubleSpinBox(box);
  temperature_->setObjectName(QStringLiteral("temperature"));
  temperature_->setRange(0, 5);
  temperature_->setSingleStep(0.1);
  temperature_->setSpecialValueText(tr("greedy"));
  temperature_->setValue(kDefaultDecoding.temperature);
  temperature_->setToolTip(tr("Default: the workbench's protocol, %1; %2. A checkpoint's generation_config.json is "
                              "not applied.")
                               .arg(QString::fromStdString(kDefaultDecoding.describe()),
                                    QString::fromUtf8(decodingProtocolReason())));
  topK_ = new QSpinBox(box);
  topK_->setObjectName(QStringLiteral("topK"));
  topK_->setRange(0, 100000);
  topK_->setSpecialValueText(tr("off"));
  topK_->setValue(kDefaultDecoding.topK);
  topP_ = new QDoubleSpinBox(box);
  topP_->setObjectName(QStringLiteral("topP"));
  topP_->setRange(0.01, 1.0);
  topP_->setSingleStep(0.05);
  topP_->setValue(kDefaultDecoding.topP);
  auto* samplingLabel = new QLabel(tr("Sampling:"), box);
  auto* tl = new QLabel(tr("temperature"), box);
  auto* kl = new QLabel(tr("top-k"), box);
  auto* pl = new QLabel(tr("top-p"), box);
  for (QWidget* w : {static_cast<QWidget*>(tl), static_cast<QWidget*>(temperature_), static_cast<QWidget*>(kl),
                     static_cast<QWidget*>(topK_), static_cast<QWidget*>(pl), static_cast<QWidget*>(topP_)})
    sampling->addWidget(w);
  sampling->addStretch(1);
  g->addWidget(samplingLabel, 7, 0);
  g->addLayout(sampling, 7, 1, 1, 2);
  // What the generations will decode, and what the checkpoint would have asked for.
  decoding_ = new QLabel(box);
  decoding_->setObjectName(QStringLiteral("decodingNote"));
  decoding_->setWordWrap(true);
  decoding_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  g->addWidget(decoding_, 8, 1, 1, 2);
  for (QWidget* w : {static_cast<QWidget*>(samplingLabel), static_cast<QWidget*>(tl),
                     static_cast<QWidget*>(temperature_), static_cast<QWidget*>(kl), static_cast<QWidget*>(topK_),
                     static_cast<QWidget*>(pl), static_cast<QWidget*>(topP_), static_cast<QWidget*>(decoding_)})
    arOnly_ << w;
  g->setColumnStretch(1, 1);
  g->setRowStretch(9, 1);

  connect(source_, &QComboBox::currentIndexChanged, this, [this] {
    updateVisibility();
    updateOutputName();
    changed();
  });
  connect(capture_, &QComboBox::currentIndexChanged, this, &CalibrationPanel::changed);
  connect(prefill_, &QCheckBox::toggled, this, &CalibrationPanel::changed);
  connect(temperature_, &QDoubleSpinBox::valueChanged, this, &CalibrationPanel::changed);
  connect(topK_, &QSpinBox::valueChanged, this, &CalibrationPanel::changed);
  connect(topP_, &QDoubleSpinBox::valueChanged, this, &CalibrationPanel::changed);
  return box;
}

QWidget* CalibrationPanel::buildBudget() {
  auto* box = new QGroupBox(tr("Budget, device and storage"), this);
  auto* g = new QGridLayout(box);
  g->setVerticalSpacing(3);
  auto spin = [&](int row, const QString& label, const QString& name, int lo, int hi, int value,
                  const QString& tip) {
    auto* s = new QSpinBox(box);
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setValue(value);
    s->setToolTip(tip);
    s->setGroupSeparatorShown(true);
    auto* l = new QLabel(label, box);
    g->addWidget(l, row, 0);
    g->addWidget(s, row, 1);
    connect(s, &QSpinBox::valueChanged, this, &CalibrationPanel::changed);
    return std::pair{l, s};
  };
  budget_ = spin(0, tr("Token budget:"), QStringLiteral("tokenBudget"), 1, 2000000000, 20000,
                 tr("Positions counted in all (fixed text: every position; AR: decode positions only)")).second;
  auto [wl, w] = spin(1, tr("Window:"), QStringLiteral("window"), 2, 1 << 20, 256, tr("Fixed text: tokens per window"));
  window_ = w;
  fixedOnly_ << wl << w;
  auto [ml, m] = spin(2, tr("Max new tokens:"), QStringLiteral("maxNewTokens"), 1, 1 << 20, 128,
                      tr("AR: tokens generated per prompt at most"));
  maxNew_ = m;
  arOnly_ << ml << m;
  batch_ = spin(3, tr("Batch:"), QStringLiteral("batch"), 1, 4096, 8, tr("Windows or prompts per forward pass")).second;
  seed_ = spin(4, tr("Seed:"), QStringLiteral("seed"), 0, 2147483647, 0, tr("Window draws; generation j samples with seed + j"))
              .second;
  seed_->setGroupSeparatorShown(false);

  device_ = new QComboBox(box);
  device_->setObjectName(QStringLiteral("device"));
  device_->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  device_->addItem(QStringLiteral("cuda"), QStringLiteral("cuda"));
  dtype_ = new QComboBox(box);
  dtype_->setObjectName(QStringLiteral("dtype"));
  for (const char* d : {"float32", "bfloat16", "float16"}) dtype_->addItem(QLatin1String(d), QLatin1String(d));
  auto* dev = new QHBoxLayout;
  dev->addWidget(device_);
  dev->addWidget(dtype_);
  g->addWidget(new QLabel(tr("Device:"), box), 5, 0);
  g->addLayout(dev, 5, 1);

  storage_ = new QComboBox(box);
  storage_->setObjectName(QStringLiteral("storage"));
  storage_->addItem(tr("full matrices (sum x x^T)"), QStringLiteral("full"));
  storage_->addItem(tr("top-k eigenpairs + diagonal"), QStringLiteral("topk"));
  storageK_ = new QSpinBox(box);
  storageK_->setObjectName(QStringLiteral("storageK"));
  storageK_->setRange(1, 65536);
  storageK_->setValue(64);
  storageK_->setPrefix(QStringLiteral("k = "));
  auto* st = new QHBoxLayout;
  st->addWidget(storage_, 1);
  st->addWidget(storageK_);
  g->addWidget(new QLabel(tr("Storage:"), box), 6, 0);
  g->addLayout(st, 6, 1);

  // Activation samples for the Analysis panel's Activations tab.
  const QString samplesTip =
      tr("Keeps N counted positions of every projection input for the Analysis panel's activation plots (one more "
         "pass over the positions at the end; about N x sum(d_in) x 4 bytes in the run file)");
  keepSamples_ = new QCheckBox(tr("Keep activation samples"), box);
  keepSamples_->setObjectName(QStringLiteral("keepActivationSamples"));
  keepSamples_->setToolTip(samplesTip);
  sampleRows_ = new QSpinBox(box);
  sampleRows_->setObjectName(QStringLiteral("calibrationSampleRows"));
  sampleRows_->setRange(0, 100000);
  sampleRows_->setValue(256);
  sampleRows_->setSuffix(tr(" rows"));
  sampleRows_->setGroupSeparatorShown(true);
  sampleRows_->setToolTip(samplesTip);
  sampleRows_->setEnabled(false);
  auto* samples = new QHBoxLayout;
  samples->addWidget(keepSamples_, 1);
  samples->addWidget(sampleRows_);
  auto* samplesLabel = new QLabel(tr("Samples:"), box);
  samplesLabel->setToolTip(samplesTip);
  g->addWidget(samplesLabel, 7, 0);
  g->addLayout(samples, 7, 1);
  g->setColumnStretch(1, 1);
  g->setRowStretch(8, 1);

  connect(device_, &QComboBox::currentIndexChanged, this, &CalibrationPanel::changed);
  connect(dtype_, &QComboBox::currentIndexChanged, this, &CalibrationPanel::changed);
  connect(storage_, &QComboBox::currentIndexChanged, this, [this] {
    storageK_->setEnabled(storage_->currentData().toString() == QLatin1String("topk"));
    changed();
  });
  connect(budget_, &QSpinBox::valueChanged, this, &CalibrationPanel::updateOutputName);
  storageK_->setEnabled(false);
  connect(storageK_, &QSpinBox::valueChanged, this, &CalibrationPanel::changed);
  connect(keepSamples_, &QCheckBox::toggled, this, [this](bool on) {
    sampleRows_->setEnabled(on);
    changed();
  });
  connect(sampleRows_, &QSpinBox::valueChanged, this, &CalibrationPanel::changed);
  return box;
}

QWidget* CalibrationPanel::buildRun() {
  auto* box = new QGroupBox(tr("Run"), this);
  auto* v = new QVBoxLayout(box);
  auto* out = new QHBoxLayout;
  output_ = new QLineEdit(box);
  output_->setObjectName(QStringLiteral("output"));
  output_->setToolTip(tr("The run file to write (.sdw.h5), in the workspace by default"));
  auto* browse = new QToolButton(box);
  browse->setText(QStringLiteral("…"));
  connect(browse, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Calibration run file"),
                                                      output_->text().isEmpty() ? outputDir_ : output_->text(),
                                                      tr("Run files (*.sdw.h5)"));
    if (!path.isEmpty()) output_->setText(path.endsWith(QLatin1String(".sdw.h5")) ? path : path + QStringLiteral(".sdw.h5"));
  });
  connect(output_, &QLineEdit::textEdited, this, [this] { outputEdited_ = true; });
  connect(output_, &QLineEdit::textChanged, this, [this] {
    if (!settingOutput_) outputEdited_ = true;
    changed();
  });
  out->addWidget(new QLabel(tr("Output run:"), box));
  out->addWidget(output_, 1);
  out->addWidget(browse);
  v->addLayout(out);

  estimate_ = new QLabel(tr("Estimate: —"), box);
  estimate_->setObjectName(QStringLiteral("estimate"));
  estimate_->setWordWrap(true);
  estimate_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  diskWarning_ = new QLabel(box);
  diskWarning_->setObjectName(QStringLiteral("diskWarning"));
  diskWarning_->setWordWrap(true);
  diskWarning_->setStyleSheet(QStringLiteral("color: #b00020; font-weight: 600;"));
  diskWarning_->hide();
  v->addWidget(estimate_);
  v->addWidget(diskWarning_);

  auto* buttons = new QHBoxLayout;
  start_ = new QPushButton(tr("Start"), box);
  start_->setObjectName(QStringLiteral("startCalibration"));
  cancel_ = new QPushButton(tr("Cancel"), box);
  cancel_->setObjectName(QStringLiteral("cancelCalibration"));
  cancel_->setToolTip(tr("Stop at the end of the current batch; the run is kept, marked incomplete, and can be "
                         "resumed"));
  resume_ = new QPushButton(tr("Resume"), box);
  resume_->setObjectName(QStringLiteral("resumeCalibration"));
  resume_->setToolTip(tr("Continue an incomplete calibration run to its budget"));
  resumePath_ = new QLineEdit(box);
  resumePath_->setObjectName(QStringLiteral("resumePath"));
  resumePath_->setPlaceholderText(tr("incomplete run to resume (select one in the workspace, or Resume asks)"));
  bar_ = new QProgressBar(box);
  bar_->setObjectName(QStringLiteral("calibrationProgress"));
  bar_->setRange(0, 1000);
  bar_->setValue(0);
  bar_->setFormat(QString());
  buttons->addWidget(start_);
  buttons->addWidget(cancel_);
  buttons->addSpacing(16);
  buttons->addWidget(resume_);
  buttons->addWidget(resumePath_, 1);
  v->addLayout(buttons);
  v->addWidget(bar_);
  status_ = new QLabel(box);
  status_->setObjectName(QStringLiteral("calibrationStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(status_);
  layers_ = new LayerProgressView(box);
  layers_->setToolTip(tr("The current pass over the decoder layers: capturing each layer's inputs during a "
                         "forward pass, then the eigendecomposition or write of each layer's statistics"));
  v->addWidget(layers_);

  chart_ = new PlotView(box);
  chart_->setObjectName(QStringLiteral("rateChart"));
  chart_->setMinimumHeight(150);
  QCustomPlot* p = chart_->plot();
  QCPGraph* g = p->addGraph();
  g->setName(tr("tokens/s"));
  g->setPen(QPen(QColor(0x1f, 0x77, 0xb4), 1.8));
  p->xAxis->setLabel(tr("elapsed (s)"));
  p->yAxis->setLabel(tr("tokens counted / s"));
  p->xAxis->setRange(0, 10);
  p->yAxis->setRange(0, 1);
  chartHint_ = new QCPItemText(p);
  chartHint_->position->setType(QCPItemPosition::ptAxisRectRatio);
  chartHint_->position->setCoords(0.5, 0.45);
  chartHint_->setText(tr("Tokens counted per second of the running calibration appear here."));
  chartHint_->setColor(QColor(120, 120, 120));
  chart_->enableHover([](const QString& name, int, double key, double value) {
    return QStringLiteral("%1 s: %2 %3").arg(key, 0, 'f', 1).arg(value, 0, 'f', 0).arg(name);
  });
  v->addWidget(chart_, 1);

  connect(start_, &QPushButton::clicked, this, [this] { Q_EMIT startRequested(form()); });
  connect(cancel_, &QPushButton::clicked, this, &CalibrationPanel::cancelRequested);
  connect(resume_, &QPushButton::clicked, this, [this] {
    if (resumePath_->text().trimmed().isEmpty()) chooseResume();
    if (!resumePath_->text().trimmed().isEmpty()) Q_EMIT resumeRequested(resumePath_->text().trimmed());
  });
  return box;
}

CalibrationForm CalibrationPanel::form() const {
  CalibrationForm f;
  f.model = model_->text().trimmed();
  f.source = source_->currentData().toString();
  f.corpus = corpus_->text().trimmed();
  f.prompts = prompts_->text().trimmed();
  f.crossModel = crossModel_->text().trimmed();
  f.tokenBudget = budget_->value();
  f.window = window_->value();
  f.maxNewTokens = maxNew_->value();
  f.batch = batch_->value();
  f.capture = capture_->currentData().toString();
  f.includePrefill = prefill_->isChecked();
  f.temperature = temperature_->value();
  f.topK = topK_->value();
  f.topP = topP_->value();
  f.seed = static_cast<quint64>(seed_->value());
  f.device = device_->currentData().toString();
  f.dtype = dtype_->currentData().toString();
  f.storage = storage_->currentData().toString();
  f.storageK = storageK_->value();
  f.sampleRows = keepSamples_->isChecked() ? sampleRows_->value() : 0;
  f.output = output_->text().trimmed();
  return f;
}

void CalibrationPanel::setForm(const CalibrationForm& f) {
  model_->setText(f.model);
  setComboData(source_, f.source);
  corpus_->setText(f.corpus);
  prompts_->setText(f.prompts);
  crossModel_->setText(f.crossModel);
  budget_->setValue(static_cast<int>(std::min<qint64>(f.tokenBudget, budget_->maximum())));
  window_->setValue(f.window);
  maxNew_->setValue(f.maxNewTokens);
  batch_->setValue(f.batch);
  setComboData(capture_, f.capture);
  prefill_->setChecked(f.includePrefill);
  temperature_->setValue(f.temperature);
  topK_->setValue(f.topK);
  topP_->setValue(f.topP);
  seed_->setValue(static_cast<int>(f.seed));
  setComboData(device_, f.device);
  setComboData(dtype_, f.dtype);
  setComboData(storage_, f.storage);
  storageK_->setValue(f.storageK);
  keepSamples_->setChecked(f.sampleRows > 0);
  if (f.sampleRows > 0) sampleRows_->setValue(f.sampleRows);
  if (!f.output.isEmpty()) {
    output_->setText(f.output);
    outputEdited_ = true;
  }
  updateVisibility();
  changed();
}

void CalibrationPanel::setSampleDefaults(const QString& model, const QString& corpus, const QString& prompts) {
  sampleModel_ = model;
  sampleCorpus_ = corpus;
  samplePrompts_ = prompts;
  if (model_->text().isEmpty()) model_->setText(model);
  if (corpus_->text().isEmpty()) corpus_->setText(corpus);
  if (prompts_->text().isEmpty()) prompts_->setText(prompts);
}

void CalibrationPanel::setModelDir(const QString& dir) {
  if (!running_ && !dir.isEmpty()) model_->setText(dir);
}

void CalibrationPanel::setOutputDir(const QString& dir) {
  outputDir_ = dir;
  if (!outputEdited_) updateOutputName();
}

void CalibrationPanel::updateOutputName() {
  if (outputEdited_ || outputDir_.isEmpty()) return;
  const QDir dir(outputDir_);
  const QString base = QStringLiteral("calib-%1-%2").arg(source_->currentData().toString()).arg(budget_->value());
  QString path = dir.filePath(base + QStringLiteral(".sdw.h5"));
  for (int n = 2; QFileInfo::exists(path) || QFileInfo::exists(path + QStringLiteral(".partial")); ++n)
    path = dir.filePath(QStringLiteral("%1-%2.sdw.h5").arg(base).arg(n));
  settingOutput_ = true;
  output_->setText(path);
  settingOutput_ = false;
}

void CalibrationPanel::setCudaAvailable(bool available, const QString& reason) {
  auto* m = qobject_cast<QStandardItemModel*>(device_->model());
  if (QStandardItem* item = m ? m->item(1) : nullptr) {
    item->setEnabled(available);
    item->setToolTip(available ? QString() : reason);
  }
  if (!available) device_->setCurrentIndex(0);
}

void CalibrationPanel::setEstimate(const CalibrationEstimateView& e) {
  estimateOk_ = e.valid;
  diskShort_ = e.valid && e.diskShort;
  QString decoding = e.decoding.isEmpty() ? QString() : tr("Decoding: %1").arg(e.decoding);
  if (!e.decodingNote.isEmpty()) decoding += QStringLiteral("\n") + tr("Note: %1").arg(e.decodingNote);
  decoding_->setText(decoding);
  if (!e.valid) {
    estimate_->setText(tr("Estimate: %1").arg(e.error.isEmpty() ? tr("—") : e.error));
    diskWarning_->hide();
    updateButtons();
    return;
  }
  QString text = tr("Estimate: %1 projection inputs; device memory %2 (accumulators %3, weights %4, buffers %5; "
                    "activations not counted); run file %6 (full %7, top-k %8)")
                     .arg(e.inputs)
                     .arg(bytesText(e.deviceBytes), bytesText(e.accumulatorBytes), bytesText(e.modelBytes),
                          bytesText(e.bufferBytes), bytesText(e.fileBytes), bytesText(e.fileBytesFull),
                          bytesText(e.fileBytesTopk));
  if (e.freeBytes > 0) text += tr("; %1 free on disk").arg(bytesText(e.freeBytes));
  estimate_->setText(text);
  if (diskShort_) {
    diskWarning_->setText(tr("Not enough disk space: the run file needs about %1 but only %2 is free. Choose "
                             "top-k storage, a smaller model, or another folder.")
                              .arg(bytesText(e.fileBytes), bytesText(e.freeBytes)));
    diskWarning_->show();
  } else {
    diskWarning_->hide();
  }
  updateButtons();
}

void CalibrationPanel::beginRun(const QString& what, qint64 budget) {
  running_ = true;
  bar_->setRange(0, 1000);
  bar_->setValue(0);
  bar_->setFormat(tr("0 / %1 tokens").arg(tokensText(static_cast<double>(budget))));
  QCPGraph* g = chart_->plot()->graph(0);
  g->data()->clear();
  chartHint_->setVisible(false);
  layers_->reset();
  chart_->plot()->xAxis->setRange(0, 10);
  chart_->plot()->yAxis->setRange(0, 1);
  chart_->requestReplot();
  setStatus(what, false);
  updateButtons();
}

void CalibrationPanel::setRunProgress(double done, double total, double rate, double elapsed, const QString& stage) {
  if (total > 0) {
    bar_->setRange(0, 1000);
    bar_->setValue(static_cast<int>(1000.0 * std::clamp(done / total, 0.0, 1.0)));
    bar_->setFormat(tr("%1 / %2 tokens").arg(tokensText(done), tokensText(total)));
  }
  if (rate > 0 && elapsed >= 0) {
    QCustomPlot* p = chart_->plot();
    QCPGraph* g = p->graph(0);
    g->addData(elapsed, rate);
    bool found = false;
    const QCPRange vr = g->getValueRange(found);
    p->xAxis->setRange(0, std::max(10.0, elapsed * 1.1));
    if (found) p->yAxis->setRange(0, std::max(1.0, vr.upper * 1.15));
    chart_->requestReplot();
  }
  if (!stage.isEmpty())
    status_->setText(tr("Running: %1, %2 tokens/s").arg(stage).arg(rate, 0, 'f', 0));
}

void CalibrationPanel::setLayerProgress(int done, int layers, const QString& label) {
  layers_->setProgress(done, layers, label);
}

void CalibrationPanel::endRun(const QString& message, Outcome outcome) {
  running_ = false;
  if (outcome == Outcome::Complete) {
    bar_->setValue(bar_->maximum());
    layers_->setAllDone();
  }
  setStatus(message, outcome == Outcome::Failed);
  if (outcome == Outcome::Incomplete)
    status_->setStyleSheet(QStringLiteral("color: #8a5a00; font-weight: 600;"));
  updateButtons();
}

void CalibrationPanel::setResumePath(const QString& path) { resumePath_->setText(path); }
QString CalibrationPanel::resumePath() const { return resumePath_->text().trimmed(); }
QString CalibrationPanel::statusText() const { return status_->text(); }
QString CalibrationPanel::estimateText() const { return estimate_->text(); }
QString CalibrationPanel::decodingText() const { return decoding_->isVisibleTo(this) ? decoding_->text() : QString(); }
bool CalibrationPanel::diskWarningShown() const { return !diskWarning_->isHidden(); }
int CalibrationPanel::rateSamples() const { return chart_->plot()->graph(0)->dataCount(); }

void CalibrationPanel::changed() {
  debounce_->start();
}

void CalibrationPanel::updateVisibility() {
  const QString s = source_->currentData().toString();
  const bool fixed = s == QLatin1String("fixed");
  const bool cross = s == QLatin1String("cross-model");
  for (QWidget* w : fixedOnly_) w->setVisible(fixed);
  for (QWidget* w : arOnly_) w->setVisible(!fixed);
  for (QWidget* w : crossOnly_) w->setVisible(cross);
}

void CalibrationPanel::updateButtons() {
  start_->setEnabled(!running_ && !diskShort_);
  cancel_->setEnabled(running_);
  resume_->setEnabled(!running_);
}

void CalibrationPanel::chooseResume() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Resume a calibration run"), outputDir_,
                                                    tr("Run files (*.sdw.h5 *.sdw.h5.partial);;All files (*)"));
  if (!path.isEmpty()) resumePath_->setText(path);
}

void CalibrationPanel::setStatus(const QString& text, bool isError) {
  status_->setText(text);
  status_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
}

}  // namespace sdw::widgets
