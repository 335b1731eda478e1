#include "pkg/leaderelection/background_caller.h"

#include <utility>

namespace berth::leaderelection {

BackgroundCaller::BackgroundCaller() : worker_([this] { Loop(); }) {}

BackgroundCaller::~BackgroundCaller() {
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

bool BackgroundCaller::Start(std::function<void()> call) {
  {
    std::lock_guard lock(mu_);
    if (busy_ || shutdown_) return false;
    pending_ = std::move(call);
    busy_ = true;
  }
  cv_.notify_all();
  return true;
}

bool BackgroundCaller::Wait(const std::function<bool()>& give_up, std::chrono::milliseconds poll) {
  std::unique_lock lock(mu_);
  while (busy_) {
    const uint64_t wakes = wakes_;
    lock.unlock();
    const bool stop = give_up();
    lock.lock();
    if (stop) return !busy_;
    cv_.wait_for(lock, poll, [&] { return !busy_ || wakes_ != wakes; });
  }
  return true;
}

void BackgroundCaller::Wake() {
  {
    std::lock_guard lock(mu_);
    ++wakes_;
  }
  cv_.notify_all();
}

void BackgroundCaller::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return shutdown_ || pending_; });
    if (!pending_) return;
    std::function<void()> call = std::move(pending_);
    pending_ = nullptr;
    lock.unlock();
    try {
      call();
    } catch (
        ...) {  // NOLINT(bugprone-empty-catch): Start's contract: calls report their own errors.
    }
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace berth::leaderelection
