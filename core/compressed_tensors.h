#pragma once
// The sparse checkpoint formats of the compressed-tensors library (the
// llm-compressor tool chain), written from its published source (version
// 0.12.2: compressors/sparse_compressors/sparse_bitmask.py and
// sparse_24_bitmask.py, utils/helpers.py pack_bitmasks; docs/sparse-format.md).
// A compressed projection `P.weight` [rows, cols] is stored as
//   sparse-bitmask:     P.shape int64 [2], P.compressed [nnz] (the non-zero
//                       weights in row-major order, the weight's dtype),
//                       P.bitmask uint8 [rows, ceil(cols/8)] (bit j of byte k:
//                       column 8k + j kept, numpy packbits little), P.row_offsets
//                       int64 [rows] (index of each row's first value);
//   sparse-24-bitmask:  P.shape int64 [2, 1], P.compressed [rows, cols/2] (the
//                       two kept weights of each group of four, in column order),
//                       P.bitmask uint8 [rows, cols/8].
// config.json carries "quantization_config": {"quant_method":
// "compressed-tensors", "version", "sparsity_config": {"format", "targets",
// "ignore", "global_sparsity", "sparsity_structure"}, "transform_config": {}}.
// For 2:4 with cols a multiple of 32, the bitmask bytes of a row are our mask
// words (core/sparse_format.h) byte for byte on a little-endian machine and the
// values are our packed values: the import is a copy.

#include "core/sparse_format.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sdw::ct {

enum class Format { SparseBitmask, Sparse24Bitmask };
std::string formatName(Format f);  // "sparse-bitmask", "sparse-24-bitmask"

inline constexpr const char* kFormatVersion = "0.12.2";  // the compressed-tensors source the layout follows

struct ExportResult {
  std::filesystem::path outDir;
  Format format = Format::SparseBitmask;
  int compressedModules = 0;
  std::uint64_t denseBytes = 0;       // the projections as dense tensors
  std::uint64_t compressedBytes = 0;  // their compressed tensors
  double globalSparsity = 0;          // zeros among the compressed projections' weights
};

// A pruned checkpoint (dense with zeros, Hugging Face layout) as a compressed-tensors
// checkpoint in `outDir`: every attention and MLP projection weight compressed,
// everything else copied, config.json extended, tokenizer and generation files
// copied. Format::Sparse24Bitmask needs every projection 2:4 (at most two non-zeros
// per aligned group of four, cols a multiple of 4); where a group keeps fewer, its
// lowest-index zeros are kept, as our packer does. Written to `outDir.partial`,
// then renamed. Throws std::runtime_error / std::invalid_argument naming the tensor.
ExportResult exportCompressedTensors(const std::filesystem::path& prunedDir, const std::filesystem::path& outDir,
                                     Format format, const std::string& sparsityStructure);

// The compression a checkpoint's config.json declares: the format, or nothing for a
// plain checkpoint. Throws std::runtime_error for compressed-tensors checkpoints this
// program cannot read (quantized ones, other formats), naming what they declare.
std::optional<Format> declaredFormat(const std::filesystem::path& checkpointDir);

// One compressed projection `prefix` (without ".weight") read from a
// compressed-tensors checkpoint: its dense weights as float, [rows, cols].
struct DenseWeight {
  std::int64_t rows = 0, cols = 0;
  std::string dtype;  // of the stored values: "BF16", "F16", "F32"
  std::vector<float> values;
};
class Reader {
 public:
  explicit Reader(const std::filesystem::path& checkpointDir);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  Format format() const { return format_; }
  // The declared sparsity_structure ("2:4", "unstructured", ...).
  const std::string& structure() const { return structure_; }
  // Whether `prefix` is stored compressed (P.compressed present).
  bool compressed(const std::string& prefix) const;
  DenseWeight dense(const std::string& prefix) const;
  // The projection in our packed format when its mask is a supported 50% N:M
  // pattern (sparse-24-bitmask: a copy); nullopt otherwise.
  std::optional<sparse::PackedMatrix> packed(const std::string& prefix, sparse::Pattern pattern) const;

 private:
  struct Impl;
  Impl* impl_;
  Format format_ = Format::SparseBitmask;
  std::string structure_;
};

}  // namespace sdw::ct
