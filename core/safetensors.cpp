#include "core/safetensors.h"

#include "core/disk_checks.h"

#include "core/json_limits.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace sdw {

// Read-only private mapping of a whole file; unmapped on destruction.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(path.string() + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int e = errno;
      ::close(fd);
      throw std::runtime_error(path.string() + ": cannot stat: " + std::strerror(e));
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int e = errno;
        ::close(fd);
        throw std::runtime_error(path.string() + ": cannot map: " + std::strerror(e));
      }
      data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);  // the mapping keeps the file alive
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  std::uint64_t size() const { return size_; }

 private:
  const std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
};

std::size_t safetensorsDtypeSize(std::string_view dtype) {
  static const std::map<std::string_view, std::size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},      {"I16", 2},
      {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4}, {"U64", 8}, {"F8_E4M3", 1},
      {"F8_E5M2", 1}};
  const auto it = sizes.find(dtype);
  if (it == sizes.end()) throw std::invalid_argument("unknown safetensors dtype '" + std::string(dtype) + "'");
  return it->second;
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile f;
  f.path_ = path;
  f.map_ = std::make_shared<const MappedFile>(path);
  const std::string file = path.string();
  const std::uint64_t size = f.map_->size();
  if (size < 8) throw std::runtime_error(file + ": not a safetensors file (" + std::to_string(size) + " bytes)");
  std::uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | static_cast<std::uint8_t>(f.map_->data()[i]);
  if (headerLen > size - 8)
    throw std::runtime_error(file + ": header of " + std::to_string(headerLen) +
                             " bytes runs past the end of the file (" + std::to_string(size) +
                             " bytes): truncated or not a safetensors file");
  const char* hp = reinterpret_cast<const char*>(f.map_->data() + 8);
  const nlohmann::json header =
      parseJsonBounded(std::string_view(hp, static_cast<std::size_t>(headerLen)), file + ": header", kSafetensorsHeaderLimits);
  if (!header.is_object()) throw std::runtime_error(file + ": header is not a JSON object");

  const std::byte* dataStart = f.map_->data() + 8 + headerLen;
  const std::uint64_t dataSize = size - 8 - headerLen;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (!it->is_object()) throw std::runtime_error(file + ": __metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m)
        f.metadata_[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
      continue;
    }
    const auto bad = [&](const std::string& why) {
      return std::runtime_error(file + ": tensor '" + name + "': " + why);
    };
    const auto& t = *it;
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
      throw bad("entry needs dtype, shape and data_offsets");
    TensorView v;
    v.name = name;
    try {
      v.dtype = t.at("dtype").get<std::string>();
      v.shape = t.at("shape").get<std::vector<std::int64_t>>();
      const auto off = t.at("data_offsets").get<std::vector<std::uint64_t>>();
      if (off.size() != 2) throw bad("data_offsets must be [begin, end]");
      std::size_t elem = 0;
      try {
        elem = safetensorsDtypeSize(v.dtype);
      } catch (const std::invalid_argument& e) {
        throw bad(e.what());
      }
      std::uint64_t numel = 1;
      for (const auto d : v.shape) {
        if (d < 0) throw bad("negative dimension");
        if (d != 0 && numel > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d))
          throw bad("shape overflows");
        numel *= static_cast<std::uint64_t>(d);
      }
      const auto [b, e] = std::pair{off[0], off[1]};
      if (b > e) throw bad("data_offsets begin > end");
      if (e - b != numel * elem)
        throw bad("holds " + std::to_string(e - b) + " bytes but dtype " + v.dtype + " and its shape need " +
                  std::to_string(numel * elem));
      if (e > dataSize)
        throw bad("data [" + std::to_string(b) + ", " + std::to_string(e) + ") runs past the end of the file (" +
                  std::to_string(dataSize) + " data bytes, file " + std::to_string(size) +
                  " bytes): the file is truncated");
      v.bytes = std::span<const std::byte>(dataStart + b, static_cast<std::size_t>(e - b));
      if (e > b) ranges.emplace_back(b, e);
    } catch (const nlohmann::json::exception& e) {
      throw bad(std::string("malformed entry: ") + e.what());
    }
    f.tensors_.emplace(name, std::move(v));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      throw std::runtime_error(file + ": tensor data ranges overlap");
  return f;
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::uint64_t SafetensorsFile::fileSize() const { return map_ ? map_->size() : 0; }

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::filesystem::path& dirOrFile) {
  namespace fs = std::filesystem;
  SafetensorsCheckpoint c;
  const auto addFile = [&](const fs::path& p) {
    c.files_.push_back(std::make_shared<SafetensorsFile>(SafetensorsFile::open(p)));
    return c.files_.size() - 1;
  };
  if (fs::is_regular_file(dirOrFile)) {
    const auto idx = addFile(dirOrFile);
    for (const auto& [name, v] : c.files_[idx]->tensors()) c.where_[name] = idx;
    return c;
  }
  const fs::path index = dirOrFile / "model.safetensors.index.json";
  const fs::path single = dirOrFile / "model.safetensors";
  if (fs::exists(index)) {
    const nlohmann::json j = readJsonFileBounded(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw std::runtime_error(index.string() + ": no \"weight_map\" object");
    std::map<std::string, std::size_t> shardIdx;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string()) throw std::runtime_error(index.string() + ": weight_map entry '" + it.key() + "' is not a file name");
      const std::string shard = it->get<std::string>();
      if (shard.find('/') != std::string::npos || shard == ".." )
        throw std::runtime_error(index.string() + ": shard name '" + shard + "' must be a plain file name");
      auto s = shardIdx.find(shard);
      if (s == shardIdx.end()) {
        if (!fs::exists(dirOrFile / shard))
          throw std::runtime_error(index.string() + ": shard '" + shard + "' (tensor '" + it.key() +
                                   "') does not exist");
        s = shardIdx.emplace(shard, addFile(dirOrFile / shard)).first;
      }
      if (!c.files_[s->second]->find(it.key()))
        throw std::runtime_error((dirOrFile / shard).string() + ": tensor '" + it.key() +
                                 "' named by the index is missing from the shard");
      c.where_[it.key()] = s->second;
    }
    return c;
  }
  if (fs::exists(single)) return open(single);
  throw std::runtime_error(dirOrFile.string() +
                           ": no model.safetensors or model.safetensors.index.json in this folder");
}

