#include "widgets/sortabletable.h"

#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QTableView>

namespace sdw::widgets {

QTableView* makeSortableTable(QAbstractItemModel* model, int sortRole, const QString& objectName, QWidget* parent,
                              QSortFilterProxyModel** proxy) {
  auto* table = new QTableView(parent);
  table->setObjectName(objectName);
  auto* p = new QSortFilterProxyModel(table);
  p->setSourceModel(model);
  p->setSortRole(sortRole);
  table->setModel(p);
  table->setSortingEnabled(true);
  table->sortByColumn(-1, Qt::AscendingOrder);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setAlternatingRowColors(true);
  table->verticalHeader()->setVisible(false);
  table->verticalHeader()->setDefaultSectionSize(20);
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  if (proxy) *proxy = p;
  return table;
}

}  // namespace sdw::widgets
