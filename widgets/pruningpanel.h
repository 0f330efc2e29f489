#pragma once
// The Pruning panel: turn a calibration run into a pruned model (method,
// pattern, layer order), watch it per layer, inspect the per-module results,
// and compare pruned models' quality and generations. Display only: the
// pruning and evaluation jobs run in app/gui/pruningcontroller.

#include <QWidget>

namespace sdw::widgets {

class PruningPanel : public QWidget {
  Q_OBJECT
 public:
  explicit PruningPanel(QWidget* parent = nullptr);
};

}  // namespace sdw::widgets
