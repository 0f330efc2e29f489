#pragma once
// Summary statistics of a few repeated measurements (seeds, timings): the
// mean with a 95% confidence interval from Student's t distribution, and the
// median.

#include <limits>
#include <span>

namespace sdw::stats {

struct MeanCi {
  double mean = 0;
  double halfWidth = 0;  // the interval is mean ± halfWidth; 0 with one value
  double sd = 0;         // sample standard deviation (n - 1)
  int n = 0;
};

// Two-sided 95% quantile of Student's t with `dof` degrees of freedom
// (t_{0.975, dof}); 1.96 from 120 on.
double tQuantile975(int dof);

// NaN values are left out. n = 0 gives mean NaN.
MeanCi meanCi95(std::span<const double> values);

// The middle value, the mean of the two middle ones for an even count. NaN
// values are left out, +inf sorts last. `ifEmpty` when no value is left.
double median(std::span<const double> values, double ifEmpty = std::numeric_limits<double>::quiet_NaN());

}  // namespace sdw::stats
