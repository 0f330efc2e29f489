// The evaluation run: writer and reader of run_kind "evaluation".

#include "gpu/evaluation_run.h"

#include "core/paths.h"
#include "core/provenance.h"
#include "core/runstore.h"
#include "gpu/device.h"
#include "gpu/run_read_internal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace sdw::gpu {

namespace {

namespace rs = sdw::runstore;
using namespace runread;

constexpr const char* kGroup = "/evaluation";

}  // namespace

std::filesystem::path writeEvaluationRun(const EvaluationResult& r, const std::filesystem::path& out,
                                         bool overwrite) {
  const auto& s = r.settings;
  nlohmann::json settings = {{"dense", recordedPath(s.dense)},
                             {"text", recordedPath(s.text)},
                             {"prompts", recordedPath(s.prompts)},
                             {"seeds", s.seeds},
                             {"max_new_tokens", s.maxNewTokens},
                             {"window", s.window},
                             {"windows", s.windows},
                             {"text_seed", s.textSeed},
                             {"max_prompts", s.maxPrompts},
                             {"temperature", s.temperature},
                             {"top_k", s.topK},
                             {"top_p", s.topP},
                             {"stop_at_eos", s.stopAtEos},
                             {"device", s.device},
                             {"dtype", s.dtype},
                             {"activation_sparsity", s.activationSparsity},
                             // where the thresholds came from (empty: per-token top-k)
                             {"activation_thresholds", recordedPath(s.activationThresholds)},
                             {"activation_thresholds_run_id", r.activationThresholdsRunId}};
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : s.models) models.push_back(recordedPath(m));
  settings["models"] = models;

  Provenance prov = engineProvenance(recordedPath(s.dense), settings.dump(), s.device);
  prov.addModelFiles(s.dense);

  rs::RunWriter w = rs::RunWriter::create(out, prov, "evaluation", rs::CreateOptions{overwrite});
  const std::string g = "/evaluation";
  w.createGroup(g);
  w.setStringAttribute(g, "dense_dir", recordedPath(s.dense));
  w.setStringAttribute(g, "text_file", recordedPath(s.text));
  w.setStringAttribute(g, "prompts_file", recordedPath(s.prompts));
  w.setIntAttribute(g, "prompts", r.prompts);
  w.setIntAttribute(g, "windows", r.windows);
  w.setIntAttribute(g, "window", s.window);
  w.setIntAttribute(g, "max_new_tokens", s.maxNewTokens);
  writeDecoding(w, g, s.decoding());
  w.writeStrings(g + "/warnings", r.warnings);
  w.writeStrings(g + "/notes", r.notes);
  {
    // Row m: the calibration of model m ("" for the dense row and where unknown).
    std::vector<std::string> runs{""}, decodings{""};
    for (std::size_t i = 1; i < r.models.size(); ++i) {
      const PrunedCalibration c = i - 1 < r.calibrations.size() ? r.calibrations[i - 1] : PrunedCalibration{};
      runs.push_back(c.found ? recordedPath(c.calibration.run) : std::string());
      decodings.push_back(!c.found                ? std::string()
                          : c.calibration.decodes ? c.calibration.decoding.describe()
                                                  : std::string("none (") + c.calibration.source + ")");
    }
    w.writeStrings(g + "/calibration_runs", runs);
    w.writeStrings(g + "/calibration_decodings", decodings);
  }
  w.setDoubleAttribute(g, "seconds", r.seconds);

  const auto M = static_cast<hsize_t>(r.models.size());
  const auto S = static_cast<hsize_t>(s.seeds.size());
  const auto P = static_cast<hsize_t>(r.prompts);
  std::vector<std::string> dirs, labels;
  std::vector<double> pplT, nllT, pplG, nllG, kl, agree, div, summary;
  std::vector<std::int64_t> tokT, tokG, steps, seeds;
  std::vector<std::int32_t> noDiv, first, length;
  for (const auto seed : s.seeds) seeds.push_back(static_cast<std::int64_t>(seed));
  for (const auto& m : r.models) {
    dirs.push_back(recordedPath(m.dir));
    labels.push_back(m.label);
    pplT.push_back(m.pplText);
    nllT.push_back(m.nllText);
    tokT.push_back(m.tokensText);
    pplG.push_back(m.pplDenseGen);
    nllG.push_back(m.nllDenseGen);
    tokG.push_back(m.tokensDenseGen);
    for (const auto& ps : m.seeds) {
      kl.push_back(ps.klMean);
      agree.push_back(ps.agreement);
      div.push_back(ps.firstDivergenceMedian);
      steps.push_back(ps.steps);
      noDiv.push_back(ps.noDivergence);
      first.insert(first.end(), ps.firstDivergence.begin(), ps.firstDivergence.end());
      length.insert(length.end(), ps.trajectoryLength.begin(), ps.trajectoryLength.end());
    }
    for (const Spread* sp : {&m.kl, &m.agreement, &m.firstDivergence})
      summary.insert(summary.end(), {sp->mean, sp->std, sp->min, sp->max});
  }
  w.writeStrings(g + "/model_dirs", dirs);
  w.writeStrings(g + "/model_labels", labels);
  w.writeDataset(g + "/ppl_text", pplT, {M});
  w.writeDataset(g + "/nll_text", nllT, {M});
  w.writeDataset(g + "/tokens_text", tokT, {M});
  w.writeDataset(g + "/ppl_dense_gen", pplG, {M});
  w.writeDataset(g + "/nll_dense_gen", nllG, {M});
  w.writeDataset(g + "/tokens_dense_gen", tokG, {M});
  w.writeDataset(g + "/onpolicy/seeds", seeds, {S});
  w.writeDataset(g + "/onpolicy/kl_mean", kl, {M, S});
  w.writeDataset(g + "/onpolicy/agreement", agree, {M, S});
  w.writeDataset(g + "/onpolicy/first_divergence_median", div, {M, S});
  w.writeDataset(g + "/onpolicy/steps", steps, {M, S});
  w.writeDataset(g + "/onpolicy/no_divergence", noDiv, {M, S});
  w.writeDataset(g + "/onpolicy/first_divergence", first, {M, S, P});
  w.writeDataset(g + "/onpolicy/trajectory_length", length, {M, S, P});
  w.writeDataset(g + "/summary", summary, {M, 3, 4});
  w.writeStrings(g + "/dense_generations", r.denseGenerations);
  if (!r.sideBySide.empty()) {
    std::vector<std::string> ids, texts, promptTexts;
    for (const auto& sb : r.sideBySide) {
      ids.push_back(sb.promptId);
      promptTexts.push_back(sb.prompt);
      texts.insert(texts.end(), sb.texts.begin(), sb.texts.end());
    }
    w.writeStrings(g + "/side_by_side/prompt_ids", ids);
    w.writeStrings(g + "/side_by_side/prompts", promptTexts);
    w.writeStrings(g + "/side_by_side/texts", texts);  // [N * M], row-major [N, M]
    w.setIntAttribute(g + "/side_by_side/texts", "models", static_cast<std::int64_t>(M));
  }
  return w.commit(overwrite);
}


