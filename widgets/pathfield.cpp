#include "widgets/pathfield.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QToolButton>

namespace sdw::widgets {

PathField makePathField(QWidget* parent, const QString& title, bool folder, const QString& filter,
                        std::function<QString()> fallback) {
  PathField f{new QLineEdit(parent), new QToolButton(parent)};
  f.browse->setText(QStringLiteral("…"));
  QObject::connect(f.browse, &QToolButton::clicked, f.edit,
                   [edit = f.edit, parent, title, folder, filter, fallback = std::move(fallback)] {
                     const QString current = edit->text();
                     const QString start = !current.isEmpty() ? (folder ? current : QFileInfo(current).absolutePath())
                                           : fallback       ? fallback()
                                                            : QString();
                     const QString path = folder ? QFileDialog::getExistingDirectory(parent, title, start)
                                                 : QFileDialog::getOpenFileName(parent, title, start, filter);
                     if (!path.isEmpty()) edit->setText(path);
                   });
  return f;
}

}  // namespace sdw::widgets
