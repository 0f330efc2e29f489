#include "widgets/runbrowser.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTextBrowser>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

namespace sdw::widgets {

RunBrowser::RunBrowser(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  folder_ = new QLabel(tr("(no workspace)"), this);
  folder_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  folder_->setWordWrap(true);
  auto* open = new QToolButton(this);
  open->setText(tr("Open…"));
  open->setToolTip(tr("Choose a workspace folder"));
  auto* refresh = new QToolButton(this);
  refresh->setText(tr("Refresh"));
  bar->addWidget(folder_, 1);
  bar->addWidget(open);
  bar->addWidget(refresh);

  model_ = new RunListModel(this);
  view_ = new QTreeView(this);
  view_->setRootIsDecorated(false);
  view_->setUniformRowHeights(true);
  view_->setModel(model_);
  view_->setAlternatingRowColors(true);
  view_->header()->setStretchLastSection(true);

  details_ = new QTextBrowser(this);
  details_->setOpenLinks(false);
  details_->setPlaceholderText(tr("Select a run to see its provenance."));

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(view_);
  split->addWidget(details_);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  layout->addLayout(bar);
  layout->addWidget(split, 1);

  connect(open, &QToolButton::clicked, this, &RunBrowser::openWorkspaceRequested);
  connect(refresh, &QToolButton::clicked, this, &RunBrowser::refreshRequested);
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this] { onCurrentChanged(); });
}

void RunBrowser::setWorkspace(const QString& dir) {
  folder_->setText(QStringLiteral("<b>Workspace</b><br>%1").arg(dir.toHtmlEscaped()));
}

void RunBrowser::setRuns(QVector<RunRow> rows) {
  const QString keep = view_->currentIndex().data(RunListModel::PathRole).toString();
  model_->setRows(std::move(rows));
  for (int c = 0; c < RunListModel::ColumnCount - 1; ++c) view_->resizeColumnToContents(c);
  if (!keep.isEmpty()) selectPath(keep);
  else if (model_->rowCount() > 0) view_->setCurrentIndex(model_->index(0, 0));
}

void RunBrowser::selectPath(const QString& path) {
  for (int r = 0; r < model_->rowCount(); ++r)
    if (model_->rowAt(r)->path == path) {
      view_->setCurrentIndex(model_->index(r, 0));
      return;
    }
}

void RunBrowser::showDetails(const RunRow& row) {
  if (!row.error.isEmpty()) {
    details_->setHtml(QStringLiteral("<p><b>%1</b></p><p style='color:#b00020'>Cannot open this run: %2</p>")
                          .arg(row.fileName.toHtmlEscaped(), row.error.toHtmlEscaped()));
  } else {
    details_->setHtml(row.detailsHtml);
  }
}

void RunBrowser::onCurrentChanged() {
  const RunRow* row = model_->rowAt(view_->currentIndex().row());
  if (!row) {
    details_->clear();
    return;
  }
  showDetails(*row);
  Q_EMIT runSelected(row->path);
}

QString RunBrowser::detailsText() const { return details_->toPlainText(); }

}  // namespace sdw::widgets
