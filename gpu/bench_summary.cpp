// Speed-ups and the benchmark summary (gpu/bench_summary.h, gpu/bench.h).

#include "gpu/bench_summary.h"

#include "core/stats.h"
#include "gpu/bench.h"

#include <algorithm>
#include <map>
#include <vector>

namespace sdw::gpu {

std::string BaselineTimes::problem(const BenchRow& r) {
  return r.model + "|" + r.module + "|" + std::to_string(r.rows) + "x" + std::to_string(r.cols) + "|" +
         std::to_string(r.batch);
}

void BaselineTimes::add(const BenchRow& r) {
  const auto b = kernelInfo(r.id).baseline;
  if (!b) return;
  const auto i = static_cast<std::size_t>(*b);
  plain_[i][problem(r)] = r.us;
  if (r.usChained > 0) chained_[i][problem(r)] = r.usChained;
  denseBytes_[i][problem(r)] = r.bytes;
}

double BaselineTimes::denseBytes(const BenchRow& r) const {
  for (const Baseline b : {Baseline::OwnDense, Baseline::Cublas}) {
    const auto& m = denseBytes_[static_cast<std::size_t>(b)];
    if (const auto it = m.find(problem(r)); it != m.end()) return it->second;
  }
  return 0.0;
}

double BaselineTimes::time(const BenchRow& r, Baseline b, bool chained) const {
  // Only our dense GEMV has chained times; the libraries are launched as LibTorch launches them.
  const auto i = static_cast<std::size_t>(b);
  const auto& m = chained && b == Baseline::OwnDense ? chained_[i] : plain_[i];
  const auto it = m.find(problem(r));
  return it == m.end() ? 0.0 : it->second;
}

double BaselineTimes::speedup(const BenchRow& r, Baseline b, bool chained) const {
  const double mine = chained ? r.usChained : r.us;
  const double base = time(r, b, chained);
  return mine > 0 && base > 0 ? base / mine : 0.0;
}

void summarise(BenchResult& r, const std::string& /*dtype*/) {
  BaselineTimes base;
  for (const auto& row : r.rows) base.add(row);
  std::map<std::string, std::vector<const BenchRow*>> byPattern;
  for (const auto& row : r.rows) {
    if (row.batch != 1 || isLayerSequence(row)) continue;
    if (row.model != "llama3-8b" && row.model != "qwen3-14b") continue;
    if (!kernelInfo(row.id).sparse) continue;
    byPattern[row.pattern].push_back(&row);
  }
  r.summary.clear();
  double lo = 1e300, hi = 0, loC = 1e300, hiC = 0;
  for (const auto& [pattern, rows] : byPattern) {
    BenchSummary s;
    s.pattern = pattern;
    s.count = static_cast<int>(rows.size());
    std::vector<double> lib, dense, csl, libC, denseC, cslC;
    const auto push = [](std::vector<double>& v, double x) {
      if (x > 0) v.push_back(x);
    };
    for (const BenchRow* row : rows) {
      // The rows' own plain speed-ups (as measured, or as read from a result file).
      push(lib, row->speedupVsCublas);
      push(dense, row->speedupVsDense);
      push(csl, base.speedup(*row, Baseline::Cusparselt));
      if (row->usChained <= 0) continue;
      push(libC, base.speedup(*row, Baseline::Cublas, true));
      push(denseC, base.speedup(*row, Baseline::OwnDense, true));
      push(cslC, base.speedup(*row, Baseline::Cusparselt, true));
    }
    s.medianVsCublas = stats::median(lib, 0.0);
    s.medianVsDense = stats::median(dense, 0.0);
    s.medianVsCusparselt = stats::median(csl, 0.0);
    s.medianVsCublasChained = stats::median(libC, 0.0);
    s.medianVsDenseChained = stats::median(denseC, 0.0);
    s.medianVsCusparseltChained = stats::median(cslC, 0.0);
    lo = std::min(lo, s.medianVsDense);
    hi = std::max(hi, s.medianVsDense);
    if (s.medianVsDenseChained > 0)
      loC = std::min(loC, s.medianVsDenseChained), hiC = std::max(hiC, s.medianVsDenseChained);
    r.summary.push_back(s);
  }
  r.patternSpreadPercent = r.summary.size() > 1 && lo > 0 ? 100.0 * (hi - lo) / lo : 0.0;
  r.patternSpreadChainedPercent = r.summary.size() > 1 && hiC > 0 ? 100.0 * (hiC - loC) / loC : 0.0;

  // spMspV: per weight layout (the pattern column) and activation sparsity over every shape
  // of the run (batch 1).
  std::map<std::pair<std::string, double>, std::vector<const BenchRow*>> byActivation;
  for (const auto& row : r.rows)
    if (row.activationSparsity && row.batch == 1 && !isLayerSequence(row))
      byActivation[{row.pattern, *row.activationSparsity}].push_back(&row);
  r.activationSummary.clear();
  for (const auto& [key, rows] : byActivation) {
    ActivationSummary a;
    a.pattern = key.first;
    a.activationSparsity = key.second;
    a.count = static_cast<int>(rows.size());
    std::vector<double> dense, lib, gbs, hbm, limit, ofLimit;
    for (const BenchRow* row : rows) {
      if (row->speedupVsDense > 0) dense.push_back(row->speedupVsDense);
      if (row->speedupVsCublas > 0) lib.push_back(row->speedupVsCublas);
      gbs.push_back(row->gbs);
      hbm.push_back(row->fractionHbm);
      const double d = base.denseBytes(*row);
      if (d > 0 && row->bytes > 0) {
        limit.push_back(d / row->bytes);
        if (row->speedupVsDense > 0) ofLimit.push_back(row->speedupVsDense / limit.back());
      }
    }
    a.medianVsDense = stats::median(dense, 0.0);
    a.medianVsCublas = stats::median(lib, 0.0);
    a.medianGbs = stats::median(gbs, 0.0);
    a.medianFractionHbm = stats::median(hbm, 0.0);
    a.medianBytesLimit = stats::median(limit, 0.0);
    a.medianFractionOfLimit = stats::median(ofLimit, 0.0);
    r.activationSummary.push_back(a);
  }
}

}  // namespace sdw::gpu
