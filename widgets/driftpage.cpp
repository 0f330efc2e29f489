#include "widgets/driftpage.h"

#include <QVBoxLayout>

namespace sdw::widgets {

DriftPage::DriftPage(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("driftPage"));
  new QVBoxLayout(this);
}

}  // namespace sdw::widgets
