// Replay of a calibration run's counted positions (calibration_internal.h):
// the sequences are rebuilt from what the run stored, so a re-capture through
// other weights (sequential-order pruning) counts exactly the same rows
// without generating again.

#include "gpu/calibration_internal.h"
#include "gpu/calibration_sources.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace sdw::gpu {

namespace {
namespace fs = std::filesystem;
constexpr const char* kGen = "/calibration/generations";
constexpr const char* kWin = "/calibration/windows";
}  // namespace

std::vector<ForwardRows> replaySequences(const runstore::RunFile& run, const CalibrationSettings& settings) {
  const std::string where = run.path().string();
  const CalibrationSource source = parseCalibrationSource(run.readStringAttribute("/calibration", "source"));
  const std::int64_t collected = run.readIntAttribute("/calibration", "tokens_collected");
  std::vector<ForwardRows> out;
  if (source == CalibrationSource::Fixed) {
    const auto docs = run.read<std::int32_t>(std::string(kWin) + "/document").data;
    const auto starts = run.read<std::int64_t>(std::string(kWin) + "/start").data;
    const auto counted = run.read<std::int32_t>(std::string(kWin) + "/counted").data;
    if (docs.size() != starts.size() || docs.size() != counted.size())
      throw std::runtime_error(where + ": the window columns differ in length");
    const fs::path tokDir = settings.model;
    if (!fs::exists(tokDir / "tokenizer.json")) throw std::runtime_error(tokDir.string() + " has no tokenizer.json");
    const Tokenizer tok = Tokenizer::fromFile(tokDir / "tokenizer.json");
    CorpusWindows corpus(readCorpus(settings.corpus), tok, settings.window, settings.seed);
    for (std::size_t i = 0; i < docs.size(); ++i) {
      const auto w = corpus.draw(static_cast<std::int64_t>(i));
      if (w.document != docs[i] || w.start != starts[i])
        throw std::runtime_error(settings.corpus.string() + " no longer gives the windows of " + where + " (window " +
                                 std::to_string(i) + ": document " + std::to_string(w.document) + " at " +
                                 std::to_string(w.start) + ", the run has document " + std::to_string(docs[i]) +
                                 " at " + std::to_string(starts[i]) + ")");
      ForwardRows f;
      f.sequence = static_cast<std::int64_t>(i);
      f.count = std::min<std::int64_t>(counted[i], static_cast<std::int64_t>(w.ids.size()));
      f.ids.assign(w.ids.begin(), w.ids.begin() + f.count);
      out.push_back(std::move(f));
    }
  } else {
    const bool prefill = run.readIntAttribute("/calibration", "include_prefill") != 0;
    const auto tokens = run.read<std::int32_t>(std::string(kGen) + "/token_ids").data;
    const auto offsets = run.read<std::int64_t>(std::string(kGen) + "/offsets").data;
    const auto promptTokens = run.read<std::int32_t>(std::string(kGen) + "/prompt_token_ids").data;
    const auto promptOffsets = run.read<std::int64_t>(std::string(kGen) + "/prompt_offsets").data;
    const auto prefillCounted = run.read<std::int32_t>(std::string(kGen) + "/prefill_counted").data;
    const auto decodeCounted = run.read<std::int32_t>(std::string(kGen) + "/decode_counted").data;
    const std::size_t n = decodeCounted.size();
    if (offsets.size() != n + 1 || promptOffsets.size() != n + 1 || prefillCounted.size() != n)
      throw std::runtime_error(where + ": the generation columns differ in length");
    for (std::size_t i = 0; i < n; ++i) {
      // Rows as the run counted them (calibration_stats.cpp, runArBatch):
      // prompt + g_0 .. g_(k-1); decode rows L .. L+k-1, with the prefill
      // ablation also rows 0 .. p-1 (p = L unless the budget ran out there,
      // and then k = 0: the rows stay contiguous).
      ForwardRows f;
      f.ids.assign(promptTokens.begin() + promptOffsets[i], promptTokens.begin() + promptOffsets[i + 1]);
      const auto L = static_cast<std::int64_t>(f.ids.size());
      const std::int64_t k = decodeCounted[i];
      if (offsets[i] + k > offsets[i + 1]) throw std::runtime_error(where + ": generation " + std::to_string(i) + " counts more rows than it has tokens");
      f.ids.insert(f.ids.end(), tokens.begin() + offsets[i], tokens.begin() + offsets[i] + k);
      f.begin = prefill ? 0 : L;
      f.count = prefillCounted[i] + k;
      f.sequence = static_cast<std::int64_t>(i);
      f.decodeFrom = L;
      if (f.count > 0) out.push_back(std::move(f));
    }
  }
  std::int64_t rows = 0;
  for (const auto& f : out) rows += f.count;
  if (rows != collected)
    throw std::runtime_error(where + ": its stored sequences give " + std::to_string(rows) + " rows, the run counted " +
                             std::to_string(collected));
  return out;
}

void replayCollect(Model& model, const std::vector<ForwardRows>& seqs, int batch, StatsAccumulator& acc,
                   const std::function<void(std::size_t done, std::size_t total)>& onBatch) {
  const std::size_t step = static_cast<std::size_t>(std::max(batch, 1));
  const std::size_t total = (seqs.size() + step - 1) / step;
  for (std::size_t b = 0; b < total; ++b) {
    const auto first = seqs.begin() + static_cast<std::ptrdiff_t>(b * step);
    const auto last = seqs.begin() + static_cast<std::ptrdiff_t>(std::min(seqs.size(), (b + 1) * step));
    forwardCollect(model, std::vector<ForwardRows>(first, last), acc);
    if (onBatch) onBatch(b + 1, total);
  }
  acc.flush();
}

}  // namespace sdw::gpu
