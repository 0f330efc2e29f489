#include "core/decoding.h"

#include "core/json_limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace sdw {

namespace {

// 1 -> "1.0", 0.7 -> "0.7", 0.95 -> "0.95": at least one decimal, at most three.
std::string number(double v) {
  char buf[32];
  if (v != 0 && std::abs(v) < 0.01) {  // small values keep their digits: 0.001, not 0.0
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.3f", v);
  std::string s = buf;
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(a) + std::abs(b)); }

}  // namespace

std::string Decoding::describe() const {
  if (greedy()) return "greedy";
  return "sampled, T=" + number(temperature) + ", top-k " + (topK > 0 ? std::to_string(topK) : std::string("off")) +
         ", top-p " + number(topP);
}

bool sameDecoding(const Decoding& a, const Decoding& b) {
  if (a.greedy() || b.greedy()) return a.greedy() == b.greedy();
  const int ka = std::max(a.topK, 0), kb = std::max(b.topK, 0);
  return near(a.temperature, b.temperature) && ka == kb && near(std::min(a.topP, 1.0), std::min(b.topP, 1.0));
}

void validateDecoding(const Decoding& d, const std::string& where) {
  const auto bad = [&](const std::string& what) { throw std::invalid_argument(where + ": " + what); };
  if (!(d.temperature >= 0) || !std::isfinite(d.temperature))
    bad("temperature must be >= 0 (0: greedy), got " + number(d.temperature));
  if (d.topK < 0) bad("top-k must be >= 0 (0: off), got " + std::to_string(d.topK));
  if (!(d.topP > 0 && d.topP <= 1)) bad("top-p must be in (0, 1] (1: off), got " + number(d.topP));
}

std::string decodingToJson(const Decoding& d) {
  return nlohmann::json{{"temperature", d.temperature}, {"top_k", d.topK}, {"top_p", d.topP}}.dump();
}

Decoding decodingFromJson(const std::string& text, const Decoding& fallback) {
  nlohmann::json j;
  try {
    j = parseJsonBounded(text, "decoding", JsonLimits{8, 64 << 10});
  } catch (const JsonInputError& e) {
    throw std::invalid_argument(e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("decoding: expected a JSON object, got '" + text + "'");
  Decoding d = fallback;
  try {
    if (j.contains("temperature")) d.temperature = j.at("temperature").get<double>();
    if (j.contains("top_k")) d.topK = j.at("top_k").get<int>();
    if (j.contains("top_p")) d.topP = j.at("top_p").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("decoding: a value of the wrong type in '" + text + "': " + e.what());
  }
  return d;
}

const char* decodingProtocolReason() {
  return "every job that decodes samples from the dense model's own distribution (temperature 1, top-k off, "
         "top-p 1) unless told otherwise, as the paper's method does, so that calibration, its reference, "
         "evaluation and drift measure the same decoding and runs of different models compare";
}

GenerationConfigDecoding readGenerationConfig(const std::filesystem::path& modelDir) {
  GenerationConfigDecoding g;
  g.file = modelDir / "generation_config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(g.file, ec)) return g;
  nlohmann::json j;
  try {
    j = readJsonFileBounded(g.file);
  } catch (const JsonInputError&) {
    return g;  // unreadable: loading the model reports it; nothing to compare here
  }
  if (!j.is_object()) return g;
  g.present = true;
  if (j.contains("do_sample") && j["do_sample"].is_boolean()) g.doSample = j["do_sample"].get<bool>();
  // transformers: do_sample defaults to false (greedy); when sampling,
  // temperature 1, top_k 50 and top_p 1 unless the file says otherwise.
  if (!g.doSample.value_or(false)) {
    g.requested = Decoding{0.0, 0, 1.0};
    return g;
  }
  g.requested = Decoding{1.0, 50, 1.0};
  if (j.contains("temperature") && j["temperature"].is_number()) g.requested.temperature = j["temperature"].get<double>();
  if (j.contains("top_k") && j["top_k"].is_number_integer()) g.requested.topK = j["top_k"].get<int>();
  if (j.contains("top_p") && j["top_p"].is_number()) g.requested.topP = j["top_p"].get<double>();
  return g;
}

std::string generationConfigNote(const std::filesystem::path& modelDir, const Decoding& used) {
  const GenerationConfigDecoding g = readGenerationConfig(modelDir);
  if (!g.present || sameDecoding(g.requested, used)) return {};
  std::string asks = g.requested.greedy() ? "greedy decoding" : g.requested.describe();
  if (g.doSample) asks += std::string(" (do_sample ") + (*g.doSample ? "true" : "false") + ")";
  else asks += " (no do_sample: greedy in transformers)";
  const std::string why = sameDecoding(used, kDefaultDecoding)
                              ? ", the workbench's default protocol for every run, so that runs of different models "
                                "and calibration against evaluation compare"
                              : " as asked";
  return g.file.string() + " asks for " + asks + "; this run decodes " + used.describe() + why +
         " (the checkpoint's file is never applied; docs/calibration.md, \"Decoding\")";
}

std::vector<std::int32_t> mergeStopIds(std::vector<std::int32_t> tokenizerStops,
                                       std::span<const std::int32_t> configEos,
                                       std::span<const std::int32_t> generationEos) {
  std::vector<std::int32_t> s = std::move(tokenizerStops);
  s.insert(s.end(), configEos.begin(), configEos.end());
  s.insert(s.end(), generationEos.begin(), generationEos.end());
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

}  // namespace sdw
