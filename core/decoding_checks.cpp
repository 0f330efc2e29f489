#include "core/decoding_checks.h"

namespace sdw {

namespace {

namespace fs = std::filesystem;

std::string fileName(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.empty() ? p.string() : name;
}

std::string folderName(const fs::path& p) {
  fs::path q = p;
  if (q.filename().empty()) q = q.parent_path();
  return fileName(q);
}

// "The AR run calib-ar.sdw.h5", "The cross-model run x.sdw.h5".
std::string runRole(const RunDecoding& r) {
  const std::string kind = r.source == "ar"            ? "AR run"
                           : r.source == "cross-model" ? "cross-model run"
                           : r.source == "fixed"       ? "fixed-text run"
                                                       : "run";
  return kind + " " + fileName(r.run);
}

std::string whatItRead(const RunDecoding& r) {
  if (r.decodes) return "decoded " + (r.prompts.empty() ? std::string("an unrecorded prompts file") : fileName(r.prompts));
  if (!r.corpus.empty()) return "read the corpus " + fileName(r.corpus);
  return "read no recorded text";
}

std::string calibrationWords(const RunDecoding& c) {
  const std::string run = c.run.empty() ? std::string("an unnamed calibration run") : fileName(c.run);
  if (c.source == "fixed") return run + ", fixed text (no decoding)";
  if (!c.decodes) return run + ", source " + (c.source.empty() ? std::string("unknown") : c.source);
  return run + ", " + (c.source == "cross-model" ? std::string("another model's decoding, ") : std::string("AR, ")) +
         c.decoding.describe();
}

}  // namespace

DecodingCheck checkEpsilonDecodings(const RunDecoding& reference, const std::vector<RunDecoding>& runs) {
  DecodingCheck out;
  const std::string ref = "the decode-time reference " + fileName(reference.run);
  if (!reference.decodes) {
    out.warnings.push_back("The reference " + fileName(reference.run) + " did not decode (source " +
                           (reference.source.empty() ? std::string("unknown") : reference.source) +
                           "): eps then compares each run with that text, not with decode time. Use an AR run on "
                           "held-out prompts as the reference.");
  }
  for (const RunDecoding& r : runs) {
    if (!r.decodes) continue;
    if (reference.decodes && !sameDecoding(r.decoding, reference.decoding))
      out.warnings.push_back("The " + runRole(r) + " decoded " + r.decoding.describe() + ", but " + ref +
                             " decoded " + reference.decoding.describe() +
                             ": its eps then also measures the difference between two decodings, not only the "
                             "calibration gap. Calibrate the run and the reference with the same decoding.");
    if (reference.decodes && sameFile(r.prompts, reference.prompts))
      out.warnings.push_back("The " + runRole(r) + " and " + ref + " decoded the same prompts file (" +
                             fileName(r.prompts) +
                             "): the reference is not held out, so it favours that run. Decode the reference from "
                             "prompts the calibration never saw.");
  }

  std::string decodings = "Decodings: reference " + fileName(reference.run) + " " +
                          (reference.decodes ? reference.decoding.describe() : std::string("(no decoding)"));
  std::string prompts = "Prompt sets: reference " + fileName(reference.run) + " " + whatItRead(reference);
  for (const RunDecoding& r : runs) {
    decodings += "; " + runRole(r) + " " + (r.decodes ? r.decoding.describe() : std::string("(no decoding)"));
    prompts += "; " + runRole(r) + " " + whatItRead(r);
    if (r.decodes && reference.decodes && !r.prompts.empty() && !reference.prompts.empty())
      prompts += sameFile(r.prompts, reference.prompts) ? " (the same file as the reference)"
                                                        : " (another file: the reference is held out)";
  }
  out.notes.push_back(decodings + ".");
  out.notes.push_back(prompts + ".");
  return out;
}

const char* decodingJobName(DecodingJob job) {
  return job == DecodingJob::Evaluation ? "evaluation" : "drift analysis";
}

DecodingCheck checkPrunedCalibrations(const std::vector<PrunedCalibration>& models, const Decoding& used,
                                      const fs::path& prompts, DecodingJob which) {
  DecodingCheck out;
  const std::string job = decodingJobName(which);
  std::string calibrations;
  for (const PrunedCalibration& m : models) {
    const std::string name = folderName(m.model);
    if (!m.found) {
      out.notes.push_back(name + ": its calibration is not known (no provenance in model.safetensors, no "
                                 "pruning.sdw.h5 in the folder), so its decoding cannot be checked against this " +
                          job + "'s.");
      continue;
    }
    const RunDecoding& c = m.calibration;
    calibrations += (calibrations.empty() ? "" : "; ") + name + ": " + calibrationWords(c);
    if (c.decodes && !sameDecoding(c.decoding, used))
      out.warnings.push_back(name + " was calibrated on " + (c.run.empty() ? std::string("a run") : fileName(c.run)) +
                             ", decoded " + c.decoding.describe() + ", but this " + job + " decodes " +
                             used.describe() +
                             ": the comparison mixes two decodings. Calibrate and run the " + job +
                             " with the same decoding to compare like with like.");
    if (c.decodes && sameFile(c.prompts, prompts))
      out.warnings.push_back(name + " was calibrated by decoding " + fileName(c.prompts) + ", the same prompts file this " +
                             job + " decodes: those prompts are not held out for it.");
  }
  if (!calibrations.empty()) out.notes.insert(out.notes.begin(), "Calibrations: " + calibrations + ".");
  return out;
}

}  // namespace sdw
