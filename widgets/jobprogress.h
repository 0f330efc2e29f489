#pragma once
// A job's progress on a panel's QProgressBar: a fraction in [0, 1] on a
// 0..1000 scale with an optional text, or a busy indicator when the fraction
// is unknown (< 0).

#include <QProgressBar>
#include <QString>

#include <algorithm>

namespace sdw::widgets {

inline void showJobProgress(QProgressBar* bar, double fraction, const QString& text = {}) {
  if (fraction < 0) {
    bar->setRange(0, 0);
  } else {
    bar->setRange(0, 1000);
    bar->setValue(static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 1000.0 + 0.5));
  }
  if (!text.isEmpty()) bar->setFormat(text);
}

}  // namespace sdw::widgets