EvaluationResult readEvaluationRun(const std::filesystem::path& path) {
  const rs::RunReader r = rs::RunReader::open(path);
  if (r.kind() != "evaluation") fail(path, " is a run of kind '" + r.kind() + "', not evaluation");
  requireRun(r, path, kGroup, true);
  const std::string g = kGroup;
  const nlohmann::json recorded = recordedSettings(r);
  EvaluationResult res;
  EvaluationSettings& s = res.settings;
  s.dense = stringAttr(r, g, "dense_dir");
  s.text = stringAttr(r, g, "text_file");
  s.prompts = stringAttr(r, g, "prompts_file");
  s.window = static_cast<int>(intAttr(r, g, "window", s.window));
  s.maxNewTokens = static_cast<int>(intAttr(r, g, "max_new_tokens"));
  s.setDecoding(readDecoding(r, g, kGreedyDecoding));
  s.windows = setting(recorded, "windows", s.windows);
  s.textSeed = setting(recorded, "text_seed", s.textSeed);
  s.maxPrompts = setting(recorded, "max_prompts", s.maxPrompts);
  s.stopAtEos = setting(recorded, "stop_at_eos", s.stopAtEos);
  s.device = setting(recorded, "device", s.device);
  s.dtype = setting(recorded, "dtype", s.dtype);
  s.activationSparsity = setting(recorded, "activation_sparsity", s.activationSparsity);
  s.activationThresholds = setting(recorded, "activation_thresholds", std::string());
  res.activationThresholdsRunId = setting(recorded, "activation_thresholds_run_id", std::string());
  res.prompts = static_cast<int>(intAttr(r, g, "prompts"));
  res.windows = static_cast<int>(intAttr(r, g, "windows"));
  res.seconds = doubleAttr(r, g, "seconds");
  res.warnings = stringsIfAny(r, g + "/warnings");
  res.notes = stringsIfAny(r, g + "/notes");

  const std::string e = g + "/";
  const auto dirs = r.readStrings(e + "model_dirs");
  const auto labels = r.readStrings(e + "model_labels");
  const std::size_t m = labels.size();
  const auto pplText = r.readFloat64(e + "ppl_text").data;
  const auto nllText = r.readFloat64(e + "nll_text").data;
  const auto tokText = r.readInt64(e + "tokens_text").data;
  const auto pplGen = r.readFloat64(e + "ppl_dense_gen").data;
  const auto nllGen = r.readFloat64(e + "nll_dense_gen").data;
  const auto tokGen = r.readInt64(e + "tokens_dense_gen").data;
  for (const auto& [size, what] : {std::pair{dirs.size(), "model_dirs"}, {pplText.size(), "ppl_text"},
                                   {nllText.size(), "nll_text"}, {tokText.size(), "tokens_text"},
                                   {pplGen.size(), "ppl_dense_gen"}, {nllGen.size(), "nll_dense_gen"},
                                   {tokGen.size(), "tokens_dense_gen"}})
    requireSize(path, e + what, size, m);
  const auto seeds = r.readInt64(e + "onpolicy/seeds").data;
  const std::size_t S = seeds.size(), P = static_cast<std::size_t>(std::max(res.prompts, 0));
  s.seeds.assign(seeds.begin(), seeds.end());
  const auto summary = r.readFloat64(e + "summary");  // {M, 3, 4}: KL, agreement, first divergence x mean, std, min, max
  if (summary.shape != std::vector<hsize_t>{m, 3, 4})
    fail(path, ": " + e + "summary does not have the shape {models, 3, 4}");
  const auto perSeed = [&](const char* name, std::size_t perModel) {
    const std::string ds = e + "onpolicy/" + name;
    const auto shape = r.shape(ds);
    std::size_t n = shape.empty() ? 0 : 1;
    for (const hsize_t d : shape) n *= d;
    if (n != m * perModel) fail(path, ": " + ds + " does not hold " + std::to_string(m * perModel) + " entries");
    return ds;
  };
  const auto kl = r.readFloat64(perSeed("kl_mean", S)).data;
  const auto agreement = r.readFloat64(perSeed("agreement", S)).data;
  const auto divMedian = r.readFloat64(perSeed("first_divergence_median", S)).data;
  const auto steps = r.readInt64(perSeed("steps", S)).data;
  const auto noDiv = r.readInt64(perSeed("no_divergence", S)).data;
  const auto first = r.readInt64(perSeed("first_divergence", S * P)).data;
  const auto length = r.readInt64(perSeed("trajectory_length", S * P)).data;
  for (std::size_t i = 0; i < m; ++i) {
    ModelEvaluation x;
    x.dir = dirs[i];
    x.label = labels[i];
    x.isDense = i == 0;
    x.pplText = pplText[i];
    x.nllText = nllText[i];
    x.tokensText = tokText[i];
    x.pplDenseGen = pplGen[i];
    x.nllDenseGen = nllGen[i];
    x.tokensDenseGen = tokGen[i];
    for (std::size_t k = 0; k < S; ++k) {
      const std::size_t c = i * S + k;
      OnPolicySeed ps;
      ps.seed = s.seeds[k];
      ps.klMean = kl[c];
      ps.agreement = agreement[c];
      ps.firstDivergenceMedian = divMedian[c];
      ps.steps = steps[c];
      ps.noDivergence = static_cast<int>(noDiv[c]);
      for (std::size_t p = 0; p < P; ++p) {
        ps.firstDivergence.push_back(static_cast<int>(first[c * P + p]));
        ps.trajectoryLength.push_back(static_cast<int>(length[c * P + p]));
      }
      x.seeds.push_back(std::move(ps));
    }
    Spread* spreads[] = {&x.kl, &x.agreement, &x.firstDivergence};
    for (std::size_t row = 0; row < 3; ++row) {
      const double* v = summary.data.data() + i * 12 + row * 4;
      *spreads[row] = Spread{v[0], v[1], v[2], v[3], static_cast<int>(S)};
    }
    if (i > 0) s.models.push_back(x.dir);
    res.models.push_back(std::move(x));
  }
  res.denseGenerations = stringsIfAny(r, e + "dense_generations");

  const std::string sb = e + "side_by_side/";
  if (r.exists(sb + "prompts")) {
    const auto ids = r.readStrings(sb + "prompt_ids");
    const auto prompts = r.readStrings(sb + "prompts");
    const auto texts = r.readStrings(sb + "texts");
    if (ids.size() != prompts.size() || texts.size() != prompts.size() * m)
      fail(path, ": " + sb + " tables differ in length from its prompts and models");
    for (std::size_t n = 0; n < prompts.size(); ++n)
      res.sideBySide.push_back({ids[n], prompts[n], std::vector<std::string>(texts.begin() + std::ptrdiff_t(n * m),
                                                                             texts.begin() + std::ptrdiff_t((n + 1) * m))});
  }
  s.sideBySidePrompts = static_cast<int>(res.sideBySide.size());
  return res;
}

}  // namespace sdw::gpu
