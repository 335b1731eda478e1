#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_INVENTORY_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_INVENTORY_H_

// What the allocator reads that depends only on ResourceSlices, DeviceClasses and
// DeviceTaintRules: the slices with the rules' taints applied, indexed by node; the classes by
// name; the pools of each node when they depend on its name alone; and the outcome of each
// selector on each device as far as it was evaluated. Built once per change of those objects and
// shared by the allocators of every scheduling cycle until the next change, so a cycle pays only
// for what depends on its pod (the claims and the allocated devices).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/types.h"
#include "pkg/informer/lister.h"
#include "pkg/plugins/dynamicresources/allocated_state.h"
#include "pkg/plugins/dynamicresources/decision_memo.h"
#include "pkg/plugins/dynamicresources/device_selector.h"
#include "pkg/plugins/dynamicresources/pools.h"

namespace berth::informer {
class SharedInformerFactory;
}

namespace berth::plugins::dynamicresources {

// The attribute `name` ("domain/id") of a device of `driver`: looked up as written, else by its
// id when the domain is the driver (a driver may publish its own attributes without the domain).
// Null when the device has no such attribute.
const api::DeviceAttribute* FindDeviceAttribute(const api::Device& device, std::string_view driver,
                                                std::string_view name);

// Per device of an inventory, in its device order: FindDeviceAttribute for one name.
using AttributeColumn = std::vector<const api::DeviceAttribute*>;

// Thread-safety: immutable after construction except for the selector memo, whose entries are
// atomics written with the one value an expression has on a device; every method may be called
// concurrently. The evaluator must outlive the inventory.
class Inventory {
 public:
  Inventory(const std::vector<api::DeviceClassPtr>& classes,
            const std::vector<api::ResourceSlicePtr>& slices,
            const std::vector<api::DeviceTaintRule>& taint_rules,
            const DeviceSelectorEvaluator& evaluator);
  Inventory(const Inventory&) = delete;
  Inventory& operator=(const Inventory&) = delete;

  // Null when no such class exists.
  const api::DeviceClass* Class(std::string_view name) const;

  // The pools whose devices `node` can reach (GatherPools over this inventory's slices). Points
  // into the inventory when they depend on the node's name alone (no slice is published without
  // a node name), else fills `scratch` and points there.
  const std::vector<Pool>* PoolsFor(const api::Node& node, std::vector<Pool>* scratch) const;

  // For explain: the slices of pool `id` that reach `node`, of the newest generation among them
  // (the pool PoolsFor gives has none when it is incomplete or invalid).
  std::vector<const api::ResourceSlice*> SlicesOfPool(const api::Node& node,
                                                      const PoolId& id) const;

  // Where the outcomes of `expression` are remembered; null when the memo has no more room.
  // Class selectors have theirs from the start; others get one on first use (under a lock, so
  // callers look it up once per search, not per device).
  std::atomic<uint8_t>* MemoFor(std::string_view expression) const;

  // Whether `expression` selects device `device_index` of `slice` (a slice of this inventory),
  // remembered in `memo` (MemoFor(expression), may be null). Unset on an evaluation error, which
  // is `error` then (never remembered, so each caller gets the evaluator's own words).
  std::optional<bool> Selects(std::atomic<uint8_t>* memo, std::string_view expression,
                              const api::ResourceSlice& slice, size_t device_index,
                              SelectorResult* error) const;

  // The IDs of the devices of `slice` (a slice of this inventory), in its order; null for a slice
  // of another inventory.
  const DeviceId* DeviceIds(const api::ResourceSlice& slice) const;

  // Marks a device without an index in this inventory.
  static constexpr size_t kNoIndex = static_cast<size_t>(-1);
  // The index of the first device of `slice` in this inventory's device order (device i of the
  // slice is FirstDevice + i); kNoIndex for a slice of another inventory.
  size_t FirstDevice(const api::ResourceSlice& slice) const;
  // The ID of the device at `index` in this inventory's order; null past the end.
  const DeviceId* DeviceIdAt(size_t index) const;
  // Whether every capacity of the device at `index` has no request policy and a value that is
  // not negative: then a request for none of it fits unless shares already consume some.
  bool PlainCapacity(size_t index) const {
    return index < plain_capacity_.size() && plain_capacity_[index] != 0;
  }

