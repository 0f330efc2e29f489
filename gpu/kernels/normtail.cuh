#pragma once
// The residual add + RMSNorm that follows a projection writing the hidden vector,
// run by the projection's last block instead of a launch of its own (batch 1):
// h += y; x = rmsnorm(h) * w, bitwise launchAddRmsNorm's result. Plain types only. The
// decode engine uses it only with SDW_FUSE_NORMS=1: on the H200 the step is slower with it.

#include <cstdint>

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

// The same residual add + RMSNorm folded into the two batch-1 dense GEMVs around it instead
// (SDW_FOLD_NORMS=1; not bitwise the launch: the sum of squares is added in another order).
// The projection writing the hidden vector (`out`) adds its rows of y into h in place and
// stores one partial sum of squares of the new h per row block; the next projection (`in`)
// reads x' = T(w * h) in place of x (formed once per block in shared memory) and multiplies
// its sums by r = 1 / sqrt(sum / n + eps), the producer's partials added in a fixed order
// after its main loop: no launch, no x in memory, r off the path to the first product.
struct NormFold {
  void* h = nullptr;          // [n] the residual stream
  float* partials = nullptr;  // out: one per row block of the producer (written); in: read
  int count = 0;              // in: the producer's row blocks
  const void* w = nullptr;    // in: [n] the norm's weights
  float eps = 0.f;            // in
  std::int64_t n = 0;         // in: the hidden size
  bool out = false, in = false;
  bool on() const { return out || in; }
};

}  // namespace sdw::kernels
