#ifndef BERTH_PKG_FRAMEWORK_TYPES_H_
#define BERTH_PKG_FRAMEWORK_TYPES_H_

// The data plugins read: PodInfo (a pod plus what is precomputed from it), NodeInfo (a node plus
// the pods on it and their aggregate use), QueuedPodInfo (a pod's life in the queue).

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkg/api/requests.h"
#include "pkg/api/types.h"

namespace berth::framework {

// A pod plus what plugins would otherwise recompute per node. Immutable; shared.
struct PodInfo {
  api::PodPtr pod;

  explicit PodInfo(api::PodPtr p) : pod(std::move(p)) {}
  const api::Pod& operator*() const { return *pod; }
  const api::Pod* operator->() const { return pod.get(); }
};
using PodInfoPtr = std::shared_ptr<const PodInfo>;

// Host ports in use on a node: (ip, protocol, port) triples where ip "0.0.0.0" is a wildcard
// that conflicts with every ip (upstream HostPortInfo semantics).
class HostPortInfo {
 public:
  void Add(const std::string& ip, const std::string& protocol, int32_t port);
  void Remove(const std::string& ip, const std::string& protocol, int32_t port);
  bool CheckConflict(const std::string& ip, const std::string& protocol, int32_t port) const;
  size_t size() const;

 private:
  // ip -> set of "protocol/port".
  std::unordered_map<std::string, std::multiset<std::pair<std::string, int32_t>>> ports_;
};

struct ImageStateSummary {
  int64_t size_bytes = 0;
  int num_nodes = 0;  // How many nodes in the cluster have the image.
};

// A node and the pods assigned (or assumed) to it. Not thread-safe: the cache mutates NodeInfos
// under its lock; the scheduling cycle reads a snapshot copy that nothing mutates while it runs.
class NodeInfo {
 public:
  NodeInfo() = default;
  explicit NodeInfo(api::NodePtr node) { SetNode(std::move(node)); }

  const api::Node* node() const { return node_.get(); }
  const api::NodePtr& node_ptr() const { return node_; }
  // Inline: read for every node of every cycle.
  const std::string& name() const { return node_ ? node_->meta.name : EmptyName(); }

  void SetNode(api::NodePtr node);
  void RemoveNode() { node_.reset(); }

  void AddPod(PodInfoPtr pod);
  // Removes by uid; false when the pod is not on this node.
  bool RemovePod(const api::Pod& pod);

  const std::vector<PodInfoPtr>& pods() const { return pods_; }
  const std::vector<PodInfoPtr>& pods_with_affinity() const { return pods_with_affinity_; }
  const std::vector<PodInfoPtr>& pods_with_required_anti_affinity() const {
    return pods_with_required_anti_affinity_;
  }

  const api::ResourceList& allocatable() const {
    return node_ ? node_->status.allocatable : NoResources();
  }
  // Sum of the requests of the pods on this node, saturated into int64 (kept exact underneath,
  // so removing a pod always undoes adding it; see api::ResourceSum).
  const api::ResourceList& requested() const { return requested_.clamped(); }
  // The exact sum behind requested(), for taking some of the node's pods back out of it.
  const api::ResourceSum& requested_sum() const { return requested_; }
  // The same with the non-zero defaults for containers without cpu/memory requests.
  int64_t non_zero_milli_cpu() const { return api::ClampToInt64(non_zero_milli_cpu_); }
  int64_t non_zero_memory() const { return api::ClampToInt64(non_zero_memory_); }
  const HostPortInfo& used_ports() const { return used_ports_; }
  // How many of this node's pods use each claim by persistentVolumeClaim volume, keyed
  // "namespace/claimName"; sorted by key. Generic ephemeral volumes are not counted (upstream's
  // PVCRefCounts).
  const std::vector<std::pair<std::string, int>>& pvc_ref_counts() const { return pvc_ref_counts_; }

