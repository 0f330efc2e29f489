#pragma once
// `sdw-cli bench MODE ...`: one command, several benchmark families. Each
// family registers a mode (its own options, positional arguments after the
// mode name, and handler) from its cmd_bench_*.cpp:
//
//   const RegisterBenchMode reg{BenchMode{"decode", "decode speed of the model runtime",
//                                         "bench decode [--context N] ...", {...options...}, 0, runDecode}};
//
// The `bench` command is created by the first mode that registers; it
// accepts the union of the modes' options, then checks that those given
// belong to the chosen mode and applies that mode's defaults.

#include "app/cli/command.h"

#include <functional>
#include <string>
#include <vector>

namespace sdw::cli {

struct BenchMode {
  std::string name;                    // first positional argument of `bench`
  std::string summary;                 // one line
  std::string usage;                   // "bench decode [--context N] [--json]"
  std::vector<OptionSpec> options;
  int maxPositional = 0;               // positional arguments after the mode name
  std::function<int(const Args&)> run; // sees its own options and positionals only
};

struct RegisterBenchMode {
  explicit RegisterBenchMode(BenchMode mode);
};

}  // namespace sdw::cli
