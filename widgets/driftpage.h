#pragma once
// The Analysis panel's Drift tab: activation drift by decode step of pruned
// models against their dense parent (DESIGN §1, paper Fig. 1a). Display only:
// drift runs are read and computed in app/gui/driftcontroller.

#include <QWidget>

namespace sdw::widgets {

class DriftPage : public QWidget {
  Q_OBJECT
 public:
  explicit DriftPage(QWidget* parent = nullptr);
};

}  // namespace sdw::widgets
