#pragma once
// The decoding options every sdw-cli command that decodes shares
// (--temperature, --top-k, --top-p), their defaults taken from the
// workbench's one protocol (core/decoding.h), and the lines that say which
// decoding a command used and what was compared.

#include "app/cli/command.h"
#include "core/decoding.h"

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace sdw::cli {

// `what` names what is decoded ("the AR generations", "the trajectories").
std::vector<OptionSpec> decodingOptions(const std::string& what);
// Throws UsageError naming the option, the value and the accepted range.
Decoding decodingFrom(const Args& a);

// "decoding: sampled, T=1.0, top-k off, top-p 1.0 (the default protocol)",
// then, when `modelDir` is given, a note when its generation_config.json
// asks for another decoding (core/decoding.h).
void printDecoding(std::ostream& out, const Decoding& used, const std::filesystem::path& modelDir);
// "warning: ..." and "note: ..." lines (core/decoding_checks.h).
void printChecks(std::ostream& out, const std::vector<std::string>& warnings, const std::vector<std::string>& notes);

}  // namespace sdw::cli