SafetensorsCheckpoint::Entry SafetensorsCheckpoint::find(const std::string& name) const {
  const auto it = where_.find(name);
  if (it == where_.end()) return {};
  const auto& f = *files_[it->second];
  return {f.find(name), &f.path()};
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [n, i] : where_) out.push_back(n);
  return out;
}

std::vector<std::filesystem::path> SafetensorsCheckpoint::files() const {
  std::vector<std::filesystem::path> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

std::uint64_t SafetensorsCheckpoint::totalTensorBytes() const {
  std::uint64_t n = 0;
  for (const auto& [name, i] : where_) n += files_[i]->find(name)->bytes.size();
  return n;
}

void writeSafetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    std::uint64_t numel = 1;
    for (const auto d : t.shape) numel *= static_cast<std::uint64_t>(d);
    if (numel * safetensorsDtypeSize(t.dtype) != t.bytes.size())
      throw std::invalid_argument("writeSafetensors: tensor '" + t.name + "' has " + std::to_string(t.bytes.size()) +
                                  " bytes, its dtype and shape need " +
                                  std::to_string(numel * safetensorsDtypeSize(t.dtype)));
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string h = header.dump();
  while ((h.size() + 8) % 8 != 0) h.push_back(' ');  // data 8-byte aligned, as the reference writer does
  const std::filesystem::path tmp = path.string() + ".partial";
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      const int err = errno;
      throw std::runtime_error(err ? writeFailure(tmp, err) : tmp.string() + ": cannot create");
    }
    std::uint64_t n = h.size();
    char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    out.write(len, 8);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const auto& t : tensors)
      out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    out.flush();
    if (!out) failWrite(out, tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace sdw
