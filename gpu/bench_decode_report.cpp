// The JSON of `sdw-cli bench decode` (gpu/bench_decode_report.h).

#include "gpu/bench_decode_report.h"

#include <algorithm>
#include <utility>

namespace sdw::gpu {

nlohmann::json decodeRowJson(const DecodeBenchResult& r, const std::string& architecture) {
  nlohmann::json j = {{"config", r.configName},
                      {"architecture", architecture},
                      {"parameters", r.parameters},
                      {"linear", r.linear},
                      {"pattern", r.pattern},
                      {"activation_sparsity", r.activationSparsity},
                      {"activation_selection", r.activationSelection},
                      {"activation_thresholds_achieved", r.thresholdsAchieved},
                      {"engine", r.engine},
                      {"packed_projections", r.packedProjections},
                      {"dtype", r.dtype},
                      {"context", r.context},
                      {"batch", r.batch},
                      {"warmup_steps", r.warmup},
                      {"timed_steps", r.tokens},
                      {"median_ms", r.medianMs},
                      {"p10_ms", r.p10Ms},
                      {"p90_ms", r.p90Ms},
                      {"mean_ms", r.meanMs},
                      {"tokens_per_second", r.tokensPerSecond},
                      {"prefill_ms", r.prefillMs},
                      {"setup_seconds", r.setupSeconds},
                      {"weight_bytes_per_step", r.weightBytesPerStep},
                      {"kv_bytes_per_step", r.kvBytesPerStep},
                      {"bytes_per_step", r.bytesPerStep},
                      {"gb_per_s", r.achievedGBs},
                      {"achieved_gb_per_s", r.achievedGBs},
                      {"gpu_memory_bytes", r.gpuMemoryBytes},
                      {"measured_read_gb_per_s", r.measuredReadGBs},
                      {"limit_tokens_per_second", r.limitTokensPerSecond},
                      {"bandwidth_limit_tokens_per_second", r.limitTokensPerSecond},
                      {"ratio_to_bandwidth_limit", r.ratioToLimit},
                      {"step_ms", r.stepMs},
                      {"method", r.method}};
  if (!r.stepTuning.empty()) j["step_tuning"] = r.stepTuning;
  if (r.engineLaunches > 0) {  // the engine's SpMV / GEMV launches, and those its table's step entries set
    j["engine_launches"] = r.engineLaunches;
    j["step_entry_launches"] = r.stepEntryLaunches;
  }
  return j;
}


// Per config and batch: the dense engines side by side, each pattern's speed-up over
// our dense engine and over the best dense measured, the limit of that speed-up.
nlohmann::json decodeSummaryJson(const std::vector<nlohmann::json>& rows) {
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::pair<std::string, int>> keys;
  for (const auto& r : rows) {
    const std::pair<std::string, int> k{r["config"].get<std::string>(), r["batch"].get<int>()};
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  for (const auto& [config, batch] : keys) {
    nlohmann::json s = {{"config", config}, {"batch", batch}};
    double own = 0, best = 0;
    std::uint64_t denseBytes = 0;
    std::string bestName;
    for (const auto& r : rows) {
      if (r["config"] != config || r["batch"] != batch) continue;
      const std::string lin = r["linear"];
      const double tps = r["tokens_per_second"];
      if (lin == "sparse") continue;
      s[lin + "_tokens_per_second"] = tps;
      s[lin + "_ratio_to_bandwidth_limit"] = r["ratio_to_bandwidth_limit"];
      if (lin == "dense") own = tps;
      if ((lin == "dense" || lin == "cublas") && tps > best) {
        best = tps;
        bestName = lin;
        denseBytes = r["bytes_per_step"];
      }
    }
    if (best > 0) {
      s["best_dense_linear"] = bestName;
      s["best_dense_tokens_per_second"] = best;
    }
    nlohmann::json sp = nlohmann::json::object();
    double lo = 0, hi = 0;
    for (const auto& r : rows) {
      if (r["config"] != config || r["batch"] != batch || r["linear"] != "sparse") continue;
      const double tps = r["tokens_per_second"];
      nlohmann::json e = {{"tokens_per_second", tps}, {"ratio_to_bandwidth_limit", r["ratio_to_bandwidth_limit"]}};
      if (own > 0) e["speedup_over_dense_engine"] = tps / own;
      if (best > 0) e["speedup_over_best_dense"] = tps / best;
      if (denseBytes > 0)
        e["speedup_limit"] = static_cast<double>(denseBytes) / r["bytes_per_step"].get<double>();
      sp[r["pattern"].get<std::string>()] = e;
      lo = lo == 0 ? tps : std::min(lo, tps);
      hi = std::max(hi, tps);
    }
    if (!sp.empty()) {
      s["sparse"] = sp;
      s["pattern_spread"] = hi / lo - 1.0;
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace sdw::gpu
