// compressed-tensors sparse checkpoints (core/compressed_tensors.h).

#include "core/compressed_tensors.h"

#include "core/disk_checks.h"
#include "core/json_limits.h"
#include "core/safetensors.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace sdw::ct {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The attention and MLP projection weights, the modules our pruning prunes.
bool isProjectionWeight(const std::string& name) {
  if (!endsWith(name, "_proj.weight")) return false;
  for (const char* k : {".self_attn.q_proj.", ".self_attn.k_proj.", ".self_attn.v_proj.", ".self_attn.o_proj.",
                        ".mlp.gate_proj.", ".mlp.up_proj.", ".mlp.down_proj."})
    if (name.find(k) != std::string::npos) return true;
  return false;
}

// Whether element i (of a 2-, or 4-byte float dtype) is non-zero; -0.0 counts as zero,
// as `tensor != 0` does.
bool nonZero(const std::byte* data, std::size_t es, std::int64_t i) {
  if (es == 2) {
    std::uint16_t v;
    std::memcpy(&v, data + i * 2, 2);
    return (v & 0x7fffu) != 0;
  }
  std::uint32_t v;
  std::memcpy(&v, data + i * 4, 4);
  return (v & 0x7fffffffu) != 0;
}

float toFloat(const std::string& dtype, const std::byte* data, std::int64_t i) {
  if (dtype == "F32") {
    float f;
    std::memcpy(&f, data + i * 4, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, data + i * 2, 2);
  return dtype == "BF16" ? sparse::bf16ToFloat(h) : sparse::halfToFloat(h);
}

std::vector<std::byte> int64Bytes(const std::vector<std::int64_t>& v) {
  std::vector<std::byte> out(v.size() * 8);
  std::memcpy(out.data(), v.data(), out.size());  // little-endian, as safetensors
  return out;
}

std::string prefixOf(const std::string& weightName) { return weightName.substr(0, weightName.size() - 7); }

}  // namespace

std::string formatName(Format f) { return f == Format::SparseBitmask ? "sparse-bitmask" : "sparse-24-bitmask"; }

