#include "widgets/moduletreemodel.h"

#include <QLocale>

#include <map>

namespace sdw::widgets {

namespace {
// internalId of a top-level index is 0; a child's is its parent's row + 1.
constexpr quintptr kTop = 0;
}  // namespace

QString ModuleTreeModel::formatBytes(quint64 bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return QStringLiteral("%1 B").arg(bytes);
  return QStringLiteral("%1 %2").arg(v, 0, 'f', v < 10 ? 2 : 1).arg(QLatin1String(units[u]));
}

void ModuleTreeModel::setRows(QVector<ModuleRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  top_.clear();
  QVector<Node> before, after;
  bool seenLayer = false;
  std::map<int, Node> layers;
  for (int i = 0; i < rows_.size(); ++i) {
    const ModuleRow& r = rows_[i];
    if (r.layer >= 0) {
      seenLayer = true;
      Node& n = layers[r.layer];
      n.layer = r.layer;
      n.children.push_back(i);
      n.bytes += r.bytes;
    } else {
      Node n;
      n.row = i;
      n.bytes = r.bytes;
      (seenLayer ? after : before).push_back(n);
    }
  }
  top_ += before;
  for (auto& [layer, n] : layers) top_.push_back(std::move(n));
  top_ += after;
  endResetModel();
}

int ModuleTreeModel::layerCount() const {
  int n = 0;
  for (const Node& t : top_) n += t.row < 0 ? 1 : 0;
  return n;
}

int ModuleTreeModel::projectionCount() const {
  int n = 0;
  for (const ModuleRow& r : rows_) n += r.layer >= 0 ? 1 : 0;
  return n;
}

QModelIndex ModuleTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= ColumnCount) return {};
  if (!parent.isValid()) {
    if (row >= top_.size()) return {};
    return createIndex(row, column, kTop);
  }
  if (parent.internalId() != kTop || parent.row() >= top_.size()) return {};
  const Node& p = top_[parent.row()];
  if (row >= p.children.size()) return {};
  return createIndex(row, column, static_cast<quintptr>(parent.row()) + 1);
}

QModelIndex ModuleTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kTop) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kTop);
}

int ModuleTreeModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return top_.size();
  if (parent.column() != 0 || parent.internalId() != kTop || parent.row() >= top_.size()) return 0;
  return top_[parent.row()].children.size();
}

int ModuleTreeModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant ModuleTreeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const ModuleRow* r = nullptr;
  const Node* layerNode = nullptr;
  if (index.internalId() == kTop) {
    if (index.row() >= top_.size()) return {};
    const Node& n = top_[index.row()];
    if (n.row >= 0) r = &rows_[n.row];
    else layerNode = &n;
  } else {
    const int p = static_cast<int>(index.internalId() - 1);
    if (p >= top_.size() || index.row() >= top_[p].children.size()) return {};
    r = &rows_[top_[p].children[index.row()]];
  }

  if (layerNode) {
    switch (role) {
      case Qt::DisplayRole:
        switch (index.column()) {
          case Name: return QStringLiteral("model.layers.%1").arg(layerNode->layer);
          case Shape: return tr("%1 projections").arg(layerNode->children.size());
          case Bytes: return formatBytes(layerNode->bytes);
          default: return {};
        }
      case SortRole:
        return index.column() == Bytes ? QVariant::fromValue<qulonglong>(layerNode->bytes) : QVariant();
      case Qt::TextAlignmentRole:
        return index.column() == Bytes ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
      default: return {};
    }
  }

  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case Name: return index.internalId() == kTop ? r->name : r->kind;
        case Shape: return QStringLiteral("[%1, %2]").arg(r->outFeatures).arg(r->inFeatures);
        case DType: return r->dtype;
        case Bytes: return r->note.isEmpty() ? formatBytes(r->bytes) : r->note;
        default: return {};
      }
    case Qt::ToolTipRole: {
      QString tip = QStringLiteral("%1\n[%2, %3] %4, %5 bytes")
                        .arg(r->name)
                        .arg(r->outFeatures)
                        .arg(r->inFeatures)
                        .arg(r->dtype, QLocale::c().toString(r->bytes));
      if (!r->note.isEmpty()) tip += QLatin1Char('\n') + r->note;
      return tip;
    }
    case SortRole:
      return index.column() == Bytes ? QVariant::fromValue<qulonglong>(r->bytes) : QVariant();
    case Qt::TextAlignmentRole:
      return index.column() == Bytes ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
    default: return {};
  }
}

QVariant ModuleTreeModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return tr("Module");
    case Shape: return tr("Shape [out, in]");
    case DType: return tr("DType");
    case Bytes: return tr("Bytes");
    default: return {};
  }
}

}  // namespace sdw::widgets
