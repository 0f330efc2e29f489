// What pruneModel leaves behind: the dense-with-zeros Hugging Face checkpoint,
// and the packed bitmask file for the kernels (the run record: gpu/pruning_run.cpp).

#include "core/disk_checks.h"
#include "core/safetensors.h"
#include "core/sparse_file.h"
#include "gpu/prune_internal.h"
#include "gpu/spmspv_file.h"

#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace sdw::gpu {
namespace {

namespace fs = std::filesystem;

// Files of a checkpoint folder that describe the model rather than hold weights.
bool isModelSideFile(const fs::path& p) {
  const std::string name = p.filename().string();
  if (name == "model.safetensors.index.json") return false;
  const std::string ext = p.extension().string();
  return ext == ".json" || ext == ".jinja" || name == "tokenizer.model" || name == "merges.txt" ||
         ext == ".tiktoken";
}

}  // namespace

std::vector<float> decodeToFloat(const std::string& dtype, const std::byte* data, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  if (dtype == "F32") {
    std::memcpy(out.data(), data, out.size() * sizeof(float));
  } else if (dtype == "BF16" || dtype == "F16") {
    const auto d = dtype == "BF16" ? sparse::DType::BF16 : sparse::DType::F16;
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint16_t h;
      std::memcpy(&h, data + 2 * i, 2);
      out[static_cast<std::size_t>(i)] = sparse::from16(h, d);
    }
  } else {
    throw std::runtime_error("projection weights of dtype " + dtype + " are not supported (F32, BF16, F16)");
  }
  return out;
}

std::vector<std::byte> encodeFromFloat(const std::string& dtype, const float* data, std::int64_t n) {
  std::vector<std::byte> out;
  if (dtype == "F32") {
    out.resize(static_cast<std::size_t>(n) * 4);
    std::memcpy(out.data(), data, out.size());
  } else if (dtype == "BF16" || dtype == "F16") {
    const auto d = dtype == "BF16" ? sparse::DType::BF16 : sparse::DType::F16;
    out.resize(static_cast<std::size_t>(n) * 2);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint16_t h = sparse::floatTo16(data[i], d);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  } else {
    throw std::runtime_error("projection weights of dtype " + dtype + " are not supported (F32, BF16, F16)");
  }
  return out;
}

