#pragma once
// The read-only results tables of the panels: a model behind a sort proxy
// (sorted by `sortRole`, in the model's own order until a header is
// clicked), whole-row selection, compact rows without a vertical header,
// columns sized to their contents, alternating row colours.

#include <QString>

class QAbstractItemModel;
class QSortFilterProxyModel;
class QTableView;
class QWidget;

namespace sdw::widgets {

// The proxy is a child of the table; `proxy` receives it when not null.
QTableView* makeSortableTable(QAbstractItemModel* model, int sortRole, const QString& objectName, QWidget* parent,
                              QSortFilterProxyModel** proxy = nullptr);

}  // namespace sdw::widgets
