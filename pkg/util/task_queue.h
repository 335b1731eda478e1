#ifndef BERTH_PKG_UTIL_TASK_QUEUE_H_
#define BERTH_PKG_UTIL_TASK_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace berth::util {

// A bounded FIFO of tasks run by up to `workers` threads, so callers (the scheduling thread above
// all) never wait on the network. When full, Post() drops the task and returns false: the callers'
// tasks (events, status patches) are advisory and the next attempt produces them again.
// One worker starts with the queue; the others on demand, when a task finds none idle, and then
// stay: a queue sized for bursts (32 binding cycles in flight, 64 PreBind waits) costs no
// threads, stacks or malloc arenas until a burst comes. Because the first worker exists from the
// start, a posted task always runs: a worker that fails to start later (the process is out of
// threads) only means less concurrency. Thread-safe. The destructor runs what is queued, then
// joins.
class TaskQueue {
 public:
  TaskQueue(int workers, size_t capacity)
      : max_workers_(static_cast<size_t>(workers < 1 ? 1 : workers)), capacity_(capacity) {
    // Idle from here on, so a Post() before the thread runs does not start a second one.
    idle_ = 1;
    threads_.emplace_back([this] { Loop(/*counted_idle=*/true); });
  }
  ~TaskQueue() { Shutdown(); }
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  bool Post(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      if (closed_ || tasks_.size() >= capacity_) return false;
      tasks_.push_back(std::move(task));
      // Every queued task needs an idle worker of its own; start one when there are too few.
      if (tasks_.size() > idle_ && threads_.size() < max_workers_) {
        try {
          threads_.emplace_back([this] { Loop(/*counted_idle=*/false); });
        } catch (const std::system_error&) {
          // The workers already started take the task.
        }
      }
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
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      closed_ = true;  // From here on Post() starts no thread, so `threads` is every one.
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
  }

  size_t Pending() const {
    std::lock_guard lock(mu_);
    return tasks_.size() + running_;
  }

  // Worker threads started so far (at most `workers`).
  size_t Workers() const {
    std::lock_guard lock(mu_);
    return threads_.size();
  }

 private:
  // `counted_idle`: the constructor already counted this worker idle.
  void Loop(bool counted_idle) {
    std::unique_lock lock(mu_);
    while (true) {
      // A worker counts as idle from the moment its task ends (same critical section), so a
      // Post() right after Drain() finds it instead of starting another.
      if (!counted_idle) idle_++;
      counted_idle = false;
      cv_.wait(lock, [this] { return closed_ || !tasks_.empty(); });
      idle_--;
      if (tasks_.empty()) return;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      running_++;
      lock.unlock();
      task();
      task = nullptr;  // What the task captured goes before the queue counts it done.
      lock.lock();
      running_--;
      idle_cv_.notify_all();
    }
  }

  const size_t max_workers_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> tasks_;
  int running_ = 0;
  size_t idle_ = 0;  // Workers waiting for a task.
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace berth::util

#endif  // BERTH_PKG_UTIL_TASK_QUEUE_H_
