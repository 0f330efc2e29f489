#pragma once
// Activation-drift curves, torch-free (DESIGN §1, "Activation drift by decode
// step"): the relative discrepancy of one activation against its dense
// reference, averaging over prompts per (decode step, layer), and the
// summaries drawn from a [steps, layers] curve set: per-layer plateau and the
// first step reaching 90% of it, and the median and inter-quartile band
// across layers per step.

#include <cstddef>
#include <span>
#include <vector>

namespace sdw::drift {

// ||pruned - dense|| / ||dense|| (Euclidean, accumulated in double). 0 when
// both are all zeros, +inf when only the dense vector is. Throws
// std::invalid_argument on a size mismatch.
double relativeDiscrepancy(std::span<const float> pruned, std::span<const float> dense);

// Sums values per (step, layer) cell and counts them; mean() divides.
class DriftAccumulator {
 public:
  DriftAccumulator(int steps, int layers);
  void add(int step, int layer, double value);
  int steps() const { return steps_; }
  int layers() const { return layers_; }
  // [steps, layers] row-major; NaN for cells that never received a value.
  std::vector<double> mean() const;
  std::vector<long long> counts() const { return count_; }

 private:
  int steps_, layers_;
  std::vector<double> sum_;
  std::vector<long long> count_;
};

// Linear-interpolation quantile (numpy's default, "type 7") of `values`,
// q in [0, 1]. NaNs are ignored; NaN when none is left.
double quantile(std::vector<double> values, double q);

struct DriftSummary {
  int steps = 0;
  int layers = 0;
  // Per layer: mean of the curve over its last half, steps [steps/2, steps)
  // (integer division: with 5 steps, steps 2, 3, 4).
  std::vector<double> plateau;
  // Per layer: first step t with ratio[t] >= 0.9 * plateau; -1 when the
  // plateau is not positive (no drift) or not finite.
  std::vector<int> step90;
  // Per step, across layers: median, first and third quartile.
  std::vector<double> median, q1, q3;
};

// ratio: [steps, layers] row-major. Throws std::invalid_argument when the
// size does not match or steps/layers < 1.
DriftSummary summarizeDrift(std::span<const double> ratio, int steps, int layers);

// Share of the plateau a step must reach to count as "on the plateau".
inline constexpr double kPlateauFraction = 0.9;

}  // namespace sdw::drift
