// Activation-drift math: relative discrepancy, per-cell averaging, plateau,
// 90%-of-plateau step and the across-layer quartile band.

#include "core/drift.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace sdw::drift {

double relativeDiscrepancy(std::span<const float> pruned, std::span<const float> dense) {
  if (pruned.size() != dense.size())
    throw std::invalid_argument("relativeDiscrepancy: sizes differ (" + std::to_string(pruned.size()) + " vs " +
                                std::to_string(dense.size()) + ")");
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < dense.size(); ++i) {
    const double d = static_cast<double>(dense[i]);
    const double e = static_cast<double>(pruned[i]) - d;
    diff += e * e;
    ref += d * d;
  }
  if (ref == 0) return diff == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / ref);
}

DriftAccumulator::DriftAccumulator(int steps, int layers) : steps_(steps), layers_(layers) {
  if (steps < 0 || layers < 0) throw std::invalid_argument("DriftAccumulator: negative size");
  const auto n = static_cast<std::size_t>(steps) * static_cast<std::size_t>(layers);
  sum_.assign(n, 0.0);
  count_.assign(n, 0);
}

void DriftAccumulator::add(int step, int layer, double value) {
  if (step < 0 || step >= steps_ || layer < 0 || layer >= layers_)
    throw std::out_of_range("DriftAccumulator: cell (" + std::to_string(step) + ", " + std::to_string(layer) +
                            ") outside [" + std::to_string(steps_) + ", " + std::to_string(layers_) + ")");
  const auto i = static_cast<std::size_t>(step) * static_cast<std::size_t>(layers_) + static_cast<std::size_t>(layer);
  sum_[i] += value;
  ++count_[i];
}

std::vector<double> DriftAccumulator::mean() const {
  std::vector<double> out(sum_.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < sum_.size(); ++i)
    if (count_[i] > 0) out[i] = sum_[i] / static_cast<double>(count_[i]);
  return out;
}

double quantile(std::vector<double> values, double q) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] + frac * (values[hi] - values[lo]);
}

DriftSummary summarizeDrift(std::span<const double> ratio, int steps, int layers) {
  if (steps < 1 || layers < 1) throw std::invalid_argument("summarizeDrift: steps and layers must be >= 1");
  if (ratio.size() != static_cast<std::size_t>(steps) * static_cast<std::size_t>(layers))
    throw std::invalid_argument("summarizeDrift: " + std::to_string(ratio.size()) + " values for [" +
                                std::to_string(steps) + ", " + std::to_string(layers) + "]");
  const auto at = [&](int t, int l) {
    return ratio[static_cast<std::size_t>(t) * static_cast<std::size_t>(layers) + static_cast<std::size_t>(l)];
  };
  DriftSummary s;
  s.steps = steps;
  s.layers = layers;
  s.plateau.assign(static_cast<std::size_t>(layers), 0.0);
  s.step90.assign(static_cast<std::size_t>(layers), -1);
  const int first = steps / 2;
  for (int l = 0; l < layers; ++l) {
    double sum = 0;
    for (int t = first; t < steps; ++t) sum += at(t, l);
    const double plateau = sum / static_cast<double>(steps - first);
    s.plateau[static_cast<std::size_t>(l)] = plateau;
    if (!(plateau > 0) || !std::isfinite(plateau)) continue;
    for (int t = 0; t < steps; ++t)
      if (at(t, l) >= kPlateauFraction * plateau) {
        s.step90[static_cast<std::size_t>(l)] = t;
        break;
      }
  }
  std::vector<double> row(static_cast<std::size_t>(layers));
  for (int t = 0; t < steps; ++t) {
    for (int l = 0; l < layers; ++l) row[static_cast<std::size_t>(l)] = at(t, l);
    s.median.push_back(quantile(row, 0.5));
    s.q1.push_back(quantile(row, 0.25));
    s.q3.push_back(quantile(row, 0.75));
  }
  return s;
}

}  // namespace sdw::drift
