// What pruneModel leaves behind: the dense-with-zeros Hugging Face checkpoint,
// the packed bitmask file for the kernels and the run file of kind "pruning".

#include "core/provenance.h"
#include "core/paths.h"
#include "core/runstore.h"
#include "core/safetensors.h"
#include "core/sparse_file.h"
#include "gpu/device.h"
#include "gpu/prune_internal.h"

#include <nlohmann/json.hpp>

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

void writePrunedOutputs(const PruneSettings& s, const PruningPattern& pattern,
                        const std::map<std::string, PrunedTensor>& pruned, const PruneRecordInfo& info,
                        PruneResult& result) {
  fs::create_directories(s.out);
  for (const auto& e : fs::directory_iterator(s.model))
    if (e.is_regular_file() && isModelSideFile(e.path()))
      fs::copy_file(e.path(), s.out / e.path().filename(), fs::copy_options::overwrite_existing);

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
  metadata["sdw_pruning"] = s.method + " " + pattern.name() + " " + s.order;
  writeSafetensors(result.checkpoint, tensors, metadata);

  // The bitmask file: 50% N:M with M | 32, values in the model's 16-bit dtype
  // (bf16 for fp32 models).
  result.sparseFile.clear();
  const sparse::Pattern sp{pattern.n, pattern.m};
  if (!pattern.unstructured && sparse::isSupported(sp)) {
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
      sparse::writeSparseFile(result.sparseFile, mods);
    }
  }
}

void writePruningRecord(const PruneSettings& s, const PruningPattern& pattern, const PruneRecordInfo& info,
                        PruneResult& result) {
  result.record = s.record.empty() ? s.out / "pruning.sdw.h5" : s.record;
  nlohmann::json settings = {{"model", s.model.string()},         {"calibration", s.calibration.string()},
                             {"method", s.method},                {"pattern", pattern.name()},
                             {"order", s.order},                  {"percdamp", s.percdamp},
                             {"blocksize", s.blocksize},          {"device", s.device},
                             {"out", s.out.string()}};
  Provenance prov = engineProvenance(s.model.string(), settings.dump(), s.device);
  prov.addModelFiles(s.model);
  auto w = runstore::RunWriter::create(result.record, prov, "pruning", {.overwrite = s.overwrite});
  const std::string g = "/pruning";
  w.createGroup(g);
  w.setStringAttribute(g, "method", s.method);
  w.setStringAttribute(g, "pattern", pattern.name());
  w.setStringAttribute(g, "order", s.order);
  w.setDoubleAttribute(g, "percdamp", s.percdamp);
  w.setIntAttribute(g, "blocksize", s.blocksize);
  w.setStringAttribute(g, "device", s.device);
  w.setStringAttribute(g, "model_dir", recordedPath(s.model));
  w.setStringAttribute(g, "calibration_run", recordedPath(s.calibration));
  w.setStringAttribute(g, "calibration_run_id", info.calibrationRunId);
  w.setStringAttribute(g, "calibration_source", info.calibrationSource);
  w.setIntAttribute(g, "calibration_tokens", info.calibrationTokens);
  w.setIntAttribute(g, "calibration_decodes", info.calibration.decodes ? 1 : 0);
  w.setDoubleAttribute(g, "calibration_temperature", info.calibration.decoding.temperature);
  w.setIntAttribute(g, "calibration_top_k", info.calibration.decoding.topK);
  w.setDoubleAttribute(g, "calibration_top_p", info.calibration.decoding.topP);
  w.setStringAttribute(g, "calibration_decoding",
                       info.calibration.decodes ? info.calibration.decoding.describe() : std::string("none"));
  w.setStringAttribute(g, "calibration_prompts", info.calibration.prompts.string());
  w.setStringAttribute(g, "calibration_corpus", info.calibration.corpus.string());
  w.setStringAttribute(g, "out_dir", recordedPath(s.out));
  w.setStringAttribute(g, "checkpoint", recordedPath(result.checkpoint));
  w.setStringAttribute(g, "sparse_file", recordedPath(result.sparseFile));
  w.setDoubleAttribute(g, "total_seconds", result.seconds);
  w.setDoubleAttribute(g, "recapture_seconds", result.recaptureSeconds);
  w.setIntAttribute(g, "module_count", static_cast<std::int64_t>(result.modules.size()));

  const auto n = static_cast<hsize_t>(result.modules.size());
  std::vector<std::string> names;
  std::vector<std::int32_t> layer, steps, dead;
  std::vector<std::int64_t> rows, cols;
  std::vector<double> loss, outLoss, rel, sparsity, damp, secs;
  std::vector<std::uint8_t> packed;
  for (const auto& r : result.modules) {
    names.push_back(r.name);
    layer.push_back(r.layer);
    rows.push_back(r.rows);
    cols.push_back(r.cols);
    loss.push_back(r.loss);
    outLoss.push_back(r.outputLoss);
    rel.push_back(r.relOutputError);
    sparsity.push_back(r.sparsity);
    damp.push_back(r.percdampUsed);
    steps.push_back(r.dampingSteps);
    dead.push_back(r.deadInputs);
    secs.push_back(r.seconds);
    packed.push_back(r.packed ? 1 : 0);
  }
  const std::string m = g + "/modules";
  w.writeStrings(m + "/name", names);
  w.writeDataset(m + "/layer", layer, {n});
  w.writeDataset(m + "/rows", rows, {n});
  w.writeDataset(m + "/cols", cols, {n});
  w.writeDataset(m + "/loss", loss, {n});
  w.writeDataset(m + "/output_loss", outLoss, {n});
  w.writeDataset(m + "/rel_output_error", rel, {n});
  w.writeDataset(m + "/sparsity", sparsity, {n});
  w.writeDataset(m + "/percdamp_used", damp, {n});
  w.writeDataset(m + "/damping_steps", steps, {n});
  w.writeDataset(m + "/dead_inputs", dead, {n});
  w.writeDataset(m + "/seconds", secs, {n});
  w.writeDataset(m + "/packed", packed, {n});
  w.commit(s.overwrite);
}

}  // namespace sdw::gpu
