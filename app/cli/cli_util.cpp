#include "app/cli/cli_util.h"

#include "app/cli/command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace sdw::cli {

std::string fmt(const char* f, double v) {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

gpu::ModelConfig resolveModelConfig(const std::string& spec, std::string& name) {
  try {
    return gpu::resolveShapeConfig(spec, std::filesystem::path(SDW_SOURCE_DIR) / "resources/configs", name);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
}

std::vector<OptionSpec> activationSparsityOptions(const std::string& whose) {
  return {{"activation-sparsity", "P",
           "run-time activation sparsity p_x of " + whose +
               ", in [0, 1): each projection input keeps its largest 1-P share per token (or, with "
               "--activation-thresholds, the entries above the thresholds set at P)",
           "0"},
          {"activation-thresholds", "RUN",
           "a calibration run with activation samples (calibrate --sample-rows N): per layer and input, keep "
           "|x| > the threshold below which a share P of its samples lies (TEAL) instead of each token's top-k",
           ""}};
}

ActivationSparsityArgs activationSparsityFrom(const Args& a) {
  ActivationSparsityArgs out;
  out.sparsity = a.getDouble("activation-sparsity", 0.0);
  if (!(out.sparsity >= 0 && out.sparsity < 1)) throw UsageError("--activation-sparsity must be in [0, 1)");
  if (a.has("activation-thresholds")) {
    out.thresholds = a.get("activation-thresholds");
    if (out.thresholds.empty()) throw UsageError("--activation-thresholds expects a calibration run");
    if (!(out.sparsity > 0))
      throw UsageError("--activation-thresholds RUN needs --activation-sparsity P > 0 (the share of entries below "
                       "the thresholds)");
  }
  return out;
}

void printActivationSparsity(std::ostream& out, const ActivationSparsityArgs& s, const std::string& runId,
                             const std::string& whose) {
  if (!(s.sparsity > 0)) return;
  out << "activation sparsity of " << whose << ": p_x " << fmt("%.3g", s.sparsity);
  if (s.thresholds.empty()) out << ", per-token top-k\n";
  else out << ", thresholds from " << s.thresholds.string() << " (run " << runId << ")\n";
}

std::string benchCommandLine(const std::string& sub, const Args& a) {
  std::string s = "sdw-cli bench " + sub;
  for (const auto& [k, v] : a.values) s += " --" + k + (a.flags.count(k) ? "" : " " + v);
  return s;
}

bool emitJson(const Args& a, const std::string& text) {
  if (a.has("out")) {
    std::ofstream out(a.get("out"));
    if (!out || !(out << text << "\n")) throw std::runtime_error("cannot write " + a.get("out"));
  }
  if (!a.has("json")) return false;
  std::cout << text << "\n";
  return true;
}

std::string humanDuration(double seconds) {
  char buf[64];
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) std::snprintf(buf, sizeof buf, "%lld s", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lld min %lld s", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lld h %lld min", s / 3600, (s % 3600) / 60);
  return buf;
}

std::vector<std::uint64_t> parseSeeds(const std::string& text, const std::string& option) {
  std::vector<std::uint64_t> seeds;
  for (const std::string& item : splitComma(text)) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument("bad");
      seeds.push_back(static_cast<std::uint64_t>(v));
    } catch (const std::exception&) {
      throw UsageError(option + " expects comma-separated non-negative integers, got '" + text + "'");
    }
  }
  if (seeds.empty()) throw UsageError(option + " is empty");
  return seeds;
}

std::vector<std::string> splitComma(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

ProgressFn ttyProgress(bool enabled) {
  if (!enabled) return {};
  return [](const Progress& p) {
    std::fprintf(stderr, "\r  %3.0f / %.0f  %-60s", p.done, p.total, p.stage.substr(0, 60).c_str());
    return true;
  };
}

}  // namespace sdw::cli
