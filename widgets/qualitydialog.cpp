#include "widgets/qualitydialog.h"

#include "widgets/activationselection.h"
#include "widgets/pathfield.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

namespace sdw::widgets {

QList<quint64> EvaluateForm::seedList() const {
  QList<quint64> out;
  for (const QString& part : seeds.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    bool ok = false;
    const quint64 v = part.trimmed().toULongLong(&ok);
    if (!ok) return {};
    out << v;
  }
  return out;
}

EvaluateDialog::EvaluateDialog(const EvaluateForm& form, const QStringList& candidates, bool cudaAvailable,
                               QWidget* parent)
    : QDialog(parent), base_(form) {
  setWindowTitle(tr("Evaluate pruned models"));
  auto* layout = new QVBoxLayout(this);
  auto* f = new QFormLayout;
  const auto pathEdit = [this](const QString& value, bool folder, const QString& title) {
    auto* row = new QHBoxLayout;
    const auto [edit, browse] = makePathField(this, title, folder);
    edit->setText(value);
    row->addWidget(edit, 1);
    row->addWidget(browse);
    return std::pair{edit, row};
  };
  auto [dense, denseRow] = pathEdit(form.dense, true, tr("Dense model"));
  dense_ = dense;
  dense_->setObjectName(QStringLiteral("evalDense"));
  f->addRow(tr("Dense model:"), denseRow);

  models_ = new QListWidget(this);
  models_->setObjectName(QStringLiteral("evalModels"));
  models_->setMinimumHeight(90);
  for (const QString& c : candidates) addFolder(c, form.models.contains(c));
  for (const QString& m : form.models)
    if (!candidates.contains(m)) addFolder(m, true);
  auto* add = new QPushButton(tr("Add folder…"), this);
  connect(add, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, tr("Pruned checkpoint folder"));
    if (!d.isEmpty()) addFolder(d, true);
  });
  auto* modelsBox = new QVBoxLayout;
  modelsBox->addWidget(models_);
  modelsBox->addWidget(add, 0, Qt::AlignLeft);
  f->addRow(tr("Pruned models:"), modelsBox);

  auto [text, textRow] = pathEdit(form.text, false, tr("Held-out text"));
  text_ = text;
  f->addRow(tr("Held-out text:"), textRow);
  auto [prompts, promptsRow] = pathEdit(form.prompts, false, tr("Held-out prompts"));
  prompts_ = prompts;
  f->addRow(tr("Held-out prompts:"), promptsRow);

  seeds_ = new QLineEdit(form.seeds, this);
  seeds_->setObjectName(QStringLiteral("evalSeeds"));
  seeds_->setToolTip(tr("Comma-separated seeds of the on-policy trajectories"));
  f->addRow(tr("Seeds:"), seeds_);
  const auto spin = [this, f](const QString& label, int lo, int hi, int value, const QString& special = {}) {
    auto* s = new QSpinBox(this);
    s->setRange(lo, hi);
    s->setValue(value);
    if (!special.isEmpty()) s->setSpecialValueText(special);
    f->addRow(label, s);
    return s;
  };
  maxNew_ = spin(tr("Max new tokens:"), 1, 4096, form.maxNewTokens);
  maxPrompts_ = spin(tr("Prompts:"), 0, 100000, form.maxPrompts, tr("all"));
  windows_ = spin(tr("Text windows:"), 1, 100000, form.windows);
  window_ = spin(tr("Window (tokens):"), 2, 1 << 16, form.window);
  sideBySide_ = spin(tr("Side-by-side prompts:"), 0, 1000, form.sideBySide);
  temperature_ = new QDoubleSpinBox(this);
  temperature_->setObjectName(QStringLiteral("evalTemperature"));
  temperature_->setRange(0.0, 5.0);
  temperature_->setSingleStep(0.1);
  temperature_->setDecimals(2);
  temperature_->setValue(form.temperature);
  temperature_->setSpecialValueText(tr("0 (greedy)"));
  temperature_->setToolTip(tr("Decoding of the on-policy trajectories and of the dense generations; greedy "
                              "makes every seed give the same trajectories. Default: the workbench's protocol, %1, "
                              "as AR calibration and drift decode; a checkpoint's generation_config.json is not "
                              "applied.")
                               .arg(QString::fromStdString(kDefaultDecoding.describe())));
  topK_ = new QSpinBox(this);
  topK_->setObjectName(QStringLiteral("evalTopK"));
  topK_->setRange(0, 1 << 20);
  topK_->setSpecialValueText(tr("off"));
  topK_->setValue(form.topK);
  topP_ = new QDoubleSpinBox(this);
  topP_->setObjectName(QStringLiteral("evalTopP"));
  topP_->setRange(0.01, 1.0);
  topP_->setSingleStep(0.05);
  topP_->setDecimals(2);
  topP_->setValue(form.topP);
  auto* decoding = new QHBoxLayout;
  decoding->addWidget(temperature_);
  decoding->addWidget(new QLabel(tr("top-k"), this));
  decoding->addWidget(topK_);
  decoding->addWidget(new QLabel(tr("top-p"), this));
  decoding->addWidget(topP_);
  decoding->addStretch(1);
  f->addRow(tr("Temperature:"), decoding);
  activationSparsity_ = new QDoubleSpinBox(this);
  activationSparsity_->setObjectName(QStringLiteral("qualityActivationSparsity"));
  activationSparsity_->setRange(0.0, 0.95);
  activationSparsity_->setSingleStep(0.05);
  activationSparsity_->setDecimals(2);
  activationSparsity_->setValue(form.activationSparsity);
  activationSparsity_->setSpecialValueText(tr("0 (dense inputs)"));
  activationSparsity_->setToolTip(
      tr("Run every compared model with run-time activation sparsity p_x (each projection "
         "input keeps its largest (1 - p_x) share per token, or with thresholds from a calibration run the "
         "entries above them); the dense reference stays dense. SparseGPT, Wanda and DuoGPT models are then "
         "compared under the same p_x."));
  activationSelection_ = new ActivationSelection(QStringLiteral("quality"), this);
  activationSelection_->setSparsity(form.activationSparsity);
  activationSelection_->setThresholdsRun(form.activationThresholds);
  connect(activationSparsity_, &QDoubleSpinBox::valueChanged, activationSelection_,
          &ActivationSelection::setSparsity);
  auto* activation = new QHBoxLayout;
  activation->addWidget(activationSparsity_);
  activation->addWidget(activationSelection_, 1);
  f->addRow(tr("Activation sparsity p_x:"), activation);
  device_ = new QComboBox(this);
  device_->addItem(QStringLiteral("cpu"));
  if (cudaAvailable) device_->addItem(QStringLiteral("cuda"));
  device_->setCurrentText(form.device);
  f->addRow(tr("Device:"), device_);
  layout->addLayout(f);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Evaluate"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(620, sizeHint().height());
}

