#pragma once
// The safetensors checkpoint format, read directly and memory-mapped.
//
// A file is: 8 bytes little-endian u64 N, N bytes of JSON header, then the
// data. The header maps tensor names to {"dtype", "shape", "data_offsets":
// [begin, end)} (offsets relative to the start of the data) plus an optional
// "__metadata__" object of strings. A sharded checkpoint adds
// `model.safetensors.index.json` whose "weight_map" names the shard of each
// tensor.
//
// Files are mapped read-only (no copy); a tensor's bytes are a span into the
// mapping, valid as long as the SafetensorsFile (or a checkpoint holding it)
// lives. Every error names the file and, where there is one, the tensor.
// Torch-free: the engine wraps the spans into tensors itself.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdw {

// Bytes per element of a safetensors dtype ("F32", "BF16", ...); throws
// std::invalid_argument on an unknown one.
std::size_t safetensorsDtypeSize(std::string_view dtype);

struct TensorView {
  std::string name;
  std::string dtype;                 // as written: "F32", "F16", "BF16", ...
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;  // into the mapping
  std::int64_t numel() const;
};

class MappedFile;

class SafetensorsFile {
 public:
  // Maps and validates the whole header (offsets inside the file, sizes that
  // match dtype x shape, no overlaps). Throws std::runtime_error.
  static SafetensorsFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const TensorView* find(const std::string& name) const;
  std::uint64_t fileSize() const;

 private:
  std::filesystem::path path_;
  std::shared_ptr<const MappedFile> map_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, TensorView> tensors_;
};

// A checkpoint folder: `model.safetensors`, or the shards named by
// `model.safetensors.index.json`, or (with a file path) that one file.
class SafetensorsCheckpoint {
 public:
  static SafetensorsCheckpoint open(const std::filesystem::path& dirOrFile);

  struct Entry {
    const TensorView* view = nullptr;
    const std::filesystem::path* file = nullptr;
  };
  // nullptr view when absent.
  Entry find(const std::string& name) const;
  std::vector<std::string> names() const;
  std::vector<std::filesystem::path> files() const;
  std::uint64_t totalTensorBytes() const;

 private:
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::size_t> where_;  // name -> index into files_
};

// Writes a safetensors file (tests, pruned checkpoints). Entries' bytes must
// hold exactly numel x dtype size. Writes `path.partial` and renames.
struct TensorToWrite {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;
};
void writeSafetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace sdw
