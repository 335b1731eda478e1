#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CLASS_DEVICES_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CLASS_DEVICES_H_

// How many devices of a DeviceClass a node has and how many of them are allocated: what
// NodeResourcesFit and NodeResourcesBalancedAllocation score an extended resource served from
// devices by (DRAExtendedResource) on a node that does not offer it as allocatable. The only part
// of this plugin that those two use.

#include <cstdint>
#include <memory>

#include "pkg/api/dra_types.h"
#include "pkg/api/types.h"
#include "pkg/plugins/dynamicresources/allocated_state.h"
#include "pkg/plugins/dynamicresources/cel_selector_evaluator.h"
#include "pkg/plugins/dynamicresources/inventory.h"

namespace berth::informer {
class SharedInformerFactory;
}

namespace berth::plugins::dynamicresources {

class ClaimTracker;

// The devices and allocations of one moment, for one scheduling cycle's scoring.
// Thread-safety: immutable but for the inventory's selector memo (itself thread-safe); Count may
// be called concurrently.
class ClassDeviceCounts {
 public:
  ClassDeviceCounts(std::shared_ptr<const Inventory> inventory, AllocatedState allocated);

  struct Counts {
    int64_t devices = 0;
    int64_t allocated = 0;
  };
  // The devices of the pools `node` reaches (their newest generation) that every selector of
  // `device_class` selects, and how many of those are allocated (whole, a share, or some of their
  // capacity; in flight included). Both 0 when a selector cannot be evaluated on one of them:
  // kube-scheduler then leaves the resource out of the node's score.
  Counts Count(const api::DeviceClass& device_class, const api::Node& node) const;

 private:
  std::shared_ptr<const Inventory> inventory_;
  AllocatedState allocated_;
  ExclusiveDevices exclusive_;
  // Whether allocated_ holds shares or consumed capacity: only then is a device not allocated
  // whole looked up by its ID.
  bool has_shares_ = false;
};

// The devices of one scheduler's informers: its ResourceSlices, DeviceClasses and DeviceTaintRules
// (an inventory of its own, rebuilt after they change) and its claim tracker's allocations.
// Thread-safety: Now may be called from any thread.
class ClassDevices {
 public:
  // Shared by every plugin of the scheduler that owns `informers` (made on first use, which
  // starts the informers it reads).
  static std::shared_ptr<ClassDevices> For(informer::SharedInformerFactory& informers);

  // Use For.
  explicit ClassDevices(informer::SharedInformerFactory& informers);
  ClassDevices(const ClassDevices&) = delete;
  ClassDevices& operator=(const ClassDevices&) = delete;

  // The devices and allocations as the scheduler sees them now.
  std::shared_ptr<const ClassDeviceCounts> Now();

 private:
  CelSelectorEvaluator evaluator_;
  std::shared_ptr<ClaimTracker> tracker_;
  // Declared after evaluator_, which it uses.
  InventoryCache inventory_;
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CLASS_DEVICES_H_
