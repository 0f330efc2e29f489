#pragma once
// A small, dependency-free command-line layer for sdw-cli: each subcommand
// declares its options once; parsing, --help and usage errors come from that.

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace sdw::cli {

// Bad command line: exit code 2, one-line reason.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string name;        // without the leading dashes
  std::string valueName;   // empty for a flag
  std::string help;
  std::string defaultValue;
};

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;
  std::set<std::string> flags;  // the options given that take no value (their value is "1")
  bool has(const std::string& name) const { return values.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = {}) const;
  long long getInt(const std::string& name, long long fallback) const;
  double getDouble(const std::string& name, double fallback) const;
  // An option that takes several values ("--runs A B C"): its value, then
  // the positional arguments that follow the options.
  std::vector<std::string> getList(const std::string& name) const;
};

struct Command {
  std::string name;
  std::string summary;                 // one line for the command list
  std::string usage;                   // e.g. "info RUNFILE [--json]"
  std::string description;             // a paragraph for --help
  std::vector<OptionSpec> options;
  int minPositional = 0;
  int maxPositional = 0;
  std::function<int(const Args&)> run;  // returns the exit code
};

// Parses argv for `cmd` (argv excludes the command name). Throws UsageError.
Args parseArgs(const Command& cmd, const std::vector<std::string>& argv);
std::string commandHelp(const Command& cmd);

// The registry; each cmd_*.cpp adds its commands here.
std::vector<Command>& registry();
struct Register {
  explicit Register(Command c) { registry().push_back(std::move(c)); }
};

}  // namespace sdw::cli
