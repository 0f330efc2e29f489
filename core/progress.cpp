#include "core/progress.h"

#include <algorithm>
#include <cmath>

namespace sdw {

ProgressMeter::ProgressMeter(double windowSeconds, Clock::time_point start)
    : window_(windowSeconds), start_(start), lastTime_(start) {}

ProgressStatus ProgressMeter::update(const Progress& p, Clock::time_point now) {
  using Seconds = std::chrono::duration<double>;
  ProgressStatus s;
  s.progress = p;
  s.elapsedSeconds = Seconds(now - start_).count();
  if (p.total > 0) s.fraction = std::clamp(p.done / p.total, 0.0, 1.0);

  const double dt = Seconds(now - lastTime_).count();
  const double dDone = p.done - lastDone_;
  if (dt > 1e-6 && dDone >= 0) {
    const double instant = dDone / dt;
    if (!haveRate_) {
      rate_ = instant;
      haveRate_ = true;
    } else {
      const double a = 1.0 - std::exp(-dt / window_);  // time-aware EMA weight
      rate_ += a * (instant - rate_);
    }
    lastTime_ = now;
    lastDone_ = p.done;
  } else if (dDone < 0) {  // restarted stage: start measuring afresh
    lastTime_ = now;
    lastDone_ = p.done;
    haveRate_ = false;
  }
  s.ratePerSecond = rate_;
  if (p.total > 0 && haveRate_ && rate_ > 0) s.etaSeconds = std::max(0.0, (p.total - p.done) / rate_);
  return s;
}

}  // namespace sdw
