#pragma once
// Progress reporting for long jobs, free of Qt and torch.
//
// Engine code takes a `ProgressFn` and calls it now and then; when the callback
// returns false the work stops as soon as it can and throws `Cancelled` (or
// returns a partial result, where the operation documents one).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace sdw {

struct Progress {
  Progress() = default;
  Progress(double done_, double total_, std::string unit_ = {}, std::string stage_ = {}, std::string phase_ = {})
      : done(done_), total(total_), unit(std::move(unit_)), stage(std::move(stage_)), phase(std::move(phase_)) {}

  double done = 0;     // units completed so far
  double total = 0;    // 0 when unknown
  std::string unit;    // "tokens", "layers", "bytes", ...
  std::string stage;   // short human text: "prefill", "layer 3/32", ...
  // The same for code: a fixed name per kind of work that callers may act
  // on ("prune", "recapture"); "" where the producer names none. Never
  // parse `stage`.
  std::string phase;
  // Where inside the current pass the work is, for views that draw one cell
  // per part (e.g. decoder layers): parts done so far of `parts`, with
  // `partLabel` naming what the pass does ("capture", "eigendecomposition").
  // parts == 0: not reported.
  int part = 0;
  int parts = 0;
  std::string partLabel;
};

// Returns false to ask the caller to stop.
using ProgressFn = std::function<bool(const Progress&)>;

// Thrown by engine code that honours a stop request.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
};

// Calls `fn` when set; throws Cancelled when it says stop.
inline void reportOrThrow(const ProgressFn& fn, const Progress& p) {
  if (fn && !fn(p)) throw Cancelled();
}

// What a progress view shows: fraction, rate and time left.
struct ProgressStatus {
  Progress progress;
  double fraction = -1;          // [0,1], or -1 when total is unknown
  double ratePerSecond = 0;      // units per second, smoothed
  std::optional<double> etaSeconds;
  double elapsedSeconds = 0;
};

// Turns a stream of Progress samples into rate and ETA. The rate is an
// exponential moving average over ~`windowSeconds` so one slow step does not
// make the ETA jump.
class ProgressMeter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressMeter(double windowSeconds = 3.0, Clock::time_point start = Clock::now());
  ProgressStatus update(const Progress& p, Clock::time_point now = Clock::now());

 private:
  double window_;
  Clock::time_point start_;
  Clock::time_point lastTime_;
  double lastDone_ = 0;
  double rate_ = 0;
  bool haveRate_ = false;
};

}  // namespace sdw
