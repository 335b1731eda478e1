#ifndef BERTH_PKG_QUEUE_CLOCK_H_
#define BERTH_PKG_QUEUE_CLOCK_H_

// The time source of the scheduling queue. Backoff and the unschedulable-pool timeout are
// computed from it, so tests drive them with FakeClock instead of sleeping.

#include <chrono>
#include <mutex>

namespace berth::queue {

// Monotonic time. Implementations are thread-safe: the flush threads, informer threads and the
// scheduling thread all read it.
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

}  // namespace berth::queue

#endif  // BERTH_PKG_QUEUE_CLOCK_H_
