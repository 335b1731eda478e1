#include "pkg/client/rate_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace berth::client {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// A manual clock; the limiter's sleeper advances it and records each sleep.
struct FakeTime {
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
  std::vector<nanoseconds> sleeps;

  RateLimiter Make(double qps, int burst) {
    return RateLimiter(
        qps, burst, [this] { return now; },
        [this](nanoseconds d) {
          sleeps.push_back(d);
          now += d;
        });
  }
};

TEST(RateLimiterTest, StartsFullAndHonoursBurst) {
  FakeTime time;
  RateLimiter limiter = time.Make(1, 5);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(limiter.TryAccept()) << i;
  EXPECT_FALSE(limiter.TryAccept());
}

TEST(RateLimiterTest, RefillRateIsExact) {
  FakeTime time;
  RateLimiter limiter = time.Make(10, 1);
  EXPECT_EQ(limiter.Delay(), nanoseconds(0));
  EXPECT_TRUE(limiter.TryAccept());
  EXPECT_EQ(limiter.Delay(), milliseconds(100));
  time.now += milliseconds(40);
  EXPECT_EQ(limiter.Delay(), milliseconds(60));
  EXPECT_FALSE(limiter.TryAccept());
  time.now += milliseconds(60);
  EXPECT_EQ(limiter.Delay(), nanoseconds(0));
  EXPECT_TRUE(limiter.TryAccept());
  EXPECT_FALSE(limiter.TryAccept());
}

TEST(RateLimiterTest, RefillNeverExceedsBurst) {
  FakeTime time;
  RateLimiter limiter = time.Make(100, 3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limiter.TryAccept());
  time.now += seconds(3600);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.TryAccept()) << i;
  EXPECT_FALSE(limiter.TryAccept());
}

TEST(RateLimiterTest, AcceptSleepsUntilItsTokenAndQueuesLaterCallers) {
  FakeTime time;
  RateLimiter limiter = time.Make(2, 2);
  limiter.Accept();
  limiter.Accept();
  EXPECT_TRUE(time.sleeps.empty());
  limiter.Accept();
  ASSERT_EQ(time.sleeps.size(), 1u);
  EXPECT_EQ(time.sleeps[0], milliseconds(500));
  limiter.Accept();
  ASSERT_EQ(time.sleeps.size(), 2u);
  EXPECT_EQ(time.sleeps[1], milliseconds(500));
  // Four tokens at qps 2 with burst 2: one second of waiting in total.
  EXPECT_EQ(time.now, std::chrono::steady_clock::time_point(std::chrono::hours(1)) + seconds(1));
}

TEST(RateLimiterTest, TryAcceptDoesNotReserve) {
  FakeTime time;
  RateLimiter limiter = time.Make(4, 1);
  ASSERT_TRUE(limiter.TryAccept());
  EXPECT_FALSE(limiter.TryAccept());
  EXPECT_FALSE(limiter.TryAccept());
  // Failed TryAccepts took nothing, so the next token is still exactly 1/qps away.
  EXPECT_EQ(limiter.Delay(), milliseconds(250));
}

TEST(RateLimiterTest, DelayReflectsReservationsMadeByAccept) {
  FakeTime time;
  // A sleeper that does not advance the clock: the caller is still "asleep" when Delay() runs.
  RateLimiter limiter(
      1, 1, [&time] { return time.now; }, [](nanoseconds) {});
  limiter.Accept();  // The initial token.
  limiter.Accept();  // Reserved one second ahead.
  EXPECT_EQ(limiter.Delay(), seconds(2));
  time.now += seconds(2);
  EXPECT_TRUE(limiter.TryAccept());
}

TEST(RateLimiterTest, NonPositiveQpsDisablesLimiting) {
  FakeTime time;
  RateLimiter limiter = time.Make(0, 1);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(limiter.TryAccept());
    limiter.Accept();
  }
  EXPECT_EQ(limiter.Delay(), nanoseconds(0));
  EXPECT_TRUE(time.sleeps.empty());
}

TEST(RateLimiterTest, ConcurrentTryAcceptHandsOutExactlyBurst) {
  RateLimiter limiter(0.001, 100);  // Real clock; refill is negligible during the test.
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        if (limiter.TryAccept()) accepted.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(accepted.load(), 100);
}

}  // namespace
}  // namespace berth::client
