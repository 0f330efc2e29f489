#include "widgets/runactions.h"

#include <QGridLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

namespace sdw::widgets {

RunActions makeRunActions(QWidget* parent, const RunActionsText& t) {
  RunActions a;
  a.widget = new QWidget(parent);
  const auto button = [&](const QString& text, const QString& name, const QString& tip) {
    auto* b = new QPushButton(text, a.widget);
    b->setObjectName(name);
    if (!tip.isEmpty()) b->setToolTip(tip);
    return b;
  };
  a.start = button(QObject::tr("Start"), t.prefix + QStringLiteral("Start"), {});
  a.cancel = button(QObject::tr("Cancel"), t.prefix + QStringLiteral("Cancel"), {});
  a.open = button(QObject::tr("Open results…"), t.prefix + QStringLiteral("Open"), t.openTip);
  a.save = button(t.saveText, t.saveName, t.saveTip);
  auto* buttons = new QGridLayout();
  buttons->addWidget(a.start, 0, 0);
  buttons->addWidget(a.cancel, 0, 1);
  buttons->addWidget(a.open, 1, 0);
  buttons->addWidget(a.save, 1, 1);
  auto* al = new QVBoxLayout(a.widget);
  al->setContentsMargins(0, 4, 0, 0);
  al->addLayout(buttons);
  a.bar = new QProgressBar(a.widget);
  a.bar->setObjectName(t.prefix + QStringLiteral("Progress"));
  a.bar->setTextVisible(false);
  a.bar->setMaximumHeight(8);
  a.bar->setRange(0, 1000);
  a.bar->setValue(0);
  al->addWidget(a.bar);
  a.status = new QLabel(a.widget);
  a.status->setObjectName(t.prefix + QStringLiteral("Status"));
  a.status->setWordWrap(true);
  al->addWidget(a.status);
  return a;
}

}  // namespace sdw::widgets
