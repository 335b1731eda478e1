#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_ALLOCATION_RUN_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_ALLOCATION_RUN_H_

// Internal to the allocator (allocator*.cc): the state of one Allocator::Allocate call and the
// types its search works with.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/quantity.h"
#include "pkg/plugins/dynamicresources/allocated_state.h"
#include "pkg/plugins/dynamicresources/allocator.h"
#include "pkg/plugins/dynamicresources/consumable_capacity.h"
#include "pkg/plugins/dynamicresources/inventory.h"
#include "pkg/plugins/dynamicresources/pools.h"

namespace berth::plugins::dynamicresources {

using api::Quantity;

inline constexpr int64_t kMaxResults = static_cast<int64_t>(api::kAllocationResultsMaxSize);
// Fractional capacity ranges (DRAFractionalCapacityRange) are on by default in v1.37.
inline constexpr bool kFractionalCapacityRange = true;

// klog.KObj's form: "namespace/name", or "name" without a namespace.
inline std::string ClaimRef(const api::ResourceClaim& claim) { return claim.meta.Key(); }

// A claim constraint, checked as devices are added to and removed from a candidate solution.
// Constraints are monotonic: once a device is refused, adding more devices does not help.
class Constraint {
 public:
  // `column`: the inventory's AttributesFor(attribute), or null to look each device up by name.
  Constraint(const std::vector<std::string>& requests, std::string attribute, bool distinct,
             const AttributeColumn* column)
      : requests_(requests.begin(), requests.end()),
        attribute_(std::move(attribute)),
        distinct_(distinct),
        column_(column) {}

  // `index`: the device's index in the inventory, or Inventory::kNoIndex.
  bool Add(const std::string& request, const std::string& sub_request, const api::Device& device,
           const DeviceId& id, size_t index);
  // Undoes the matching successful Add.
  void Remove(const std::string& request, const std::string& sub_request);

 private:
  bool AppliesTo(const std::string& request, const std::string& sub_request) const;

  std::set<std::string, std::less<>> requests_;
  std::string attribute_;
  bool distinct_;
  const AttributeColumn* column_;
  // The attributes of the devices added so far; for matchAttribute they are all equal.
  std::vector<const api::DeviceAttribute*> values_;
};

// counter set -> counter -> amount.
using CounterSets =
    std::map<std::string, std::map<std::string, Quantity, std::less<>>, std::less<>>;

struct DeviceRef {
  const api::Device* device = nullptr;
  // The inventory's, or one of the run's own_ids_.
  const DeviceId* id = nullptr;
  const api::ResourceSlice* slice = nullptr;
  const Pool* pool = nullptr;
  // The device's index in the inventory, or Inventory::kNoIndex.
  size_t index = Inventory::kNoIndex;
};

// A device a search allocates exclusively, and the claim (index) it goes to.
struct AllocatingDevice {
  const DeviceId* id = nullptr;  // As DeviceRef::id.
  size_t index = Inventory::kNoIndex;
  size_t claim = 0;
};

// A request without subrequests, or one subrequest of a firstAvailable list.
struct RequestData {
  const api::ExactDeviceRequest* request = nullptr;
  std::string name;         // The request's or the subrequest's own name.
  std::string parent_name;  // The parent request's name for a subrequest, else empty.
  bool admin_access = false;
  const api::DeviceClass* device_class = nullptr;
  int64_t num_devices = 0;
  bool all_mode = false;
  // For allocation mode All: the devices, decided up front.
  std::vector<DeviceRef> all_devices;
  // Where the inventory remembers each class and request selector's outcomes (null: nowhere).
  std::vector<std::atomic<uint8_t>*> class_memos;
  std::vector<std::atomic<uint8_t>*> request_memos;
  // Every selector has a memo: then a device's outcome is a few bytes read, not worth keeping
  // again per search.
  bool memoized = false;

  std::string ResultName() const { return parent_name.empty() ? name : parent_name + "/" + name; }
};

struct RequestEntry {
  bool has_subrequests = false;
  std::vector<RequestData> alternatives;  // One entry unless has_subrequests.
  size_t selected = 0;                    // The alternative of the solution.
};

struct DeviceResult {
  std::string name;              // Own name of the request or subrequest.
  std::string parent_name;       // Empty unless a subrequest.
  const DeviceId* id = nullptr;  // As DeviceRef::id.
  const api::Device* device = nullptr;
  const api::ResourceSlice* slice = nullptr;
  const api::ExactDeviceRequest* request = nullptr;
  bool admin_access = false;
  std::optional<std::string> share_id;
  ConsumedCapacity consumed;
};

struct Indices {
  size_t claim = 0;
  size_t request = 0;
  size_t sub = 0;
  int64_t device = 0;
};

struct Location {
  size_t pool = 0;
  size_t slice = 0;
  size_t device = 0;
};

struct MatchKey {
  const api::Device* device;
  size_t claim;
  size_t request;
  size_t sub;
  bool operator==(const MatchKey& other) const = default;
};

struct MatchKeyHash {
  size_t operator()(const MatchKey& k) const {
    size_t h = std::hash<const void*>()(k.device);
    h ^= k.claim * 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= k.request * 0xc2b2ae3d27d4eb4fULL + (h << 6) + (h >> 2);
    h ^= k.sub * 0x165667b19e3779f9ULL + (h << 6) + (h >> 2);
    return h;
  }
};

// A consumed counter as it was before a reservation changed it (unset: it did not exist), so the
// reservation is undone by restoring values rather than by subtracting.
struct CounterSnapshot {
  std::string set;
  std::string counter;
  std::optional<Quantity> previous;
};
using CounterUndo = std::vector<CounterSnapshot>;

// What AllocateDevice changed, so that Rollback can undo exactly that.
struct Undo {
  bool counters_reserved = false;
  CounterUndo counters;
  size_t constraints_added = 0;
  bool device_marked = false;
  // The device's entry in allocating_capacity_ before this share; unset when there was none.
  std::optional<ConsumedCapacity> previous_capacity;
  bool capacity_recorded = false;
  bool result_added = false;
  size_t previous_results = 0;
};

// Whether a NoSchedule or NoExecute taint of the device is not tolerated.
bool TaintPreventsAllocation(const api::Device& device,
                             const std::vector<api::DeviceToleration>& tolerations);

enum class Search {
  kSuccess,
  kFailure,
  // error_ holds why; the search stops.
  kError,
  // The devices still needed do not fit the per-claim result limit: backtrack further.
  kMaxSizeExceeded,
};

enum class Placement { kAllocated, kRejected, kError };

// The state of one Allocate call: one thread, no locking. Its methods live in allocator.cc (setup),
// allocator_search.cc (the search) and allocator_results.cc (the allocation results).
class AllocationRun {
 public:
  AllocationRun(const Allocator& allocator, const api::Node& node,
                const std::vector<api::ResourceClaimPtr>& claims, const AllocateOptions& options)
      : a_(allocator), node_(node), claims_(claims), options_(options) {}

