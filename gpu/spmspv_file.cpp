// The packed column file (gpu/spmspv_file.h).

#include "gpu/spmspv_file.h"

#include "core/packed_io.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

static_assert(std::endian::native == std::endian::little, "the column file is little-endian");

namespace sdw::gpu {

using packed_io::alignUp;
using packed_io::put;
using packed_io::Reader;

namespace {

// Layout codes in the header.
std::uint8_t formatCode(kernels::SpmspvFormat f) {
  switch (f) {
    case kernels::SpmspvFormat::Column24: return 1;
    case kernels::SpmspvFormat::Column48: return 2;
    default: throw std::invalid_argument("column file: only the col2:4 and col4:8 layouts are stored");
  }
}

}  // namespace

std::string spmspvPatternName(kernels::SpmspvFormat f) {
  return f == kernels::SpmspvFormat::Column48 ? "col4:8" : f == kernels::SpmspvFormat::Column24 ? "col2:4" : "?";
}

void writeSpmspvFile(const std::filesystem::path& path, const std::vector<SpmspvModule>& modules) {
  if (modules.empty()) throw std::invalid_argument("column file: no modules to write");
  const kernels::SpmspvFormat format = modules.front().matrix.format;
  const sparse::DType dtype = modules.front().matrix.dtype;
  const std::uint8_t code = formatCode(format);
  for (const auto& m : modules) {
    validateSpmspv(m.matrix);
    if (m.matrix.format != format || m.matrix.dtype != dtype)
      throw std::invalid_argument("column file: module " + m.name + " is " + spmspvPatternName(m.matrix.format) + " " +
                                  std::string(sparse::dtypeName(m.matrix.dtype)) + ", the file holds " +
                                  spmspvPatternName(format) + " " + std::string(sparse::dtypeName(dtype)));
  }
  // Header: magic, version, layout, dtype, 2 reserved, module count; then per module its
  // name, rows, cols and where its chunks start (64-byte aligned).
  std::string header;
  header.append(kSpmspvFileMagic, 8);
  put<std::uint32_t>(header, kSpmspvFileVersion);
  put<std::uint8_t>(header, code);
  put<std::uint8_t>(header, static_cast<std::uint8_t>(dtype));
  header.append(2, '\0');
  put<std::uint32_t>(header, static_cast<std::uint32_t>(modules.size()));
  std::uint64_t tableBytes = 0;
  for (const auto& m : modules) tableBytes += 4 + m.name.size() + 3 * 8;
  std::uint64_t offset = alignUp(header.size() + tableBytes);
  std::vector<std::uint64_t> chunkOff;
  for (const auto& m : modules) {
    chunkOff.push_back(offset);
    offset = alignUp(offset + m.matrix.chunks.size() * 2);
  }
  for (std::size_t i = 0; i < modules.size(); ++i) {
    put<std::uint32_t>(header, static_cast<std::uint32_t>(modules[i].name.size()));
    header += modules[i].name;
    put<std::uint64_t>(header, static_cast<std::uint64_t>(modules[i].matrix.rows));
    put<std::uint64_t>(header, static_cast<std::uint64_t>(modules[i].matrix.cols));
    put<std::uint64_t>(header, chunkOff[i]);
  }
  header.resize(alignUp(header.size()), '\0');

  std::vector<packed_io::Section> sections;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const auto& c = modules[i].matrix.chunks;
    sections.push_back({chunkOff[i], c.data(), c.size() * 2});
  }
  packed_io::writeSections(path, header, sections, offset);
}

std::vector<SpmspvModule> readSpmspvFile(const std::filesystem::path& path) {
  const std::string file = path.string();
  const std::string buf = packed_io::readAll(path);
  if (buf.size() < 8 || std::memcmp(buf.data(), kSpmspvFileMagic, 8) != 0)
    throw std::runtime_error(file + ": not a packed column file (bad magic)");
  Reader rd{buf, 8, file};
  const auto version = rd.get<std::uint32_t>();
  if (version > kSpmspvFileVersion)
    throw std::runtime_error(file + ": format version " + std::to_string(version) +
                             " is newer than this build reads (" + std::to_string(kSpmspvFileVersion) + ")");
  if (version == 0) throw std::runtime_error(file + ": format version 0 is invalid");
  const auto code = rd.get<std::uint8_t>();
  const auto dtype = static_cast<sparse::DType>(rd.get<std::uint8_t>());
  rd.pos += 2;
  const auto count = rd.get<std::uint32_t>();
  if (code != 1 && code != 2) throw std::runtime_error(file + ": unknown layout code " + std::to_string(code));
  const auto format = code == 1 ? kernels::SpmspvFormat::Column24 : kernels::SpmspvFormat::Column48;
  if (dtype != sparse::DType::BF16 && dtype != sparse::DType::F16)
    throw std::runtime_error(file + ": unknown value dtype code " + std::to_string(static_cast<int>(dtype)));
  std::vector<SpmspvModule> modules;
  for (std::uint32_t i = 0; i < count; ++i) {
    SpmspvModule m;
    const auto len = rd.get<std::uint32_t>();
    if (rd.pos + len > buf.size()) throw std::runtime_error(file + ": truncated module table");
    m.name.assign(buf.data() + rd.pos, len);
    rd.pos += len;
    const auto rows = rd.get<std::uint64_t>(), cols = rd.get<std::uint64_t>(), off = rd.get<std::uint64_t>();
    if (rows == 0 || cols == 0 || rows > (1ull << 31) || cols > (1ull << 31))
      throw std::runtime_error(file + ": module " + m.name + " has invalid shape [" + std::to_string(rows) + ", " +
                               std::to_string(cols) + "]");
    const std::uint64_t bytes = static_cast<std::uint64_t>(kernels::spmspvTiles(static_cast<std::int64_t>(rows))) *
                                cols * static_cast<std::uint64_t>(kernels::spmspvChunkBytes(format));
    if (off > buf.size() || bytes > buf.size() - off)
      throw std::runtime_error(file + ": truncated (module " + m.name + " data lies past the end)");
    m.matrix.rows = static_cast<std::int64_t>(rows);
    m.matrix.cols = static_cast<std::int64_t>(cols);
    m.matrix.format = format;
    m.matrix.dtype = dtype;
    m.matrix.chunks.resize(bytes / 2);
    std::memcpy(m.matrix.chunks.data(), buf.data() + off, bytes);
    try {
      validateSpmspv(m.matrix);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(file + ": module " + m.name + ": " + e.what());
    }
    modules.push_back(std::move(m));
  }
  return modules;
}

}  // namespace sdw::gpu
