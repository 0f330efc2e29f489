#pragma once
// A path field: a line edit and a "…" button that picks a folder or a file into it
// (the model, corpus, prompts and output fields of the panels and dialogs).

#include <QString>

#include <functional>

class QLineEdit;
class QToolButton;
class QWidget;

namespace sdw::widgets {

struct PathField {
  QLineEdit* edit = nullptr;
  QToolButton* browse = nullptr;
};

// Both widgets are children of `parent`; the caller lays them out. The dialog opens at
// the field's path (a file's folder for files) or, while the field is empty, at
// fallback() (a workspace or output folder; none: the current directory).
PathField makePathField(QWidget* parent, const QString& title, bool folder, const QString& filter = {},
                        std::function<QString()> fallback = {});

}  // namespace sdw::widgets
