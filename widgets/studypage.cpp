#include "widgets/studypage.h"

#include "widgets/jobprogress.h"
#include "widgets/pathfield.h"
#include "widgets/sortabletable.h"
#include "widgets/studycellmodel.h"
#include "widgets/studychart.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace sdw::widgets {

namespace {

QString runFilter() { return QObject::tr("Run files (*.sdw.h5);;All files (*)"); }

QSpinBox* spin(QWidget* parent, const QString& name, int lo, int hi, int value, const QString& tip) {
  auto* s = new QSpinBox(parent);
  s->setObjectName(name);
  s->setRange(lo, hi);
  s->setValue(value);
  s->setToolTip(tip);
  s->setGroupSeparatorShown(true);
  return s;
}

QCheckBox* check(QWidget* parent, const QString& text, const QString& name, bool on, const QString& tip = {}) {
  auto* c = new QCheckBox(text, parent);
  c->setObjectName(name);
  c->setChecked(on);
  if (!tip.isEmpty()) c->setToolTip(tip);
  return c;
}

QLabel* bold(const QString& text, QWidget* parent) {
  auto* l = new QLabel(text, parent);
  l->setStyleSheet(QStringLiteral("font-weight: 600;"));
  return l;
}

}  // namespace

StudyPage::StudyPage(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("studyPage"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(4);
  layout->addWidget(buildForm());
  layout->addWidget(buildResults(), 1);
  clear(tr("No study open."));
  updateResumeTip();
  updateButtons();
}

// ---------------------------------------------------------------- form

QWidget* StudyPage::buildForm() {
  auto* box = new QGroupBox(tr("Run a study: fixed text vs AR over decodings, solvers, patterns and seeds"), this);
  auto* v = new QVBoxLayout(box);
  v->setContentsMargins(8, 4, 8, 4);
  v->setSpacing(3);

  auto* paths = new QHBoxLayout;
  auto pathField = [&](const QString& label, const QString& name, const QString& tip, bool folder,
                       const QString& filter) {
    const auto [edit, browse] = makePathField(box, label, folder, filter, [this] { return workspace_; });
    edit->setObjectName(name);
    edit->setToolTip(tip);
    edit->setMinimumWidth(110);
    browse->setToolTip(folder ? tr("Choose a checkpoint folder") : tr("Choose a file"));
    paths->addWidget(new QLabel(label, box));
    paths->addWidget(edit, 1);
    paths->addWidget(browse);
    paths->addSpacing(6);
    return edit;
  };
  model_ = pathField(tr("Model:"), QStringLiteral("studyModel"),
                     tr("The dense model calibrated, pruned and evaluated (Hugging Face checkpoint folder)"), true, {});
  crossModel_ =
      pathField(tr("Cross-model:"), QStringLiteral("studyCrossModel"),
                tr("Optional: a second model whose generations calibrate the first (source cross-model)"), true, {});
  out_ = pathField(tr("Output:"), QStringLiteral("studyOutput"),
                   tr("The study run file to write (*.sdw.h5); an existing one is replaced"), false,
                   tr("Run files (*.sdw.h5)"));
  v->addLayout(paths);

  auto* axes1 = new QHBoxLayout;
  axes1->setSpacing(6);
  fixed_ = check(box, tr("fixed text"), QStringLiteral("studyFixed"), true,
                 tr("Always a source: every comparison is against fixed text"));
  fixed_->setEnabled(false);
  ar_ = check(box, tr("AR"), QStringLiteral("studyAr"), true, tr("The model's own decoding"));
  cross_ = check(box, tr("cross-model"), QStringLiteral("studyCross"), false,
                 tr("The second model's decoding (needs the cross-model folder)"));
  greedy_ = check(box, tr("greedy"), QStringLiteral("studyGreedy"), true);
  sampled_ = check(box, tr("sampled"), QStringLiteral("studySampled"), true, tr("Sampling at temperature 1"));
  axes1->addWidget(bold(tr("Sources:"), box));
  for (QCheckBox* c : {fixed_, ar_, cross_}) axes1->addWidget(c);
  axes1->addSpacing(12);
  axes1->addWidget(bold(tr("Decodings:"), box));
  for (QCheckBox* c : {greedy_, sampled_}) axes1->addWidget(c);
  axes1->addSpacing(12);
  seeds_ = new QLineEdit(QStringLiteral("0,1,2"), box);
  seeds_->setObjectName(QStringLiteral("studySeeds"));
  seeds_->setToolTip(
      tr("Seeds, comma separated: the calibration draws, the sampling and the evaluation; the "
         "intervals are over them"));
  seeds_->setMaximumWidth(90);
  tokens_ = spin(box, QStringLiteral("studyTokens"), 1, 100000000, 20000,
                 tr("Calibration budget of every source, in tokens (decode tokens for AR)"));
  tokens_->setSingleStep(1000);
  axes1->addWidget(bold(tr("Seeds:"), box));
  axes1->addWidget(seeds_);
  axes1->addSpacing(8);
  axes1->addWidget(bold(tr("Tokens:"), box));
  axes1->addWidget(tokens_);
  axes1->addStretch(1);
  v->addLayout(axes1);

  auto* axes2 = new QHBoxLayout;
  axes2->setSpacing(6);
  sparsegpt_ = check(box, QStringLiteral("SparseGPT"), QStringLiteral("studySparseGpt"), true);
  wanda_ = check(box, QStringLiteral("Wanda"), QStringLiteral("studyWanda"), false);
  p24_ = check(box, QStringLiteral("2:4"), QStringLiteral("studyPattern24"), true);
  p48_ = check(box, QStringLiteral("4:8"), QStringLiteral("studyPattern48"), false);
  unstructured_ = check(box, tr("50% unstructured"), QStringLiteral("studyPatternUnstructured"), false);
  axes2->addWidget(bold(tr("Solvers:"), box));
  for (QCheckBox* c : {sparsegpt_, wanda_}) axes2->addWidget(c);
  axes2->addSpacing(12);
  axes2->addWidget(bold(tr("Patterns:"), box));
  for (QCheckBox* c : {p24_, p48_, unstructured_}) axes2->addWidget(c);
  axes2->addSpacing(12);
  device_ = new QComboBox(box);
  device_->setObjectName(QStringLiteral("studyDevice"));
  device_->addItems({QStringLiteral("cpu"), QStringLiteral("cuda")});
  device_->setToolTip(tr("cpu runs in float32, cuda in bfloat16"));
  axes2->addWidget(bold(tr("Device:"), box));
  axes2->addWidget(device_);
  axes2->addSpacing(8);
  moreToggle_ = new QToolButton(box);
  moreToggle_->setObjectName(QStringLiteral("studyMoreToggle"));
  moreToggle_->setText(tr("More settings"));
  moreToggle_->setCheckable(true);
  moreToggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  moreToggle_->setArrowType(Qt::RightArrow);
  moreToggle_->setAutoRaise(true);
  moreToggle_->setToolTip(tr("Reference and evaluation sizes, epsilon's k, and the text and prompt files"));
  axes2->addWidget(moreToggle_);
  axes2->addStretch(1);
  v->addLayout(axes2);

  v->addWidget(buildMore());

  auto* run = new QHBoxLayout;
  bar_ = new QProgressBar(box);
  bar_->setObjectName(QStringLiteral("studyProgress"));
  bar_->setTextVisible(true);
  bar_->setRange(0, 1000);
  bar_->setValue(0);
  bar_->setFormat(QString());
  start_ = new QPushButton(tr("Start"), box);
  start_->setObjectName(QStringLiteral("studyStart"));
  cancel_ = new QPushButton(tr("Cancel"), box);
  cancel_->setObjectName(QStringLiteral("studyCancel"));
  cancel_->setToolTip(
      tr("Stops after the step under way; the finished steps stay in the work folder and Start "
         "resumes from them"));
  run->addWidget(bar_, 1);
  run->addWidget(start_);
  run->addWidget(cancel_);
  v->addLayout(run);

  status_ = new QLabel(box);
  status_->setObjectName(QStringLiteral("studyStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(status_);

  connect(moreToggle_, &QToolButton::toggled, this, &StudyPage::setMoreSettingsVisible);
  connect(out_, &QLineEdit::textChanged, this, &StudyPage::updateResumeTip);
  // The cross-model source needs its model: choosing one offers (and ticks) the source.
  cross_->setEnabled(false);
  connect(crossModel_, &QLineEdit::textChanged, this, [this](const QString& text) {
    const bool have = !text.trimmed().isEmpty();
    if (have && !cross_->isEnabled()) cross_->setChecked(true);
    if (!have) cross_->setChecked(false);
    cross_->setEnabled(have);
  });
  connect(start_, &QPushButton::clicked, this, [this] { Q_EMIT startRequested(request()); });
  connect(cancel_, &QPushButton::clicked, this, &StudyPage::cancelRequested);
  return box;
}

QWidget* StudyPage::buildMore() {
  more_ = new QWidget(this);
  more_->setObjectName(QStringLiteral("studyMore"));
  auto* g = new QGridLayout(more_);
  g->setContentsMargins(0, 0, 0, 0);
  g->setHorizontalSpacing(6);
  g->setVerticalSpacing(3);
  referenceTokens_ = spin(more_, QStringLiteral("studyReferenceTokens"), 1, 100000000, 10000,
                          tr("Decode tokens of the held-out decode-time reference epsilon is measured against"));
  referenceTokens_->setSingleStep(1000);
  maxNewTokens_ = spin(more_, QStringLiteral("studyMaxNewTokens"), 1, 100000, 256,
                       tr("Generation length per prompt of AR calibration and of the reference"));
  epsilonK_ =
      spin(more_, QStringLiteral("studyEpsilonK"), 1, 100000, 64, tr("Top-k directions of the reference for epsilon"));
  evalMaxNewTokens_ = spin(more_, QStringLiteral("studyEvalMaxNewTokens"), 1, 100000, 64,
                           tr("Tokens decoded per held-out prompt in evaluation"));
  evalPrompts_ =
      spin(more_, QStringLiteral("studyEvalPrompts"), 0, 1000000, 0, tr("Evaluate on the first N held-out prompts"));
  evalPrompts_->setSpecialValueText(tr("all"));
  evalWindows_ =
      spin(more_, QStringLiteral("studyEvalWindows"), 1, 100000, 16, tr("Held-out text windows for perplexity"));
  const QVector<QPair<QString, QSpinBox*>> spins = {{tr("Reference tokens:"), referenceTokens_},
                                                    {tr("Generation:"), maxNewTokens_},
                                                    {tr("k:"), epsilonK_},
                                                    {tr("Eval tokens:"), evalMaxNewTokens_},
                                                    {tr("Eval prompts:"), evalPrompts_},
                                                    {tr("Eval windows:"), evalWindows_}};
  auto* row = new QHBoxLayout;
  row->setSpacing(4);
  for (const auto& [label, s] : spins) {
    row->addWidget(new QLabel(label, more_));
    row->addWidget(s);
    row->addSpacing(6);
  }
  row->addStretch(1);
  g->addLayout(row, 0, 0, 1, 6);
  auto pathField = [&](int r, int c, const QString& label, const QString& name, const QString& tip,
                       const QString& filter) {
    const auto [edit, browse] = makePathField(more_, label, false, filter, [this] { return workspace_; });
    edit->setObjectName(name);
    edit->setToolTip(tip);
    edit->setMinimumWidth(110);
    g->addWidget(new QLabel(label, more_), r, c);
    g->addWidget(edit, r, c + 1);
    g->addWidget(browse, r, c + 2);
    return edit;
  };
  const QString text = tr("Text (*.txt);;All files (*)");
  const QString jsonl = tr("Prompts (*.jsonl);;All files (*)");
  corpus_ = pathField(1, 0, tr("Corpus:"), QStringLiteral("studyCorpus"), tr("Fixed-text corpus"), text);
  prompts_ = pathField(1, 3, tr("Prompts:"), QStringLiteral("studyPrompts"),
                       tr("Calibration prompts of the AR and cross-model sources"), jsonl);
  heldoutPrompts_ = pathField(2, 0, tr("Held-out prompts:"), QStringLiteral("studyHeldoutPrompts"),
                              tr("Prompts of the decode-time reference and of the evaluation"), jsonl);
  heldoutText_ = pathField(2, 3, tr("Held-out text:"), QStringLiteral("studyHeldoutText"),
                           tr("Text of the evaluation's perplexity"), text);
  for (int c : {1, 4}) g->setColumnStretch(c, 1);
  more_->hide();
  return more_;
}

QWidget* StudyPage::buildResults() {
  stack_ = new QStackedWidget(this);
  empty_ = new QLabel(stack_);
  empty_->setObjectName(QStringLiteral("studyEmpty"));
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);
  empty_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* emptyBox = new QWidget(stack_);
  auto* el = new QVBoxLayout(emptyBox);
  auto* emptyOpen = new QPushButton(tr("Open a study…"), emptyBox);
  emptyOpen->setObjectName(QStringLiteral("studyOpenEmpty"));
  el->addStretch(1);
  el->addWidget(empty_);
  el->addWidget(emptyOpen, 0, Qt::AlignHCenter);
  el->addStretch(1);
  stack_->addWidget(emptyBox);

  auto* content = new QWidget(stack_);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->setSpacing(2);
  auto* head = new QHBoxLayout;
  title_ = new QLabel(content);
  title_->setObjectName(QStringLiteral("studyTitle"));
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  title_->setStyleSheet(QStringLiteral("color: #555;"));
  auto* open = new QPushButton(tr("Open…"), content);
  open->setObjectName(QStringLiteral("studyOpen"));
  open->setToolTip(tr("Open a study run file (sdw-cli study --out FILE writes one)"));
  exportTable_ = new QPushButton(tr("Export CSV…"), content);
  exportTable_->setObjectName(QStringLiteral("studyExportTable"));
  exportTable_->setToolTip(
      tr("Save the table of cells as CSV (mean, 95% interval and seeds of each figure); the "
         "charts export from their context menu"));
  head->addWidget(title_, 1);
  head->addWidget(open, 0, Qt::AlignTop);
  head->addWidget(exportTable_, 0, Qt::AlignTop);
  cl->addLayout(head);
  summary_ = new QLabel(content);
  summary_->setObjectName(QStringLiteral("studySummary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setStyleSheet(QStringLiteral("font-size: 11pt; font-weight: 600;"));
  cl->addWidget(summary_);

  kl_ = new StudyChart(tr("On-policy KL(dense || pruned), mean and 95% CI over seeds"), content);
  kl_->setObjectName(QStringLiteral("studyKlChart"));
  kl_->setMinimumSize(260, 150);
  eps_ = new StudyChart(tr("Epsilon: share of modules below fixed text"), content);
  eps_->setObjectName(QStringLiteral("studyEpsilonChart"));
  eps_->setMinimumSize(200, 150);
  auto* charts = new QSplitter(Qt::Horizontal, content);
  charts->setObjectName(QStringLiteral("studyCharts"));
  charts->addWidget(kl_);
  charts->addWidget(eps_);
  charts->setStretchFactor(0, 3);
  charts->setStretchFactor(1, 2);
  charts->setChildrenCollapsible(false);

  cells_ = new StudyCellModel(this);
  table_ = makeSortableTable(cells_, StudyCellModel::ValueRole, QStringLiteral("studyCells"), content, &proxy_);
  table_->horizontalHeader()->setStretchLastSection(false);
  table_->setMinimumHeight(70);
  table_->setContextMenuPolicy(Qt::ActionsContextMenu);
  auto* exportAction = new QAction(tr("Export CSV…"), table_);
  table_->addAction(exportAction);

  split_ = new QSplitter(Qt::Vertical, content);
  split_->setObjectName(QStringLiteral("studySplit"));
  split_->addWidget(charts);
  split_->addWidget(table_);
  split_->setStretchFactor(0, 1);
  split_->setStretchFactor(1, 0);
  split_->setChildrenCollapsible(false);
  cl->addWidget(split_, 1);
  connect(split_, &QSplitter::splitterMoved, this, [this] { userSplit_ = true; });
  stack_->addWidget(content);

  connect(open, &QPushButton::clicked, this, &StudyPage::chooseStudy);
  connect(emptyOpen, &QPushButton::clicked, this, &StudyPage::chooseStudy);
  connect(exportTable_, &QPushButton::clicked, this, &StudyPage::exportTableDialog);
  connect(exportAction, &QAction::triggered, this, &StudyPage::exportTableDialog);
  return stack_;
}

// ---------------------------------------------------------------- the study shown

void StudyPage::setData(const StudyData& data) {
  data_ = data;
  cells_->setCells(data.cells);
  kl_->setChart(data.klChart);
  eps_->setChart(data.epsilonChart);
  title_->setText(QStringLiteral("<b>%1</b> — %2")
                      .arg(QFileInfo(data.path).fileName().toHtmlEscaped(), data.settingsText.toHtmlEscaped()));
  title_->setToolTip(data.settingsTip);
  summary_->setText(data.summary);
  table_->resizeColumnsToContents();
  stack_->setCurrentIndex(1);
  sizeSplit();
  updateButtons();
}

void StudyPage::sizeSplit() {
  // The table as tall as its rows (a grid has few), up to 45% of the
  // height; the charts get the rest.
  if (userSplit_ || !split_->isVisible()) return;
  const int total = split_->height() - split_->handleWidth();
  const int rows = std::max(1, cells_->rowCount());
  const int need = table_->horizontalHeader()->sizeHint().height() +
                   rows * table_->verticalHeader()->defaultSectionSize() + 2 * table_->frameWidth() +
                   table_->horizontalScrollBar()->sizeHint().height();
  const int tableHeight =
      std::clamp(need, table_->minimumHeight(), std::max(table_->minimumHeight(), total * 45 / 100));
  split_->setSizes({total - tableHeight, tableHeight});
}

void StudyPage::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  // The layout has run when the event loop comes back.
  QTimer::singleShot(0, this, &StudyPage::sizeSplit);
}

void StudyPage::clear(const QString& message) {
  data_ = {};
  cells_->setCells({});
  kl_->setChart({});
  eps_->setChart({});
  empty_->setText(message);
  stack_->setCurrentIndex(0);
  updateButtons();
}

// ---------------------------------------------------------------- a new study

void StudyPage::setRequest(const StudyRequest& r) {
  model_->setText(r.model);
  crossModel_->setText(r.crossModel);
  out_->setText(r.out);
  ar_->setChecked(r.ar);
  cross_->setChecked(r.crossSource);
  greedy_->setChecked(r.decodings.contains(QStringLiteral("greedy")));
  sampled_->setChecked(r.decodings.contains(QStringLiteral("sampled")));
  sparsegpt_->setChecked(r.solvers.contains(QStringLiteral("sparsegpt")));
  wanda_->setChecked(r.solvers.contains(QStringLiteral("wanda")));
  p24_->setChecked(r.patterns.contains(QStringLiteral("2:4")));
  p48_->setChecked(r.patterns.contains(QStringLiteral("4:8")));
  unstructured_->setChecked(r.patterns.contains(QStringLiteral("unstructured50")));
  seeds_->setText(r.seeds);
  tokens_->setValue(static_cast<int>(std::min<qint64>(r.tokens, tokens_->maximum())));
  const int d = device_->findText(r.device);
  auto* m = qobject_cast<QStandardItemModel*>(device_->model());
  if (d >= 0 && (!m || !m->item(d) || m->item(d)->isEnabled())) device_->setCurrentIndex(d);
  referenceTokens_->setValue(static_cast<int>(std::min<qint64>(r.referenceTokens, referenceTokens_->maximum())));
  maxNewTokens_->setValue(r.maxNewTokens);
  epsilonK_->setValue(r.epsilonK);
  evalMaxNewTokens_->setValue(r.evalMaxNewTokens);
  evalPrompts_->setValue(r.evalPrompts);
  evalWindows_->setValue(r.evalWindows);
  corpus_->setText(r.corpus);
  prompts_->setText(r.prompts);
  heldoutPrompts_->setText(r.heldoutPrompts);
  heldoutText_->setText(r.heldoutText);
}

StudyRequest StudyPage::request() const {
  StudyRequest r;
  r.model = model_->text().trimmed();
  r.crossModel = crossModel_->text().trimmed();
  r.out = out_->text().trimmed();
  r.ar = ar_->isChecked();
  r.crossSource = cross_->isChecked();
  r.decodings.clear();
  if (greedy_->isChecked()) r.decodings << QStringLiteral("greedy");
  if (sampled_->isChecked()) r.decodings << QStringLiteral("sampled");
  r.solvers.clear();
  if (sparsegpt_->isChecked()) r.solvers << QStringLiteral("sparsegpt");
  if (wanda_->isChecked()) r.solvers << QStringLiteral("wanda");
  r.patterns.clear();
  if (p24_->isChecked()) r.patterns << QStringLiteral("2:4");
  if (p48_->isChecked()) r.patterns << QStringLiteral("4:8");
  if (unstructured_->isChecked()) r.patterns << QStringLiteral("unstructured50");
  r.seeds = seeds_->text().trimmed();
  r.tokens = tokens_->value();
  r.device = device_->currentText();
  r.referenceTokens = referenceTokens_->value();
  r.maxNewTokens = maxNewTokens_->value();
  r.epsilonK = epsilonK_->value();
  r.evalMaxNewTokens = evalMaxNewTokens_->value();
  r.evalPrompts = evalPrompts_->value();
  r.evalWindows = evalWindows_->value();
  r.corpus = corpus_->text().trimmed();
  r.prompts = prompts_->text().trimmed();
  r.heldoutPrompts = heldoutPrompts_->text().trimmed();
  r.heldoutText = heldoutText_->text().trimmed();
  return r;
}

void StudyPage::setModelDir(const QString& dir) { model_->setText(dir); }
void StudyPage::setOutput(const QString& path) { out_->setText(path); }
QString StudyPage::output() const { return out_->text().trimmed(); }

void StudyPage::setCudaAvailable(bool available, const QString& reason) {
  auto* m = qobject_cast<QStandardItemModel*>(device_->model());
  if (QStandardItem* item = m ? m->item(1) : nullptr) {
    item->setEnabled(available);
    item->setToolTip(available ? QString() : reason);
  }
  if (!available) device_->setCurrentIndex(0);
}

void StudyPage::setMoreSettingsVisible(bool on) {
  if (moreToggle_->isChecked() != on) moreToggle_->setChecked(on);  // comes back here through toggled
  moreToggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
  more_->setVisible(on);
}

void StudyPage::beginJob(const QString& what) {
  busy_ = true;
  showJobProgress(bar_, -1);
  bar_->setFormat(QString());
  setStatus(what, false);
  updateButtons();
}

void StudyPage::setProgress(double fraction, const QString& text) { showJobProgress(bar_, fraction, text); }

void StudyPage::endJob(const QString& message, bool isError) {
  busy_ = false;
  // The bar keeps the last step it reached: after a cancel it says how far
  // the grid got.
  if (bar_->maximum() == 0) {
    bar_->setRange(0, 1000);
    bar_->setValue(0);
  }
  setStatus(message, isError);
  updateButtons();
}

QString StudyPage::statusText() const { return status_->text(); }
QString StudyPage::progressText() const { return bar_->format(); }
QString StudyPage::summaryText() const { return summary_->text(); }
QString StudyPage::titleText() const { return title_->text(); }
QString StudyPage::emptyText() const { return empty_->text(); }

QString StudyPage::exportTable(const QString& path) const {
  QFile f(path);
  const QByteArray bytes = cells_->toCsv().toUtf8();
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text) || f.write(bytes) != bytes.size())
    return tr("Cannot write %1: %2").arg(path, f.errorString());
  return {};
}

void StudyPage::chooseStudy() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open a study"), workspace_, runFilter());
  if (!path.isEmpty()) Q_EMIT openRequested(path);
}

