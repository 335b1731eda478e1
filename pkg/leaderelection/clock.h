#ifndef BERTH_PKG_LEADERELECTION_CLOCK_H_
#define BERTH_PKG_LEADERELECTION_CLOCK_H_

// The time source every leader-election judgment is made with: lease expiry (measured from the
// local time a record change was observed), the renew deadline and health. Waiting itself is
// done in real time, so a test drives expiry and deadlines with FakeClock while the loops keep
// polling at their (short) retry period. Mirrors pkg/queue/clock.h, which leaderelection may not
// depend on.

#include <chrono>
#include <mutex>

namespace berth::leaderelection {

// Monotonic time. Implementations are thread-safe.
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

// Time stands still until the test moves it; never goes backwards. Thread-safe.
class FakeClock : public Clock {
 public:
  // Far from the epoch so "timestamp minus duration" never underflows.
  FakeClock() : now_(TimePoint{} + std::chrono::hours(24 * 365)) {}

  TimePoint Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  void Step(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    now_ += d;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_;
};

}  // namespace berth::leaderelection

#endif  // BERTH_PKG_LEADERELECTION_CLOCK_H_
