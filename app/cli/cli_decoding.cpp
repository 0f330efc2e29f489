#include "app/cli/cli_decoding.h"

#include <cstdio>
#include <ostream>
#include <stdexcept>

namespace sdw::cli {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::vector<OptionSpec> decodingOptions(const std::string& what) {
  return {{"temperature", "T",
           "sampling temperature of " + what + " (0: greedy). Default: the workbench's protocol, sampling from the "
           "model's own distribution; a checkpoint's generation_config.json is not applied",
           number(kDefaultDecoding.temperature)},
          {"top-k", "K", "top-k of the sampling (0: off)", std::to_string(kDefaultDecoding.topK)},
          {"top-p", "P", "top-p of the sampling (1: off)", number(kDefaultDecoding.topP)}};
}

Decoding decodingFrom(const Args& a) {
  Decoding d;
  d.temperature = a.getDouble("temperature", kDefaultDecoding.temperature);
  d.topK = static_cast<int>(a.getInt("top-k", kDefaultDecoding.topK));
  d.topP = a.getDouble("top-p", kDefaultDecoding.topP);
  try {
    validateDecoding(d, "decoding");
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string(e.what()) + " (--temperature, --top-k, --top-p)");
  }
  return d;
}

void printDecoding(std::ostream& out, const Decoding& used, const std::filesystem::path& modelDir) {
  out << "decoding: " << used.describe()
      << (sameDecoding(used, kDefaultDecoding) ? " (the default protocol)" : " (asked for; the default is " +
                                                                               kDefaultDecoding.describe() + ")")
      << "\n";
  if (modelDir.empty()) return;
  if (const std::string note = generationConfigNote(modelDir, used); !note.empty()) out << "note: " << note << "\n";
}

void printChecks(std::ostream& out, const std::vector<std::string>& warnings, const std::vector<std::string>& notes) {
  for (const auto& w : warnings) out << "warning: " << w << "\n";
  for (const auto& n : notes) out << "note: " << n << "\n";
}

}  // namespace sdw::cli
