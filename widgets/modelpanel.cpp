#include "widgets/modelpanel.h"

#include "core/decoding.h"
#include "widgets/activationselection.h"
#include "widgets/prunedata.h"  // activationSparsityText

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTextCharFormat>
#include <QTextCursor>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

namespace sdw::widgets {

namespace {
QString count(qint64 v) { return QLocale(QLocale::English).toString(v); }
QString countU(quint64 v) { return QLocale(QLocale::English).toString(static_cast<qulonglong>(v)); }
QString tokensText(int tokens, double perSecond) {
  return QStringLiteral("%1 %2 · %3 tokens/s")
      .arg(tokens)
      .arg(tokens == 1 ? QStringLiteral("token") : QStringLiteral("tokens"))
      .arg(perSecond, 0, 'f', 1);
}
QString bytesText(quint64 b) {
  return QStringLiteral("%1 (%2 bytes)").arg(ModuleTreeModel::formatBytes(b), countU(b));
}

// Summary rows, in two columns of label/value pairs.
const char* const kSummaryKeys[] = {
    "Architecture", "Layers",      "Hidden size",  "Intermediate size", "Attention heads", "KV heads",
    "Head dim",     "Vocabulary",  "Context length", "RoPE theta",      "RoPE scaling",    "Tied embeddings",
    "Parameters",   "Size fp32",   "Size bf16",    "Size fp16",         "As loaded",       "Tokenizer",
};
constexpr int kSummaryRows = 9;
}  // namespace

ModelPanel::ModelPanel(QWidget* parent) : QWidget(parent) {
  qRegisterMetaType<sdw::widgets::GenerateSettings>("sdw::widgets::GenerateSettings");
  setObjectName(QStringLiteral("modelPanel"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 8, 8, 8);
  layout->addWidget(buildCheckpointBox());

  auto* left = new QSplitter(Qt::Vertical, this);
  left->addWidget(buildSummaryBox());
  left->addWidget(buildModulesBox());
  left->setStretchFactor(0, 0);
  left->setStretchFactor(1, 1);
  left->setChildrenCollapsible(false);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(buildGenerateBox());
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  layout->addWidget(split, 1);
  updateButtons();
}

QWidget* ModelPanel::buildCheckpointBox() {
  auto* box = new QGroupBox(tr("Checkpoint"), this);
  auto* grid = new QGridLayout(box);
  dirEdit_ = new QLineEdit(box);
  dirEdit_->setObjectName(QStringLiteral("modelDir"));
  dirEdit_->setPlaceholderText(tr("A Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer.json)"));
  openButton_ = new QPushButton(tr("Open…"), box);
  openButton_->setObjectName(QStringLiteral("openModel"));
  sampleButton_ = new QPushButton(tr("Sample model"), box);
  sampleButton_->setObjectName(QStringLiteral("sampleModel"));
  sampleButton_->setToolTip(tr("Load the embedded sample model (brown-llama)"));

  device_ = new QComboBox(box);
  device_->setObjectName(QStringLiteral("device"));
  device_->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  device_->addItem(QStringLiteral("cuda"), QStringLiteral("cuda"));
  dtype_ = new QComboBox(box);
  dtype_->setObjectName(QStringLiteral("dtype"));
  for (const char* d : {"float32", "bfloat16", "float16"}) dtype_->addItem(QLatin1String(d), QLatin1String(d));
  dtype_->setToolTip(tr("Weights are converted to this type when loading. On the CPU, bfloat16 and float16 "
                        "weights are rounded to that type but computed in float32."));
  loadButton_ = new QPushButton(tr("Load"), box);
  loadButton_->setObjectName(QStringLiteral("loadModel"));
  loadBar_ = new QProgressBar(box);
  loadBar_->setRange(0, 1000);
  loadBar_->setTextVisible(true);
  loadBar_->setMaximumWidth(220);
  loadBar_->hide();
  status_ = new QLabel(tr("No model loaded."), box);
  status_->setObjectName(QStringLiteral("modelStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  grid->addWidget(new QLabel(tr("Folder"), box), 0, 0);
  grid->addWidget(dirEdit_, 0, 1, 1, 5);
  grid->addWidget(openButton_, 0, 6);
  grid->addWidget(sampleButton_, 0, 7);
  grid->addWidget(new QLabel(tr("Device"), box), 1, 0);
  grid->addWidget(device_, 1, 1);
  grid->addWidget(new QLabel(tr("DType"), box), 1, 2);
  grid->addWidget(dtype_, 1, 3);
  grid->addWidget(loadButton_, 1, 4);
  grid->addWidget(loadBar_, 1, 5);
  grid->addWidget(status_, 2, 0, 1, 8);
  grid->setColumnStretch(5, 1);

  connect(openButton_, &QPushButton::clicked, this, &ModelPanel::chooseFolder);
  connect(sampleButton_, &QPushButton::clicked, this, [this] {
    if (sampleDir_.isEmpty()) return;
    dirEdit_->setText(sampleDir_);
    requestLoad();
  });
  connect(loadButton_, &QPushButton::clicked, this, [this] {
    if (loading_) Q_EMIT cancelLoadRequested();
    else requestLoad();
  });
  connect(dirEdit_, &QLineEdit::returnPressed, this, &ModelPanel::requestLoad);
  return box;
}

QWidget* ModelPanel::buildSummaryBox() {
  auto* box = new QGroupBox(tr("Architecture"), this);
  auto* grid = new QGridLayout(box);
  grid->setHorizontalSpacing(12);
  grid->setVerticalSpacing(2);
  int i = 0;
  for (const char* key : kSummaryKeys) {
    const QString k = QLatin1String(key);
    auto* name = new QLabel(tr(key) + QLatin1Char(':'), box);
    // Quieter than the value, yet dark enough to read on a projector.
    name->setStyleSheet(QStringLiteral("color: #555;"));
    auto* value = new QLabel(QStringLiteral("–"), box);
    QString id = QStringLiteral("summary");  // "Hidden size" -> summaryHiddenSize
    for (const QString& word : k.split(QLatin1Char(' '))) id += word.left(1).toUpper() + word.mid(1);
    value->setObjectName(id);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    const int row = i % kSummaryRows;
    const int col = (i / kSummaryRows) * 2;
    grid->addWidget(name, row, col);
    grid->addWidget(value, row, col + 1);
    summaryLabels_.push_back({k, value});
    ++i;
  }
  grid->setColumnStretch(1, 1);
  grid->setColumnStretch(3, 1);
  return box;
}

QWidget* ModelPanel::buildModulesBox() {
  auto* box = new QGroupBox(tr("Modules"), this);
  auto* v = new QVBoxLayout(box);
  modules_ = new ModuleTreeModel(this);
  tree_ = new QTreeView(box);
  tree_->setObjectName(QStringLiteral("moduleTree"));
  tree_->setModel(modules_);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(ModuleTreeModel::Name, QHeaderView::Stretch);
  for (int c = ModuleTreeModel::Shape; c < ModuleTreeModel::ColumnCount; ++c)
    tree_->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  v->addWidget(tree_);
  return box;
}

QWidget* ModelPanel::buildGenerateBox() {
  auto* box = new QGroupBox(tr("Generate"), this);
  auto* v = new QVBoxLayout(box);
  prompt_ = new QPlainTextEdit(box);
  prompt_->setObjectName(QStringLiteral("prompt"));
  prompt_->setPlaceholderText(tr("Prompt"));
  prompt_->setPlainText(QStringLiteral("The jury said"));
  prompt_->setMaximumHeight(64);
  v->addWidget(prompt_);

  auto* grid = new QGridLayout();
  maxTokens_ = new QSpinBox(box);
  maxTokens_->setObjectName(QStringLiteral("maxNewTokens"));
  maxTokens_->setRange(1, 1 << 20);
  maxTokens_->setValue(64);
  temperature_ = new QDoubleSpinBox(box);
  temperature_->setObjectName(QStringLiteral("temperature"));
  temperature_->setRange(0.0, 5.0);
  temperature_->setSingleStep(0.1);
  temperature_->setDecimals(2);
  temperature_->setValue(kDefaultDecoding.temperature);  // the workbench's one protocol (core/decoding.h)
  temperature_->setSpecialValueText(tr("0 (greedy)"));
  topK_ = new QSpinBox(box);
  topK_->setObjectName(QStringLiteral("topK"));
  topK_->setRange(0, 1 << 20);
  topK_->setValue(kDefaultDecoding.topK);
  topK_->setSpecialValueText(tr("off"));
  topP_ = new QDoubleSpinBox(box);
  topP_->setObjectName(QStringLiteral("topP"));
  topP_->setRange(0.01, 1.0);
  topP_->setSingleStep(0.05);
  topP_->setDecimals(2);
  topP_->setValue(kDefaultDecoding.topP);
  seed_ = new QSpinBox(box);
  seed_->setObjectName(QStringLiteral("seed"));
  seed_->setRange(0, std::numeric_limits<int>::max());
  chat_ = new QComboBox(box);
  chat_->setObjectName(QStringLiteral("chatFormat"));
  chat_->addItem(tr("auto"), true);
  chat_->addItem(tr("plain"), false);
  chat_->setToolTip(tr("auto: wrap the prompt in the model's chat format (Qwen3, Llama-3 instruct) when it has "
                       "one; plain: the text as it is"));
  const QList<QPair<QString, QWidget*>> fields = {
      {tr("Max new tokens"), maxTokens_}, {tr("Temperature"), temperature_}, {tr("Top-k"), topK_},
      {tr("Top-p"), topP_},               {tr("Seed"), seed_},               {tr("Chat format"), chat_}};
  // Two pairs a row: three made the panel too wide to leave the workspace
  // beside it room at 1440 pixels.
  for (int i = 0; i < fields.size(); ++i) {
    grid->addWidget(new QLabel(fields[i].first, box), i / 2, (i % 2) * 2);
    grid->addWidget(fields[i].second, i / 2, (i % 2) * 2 + 1);
  }
  v->addLayout(grid);

  // How each projection runs while decoding. Another choice reloads the
  // model: the sparse engine keeps only the packed weights, so it is a
  // different model in memory, not a switch.
  auto* engineRow = new QHBoxLayout();
  engine_ = new QComboBox(box);
  engine_->setObjectName(QStringLiteral("engine"));
  engine_->addItem(tr("cuBLAS"), QStringLiteral("cublas"));
  engine_->addItem(tr("our dense GEMV"), QStringLiteral("dense"));
  engine_->addItem(tr("our bitmask SpMV"), QStringLiteral("sparse"));
  if (auto* m = qobject_cast<QStandardItemModel*>(engine_->model()))
    m->item(2)->setEnabled(false);  // until a folder with a model.sdwsparse is loaded
  engine_->setToolTip(
      tr("The decode engine's linear: cuBLAS, our dense GEMV, or our sparse kernels over the folder's "
         "packed file (the bitmask N:M SpMV over model.sdwsparse, the spMspV over model.sdwcolumn). "
         "Changing it reloads the model."));
  engineText_ = new QLabel(tr("no model loaded"), box);
  engineText_->setObjectName(QStringLiteral("engineDescription"));
  engineText_->setWordWrap(true);
  engineText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  engineText_->setStyleSheet(QStringLiteral("color: #555;"));
  auto* engineLabel = new QLabel(tr("Engine"), box);
  engineLabel->setBuddy(engine_);
  // Run-time activation sparsity: a load option, taken with the next load.
  activationSparsity_ = new QDoubleSpinBox(box);
  activationSparsity_->setObjectName(QStringLiteral("modelActivationSparsity"));
  activationSparsity_->setDecimals(2);
  activationSparsity_->setRange(0.0, 0.95);
  activationSparsity_->setSingleStep(0.05);
  activationSparsity_->setValue(0.0);
  activationSparsity_->setToolTip(tr("run-time activation sparsity: each projection input keeps its largest "
                                     "(1 - p_x) share per token, or with thresholds from a calibration run the "
                                     "entries above them; decoding then runs the eager forward pass"));
  auto* activationLabel = new QLabel(tr("Activation sparsity p_x"), box);
  activationLabel->setBuddy(activationSparsity_);
  activationLabel->setToolTip(activationSparsity_->toolTip());
  // Top-k per token or thresholds from a calibration run: a load option too.
  activationSelection_ = new ActivationSelection(QStringLiteral("model"), box);
  activationSelection_->setSparsity(activationSparsity_->value());
  engineRow->addWidget(engineLabel);
  engineRow->addWidget(engine_);
  engineRow->addSpacing(8);
  engineRow->addWidget(engineText_, 1);
  v->addLayout(engineRow);
  // Its own row: beside the engine's description it would widen the box.
  auto* activationRow = new QHBoxLayout();
  activationRow->addWidget(activationLabel);
  activationRow->addWidget(activationSparsity_);
  activationRow->addWidget(activationSelection_, 1);
  v->addLayout(activationRow);
  connect(engine_, &QComboBox::currentIndexChanged, this, &ModelPanel::engineChosen);
  connect(activationSparsity_, &QDoubleSpinBox::valueChanged, this, [this](double p) {
    activationSelection_->setSparsity(p);
    activationSparsityChanged();
  });
  connect(activationSelection_, &ActivationSelection::changed, this, &ModelPanel::activationSparsityChanged);

  auto* buttons = new QHBoxLayout();
  generateButton_ = new QPushButton(tr("Generate"), box);
  generateButton_->setObjectName(QStringLiteral("generate"));
  stopButton_ = new QPushButton(tr("Stop"), box);
  stopButton_->setObjectName(QStringLiteral("stop"));
  genStatus_ = new QLabel(box);
  genStatus_->setObjectName(QStringLiteral("generationStatus"));
  genStatus_->setWordWrap(true);
  buttons->addWidget(generateButton_);
  buttons->addWidget(stopButton_);
  buttons->addWidget(genStatus_, 1);
  v->addLayout(buttons);

  output_ = new QPlainTextEdit(box);
  output_->setObjectName(QStringLiteral("output"));
  output_->setReadOnly(true);
  output_->setPlaceholderText(tr("Generated text appears here as it is produced."));
  v->addWidget(output_, 1);

  connect(generateButton_, &QPushButton::clicked, this, [this] {
    if (haveModel_ && summary_.canGenerate && !generating_) Q_EMIT generateRequested(generateSettings());
  });
  connect(stopButton_, &QPushButton::clicked, this, [this] {
    if (generating_) Q_EMIT stopRequested();
  });
  return box;
}

void ModelPanel::setSampleDir(const QString& dir) {
  sampleDir_ = dir;
  sampleButton_->setToolTip(tr("Load the embedded sample model: %1").arg(dir));
  updateButtons();
}

void ModelPanel::setCudaAvailable(bool available, const QString& reason) {
  auto* m = qobject_cast<QStandardItemModel*>(device_->model());
  if (QStandardItem* item = m ? m->item(1) : nullptr) {
    item->setEnabled(available);
    item->setToolTip(available ? QString() : tr("CUDA is not available: %1").arg(reason));
  }
  device_->setToolTip(available ? tr("Where the weights live and the forward pass runs")
                                : tr("CUDA is not available: %1").arg(reason));
  if (!available && device_->currentIndex() == 1) device_->setCurrentIndex(0);
}

bool ModelPanel::cudaSelectable() const {
  const auto* m = qobject_cast<const QStandardItemModel*>(device_->model());
  const QStandardItem* item = m ? m->item(1) : nullptr;
  return item && item->isEnabled();
}

QString ModelPanel::cudaToolTip() const {
  const auto* m = qobject_cast<const QStandardItemModel*>(device_->model());
  const QStandardItem* item = m ? m->item(1) : nullptr;
  return item ? item->toolTip() : QString();
}

void ModelPanel::setDevice(const QString& device) {
  const int i = device_->findData(device.startsWith(QLatin1String("cuda")) ? QStringLiteral("cuda") : device);
  if (i >= 0 && (i != 1 || cudaSelectable())) device_->setCurrentIndex(i);
}

void ModelPanel::setDtype(const QString& dtype) {
  const int i = dtype_->findData(dtype);
  if (i >= 0) dtype_->setCurrentIndex(i);
}

void ModelPanel::setModelDir(const QString& dir) { dirEdit_->setText(dir); }

void ModelPanel::chooseFolder() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open checkpoint folder"), dirEdit_->text());
  if (dir.isEmpty()) return;
  dirEdit_->setText(dir);
  requestLoad();
}

void ModelPanel::requestLoad() {
  const QString dir = dirEdit_->text().trimmed();
  if (dir.isEmpty()) {
    setStatus(tr("Choose a checkpoint folder first."), true);
    return;
  }
  Q_EMIT loadRequested(dir, device_->currentData().toString(), dtype_->currentData().toString(), engineChoice(),
                       activationSparsity(), activationThresholdsRun());
}

void ModelPanel::engineChosen() {
  // The loaded model again, with the new linear (and the device, dtype and
  // activation sparsity the controls show, as Load would).
  if (!haveModel_ || loading_ || engineChoice() == summary_.linear) return;
  Q_EMIT loadRequested(summary_.dir, device_->currentData().toString(), dtype_->currentData().toString(),
                       engineChoice(), activationSparsity(), activationThresholdsRun());
}

void ModelPanel::activationSparsityChanged() {
  // Like the dtype, p_x and its thresholds are fixed when the model loads:
  // say what a reload would change (and take it back when the values return
  // to the loaded ones).
  if (!haveModel_ || loading_) return;
  const bool sameP = qFuzzyCompare(1.0 + activationSparsity(), 1.0 + summary_.activationSparsity);
  if (sameP && activationThresholdsRun() == summary_.activationThresholds)
    setStatus(tr("Loaded %1 (%2, %3).").arg(summary_.dir, summary_.device, summary_.dtype), false);
  else
    setStatus(tr("Activation sparsity %1 applies when the model is loaded again: press Load to reload %2.")
                  .arg(activationSparsityText(activationSparsity(), activationThresholdsRun()), summary_.dir),
              false);
}

double ModelPanel::activationSparsity() const { return activationSparsity_->value(); }

void ModelPanel::setActivationSparsity(double p) { activationSparsity_->setValue(p); }

QString ModelPanel::activationThresholdsRun() const { return activationSelection_->thresholdsRun(); }

void ModelPanel::setActivationThresholdsRun(const QString& run) { activationSelection_->setThresholdsRun(run); }

void ModelPanel::setCalibrationRuns(const QVector<RunChoice>& runs) { activationSelection_->setRuns(runs); }

QString ModelPanel::engineChoice() const { return engine_->currentData().toString(); }

void ModelPanel::setEngineChoice(const QString& linear) {
  const int i = engine_->findData(linear);
  if (i >= 0 && (i != 2 || sparseSelectable())) engine_->setCurrentIndex(i);
}

bool ModelPanel::sparseSelectable() const {
  const auto* m = qobject_cast<const QStandardItemModel*>(engine_->model());
  const QStandardItem* item = m ? m->item(2) : nullptr;
  return item && item->isEnabled();
}

QString ModelPanel::engineDescription() const { return engineText_->text(); }

void ModelPanel::beginLoading(const QString& dir) {
  loading_ = true;
  dirEdit_->setText(dir);
  loadBar_->setRange(0, 0);
  loadBar_->show();
  setStatus(tr("Loading %1…").arg(dir), false);
  updateButtons();
}

void ModelPanel::setLoadProgress(double fraction, const QString& text) {
  if (!loading_) return;
  if (fraction < 0) {
    loadBar_->setRange(0, 0);
  } else {
    loadBar_->setRange(0, 1000);
    loadBar_->setValue(static_cast<int>(fraction * 1000.0 + 0.5));
  }
  loadBar_->setFormat(text.isEmpty() ? QStringLiteral("%p%") : text);
}

void ModelPanel::setModel(const ModelSummary& s, const QVector<ModuleRow>& modules) {
  loading_ = false;
  loadBar_->hide();
  summary_ = s;
  haveModel_ = true;
  dirEdit_->setText(s.dir);
  setDevice(s.device);
  setDtype(s.dtype);
  {
    const QSignalBlocker b1(activationSparsity_), b2(activationSelection_);
    activationSparsity_->setValue(s.activationSparsity);
    activationSelection_->setSparsity(s.activationSparsity);
    // The selection as loaded; top-k leaves the run picked for thresholds as it is.
    if (!s.activationThresholds.isEmpty()) activationSelection_->setThresholdsRun(s.activationThresholds);
    else if (activationSelection_->thresholdsChosen() && s.activationSparsity > 0)
      activationSelection_->setThresholdsRun(QString());
  }
  // The features are a sentence: in the grid they would push the other columns out of view.
  setSummaryValue(QStringLiteral("Architecture"), s.architecture,
                  s.features.isEmpty() ? QString() : s.architecture + QLatin1Char('\n') + s.features);
  setSummaryValue(QStringLiteral("Layers"), count(s.layers));
  setSummaryValue(QStringLiteral("Hidden size"), count(s.hiddenSize));
  setSummaryValue(QStringLiteral("Intermediate size"), count(s.intermediateSize));
  setSummaryValue(QStringLiteral("Attention heads"), count(s.heads));
  setSummaryValue(QStringLiteral("KV heads"),
                  s.kvHeads == s.heads ? count(s.kvHeads)
                                       : tr("%1 (GQA, %2 q per kv)")
                                             .arg(count(s.kvHeads))
                                             .arg(s.kvHeads > 0 ? s.heads / s.kvHeads : 0));
  setSummaryValue(QStringLiteral("Head dim"), count(s.headDim));
  setSummaryValue(QStringLiteral("Vocabulary"), count(s.vocabSize));
  setSummaryValue(QStringLiteral("Context length"), count(s.contextLength));
  setSummaryValue(QStringLiteral("RoPE theta"), QLocale(QLocale::English).toString(s.ropeTheta, 'g', 10));
  setSummaryValue(QStringLiteral("RoPE scaling"), s.ropeScaling);
  setSummaryValue(QStringLiteral("Tied embeddings"), s.tiedEmbeddings ? tr("yes") : tr("no"));
  setSummaryValue(QStringLiteral("Parameters"), countU(s.parameters));
  setSummaryValue(QStringLiteral("Size fp32"), bytesText(s.bytesFp32));
  setSummaryValue(QStringLiteral("Size bf16"), bytesText(s.bytesBf16));
  setSummaryValue(QStringLiteral("Size fp16"), bytesText(s.bytesFp16));
  QString asLoaded = tr("%1, %2 on %3").arg(ModuleTreeModel::formatBytes(s.bytesLoaded), s.dtype, s.device);
  // With thresholds the value only says so (the run's name would widen the grid): the tool tip names it.
  if (s.activationSparsity > 0)
    asLoaded += QStringLiteral(", ") + activationSparsityText(s.activationSparsity) +
                (s.activationThresholds.isEmpty() ? QString() : tr(" thresholds"));
  setSummaryValue(QStringLiteral("As loaded"), asLoaded,
                  s.activationThresholds.isEmpty()
                      ? QString()
                      : tr("%1\nactivation sparsity %2 from %3 (run %4)")
                            .arg(asLoaded, activationSparsityText(s.activationSparsity, s.activationThresholds),
                                 s.activationThresholds, s.activationThresholdsRunId));
  setSummaryValue(QStringLiteral("Tokenizer"), s.tokenizer);
  // The engine as loaded; sparse only where the folder has its packed file.
  if (auto* m = qobject_cast<QStandardItemModel*>(engine_->model()); QStandardItem* item = m ? m->item(2) : nullptr) {
    item->setEnabled(s.hasSparseFile);
    item->setToolTip(s.hasSparseFile ? tr("our bitmask N:M SpMV over %1/model.sdwsparse, or our spMspV over its "
                                          "model.sdwcolumn (col2:4, col4:8)")
                                           .arg(s.dir)
                                     : tr("this folder has no model.sdwsparse or model.sdwcolumn (sdw-cli prune "
                                          "writes one for 50% N:M, col2:4 and col4:8)"));
  }
  {
    const QSignalBlocker block(engine_);
    if (const int i = engine_->findData(s.linear.isEmpty() ? QStringLiteral("cublas") : s.linear); i >= 0)
      engine_->setCurrentIndex(i);
  }
  engineText_->setText(s.engine.isEmpty() ? tr("engine unknown") : s.engine);
  engineText_->setToolTip(s.activationThresholds.isEmpty()
                              ? engineText_->text()
                              : tr("%1\nactivation thresholds at p_x %2 from %3 (run %4)")
                                    .arg(engineText_->text())
                                    .arg(s.activationSparsity, 0, 'f', 2)
                                    .arg(s.activationThresholds, s.activationThresholdsRunId));
  modules_->setRows(modules);
  tree_->collapseAll();
  if (modules_->rowCount() > 1) tree_->expand(modules_->index(1, 0));  // the first layer shows the pattern
  setStatus(tr("Loaded %1 (%2, %3).").arg(s.dir, s.device, s.dtype), false);
  updateButtons();
}

void ModelPanel::endLoading(const QString& message, bool isError) {
  loading_ = false;
  loadBar_->hide();
  if (haveModel_) {
    // The model on display keeps its engine: the choice shows it again.
    const QSignalBlocker block(engine_);
    if (const int i = engine_->findData(summary_.linear); i >= 0) engine_->setCurrentIndex(i);
  }
  setStatus(message, isError);
  updateButtons();
}

void ModelPanel::beginGeneration(const QString& promptText) {
  generating_ = true;
  generated_.clear();
  tokens_ = 0;
  rate_ = 0;
  output_->clear();
  QTextCursor c(output_->document());
  QTextCharFormat promptFormat;
  promptFormat.setForeground(palette().color(QPalette::Disabled, QPalette::Text));
  c.insertText(promptText, promptFormat);
  // The model generating, whatever loads meanwhile: its p_x goes on the status line.
  genSparsity_ = haveModel_ && summary_.activationSparsity > 0
                     ? activationSparsityText(summary_.activationSparsity, summary_.activationThresholds)
                     : QString();
  genStatus_->setText(tr("prefill…"));
  genStatus_->setStyleSheet(QString());
  updateButtons();
}

void ModelPanel::appendText(const QString& chunk, int tokens, double tokensPerSecond) {
  tokens_ = tokens;
  rate_ = tokensPerSecond;
  if (!chunk.isEmpty()) {
    generated_ += chunk;
    QScrollBar* bar = output_->verticalScrollBar();
    const bool atEnd = bar->value() == bar->maximum();
    QTextCursor c(output_->document());
    c.movePosition(QTextCursor::End);
    c.insertText(chunk, QTextCharFormat());
    if (atEnd) bar->setValue(bar->maximum());
  }
  genStatus_->setText(tokensText(tokens, tokensPerSecond));
}

void ModelPanel::endGeneration(const QString& outcome, bool isError) {
  generating_ = false;
  QString stats = tokensText(tokens_, rate_);
  if (!outcome.isEmpty()) stats += QStringLiteral(" · ") + outcome;
  if (!genSparsity_.isEmpty()) stats += QStringLiteral(" · ") + genSparsity_;
  genStatus_->setText(isError ? outcome : stats);
  genStatus_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
  genStatus_->setToolTip(genStatus_->text());
  updateButtons();
}

GenerateSettings ModelPanel::generateSettings() const {
  GenerateSettings s;
  s.prompt = prompt_->toPlainText();
  s.maxNewTokens = maxTokens_->value();
  s.temperature = temperature_->value();
  s.topK = topK_->value();
  s.topP = topP_->value();
  s.seed = static_cast<quint64>(seed_->value());
  s.chatFormat = chat_->currentData().toBool();
  return s;
}

void ModelPanel::setGenerateSettings(const GenerateSettings& s) {
  prompt_->setPlainText(s.prompt);
  maxTokens_->setValue(s.maxNewTokens);
  temperature_->setValue(s.temperature);
  topK_->setValue(s.topK);
  topP_->setValue(s.topP);
  seed_->setValue(static_cast<int>(std::min<quint64>(s.seed, std::numeric_limits<int>::max())));
  chat_->setCurrentIndex(s.chatFormat ? 0 : 1);
}

QString ModelPanel::summaryValue(const QString& key) const {
  for (const auto& [k, label] : summaryLabels_)
    if (k == key) return label->text();
  return {};
}

QString ModelPanel::statusText() const { return status_->text(); }
QString ModelPanel::generationStatusText() const { return genStatus_->text(); }

void ModelPanel::setSummaryValue(const QString& key, const QString& value, const QString& tip) {
  for (auto& [k, label] : summaryLabels_)
    if (k == key) {
      label->setText(value);
      label->setToolTip(tip.isEmpty() ? value : tip);  // long values (tokenizer, sizes) may be cut off
    }
}

void ModelPanel::setStatus(const QString& text, bool isError) {
  status_->setText(text);
  status_->setToolTip(text);
  status_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
}

void ModelPanel::updateButtons() {
  loadButton_->setText(loading_ ? tr("Cancel") : tr("Load"));
  loadButton_->setToolTip(loading_ ? tr("Cancel loading; the current model stays") : QString());
  sampleButton_->setEnabled(!loading_ && !sampleDir_.isEmpty());
  openButton_->setEnabled(!loading_);
  const bool canGenerate = haveModel_ && summary_.canGenerate;
  generateButton_->setEnabled(canGenerate && !generating_);
  generateButton_->setToolTip(!haveModel_            ? tr("Load a model first")
                              : !summary_.canGenerate ? tr("This checkpoint has no tokenizer.json")
                                                      : QString());
  stopButton_->setEnabled(generating_);
  engine_->setEnabled(!loading_);
}

}  // namespace sdw::widgets
