#include "pkg/plugins/dynamicresources/pools.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace berth::plugins::dynamicresources {
namespace {

bool HasBindingConditions(const Pool& pool) {
  for (const api::ResourceSlice* slice : pool.slices_targeting_node) {
    for (const api::Device& device : slice->spec.devices) {
      if (!device.binding_conditions.empty()) {
        return true;
      }
    }
  }
  return false;
}

Pool InvalidPool(const PoolId& id, std::string reason) {
  Pool pool;
  pool.id = id;
  pool.invalid = true;
  pool.invalid_reason = std::move(reason);
  return pool;
}

// Every counter a device consumes must exist in the pool's counter sets.
std::optional<std::string> CheckCounterConsumption(
    const std::map<std::string, const api::CounterSet*, std::less<>>& counter_sets,
    const std::vector<const api::ResourceSlice*>& slices) {
  for (const api::ResourceSlice* slice : slices) {
    for (const api::Device& device : slice->spec.devices) {
      for (const api::DeviceCounterConsumption& consumption : device.consumes_counters) {
        auto set = counter_sets.find(consumption.counter_set);
        if (set == counter_sets.end()) {
          return "counter set " + consumption.counter_set + " not found";
        }
        for (const auto& [name, quantity] : consumption.counters) {
          if (set->second->counters.find(name) == set->second->counters.end()) {
            return "counter " + name + " not found in counter set " + set->second->name;
          }
        }
      }
    }
  }
  return std::nullopt;
}

// `slices` are the node-reaching slices of one pool generation; `all_for_pool` (empty when the
// node-reaching slices are the whole pool) every slice of that generation.
Pool BuildPool(const PoolId& id, std::vector<const api::ResourceSlice*> slices,
               const std::vector<const api::ResourceSlice*>& all_for_pool) {
  std::stable_sort(slices.begin(), slices.end(),
                   [](const api::ResourceSlice* a, const api::ResourceSlice* b) {
                     return a->meta.name < b->meta.name;
                   });
  Pool pool;
  pool.id = id;
  std::vector<const api::ResourceSlice*> counter_slices;
  for (const api::ResourceSlice* slice : slices) {
    if (!slice->spec.shared_counters.empty()) {
      counter_slices.push_back(slice);
    } else {
      pool.slices_targeting_node.push_back(slice);
    }
  }
  if (slices.size() < all_for_pool.size()) {
    std::set<std::string, std::less<>> targeting;
    for (const api::ResourceSlice* slice : slices) {
      targeting.insert(slice->meta.name);
    }
    for (const api::ResourceSlice* slice : all_for_pool) {
      if (targeting.count(slice->meta.name) != 0) {
        continue;
      }
      if (!slice->spec.shared_counters.empty()) {
        counter_slices.push_back(slice);
      } else {
        pool.slices_not_targeting_node.push_back(slice);
      }
    }
  }

  std::set<std::string, std::less<>> device_names;
  for (const api::ResourceSlice* slice : pool.slices_targeting_node) {
    for (const api::Device& device : slice->spec.devices) {
      if (!device_names.insert(device.name).second) {
        return InvalidPool(id, "duplicate device name " + device.name);
      }
    }
  }
  for (const api::ResourceSlice* slice : counter_slices) {
    for (const api::CounterSet& set : slice->spec.shared_counters) {
      if (!pool.counter_sets.emplace(set.name, &set).second) {
        return InvalidPool(id, "duplicate counter set name " + set.name);
      }
    }
  }
  if (auto reason = CheckCounterConsumption(pool.counter_sets, pool.slices_targeting_node)) {
    return InvalidPool(id, *reason);
  }
  if (auto reason = CheckCounterConsumption(pool.counter_sets, pool.slices_not_targeting_node)) {
    return InvalidPool(id, *reason);
  }
  return pool;
}

}  // namespace

bool SliceReachesNode(const api::ResourceSlice& slice, const api::Node& node, bool* placed) {
  const api::ResourceSliceSpec& spec = slice.spec;
  *placed = true;
  if ((spec.node_name && !spec.node_name->empty()) || spec.all_nodes || spec.node_selector) {
    return NodeMatches(node, spec.node_name, spec.all_nodes, spec.node_selector);
  }
  if (spec.per_device_node_selection) {
    return std::any_of(spec.devices.begin(), spec.devices.end(), [&](const api::Device& device) {
      return NodeMatches(node, device.node_name, device.all_nodes, device.node_selector);
    });
  }
  *placed = false;
  return false;
}

