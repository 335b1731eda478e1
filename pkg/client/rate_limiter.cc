#include "pkg/client/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

namespace berth::client {
namespace {

// Floating-point refill can leave the bucket a rounding error short of a whole token exactly when
// the computed delay has elapsed; a token that is this close counts as available.
constexpr double kTokenEpsilon = 1e-9;

std::chrono::nanoseconds SecondsToNanos(double seconds) {
  return std::chrono::nanoseconds(std::llround(seconds * 1e9));
}

}  // namespace

RateLimiter::RateLimiter(double qps, int burst)
    : RateLimiter(
          qps, burst, [] { return std::chrono::steady_clock::now(); },
          [](std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); }) {}

RateLimiter::RateLimiter(double qps, int burst, Clock clock, Sleeper sleeper)
    : qps_(qps),
      burst_(std::max(1, burst)),
      clock_(std::move(clock)),
      sleeper_(std::move(sleeper)),
      tokens_(burst_),
      last_(clock_()) {}

void RateLimiter::RefillLocked(std::chrono::steady_clock::time_point now) {
  if (now <= last_) return;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
  last_ = now;
}

std::chrono::nanoseconds RateLimiter::ReserveLocked(bool only_if_ready, bool* taken) {
  RefillLocked(clock_());
  if (tokens_ >= 1 - kTokenEpsilon) {
    tokens_ -= 1;
    *taken = true;
    return std::chrono::nanoseconds(0);
  }
  const std::chrono::nanoseconds wait = SecondsToNanos((1 - tokens_) / qps_);
  if (only_if_ready) {
    *taken = false;
    return wait;
  }
  // The token is ours now; the bucket goes negative so later callers queue up behind us.
  tokens_ -= 1;
  *taken = true;
  return wait;
}

void RateLimiter::Accept() {
  if (qps_ <= 0) return;
  std::chrono::nanoseconds wait;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool taken = false;
    wait = ReserveLocked(/*only_if_ready=*/false, &taken);
  }
  if (wait > std::chrono::nanoseconds(0)) sleeper_(wait);
}

bool RateLimiter::TryAccept() {
  if (qps_ <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  bool taken = false;
  ReserveLocked(/*only_if_ready=*/true, &taken);
  return taken;
}

std::chrono::nanoseconds RateLimiter::Delay() {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(clock_());
  if (tokens_ >= 1 - kTokenEpsilon) return std::chrono::nanoseconds(0);
  return SecondsToNanos((1 - tokens_) / qps_);
}

}  // namespace berth::client
