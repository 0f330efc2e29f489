#include "app/settings.h"

namespace sdw::app {

namespace {
constexpr auto kWorkspace = "workspace/current";
constexpr auto kRecent = "workspace/recent";
constexpr auto kPanel = "ui/panel";
constexpr auto kGeometry = "ui/geometry";
constexpr auto kState = "ui/state";
constexpr int kMaxRecent = 8;
}  // namespace

Settings::Settings() = default;
Settings::Settings(const QString& iniFile) : s_(iniFile, QSettings::IniFormat) {}

QString Settings::workspace() const { return s_.value(kWorkspace).toString(); }
void Settings::setWorkspace(const QString& dir) {
  s_.setValue(kWorkspace, dir);
  addRecentWorkspace(dir);
}

QStringList Settings::recentWorkspaces() const { return s_.value(kRecent).toStringList(); }
void Settings::addRecentWorkspace(const QString& dir) {
  QStringList r = recentWorkspaces();
  r.removeAll(dir);
  r.prepend(dir);
  while (r.size() > kMaxRecent) r.removeLast();
  s_.setValue(kRecent, r);
}

QString Settings::currentPanel() const { return s_.value(kPanel, QStringLiteral("Model")).toString(); }
void Settings::setCurrentPanel(const QString& name) { s_.setValue(kPanel, name); }

QByteArray Settings::windowGeometry() const { return s_.value(kGeometry).toByteArray(); }
void Settings::setWindowGeometry(const QByteArray& g) { s_.setValue(kGeometry, g); }
QByteArray Settings::windowState() const { return s_.value(kState).toByteArray(); }
void Settings::setWindowState(const QByteArray& st) { s_.setValue(kState, st); }

}  // namespace sdw::app
