#include "pkg/framework/runtime/parallelizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace berth::framework::runtime {
namespace {

TEST(WorkerPool, RunsEveryPieceOnceAcrossThreadsAndStopsEarly) {
  WorkerPool pool(4);
  for (int round = 0; round < 50; round++) {
    std::vector<std::atomic<int>> hits(1000);
    pool.Until(1000, [&](int i) { hits[i]++; });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  pool.Until(
      100000,
      [&](int i) {
        if (i == 10) stop = true;
        done++;
      },
      &stop);
  EXPECT_LT(done.load(), 100000);
}

TEST(WorkerPool, LongJobIsSharedWithTheWorkers) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread: no workers";
  WorkerPool pool(2);
  // Each piece runs long enough that the job outlasts the pool's recruiting delay many times
  // over, so a worker joins however slowly it wakes.
  std::mutex mu;
  std::set<std::thread::id> threads;
  pool.Until(400, [&](int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 1u);
}

}  // namespace
}  // namespace berth::framework::runtime