  // Selects, given the device's index in this inventory (FirstDevice(slice) + device_index, or
  // kNoIndex), so that a caller walking a slice looks the slice up once rather than per device.
  std::optional<bool> SelectsAt(std::atomic<uint8_t>* memo, std::string_view expression,
                                const api::ResourceSlice& slice, size_t device_index,
                                size_t inventory_index, SelectorResult* error) const;

  // The devices of this inventory that `state` or a base under it allocates exclusively. The
  // part of the state's base is worked out once per base and remembered, so a cycle pays for its
  // own few devices, not a lookup per device it looks at.
  ExclusiveDevices Exclusive(const AllocatedState& state) const;

  // The node's slot in decisions(): one per node with slices of its own, one shared by all
  // others.
  size_t SlotOf(const api::Node& node) const;

  // A run of devices by inventory index.
  struct DeviceRange {
    uint32_t first = 0;
    uint32_t count = 0;
  };
  // The devices of the node in `slot`, in the order a search walks them, as runs of indices kept
  // in one array (a node's state is read on thousands of nodes per cycle), when a search on the
  // node reads nothing of the allocated state but which of them are allocated: the node's pools
  // depend on its name alone and each of their devices is only ever allocated whole (not
  // multi-allocatable, no consumable capacity, no shared counters). False otherwise.
  bool WholeDeviceRangesAt(size_t slot, const DeviceRange** begin, const DeviceRange** end) const;

  // Filter's decisions per node over this inventory (thread-safe).
  DecisionMemo& decisions() const { return *decisions_; }

  // The attribute `name` of every device, resolved once so that a constraint compares each
  // device's value without a lookup by name; null when the inventory has no more room for
  // columns. Made on first use under a lock (callers look it up once per search).
  const AttributeColumn* AttributesFor(std::string_view name) const;

  const DeviceSelectorEvaluator& evaluator() const { return evaluator_; }

 private:
  // Per device of the inventory (in slice order): 0 not evaluated yet, else 1 + the outcome.
  using Memo = std::unique_ptr<std::atomic<uint8_t>[]>;

  // Requires memo_mu_ unless called from the constructor.
  std::atomic<uint8_t>* AddMemo(std::string_view expression) const;
  // Whether every device of the pools is only ever allocated whole (see WholeDeviceRangesAt).
  bool WholeDevices(const std::vector<Pool>& pools) const;
  // Fills each pool's first_devices.
  void IndexFirstDevices(std::vector<Pool>* pools) const;
  // Sets the flag of every device `state` and its bases allocate exclusively, walking `levels`
  // states down the chain of bases (all of them by default).
  void MarkExclusive(const AllocatedState& state, std::vector<uint8_t>* flags,
                     size_t levels = static_cast<size_t>(-1)) const;

  // Hashes and compares device indices by the IDs they stand for, so that an ID finds its
  // indices without a second copy of every ID.
  struct IndexHash {
    using is_transparent = void;
    const std::vector<DeviceId>* ids;
    size_t operator()(size_t index) const { return DeviceIdHash()((*ids)[index]); }
    size_t operator()(const DeviceId& id) const { return DeviceIdHash()(id); }
  };
  struct IndexEqual {
    using is_transparent = void;
    const std::vector<DeviceId>* ids;
    bool operator()(size_t a, size_t b) const { return (*ids)[a] == (*ids)[b]; }
    bool operator()(const DeviceId& a, size_t b) const { return a == (*ids)[b]; }
    bool operator()(size_t a, const DeviceId& b) const { return (*ids)[a] == b; }
  };

