// The drift run: writer and reader of run_kind "drift".

#include "gpu/drift_run.h"

#include "core/paths.h"
#include "core/provenance.h"
#include "core/runstore.h"
#include "gpu/device.h"
#include "gpu/run_read_internal.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <utility>

namespace sdw::gpu {

namespace {

namespace rs = sdw::runstore;
using namespace runread;

constexpr const char* kGroup = "/drift";

template <typename T>
std::vector<T> slice(const std::vector<T>& v, std::size_t first, std::size_t n) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(first),
                        v.begin() + static_cast<std::ptrdiff_t>(first + n));
}

}  // namespace

std::filesystem::path writeDriftRun(const DriftResult& r, const std::filesystem::path& out, bool overwrite) {
  const auto& s = r.settings;
  nlohmann::json modes = nlohmann::json::array();
  for (const auto m : s.modes) modes.push_back(driftModeName(m));
  nlohmann::json pruned = nlohmann::json::array();
  for (const auto& p : s.pruned) pruned.push_back(recordedPath(p));
  const nlohmann::json settings = {{"dense", recordedPath(s.dense)}, {"pruned", pruned},       {"prompts", recordedPath(s.prompts)},
                                   {"steps", s.steps},          {"modes", modes},         {"max_prompts", s.maxPrompts},
                                   {"temperature", s.decoding.temperature}, {"top_k", s.decoding.topK},
                                   {"top_p", s.decoding.topP},  {"seed", s.seed},
                                   {"device", s.device},        {"dtype", s.dtype},
                                   {"activation_sparsity", s.activationSparsity},
                                   // where the thresholds came from (empty: per-token top-k)
                                   {"activation_thresholds", recordedPath(s.activationThresholds)},
                                   {"activation_thresholds_run_id", r.activationThresholdsRunId}};
  Provenance prov = engineProvenance(recordedPath(s.dense), settings.dump(), s.device);
  prov.addModelFiles(s.dense);

  rs::RunWriter w = rs::RunWriter::create(out, prov, "drift", rs::CreateOptions{overwrite});
  const std::string g = "/drift";
  w.createGroup(g);
  w.setStringAttribute(g, "dense_dir", recordedPath(s.dense));
  w.setStringAttribute(g, "prompts_file", recordedPath(s.prompts));
  w.setIntAttribute(g, "prompts", r.prompts);
  w.setIntAttribute(g, "steps", s.steps);
  w.setIntAttribute(g, "layers", r.layers);
  w.setStringAttribute(g, "activation", r.activation);
  w.setDoubleAttribute(g, "plateau_fraction", r.plateauFraction);
  w.setDoubleAttribute(g, "seconds", r.seconds);
  writeDecoding(w, g, s.decoding);
  w.setIntAttribute(g, "seed", static_cast<std::int64_t>(s.seed));
  w.writeStrings(g + "/warnings", r.warnings);
  w.writeStrings(g + "/notes", r.notes);
  std::vector<std::string> dirs, labels;
  for (const auto& m : r.models) {
    dirs.push_back(recordedPath(m.dir));
    labels.push_back(m.label);
  }
  w.writeStrings(g + "/pruned_dirs", dirs);
  w.writeStrings(g + "/pruned_labels", labels);
  const auto K = static_cast<hsize_t>(r.models.size());
  const auto T = static_cast<hsize_t>(s.steps);
  const auto Lh = static_cast<hsize_t>(r.layers);
  for (std::size_t mi = 0; mi < s.modes.size(); ++mi) {
    std::vector<float> ratio, plateau, median, q1, q3;
    std::vector<std::int32_t> step90, count;
    for (const auto& m : r.models) {
      const DriftCurves& c = m.curves[mi];
      for (const double v : c.ratio) ratio.push_back(static_cast<float>(v));
      for (const long long v : c.count) count.push_back(static_cast<std::int32_t>(v));
      for (const double v : c.summary.plateau) plateau.push_back(static_cast<float>(v));
      for (const int v : c.summary.step90) step90.push_back(v);
      for (const double v : c.summary.median) median.push_back(static_cast<float>(v));
      for (const double v : c.summary.q1) q1.push_back(static_cast<float>(v));
      for (const double v : c.summary.q3) q3.push_back(static_cast<float>(v));
    }
    const std::string mg = g + "/" + driftModeName(s.modes[mi]);
    w.writeDataset(mg + "/ratio", ratio, {K, T, Lh});
    w.writeDataset(mg + "/count", count, {K, T, Lh});
    w.writeDataset(mg + "/plateau", plateau, {K, Lh});
    w.writeDataset(mg + "/step90", step90, {K, Lh});
    w.writeDataset(mg + "/median", median, {K, T});
    w.writeDataset(mg + "/q1", q1, {K, T});
    w.writeDataset(mg + "/q3", q3, {K, T});
  }
  return w.commit(overwrite);
}


