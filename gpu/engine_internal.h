#pragma once
// Torch-typed internals of the decode engine (gpu/decode_engine.cpp): the
// packed projections of a sparse model, the fused q|k|v and gate|up weights, and
// the captured decode step. Include only from gpu/*.cpp and engine tests.

#include "core/sparse_file.h"
#include "core/sparse_format.h"
#include "gpu/model_internal.h"
#include "gpu/spmspv_pack.h"
#include "gpu/spmv_ops.h"

#include <ATen/core/Tensor.h>

#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sdw::gpu {

// Projection kinds in LayerWeights order (q k v o gate up down).
enum ProjKind { kProjQ = 0, kProjK, kProjV, kProjO, kProjGate, kProjUp, kProjDown };

// One projection held packed (its dense LayerWeights tensor is undefined): in the bitmask
// N:M format (model.sdwsparse), or with `column` in a column layout of the spMspV kernel
// (model.sdwcolumn: col2:4, col4:8).
struct PackedProj {
  bool present = false;
  DeviceBitmask dev;          // CUDA: device layout (a view into the group's storage where fused)
  sparse::PackedMatrix host;  // CPU: row-major packed matrix for the CPU SpMV
  bool column = false;
  SpmspvMatrix col;                      // the column layout (CUDA: its shape, format and dtype; chunks on the device)
  at::Tensor colChunks;                  // CUDA: the chunk buffer, int16 elements
  at::Tensor colWorkspace, colCounters;  // CUDA, the eager pass's launches: made on first use
};

struct DecodeGraph;  // gpu/decode_engine.cpp (CUDA)

struct EngineState {
  Linear linear = Linear::Cublas;
  std::string pattern;                            // of the packed projections, "" when none ("col2:4": column file)
  std::vector<std::array<PackedProj, 7>> packed;  // [layer][kind]
  // Fused groups per layer: dense storage whose rows the LayerWeights q/k/v (gate/up)
  // are views of, or packed storage whose row tiles the members' DeviceBitmask views are.
  std::vector<at::Tensor> qkvDense, guDense;
  std::vector<DeviceBitmask> qkvPacked, guPacked;  // values undefined where not fused
  // Column-layout members fused the same way (CUDA; rows of each a multiple of 256): the
  // chunk buffers of row tiles one after another are the fused matrix's; not present where
  // not fused.
  std::vector<PackedProj> qkvColumn, guColumn;
  std::vector<at::Tensor> qkvBias;  // [layer] q|k|v biases in one vector (Qwen2), else undefined
  TuningTable tuning;
  bool haveTuning = false;
  std::shared_ptr<DecodeGraph> graph;
  int packedCount() const;
};

// Checkpoint name of each projection ("model.layers.3.mlp.up_proj") -> (layer, ProjKind).
std::map<std::string, std::pair<int, int>> projectionIndex(const Model::Impl& m);

// Builds the engine state after the weights are in place: reads and checks the
// sparse file (load) or prunes the random weights (randomInit), drops the dense
// copies of packed projections, fuses q|k|v and gate|up storage on CUDA.
// checkpointDtypes: safetensors dtype per projection name ("BF16"...), empty for randomInit.
// prepacked: projections a compressed-tensors checkpoint delivered packed (their dense
// tensors were never made); fromCompressed: the checkpoint is one (no model.sdwsparse read).
void setupEngine(Model::Impl& m, const std::filesystem::path& checkpointDir,
                 const std::map<std::string, std::string>& checkpointDtypes,
                 std::vector<sparse::SparseModule> prepacked, bool fromCompressed);

// x [..., cols] -> [..., rows] through a packed projection (eager path: prefill,
// teacher forcing, observed decode steps).
at::Tensor packedLinear(Model::Impl& m, int layer, int kind, const at::Tensor& x);

// Whether the fused engine has kernels for the architecture (all supported ones, Gemma 3
// included; not attention soft-capping, which no supported config applies).
bool engineSupportsArchitecture(const ModelConfig& c);
// Whether decode steps run through the fused engine now (CUDA, no observers, an
// architecture and head shape the engine supports; activation sparsity included).
bool engineDecodes(const Model::Impl& m);
// One decode step through the engine: row b feeds ids[b] at model position
// slot - pad[b], its key/value goes to cache slot `slot`. Returns the logits
// [B, vocab] (a view of the engine's buffer, valid until the next step).
at::Tensor engineStep(Model::Impl& m, KvCache& cache, const std::vector<std::int32_t>& ids, std::int64_t slot,
                      const std::vector<std::int64_t>& pad);
// Benchmark loop: prepares the step for (batch, cache) with ids and slot as given, then
// replays it `steps` times with each step's argmax fed back on the device (no host
// round trip). timer(i, begin/end) brackets step i when given.
void engineGreedyLoop(Model::Impl& m, KvCache& cache, const std::vector<std::int32_t>& ids, std::int64_t slot,
                      int steps, const std::function<void(int, bool)>& bracket);

// One projection shape's launch as chosen in the whole step.
struct StepTuned {
  std::int64_t rows = 0, cols = 0;
  int batch = 1;
  bool m16 = false;  // 8:16 or 16:32 (either path): TuningEntry::sparseStepM16
  std::string dtype;
  SpmvLaunch before, after;          // pdl: whether launched with programmatic dependent launch
  bool dense = false;                // our dense GEMV (denseBefore, denseAfter) instead of the SpMV
  GemvLaunch denseBefore, denseAfter;
  double beforeUs = 0, afterUs = 0;  // the step's median time with each (25 replays)
  int candidates = 0;
};
// Captured step of ids.size() rows (1-8): per projection of the layer whose launches are the
// bitmask SpMV in every layer (q|k|v, o, gate|up, down), its launch chosen by the whole step's
// time, one projection after the other. On the CUDA cores: the table's chained and plain
// launches with and without programmatic launch and the tuning space's with it (batch 1: unroll
// 1, 2, 4 and every depth of the bulk pipeline, split-K up to 6; batch 2-8: every swept launch of
// that batch, batch 2's shuffle path among them, split-K up to 8). On the tensor cores: 4 or 8
// tiles a block, a ring of 2-4 stages, split-K from half to twice the heuristic's, with and
// without programmatic launch (x's layout and the pattern's expansion kept). Each candidate over
// 5 replays, the five fastest and the one it had over 25; a change is kept where the step gains
// over 0.3%. Then the same for our dense GEMV's launches (the dense engine's projections, either
// engine's lm_head): the table's chained and plain launches with and without programmatic launch
// and the tuning space's with it. The step keeps the winners (until the graph is rebuilt); the
// caller puts them into a table as TuningEntry::sparseStep / denseStep of that batch. `stage`
// reports progress. Empty elsewhere.
std::vector<StepTuned> engineTuneStep(Model::Impl& m, KvCache& cache, const std::vector<std::int32_t>& ids,
                                      std::int64_t slot, const std::function<void(const std::string&)>& stage);

// Of the step last built: how many of its SpMV / dense GEMV launches (projections and lm_head)
// took their configuration from the tuning table's step entries (TuningEntry::sparseStep,
// sparseStepM16, denseStep), and how many launches of ours it has. {0, 0} without a step.
std::pair<int, int> engineStepEntriesUsed(const Model::Impl& m);

}  // namespace sdw::gpu