  const DeviceSelectorEvaluator& evaluator_;
  std::map<std::string, api::DeviceClassPtr, std::less<>> classes_;
  // The slices with taint rules applied; they own what every pointer below points to.
  std::vector<api::ResourceSlicePtr> slices_;
  std::vector<const api::ResourceSlice*> all_slices_;
  std::unordered_map<std::string, std::vector<const api::ResourceSlice*>> slices_by_node_;
  std::vector<const api::ResourceSlice*> slices_without_node_;
  // Filled only when slices_without_node_ is empty: then a node reaches exactly the slices
  // published for its name.
  struct NodePools {
    std::vector<Pool> pools;
    // WholeDeviceRangesAt has their devices.
    bool whole_devices = false;
    // The node's slot in decisions_.
    size_t slot = 0;
  };
  std::unordered_map<std::string, NodePools> pools_by_node_;
  // WholeDeviceRangesAt: per slot (and one past the last), where its runs start in ranges_;
  // per slot, whether it has them.
  std::vector<uint32_t> range_offset_;
  std::vector<DeviceRange> ranges_;
  std::vector<uint8_t> slot_whole_;
  // The index of each slice's first device in a memo.
  std::unordered_map<const api::ResourceSlice*, size_t> first_device_;
  size_t devices_ = 0;
  // Per device, in memo order: made once rather than per search.
  std::vector<DeviceId> device_ids_;
  // Per device, in memo order: PlainCapacity.
  std::vector<uint8_t> plain_capacity_;
  // Per device, in memo order: 1 when it is only ever allocated whole (WholeDeviceRangesAt).
  std::vector<uint8_t> whole_device_;
  // The most expressions remembered: the memo holds one byte per device and expression.
  size_t memo_capacity_ = 0;
  // The index of every device, found by its ID (several for an ID published more than once).
  std::unordered_multiset<size_t, IndexHash, IndexEqual> index_of_id_;

  // ExclusiveDevices's flags of the last base it saw; guarded by exclusive_mu_. A weak pointer,
  // so a new base at the address of a freed one is not mistaken for it.
  mutable std::mutex exclusive_mu_;
  mutable std::weak_ptr<const AllocatedState> exclusive_base_;
  mutable std::shared_ptr<const std::vector<uint8_t>> exclusive_base_flags_;

  // The class selectors' memos, made by the constructor and read without a lock.
  std::map<std::string, std::atomic<uint8_t>*, std::less<>> class_memo_;
  mutable std::mutex memo_mu_;
  // Guarded by memo_mu_ (the map; the entries are atomics). Owns every memo.
  mutable std::map<std::string, Memo, std::less<>> memo_;
  // One slot per entry of pools_by_node_, plus one for nodes without slices. Its own
  // thread-safety.
  std::unique_ptr<DecisionMemo> decisions_;
  // Guarded by memo_mu_; each column is immutable once in the map.
  mutable std::map<std::string, std::unique_ptr<const AttributeColumn>, std::less<>> columns_;
};

// The inventory of one scheduler's informers, rebuilt on the first request after a slice, class
// or taint rule changed.
//
// Thread-safety: Get may be called from any thread; informer handlers only bump a counter.
class InventoryCache {
 public:
  // Subscribes to the slice, class and taint-rule informers of `informers`.
  InventoryCache(informer::SharedInformerFactory& informers,
                 const DeviceSelectorEvaluator& evaluator);
  InventoryCache(const InventoryCache&) = delete;
  InventoryCache& operator=(const InventoryCache&) = delete;

  // The inventory of what the informers hold now.
  std::shared_ptr<const Inventory> Get();

  // Inventories built so far; for tests.
  uint64_t builds() const;

 private:
  const DeviceSelectorEvaluator& evaluator_;
  informer::Lister<api::DeviceClass> classes_;
  informer::Lister<api::ResourceSlice> slices_;
  informer::Lister<api::DeviceTaintRule> taint_rules_;
  // Bumped by the handlers after the informer stored the change, so a build that reads the
  // listers after seeing a generation includes every change that generation counts.
  std::shared_ptr<std::atomic<uint64_t>> generation_;

  mutable std::mutex mu_;
  // Guarded by mu_.
  std::shared_ptr<const Inventory> inventory_;
  uint64_t built_generation_ = 0;
  uint64_t builds_ = 0;
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_INVENTORY_H_
