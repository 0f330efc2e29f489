#pragma once
// `sdw-cli bench MODE ...`: one command, several benchmark families. Each
// family registers a mode (its own options, positional arguments after the
// mode name, and handler) from its cmd_bench_*.cpp:
//
//   const RegisterBenchMode reg{BenchMode{"decode", "decode speed of the model runtime",
//                                         "bench decode [--context N] ...", {...options...}, 0, runDecode}};
//
// The `bench` command is created by the first mode that registers; it
// accepts the union of the modes' options and dispatches with runMode()
// (command_modes.h).

#include "app/cli/command_modes.h"

namespace sdw::cli {

using BenchMode = CommandMode;

struct RegisterBenchMode {
  explicit RegisterBenchMode(BenchMode mode);
};

}  // namespace sdw::cli
