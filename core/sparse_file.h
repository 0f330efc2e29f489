#pragma once
// The packed sparse model file (docs/sparse-format.md): a header naming the
// pattern and value dtype, a table of modules (name, rows, cols, offsets), then
// each module's values and mask words. Plain little-endian binary.

#include "core/sparse_format.h"

#include <filesystem>
#include <string>
#include <vector>

namespace sdw::sparse {

inline constexpr char kFileMagic[8] = {'S', 'D', 'W', 'B', 'M', 'S', 'K', '1'};
inline constexpr std::uint32_t kFileVersion = 1;

struct SparseModule {
  std::string name;  // e.g. "model.layers.0.self_attn.q_proj"
  PackedMatrix matrix;
};

// All modules must share one pattern and dtype. Writes `path.partial`, then
// renames, so a crash never leaves a half-written file under `path`.
// Throws std::runtime_error (I/O) or std::invalid_argument (bad content).
void writeSparseFile(const std::filesystem::path& path, const std::vector<SparseModule>& modules);

// Reads and validates every module. Refuses foreign files, newer versions and
// truncated files with a one-line std::runtime_error.
std::vector<SparseModule> readSparseFile(const std::filesystem::path& path);

}  // namespace sdw::sparse
