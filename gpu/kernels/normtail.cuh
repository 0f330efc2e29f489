#pragma once
// The residual add + RMSNorm that follows a projection writing the hidden vector,
// run by the projection's last block instead of a launch of its own (batch 1):
// h += y; x = rmsnorm(h) * w, bitwise launchAddRmsNorm's result. Plain types only. The
// decode engine uses it only with SDW_FUSE_NORMS=1: on the H200 the step is slower with it.

namespace sdw::kernels {

struct NormTail {
  void* h = nullptr;            // [n] the residual stream (n = the projection's rows), updated in place
  const void* w = nullptr;      // [n] the norm's weights
  void* x = nullptr;            // [n] the next projection's input
  unsigned* counter = nullptr;  // one per launch site, zero before first use (left zero); null: no tail
  float eps = 0.f;
  bool normalize = true;  // false: the tickets only (fences, atomics, the counter's reset), no norm; a
                          // profiling aid (SDW_FUSE_NORMS=ticket: the norms stay launches)
  bool on() const { return counter != nullptr; }
};

}  // namespace sdw::kernels
