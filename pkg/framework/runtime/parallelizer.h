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
// workers, and a job wakes only as many as it has pieces for (one per kMinPiecesPerThread), since
// a wake-up costs more than filtering a few nodes. parallelism() still reports the configured
// value, which plugins may use to size their own work.
//
// Scheduling cycles come back to back (Filter, then Score, then the next pod), so a worker spins
// for a few microseconds before sleeping and the caller spins before waiting for the workers:
// two futex round trips per job were a tenth of a busy scheduler's time. Every decision is
// re-checked under mu_, so the spinning only decides when to sleep, never what is correct.
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
  void Drain();

  static constexpr int kMinPiecesPerThread = 32;
  // How long a thread spins before blocking. Longer than the gap between the Filter and Score
  // phases and between back-to-back cycles; short enough that a scheduler waiting on the
  // apiserver between pods wastes little CPU.
  static constexpr std::chrono::microseconds kSpinFor{20};

  const int parallelism_;
  std::mutex call_mu_;  // Serializes Until() callers.
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // Written under mu_; also read without it while spinning.
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint64_t> job_id_{0};
  std::atomic<int> active_workers_{0};
  // The current job; valid while a job is published.
  const std::function<void(int)>* work_ = nullptr;
  const std::atomic<bool>* stop_ = nullptr;
  int pieces_ = 0;
  int chunk_ = 1;
  std::atomic<int> next_piece_{0};
  std::vector<std::thread> threads_;
};

}  // namespace berth::framework::runtime

#endif  // BERTH_PKG_FRAMEWORK_RUNTIME_PARALLELIZER_H_
