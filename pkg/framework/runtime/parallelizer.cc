#include "pkg/framework/runtime/parallelizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace berth::framework::runtime {

WorkerPool::WorkerPool(int parallelism) : parallelism_(std::max(1, parallelism)) {
  const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int threads = std::min(parallelism_, hardware);
  for (int i = 1; i < threads; i++) threads_.emplace_back([this] { WorkerLoop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::Drain(const std::chrono::steady_clock::time_point* recruit_at) {
  const auto& work = *work_;
  bool recruited = recruit_at == nullptr;
  for (;;) {
    const int begin = next_piece_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= pieces_) return;
    const int end = std::min(pieces_, begin + chunk_);
    for (int i = begin; i < end; i++) {
      if (stop_ && stop_->load(std::memory_order_relaxed)) return;
      work(i);
      // The clock is read every few pieces, not per chunk: a chunk of costly pieces could
      // otherwise run long past the deadline before anyone is woken to help.
      if (!recruited && (i - begin) % kPiecesPerClockRead == kPiecesPerClockRead - 1 &&
          std::chrono::steady_clock::now() >= *recruit_at) {
        recruited = true;
        if (next_piece_.load(std::memory_order_relaxed) < pieces_) Recruit();
      }
    }
  }
}

void WorkerPool::Recruit() {
  {
    std::lock_guard lock(mu_);
    job_id_++;
  }
  work_cv_.notify_all();
}

void WorkerPool::WorkerLoop() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return shutting_down_ || job_id_ != seen; });
      if (shutting_down_) return;
      seen = job_id_;
      // A worker that wakes after the job already finished finds work_ cleared and goes back
      // to sleep; one that gets here first holds the caller in Until() until it is done.
      if (work_ == nullptr) continue;
      active_workers_++;
    }
    Drain(nullptr);
    {
      std::lock_guard lock(mu_);
      active_workers_--;
    }
    done_cv_.notify_one();
  }
}

void WorkerPool::Until(int pieces, const std::function<void(int)>& work,
                       const std::atomic<bool>* stop) {
  if (pieces <= 0) return;
  std::lock_guard call_lock(call_mu_);
  if (threads_.empty() || pieces == 1) {
    for (int i = 0; i < pieces && !(stop && stop->load()); i++) work(i);
    return;
  }
  {
    std::lock_guard lock(mu_);
    work_ = &work;
    stop_ = stop;
    pieces_ = pieces;
    // Pieces are claimed in chunks (about sqrt(pieces), as upstream's parallelizer) so that the
    // shared counter is not bounced between cores once per node.
    chunk_ = std::max(1, std::min(static_cast<int>(std::sqrt(pieces)),
                                  pieces / (static_cast<int>(threads_.size()) + 1) + 1));
    next_piece_ = 0;
  }
  const auto recruit_at = std::chrono::steady_clock::now() + kRecruitAfter;
  Drain(&recruit_at);
  std::unique_lock lock(mu_);
  // Workers that join late find no pieces left and leave at once; waiting for
  // active_workers_ == 0 after the counter is exhausted guarantees `work` is not used later.
  done_cv_.wait(lock, [&] { return active_workers_ == 0; });
  work_ = nullptr;
}

}  // namespace berth::framework::runtime
