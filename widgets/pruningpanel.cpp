#include "widgets/pruningpanel.h"

#include <QVBoxLayout>

namespace sdw::widgets {

PruningPanel::PruningPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("pruningPanel"));
  new QVBoxLayout(this);
}

}  // namespace sdw::widgets
