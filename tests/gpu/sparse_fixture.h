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

inline void writeNmPruned(const std::filesystem::path& dst, sparse::Pattern pattern,
                          const std::filesystem::path& src = kSampleModel) {
  namespace fs = std::filesystem;
  fs::create_directories(dst);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    if (fs::exists(src / f)) fs::copy_file(src / f, dst / f, fs::copy_options::overwrite_existing);
  const auto file = SafetensorsFile::open(src / "model.safetensors");
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorToWrite> out;
  std::vector<sparse::SparseModule> packed;
  storage.reserve(file.tensors().size());
  for (const auto& [name, v] : file.tensors()) {
    std::vector<std::byte> bytes(v.bytes.begin(), v.bytes.end());
    if (name.find("_proj.weight") != std::string::npos) {
      if (v.dtype != "BF16") throw std::runtime_error("the sample model is stored in bfloat16");
      const std::int64_t rows = v.shape.at(0), cols = v.shape.at(1);
      std::vector<std::uint16_t> h(static_cast<std::size_t>(rows * cols));
      std::memcpy(h.data(), bytes.data(), h.size() * 2);
      std::vector<float> w(h.size());
      for (std::size_t i = 0; i < h.size(); ++i) w[i] = sparse::bf16ToFloat(h[i]);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t g = 0; g < cols; g += pattern.m) {
          std::vector<int> idx(static_cast<std::size_t>(pattern.m));
          std::iota(idx.begin(), idx.end(), 0);
          float* row = w.data() + r * cols + g;
          std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return std::abs(row[a]) > std::abs(row[b]); });
          for (std::size_t k = static_cast<std::size_t>(pattern.n); k < idx.size(); ++k) row[idx[k]] = 0.f;
        }
      for (std::size_t i = 0; i < h.size(); ++i) h[i] = sparse::floatToBf16(w[i]);
      std::memcpy(bytes.data(), h.data(), h.size() * 2);
      packed.push_back({name.substr(0, name.size() - std::string(".weight").size()),
                        sparse::packDense(w, rows, cols, pattern, sparse::DType::BF16)});
    }
    storage.push_back(std::move(bytes));
    out.push_back({name, v.dtype, v.shape, std::span<const std::byte>(storage.back())});
  }
  writeSafetensors(dst / "model.safetensors", out, {});
  sparse::writeSparseFile(dst / "model.sdwsparse", packed);
}

// The same with the groups down each input column (col2:4, col4:8: in column j, rows
// M g .. M g + M - 1 keep their N largest |w|), and the column file (model.sdwcolumn) in
// the spMspV kernel's layout instead of the bitmask file.
inline void writeColumnPruned(const std::filesystem::path& dst, int n, int m,
                              const std::filesystem::path& src = kSampleModel) {
  namespace fs = std::filesystem;
  fs::create_directories(dst);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    if (fs::exists(src / f)) fs::copy_file(src / f, dst / f, fs::copy_options::overwrite_existing);
  const auto file = SafetensorsFile::open(src / "model.safetensors");
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorToWrite> out;
  std::vector<gpu::SpmspvModule> packed;
  storage.reserve(file.tensors().size());
  const auto format = m == 4 ? kernels::SpmspvFormat::Column24 : kernels::SpmspvFormat::Column48;
  for (const auto& [name, v] : file.tensors()) {
    std::vector<std::byte> bytes(v.bytes.begin(), v.bytes.end());
    if (name.find("_proj.weight") != std::string::npos) {
      if (v.dtype != "BF16") throw std::runtime_error("the sample model is stored in bfloat16");
      const std::int64_t rows = v.shape.at(0), cols = v.shape.at(1);
      std::vector<std::uint16_t> h(static_cast<std::size_t>(rows * cols));
      std::memcpy(h.data(), bytes.data(), h.size() * 2);
      for (std::int64_t j = 0; j < cols; ++j)
        for (std::int64_t g = 0; g < rows; g += m) {
          std::vector<std::int64_t> idx;
          for (std::int64_t r = g; r < std::min(rows, g + m); ++r) idx.push_back(r);
          const auto mag = [&](std::int64_t r) {
            return std::abs(sparse::bf16ToFloat(h[static_cast<std::size_t>(r * cols + j)]));
          };
          std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t a, std::int64_t b) { return mag(a) > mag(b); });
          for (std::size_t k = static_cast<std::size_t>(n); k < idx.size(); ++k)
            h[static_cast<std::size_t>(idx[k] * cols + j)] = 0;
        }
      std::memcpy(bytes.data(), h.data(), h.size() * 2);
      packed.push_back({name.substr(0, name.size() - std::string(".weight").size()),
                        gpu::packSpmspv(h, rows, cols, sparse::DType::BF16, format)});
    }
    storage.push_back(std::move(bytes));
    out.push_back({name, v.dtype, v.shape, std::span<const std::byte>(storage.back())});
  }
  writeSafetensors(dst / "model.safetensors", out, {});
  gpu::writeSpmspvFile(dst / gpu::kSpmspvFileName, packed);
}

}  // namespace sdw::testing
