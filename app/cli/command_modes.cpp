#include "app/cli/command_modes.h"

#include <algorithm>

namespace sdw::cli {

std::string modeNames(std::span<const CommandMode> modes) {
  std::string names;
  for (const auto& m : modes) names += (names.empty() ? "" : ", ") + m.name;
  return names;
}

int runMode(std::span<const CommandMode> modes, const Args& a, const std::string& command, const std::string& what) {
  if (a.positional.empty()) throw UsageError("missing MODE (one of: " + modeNames(modes) + ")");
  const auto it = std::find_if(modes.begin(), modes.end(), [&](const CommandMode& m) { return m.name == a.positional[0]; });
  if (it == modes.end())
    throw UsageError("unknown " + what + " '" + a.positional[0] + "' (one of: " + modeNames(modes) + ")");
  Args own;
  own.positional.assign(a.positional.begin() + 1, a.positional.end());
  if (static_cast<int>(own.positional.size()) > it->maxPositional)
    throw UsageError("unexpected argument '" + own.positional[static_cast<std::size_t>(it->maxPositional)] +
                     "'; usage: sdw-cli " + it->usage);
  for (const auto& [name, value] : a.values) {
    const bool mine =
        std::any_of(it->options.begin(), it->options.end(), [&](const OptionSpec& o) { return o.name == name; });
    if (!mine)
      throw UsageError("--" + name + " is not an option of '" + command + " " + it->name + "'; usage: sdw-cli " +
                       it->usage);
    own.values[name] = value;
    if (a.flags.count(name)) own.flags.insert(name);
  }
  for (const auto& o : it->options)
    if (!o.defaultValue.empty() && !own.has(o.name)) own.values[o.name] = o.defaultValue;
  return it->run(own);
}

}  // namespace sdw::cli