DriftResult readDriftRun(const std::filesystem::path& path) {
  const rs::RunReader r = rs::RunReader::open(path);
  if (r.kind() != "drift") fail(path, ": not a drift run (run kind \"" + r.kind() + "\")");
  requireRun(r, path, kGroup, false);
  const std::string g = kGroup;
  const nlohmann::json recorded = recordedSettings(r);
  DriftResult res;
  DriftSettings& s = res.settings;
  s.dense = stringAttr(r, g, "dense_dir");
  s.prompts = stringAttr(r, g, "prompts_file");
  s.steps = static_cast<int>(r.readIntAttribute(g, "steps"));
  // Runs written before the decoding was recorded decoded greedily.
  s.decoding = readDecoding(r, g, kGreedyDecoding);
  s.seed = static_cast<std::uint64_t>(intAttr(r, g, "seed"));
  s.maxPrompts = setting(recorded, "max_prompts", s.maxPrompts);
  s.device = setting(recorded, "device", s.device);
  s.dtype = setting(recorded, "dtype", s.dtype);
  s.activationSparsity = setting(recorded, "activation_sparsity", s.activationSparsity);
  s.activationThresholds = setting(recorded, "activation_thresholds", std::string());
  res.activationThresholdsRunId = setting(recorded, "activation_thresholds_run_id", std::string());
  s.modes.clear();
  res.prompts = static_cast<int>(r.readIntAttribute(g, "prompts"));
  res.layers = static_cast<int>(r.readIntAttribute(g, "layers"));
  res.activation = stringAttr(r, g, "activation");
  res.plateauFraction = doubleAttr(r, g, "plateau_fraction", res.plateauFraction);
  res.seconds = doubleAttr(r, g, "seconds");
  res.warnings = stringsIfAny(r, g + "/warnings");
  res.notes = stringsIfAny(r, g + "/notes");
  if (s.steps < 1 || res.layers < 1) fail(path, ": steps and layers must be positive");

  const std::vector<std::string> labels = r.readStrings(g + "/pruned_labels");
  const std::vector<std::string> dirs = stringsIfAny(r, g + "/pruned_dirs");
  const std::size_t K = labels.size();
  if (K == 0) fail(path, ": no pruned model");
  for (std::size_t k = 0; k < K; ++k) {
    DriftModelResult m;
    m.dir = k < dirs.size() ? dirs[k] : std::string();
    m.label = labels[k];
    s.pruned.push_back(m.dir);
    res.models.push_back(std::move(m));
  }

  const auto T = static_cast<std::size_t>(s.steps);
  const auto L = static_cast<std::size_t>(res.layers);
  for (const DriftMode mode : {DriftMode::Own, DriftMode::Shared}) {
    const std::string mg = g + "/" + driftModeName(mode);
    if (!r.exists(mg)) continue;
    const auto expect = [&](const char* name, std::vector<hsize_t> shape) {
      if (r.shape(mg + "/" + name) != shape) fail(path, ": " + mg + "/" + name + " has the wrong shape");
    };
    const hsize_t Kh = K, Th = T, Lh = L;
    expect("ratio", {Kh, Th, Lh});
    expect("plateau", {Kh, Lh});
    expect("step90", {Kh, Lh});
    for (const char* q : {"median", "q1", "q3"}) expect(q, {Kh, Th});
    const bool counted = r.exists(mg + "/count");
    if (counted) expect("count", {Kh, Th, Lh});
    const auto ratio = r.read<double>(mg + "/ratio").data;
    const auto count = counted ? r.read<std::int64_t>(mg + "/count").data : std::vector<std::int64_t>{};
    const auto plateau = r.read<double>(mg + "/plateau").data;
    const auto step90 = r.read<std::int64_t>(mg + "/step90").data;
    const auto median = r.read<double>(mg + "/median").data;
    const auto q1 = r.read<double>(mg + "/q1").data;
    const auto q3 = r.read<double>(mg + "/q3").data;
    s.modes.push_back(mode);
    for (std::size_t k = 0; k < K; ++k) {
      DriftCurves c;
      c.mode = mode;
      c.steps = s.steps;
      c.layers = res.layers;
      c.ratio = slice(ratio, k * T * L, T * L);
      if (counted)
        for (std::size_t i = 0; i < T * L; ++i) c.count.push_back(static_cast<long long>(count[k * T * L + i]));
      c.summary.steps = s.steps;
      c.summary.layers = res.layers;
      c.summary.plateau = slice(plateau, k * L, L);
      for (std::size_t l = 0; l < L; ++l) c.summary.step90.push_back(static_cast<int>(step90[k * L + l]));
      c.summary.median = slice(median, k * T, T);
      c.summary.q1 = slice(q1, k * T, T);
      c.summary.q3 = slice(q3, k * T, T);
      res.models[k].curves.push_back(std::move(c));
    }
  }
  if (s.modes.empty()) fail(path, ": no drift curves (neither /drift/own nor /drift/shared)");
  return res;
}

}  // namespace sdw::gpu
