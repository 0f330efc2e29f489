#include "widgets/epsilonpage.h"

#include "widgets/checkslabel.h"
#include "widgets/epsilonmodulemodel.h"
#include "widgets/epsilonplots.h"
#include "widgets/sortabletable.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QVBoxLayout>

namespace sdw::widgets {

namespace {
QWidget* titled(const QString& title, QWidget* w, QLabel** labelOut = nullptr) {
  auto* box = new QWidget;
  auto* l = new QVBoxLayout(box);
  l->setContentsMargins(2, 2, 2, 2);
  l->setSpacing(2);
  auto* label = new QLabel(title, box);
  label->setStyleSheet(QStringLiteral("font-weight: 600;"));
  l->addWidget(label);
  l->addWidget(w, 1);
  if (labelOut) *labelOut = label;
  return box;
}
}  // namespace

EpsilonPage::EpsilonPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  stack_ = new QStackedWidget(this);
  layout->addWidget(stack_);

  empty_ = new QLabel(this);
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);
  empty_->setObjectName(QStringLiteral("epsilonEmpty"));
  stack_->addWidget(empty_);

  auto* content = new QWidget(this);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(4, 4, 4, 4);
  title_ = new QLabel(content);
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  title_->setObjectName(QStringLiteral("epsilonTitle"));
  summary_ = new QLabel(content);
  summary_->setObjectName(QStringLiteral("epsilonSummary"));
  summary_->setStyleSheet(QStringLiteral("font-size: 11pt; font-weight: 600;"));
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  checks_ = new ChecksLabel(QStringLiteral("epsilonChecks"), content);
  cl->addWidget(title_);
  cl->addWidget(summary_);
  cl->addWidget(checks_);

  bars_ = new EpsilonBarsPlot(content);
  scatter_ = new EpsilonScatterPlot(content);
  spectrum_ = new EpsilonSpectrumPlot(content);
  bars_->setObjectName(QStringLiteral("epsilonBars"));
  scatter_->setObjectName(QStringLiteral("epsilonScatter"));
  spectrum_->setObjectName(QStringLiteral("epsilonSpectrum"));
  for (QWidget* w : {static_cast<QWidget*>(bars_), static_cast<QWidget*>(scatter_), static_cast<QWidget*>(spectrum_)})
    w->setMinimumSize(220, 160);

  model_ = new EpsilonModuleModel(this);
  table_ = makeSortableTable(model_, EpsilonModuleModel::ValueRole, QStringLiteral("epsilonModules"), content, &proxy_);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setSectionResizeMode(EpsilonModuleModel::Module, QHeaderView::Stretch);
  table_->horizontalHeader()->setMinimumSectionSize(40);

  auto* top = new QSplitter(Qt::Horizontal, content);
  top->addWidget(titled(tr("eps_k per projection input, by layer"), bars_));
  top->addWidget(titled(tr("eps per module (below the diagonal: AR lower)"), scatter_));
  top->setStretchFactor(0, 3);
  top->setStretchFactor(1, 2);
  auto* bottom = new QSplitter(Qt::Horizontal, content);
  bottom->addWidget(titled(tr("Modules"), table_));
  bottom->addWidget(titled(tr("Eigen-spectra"), spectrum_, &spectrumTitle_));
  bottom->setStretchFactor(0, 2);
  bottom->setStretchFactor(1, 3);
  auto* vertical = new QSplitter(Qt::Vertical, content);
  vertical->addWidget(top);
  vertical->addWidget(bottom);
  cl->addWidget(vertical, 1);
  stack_->addWidget(content);

  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (!current.isValid()) return;
            const int row = proxy_->mapToSource(current).row();
            if (row != selectedModule_) selectModule(row);
          });
  connect(scatter_, &EpsilonScatterPlot::moduleClicked, this, &EpsilonPage::selectModule);
  clear(tr("No epsilon analysis open."));
}

void EpsilonPage::clear(const QString& message) {
  data_ = {};
  selectedModule_ = -1;
  model_->setData(data_);
  empty_->setText(message);
  stack_->setCurrentWidget(empty_);
}

void EpsilonPage::setData(const EpsilonData& data) {
  data_ = data;
  selectedModule_ = -1;
  const QString file = data.path.isEmpty() ? tr("(not saved)") : QFileInfo(data.path).fileName();
  QString runs = tr("%1 = %2").arg(data.cLabel, data.cFile);
  if (!data.arLabel.isEmpty()) runs += tr(", %1 = %2").arg(data.arLabel, data.arFile);
  title_->setText(tr("%1 — reference %2; %3; k = %4%5")
                      .arg(file, data.referenceLabel, runs)
                      .arg(data.k)
                      .arg(data.approximate ? tr("; approximate (top-k storage)") : QString()) +
                  (data.hasPair && !data.hasNoise() ? QStringLiteral("; ") + data.noiseNote() : QString()));
  summary_->setText(data.summaryLine());
  summary_->setToolTip(tr("Noise floor of an eps: the eps between two runs of the same process at that token "
                          "budget, estimated from the run's two halves. A module differs beyond it when its two eps "
                          "differ by more than (noise + noise) / sqrt(2) (docs/epsilon.md)."));
  checks_->setChecks(data.warnings, data.notes);
  model_->setData(data);
  bars_->setData(data);
  scatter_->setData(data);
  spectrum_->clear();
  spectrumTitle_->setText(tr("Eigen-spectra"));
  stack_->setCurrentIndex(1);
  if (!data.modules.isEmpty()) selectModule(0);
}

void EpsilonPage::selectModule(int module) {
  if (module < 0 || module >= data_.modules.size()) return;
  selectedModule_ = module;
  const EpsilonModuleData& m = data_.modules[module];
  scatter_->setSelectedModule(module);
  if (m.input >= 0 && m.input < data_.inputs.size()) {
    const EpsilonInputData& in = data_.inputs[m.input];
    spectrum_->setInput(in, data_.cLabel, data_.arLabel);
    spectrumTitle_->setText(tr("Eigen-spectra of %1 (d_in %2, k used %3)").arg(in.name).arg(in.dIn).arg(in.kUsed));
  }
  const QModelIndex src = model_->index(module, 0);
  const QModelIndex view = proxy_->mapFromSource(src);
  if (view.isValid() && table_->currentIndex().row() != view.row()) {
    table_->setCurrentIndex(view);
    table_->scrollTo(view);
  }
}

QString EpsilonPage::summaryText() const { return summary_->text(); }
QString EpsilonPage::titleText() const { return title_->text(); }
QStringList EpsilonPage::shownWarnings() const { return checks_->isVisibleTo(this) ? checks_->warnings() : QStringList(); }

}  // namespace sdw::widgets
