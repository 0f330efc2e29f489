#pragma once
// Small helpers shared by sdw-cli subcommands.

#include "app/cli/command.h"
#include "core/progress.h"
#include "gpu/model_config.h"

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace sdw::cli {

// A model config from "llama3-8b", a config.json path, a checkpoint folder, or
// a name in resources/configs/. `name` receives a short label. Throws UsageError.
gpu::ModelConfig resolveModelConfig(const std::string& spec, std::string& name);

// Writes `text` to --out FILE when given; prints it when --json is given and
// returns true then (the caller skips its table). Throws on a write error.
bool emitJson(const Args& a, const std::string& text);
// "sdw-cli bench SUB --opt value ...": the command a benchmark's JSON records.
std::string benchCommandLine(const std::string& sub, const Args& a);

// printf-formats v with f ("%.3f"); "n/a" for NaN, "inf" / "-inf" for infinities.
std::string fmt(const char* f, double v);
// "42 s", "3 min 5 s", "2 h 10 min".
std::string humanDuration(double seconds);

// Run-time activation sparsity as generate, eval and analyze drift take it:
// --activation-sparsity P (p_x), and --activation-thresholds RUN for
// per-input thresholds set from RUN's activation samples at P (TEAL,
// gpu/activation_thresholds.h) instead of each token's top-k.
struct ActivationSparsityArgs {
  double sparsity = 0;
  std::filesystem::path thresholds{};  // empty: per-token top-k
};
// The two options; `whose` names the models they apply to ("the compared models").
std::vector<OptionSpec> activationSparsityOptions(const std::string& whose);
// Throws UsageError: P outside [0, 1), or RUN without a P > 0.
ActivationSparsityArgs activationSparsityFrom(const Args& a);
// "activation sparsity: p_x 0.5, thresholds from RUN (run ID)" or "..., per-token top-k";
// nothing at p_x 0. `whose` as above.
void printActivationSparsity(std::ostream& out, const ActivationSparsityArgs& s, const std::string& runId,
                             const std::string& whose);

// "0,1,2" -> {0, 1, 2}. Throws UsageError naming `option` and the text.
std::vector<std::uint64_t> parseSeeds(const std::string& text, const std::string& option = "--seeds");
// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> splitComma(const std::string& text);
// A progress line on stderr ("  done / total  stage") when `enabled` (stderr
// is a terminal); no callback otherwise.
ProgressFn ttyProgress(bool enabled);

}  // namespace sdw::cli
