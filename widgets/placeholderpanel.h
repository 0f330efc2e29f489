#pragma once
// A panel whose tools arrive later: says what will live here.

#include <QStringList>
#include <QWidget>

namespace sdw::widgets {

class PlaceholderPanel : public QWidget {
  Q_OBJECT
 public:
  PlaceholderPanel(const QString& title, const QString& summary, const QStringList& plans,
                   QWidget* parent = nullptr);
};

}  // namespace sdw::widgets