namespace {

void writeInto(const fs::path& tmp, const PruneSettings& s, const PruningPattern& pattern,
               const std::map<std::string, PrunedTensor>& pruned, const PruneRecordInfo& info, PruneResult& result) {
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  for (const auto& e : fs::directory_iterator(s.model))
    if (e.is_regular_file() && isModelSideFile(e.path()))
      fs::copy_file(e.path(), tmp / e.path().filename(), fs::copy_options::overwrite_existing);

  // Every source tensor in name order; pruned projections replaced, same dtype.
  const auto ckpt = SafetensorsCheckpoint::open(s.model);
  std::vector<TensorToWrite> tensors;
  for (const auto& name : ckpt.names()) {
    const TensorView& v = *ckpt.find(name).view;
    const std::string module = name.size() > 7 ? name.substr(0, name.size() - 7) : name;  // drop ".weight"
    const auto it = name.ends_with(".weight") ? pruned.find(module) : pruned.end();
    if (it != pruned.end())
      tensors.push_back({name, it->second.dtype, it->second.shape, std::span<const std::byte>(it->second.bytes)});
    else
      tensors.push_back({name, v.dtype, v.shape, v.bytes});
  }
  result.checkpoint = s.out / "model.safetensors";
  // The calibration's provenance travels with the weights (the record may
  // live elsewhere): what an evaluation of this folder checks its decoding against.
  const fs::path record = fs::absolute(s.record.empty() ? s.out / "pruning.sdw.h5" : s.record).lexically_normal();
  std::map<std::string, std::string> metadata = calibrationMetadata(info.calibration, record);
  metadata["format"] = "pt";
  metadata["sdw_pruning"] = pruneMethodName(s.method) + " " + pattern.name() + " " + pruneOrderName(s.order);
  writeSafetensors(tmp / "model.safetensors", tensors, metadata);

  // The bitmask file: 50% row N:M with M | 32, values in the model's 16-bit
  // dtype (bf16 for fp32 models). Column N:M has no place in it (its groups
  // run down the columns): col2:4 and col4:8 go to the column file instead, in the
  // spMspV kernel's layout; other column patterns decode dense.
  result.sparseFile.clear();
  const bool columnFile =
      pattern.alongColumns && !pattern.unstructured && 2 * pattern.n == pattern.m && (pattern.m == 4 || pattern.m == 8);
  if (columnFile) {
    const auto format = pattern.m == 4 ? kernels::SpmspvFormat::Column24 : kernels::SpmspvFormat::Column48;
    std::vector<SpmspvModule> mods;
    for (auto& row : result.modules) {
      const PrunedTensor& t = pruned.at(row.name);
      const auto dt = t.dtype == "F16" ? sparse::DType::F16 : sparse::DType::BF16;
      std::vector<std::uint16_t> w16(static_cast<std::size_t>(row.rows * row.cols));
      if (t.dtype == "F32") {
        const std::vector<float> w = decodeToFloat(t.dtype, t.bytes.data(), row.rows * row.cols);
        for (std::size_t i = 0; i < w.size(); ++i) w16[i] = sparse::floatTo16(w[i], dt);
      } else {
        std::memcpy(w16.data(), t.bytes.data(), w16.size() * 2);
      }
      mods.push_back({row.name, packSpmspv(w16, row.rows, row.cols, dt, format)});
      row.packed = true;
    }
    if (!mods.empty()) {
      result.sparseFile = s.out / kSpmspvFileName;
      writeSpmspvFile(tmp / kSpmspvFileName, mods);
    }
  }
  const sparse::Pattern sp{pattern.n, pattern.m};
  if (!pattern.unstructured && !pattern.alongColumns && sparse::isSupported(sp)) {
    std::vector<sparse::SparseModule> mods;
    for (auto& row : result.modules) {
      const PrunedTensor& t = pruned.at(row.name);
      if (row.cols % 32 != 0) continue;  // stays dense (docs/sparse-format.md)
      const auto dt = t.dtype == "F16" ? sparse::DType::F16 : sparse::DType::BF16;
      const std::vector<float> w = decodeToFloat(t.dtype, t.bytes.data(), row.rows * row.cols);
      mods.push_back({row.name, sparse::packDense(w, row.rows, row.cols, sp, dt)});
      row.packed = true;
    }
    if (!mods.empty()) {
      result.sparseFile = s.out / "model.sdwsparse";
      sparse::writeSparseFile(tmp / "model.sdwsparse", mods);
    }
  }

  // Into place: a new folder by one rename; into an existing one (overwrite), the
  // old weights go first and the new model.safetensors comes last.
  if (!fs::exists(s.out)) {
    fs::rename(tmp, s.out);
    return;
  }
  fs::remove(s.out / "model.safetensors");
  fs::remove(s.out / "model.sdwsparse");
  fs::remove(s.out / kSpmspvFileName);
  for (const auto& e : fs::directory_iterator(tmp))
    if (e.path().filename() != "model.safetensors") fs::rename(e.path(), s.out / e.path().filename());
  fs::rename(tmp / "model.safetensors", s.out / "model.safetensors");
  fs::remove(tmp);
}

}  // namespace

void writePrunedOutputs(const PruneSettings& s, const PruningPattern& pattern,
                        const std::map<std::string, PrunedTensor>& pruned, const PruneRecordInfo& info,
                        PruneResult& result) {
  // Everything goes to OUT.partial first; OUT never holds a model.safetensors
  // before the files that belong with it (a kill leaves OUT.partial, or the old OUT).
  fs::path tmp = s.out;
  tmp += ".partial";
  // A failed write (disk full, read-only) leaves nothing behind: OUT.partial goes.
  const RemoveOnFailure cleanup(tmp);
  try {
    writeInto(tmp, s, pattern, pruned, info, result);
  } catch (const fs::filesystem_error& e) {
    const fs::path where = !e.path2().empty() ? e.path2() : !e.path1().empty() ? e.path1() : tmp;  // the destination
    throw std::runtime_error(writeFailure(where, e.code().value()));
  }
  cleanup.release();
}

}  // namespace sdw::gpu
