#ifndef BERTH_PKG_CACHE_SNAPSHOT_H_
#define BERTH_PKG_CACHE_SNAPSHOT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"
#include "pkg/framework/types.h"

namespace berth::cache {

class Cache;

// What one scheduling cycle reads: copies of the cached NodeInfos of the nodes that exist, in
// NodeTree order (zones interleaved). Cache::UpdateSnapshot brings it up to date incrementally.
//
// Invariants: every NodeInfo here has a node; List() holds exactly the NodeInfos of the map, each
// once; the two "have pods with" lists are the subsequences of List() whose NodeInfos have such
// pods. A NodeInfo the snapshot handed out is never modified by the cache afterwards: a change
// replaces it with a new copy, so a pointer kept from an earlier cycle stays consistent.
//
// Not thread-safe: owned by the scheduling thread, which alone updates and reads it.
class Snapshot : public framework::NodeInfoLister {
 public:
  Snapshot() = default;
  // A snapshot of exactly these objects, with image states computed over `nodes` (for tests and
  // benchmarks that run plugins without a cache). Pods whose node is not among `nodes` are left
  // out; List() keeps the order of `nodes`.
  Snapshot(const std::vector<api::PodPtr>& pods, const std::vector<api::NodePtr>& nodes);

  const std::vector<framework::NodeInfoPtr>& List() const override { return node_info_list_; }
  const std::vector<framework::NodeInfoPtr>& HavePodsWithAffinityList() const override {
    return have_pods_with_affinity_;
  }
  const std::vector<framework::NodeInfoPtr>& HavePodsWithRequiredAntiAffinityList() const override {
    return have_pods_with_required_anti_affinity_;
  }
  framework::NodeInfoPtr Get(const std::string& node_name) const override;
  bool IsPVCUsedByPods(const std::string& key) const override;

  size_t NumNodes() const { return node_info_list_.size(); }
  // The newest NodeInfo generation this snapshot reflects.
  int64_t generation() const { return generation_; }

 private:
  friend class Cache;

  static constexpr size_t kNotListed = static_cast<size_t>(-1);

  // Image name -> how many nodes have the image.
  using ImageNodeCounts = std::unordered_map<std::string, int>;

  // The node's images, each with its size on this node and the number of nodes having it.
  static std::unordered_map<std::string, framework::ImageStateSummary> ImageStatesOf(
      const api::Node& node, const ImageNodeCounts& counts);

  struct Entry {
    framework::NodeInfoPtr info;
    // Position in node_info_list_, kNotListed until the list is next rebuilt.
    size_t index = kNotListed;
  };

  // Recomputes the two affinity lists from node_info_list_.
  void RebuildAffinityLists();
  // Brings the affinity lists up to date with the NodeInfo at `index` of node_info_list_ being
  // replaced by `now` (`before` was there), without walking the other nodes: a cycle that binds a
  // pod with affinity replaces one such NodeInfo, and rebuilding both lists then read every
  // NodeInfo of the cluster.
  void PatchAffinityLists(size_t index, const framework::NodeInfo& before,
                          const framework::NodeInfoPtr& now);
  // Rebuilds node_info_list_ in `order` (names missing from the map are skipped) and the
  // affinity lists with it.
  void RebuildLists(const std::vector<std::string>& order);
  // Puts `info` in place of the node's current copy, in the map and in the list.
  void Replace(Entry& entry, framework::NodeInfoPtr info);
  // Adds (sign 1) or takes away (-1) a NodeInfo's claim counts from used_pvcs_.
  void CountClaims(const framework::NodeInfo& info, int sign);

  std::unordered_map<std::string, Entry> node_info_map_;
  std::vector<framework::NodeInfoPtr> node_info_list_;
  std::vector<framework::NodeInfoPtr> have_pods_with_affinity_;
  std::vector<framework::NodeInfoPtr> have_pods_with_required_anti_affinity_;
  // The positions in node_info_list_ of the two lists' NodeInfos, ascending.
  std::vector<size_t> have_pods_with_affinity_index_;
  std::vector<size_t> have_pods_with_required_anti_affinity_index_;
  // "namespace/claim" -> how many pods on the listed nodes use it; only positive counts kept.
  // Rebuilt with the lists, patched by Replace.
  std::unordered_map<std::string, int> used_pvcs_;
  int64_t generation_ = 0;
  // The Cache's image epoch the image states here were computed at.
  uint64_t image_epoch_ = 0;
};

}  // namespace berth::cache

#endif  // BERTH_PKG_CACHE_SNAPSHOT_H_