void StudyPage::exportTableDialog() {
  const QString stem =
      data_.path.isEmpty() ? QStringLiteral("study") : QFileInfo(data_.path).fileName().section(QLatin1Char('.'), 0, 0);
  const QString start =
      QDir(workspace_.isEmpty() ? QDir::homePath() : workspace_).filePath(stem + QStringLiteral("-cells.csv"));
  const QString path = QFileDialog::getSaveFileName(this, tr("Export the study's cells"), start, tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  if (const QString err = exportTable(path); !err.isEmpty()) {
    setStatus(err, true);
    QMessageBox::warning(this, tr("Export failed"), err);
  } else {
    setStatus(tr("Exported the cells to %1").arg(path), false);
  }
}

void StudyPage::setStatus(const QString& text, bool isError) {
  status_->setText(text);
  status_->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
}

void StudyPage::updateButtons() {
  start_->setEnabled(!busy_);
  cancel_->setEnabled(busy_);
  exportTable_->setEnabled(!data_.isEmpty());
}

void StudyPage::updateResumeTip() {
  const QString out = output();
  const QString work = out.isEmpty() ? tr("<output>.work") : out + QStringLiteral(".work");
  start_->setToolTip(tr("Runs the grid as a job. Its intermediate runs (calibrations, references, pruned "
                        "checkpoints, evaluations) go to the work folder %1; Start again with the same output "
                        "after a cancel resumes: finished steps are reused.")
                         .arg(work));
}

}  // namespace sdw::widgets
