#ifndef BERTH_PKG_CACHE_CACHE_H_
#define BERTH_PKG_CACHE_CACHE_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/cache/node_tree.h"
#include "pkg/cache/snapshot.h"
#include "pkg/framework/interface.h"
#include "pkg/framework/types.h"

namespace berth::cache {

// The time source of assumed-pod expiry, so that tests can move time by hand. Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point Now() const = 0;
};

// The process-wide steady clock.
std::shared_ptr<Clock> RealClock();

// The scheduler's view of the cluster: every node and every pod assigned to one, including pods
// the scheduler has assumed onto a node before the apiserver confirmed the binding (so the next
// cycle already counts their resources). Informer threads write to it, the scheduling thread
// assumes pods and takes snapshots, binding threads finish or forget assumed pods.
//
// Invariants:
//  - A pod is in pod_states_ iff its PodInfo is in the NodeInfo keyed by its node name; a pod is
//    assumed iff its uid is in assumed_pods_ (a subset of pod_states_).
//  - A NodeInfo exists while it has a node or pods; one without a node (pods arrived before their
//    node, or the node was deleted before its pods) is never in a snapshot.
//  - node_list_ is ordered by NodeInfo generation, newest first: whatever bumps a NodeInfo's
//    generation (a process-wide counter) also moves it to the front, and nothing else moves it,
//    so UpdateSnapshot stops at the first NodeInfo no newer than the snapshot.
//  - node_tree_ holds exactly the NodeInfos that have a node; image_node_counts_ counts, per
//    image name, the nodes that report it, and image_epoch_ moves whenever a count changes.
//
// Thread-safe: one mutex guards all cache state. Run and Stop belong to the cache's owner and
// must not race with each other or with destruction.
class Cache {
 public:
  // ttl 0: an assumed pod never expires; the informer's add of the bound pod or ForgetPod always
  // resolves it (upstream's default). Otherwise an assumed pod is dropped `ttl` after
  // FinishBinding if the informer has not confirmed it by then.
  explicit Cache(std::chrono::milliseconds assumed_pod_ttl = std::chrono::milliseconds(0),
                 std::shared_ptr<Clock> clock = RealClock());
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  void AddNode(api::NodePtr node);
  // `old_node` is only what the informer last saw; the cache moves the node from the version it
  // holds, which also covers an update arriving for a node it never added.
  void UpdateNode(const api::NodePtr& old_node, api::NodePtr new_node);
  // The NodeInfo stays, without its node, while pods whose deletion has not arrived remain on it.
  void RemoveNode(const api::Node& node);

  // An assigned pod from the informer. For an assumed pod this is the confirmation: the
  // informer's version replaces the assumed one (on the informer's node) and is no longer
  // assumed.
  void AddPod(api::PodPtr pod);
  // Moves the pod when its node changed and re-accounts its requests.
  void UpdatePod(const api::PodPtr& old_pod, api::PodPtr new_pod);
  void RemovePod(const api::Pod& pod);

  // Adds the pod (spec.node_name set) to its node ahead of the binding. An error when the pod is
  // already in the cache, has no uid or has no node name.
  framework::Status AssumePod(framework::PodInfoPtr pod);
  // The binding call returned; with a ttl, the assumed pod may expire from now on.
  void FinishBinding(const api::Pod& pod);
  // Undoes AssumePod after a failed binding.
  void ForgetPod(const api::Pod& pod);
  bool IsAssumedPod(const api::Pod& pod) const;

  // Brings `snapshot` up to date, copying only the NodeInfos changed since its generation; the
  // node list is rebuilt only when nodes came or went, the affinity lists only when a NodeInfo
  // with affinity pods was recopied. Image states are computed into each copy, and copies whose
  // image counts went stale are recopied too. An error (after repairing the snapshot) when the
  // snapshot did not match the node tree; the cycle that gets it should not trust the previous
  // contents.
  framework::Status UpdateSnapshot(Snapshot& snapshot);

  // Drops assumed pods whose binding finished more than ttl ago.
  void CleanupExpiredAssumedPods();
  // Calls CleanupExpiredAssumedPods every `period` on a background thread until Stop() (or
  // destruction). Calling Run while running does nothing.
  void Run(std::chrono::milliseconds period = std::chrono::seconds(1));
  void Stop();

  struct Sizes {
    size_t nodes;  // NodeInfos, including those whose node is gone but pods remain.
    size_t pods;   // Including assumed pods.
    size_t assumed_pods;
  };
  Sizes Size() const;
  // Null when no pod with this uid is cached.
  api::PodPtr GetPod(const std::string& uid) const;
  // Keys of all NodeInfos, sorted; for debugging.
  std::vector<std::string> NodeNames() const;
  // A copy of the cached NodeInfo (null when absent); for tests and debugging.
  framework::NodeInfoPtr GetNodeInfo(const std::string& name) const;

 private:
  struct NodeItem {
    std::string name;
    framework::NodeInfo info;
  };
  using NodeList = std::list<NodeItem>;

  struct PodState {
    framework::PodInfoPtr info;
    // Set by FinishBinding; an assumed pod can expire only once its binding finished.
    bool binding_finished = false;
    std::optional<std::chrono::steady_clock::time_point> deadline;
  };

  // All private methods expect mu_ held.
  NodeList::iterator NodeItemFor(const std::string& name);
  void MoveToFront(NodeList::iterator item);
  void SetNodeLocked(api::NodePtr node);
  void AddPodLocked(framework::PodInfoPtr pod, bool assumed);
  void RemovePodLocked(const std::string& uid);
  void UpdateImageCounts(const api::Node* old_node, const api::Node* new_node);
  // Recopies the snapshot's NodeInfos whose image counts are stale.
  void RefreshImageStates(Snapshot& snapshot);

  const std::chrono::milliseconds ttl_;
  const std::shared_ptr<Clock> clock_;

  mutable std::mutex mu_;
  NodeList node_list_;
  std::unordered_map<std::string, NodeList::iterator> nodes_;
  NodeTree node_tree_;
  std::unordered_map<std::string, PodState> pod_states_;  // by pod uid
  std::unordered_set<std::string> assumed_pods_;          // pod uids
  Snapshot::ImageNodeCounts image_node_counts_;
  uint64_t image_epoch_ = 0;

  // The cleanup loop.
  std::mutex loop_mu_;
  std::condition_variable_any loop_cv_;
  std::jthread loop_;
};

}  // namespace berth::cache

#endif  // BERTH_PKG_CACHE_CACHE_H_
