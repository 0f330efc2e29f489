#pragma once
// A pruned copy of the sample model for engine tests: every projection pruned
// N:M by magnitude (the N largest |w| of each group of M, lower index first
// among ties), written as `sdw-cli prune` writes its output: the checkpoint with
// zeros (bf16, config and tokenizer copied) and the packed model.sdwsparse.

#include "core/safetensors.h"
#include "core/sparse_file.h"
#include "core/sparse_format.h"
#include "gpu/spmspv_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace sdw::testing {

inline const std::filesystem::path kSampleModel = std::filesystem::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";

// Copies src's model-side files to dst and writes its checkpoint with every projection
// (bf16 [rows, cols]) pruned in place by prune(bits, rows, cols); pack(module name, bits,
// rows, cols) sees each pruned projection.
template <typename Prune, typename Pack>
void writePrunedCopy(const std::filesystem::path& dst, const std::filesystem::path& src, Prune prune, Pack pack) {
  namespace fs = std::filesystem;
  fs::create_directories(dst);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    if (fs::exists(src / f)) fs::copy_file(src / f, dst / f, fs::copy_options::overwrite_existing);
  const auto file = SafetensorsFile::open(src / "model.safetensors");
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorToWrite> out;
  storage.reserve(file.tensors().size());
  for (const auto& [name, v] : file.tensors()) {
    std::vector<std::byte> bytes(v.bytes.begin(), v.bytes.end());
    if (name.find("_proj.weight") != std::string::npos) {
      if (v.dtype != "BF16") throw std::runtime_error("the sample model is stored in bfloat16");
      const std::int64_t rows = v.shape.at(0), cols = v.shape.at(1);
      std::vector<std::uint16_t> h(static_cast<std::size_t>(rows * cols));
      std::memcpy(h.data(), bytes.data(), h.size() * 2);
      prune(h, rows, cols);
      std::memcpy(bytes.data(), h.data(), h.size() * 2);
      pack(name.substr(0, name.size() - std::string(".weight").size()), h, rows, cols);
    }
    storage.push_back(std::move(bytes));
    out.push_back({name, v.dtype, v.shape, std::span<const std::byte>(storage.back())});
  }
  writeSafetensors(dst / "model.safetensors", out, {});
}

// In each of `groups` groups of `m` entries (entry k of group g at bits[at(g, k)]), the n of
// largest magnitude are kept (lower k first among ties), the rest set to +0.
template <typename At>
void keepLargest(std::vector<std::uint16_t>& bits, std::int64_t groups, int n, int m, At at) {
  for (std::int64_t g = 0; g < groups; ++g) {
    std::vector<int> idx(static_cast<std::size_t>(m));
    std::iota(idx.begin(), idx.end(), 0);
    const auto mag = [&](int k) { return std::abs(sparse::bf16ToFloat(bits[at(g, k)])); };
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return mag(a) > mag(b); });
    for (std::size_t k = static_cast<std::size_t>(n); k < idx.size(); ++k) bits[at(g, idx[k])] = 0;
  }
}

inline void writeNmPruned(const std::filesystem::path& dst, sparse::Pattern pattern,
                          const std::filesystem::path& src = kSampleModel) {
  std::vector<sparse::SparseModule> packed;
  writePrunedCopy(
      dst, src,
      [&](std::vector<std::uint16_t>& h, std::int64_t rows, std::int64_t cols) {
        const std::int64_t perRow = cols / pattern.m;
        keepLargest(h, rows * perRow, pattern.n, pattern.m, [&](std::int64_t g, int k) {
          return static_cast<std::size_t>(g / perRow * cols + g % perRow * pattern.m + k);
        });
      },
      [&](const std::string& name, const std::vector<std::uint16_t>& h, std::int64_t rows, std::int64_t cols) {
        std::vector<float> w(h.size());
        for (std::size_t i = 0; i < h.size(); ++i) w[i] = sparse::bf16ToFloat(h[i]);
        packed.push_back({name, sparse::packDense(w, rows, cols, pattern, sparse::DType::BF16)});
      });
  sparse::writeSparseFile(dst / "model.sdwsparse", packed);
}

// The same with the groups down each input column (col2:4, col4:8: in column j, rows
// M g .. M g + M - 1 keep their N largest |w|; every projection's rows a multiple of M), and
// the column file (model.sdwcolumn) in the spMspV kernel's layout instead of the bitmask file.
inline void writeColumnPruned(const std::filesystem::path& dst, int n, int m,
                              const std::filesystem::path& src = kSampleModel) {
  std::vector<gpu::SpmspvModule> packed;
  const auto format = m == 4 ? kernels::SpmspvFormat::Column24 : kernels::SpmspvFormat::Column48;
  writePrunedCopy(
      dst, src,
      [&](std::vector<std::uint16_t>& h, std::int64_t rows, std::int64_t cols) {
        if (rows % m != 0) throw std::runtime_error("writeColumnPruned: rows not a multiple of the group");
        keepLargest(h, rows / m * cols, n, m, [&](std::int64_t g, int k) {
          return static_cast<std::size_t>((g / cols * m + k) * cols + g % cols);
        });
      },
      [&](const std::string& name, const std::vector<std::uint16_t>& h, std::int64_t rows, std::int64_t cols) {
        packed.push_back({name, gpu::packSpmspv(h, rows, cols, sparse::DType::BF16, format)});
      });
  gpu::writeSpmspvFile(dst / gpu::kSpmspvFileName, packed);
}

}  // namespace sdw::testing