void EvaluateDialog::addFolder(const QString& dir, bool checked) {
  auto* item = new QListWidgetItem(dir, models_);
  item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
  item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
}

EvaluateForm EvaluateDialog::form() const {
  EvaluateForm f = base_;
  f.dense = dense_->text().trimmed();
  f.models.clear();
  for (int i = 0; i < models_->count(); ++i)
    if (models_->item(i)->checkState() == Qt::Checked) f.models << models_->item(i)->text();
  f.text = text_->text().trimmed();
  f.prompts = prompts_->text().trimmed();
  f.seeds = seeds_->text().trimmed();
  f.maxNewTokens = maxNew_->value();
  f.maxPrompts = maxPrompts_->value();
  f.windows = windows_->value();
  f.window = window_->value();
  f.sideBySide = sideBySide_->value();
  f.temperature = temperature_->value();
  f.topK = topK_->value();
  f.topP = topP_->value();
  f.activationSparsity = activationSparsity_->value();
  f.activationThresholds = activationSelection_->thresholdsRun();
  f.device = device_->currentText();
  return f;
}

void EvaluateDialog::setForm(const EvaluateForm& form) {
  base_ = form;
  dense_->setText(form.dense);
  models_->clear();
  for (const QString& m : form.models) addFolder(m, true);
  text_->setText(form.text);
  prompts_->setText(form.prompts);
  seeds_->setText(form.seeds);
  maxNew_->setValue(form.maxNewTokens);
  maxPrompts_->setValue(form.maxPrompts);
  windows_->setValue(form.windows);
  window_->setValue(form.window);
  sideBySide_->setValue(form.sideBySide);
  temperature_->setValue(form.temperature);
  topK_->setValue(form.topK);
  topP_->setValue(form.topP);
  activationSparsity_->setValue(form.activationSparsity);
  activationSelection_->setThresholdsRun(form.activationThresholds);
  device_->setCurrentText(form.device);
}

void EvaluateDialog::setCalibrationRuns(const QVector<RunChoice>& runs) { activationSelection_->setRuns(runs); }

}  // namespace sdw::widgets
