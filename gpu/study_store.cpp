// The study run file: kind "study", group /study with the settings as
// attributes, the per-seed rows (/study/seeds/*), the epsilon rows
// (/study/epsilon/*) and the cells over the seeds (/study/cells/*,
// /study/epsilon_cells/*), one column per dataset (h5py reads each as an
// array). Layout: docs/run-format.md.

#include "gpu/study.h"
#include "core/json_limits.h"
#include "core/paths.h"

#include "core/runstore.h"
#include "gpu/device.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace sdw::gpu {

namespace fs = std::filesystem;
using runstore::RunReader;
using runstore::RunWriter;

namespace {

constexpr const char* kGroup = "/study";

template <typename Row, typename F>
std::vector<double> doubles(const std::vector<Row>& rows, F f) {
  std::vector<double> v;
  v.reserve(rows.size());
  for (const auto& r : rows) v.push_back(f(r));
  return v;
}
template <typename Row, typename F>
std::vector<std::string> strings(const std::vector<Row>& rows, F f) {
  std::vector<std::string> v;
  v.reserve(rows.size());
  for (const auto& r : rows) v.push_back(f(r));
  return v;
}

// mean, ci95 (half width), n of one figure as three columns.
template <typename Cell>
void writeCi(RunWriter& w, const std::string& g, const std::string& name, const std::vector<Cell>& cells,
             stats::MeanCi Cell::*field) {
  const hsize_t n = cells.size();
  w.writeDataset(g + "/" + name + "_mean", doubles(cells, [&](const Cell& c) { return (c.*field).mean; }), {n});
  w.writeDataset(g + "/" + name + "_ci95", doubles(cells, [&](const Cell& c) { return (c.*field).halfWidth; }), {n});
  w.writeDataset(g + "/" + name + "_n", doubles(cells, [&](const Cell& c) { return double((c.*field).n); }), {n});
}

// Settings lists of choices travel as their names.
template <class E, class F>
std::vector<std::string> names(const std::vector<E>& values, F name) {
  std::vector<std::string> out;
  for (const E v : values) out.push_back(name(v));
  return out;
}
template <class F>
auto parsed(const nlohmann::json& list, F parse) {
  std::vector<decltype(parse(std::string()))> out;
  for (const auto& n : list) out.push_back(parse(n.get<std::string>()));
  return out;
}

nlohmann::json settingsJson(const StudySettings& s) {
  nlohmann::json decodings = nlohmann::json::array();
  for (const auto& d : s.decodings)
    decodings.push_back({{"name", d.name}, {"temperature", d.temperature}, {"top_k", d.topK}, {"top_p", d.topP}});
  return {{"model", recordedPath(s.model)},
          {"cross_model", recordedPath(s.crossModel)},
          {"corpus", recordedPath(s.corpus)},
          {"prompts", recordedPath(s.prompts)},
          {"heldout_prompts", recordedPath(s.heldoutPrompts)},
          {"heldout_text", recordedPath(s.heldoutText)},
          {"sources", names(s.sources, calibrationSourceName)},
          {"decodings", decodings},
          {"solvers", names(s.solvers, pruneMethodName)},
          {"patterns", s.patterns},
          {"seeds", s.seeds},
          {"tokens", s.tokens},
          {"reference_tokens", s.referenceTokens},
          {"max_new_tokens", s.maxNewTokens},
          {"window", s.window},
          {"epsilon_k", s.epsilonK},
          {"eval_max_new_tokens", s.evalMaxNewTokens},
          {"eval_prompts", s.evalPrompts},
          {"eval_windows", s.evalWindows},
          {"device", s.device},
          {"dtype", s.dtype}};
}

StudySettings settingsFromJson(const nlohmann::json& j) {
  StudySettings s;
  s.model = j.value("model", "");
  s.crossModel = j.value("cross_model", "");
  s.corpus = j.value("corpus", "");
  s.prompts = j.value("prompts", "");
  s.heldoutPrompts = j.value("heldout_prompts", "");
  s.heldoutText = j.value("heldout_text", "");
  if (j.contains("sources")) s.sources = parsed(j.at("sources"), parseCalibrationSource);
  s.decodings.clear();
  for (const auto& d : j.value("decodings", nlohmann::json::array()))
    s.decodings.push_back({d.value("name", ""), d.value("temperature", 0.0), d.value("top_k", 0), d.value("top_p", 1.0)});
  if (j.contains("solvers")) s.solvers = parsed(j.at("solvers"), parsePruneMethod);
  s.patterns = j.value("patterns", s.patterns);
  s.seeds = j.value("seeds", s.seeds);
  s.tokens = j.value("tokens", s.tokens);
  s.referenceTokens = j.value("reference_tokens", s.referenceTokens);
  s.maxNewTokens = j.value("max_new_tokens", s.maxNewTokens);
  s.window = j.value("window", s.window);
  s.epsilonK = j.value("epsilon_k", s.epsilonK);
  s.evalMaxNewTokens = j.value("eval_max_new_tokens", s.evalMaxNewTokens);
  s.evalPrompts = j.value("eval_prompts", s.evalPrompts);
  s.evalWindows = j.value("eval_windows", s.evalWindows);
  s.device = j.value("device", s.device);
  s.dtype = j.value("dtype", s.dtype);
  return s;
}

}  // namespace

