#include "pkg/framework/runtime/waiting_pods.h"

#include <algorithm>

namespace berth::framework::runtime {
namespace {

std::string FormatDuration(std::chrono::steady_clock::duration d) {
  // Rounded: the deadline is taken a moment before the wait starts, and "999ms" for a 1s timeout
  // would only confuse.
  auto ms = std::chrono::round<std::chrono::milliseconds>(d).count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace

WaitingPodImpl::WaitingPodImpl(api::PodPtr pod, std::map<std::string, Clock::time_point> deadlines)
    : pod_(std::move(pod)), started_(Clock::now()), pending_(std::move(deadlines)) {}

std::vector<std::string> WaitingPodImpl::GetPendingPlugins() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [plugin, deadline] : pending_) out.push_back(plugin);
  return out;
}

void WaitingPodImpl::Allow(const std::string& plugin) {
  std::lock_guard lock(mu_);
  if (result_) return;
  pending_.erase(plugin);
  if (pending_.empty()) {
    result_ = Status::Success();
    cv_.notify_all();
  }
}

void WaitingPodImpl::Reject(const std::string& plugin, const std::string& message) {
  std::lock_guard lock(mu_);
  if (result_) return;
  Status rejected = Status::Unschedulable(message);
  rejected.WithPlugin(plugin);
  result_ = std::move(rejected);
  cv_.notify_all();
}

Status WaitingPodImpl::Wait() {
  std::unique_lock lock(mu_);
  while (!result_) {
    auto earliest = std::min_element(pending_.begin(), pending_.end(),
                                     [](auto& a, auto& b) { return a.second < b.second; });
    if (earliest == pending_.end()) {
      result_ = Status::Success();
      break;
    }
    // Copied: Allow() may erase the entry while we wait.
    const auto deadline = earliest->second;
    const std::string plugin = earliest->first;
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !result_ &&
        Clock::now() >= deadline) {
      Status timed_out =
          Status::Unschedulable("rejected due to timeout after waiting " +
                                FormatDuration(deadline - started_) + " at plugin " + plugin);
      timed_out.WithPlugin(plugin);
      result_ = std::move(timed_out);
    }
  }
  return *result_;
}

void WaitingPods::Add(const std::string& uid, std::shared_ptr<WaitingPodImpl> pod) {
  std::lock_guard lock(mu_);
  pods_[uid] = std::move(pod);
}

void WaitingPods::Remove(const std::string& uid) {
  std::lock_guard lock(mu_);
  pods_.erase(uid);
}

std::shared_ptr<WaitingPodImpl> WaitingPods::Get(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  return it == pods_.end() ? nullptr : it->second;
}

void WaitingPods::Iterate(const std::function<void(WaitingPod&)>& fn) const {
  std::vector<std::shared_ptr<WaitingPodImpl>> pods;
  {
    std::lock_guard lock(mu_);
    for (const auto& [uid, pod] : pods_) pods.push_back(pod);
  }
  // Called without the lock so fn may Allow/Reject (which may remove entries).
  for (const auto& pod : pods) fn(*pod);
}

size_t WaitingPods::Size() const {
  std::lock_guard lock(mu_);
  return pods_.size();
}

}  // namespace berth::framework::runtime
