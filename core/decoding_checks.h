#pragma once
// Plain-words warnings for comparisons that mix decodings or prompt sets:
// an AR calibration run against its decode-time reference (epsilon), and a
// pruned model's calibration against the decoding an evaluation or a drift
// analysis uses. The engine puts the lines into its result types and run
// files; the CLI prints them and the GUI shows them. Wording only: what a
// run decoded comes from core/run_decoding.h.

#include "core/decoding.h"
#include "core/run_decoding.h"

#include <string>
#include <vector>

namespace sdw {

struct DecodingCheck {
  std::vector<std::string> warnings;  // the comparison is questionable: say why and what to do
  std::vector<std::string> notes;     // what was compared (decodings, prompt sets), and what could not be checked
};

// Epsilon: every decoding run of `runs` (AR, cross-model) against the
// reference. Warns when a run decoded with other settings than the reference,
// when it decoded the reference's own prompts file (the reference is then
// not held out), and when the reference did not decode at all. Notes name
// each run's decoding and prompt set.
DecodingCheck checkEpsilonDecodings(const RunDecoding& reference, const std::vector<RunDecoding>& runs);

// The job whose decoding a pruned model's calibration is checked against.
enum class DecodingJob { Evaluation, DriftAnalysis };
const char* decodingJobName(DecodingJob job);  // "evaluation", "drift analysis"

// Evaluation or drift: each pruned model's calibration against the job's
// decoding `used` and its prompts file. Warns when an AR (or cross-model)
// calibration decoded differently, and when it decoded the job's prompts
// file; notes say what each model was calibrated on, and which ones could
// not be checked.
DecodingCheck checkPrunedCalibrations(const std::vector<PrunedCalibration>& models, const Decoding& used,
                                      const std::filesystem::path& prompts, DecodingJob job);

}  // namespace sdw
