#ifndef BERTH_PKG_FRAMEWORK_RUNTIME_WAITING_PODS_H_
#define BERTH_PKG_FRAMEWORK_RUNTIME_WAITING_PODS_H_

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

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

 private:
  const api::PodPtr pod_;
  const Clock::time_point started_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Clock::time_point> pending_;  // plugin -> deadline
  std::optional<Status> result_;
};

// Pods currently waiting on Permit, by uid. Thread-safe.
class WaitingPods {
 public:
  void Add(const std::string& uid, std::shared_ptr<WaitingPodImpl> pod);
  void Remove(const std::string& uid);
  std::shared_ptr<WaitingPodImpl> Get(const std::string& uid) const;
  void Iterate(const std::function<void(WaitingPod&)>& fn) const;
  size_t Size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<WaitingPodImpl>> pods_;
};

}  // namespace berth::framework::runtime

#endif  // BERTH_PKG_FRAMEWORK_RUNTIME_WAITING_PODS_H_