fs::path writeStudy(const StudyResult& r, const fs::path& out, bool overwrite) {
  if (r.seedRows.empty()) throw std::runtime_error("writeStudy: the study has no rows");
  const std::string settings = settingsJson(r.settings).dump();
  const Provenance prov = engineProvenance(r.settings.model.string(), settings, r.settings.device);
  RunWriter w = RunWriter::create(out, prov, "study", runstore::CreateOptions{overwrite});
  const std::string g = kGroup;
  w.createGroup(g);
  w.setStringAttribute(g, "settings", settings);
  w.setStringAttribute(g, "work_dir", recordedPath(r.workDir));
  w.setDoubleAttribute(g, "seconds", r.seconds);

  const std::string sg = g + "/seeds";
  w.createGroup(sg);
  const hsize_t n = r.seedRows.size();
  using Row = StudySeedRow;
  w.writeStrings(sg + "/source", strings(r.seedRows, [](const Row& x) { return x.source; }));
  w.writeStrings(sg + "/decoding", strings(r.seedRows, [](const Row& x) { return x.decoding; }));
  w.writeStrings(sg + "/solver", strings(r.seedRows, [](const Row& x) { return x.solver; }));
  w.writeStrings(sg + "/pattern", strings(r.seedRows, [](const Row& x) { return x.pattern; }));
  w.writeDataset(sg + "/seed", doubles(r.seedRows, [](const Row& x) { return double(x.seed); }), {n});
  w.writeDataset(sg + "/kl", doubles(r.seedRows, [](const Row& x) { return x.kl; }), {n});
  w.writeDataset(sg + "/agreement", doubles(r.seedRows, [](const Row& x) { return x.agreement; }), {n});
  w.writeDataset(sg + "/first_divergence", doubles(r.seedRows, [](const Row& x) { return x.firstDivergence; }), {n});
  w.writeDataset(sg + "/ppl_dense_gen", doubles(r.seedRows, [](const Row& x) { return x.pplDenseGen; }), {n});
  w.writeDataset(sg + "/ppl_text", doubles(r.seedRows, [](const Row& x) { return x.pplText; }), {n});
  w.writeDataset(sg + "/mean_rel_error", doubles(r.seedRows, [](const Row& x) { return x.meanRelError; }), {n});

  if (!r.epsilonRows.empty()) {
    const std::string eg = g + "/epsilon";
    w.createGroup(eg);
    const hsize_t m = r.epsilonRows.size();
    using E = StudyEpsilonRow;
    w.writeStrings(eg + "/source", strings(r.epsilonRows, [](const E& x) { return x.source; }));
    w.writeStrings(eg + "/decoding", strings(r.epsilonRows, [](const E& x) { return x.decoding; }));
    w.writeDataset(eg + "/seed", doubles(r.epsilonRows, [](const E& x) { return double(x.seed); }), {m});
    w.writeDataset(eg + "/modules", doubles(r.epsilonRows, [](const E& x) { return double(x.modules); }), {m});
    w.writeDataset(eg + "/lower", doubles(r.epsilonRows, [](const E& x) { return double(x.lower); }), {m});
    w.writeDataset(eg + "/share_lower", doubles(r.epsilonRows, [](const E& x) { return x.shareLower; }), {m});
    w.writeDataset(eg + "/median_ratio", doubles(r.epsilonRows, [](const E& x) { return x.medianRatio; }), {m});
    w.writeDataset(eg + "/median_eps", doubles(r.epsilonRows, [](const E& x) { return x.medianEps; }), {m});
    w.writeDataset(eg + "/median_eps_fixed", doubles(r.epsilonRows, [](const E& x) { return x.medianEpsFixed; }), {m});
  }

  const std::string cg = g + "/cells";
  w.createGroup(cg);
  using C = StudyCell;
  w.writeStrings(cg + "/source", strings(r.cells, [](const C& x) { return x.source; }));
  w.writeStrings(cg + "/decoding", strings(r.cells, [](const C& x) { return x.decoding; }));
  w.writeStrings(cg + "/solver", strings(r.cells, [](const C& x) { return x.solver; }));
  w.writeStrings(cg + "/pattern", strings(r.cells, [](const C& x) { return x.pattern; }));
  writeCi(w, cg, "kl", r.cells, &C::kl);
  writeCi(w, cg, "agreement", r.cells, &C::agreement);
  writeCi(w, cg, "first_divergence", r.cells, &C::firstDivergence);
  writeCi(w, cg, "ppl_dense_gen", r.cells, &C::pplDenseGen);
  writeCi(w, cg, "ppl_text", r.cells, &C::pplText);
  writeCi(w, cg, "mean_rel_error", r.cells, &C::meanRelError);

  if (!r.epsilonCells.empty()) {
    const std::string ecg = g + "/epsilon_cells";
    w.createGroup(ecg);
    using EC = StudyEpsilonCell;
    w.writeStrings(ecg + "/source", strings(r.epsilonCells, [](const EC& x) { return x.source; }));
    w.writeStrings(ecg + "/decoding", strings(r.epsilonCells, [](const EC& x) { return x.decoding; }));
    writeCi(w, ecg, "share_lower", r.epsilonCells, &EC::shareLower);
    writeCi(w, ecg, "median_ratio", r.epsilonCells, &EC::medianRatio);
  }
  return w.commit(overwrite);
}

