#pragma once
// Launch configurations of the SpMV / GEMV kernels and the per-shape tuning
// table that persists them (resources/tuning/*.json). Plain types.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sdw::gpu {

struct SpmvLaunch {
  int warps = 8;     // warps per block on one 32-row tile
  int unroll = 2;    // mask words in flight per warp (1, 2, 4; 3 at batch 1; at batch 1 also
                     // 10 S + U = 41, 61, 81, 42, 34: S-stage bulk-copy pipeline, sm_90; at batch 2-8
                     // also 100 + S = 102, 103, 104: the tensor cores, 2:4 and 4:8 only)
  int splitK = 1;    // blocks per tile along the input dimension
  int cluster = -1;  // batch 1, splitK > 1: reduce in a thread-block cluster (sm_90+). A request,
                     // here, in the tuning JSON ("cluster") and in the probe alike:
                     // -1 auto (up to 8 blocks), 0 never (workspace + ticket), 1 up to 16
  bool pdl = false;  // programmatic dependent launch (sm_90): start and first weight loads overlap the
                     // previous kernel of the stream (a launch option, not kept in the tuning table)
  bool operator==(const SpmvLaunch&) const = default;
};

struct GemvLaunch {
  int warps = 4;
  int rowsPerWarp = 4;
  int unroll = 2;
  int splitK = 1;
  bool pdl = false;  // as SpmvLaunch::pdl
  bool operator==(const GemvLaunch&) const = default;
};

struct TuningEntry {
  std::int64_t rows = 0, cols = 0;
  int batch = 1;
  std::string dtype = "bf16";
  SpmvLaunch sparse;
  GemvLaunch dense;
  double sparseUs = 0, denseUs = 0;  // as measured when tuned
  // Best configurations for chained launches (programmatic dependent launch, sm_90),
  // where they were tuned: JSON "sparse_chained" / "dense_chained", optional.
  std::optional<SpmvLaunch> sparseChained;
  std::optional<GemvLaunch> denseChained;
  double sparseChainedUs = 0, denseChainedUs = 0;
  // The sparse launch chosen by the decode engine's whole step at this batch (`sdw-cli bench
  // decode --tune-step`): its neighbours there are the step's other kernels, not launches of its
  // own shape. JSON "sparse_step", its "pdl" kept (the step may run it without programmatic
  // launch); "us" is the step's time with it. The engine prefers it, exact shape and batch only,
  // on the path it was tuned on (CUDA cores, or the tensor cores for 2:4 and 4:8).
  std::optional<SpmvLaunch> sparseStep;
  double sparseStepUs = 0;
  // The same for 8:16 and 16:32 (tuned with a 16:32 model), on the path they take at that batch:
  // the tensor cores (their longer expansion) or the CUDA cores (batch 3 and 4, where 2:4 takes the
  // tensor cores): JSON "sparse_step_m16".
  std::optional<SpmvLaunch> sparseStepM16;
  double sparseStepM16Us = 0;
  // Our dense GEMV's launch chosen in the whole step (the dense engine's projections, either
  // engine's lm_head): JSON "dense_step", as "sparse_step".
  std::optional<GemvLaunch> denseStep;
  double denseStepUs = 0;
};

// Whether a launch runs the tensor-core SpMV (unroll 100 + S).
inline bool onTensorCores(const SpmvLaunch& l) { return l.unroll > 100 && l.unroll < 200; }

// Best launch configuration per (rows, cols, batch, dtype). Lookup falls back to
// the entry of the same batch with the nearest size, then to a heuristic; at batch 2-4 the
// sparse lookup then applies xShuffleLaunch (below).
class TuningTable {
 public:
  static TuningTable load(const std::filesystem::path& path);  // throws std::runtime_error
  void save(const std::filesystem::path& path) const;
  void put(const TuningEntry& e);
  // chained: the configuration tuned for chained launches where the entry has one
  // (else the plain one); the returned launch's pdl flag is set accordingly.
  SpmvLaunch sparse(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype, int smCount,
                    bool chained = false) const;
  GemvLaunch dense(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype, int smCount,
                   bool chained = false) const;
  // The entry of exactly (rows, cols, batch, dtype), or null.
  const TuningEntry* exact(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype) const;
  // The step-tuned sparse launch of exactly (rows, cols, batch, dtype), pdl as tuned, for a
  // projection of pattern N:M whose SpMV runs on the tensor cores or not: for 8:16 and 16:32 the
  // entry's sparseStepM16 where that was tuned on this path, else on the CUDA cores its sparseStep;
  // otherwise its sparseStep; none where that was tuned on the other path.
  std::optional<SpmvLaunch> sparseStep(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype,
                                       bool tensorCores, int patternM) const;
  // The step-tuned dense GEMV launch of exactly (rows, cols, batch, dtype), pdl as tuned.
  std::optional<GemvLaunch> denseStep(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype) const;
  // The entry of exactly (rows, cols, batch, dtype), or a new one holding the configurations
  // a lookup gives now (for tuning to overwrite part of it and put back).
  TuningEntry entry(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype, int smCount) const;
  const std::vector<TuningEntry>& entries() const { return entries_; }
  std::string device;
  double hbmReadGBs = 0;

 private:
  const TuningEntry* find(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype) const;
  std::vector<TuningEntry> entries_;
};

// The tuning table shipped for a GPU: <resourcesDir>/tuning/<device name in
// lower case, non-alphanumerics as dashes>.json ("NVIDIA H200" ->
// nvidia-h200.json); "" where none exists (the heuristics apply).
std::string defaultTuningPath(const std::filesystem::path& resourcesDir, const std::string& deviceName);

// Batch 2-4 on the CUDA cores (TuningTable::sparse, so the engine and the kernel benchmark): x by shuffle (unroll 200
// + U, docs/kernels.md) in the tuned configuration of the batch where the table chose that path, else in the shape's
// batch-1 configuration (warps, split-K, cluster request and pdl kept; U its words in flight, at most 3, the bulk
// pipeline's 10 S + U giving U). shuffle false: the kernel that stages x, in the batch's configuration (at most 8 warps
// and 2 words where that was a shuffle one).
SpmvLaunch xShuffleLaunch(SpmvLaunch tuned, const SpmvLaunch& tuned1, bool shuffle);
// Whether batch 2-4 takes the shuffle path: yes unless SDW_SPMV_B2=staged (batch 2) or SDW_SPMV_B34=staged (batch 3,
// 4), A/B switches; other batches never.
bool xShuffleFromEnv(int batch);

// The heuristics used without a table entry.
SpmvLaunch defaultSpmvLaunch(std::int64_t rows, std::int64_t cols, int batch, int smCount);
GemvLaunch defaultGemvLaunch(std::int64_t rows, std::int64_t cols, int batch, int smCount);

}  // namespace sdw::gpu
