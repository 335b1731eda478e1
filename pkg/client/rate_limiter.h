#ifndef BERTH_PKG_CLIENT_RATE_LIMITER_H_
#define BERTH_PKG_CLIENT_RATE_LIMITER_H_

#include <chrono>
#include <functional>
#include <mutex>

namespace berth::client {

// Token bucket like client-go's flowcontrol.NewTokenBucketRateLimiter: `burst` tokens to start,
// refilled at `qps` per second. Thread-safe. A qps <= 0 disables limiting.
class RateLimiter {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using Sleeper = std::function<void(std::chrono::nanoseconds)>;

  RateLimiter(double qps, int burst);
  // For tests: a fake clock and a sleeper that advances it.
  RateLimiter(double qps, int burst, Clock clock, Sleeper sleeper);

  // Blocks until a token is available, then takes it.
  void Accept();
  // Takes a token if one is available now.
  bool TryAccept();
  // How long a caller arriving now would wait (0 when a token is ready), without taking one.
  std::chrono::nanoseconds Delay();

 private:
  // Reserves the next token and returns how long until it is valid. Caller holds mu_.
  std::chrono::nanoseconds ReserveLocked(bool only_if_ready, bool* taken);
  void RefillLocked(std::chrono::steady_clock::time_point now);

  const double qps_;
  const double burst_;
  Clock clock_;
  Sleeper sleeper_;
  std::mutex mu_;
  double tokens_;  // May go negative: reservations made ahead of time.
  std::chrono::steady_clock::time_point last_;
};

}  // namespace berth::client

#endif  // BERTH_PKG_CLIENT_RATE_LIMITER_H_
