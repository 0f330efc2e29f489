// sdw-cli: the headless face of the workbench. The same jobs the GUI runs,
// for servers and scripts. Exit codes: 0 ok, 1 failure, 2 bad command line.

#include "app/cli/command.h"
#include "core/version.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>

namespace {

void printOverview() {
  std::cout << "usage: sdw-cli COMMAND [ARGS...] [--json]\n\n"
            << sdw::kToolName << " " << sdw::kToolVersion
            << ", headless command line.\n\ncommands:\n";
  auto cmds = sdw::cli::registry();
  std::sort(cmds.begin(), cmds.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& c : cmds) {
    std::string name = "  " + c.name;
    name.resize(std::max<std::size_t>(name.size() + 1, 14), ' ');
    std::cout << name << c.summary << "\n";
  }
  std::cout << "\nRun 'sdw-cli COMMAND --help' for a command's options.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.size() >= 2 && args[0] == "help") args = {args[1], "--help"};
    else {
      printOverview();
      return args.empty() ? 2 : 0;
    }
  }
  if (args[0] == "--version") {
    std::cout << "sdw-cli " << sdw::kToolVersion << "\n";
    return 0;
  }
  const auto& cmds = sdw::cli::registry();
  const auto it = std::find_if(cmds.begin(), cmds.end(), [&](const auto& c) { return c.name == args[0]; });
  if (it == cmds.end()) {
    std::cerr << "sdw-cli: error: unknown command '" << args[0] << "' (see: sdw-cli --help)\n";
    return 2;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
      std::find(rest.begin(), rest.end(), "-h") != rest.end()) {
    std::cout << sdw::cli::commandHelp(*it);
    return 0;
  }
  try {
    const sdw::cli::Args parsed = sdw::cli::parseArgs(*it, rest);
    return it->run(parsed);
  } catch (const sdw::cli::UsageError& e) {
    std::cerr << "sdw-cli " << it->name << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "sdw-cli " << it->name << ": error: " << e.what() << "\n";
    return 1;
  }
}
