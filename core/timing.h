#pragma once
// Wall-clock intervals on the monotonic clock.

#include <chrono>

namespace sdw {

// Seconds elapsed since `t0` (steady clock).
inline double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace sdw