bool NodeMatches(const api::Node& node, const std::optional<std::string>& node_name, bool all_nodes,
                 const std::optional<api::NodeSelector>& node_selector) {
  if (node_name && !node_name->empty()) {
    return node.Name() == *node_name;
  }
  if (all_nodes) {
    return true;
  }
  if (node_selector) {
    return node_selector->Matches(node.meta.labels, node.Name());
  }
  return false;
}

std::vector<Pool> GatherPools(const std::vector<const api::ResourceSlice*>& slices_for_node,
                              const api::Node& node,
                              const std::vector<const api::ResourceSlice*>& all_slices) {
  // Per pool, the node-reaching slices of the newest generation seen so far.
  std::map<PoolId, std::vector<const api::ResourceSlice*>> by_pool;
  for (const api::ResourceSlice* slice : slices_for_node) {
    if (!slice->unsupported_fields.empty()) {
      continue;
    }
    bool placed = false;
    if (!SliceReachesNode(*slice, node, &placed) || !placed) {
      continue;
    }
    PoolId id{slice->spec.driver, slice->spec.pool.name};
    std::vector<const api::ResourceSlice*>& pool_slices = by_pool[id];
    if (!pool_slices.empty()) {
      const int64_t generation = pool_slices.front()->spec.pool.generation;
      if (slice->spec.pool.generation < generation) {
        continue;
      }
      if (slice->spec.pool.generation > generation) {
        pool_slices.clear();
      }
    }
    pool_slices.push_back(slice);
  }

  std::vector<Pool> pools;
  std::vector<Pool> pools_with_binding_conditions;
  auto keep = [&](Pool pool) {
    if (HasBindingConditions(pool)) {
      pools_with_binding_conditions.push_back(std::move(pool));
    } else {
      pools.push_back(std::move(pool));
    }
  };
  for (auto& [id, slices] : by_pool) {
    const api::ResourcePool& first = slices.front()->spec.pool;
    if (static_cast<int64_t>(slices.size()) == first.resource_slice_count) {
      keep(BuildPool(id, slices, {}));
      continue;
    }
    // Fewer node-reaching slices than the pool has: the rest may reach other nodes. Look at the
    // whole generation in the cluster.
    std::vector<const api::ResourceSlice*> all_for_pool;
    bool obsolete = false;
    for (const api::ResourceSlice* slice : all_slices) {
      if (slice->spec.driver != id.driver || slice->spec.pool.name != id.pool) {
        continue;
      }
      if (slice->spec.pool.generation > first.generation) {
        obsolete = true;
        break;
      }
      if (slice->spec.pool.generation == first.generation && slice->unsupported_fields.empty()) {
        all_for_pool.push_back(slice);
      }
    }
    if (obsolete) {
      continue;
    }
    if (static_cast<int64_t>(all_for_pool.size()) != first.resource_slice_count) {
      Pool pool;
      pool.id = id;
      pool.incomplete = true;
      pools.push_back(std::move(pool));
      continue;
    }
    keep(BuildPool(id, slices, all_for_pool));
  }
  // by_pool is ordered by (driver, pool), so both lists already are.
  for (Pool& pool : pools_with_binding_conditions) {
    pools.push_back(std::move(pool));
  }
  return pools;
}

std::vector<api::ResourceSlicePtr> ApplyDeviceTaintRules(
    const std::vector<api::ResourceSlicePtr>& slices,
    const std::vector<api::DeviceTaintRule>& rules) {
  if (rules.empty()) {
    return slices;
  }
  std::vector<api::ResourceSlicePtr> out;
  out.reserve(slices.size());
  for (const api::ResourceSlicePtr& slice : slices) {
    std::shared_ptr<api::ResourceSlice> patched;
    for (const api::DeviceTaintRule& rule : rules) {
      if (!rule.device_selector) {
        continue;
      }
      const api::DeviceTaintSelector& selector = *rule.device_selector;
      if (selector.driver && *selector.driver != slice->spec.driver) {
        continue;
      }
      if (selector.pool && *selector.pool != slice->spec.pool.name) {
        continue;
      }
      for (size_t i = 0; i < slice->spec.devices.size(); ++i) {
        if (selector.device && *selector.device != slice->spec.devices[i].name) {
          continue;
        }
        if (!patched) {
          patched = std::make_shared<api::ResourceSlice>(*slice);
        }
        patched->spec.devices[i].taints.push_back(rule.taint);
      }
    }
    out.push_back(patched ? api::ResourceSlicePtr(std::move(patched)) : slice);
  }
  return out;
}

}  // namespace berth::plugins::dynamicresources
