#pragma once
// Pieces of pruneModel shared between gpu/prune_model.cpp (the layer loop)
// and gpu/prune_outputs.cpp (checkpoint, bitmask file, run record). Plain types.

#include "core/run_decoding.h"
#include "gpu/pruning.h"

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

struct PruneRecordInfo {
  std::string calibrationRunId, calibrationSource, calibrationModelDir;
  std::int64_t calibrationTokens = 0;
  // What the calibration decoded (and from which prompts): recorded in the
  // record and the checkpoint's metadata, so that an evaluation or a drift
  // analysis of the pruned model can compare it with its own decoding.
  RunDecoding calibration;
};

// Writes <out>/model.safetensors (every source tensor, pruned ones replaced),
// copies config, generation config and tokenizer files, and, for a 50% N:M
// pattern with M | 32, <out>/model.sdwsparse (modules whose width is not a
// multiple of 32 stay dense there: packed = false). Fills result paths.
void writePrunedOutputs(const PruneSettings& s, const PruningPattern& pattern,
                        const std::map<std::string, PrunedTensor>& pruned, const PruneRecordInfo& info,
                        PruneResult& result);

// The run file of kind "pruning" (docs/run-format.md "Pruning runs").
void writePruningRecord(const PruneSettings& s, const PruningPattern& pattern, const PruneRecordInfo& info,
                        PruneResult& result);

}  // namespace sdw::gpu
