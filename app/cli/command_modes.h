#pragma once
// Commands with modes (`sdw-cli bench MODE`, `sdw-cli analyze MODE`): one
// command, several families, each with its own options, positional arguments
// after the mode name, and handler. The command accepts the union of the
// modes' options; runMode() checks that those given belong to the chosen mode
// and applies that mode's defaults.

#include "app/cli/command.h"

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace sdw::cli {

struct CommandMode {
  std::string name;                     // first positional argument of the command
  std::string summary;                  // one line
  std::string usage;                    // "bench decode [--context N] [--json]"
  std::vector<OptionSpec> options;
  int maxPositional = 0;                // positional arguments after the mode name
  std::function<int(const Args&)> run;  // sees its own options and positionals only
};

// "decode, prune, calibrate"
std::string modeNames(std::span<const CommandMode> modes);

// Runs the mode that a.positional[0] names with its own arguments. `command`
// ("bench") and `what` ("bench mode", "analysis") name it in usage errors.
int runMode(std::span<const CommandMode> modes, const Args& a, const std::string& command, const std::string& what);

}  // namespace sdw::cli
