#pragma once
// The actions under a benchmark form (the Kernels and End-to-end decode tabs):
// Start, Cancel, Open results…, a save button, a thin progress bar and a
// status line, in one widget the form keeps in sight however far its settings
// scroll. Object names: <prefix>Start, <prefix>Cancel, <prefix>Open,
// <saveName>, <prefix>Progress, <prefix>Status.

#include <QString>

class QLabel;
class QProgressBar;
class QPushButton;
class QWidget;

namespace sdw::widgets {

struct RunActions {
  QWidget* widget = nullptr;
  QPushButton* start = nullptr;
  QPushButton* cancel = nullptr;
  QPushButton* open = nullptr;
  QPushButton* save = nullptr;
  QProgressBar* bar = nullptr;
  QLabel* status = nullptr;
};

struct RunActionsText {
  QString prefix;    // "bench", "decode"
  QString openTip;
  QString saveText;  // "Export table…", "Save results…"
  QString saveName;  // the save button's object name
  QString saveTip;
};

RunActions makeRunActions(QWidget* parent, const RunActionsText& text);

}  // namespace sdw::widgets
