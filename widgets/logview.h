#pragma once
// The log dock: timestamped messages with a level filter. Display only.

#include <QWidget>

class QComboBox;
class QPlainTextEdit;

namespace sdw::widgets {

class LogView : public QWidget {
  Q_OBJECT
 public:
  enum class Level { Debug = 0, Info = 1, Warning = 2, Error = 3 };
  explicit LogView(QWidget* parent = nullptr);

  void append(Level level, const QString& message);
  QString plainText() const;
  int lineCount() const { return static_cast<int>(entries_.size()); }

 private:
  void rebuild();
  struct Entry {
    Level level;
    QString line;
  };
  std::vector<Entry> entries_;
  QComboBox* filter_;
  QPlainTextEdit* text_;
};

}  // namespace sdw::widgets
