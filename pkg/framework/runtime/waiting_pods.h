#ifndef BERTH_PKG_FRAMEWORK_RUNTIME_WAITING_PODS_H_
#define BERTH_PKG_FRAMEWORK_RUNTIME_WAITING_PODS_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::framework::runtime {

// A pod parked by Permit plugins that returned Wait. Each waiting plugin has its own deadline; the
// pod is allowed when every one of them called Allow, and rejected by the first Reject or the
// first deadline that passes. Thread-safe.
class WaitingPodImpl : public WaitingPod {
 public:
  using Clock = std::chrono::steady_clock;

  WaitingPodImpl(api::PodPtr pod, std::map<std::string, Clock::time_point> deadlines);

  api::PodPtr GetPod() const override { return pod_; }
  std::vector<std::string> GetPendingPlugins() const override;
  void Allow(const std::string& plugin) override;
  void Reject(const std::string& plugin, const std::string& message) override;

  // Blocks until allowed (Success), rejected (Unschedulable naming the rejecting plugin) or a
  // plugin's deadline passes (Unschedulable "rejected due to timeout after waiting <d> at plugin
  // <p>").
  Status Wait();

  // Runs `then` once the pod is decided: at once, on the caller's thread, if it already is;
  // otherwise on the thread that decides it (an Allow or Reject caller, or the deadline thread of
  // WaitingPods). `then` must not block. At most one continuation is kept; a second replaces it.
  void OnDecided(std::function<void()> then);
  // Times the pod out if the deadline of a plugin it still waits on is not after `now`.
  void ExpireIfDue(Clock::time_point now);
  // Every waiting plugin's deadline, as given.
  std::vector<Clock::time_point> Deadlines() const;
  // From the Permit that parked the pod to its decision (to now while undecided).
  Clock::duration WaitedFor() const;

 private:
  friend class WaitingPods;

  // Decides the pod; returns the continuation to run once mu_ is released.
  std::function<void()> DecideLocked(Status result);
  // The timeout status when the earliest pending deadline is not after `now`.
  std::optional<Status> TimeoutLocked(Clock::time_point now) const;

  const api::PodPtr pod_;
  const Clock::time_point started_;
  const std::vector<Clock::time_point> deadlines_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Clock::time_point> pending_;  // plugin -> deadline
  std::optional<Status> result_;
  Clock::time_point decided_at_;
  std::function<void()> on_decided_;
};

// Pods currently waiting on Permit, by uid. A thread of its own, started with the first pod added,
// times pods out at their deadlines, so that nobody has to block in Wait() for a pod's decision to
// be made. Thread-safe.
class WaitingPods {
 public:
  WaitingPods() = default;
  ~WaitingPods();
  WaitingPods(const WaitingPods&) = delete;
  WaitingPods& operator=(const WaitingPods&) = delete;

  void Add(const std::string& uid, std::shared_ptr<WaitingPodImpl> pod);
  void Remove(const std::string& uid);
  std::shared_ptr<WaitingPodImpl> Get(const std::string& uid) const;
  void Iterate(const std::function<void(WaitingPod&)>& fn) const;
  // Allows every one of `uids` at `plugin`, or none of them: returns the uid of the first that is
  // not waiting or already decided, or empty once all were allowed. The pods' locks are taken
  // together (in address order), so no Reject or timeout lands between the check and the allow.
  std::string AllowAll(const std::vector<std::string>& uids, const std::string& plugin);
  size_t Size() const;

 private:
  void ExpireLoop();

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<WaitingPodImpl>> pods_;
  // Entries of pods decided early stay until their time comes; expiring them is then a no-op.
  std::multimap<WaitingPodImpl::Clock::time_point, std::weak_ptr<WaitingPodImpl>> deadlines_;
  std::condition_variable deadlines_changed_;
  bool stopping_ = false;
  std::thread expirer_;
};

}  // namespace berth::framework::runtime

#endif  // BERTH_PKG_FRAMEWORK_RUNTIME_WAITING_PODS_H_
