// libFuzzer entry point for long campaigns (clang only):
//   cmake -DSDW_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ ... && build/tests/fuzz_<target> tests/fuzz/corpus/<target>
// One binary per target; SDW_FUZZ_TARGET names it at compile time.

#include "tests/fuzz/fuzz_targets.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const sdw::fuzz::Target* t = sdw::fuzz::findTarget(SDW_FUZZ_TARGET);
  if (!t) std::abort();
  (void)t->run(data, size);  // refusals are expected; a crash or sanitizer report is the finding
  return 0;
}
