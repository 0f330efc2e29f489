#pragma once
// The JSON of the decode benchmark, shared by `sdw-cli bench decode` and the
// GUI's End-to-end decode view (which saves and reloads it): one object per
// (config, linear, pattern, batch) row, and a summary per config and batch with
// the dense engines side by side and each pattern's speed-up over our dense
// engine, over the best dense measured, and the bandwidth limit of that speed-up
// (dense bytes per step over sparse bytes per step).

#include "gpu/bench_decode.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace sdw::gpu {

// Fields: config, architecture, parameters, linear, pattern, engine, packed_projections,
// dtype, context, batch, warmup_steps, timed_steps, median_ms, p10_ms, p90_ms, mean_ms,
// tokens_per_second, prefill_ms, setup_seconds, weight/kv/bytes_per_step, gb_per_s,
// gpu_memory_bytes, measured_read_gb_per_s, limit_tokens_per_second,
// ratio_to_bandwidth_limit, step_ms, method.
nlohmann::json decodeRowJson(const DecodeBenchResult& r, const std::string& architecture);

// Per (config, batch) of the rows, in first-seen order: <linear>_tokens_per_second for
// each dense linear, best_dense_linear / best_dense_tokens_per_second, and under
// "sparse" per pattern: tokens_per_second, speedup_over_dense_engine,
// speedup_over_best_dense, speedup_limit; pattern_spread = fastest / slowest - 1.
nlohmann::json decodeSummaryJson(const std::vector<nlohmann::json>& rows);

}  // namespace sdw::gpu
