#include "widgets/logview.h"

#include <QComboBox>
#include <QDateTime>
#include <QFileDialog>
#include <QFile>
#include <QHBoxLayout>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTextStream>
#include <QVBoxLayout>

namespace sdw::widgets {

namespace {
constexpr int kMaxEntries = 20000;  // older lines drop off; the log file keeps all
QString levelName(LogView::Level l) {
  switch (l) {
    case LogView::Level::Debug: return QStringLiteral("debug");
    case LogView::Level::Info: return QStringLiteral("info");
    case LogView::Level::Warning: return QStringLiteral("warning");
    case LogView::Level::Error: return QStringLiteral("error");
  }
  return {};
}
}  // namespace

LogView::LogView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  filter_ = new QComboBox(this);
  filter_->addItems({tr("Debug and above"), tr("Info and above"), tr("Warnings and errors"), tr("Errors only")});
  filter_->setCurrentIndex(1);
  auto* save = new QPushButton(tr("Save…"), this);
  auto* clear = new QPushButton(tr("Clear"), this);
  bar->addWidget(filter_);
  bar->addStretch(1);
  bar->addWidget(save);
  bar->addWidget(clear);
  text_ = new QPlainTextEdit(this);
  text_->setReadOnly(true);
  text_->setMaximumBlockCount(kMaxEntries);
  text_->setFont(QFont(QStringLiteral("monospace")));
  layout->addLayout(bar);
  layout->addWidget(text_);
  connect(filter_, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  connect(clear, &QPushButton::clicked, this, [this] {
    entries_.clear();
    text_->clear();
  });
  connect(save, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save log"), QStringLiteral("sdw-log.txt"));
    if (path.isEmpty()) return;
    QFile f(path);
    if (f.open(QIODevice::WriteOnly | QIODevice::Text)) QTextStream(&f) << plainText();
  });
}

void LogView::append(Level level, const QString& message) {
  const QString line = QStringLiteral("%1 %2 %3")
                           .arg(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss")),
                                levelName(level).leftJustified(7), message);
  entries_.push_back({level, line});
  if (entries_.size() > kMaxEntries) entries_.erase(entries_.begin());
  if (static_cast<int>(level) >= filter_->currentIndex()) text_->appendPlainText(line);
}

QString LogView::plainText() const {
  QString all;
  for (const auto& e : entries_) all += e.line + QLatin1Char('\n');
  return all;
}

void LogView::rebuild() {
  text_->clear();
  QStringList shown;
  for (const auto& e : entries_)
    if (static_cast<int>(e.level) >= filter_->currentIndex()) shown << e.line;
  text_->setPlainText(shown.join(QLatin1Char('\n')));
}

}  // namespace sdw::widgets
