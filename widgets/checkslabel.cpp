#include "widgets/checkslabel.h"

namespace sdw::widgets {

ChecksLabel::ChecksLabel(const QString& objectName, QWidget* parent) : QLabel(parent) {
  setObjectName(objectName);
  setWordWrap(true);
  setTextInteractionFlags(Qt::TextSelectableByMouse);
  hide();
}

void ChecksLabel::setChecks(const QStringList& warnings, const QStringList& notes) {
  warnings_ = warnings;
  notes_ = notes;
  QStringList lines;
  for (const QString& w : warnings) lines << tr("Warning: %1").arg(w);
  for (const QString& n : notes) lines << tr("Note: %1").arg(n);
  setText(lines.join(QLatin1Char('\n')));
  // A warning changes how the figures read: it stands out; notes stay quiet.
  setStyleSheet(warnings.isEmpty() ? QStringLiteral("color: #505050;")
                                   : QStringLiteral("color: #a04000; font-weight: 600;"));
  setVisible(!lines.isEmpty());
}

}  // namespace sdw::widgets
