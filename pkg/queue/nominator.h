#ifndef BERTH_PKG_QUEUE_NOMINATOR_H_
#define BERTH_PKG_QUEUE_NOMINATOR_H_

// Pods nominated to nodes (by preemption, or carried in status.nominatedNodeName), so that
// Filter on those nodes accounts for them before they are bound. The scheduler's own view can
// run ahead of the pod objects (the nomination is recorded before the status patch is sent), so
// the nominator is keyed by pod uid and is the source of truth for nominations.

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"

namespace berth::queue {

// Invariants: a pod uid is nominated to at most one node; `by_node_` and `node_of_` describe
// the same set of (uid, node) pairs; no node maps to an empty list; the node name is never
// empty. Thread-safe (one internal mutex, never held while calling out except into the
// pod-lookup function, which must not call back into the nominator).
class Nominator : public framework::PodNominator {
 public:
  // Returns the current version of the pod named (namespace, name), or null when it does not
  // exist. Lets the nominator refuse pods that were deleted or bound meanwhile.
  using PodLookupFn =
      std::function<api::PodPtr(const std::string& namespace_, const std::string& name)>;

  Nominator() = default;
  explicit Nominator(PodLookupFn lookup) : lookup_(std::move(lookup)) {}

  // Replaces the lookup (set once at wiring time, before any nomination).
  void SetPodLookup(PodLookupFn lookup);

  // Records that the pod is nominated to `node`, replacing any earlier nomination.
  // node == nullopt: use the pod's status.nominated_node_name (upstream ModeNoop).
  // node == "": clear the nomination (upstream ModeOverride with an empty name).
  // Pods already bound (spec.node_name set), or which the lookup reports gone, bound, or
  // replaced by another uid, are not nominated.
  void AddNominatedPod(framework::PodInfoPtr pod_info,
                       std::optional<std::string> node = std::nullopt);

  // Swaps in the new version of the pod. A nomination made in memory is kept when neither
  // version carries status.nominated_node_name: the status patch may not have landed yet.
  void UpdateNominatedPod(const api::Pod& old_pod, framework::PodInfoPtr new_pod_info);

  void DeleteNominatedPodIfExists(const api::Pod& pod);

  std::vector<framework::PodInfoPtr> NominatedPodsForNode(const std::string& node) const override;
  bool HasNominatedPods() const override { return nominated_.load(std::memory_order_acquire) != 0; }

  // The node the pod (by uid) is nominated to, or "" when it is not nominated.
  std::string NominatedNodeFor(const std::string& pod_uid) const;

 private:
  void AddLocked(framework::PodInfoPtr pod_info, std::optional<std::string> node);
  void DeleteLocked(const std::string& uid);

  mutable std::mutex mu_;
  PodLookupFn lookup_;
  std::unordered_map<std::string, std::vector<framework::PodInfoPtr>> by_node_;
  std::unordered_map<std::string, std::string> node_of_;  // uid -> node
  // node_of_.size(), readable without mu_: Filter asks for every node of every cycle, and
  // nominations are rare, so the common answer ("none") must not take the lock.
  std::atomic<size_t> nominated_{0};
};

}  // namespace berth::queue

#endif  // BERTH_PKG_QUEUE_NOMINATOR_H_
