#include "core/stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace sdw::stats {

double tQuantile975(int dof) {
  // t_{0.975} for 1..30 degrees of freedom, then a few larger ones.
  static constexpr std::array<double, 30> kSmall = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
      2.120,  2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1) return std::numeric_limits<double>::quiet_NaN();
  if (dof <= 30) return kSmall[static_cast<std::size_t>(dof - 1)];
  if (dof <= 40) return 2.021;
  if (dof <= 60) return 2.000;
  if (dof < 120) return 1.980;
  return 1.960;
}

MeanCi meanCi95(std::span<const double> values) {
  MeanCi r;
  double sum = 0;
  for (double v : values)
    if (!std::isnan(v)) {
      sum += v;
      ++r.n;
    }
  if (r.n == 0) {
    r.mean = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  r.mean = sum / r.n;
  if (r.n < 2) return r;
  double ss = 0;
  for (double v : values)
    if (!std::isnan(v)) ss += (v - r.mean) * (v - r.mean);
  r.sd = std::sqrt(ss / (r.n - 1));
  r.halfWidth = tQuantile975(r.n - 1) * r.sd / std::sqrt(static_cast<double>(r.n));
  return r;
}

double median(std::span<const double> values, double ifEmpty) {
  std::vector<double> v;
  v.reserve(values.size());
  for (double x : values)
    if (!std::isnan(x)) v.push_back(x);
  if (v.empty()) return ifEmpty;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace sdw::stats
