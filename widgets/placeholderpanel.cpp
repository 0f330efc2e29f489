#include "widgets/placeholderpanel.h"

#include <QLabel>
#include <QVBoxLayout>

namespace sdw::widgets {

PlaceholderPanel::PlaceholderPanel(const QString& title, const QString& summary,
                                   const QStringList& plans, QWidget* parent)
    : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(24, 24, 24, 24);
  auto* heading = new QLabel(QStringLiteral("<h2>%1</h2>").arg(title.toHtmlEscaped()), this);
  auto* text = new QLabel(summary, this);
  text->setWordWrap(true);
  QString list = QStringLiteral("<p><b>What this panel will hold:</b></p><ul>");
  for (const QString& p : plans) list += QStringLiteral("<li>%1</li>").arg(p.toHtmlEscaped());
  list += QStringLiteral("</ul>");
  auto* plansLabel = new QLabel(list, this);
  plansLabel->setWordWrap(true);
  plansLabel->setObjectName(QStringLiteral("plans"));
  layout->addWidget(heading);
  layout->addWidget(text);
  layout->addWidget(plansLabel);
  layout->addStretch(1);
}

}  // namespace sdw::widgets
