#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_ALLOCATED_STATE_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_ALLOCATED_STATE_H_

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/quantity.h"

namespace berth::plugins::dynamicresources {

// A device is named by its driver, its pool and its name within the pool.
struct DeviceId {
  std::string driver;
  std::string pool;
  std::string device;

  // "driver/pool/device", the form errors name devices by.
  std::string ToString() const;
  auto operator<=>(const DeviceId& other) const = default;
  bool operator==(const DeviceId& other) const = default;
};

struct DeviceIdHash {
  size_t operator()(const DeviceId& id) const;
};

// One share of a device that allows multiple allocations.
struct SharedDeviceId {
  DeviceId device;
  std::string share_id;

  auto operator<=>(const SharedDeviceId& other) const = default;
  bool operator==(const SharedDeviceId& other) const = default;
};

// Capacity name -> amount consumed.
using ConsumedCapacity = std::map<std::string, api::Quantity, std::less<>>;

// Adds `added` into `total` name by name. Returns false (leaving `total` partly updated) when
// a sum is not representable exactly.
bool AddConsumedCapacity(ConsumedCapacity& total, const ConsumedCapacity& added);

// What is already allocated in the cluster, from the claims' status.allocation plus the
// allocations the scheduler has made but not yet written (in flight). Devices given with admin
// access are not part of it: they do not take the device away from others.
//
// The state may rest on a base: allocations counted once and shared, immutable, by many states
// (the claim tracker's, so that a scheduling cycle does not copy every allocation in the cluster).
// The state is then the base's allocations plus its own; the fields hold only its own.
//
// Not thread-safe to modify; an Allocator takes its own copy.
struct AllocatedState {
  // Devices allocated exclusively. Hashed: the allocator looks up every device it considers.
  std::unordered_set<DeviceId, DeviceIdHash> devices;
  // Shares of devices that allow multiple allocations.
  std::set<SharedDeviceId> shared_devices;
  // The capacity all shares of a device consume together.
  std::map<DeviceId, ConsumedCapacity> aggregated_capacity;
  // Null: none.
  std::shared_ptr<const AllocatedState> base;

  // Records the devices of one allocation result, the way kube-scheduler's allocated-devices
  // tracker does with consumable capacity enabled: a result with a share ID is a share (its
  // consumed capacity aggregated per device), any other result an exclusive device. Returns
  // false when an aggregated capacity is no longer representable exactly.
  bool AddAllocation(const api::AllocationResult& allocation);

  // True when the device is allocated exclusively (here or in the base).
  bool IsExclusive(const DeviceId& id) const;
  // True when the device is allocated exclusively, has a share, or has consumed capacity.
  bool IsAllocated(const DeviceId& id) const;
  // True when some share of the device is allocated or accounted for.
  bool HasShare(const DeviceId& id) const;
  // True when this state or its base holds any share or consumed capacity.
  bool HasShares() const;
  // The capacity all shares of the device consume together; null when none is recorded. Points
  // into the state or, when both it and the base record some, to their sum in `scratch` (null
  // also when that sum is not representable exactly; SumsWithBase tells beforehand).
  const ConsumedCapacity* AggregatedCapacity(const DeviceId& id, ConsumedCapacity* scratch) const;
  // Whether every aggregated capacity of this state and its base sums exactly.
  bool SumsWithBase() const;
};

// Devices allocated exclusively, by their index in an inventory (Inventory::Exclusive).
// Thread-safety: immutable.
class ExclusiveDevices {
 public:
  ExclusiveDevices() = default;
  ExclusiveDevices(std::shared_ptr<const std::vector<uint8_t>> base, std::vector<size_t> own)
      : base_(std::move(base)), own_(std::move(own)) {
    std::sort(own_.begin(), own_.end());
  }
  bool Contains(size_t index) const {
    return (base_ != nullptr && index < base_->size() && (*base_)[index] != 0) ||
           (!own_.empty() && std::binary_search(own_.begin(), own_.end(), index));
  }

 private:
  // Per device: 1 when a base allocates it (shared by every state on the same base).
  std::shared_ptr<const std::vector<uint8_t>> base_;
  // The state's own, sorted.
  std::vector<size_t> own_;
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_ALLOCATED_STATE_H_
