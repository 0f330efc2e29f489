#pragma once
// The binary plumbing the packed weight files share (core/sparse_file.cpp's
// model.sdwsparse, gpu/spmspv_file.cpp's model.sdwcolumn): little-endian header
// fields, a bounds-checked header reader, 64-byte aligned sections, and the
// write-to-.partial-then-rename that never leaves a half-written file.

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace sdw::packed_io {

inline constexpr std::uint64_t kAlign = 64;  // every data section starts on this boundary
inline std::uint64_t alignUp(std::uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

template <typename T>
void put(std::string& buf, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  buf.append(b, sizeof(T));
}

// Header fields in order; a field past the end is "<file>: truncated header".
struct Reader {
  const std::string& buf;
  std::size_t pos = 0;
  std::string file;
  template <typename T>
  T get() {
    if (pos + sizeof(T) > buf.size()) throw std::runtime_error(file + ": truncated header");
    T v;
    std::memcpy(&v, buf.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
};

// The whole file; "<file>: cannot open" where it cannot be read.
std::string readAll(const std::filesystem::path& path);

struct Section {
  std::uint64_t offset = 0;  // from the file start, aligned
  const void* data = nullptr;
  std::uint64_t bytes = 0;
};
// Writes `header` (already padded), then each section at its offset (zeros between), zeros
// up to `end`, into `path.partial`, then renames it to `path`. Throws std::runtime_error on
// I/O errors (disk full named as such).
void writeSections(const std::filesystem::path& path, const std::string& header, const std::vector<Section>& sections,
                   std::uint64_t end);

}  // namespace sdw::packed_io
