#include "pkg/util/task_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <vector>

namespace berth::util {
namespace {

TEST(TaskQueueTest, StartsOneWorkerUntilTasksWaitAtOnce) {
  TaskQueue queue(64, 100);
  EXPECT_EQ(queue.Workers(), 1u);
}

TEST(TaskQueueTest, ReusesAnIdleWorkerForTasksOneAfterAnother) {
  TaskQueue queue(64, 100);
  for (int i = 0; i < 20; i++) {
    std::promise<void> done;
    ASSERT_TRUE(queue.Post([&done] { done.set_value(); }));
    done.get_future().wait();
    queue.Drain();
  }
  EXPECT_EQ(queue.Workers(), 1u);
}

TEST(TaskQueueTest, StartsAWorkerPerConcurrentTaskUpToTheLimit) {
  TaskQueue queue(4, 100);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; i++) {
    ASSERT_TRUE(queue.Post([&, released] {
      started++;
      released.wait();
      ran++;
    }));
  }
  // Four tasks block their four workers; the other six wait for them.
  while (started.load() < 4) std::this_thread::yield();
  EXPECT_EQ(queue.Workers(), 4u);
  EXPECT_EQ(queue.Pending(), 10u);
  release.set_value();
  queue.Drain();
  EXPECT_EQ(ran.load(), 10);
  EXPECT_EQ(queue.Workers(), 4u);
}

TEST(TaskQueueTest, ShutdownRunsWhatIsQueuedAndRefusesMore) {
  std::atomic<int> ran{0};
  TaskQueue queue(2, 100);
  for (int i = 0; i < 50; i++) ASSERT_TRUE(queue.Post([&ran] { ran++; }));
  queue.Shutdown();
  EXPECT_EQ(ran.load(), 50);
  EXPECT_FALSE(queue.Post([&ran] { ran++; }));
  EXPECT_EQ(ran.load(), 50);
}

TEST(TaskQueueTest, DropsTasksPastItsCapacity) {
  TaskQueue queue(1, 2);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> first_started;
  ASSERT_TRUE(queue.Post([&, released] {
    first_started.set_value();
    released.wait();
  }));
  first_started.get_future().wait();
  EXPECT_TRUE(queue.Post([] {}));
  EXPECT_TRUE(queue.Post([] {}));
  EXPECT_FALSE(queue.Post([] {}));
  release.set_value();
  queue.Drain();
}

}  // namespace
}  // namespace berth::util
