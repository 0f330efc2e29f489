// sdw-cli bench: the mode dispatcher declared in bench_modes.h.

#include "app/cli/bench_modes.h"

#include <algorithm>

namespace sdw::cli {

namespace {

std::vector<BenchMode>& benchModes() {
  static std::vector<BenchMode> modes;
  return modes;
}

int runBench(const Args& a) { return runMode(benchModes(), a, "bench", "bench mode"); }

}  // namespace

RegisterBenchMode::RegisterBenchMode(BenchMode mode) {
  auto& cmds = registry();
  auto cmd = std::find_if(cmds.begin(), cmds.end(), [](const Command& c) { return c.name == "bench"; });
  if (cmd == cmds.end()) {
    cmds.push_back(Command{"bench", "benchmarks (modes: see bench --help)", "bench MODE [OPTIONS]",
                           "Runs a benchmark family; MODE picks it. Options belong to one mode each.\n\nmodes:", {},
                           1, 1, runBench});
    cmd = cmds.end() - 1;
  }
  cmd->description += "\n  " + mode.usage + "\n      " + mode.summary;
  cmd->maxPositional = std::max(cmd->maxPositional, 1 + mode.maxPositional);
  std::string modes;
  for (const auto& m : benchModes()) modes += m.name + ", ";
  cmd->summary = "benchmarks: " + modes + mode.name;
  for (const auto& o : mode.options) {
    const bool known = std::any_of(cmd->options.begin(), cmd->options.end(), [&](const OptionSpec& s) { return s.name == o.name; });
    // Defaults are applied per mode by the dispatcher, never by the shared parser.
    if (!known) cmd->options.push_back({o.name, o.valueName, "[" + mode.name + "] " + o.help + (o.defaultValue.empty() ? "" : " (default: " + o.defaultValue + ")"), ""});
  }
  benchModes().push_back(std::move(mode));
}

}  // namespace sdw::cli
