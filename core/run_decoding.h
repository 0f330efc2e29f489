#pragma once
// Which decoding, and which prompt set, a run decoded: read back from a
// calibration run's /calibration attributes, and for a pruned checkpoint
// from the provenance pruning leaves behind (the calibration named in
// <dir>/model.safetensors' metadata, else <dir>/pruning.sdw.h5). Plain
// types for the checks of core/decoding_checks.h; no Qt, no torch.

#include "core/decoding.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace sdw {

namespace runstore {
class RunFile;
}

struct RunDecoding {
  std::filesystem::path run;      // the run file ("" when not known)
  std::string source;             // calibration source: "fixed", "ar", "cross-model" ("" when not known)
  bool decodes = false;           // the run generated tokens (ar, cross-model): `decoding` applies
  Decoding decoding;              // as recorded (temperature, sampling_top_k, sampling_top_p)
  std::filesystem::path prompts;  // the prompts file it decoded ("" for fixed text)
  std::filesystem::path corpus;   // fixed text: the corpus it read
};

// From a calibration run (run_kind "calibration"): /calibration@source,
// temperature, sampling_top_k, sampling_top_p, prompts, corpus. Attributes
// that are missing leave their defaults (a run without "temperature" was
// greedy: every writer records it). The path overload opens the file and
// throws runstore::RunStoreError when it cannot.
RunDecoding calibrationRunDecoding(const runstore::RunFile& run);
RunDecoding calibrationRunDecoding(const std::filesystem::path& run);

// Keys of the provenance pruneModel writes into a pruned checkpoint's
// model.safetensors metadata (strings, as safetensors metadata is).
inline constexpr const char* kMetaPruningRecord = "sdw_pruning_record";
inline constexpr const char* kMetaCalibrationRun = "sdw_calibration_run";
inline constexpr const char* kMetaCalibrationSource = "sdw_calibration_source";
inline constexpr const char* kMetaCalibrationDecoding = "sdw_calibration_decoding";  // decodingToJson; "" : no decoding
inline constexpr const char* kMetaCalibrationPrompts = "sdw_calibration_prompts";
inline constexpr const char* kMetaCalibrationCorpus = "sdw_calibration_corpus";
std::map<std::string, std::string> calibrationMetadata(const RunDecoding& calibration,
                                                       const std::filesystem::path& pruningRecord);

// The calibration a pruned checkpoint was made from.
struct PrunedCalibration {
  std::filesystem::path model;  // the pruned checkpoint folder
  bool found = false;
  std::string foundIn;          // "model.safetensors", "pruning.sdw.h5" or the calibration run it names
  RunDecoding calibration;
};
// In order: <dir>/model.safetensors' metadata (sdw_calibration_*), then
// <dir>/pruning.sdw.h5 (its calibration_* attributes, else the calibration
// run it names when that file is still there). Never throws: a folder
// without either, or with unreadable files, gives found = false.
PrunedCalibration findPrunedCalibration(const std::filesystem::path& prunedDir);

// What any run file says about decoding, for readers that do not know its
// kind: the decoding in words (calibration, evaluation and drift runs: the
// run's own; pruning records: "calibration: <its calibration's>") and the
// warnings the run carries (evaluation, drift, epsilon analyses). Drift runs
// without a recorded decoding were greedy. Empty when the run says nothing.
struct RecordedDecoding {
  std::string decoding;
  std::vector<std::string> warnings;
};
RecordedDecoding recordedDecoding(const runstore::RunFile& run);

// Whether two paths name the same file (after resolving "." and symlinks
// where the files exist); empty paths are never the same.
bool sameFile(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace sdw
