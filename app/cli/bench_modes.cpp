// sdw-cli bench: the mode dispatcher declared in bench_modes.h.

#include "app/cli/bench_modes.h"

#include <algorithm>

namespace sdw::cli {

namespace {

std::vector<BenchMode>& benchModes() {
  static std::vector<BenchMode> modes;
  return modes;
}

int runBench(const Args& a) {
  const auto& modes = benchModes();
  std::string names;
  for (const auto& m : modes) names += (names.empty() ? "" : ", ") + m.name;
  if (a.positional.empty()) throw UsageError("missing MODE (one of: " + names + ")");
  const auto it = std::find_if(modes.begin(), modes.end(), [&](const BenchMode& m) { return m.name == a.positional[0]; });
  if (it == modes.end()) throw UsageError("unknown bench mode '" + a.positional[0] + "' (one of: " + names + ")");
  Args own;
  own.positional.assign(a.positional.begin() + 1, a.positional.end());
  if (static_cast<int>(own.positional.size()) > it->maxPositional)
    throw UsageError("unexpected argument '" + own.positional[static_cast<std::size_t>(it->maxPositional)] +
                     "'; usage: sdw-cli " + it->usage);
  for (const auto& [name, value] : a.values) {
    const bool mine = std::any_of(it->options.begin(), it->options.end(), [&](const OptionSpec& o) { return o.name == name; });
    if (!mine) throw UsageError("--" + name + " is not an option of 'bench " + it->name + "'; usage: sdw-cli " + it->usage);
    own.values[name] = value;
  }
  for (const auto& o : it->options)
    if (!o.defaultValue.empty() && !own.has(o.name)) own.values[o.name] = o.defaultValue;
  return it->run(own);
}

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
