#ifndef BERTH_PKG_UTIL_TASK_QUEUE_H_
#define BERTH_PKG_UTIL_TASK_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace berth::util {

// A bounded FIFO of tasks run by a fixed set of worker threads, so callers (the scheduling thread
// above all) never wait on the network. When full, Post() drops the task and returns false: the
// callers' tasks (events, status patches) are advisory and the next attempt produces them again.
// Thread-safe. The destructor runs what is queued, then joins.
class TaskQueue {
 public:
  TaskQueue(int workers, size_t capacity) : capacity_(capacity) {
    for (int i = 0; i < workers; i++) threads_.emplace_back([this] { Loop(); });
  }
  ~TaskQueue() { Shutdown(); }
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  bool Post(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      if (closed_ || tasks_.size() >= capacity_) return false;
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
    return true;
  }

  // Blocks until every task posted so far has run.
  void Drain() {
    std::unique_lock lock(mu_);
    idle_cv_.wait(lock, [this] { return tasks_.empty() && running_ == 0; });
  }

  void Shutdown() {
    {
      std::lock_guard lock(mu_);
      if (closed_ && threads_.empty()) return;
      closed_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  size_t Pending() const {
    std::lock_guard lock(mu_);
    return tasks_.size() + running_;
  }

 private:
  void Loop() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return closed_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
        running_++;
      }
      task();
      {
        std::lock_guard lock(mu_);
        running_--;
      }
      idle_cv_.notify_all();
    }
  }

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> tasks_;
  int running_ = 0;
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace berth::util

#endif  // BERTH_PKG_UTIL_TASK_QUEUE_H_
