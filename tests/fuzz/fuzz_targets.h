#pragma once
// One fuzz target per parser where input enters the workbench. Each takes the
// bytes of one input file, feeds them to the parser as the program would (a
// file in a folder where the parser reads paths) and returns; a refusal (any
// std::exception) is the expected outcome for most inputs. What must never
// happen: a crash, undefined behaviour, a hang or unbounded memory. Used by
// the libFuzzer entry point (fuzz_main.cpp, clang -fsanitize=fuzzer) for long
// campaigns and by the deterministic replay in CI (fuzz_replay.cpp, ASan +
// UBSan).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sdw::fuzz {

struct Target {
  const char* name;  // also the corpus folder: tests/fuzz/corpus/<name>/
  // True when the parser accepted the input, false when it refused it (a
  // std::exception); anything else (a crash, a sanitizer report) ends the process.
  bool (*run)(const std::uint8_t* data, std::size_t size);
};

const std::vector<Target>& targets();
const Target* findTarget(const std::string& name);

}  // namespace sdw::fuzz
