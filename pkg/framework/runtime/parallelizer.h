#ifndef BERTH_PKG_FRAMEWORK_RUNTIME_PARALLELIZER_H_
#define BERTH_PKG_FRAMEWORK_RUNTIME_PARALLELIZER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::framework::runtime {

// A fixed pool of worker threads plus the calling thread. Until() hands out pieces through an
// atomic counter, so threads that finish early take more work. One Until() runs at a time (the
// scheduling thread is the only caller); concurrent callers are serialized.
//
// Threads are OS threads, not goroutines: the pool has min(parallelism, hardware threads) - 1
// workers. parallelism() still reports the configured value, which plugins may use to size their
// own work.
//
// The caller starts every job alone and wakes the workers only once the job has run for
// kRecruitAfter with pieces left. Waking a sleeping thread, and the cache misses of a second core
// touching the same nodes, cost more than Filter or Score over a few hundred nodes; on 2 cores
// shared with the apiserver, fanning those out took CPU the apiserver needed and slowed binding.
// Jobs long enough to amortize a wake-up (large clusters, costly plugins) still spread over
// every core. Workers sleep between jobs rather than spin, for the same reason.
class WorkerPool : public Parallelizer {
 public:
  explicit WorkerPool(int parallelism);
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Until(int pieces, const std::function<void(int)>& work,
             const std::atomic<bool>* stop = nullptr) override;
  int parallelism() const override { return parallelism_; }

 private:
  void WorkerLoop();
  // Runs pieces of the current job until none are left or it is stopped. With a deadline, wakes
  // the workers when it passes (the caller's side); without one, only works (a worker's side).
  void Drain(const std::chrono::steady_clock::time_point* recruit_at);
  void Recruit();

  static constexpr std::chrono::microseconds kRecruitAfter{50};
  static constexpr int kPiecesPerClockRead = 8;

  const int parallelism_;
  std::mutex call_mu_;  // Serializes Until() callers.
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // All guarded by mu_, except next_piece_, which is the pieces' claim counter.
  bool shutting_down_ = false;
  uint64_t job_id_ = 0;
  int active_workers_ = 0;
  // The current job; valid while a job is published. Workers read these only after joining the
  // job under mu_, and the caller does not change them until every joined worker has left.
  const std::function<void(int)>* work_ = nullptr;
  const std::atomic<bool>* stop_ = nullptr;
  int pieces_ = 0;
  int chunk_ = 1;
  std::atomic<int> next_piece_{0};
  std::vector<std::thread> threads_;
};

}  // namespace berth::framework::runtime

#endif  // BERTH_PKG_FRAMEWORK_RUNTIME_PARALLELIZER_H_