StudyResult readStudy(const fs::path& path) {
  const RunReader rd = RunReader::open(path);
  if (rd.kind() != "study")
    throw std::runtime_error(path.string() + ": not a study run (its kind is '" + rd.kind() +
                             "'); make one with sdw-cli study");
  StudyResult r;
  const std::string g = kGroup;
  r.settings = settingsFromJson(parseJsonBounded(rd.readStringAttribute(g, "settings"), path.string() + ": " + g + "@settings"));
  r.workDir = rd.readStringAttribute(g, "work_dir");
  r.seconds = rd.readDoubleAttribute(g, "seconds");
  const std::string sg = g + "/seeds";
  const auto src = rd.readStrings(sg + "/source"), dec = rd.readStrings(sg + "/decoding"),
             sol = rd.readStrings(sg + "/solver"), pat = rd.readStrings(sg + "/pattern");
  const auto seed = rd.readFloat64(sg + "/seed").data, kl = rd.readFloat64(sg + "/kl").data,
             agr = rd.readFloat64(sg + "/agreement").data, div = rd.readFloat64(sg + "/first_divergence").data,
             pdg = rd.readFloat64(sg + "/ppl_dense_gen").data, ptx = rd.readFloat64(sg + "/ppl_text").data,
             rel = rd.readFloat64(sg + "/mean_rel_error").data;
  for (std::size_t i = 0; i < src.size(); ++i)
    r.seedRows.push_back({src[i], dec[i], sol[i], pat[i], static_cast<std::uint64_t>(seed[i]), kl[i], agr[i], div[i],
                          pdg[i], ptx[i], rel[i]});
  if (rd.exists(g + "/epsilon")) {
    const std::string eg = g + "/epsilon";
    const auto es = rd.readStrings(eg + "/source"), ed = rd.readStrings(eg + "/decoding");
    const auto seedE = rd.readFloat64(eg + "/seed").data, mods = rd.readFloat64(eg + "/modules").data,
               low = rd.readFloat64(eg + "/lower").data, share = rd.readFloat64(eg + "/share_lower").data,
               ratio = rd.readFloat64(eg + "/median_ratio").data, me = rd.readFloat64(eg + "/median_eps").data,
               mf = rd.readFloat64(eg + "/median_eps_fixed").data;
    for (std::size_t i = 0; i < es.size(); ++i)
      r.epsilonRows.push_back({es[i], ed[i], static_cast<std::uint64_t>(seedE[i]), static_cast<int>(mods[i]),
                               static_cast<int>(low[i]), share[i], ratio[i], me[i], mf[i]});
  }
  summariseStudy(r);  // the cells are recomputed from the rows the file holds
  return r;
}

}  // namespace sdw::gpu
