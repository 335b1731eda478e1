#include "pkg/framework/runtime/waiting_pods.h"

#include <algorithm>
#include <utility>

namespace berth::framework::runtime {
namespace {

std::string FormatDuration(std::chrono::steady_clock::duration d) {
  // Rounded: the deadline is taken a moment before the wait starts, and "999ms" for a 1s timeout
  // would only confuse.
  auto ms = std::chrono::round<std::chrono::milliseconds>(d).count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::vector<WaitingPodImpl::Clock::time_point> DeadlinesOf(
    const std::map<std::string, WaitingPodImpl::Clock::time_point>& pending) {
  std::vector<WaitingPodImpl::Clock::time_point> out;
  out.reserve(pending.size());
  for (const auto& [plugin, deadline] : pending) out.push_back(deadline);
  return out;
}

}  // namespace

WaitingPodImpl::WaitingPodImpl(api::PodPtr pod, std::map<std::string, Clock::time_point> deadlines)
    : pod_(std::move(pod)),
      started_(Clock::now()),
      deadlines_(DeadlinesOf(deadlines)),
      pending_(std::move(deadlines)) {}

std::vector<std::string> WaitingPodImpl::GetPendingPlugins() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [plugin, deadline] : pending_) out.push_back(plugin);
  return out;
}

std::function<void()> WaitingPodImpl::DecideLocked(Status result) {
  result_ = std::move(result);
  decided_at_ = Clock::now();
  cv_.notify_all();
  return std::exchange(on_decided_, nullptr);
}

std::optional<Status> WaitingPodImpl::TimeoutLocked(Clock::time_point now) const {
  auto earliest = std::min_element(pending_.begin(), pending_.end(),
                                   [](auto& a, auto& b) { return a.second < b.second; });
  if (earliest == pending_.end() || now < earliest->second) return std::nullopt;
  Status timed_out = Status::Unschedulable("rejected due to timeout after waiting " +
                                           FormatDuration(earliest->second - started_) +
                                           " at plugin " + earliest->first);
  timed_out.WithPlugin(earliest->first);
  return timed_out;
}

void WaitingPodImpl::Allow(const std::string& plugin) {
  std::function<void()> then;
  {
    std::lock_guard lock(mu_);
    if (result_) return;
    pending_.erase(plugin);
    if (pending_.empty()) then = DecideLocked(Status::Success());
  }
  if (then) then();
}

void WaitingPodImpl::Reject(const std::string& plugin, const std::string& message) {
  std::function<void()> then;
  {
    std::lock_guard lock(mu_);
    if (result_) return;
    Status rejected = Status::Unschedulable(message);
    rejected.WithPlugin(plugin);
    then = DecideLocked(std::move(rejected));
  }
  if (then) then();
}

void WaitingPodImpl::ExpireIfDue(Clock::time_point now) {
  std::function<void()> then;
  {
    std::lock_guard lock(mu_);
    if (result_) return;
    auto timed_out = TimeoutLocked(now);
    if (!timed_out) return;
    then = DecideLocked(std::move(*timed_out));
  }
  if (then) then();
}

void WaitingPodImpl::OnDecided(std::function<void()> then) {
  {
    std::lock_guard lock(mu_);
    if (!result_) {
      on_decided_ = std::move(then);
      return;
    }
  }
  then();
}

std::vector<WaitingPodImpl::Clock::time_point> WaitingPodImpl::Deadlines() const {
  return deadlines_;
}

WaitingPodImpl::Clock::duration WaitingPodImpl::WaitedFor() const {
  std::lock_guard lock(mu_);
  return (result_ ? decided_at_ : Clock::now()) - started_;
}

Status WaitingPodImpl::Wait() {
  std::function<void()> then;
  std::unique_lock lock(mu_);
  while (!result_) {
    if (pending_.empty()) {
      then = DecideLocked(Status::Success());
      break;
    }
    if (auto timed_out = TimeoutLocked(Clock::now())) {
      then = DecideLocked(std::move(*timed_out));
      break;
    }
    const auto earliest = std::min_element(pending_.begin(), pending_.end(), [](auto& a, auto& b) {
                            return a.second < b.second;
                          })->second;
    cv_.wait_until(lock, earliest);
  }
  Status out = *result_;
  lock.unlock();
  if (then) then();
  return out;
}

WaitingPods::~WaitingPods() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  deadlines_changed_.notify_all();
  if (expirer_.joinable()) expirer_.join();
}

void WaitingPods::ExpireLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (deadlines_.empty()) {
      deadlines_changed_.wait(lock);
      continue;
    }
    const auto now = WaitingPodImpl::Clock::now();
    if (now < deadlines_.begin()->first) {
      deadlines_changed_.wait_until(lock, deadlines_.begin()->first);
      continue;
    }
    std::vector<std::shared_ptr<WaitingPodImpl>> due;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      if (auto pod = deadlines_.begin()->second.lock()) due.push_back(std::move(pod));
      deadlines_.erase(deadlines_.begin());
    }
    // Expired without the lock: a pod's continuation may add or remove waiting pods.
    lock.unlock();
    for (const auto& pod : due) pod->ExpireIfDue(now);
    lock.lock();
  }
}

void WaitingPods::Add(const std::string& uid, std::shared_ptr<WaitingPodImpl> pod) {
  {
    std::lock_guard lock(mu_);
    for (const auto deadline : pod->Deadlines()) deadlines_.emplace(deadline, pod);
    pods_[uid] = std::move(pod);
    if (!expirer_.joinable()) expirer_ = std::thread([this] { ExpireLoop(); });
  }
  deadlines_changed_.notify_all();
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

std::string WaitingPods::AllowAll(const std::vector<std::string>& uids, const std::string& plugin) {
  std::vector<std::shared_ptr<WaitingPodImpl>> pods;
  {
    std::lock_guard lock(mu_);
    for (const std::string& uid : uids) {
      auto it = pods_.find(uid);
      if (it == pods_.end()) return uid;
      pods.push_back(it->second);
    }
  }
  std::vector<size_t> order(pods.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return pods[a].get() < pods[b].get(); });
  std::vector<std::function<void()>> continuations;
  {
    std::vector<std::unique_lock<std::mutex>> locks;
    locks.reserve(pods.size());
    for (size_t i : order) {
      // The same pod twice would lock its mutex twice.
      if (!locks.empty() && locks.back().mutex() == &pods[i]->mu_) continue;
      locks.emplace_back(pods[i]->mu_);
    }
    for (size_t i = 0; i < pods.size(); i++) {
      if (pods[i]->result_) return uids[i];
    }
    for (const auto& pod : pods) {
      if (pod->result_) continue;  // Listed twice.
      pod->pending_.erase(plugin);
      if (pod->pending_.empty()) continuations.push_back(pod->DecideLocked(Status::Success()));
    }
  }
  for (auto& then : continuations) {
    if (then) then();
  }
  return "";
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
