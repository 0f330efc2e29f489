#pragma once
// Pieces of pruneModel shared between gpu/prune_model.cpp (the layer loop)
// and gpu/prune_outputs.cpp (checkpoint, bitmask file). The run record is
// gpu/pruning_run.h. Plain types.

#include "gpu/pruning.h"
#include "gpu/pruning_run.h"

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace sdw::gpu {

struct PrunedTensor {
  std::string dtype;                 // safetensors dtype of the source ("BF16", "F16", "F32")
  std::vector<std::int64_t> shape;   // [rows, cols]
  std::vector<std::byte> bytes;      // the pruned weight in that dtype
};

// Safetensors dtype <-> fp32.
std::vector<float> decodeToFloat(const std::string& dtype, const std::byte* data, std::int64_t n);
std::vector<std::byte> encodeFromFloat(const std::string& dtype, const float* data, std::int64_t n);

// Writes <out>/model.safetensors (every source tensor, pruned ones replaced),
// copies config, generation config and tokenizer files, and, for a 50% N:M
// pattern with M | 32, <out>/model.sdwsparse (modules whose width is not a
// multiple of 32 stay dense there: packed = false). Fills result paths.
void writePrunedOutputs(const PruneSettings& s, const PruningPattern& pattern,
                        const std::map<std::string, PrunedTensor>& pruned, const PruneRecordInfo& info,
                        PruneResult& result);

}  // namespace sdw::gpu
