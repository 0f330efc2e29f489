// The pruning record: writer and reader of run_kind "pruning".

#include "gpu/pruning_run.h"

#include "core/paths.h"
#include "core/provenance.h"
#include "core/runstore.h"
#include "gpu/device.h"
#include "gpu/run_read_internal.h"

#include <nlohmann/json.hpp>

#include <utility>

namespace sdw::gpu {

namespace {

namespace rs = sdw::runstore;
using namespace runread;

constexpr const char* kGroup = "/pruning";
constexpr const char* kModules = "/pruning/modules/";

}  // namespace

void writePruningRun(const PruningRun& run, const std::filesystem::path& file) {
  const PruneSettings& s = run.settings;
  const PruneRecordInfo& info = run.info;
  const PruneResult& result = run.result;
  const std::string pattern = parsePruningPattern(s.pattern).name();
  nlohmann::json settings = {{"model", s.model.string()},         {"calibration", s.calibration.string()},
                             {"method", pruneMethodName(s.method)},  {"pattern", pattern},
                             {"order", pruneOrderName(s.order)},  {"percdamp", s.percdamp},
                             {"blocksize", s.blocksize},          {"device", s.device},
                             {"out", s.out.string()}};
  if (s.method == PruneMethod::DuoGpt) {
    settings["activation_sparsity"] = s.activationSparsity;
    settings["residual_scale"] = s.residualScale;
  }
  Provenance prov = engineProvenance(s.model.string(), settings.dump(), s.device);
  prov.addModelFiles(s.model);
  auto w = rs::RunWriter::create(file, prov, "pruning", {.overwrite = s.overwrite});
  const std::string g = kGroup;
  w.createGroup(g);
  w.setStringAttribute(g, "method", pruneMethodName(s.method));
  w.setStringAttribute(g, "pattern", pattern);
  w.setStringAttribute(g, "order", pruneOrderName(s.order));
  w.setDoubleAttribute(g, "percdamp", s.percdamp);
  // DuoGPT's p_x (0 for the other methods: they see dense inputs).
  w.setDoubleAttribute(g, "activation_sparsity", s.method == PruneMethod::DuoGpt ? s.activationSparsity : 0.0);
  if (s.method == PruneMethod::DuoGpt) w.setDoubleAttribute(g, "residual_scale", s.residualScale);
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

PruningRun readPruningRun(const std::filesystem::path& file) {
  const rs::RunReader r = rs::RunReader::open(file);
  if (r.kind() != "pruning") fail(file, " is a run of kind '" + r.kind() + "', not pruning");
  requireRun(r, file, kGroup, true);

  PruningRun run;
  PruneSettings& s = run.settings;
  s.model = stringAttr(r, kGroup, "model_dir");
  s.calibration = stringAttr(r, kGroup, "calibration_run");
  if (r.hasAttribute(kGroup, "method")) s.method = parsePruneMethod(stringAttr(r, kGroup, "method"));
  s.pattern = stringAttr(r, kGroup, "pattern");
  if (r.hasAttribute(kGroup, "order")) s.order = parsePruneOrder(stringAttr(r, kGroup, "order"));
  s.percdamp = doubleAttr(r, kGroup, "percdamp");
  s.activationSparsity = r.hasAttribute(kGroup, "activation_sparsity") ? doubleAttr(r, kGroup, "activation_sparsity") : 0.0;
  if (r.hasAttribute(kGroup, "residual_scale")) s.residualScale = doubleAttr(r, kGroup, "residual_scale");
  s.blocksize = static_cast<int>(intAttr(r, kGroup, "blocksize"));
  s.device = stringAttr(r, kGroup, "device");
  s.out = stringAttr(r, kGroup, "out_dir");
  s.record = file;

  PruneRecordInfo& info = run.info;
  info.calibrationRunId = stringAttr(r, kGroup, "calibration_run_id");
  info.calibrationSource = stringAttr(r, kGroup, "calibration_source");
  info.calibrationTokens = intAttr(r, kGroup, "calibration_tokens");
  RunDecoding& c = info.calibration;
  c.run = s.calibration;
  c.source = info.calibrationSource;
  c.decodes = intAttr(r, kGroup, "calibration_decodes") != 0;
  c.decoding.temperature = doubleAttr(r, kGroup, "calibration_temperature", c.decoding.temperature);
  c.decoding.topK = static_cast<int>(intAttr(r, kGroup, "calibration_top_k", c.decoding.topK));
  c.decoding.topP = doubleAttr(r, kGroup, "calibration_top_p", c.decoding.topP);
  c.prompts = stringAttr(r, kGroup, "calibration_prompts");
  c.corpus = stringAttr(r, kGroup, "calibration_corpus");

  PruneResult& res = run.result;
  res.record = file;
  res.calibrationRunId = info.calibrationRunId;
  res.checkpoint = stringAttr(r, kGroup, "checkpoint");
  res.sparseFile = stringAttr(r, kGroup, "sparse_file");
  res.seconds = doubleAttr(r, kGroup, "total_seconds");
  res.recaptureSeconds = doubleAttr(r, kGroup, "recapture_seconds");

  const std::string m = kModules;
  const auto names = r.readStrings(m + "name");
  const std::size_t n = names.size();
  const auto layer = r.readInt64(m + "layer").data;
  const auto rows = r.readInt64(m + "rows").data;
  const auto cols = r.readInt64(m + "cols").data;
  const auto loss = r.readFloat64(m + "loss").data;
  const auto outputLoss = r.readFloat64(m + "output_loss").data;
  const auto rel = r.readFloat64(m + "rel_output_error").data;
  const auto sparsity = r.readFloat64(m + "sparsity").data;
  const auto percdamp = r.readFloat64(m + "percdamp_used").data;
  const auto steps = r.readInt64(m + "damping_steps").data;
  const auto dead = r.readInt64(m + "dead_inputs").data;
  const auto seconds = r.readFloat64(m + "seconds").data;
  const auto packed = r.readInt64(m + "packed").data;
  for (const auto& [size, what] :
       {std::pair{layer.size(), "layer"}, {rows.size(), "rows"}, {cols.size(), "cols"}, {loss.size(), "loss"},
        {outputLoss.size(), "output_loss"}, {rel.size(), "rel_output_error"}, {sparsity.size(), "sparsity"},
        {percdamp.size(), "percdamp_used"}, {steps.size(), "damping_steps"}, {dead.size(), "dead_inputs"},
        {seconds.size(), "seconds"}, {packed.size(), "packed"}})
    requireSize(file, m + what, size, n);
  res.modules.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    ModulePruneRow x;
    x.name = names[i];
    x.layer = static_cast<int>(layer[i]);
    x.rows = rows[i];
    x.cols = cols[i];
    x.loss = loss[i];
    x.outputLoss = outputLoss[i];
    x.relOutputError = rel[i];
    x.sparsity = sparsity[i];
    x.percdampUsed = percdamp[i];
    x.dampingSteps = static_cast<int>(steps[i]);
    x.deadInputs = static_cast<int>(dead[i]);
    x.seconds = seconds[i];
    x.packed = packed[i] != 0;
    res.modules.push_back(std::move(x));
  }
  return run;
}

}  // namespace sdw::gpu