ExportResult exportCompressedTensors(const fs::path& prunedDir, const fs::path& outDir, Format format,
                                     const std::string& sparsityStructure) {
  static_assert(std::endian::native == std::endian::little, "safetensors and the bitmask layout are little-endian");
  json config = readJsonFileBounded(prunedDir / "config.json");
  if (config.contains("quantization_config"))
    throw std::runtime_error((prunedDir / "config.json").string() +
                             ": the checkpoint already declares a quantization_config");
  const SafetensorsCheckpoint ckpt = SafetensorsCheckpoint::open(prunedDir);
  if (fs::exists(outDir)) throw std::runtime_error(outDir.string() + " exists");
  {
    std::uint64_t sourceBytes = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(prunedDir, ec))
      if (e.is_regular_file(ec)) sourceBytes += e.file_size(ec);
    checkCanWrite(outDir, sourceBytes + (std::uint64_t(16) << 20));  // at most the source's size, plus slack
  }

  ExportResult res;
  res.outDir = outDir;
  res.format = format;
  std::vector<std::vector<std::byte>> storage;  // owned bytes of the new tensors
  storage.reserve(ckpt.names().size() * 4 + 8);
  std::vector<TensorToWrite> out;
  std::uint64_t zeros = 0, weights = 0;
  for (const std::string& name : ckpt.names()) {
    const TensorView& v = *ckpt.find(name).view;
    if (!isProjectionWeight(name) || v.shape.size() != 2) {
      out.push_back({name, v.dtype, v.shape, v.bytes});
      continue;
    }
    if (v.dtype != "BF16" && v.dtype != "F16" && v.dtype != "F32")
      throw std::runtime_error(name + ": dtype " + v.dtype + " cannot be exported (BF16, F16, F32)");
    const std::int64_t rows = v.shape[0], cols = v.shape[1], cb = (cols + 7) / 8;
    const std::size_t es = safetensorsDtypeSize(v.dtype);
    const std::byte* data = v.bytes.data();
    std::vector<std::byte> bitmask(static_cast<std::size_t>(rows * cb), std::byte{0});
    std::vector<std::byte> values;
    std::vector<std::int64_t> rowOffsets(static_cast<std::size_t>(rows));
    std::int64_t count = 0;
    const auto keep = [&](std::int64_t r, std::int64_t c) {
      bitmask[static_cast<std::size_t>(r * cb + c / 8)] |= std::byte(1u << (c % 8));
      const std::byte* src = data + (r * cols + c) * static_cast<std::int64_t>(es);
      values.insert(values.end(), src, src + es);
      ++count;
    };
    for (std::int64_t r = 0; r < rows; ++r) {
      rowOffsets[static_cast<std::size_t>(r)] = count;
      if (format == Format::SparseBitmask) {
        for (std::int64_t c = 0; c < cols; ++c)
          if (nonZero(data, es, r * cols + c)) keep(r, c);
        continue;
      }
      if (cols % 4 != 0) throw std::invalid_argument(name + ": " + std::to_string(cols) + " columns, not a multiple of 4");
      for (std::int64_t g = 0; g < cols; g += 4) {
        bool kept[4] = {false, false, false, false};
        int n = 0;
        for (int j = 0; j < 4; ++j)
          if (nonZero(data, es, r * cols + g + j)) kept[j] = true, ++n;
        if (n > 2)
          throw std::invalid_argument(name + ": row " + std::to_string(r) + ", columns " + std::to_string(g) + "-" +
                                      std::to_string(g + 3) + " hold " + std::to_string(n) +
                                      " non-zeros: not 2:4 (use sparse-bitmask)");
        for (int j = 0; j < 4 && n < 2; ++j)  // a kept weight that is exactly zero: lowest index first
          if (!kept[j]) kept[j] = true, ++n;
        for (int j = 0; j < 4; ++j)
          if (kept[j]) keep(r, g + j);
      }
    }
    for (std::int64_t i = 0; i < rows * cols; ++i) zeros += nonZero(data, es, i) ? 0 : 1;
    weights += static_cast<std::uint64_t>(rows * cols);
    const std::string p = prefixOf(name);
    const bool is24 = format == Format::Sparse24Bitmask;
    storage.push_back(int64Bytes({rows, cols}));
    out.push_back({p + ".shape", "I64", is24 ? std::vector<std::int64_t>{2, 1} : std::vector<std::int64_t>{2},
                   storage.back()});
    storage.push_back(std::move(values));
    out.push_back({p + ".compressed", v.dtype,
                   is24 ? std::vector<std::int64_t>{rows, cols / 2} : std::vector<std::int64_t>{count},
                   storage.back()});
    storage.push_back(std::move(bitmask));
    out.push_back({p + ".bitmask", "U8", {rows, cb}, storage.back()});
    std::uint64_t bytes = storage.back().size() + storage[storage.size() - 2].size() + 16;
    if (!is24) {
      storage.push_back(int64Bytes(rowOffsets));
      out.push_back({p + ".row_offsets", "I64", {rows}, storage.back()});
      bytes += storage.back().size();
    }
    res.denseBytes += v.bytes.size();
    res.compressedBytes += bytes;
    ++res.compressedModules;
  }
  if (res.compressedModules == 0) throw std::runtime_error(prunedDir.string() + ": no projection weight to compress");
  res.globalSparsity = weights ? static_cast<double>(zeros) / static_cast<double>(weights) : 0.0;

  fs::path partial = outDir;
  partial += ".partial";
  // A failed write (disk full, read-only) leaves nothing behind: OUT.partial goes.
  const RemoveOnFailure cleanup(partial);
  try {
    fs::remove_all(partial);
    fs::create_directories(partial);
    writeSafetensors(partial / "model.safetensors", out, {{"format", "pt"}});
    for (const char* f : {"generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                          "model.sdwsparse"})
      if (fs::exists(prunedDir / f)) fs::copy_file(prunedDir / f, partial / f, fs::copy_options::overwrite_existing);
  } catch (const fs::filesystem_error& e) {
    const fs::path where = !e.path2().empty() ? e.path2() : !e.path1().empty() ? e.path1() : partial;  // the destination
    throw std::runtime_error(writeFailure(where, e.code().value()));
  }
  config["quantization_config"] = {
      {"quant_method", "compressed-tensors"},
      {"version", kFormatVersion},
      {"sparsity_config",
       {{"format", formatName(format)},
        {"targets", {"Linear"}},
        {"ignore", {"lm_head"}},
        {"global_sparsity", res.globalSparsity},
        {"sparsity_structure", format == Format::Sparse24Bitmask ? "2:4" : sparsityStructure}}},
      {"transform_config", json::object()}};
  {
    errno = 0;
    std::ofstream f(partial / "config.json");
    f << config.dump(2) << "\n";
    f.flush();
    if (!f) throw std::runtime_error(writeFailure(partial / "config.json", errno));
  }
  if (fs::exists(outDir)) throw std::runtime_error(outDir.string() + " exists");
  fs::rename(partial, outDir);
  cleanup.release();
  return res;
}

std::optional<Format> declaredFormat(const fs::path& dir) {
  const fs::path file = dir / "config.json";
  if (!fs::exists(file)) return std::nullopt;
  const json config = readJsonFileBounded(file);
  if (!config.is_object() || !config.contains("quantization_config")) return std::nullopt;
  const json& q = config["quantization_config"];
  const std::string where = file.string() + ": quantization_config";
  if (!q.is_object()) throw std::runtime_error(where + " is not an object");
  const std::string method = q.value("quant_method", std::string());
  if (method != "compressed-tensors")
    throw std::runtime_error(where + ": quant_method '" + method +
                             "' is not supported (quantized checkpoints cannot be read; compressed-tensors sparse ones can)");
  if (q.contains("config_groups") && q["config_groups"].is_object() && !q["config_groups"].empty())
    throw std::runtime_error(where + ": a quantized compressed-tensors checkpoint (config_groups) is not supported");
  if (!q.contains("sparsity_config") || !q["sparsity_config"].is_object() || q["sparsity_config"].empty())
    return std::nullopt;
  const std::string format = q["sparsity_config"].value("format", std::string());
  if (format == "sparse-bitmask") return Format::SparseBitmask;
  if (format == "sparse-24-bitmask") return Format::Sparse24Bitmask;
  if (format == "dense") return std::nullopt;
  throw std::runtime_error(where + ": sparsity format '" + format +
                           "' is not supported (supported: sparse-bitmask, sparse-24-bitmask, dense)");
}

// ---- reading

struct Reader::Impl {
  SafetensorsCheckpoint ckpt;
  explicit Impl(const fs::path& dir) : ckpt(SafetensorsCheckpoint::open(dir)) {}
  const TensorView& need(const std::string& name) const {
    const auto e = ckpt.find(name);
    if (!e.view) throw std::runtime_error("compressed-tensors checkpoint: tensor '" + name + "' is missing");
    return *e.view;
  }
};

Reader::Reader(const fs::path& dir) : impl_(new Impl(dir)) {
  const auto f = declaredFormat(dir);
  if (!f) {
    delete impl_;
    throw std::runtime_error(dir.string() + ": not a compressed-tensors sparse checkpoint");
  }
  format_ = *f;
  const json config = readJsonFileBounded(dir / "config.json");
  const json& sc = config["quantization_config"]["sparsity_config"];
  structure_ = sc.contains("sparsity_structure") && sc["sparsity_structure"].is_string()
                   ? sc["sparsity_structure"].get<std::string>()
                   : "unstructured";
}
Reader::~Reader() { delete impl_; }

bool Reader::compressed(const std::string& prefix) const {
  return impl_->ckpt.find(prefix + ".compressed").view != nullptr;
}

DenseWeight Reader::dense(const std::string& prefix) const {
  const TensorView& shape = impl_->need(prefix + ".shape");
  const TensorView& vals = impl_->need(prefix + ".compressed");
  const TensorView& mask = impl_->need(prefix + ".bitmask");
  const std::string bad = "compressed-tensors tensor '" + prefix + "': ";
  if (shape.dtype != "I64" || shape.numel() != 2) throw std::runtime_error(bad + "shape must be 2 int64 values");
  std::int64_t dims[2];
  std::memcpy(dims, shape.bytes.data(), 16);
  const std::int64_t rows = dims[0], cols = dims[1];
  if (rows < 1 || cols < 1 || rows > (std::int64_t{1} << 24) || cols > (std::int64_t{1} << 24))
    throw std::runtime_error(bad + "shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "] out of range");
  const std::int64_t cb = (cols + 7) / 8;
  if (mask.dtype != "U8" || mask.numel() != rows * cb)
    throw std::runtime_error(bad + "bitmask must be uint8 [" + std::to_string(rows) + ", " + std::to_string(cb) + "]");
  if (vals.dtype != "BF16" && vals.dtype != "F16" && vals.dtype != "F32")
    throw std::runtime_error(bad + "values of dtype " + vals.dtype + " are not supported (BF16, F16, F32)");
  DenseWeight d;
  d.rows = rows;
  d.cols = cols;
  d.dtype = vals.dtype;
  d.values.assign(static_cast<std::size_t>(rows * cols), 0.0f);
  const auto* m = reinterpret_cast<const std::uint8_t*>(mask.bytes.data());
  std::int64_t k = 0;
  const std::int64_t n = vals.numel();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      if (m[r * cb + c / 8] & (1u << (c % 8))) {
        if (k >= n) throw std::runtime_error(bad + "the bitmask marks more weights than the " + std::to_string(n) + " values");
        d.values[static_cast<std::size_t>(r * cols + c)] = toFloat(vals.dtype, vals.bytes.data(), k++);
      }
  if (k != n) throw std::runtime_error(bad + "the bitmask marks " + std::to_string(k) + " weights, the values are " + std::to_string(n));
  return d;
}

std::optional<sparse::PackedMatrix> Reader::packed(const std::string& prefix, sparse::Pattern pattern) const {
  const TensorView& vals = impl_->need(prefix + ".compressed");
  if (vals.dtype != "BF16" && vals.dtype != "F16") return std::nullopt;
  const sparse::DType dt = vals.dtype == "BF16" ? sparse::DType::BF16 : sparse::DType::F16;
  if (format_ == Format::Sparse24Bitmask && pattern == sparse::Pattern{2, 4}) {
    // The layouts agree: mask bytes are our mask words, values our packed values.
    const TensorView& shape = impl_->need(prefix + ".shape");
    const TensorView& mask = impl_->need(prefix + ".bitmask");
    if (shape.dtype != "I64" || shape.numel() != 2) return std::nullopt;
    std::int64_t dims[2];
    std::memcpy(dims, shape.bytes.data(), 16);
    const std::int64_t rows = dims[0], cols = dims[1];
    if (rows < 1 || cols < 32 || cols % 32 != 0 || mask.dtype != "U8" || mask.numel() != rows * cols / 8 ||
        vals.numel() != rows * cols / 2)
      return std::nullopt;
    sparse::PackedMatrix p;
    p.rows = rows;
    p.cols = cols;
    p.pattern = pattern;
    p.dtype = dt;
    p.values.resize(static_cast<std::size_t>(rows * cols / 2));
    p.masks.resize(static_cast<std::size_t>(rows * cols / 32));
    std::memcpy(p.values.data(), vals.bytes.data(), p.values.size() * 2);
    std::memcpy(p.masks.data(), mask.bytes.data(), p.masks.size() * 4);
    try {
      sparse::validate(p);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    return p;
  }
  const DenseWeight d = dense(prefix);
  if (d.cols % 32 != 0) return std::nullopt;
  try {
    return sparse::packDense(d.values, d.rows, d.cols, pattern, dt);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace sdw::ct
