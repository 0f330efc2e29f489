#pragma once
// Tree model of a loaded model's weights: embeddings and lm_head at the top
// level, one node per decoder layer with its linear projections below.
// Columns: name, shape [out, in], dtype, bytes. Rows are plain values built
// by the application from the model runtime's module registry.

#include <QAbstractItemModel>
#include <QVector>

namespace sdw::widgets {

struct ModuleRow {
  QString name;   // checkpoint name without ".weight": "model.layers.3.mlp.down_proj", "lm_head"
  QString kind;   // "q_proj" ... "down_proj", "lm_head", "embed_tokens"
  int layer = -1; // -1 for top-level tensors (embeddings, lm_head)
  qint64 outFeatures = 0;  // weight is [out, in]
  qint64 inFeatures = 0;
  QString dtype;
  quint64 bytes = 0;
  QString note;   // e.g. "tied to model.embed_tokens"
};

class ModuleTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { Name = 0, Shape, DType, Bytes, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;  // raw byte count in the Bytes column

  using QAbstractItemModel::QAbstractItemModel;

  // Rows of layer >= 0 are grouped under "model.layers.N" nodes (in layer
  // order); the others stay at the top level: those before the first layer
  // row above the layers, the rest below.
  void setRows(QVector<ModuleRow> rows);
  void clear() { setRows({}); }
  const QVector<ModuleRow>& rows() const { return rows_; }
  int layerCount() const;
  int projectionCount() const;  // rows of layer >= 0

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  static QString formatBytes(quint64 bytes);

 private:
  struct Node {
    int row = -1;             // index into rows_ for a leaf, -1 for a layer node
    int layer = -1;           // layer number of a layer node
    QVector<int> children;    // indices into rows_
    quint64 bytes = 0;        // sum for a layer node
  };
  QVector<ModuleRow> rows_;
  QVector<Node> top_;
};

}  // namespace sdw::widgets
