#pragma once
// CSV cells shared by every export: text quoted when it holds a comma or a
// quote (RFC 4180), numbers with full precision, empty when not finite.

#include <QString>

#include <cmath>

namespace sdw::widgets {

inline QString csvField(QString s) {
  if (s.contains(QLatin1Char(',')) || s.contains(QLatin1Char('"')) || s.contains(QLatin1Char('\n'))) {
    s.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + s + QLatin1Char('"');
  }
  return s;
}

inline QString csvNumber(double v) { return std::isfinite(v) ? QString::number(v, 'g', 17) : QString(); }

}  // namespace sdw::widgets
