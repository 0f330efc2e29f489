#pragma once
// The packed column file (model.sdwcolumn, docs/sparse-format.md "The column file"): a
// model's projections pruned to a column pattern (col2:4, col4:8) in the spMspV kernel's
// column layout (gpu/kernels/spmspv_layout.h), as `sdw-cli prune --pattern col2:4|col4:8`
// writes it next to the checkpoint and `--linear sparse` reads it. Plain little-endian
// binary, no torch.

#include "gpu/spmspv_pack.h"

#include <filesystem>
#include <string>
#include <vector>

namespace sdw::gpu {

inline constexpr char kSpmspvFileMagic[8] = {'S', 'D', 'W', 'C', 'O', 'L', 'M', '1'};
inline constexpr std::uint32_t kSpmspvFileVersion = 1;
inline constexpr const char* kSpmspvFileName = "model.sdwcolumn";

struct SpmspvModule {
  std::string name;  // e.g. "model.layers.0.mlp.up_proj"
  SpmspvMatrix matrix;
};

// All modules share one column layout (Column24 or Column48) and dtype; each is validated.
// Writes `path.partial`, then renames, so a crash never leaves a half-written file under
// `path`. Throws std::invalid_argument (bad content) or std::runtime_error (I/O).
void writeSpmspvFile(const std::filesystem::path& path, const std::vector<SpmspvModule>& modules);

// Reads and validates every module. Refuses foreign files, newer versions, unknown
// layouts and truncated files with a one-line std::runtime_error naming the file.
std::vector<SpmspvModule> readSpmspvFile(const std::filesystem::path& path);

// "col2:4" / "col4:8" for Column24 / Column48.
std::string spmspvPatternName(kernels::SpmspvFormat f);

}  // namespace sdw::gpu
