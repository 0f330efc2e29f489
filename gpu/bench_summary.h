#pragma once
// Speed-ups of benchmark rows over the baselines (cuBLAS, our dense GEMV,
// cuSPARSELt): the one place that pairs a row with its baseline's time. The
// runner fills BenchRow's speed-ups with it, summarise() takes its medians
// with it, and a view that needs other speed-ups asks it. Plain types.

#include "gpu/kernel_id.h"

#include <map>
#include <string>

namespace sdw::gpu {

struct BenchRow;

// The baselines' times per problem (model, module, shape, batch).
class BaselineTimes {
 public:
  // Records r's times if r is a baseline (KernelInfo::baseline); other rows are ignored.
  void add(const BenchRow& r);
  // Baseline time / r's time; 0 where either is missing. chained: r's chained time
  // (BenchRow::usChained) against our dense GEMV's chained time, or against the
  // libraries' plain time (LibTorch launches them without overlap).
  double speedup(const BenchRow& r, Baseline b, bool chained = false) const;
  // The baseline's time for r's problem (chained as above); 0 where not measured.
  double time(const BenchRow& r, Baseline b, bool chained = false) const;
  // The bytes a dense GEMV reads for r's problem: our dense GEMV's row, else cuBLAS's; 0
  // where neither was measured.
  double denseBytes(const BenchRow& r) const;

 private:
  static std::string problem(const BenchRow& r);
  std::map<std::string, double> plain_[3], chained_[3];  // by Baseline
  std::map<std::string, double> denseBytes_[3];          // by Baseline
};

}  // namespace sdw::gpu
