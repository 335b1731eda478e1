#include "pkg/leaderelection/background_caller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>

namespace berth::leaderelection {
namespace {

using namespace std::chrono_literals;

// A gate a call blocks on until the test opens it.
class Gate {
 public:
  void Pass() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(BackgroundCallerTest, WaitReturnsOnceTheCallReturnedWithItsEffectsVisible) {
  BackgroundCaller caller;
  int result = 0;
  ASSERT_TRUE(caller.Start([&] { result = 42; }));
  EXPECT_TRUE(caller.Wait([] { return false; }, 10ms));
  EXPECT_EQ(result, 42);
  ASSERT_TRUE(caller.Start([&] { result = 43; }));
  EXPECT_TRUE(caller.Wait([] { return false; }, 10ms));
  EXPECT_EQ(result, 43);
}

TEST(BackgroundCallerTest, GivingUpLeavesTheCallRunningAndRefusesNewCallsUntilItReturns) {
  BackgroundCaller caller;
  Gate gate;
  std::atomic<bool> finished{false};
  ASSERT_TRUE(caller.Start([&] {
    gate.Pass();
    finished = true;
  }));
  int evaluations = 0;
  EXPECT_FALSE(caller.Wait([&] { return ++evaluations >= 3; }, 1ms));
  EXPECT_FALSE(finished);
  EXPECT_FALSE(caller.Start([] { ADD_FAILURE() << "ran while another call was running"; }));

  gate.Open();
  EXPECT_TRUE(caller.Wait([] { return false; }, 10ms));
  EXPECT_TRUE(finished);
  bool ran = false;
  ASSERT_TRUE(caller.Start([&] { ran = true; }));
  EXPECT_TRUE(caller.Wait([] { return false; }, 10ms));
  EXPECT_TRUE(ran);
}

TEST(BackgroundCallerTest, WakeMakesAWaitReconsiderAtOnce) {
  BackgroundCaller caller;
  Gate gate;
  ASSERT_TRUE(caller.Start([&] { gate.Pass(); }));
  std::atomic<bool> give_up{false};
  auto waited = std::async(std::launch::async, [&] {
    // A poll so long that only Wake() can end the wait within the test's patience.
    return caller.Wait([&] { return give_up.load(); }, 120s);
  });
  give_up = true;
  caller.Wake();
  ASSERT_EQ(waited.wait_for(30s), std::future_status::ready);
  EXPECT_FALSE(waited.get());
  gate.Open();
}

TEST(BackgroundCallerTest, ExceptionsEscapingACallDoNotStopTheWorker) {
  BackgroundCaller caller;
  ASSERT_TRUE(caller.Start([] { throw std::runtime_error("boom"); }));
  EXPECT_TRUE(caller.Wait([] { return false; }, 10ms));
  bool ran = false;
  ASSERT_TRUE(caller.Start([&] { ran = true; }));
  EXPECT_TRUE(caller.Wait([] { return false; }, 10ms));
  EXPECT_TRUE(ran);
}

TEST(BackgroundCallerTest, DestructorWaitsForTheRunningCall) {
  std::atomic<bool> finished{false};
  {
    BackgroundCaller caller;
    ASSERT_TRUE(caller.Start([&] {
      std::this_thread::sleep_for(50ms);
      finished = true;
    }));
  }
  EXPECT_TRUE(finished);
}

}  // namespace
}  // namespace berth::leaderelection
