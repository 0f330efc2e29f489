#include "core/packed_io.h"

#include "core/disk_checks.h"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace sdw::packed_io {

std::string readAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeSections(const std::filesystem::path& path, const std::string& header, const std::vector<Section>& sections,
                   std::uint64_t end) {
  std::filesystem::path tmp = path;
  tmp += ".partial";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(tmp.string() + ": cannot open for writing");
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    std::uint64_t pos = header.size();
    const auto padTo = [&](std::uint64_t target) {
      static const char zeros[kAlign] = {};
      while (pos < target) {
        const std::uint64_t n = std::min<std::uint64_t>(kAlign, target - pos);
        out.write(zeros, static_cast<std::streamsize>(n));
        pos += n;
      }
    };
    for (const Section& s : sections) {
      padTo(s.offset);
      out.write(static_cast<const char*>(s.data), static_cast<std::streamsize>(s.bytes));
      pos += s.bytes;
    }
    padTo(end);
    out.flush();
    if (!out) failWrite(out, tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace sdw::packed_io
