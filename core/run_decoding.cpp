#include "core/run_decoding.h"
#include "core/paths.h"

#include "core/runstore.h"
#include "core/safetensors.h"

#include <system_error>

namespace sdw {

namespace {

namespace fs = std::filesystem;
namespace rs = sdw::runstore;

constexpr const char* kCal = "/calibration";
constexpr const char* kPruning = "/pruning";

std::string stringOr(const rs::RunFile& r, const char* obj, const char* name) {
  return r.hasAttribute(obj, name) ? r.readStringAttribute(obj, name) : std::string();
}

bool decodesFrom(const std::string& source) { return source == "ar" || source == "cross-model"; }

// The calibration as a pruning record states it (written since records carry
// calibration_decodes); nullopt for older records.
std::optional<RunDecoding> fromRecord(const rs::RunFile& r) {
  if (!r.hasAttribute(kPruning, "calibration_decodes")) return std::nullopt;
  RunDecoding d;
  d.run = resolveRecordedPath(stringOr(r, kPruning, "calibration_run"), r.path());
  d.source = stringOr(r, kPruning, "calibration_source");
  d.decodes = r.readIntAttribute(kPruning, "calibration_decodes") != 0;
  if (r.hasAttribute(kPruning, "calibration_temperature"))
    d.decoding.temperature = r.readDoubleAttribute(kPruning, "calibration_temperature");
  if (r.hasAttribute(kPruning, "calibration_top_k"))
    d.decoding.topK = static_cast<int>(r.readIntAttribute(kPruning, "calibration_top_k"));
  if (r.hasAttribute(kPruning, "calibration_top_p")) d.decoding.topP = r.readDoubleAttribute(kPruning, "calibration_top_p");
  d.prompts = stringOr(r, kPruning, "calibration_prompts");
  d.corpus = stringOr(r, kPruning, "calibration_corpus");
  return d;
}

}  // namespace

RunDecoding calibrationRunDecoding(const rs::RunFile& r) {
  RunDecoding d;
  d.run = r.path();
  d.source = stringOr(r, kCal, "source");
  d.decodes = decodesFrom(d.source);
  // Every calibration writer records its sampling; a run without it predates
  // sampling and decoded greedily.
  d.decoding = Decoding{0.0, 0, 1.0};
  if (r.hasAttribute(kCal, "temperature")) d.decoding.temperature = r.readDoubleAttribute(kCal, "temperature");
  if (r.hasAttribute(kCal, "sampling_top_k")) d.decoding.topK = static_cast<int>(r.readIntAttribute(kCal, "sampling_top_k"));
  if (r.hasAttribute(kCal, "sampling_top_p")) d.decoding.topP = r.readDoubleAttribute(kCal, "sampling_top_p");
  d.prompts = stringOr(r, kCal, "prompts");
  d.corpus = stringOr(r, kCal, "corpus");
  if (!d.decodes) d.prompts.clear();
  return d;
}

RunDecoding calibrationRunDecoding(const fs::path& run) {
  const rs::RunReader r = rs::RunReader::open(run);
  RunDecoding d = calibrationRunDecoding(static_cast<const rs::RunFile&>(r));
  d.run = run;  // the name given, not the open file's
  return d;
}

std::map<std::string, std::string> calibrationMetadata(const RunDecoding& c, const fs::path& pruningRecord) {
  return {{kMetaPruningRecord, recordedPath(pruningRecord)},
          {kMetaCalibrationRun, recordedPath(c.run)},
          {kMetaCalibrationSource, c.source},
          {kMetaCalibrationDecoding, c.decodes ? decodingToJson(c.decoding) : std::string()},
          {kMetaCalibrationPrompts, c.prompts.string()},
          {kMetaCalibrationCorpus, c.corpus.string()}};
}

PrunedCalibration findPrunedCalibration(const fs::path& dir) {
  PrunedCalibration out;
  out.model = dir;
  std::error_code ec;
  // 1. The provenance written into the pruned weights: travels with the folder.
  const fs::path weights = dir / "model.safetensors";
  if (fs::is_regular_file(weights, ec)) {
    try {
      const SafetensorsFile f = SafetensorsFile::open(weights);
      const auto& meta = f.metadata();
      if (const auto it = meta.find(kMetaCalibrationSource); it != meta.end()) {
        const auto get = [&](const char* key) {
          const auto i = meta.find(key);
          return i == meta.end() ? std::string() : i->second;
        };
        RunDecoding& c = out.calibration;
        c.run = resolveRecordedPath(get(kMetaCalibrationRun), weights);
        c.source = it->second;
        const std::string dec = get(kMetaCalibrationDecoding);
        c.decodes = !dec.empty();
        if (c.decodes) c.decoding = decodingFromJson(dec);
        c.prompts = get(kMetaCalibrationPrompts);
        c.corpus = get(kMetaCalibrationCorpus);
        out.found = true;
        out.foundIn = weights.string();
        return out;
      }
    } catch (const std::exception&) {
      // unreadable weights or metadata: try the record
    }
  }
  // 2. The pruning record next to the checkpoint (sdw-cli prune's default).
  const fs::path record = dir / "pruning.sdw.h5";
  if (!fs::is_regular_file(record, ec)) return out;
  try {
    const rs::RunReader r = rs::RunReader::open(record);
    if (r.kind() != "pruning") return out;
    if (auto d = fromRecord(r)) {
      out.calibration = *d;
      out.found = true;
      out.foundIn = record.string();
      return out;
    }
    // An older record: the calibration run it names, if it is still there.
    const fs::path run = resolveRecordedPath(stringOr(r, kPruning, "calibration_run"), record);
    if (!run.empty() && fs::is_regular_file(run, ec)) {
      out.calibration = calibrationRunDecoding(run);
      out.found = true;
      out.foundIn = run.string();
    }
  } catch (const std::exception&) {
    out.found = false;
  }
  return out;
}

RecordedDecoding recordedDecoding(const rs::RunFile& r) {
  RecordedDecoding out;
  const auto warningsAt = [&](const std::string& group) {
    const std::string ds = group + "/warnings";
    if (r.objectKind(ds) == rs::ObjectKind::Dataset) out.warnings = r.readStrings(ds);
  };
  const auto numbers = [&](const char* group, const char* topK, const char* topP) {
    Decoding d{0.0, 0, 1.0};  // a drift run without these decoded greedily
    if (r.hasAttribute(group, "temperature")) d.temperature = r.readDoubleAttribute(group, "temperature");
    if (r.hasAttribute(group, topK)) d.topK = static_cast<int>(r.readIntAttribute(group, topK));
    if (r.hasAttribute(group, topP)) d.topP = r.readDoubleAttribute(group, topP);
    return d.describe();
  };
  if (r.kind() == "calibration" && r.exists(kCal)) {
    const RunDecoding d = calibrationRunDecoding(r);
    out.decoding = d.decodes ? d.decoding.describe() : std::string("none (fixed text, teacher-forced)");
  } else if (r.kind() == "evaluation" && r.exists("/evaluation")) {
    out.decoding = numbers("/evaluation", "top_k", "top_p");
    warningsAt("/evaluation");
  } else if (r.kind() == "drift" && r.exists("/drift")) {
    out.decoding = numbers("/drift", "top_k", "top_p");
    warningsAt("/drift");
  } else if (r.kind() == "pruning" && r.exists(kPruning)) {
    if (const auto d = fromRecord(r))
      out.decoding = "calibration: " + (d->decodes ? d->decoding.describe() : "none (" + d->source + ")");
  } else if (r.kind() == "analysis" && r.exists("/analysis/epsilon")) {
    warningsAt("/analysis/epsilon");
  }
  return out;
}

bool sameFile(const fs::path& a, const fs::path& b) {
  if (a.empty() || b.empty()) return false;
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(b, eb);
  if (!ea && !eb) return ca == cb;
  return fs::absolute(a).lexically_normal() == fs::absolute(b).lexically_normal();
}

}  // namespace sdw
