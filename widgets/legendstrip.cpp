#include "widgets/legendstrip.h"

#include <QPainter>
#include <QResizeEvent>

#include <algorithm>

namespace sdw::widgets {

namespace {
constexpr int kSample = 22;  // the line sample's length
constexpr int kGap = 5;      // sample to text
constexpr int kSpacing = 16; // entry to entry
constexpr int kMargin = 4;
constexpr int kShade = 9;     // one shade's sample
constexpr int kShadeGap = 2;  // between shades

int sampleWidth(const LegendStrip::Entry& e) {
  const auto n = static_cast<int>(e.shades.size());
  return n == 0 ? kSample : n * kShade + (n - 1) * kShadeGap;
}
}  // namespace

LegendStrip::Entry LegendStrip::shaded(const QString& name, const QString& axis, const QStringList& values,
                                       const QVector<QColor>& colors, bool line, bool marker) {
  Entry e{name + QStringLiteral(" · ") + axis + QLatin1Char(' ') + values.join(QStringLiteral(", ")), colors.value(0),
          line, marker};
  if (colors.size() > 1) e.shades = colors;
  return e;
}

LegendStrip::LegendStrip(QWidget* parent) : QWidget(parent) {
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.9);
  setFont(f);
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
}

void LegendStrip::setEntries(const QVector<Entry>& entries) {
  entries_ = entries;
  updateGeometry();
  update();
}

QStringList LegendStrip::names() const {
  QStringList out;
  for (const Entry& e : entries_) out << e.name;
  return out;
}

int LegendStrip::entryWidth(const Entry& e) const {
  return sampleWidth(e) + kGap + fontMetrics().horizontalAdvance(e.name);
}

QVector<QRect> LegendStrip::layoutFor(int width) const {
  QVector<QRect> out;
  const int line = fontMetrics().height() + 2;
  // Rows filled left to right, then each row centred.
  QVector<QVector<int>> rows(1);
  QVector<int> rowWidth(1, 0);
  for (int i = 0; i < entries_.size(); ++i) {
    const int w = entryWidth(entries_[i]);
    const int needed = rowWidth.back() == 0 ? w : rowWidth.back() + kSpacing + w;
    if (needed > width - 2 * kMargin && rowWidth.back() > 0) {
      rows.push_back({});
      rowWidth.push_back(0);
    }
    rowWidth.back() = rowWidth.back() == 0 ? w : rowWidth.back() + kSpacing + w;
    rows.back().push_back(i);
  }
  out.resize(entries_.size());
  for (int r = 0; r < rows.size(); ++r) {
    int x = std::max(kMargin, (width - rowWidth[r]) / 2);
    for (int i : rows[r]) {
      const int w = entryWidth(entries_[i]);
      out[i] = QRect(x, kMargin / 2 + r * line, w, line);
      x += w + kSpacing;
    }
  }
  return out;
}

int LegendStrip::heightForWidth(int width) const {
  if (entries_.isEmpty()) return 0;
  int bottom = 0;
  for (const QRect& r : layoutFor(width)) bottom = std::max(bottom, r.bottom() + 1);
  return bottom + kMargin / 2;
}

QSize LegendStrip::sizeHint() const {
  int w = 2 * kMargin;
  for (const Entry& e : entries_) w += entryWidth(e) + kSpacing;
  return {w, heightForWidth(width() > 0 ? width() : w)};
}

QSize LegendStrip::minimumSizeHint() const { return {0, heightForWidth(width() > 0 ? width() : 400)}; }

void LegendStrip::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  // Wrapping changes with the width: ask the layout for the new height.
  if (event->oldSize().width() != event->size().width()) updateGeometry();
}

void LegendStrip::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QVector<QRect> rects = layoutFor(width());
  for (int i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const QRect& r = rects[i];
    const int y = r.center().y();
    const int sample = sampleWidth(e);
    if (!e.shades.isEmpty()) {  // per shade a short thick line, or a dot where the charts draw points only
      for (int k = 0; k < e.shades.size(); ++k) {
        const int x = r.left() + k * (kShade + kShadeGap);
        if (e.line) {
          p.setPen(QPen(e.shades[k], 3.0, Qt::SolidLine, Qt::FlatCap));
          p.drawLine(x, y, x + kShade, y);
        } else {
          p.setPen(Qt::NoPen);
          p.setBrush(e.shades[k]);
          p.drawEllipse(QPointF(x + kShade / 2.0, y), 3.5, 3.5);
        }
      }
    } else {
      p.setPen(QPen(e.color, 1.5, e.style));
      if (e.line) p.drawLine(r.left(), y, r.left() + kSample, y);
      p.setPen(QPen(e.color, 1.5));
      if (e.marker) {
        p.setBrush(e.color);
        const double radius = e.line ? 2.5 : 3.5;
        p.drawEllipse(QPointF(r.left() + kSample / 2.0, y), radius, radius);
      }
    }
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRect(r.left() + sample + kGap, r.top(), r.width() - sample - kGap, r.height()),
               Qt::AlignLeft | Qt::AlignVCenter, e.name);
  }
}

}  // namespace sdw::widgets
