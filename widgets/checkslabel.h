#pragma once
// The warnings and notes an engine result carries (core/decoding_checks.h:
// mixed decodings, leaked prompt sets, what was compared), shown under a
// page's summary line: "Warning: ..." lines first, then "Note: ..." lines;
// hidden when there are none. Display only.

#include <QLabel>
#include <QStringList>

namespace sdw::widgets {

class ChecksLabel : public QLabel {
  Q_OBJECT
 public:
  explicit ChecksLabel(const QString& objectName, QWidget* parent = nullptr);
  void setChecks(const QStringList& warnings, const QStringList& notes);
  const QStringList& warnings() const { return warnings_; }
  const QStringList& notes() const { return notes_; }

 private:
  QStringList warnings_, notes_;
};

}  // namespace sdw::widgets
