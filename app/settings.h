#pragma once
// Typed settings over QSettings: one place that knows the keys.

#include <QByteArray>
#include <QSettings>
#include <QString>
#include <QStringList>

namespace sdw::app {

class Settings {
 public:
  // Uses the organisation/application names set on the QCoreApplication.
  Settings();
  explicit Settings(const QString& iniFile);  // for tests

  QString workspace() const;
  void setWorkspace(const QString& dir);

  QStringList recentWorkspaces() const;
  void addRecentWorkspace(const QString& dir);  // most recent first, max 8

  QString currentPanel() const;
  void setCurrentPanel(const QString& name);

  QByteArray windowGeometry() const;
  void setWindowGeometry(const QByteArray& g);
  QByteArray windowState() const;
  void setWindowState(const QByteArray& s);

  void sync() { s_.sync(); }

 private:
  QSettings s_;
};

}  // namespace sdw::app
