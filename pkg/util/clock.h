#ifndef BERTH_PKG_UTIL_CLOCK_H_
#define BERTH_PKG_UTIL_CLOCK_H_

// The monotonic time source of the scheduling queue (backoff, the unschedulable-pool timeout)
// and of leader election (lease expiry measured from when a change was observed, the renew
// deadline), so tests drive those with FakeClock instead of sleeping.

#include <chrono>
#include <mutex>

namespace berth::util {

// Monotonic time. Implementations are thread-safe: queue flush threads, informer threads, the
// scheduling thread and the elector's loop all read it.
class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

class RealClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
};

// Time stands still until the test moves it. Never goes backwards unless SetTime is told to.
// Thread-safe.
class FakeClock : public Clock {
 public:
  // Starts at an arbitrary fixed point far from the epoch so that "timestamp minus duration"
  // arithmetic in the code under test never underflows.
  FakeClock() : now_(TimePoint{} + std::chrono::hours(24 * 365)) {}
  explicit FakeClock(TimePoint start) : now_(start) {}

  TimePoint Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  void Step(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    now_ += d;
  }
  void SetTime(TimePoint t) {
    std::lock_guard lock(mu_);
    now_ = t;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_;
};

}  // namespace berth::util

#endif  // BERTH_PKG_UTIL_CLOCK_H_
