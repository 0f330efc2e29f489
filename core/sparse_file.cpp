#include "core/sparse_file.h"

#include "core/packed_io.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

static_assert(std::endian::native == std::endian::little,
              "the sparse file is little-endian and read by reinterpretation");

namespace sdw::sparse {

using packed_io::alignUp;
using packed_io::put;
using packed_io::Reader;

void writeSparseFile(const std::filesystem::path& path, const std::vector<SparseModule>& modules) {
  if (modules.empty()) throw std::invalid_argument("sparse file: no modules to write");
  const Pattern pattern = modules.front().matrix.pattern;
  const DType dtype = modules.front().matrix.dtype;
  for (const auto& m : modules) {
    validate(m.matrix);
    if (!(m.matrix.pattern == pattern) || m.matrix.dtype != dtype)
      throw std::invalid_argument("sparse file: module " + m.name + " has pattern " + patternName(m.matrix.pattern) +
                                  " " + std::string(dtypeName(m.matrix.dtype)) + ", the file holds " +
                                  patternName(pattern) + " " + std::string(dtypeName(dtype)));
  }
  // Header: magic, version, n, m, dtype, 3 reserved, module count, table size.
  std::string header;
  header.append(kFileMagic, 8);
  put<std::uint32_t>(header, kFileVersion);
  put<std::uint16_t>(header, static_cast<std::uint16_t>(pattern.n));
  put<std::uint16_t>(header, static_cast<std::uint16_t>(pattern.m));
  put<std::uint8_t>(header, static_cast<std::uint8_t>(dtype));
  header.append(3, '\0');
  put<std::uint32_t>(header, static_cast<std::uint32_t>(modules.size()));
  std::uint64_t tableBytes = 0;
  for (const auto& m : modules) tableBytes += 4 + m.name.size() + 4 * 8;
  std::uint64_t offset = alignUp(header.size() + tableBytes);
  std::vector<std::uint64_t> valueOff, maskOff;
  for (const auto& m : modules) {
    valueOff.push_back(offset);
    offset = alignUp(offset + m.matrix.values.size() * 2);
    maskOff.push_back(offset);
    offset = alignUp(offset + m.matrix.masks.size() * 4);
  }
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const auto& m = modules[i];
    put<std::uint32_t>(header, static_cast<std::uint32_t>(m.name.size()));
    header += m.name;
    put<std::uint64_t>(header, static_cast<std::uint64_t>(m.matrix.rows));
    put<std::uint64_t>(header, static_cast<std::uint64_t>(m.matrix.cols));
    put<std::uint64_t>(header, valueOff[i]);
    put<std::uint64_t>(header, maskOff[i]);
  }
  header.resize(alignUp(header.size()), '\0');

  std::vector<packed_io::Section> sections;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const auto& mm = modules[i].matrix;
    sections.push_back({valueOff[i], mm.values.data(), mm.values.size() * 2});
    sections.push_back({maskOff[i], mm.masks.data(), mm.masks.size() * 4});
  }
  packed_io::writeSections(path, header, sections, offset);
}

std::vector<SparseModule> readSparseFile(const std::filesystem::path& path) {
  const std::string file = path.string();
  const std::string buf = packed_io::readAll(path);
  if (buf.size() < 8 || std::memcmp(buf.data(), kFileMagic, 8) != 0)
    throw std::runtime_error(file + ": not a sparse bitmask file (bad magic)");
  Reader rd{buf, 8, file};
  const auto version = rd.get<std::uint32_t>();
  if (version > kFileVersion)
    throw std::runtime_error(file + ": format version " + std::to_string(version) + " is newer than this build reads (" +
                             std::to_string(kFileVersion) + ")");
  if (version == 0) throw std::runtime_error(file + ": format version 0 is invalid");
  Pattern pattern;
  pattern.n = rd.get<std::uint16_t>();
  pattern.m = rd.get<std::uint16_t>();
  const auto dtype = static_cast<DType>(rd.get<std::uint8_t>());
  rd.pos += 3;
  const auto count = rd.get<std::uint32_t>();
  if (!isSupported(pattern)) throw std::runtime_error(file + ": unsupported pattern " + patternName(pattern));
  if (dtype != DType::BF16 && dtype != DType::F16)
    throw std::runtime_error(file + ": unknown value dtype code " + std::to_string(static_cast<int>(dtype)));
  std::vector<SparseModule> modules;
  std::uint64_t end = 0;  // the writer pads the file to the aligned end of the last section
  for (std::uint32_t i = 0; i < count; ++i) {
    SparseModule m;
    const auto len = rd.get<std::uint32_t>();
    if (rd.pos + len > buf.size()) throw std::runtime_error(file + ": truncated module table");
    m.name.assign(buf.data() + rd.pos, len);
    rd.pos += len;
    const auto rows = rd.get<std::uint64_t>(), cols = rd.get<std::uint64_t>();
    const auto vOff = rd.get<std::uint64_t>(), mOff = rd.get<std::uint64_t>();
    if (rows == 0 || cols == 0 || rows > (1ull << 31) || cols > (1ull << 31) || cols % 32)
      throw std::runtime_error(file + ": module " + m.name + " has invalid shape [" + std::to_string(rows) + ", " +
                               std::to_string(cols) + "]");
    const std::uint64_t vBytes = rows * cols, mBytes = rows * cols / 8;
    if (vOff > buf.size() || vBytes > buf.size() - vOff || mOff > buf.size() || mBytes > buf.size() - mOff)
      throw std::runtime_error(file + ": truncated (module " + m.name + " data lies past the end)");
    end = std::max({end, alignUp(vOff + vBytes), alignUp(mOff + mBytes)});
    if (end > buf.size())
      throw std::runtime_error(file + ": truncated (" + std::to_string(buf.size()) + " bytes, the table needs " +
                               std::to_string(end) + ")");
    m.matrix.rows = static_cast<std::int64_t>(rows);
    m.matrix.cols = static_cast<std::int64_t>(cols);
    m.matrix.pattern = pattern;
    m.matrix.dtype = dtype;
    m.matrix.values.resize(vBytes / 2);
    m.matrix.masks.resize(mBytes / 4);
    std::memcpy(m.matrix.values.data(), buf.data() + vOff, vBytes);
    std::memcpy(m.matrix.masks.data(), buf.data() + mOff, mBytes);
    try {
      validate(m.matrix);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(file + ": module " + m.name + ": " + e.what());
    }
    modules.push_back(std::move(m));
  }
  return modules;
}

}  // namespace sdw::sparse