  AllocateOutcome Run();

 private:
  std::optional<std::string> ValidateRequest(const api::ExactDeviceRequest& request,
                                             const std::string& name,
                                             const std::string& parent_name, size_t claim,
                                             size_t request_index, size_t sub, RequestData* out);
  Search AllocateOne(Indices r, bool allocating_sub, Location start);
  // Sets error_ on failure.
  // `index`: the device's index in the inventory, or Inventory::kNoIndex.
  std::optional<bool> IsSelectable(const MatchKey& key, const RequestData& rd,
                                   const api::ResourceSlice& slice, const api::Device& device,
                                   const DeviceId& id, size_t index);
  std::optional<bool> SelectorsMatch(size_t claim, const api::ResourceSlice& slice,
                                     size_t device_index, size_t index, const DeviceId& id,
                                     const api::DeviceClass* device_class,
                                     const std::vector<api::CelDeviceSelector>& selectors,
                                     const std::vector<std::atomic<uint8_t>*>& memos);
  // `index`: the device's index in the inventory, or Inventory::kNoIndex.
  CapacityFit FitsCapacity(const RequestData& rd, const api::Device& device, const DeviceId& id,
                           size_t index) const;
  Placement AllocateDevice(const Indices& r, const DeviceRef& device, bool must, Undo* undo);
  void Rollback(const Indices& r, const DeviceRef& device, const Undo& undo);
  // Adds the device's counter consumption to the pool's; nullopt when a sum is not
  // representable, false when a counter would be overdrawn (nothing is kept in either case).
  std::optional<bool> ReserveCounters(const DeviceRef& device, CounterUndo* undo);
  void RestoreCounters(const PoolId& pool, const CounterUndo& undo);
  const CounterSets& AvailableCounters(const Pool& pool);
  // `index`: the device's index in the inventory, or Inventory::kNoIndex.
  bool DeviceInUse(const DeviceId& id, size_t index) const;
  bool AllocatingForClaim(const DeviceId& id, size_t index, size_t claim) const;
  // Whether `device` is the device of `id` and `index`.
  static bool Same(const AllocatingDevice& device, const DeviceId& id, size_t index) {
    if (device.index != Inventory::kNoIndex && index != Inventory::kNoIndex) {
      // An inventory's device IDs are unique among the devices of valid pools, the only ones a
      // search places.
      return device.index == index;
    }
    return *device.id == id;
  }
  bool DeviceSharesInUse(const DeviceId& id) const;
  bool Aborted();
  std::optional<std::string> BuildResults(std::vector<api::AllocationResult>* out);

  RequestData& Data(const Indices& r) { return entries_[r.claim][r.request].alternatives[r.sub]; }
  const std::vector<Pool>& pools() const { return *pools_; }

  const Allocator& a_;
  const api::Node& node_;
  const std::vector<api::ResourceClaimPtr>& claims_;
  const AllocateOptions& options_;

  // The node's pools: the inventory's, or own_pools_ when they depend on more than its name.
  const std::vector<Pool>* pools_ = nullptr;
  std::vector<Pool> own_pools_;
  std::vector<std::vector<RequestEntry>> entries_;  // Per claim, per request.
  std::vector<std::vector<Constraint>> constraints_;
  std::unordered_map<MatchKey, bool, MatchKeyHash> matches_;
  // Devices this attempt allocates exclusively, each with the claim (index) it goes to: a few
  // at most per request, so a list is cheaper to search than a map is to fill.
  std::vector<AllocatingDevice> allocating_devices_;
  // Capacity the shares this attempt allocates consume, per device.
  std::map<DeviceId, ConsumedCapacity> allocating_capacity_;
  std::map<PoolId, CounterSets> available_counters_;
  std::map<PoolId, CounterSets> consumed_counters_;
  std::vector<std::vector<DeviceResult>> results_;
  // IDs of devices of slices the inventory has none for, each held where results point to it.
  std::vector<std::unique_ptr<DeviceId>> own_ids_;
  int64_t steps_ = 0;
  std::string error_;
  bool aborted_ = false;
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_ALLOCATION_RUN_H_
