#include "app/cli/command.h"

#include <sstream>

namespace sdw::cli {

std::string Args::get(const std::string& name, const std::string& fallback) const {
  const auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

std::vector<std::string> Args::getList(const std::string& name) const {
  std::vector<std::string> out{get(name)};
  out.insert(out.end(), positional.begin(), positional.end());
  return out;
}

long long Args::getInt(const std::string& name, long long fallback) const {
  const auto it = values.find(name);
  if (it == values.end()) return fallback;
  try {
    std::size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    throw UsageError("--" + name + " expects an integer, got '" + it->second + "'");
  }
}

double Args::getDouble(const std::string& name, double fallback) const {
  const auto it = values.find(name);
  if (it == values.end()) return fallback;
  try {
    std::size_t used = 0;
    const double v = std::stod(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    throw UsageError("--" + name + " expects a number, got '" + it->second + "'");
  }
}

Args parseArgs(const Command& cmd, const std::vector<std::string>& argv) {
  Args a;
  for (const auto& o : cmd.options)
    if (!o.defaultValue.empty()) a.values[o.name] = o.defaultValue;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (s.size() > 2 && s.rfind("--", 0) == 0) {
      std::string name = s.substr(2), value;
      bool inlineValue = false;
      if (const auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        inlineValue = true;
      }
      const OptionSpec* spec = nullptr;
      for (const auto& o : cmd.options)
        if (o.name == name) spec = &o;
      if (!spec) throw UsageError("unknown option --" + name + " (see: sdw-cli " + cmd.name + " --help)");
      if (spec->valueName.empty()) {
        if (inlineValue) throw UsageError("--" + name + " takes no value");
        a.values[name] = "1";
        a.flags.insert(name);
      } else {
        if (!inlineValue) {
          if (i + 1 >= argv.size()) throw UsageError("--" + name + " needs a value " + spec->valueName);
          value = argv[++i];
        }
        a.values[name] = value;
      }
    } else {
      a.positional.push_back(s);
    }
  }
  const int n = static_cast<int>(a.positional.size());
  if (n < cmd.minPositional) throw UsageError("missing argument; usage: sdw-cli " + cmd.usage);
  if (n > cmd.maxPositional)
    throw UsageError("unexpected argument '" + a.positional[cmd.maxPositional] +
                     "'; usage: sdw-cli " + cmd.usage);
  return a;
}

std::string commandHelp(const Command& cmd) {
  std::ostringstream out;
  out << "usage: sdw-cli " << cmd.usage << "\n\n" << cmd.description << "\n";
  if (!cmd.options.empty()) {
    out << "\noptions:\n";
    for (const auto& o : cmd.options) {
      std::string left = "  --" + o.name + (o.valueName.empty() ? "" : " " + o.valueName);
      if (left.size() < 28) left.resize(28, ' ');
      else left += "\n" + std::string(28, ' ');
      out << left << o.help;
      if (!o.defaultValue.empty()) out << " (default: " << o.defaultValue << ")";
      out << "\n";
    }
  }
  out << "  --help                    show this help\n";
  return out.str();
}

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

}  // namespace sdw::cli