  // Image name -> size and spread, filled by the snapshot from all nodes.
  const std::unordered_map<std::string, ImageStateSummary>& image_states() const {
    return image_states_;
  }
  void SetImageStates(std::unordered_map<std::string, ImageStateSummary> states) {
    image_states_ = std::move(states);
    image_states_known_ = true;
  }
  // True once image_states() was filled (empty when the node reports no images), as every
  // snapshot NodeInfo is; a NodeInfo built without a snapshot has to be read from its status.
  bool image_states_known() const { return image_states_known_; }

  // Filter and Score walk hundreds of nodes whose data other threads (and, on a small machine,
  // the apiserver) evicted since the last cycle, so each node would cost several cache misses
  // in a row. Loops ask for a node's NodeInfo ahead of use and, once it has arrived (so that
  // reading node_ does not stall), for its Node object. Hints only: no effect on results.
  void Prefetch() const { PrefetchBytes(this, sizeof(*this)); }
  void PrefetchNode() const {
    if (node_) PrefetchBytes(node_.get(), sizeof(api::Node));
  }

  // Bumped on every change; the snapshot copies only NodeInfos whose generation moved.
  int64_t generation() const { return generation_; }

  std::shared_ptr<NodeInfo> Clone() const { return std::make_shared<NodeInfo>(*this); }

  // The NodeInfo's position in the snapshot's node list, which the snapshot sets as it lists the
  // NodeInfo (kNotListed before, and in a NodeInfo not from a snapshot). Lets a plugin keep data
  // per node in vectors by position across cycles. A copy keeps the value, so a reader confirms
  // that the list holds this very NodeInfo at that position before relying on it.
  static constexpr uint32_t kNotListed = UINT32_MAX;
  uint32_t list_index() const { return list_index_; }
  void set_list_index(uint32_t index) { list_index_ = index; }

 private:
  static void PrefetchBytes(const void* object, size_t size) {
    constexpr size_t kCacheLine = 64;
    const auto* bytes = static_cast<const char*>(object);
    for (size_t offset = 0; offset < size; offset += kCacheLine) {
      __builtin_prefetch(bytes + offset);
    }
  }
  static const std::string& EmptyName();
  static const api::ResourceList& NoResources();
  void Touch();
  void CountClaims(const api::Pod& pod, int delta);

  api::NodePtr node_;
  std::vector<PodInfoPtr> pods_;
  std::vector<PodInfoPtr> pods_with_affinity_;
  std::vector<PodInfoPtr> pods_with_required_anti_affinity_;
  api::ResourceSum requested_;
  // Exact, like requested_.
  api::WideInt non_zero_milli_cpu_ = 0;
  api::WideInt non_zero_memory_ = 0;
  HostPortInfo used_ports_;
  std::vector<std::pair<std::string, int>> pvc_ref_counts_;
  std::unordered_map<std::string, ImageStateSummary> image_states_;
  bool image_states_known_ = false;
  int64_t generation_ = 0;
  uint32_t list_index_ = kNotListed;
};
using NodeInfoPtr = std::shared_ptr<NodeInfo>;

// A pod's life in the scheduling queue.
struct QueuedPodInfo {
  PodInfoPtr pod_info;
  // When the pod was last added to a queue (QueueSort ties break on it).
  std::chrono::steady_clock::time_point timestamp;
  // When the pod was first seen; the SLI metric measures from here.
  std::chrono::steady_clock::time_point initial_attempt_timestamp;
  bool initial_attempt_set = false;
  int attempts = 0;
  // Plugins that rejected the pod in its last attempt (Unschedulable/Unresolvable, or Pending).
  std::set<std::string> unschedulable_plugins;
  std::set<std::string> pending_plugins;
  // Set when a PreEnqueue plugin holds the pod back; the plugin's name.
  std::string gating_plugin;

  const api::Pod& pod() const { return *pod_info->pod; }
};
using QueuedPodInfoPtr = std::shared_ptr<QueuedPodInfo>;

}  // namespace berth::framework

#endif  // BERTH_PKG_FRAMEWORK_TYPES_H_
