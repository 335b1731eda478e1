#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_POOLS_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_POOLS_H_

#include <compare>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/types.h"

namespace berth::plugins::dynamicresources {

struct PoolId {
  std::string driver;
  std::string pool;

  // "driver/pool", the form errors name pools by.
  std::string ToString() const { return driver + "/" + pool; }
  auto operator<=>(const PoolId& other) const = default;
  bool operator==(const PoolId& other) const = default;
};

// The devices of one resource pool that a node can reach.
//
// A pool is incomplete while its driver is still publishing a generation (fewer slices of the
// newest generation than resourceSliceCount) and invalid when its slices contradict each other
// (duplicate device or counter set names, consumption of an unknown counter). Neither gives out
// devices; both keep "All" requests from being decided.
struct Pool {
  PoolId id;
  bool incomplete = false;
  bool invalid = false;
  std::string invalid_reason;
  // Slices with devices that reach the node, sorted by name. The search walks them in order.
  std::vector<const api::ResourceSlice*> slices_targeting_node;
  // Per slice of slices_targeting_node, the index of its first device in the inventory the pool
  // was gathered from (Inventory::FirstDevice), so a search need not look each slice up; empty
  // when the pool was not gathered by an inventory.
  std::vector<size_t> first_devices;
  // Slices of the same pool generation that do not reach the node: their allocated devices still
  // draw on the pool's shared counters.
  std::vector<const api::ResourceSlice*> slices_not_targeting_node;
  std::map<std::string, const api::CounterSet*, std::less<>> counter_sets;
};

// Whether a node is reached by a slice or device with this placement (exactly one of the three
// is expected; none reaches nothing).
bool NodeMatches(const api::Node& node, const std::optional<std::string>& node_name, bool all_nodes,
                 const std::optional<api::NodeSelector>& node_selector);

// Whether the slice reaches the node: by its node name, all nodes or node selector, or (for a
// slice that places each device) by one of its devices. `*placed`: whether the slice says where
// it is at all.
bool SliceReachesNode(const api::ResourceSlice& slice, const api::Node& node, bool* placed);

// Gathers the pools whose devices `node` can reach. `slices_for_node` are the slices published
// for the node by name followed by every slice without a node name; `all_slices` is every slice
// in the cluster, used to tell whether a pool whose node-reaching slices are fewer than its
// resourceSliceCount is complete elsewhere or still being published, or obsolete (a newer
// generation exists: then it is left out entirely).
//
// Slices with fields of alpha features (unsupported_fields) are left out, which makes their pool
// incomplete, as upstream does for compatibility groups while that gate is off.
//
// Pools are sorted by driver, then pool name; pools with a device that has binding conditions
// come last, so devices that bind without waiting are preferred.
std::vector<Pool> GatherPools(const std::vector<const api::ResourceSlice*>& slices_for_node,
                              const api::Node& node,
                              const std::vector<const api::ResourceSlice*>& all_slices);

// Adds the taint of every DeviceTaintRule that selects a device to that device's taints, as
// kube-scheduler's slice tracker does before the allocator sees the slices. Slices no rule
// touches are shared, the others copied. A rule without a device selector selects nothing.
std::vector<api::ResourceSlicePtr> ApplyDeviceTaintRules(
    const std::vector<api::ResourceSlicePtr>& slices,
    const std::vector<api::DeviceTaintRule>& rules);

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_POOLS_H_
