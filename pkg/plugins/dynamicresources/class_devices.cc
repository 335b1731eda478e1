#include "pkg/plugins/dynamicresources/class_devices.h"

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "pkg/informer/factory.h"
#include "pkg/plugins/dynamicresources/claim_tracker.h"
#include "pkg/plugins/dynamicresources/pools.h"

namespace berth::plugins::dynamicresources {

ClassDeviceCounts::ClassDeviceCounts(std::shared_ptr<const Inventory> inventory,
                                     AllocatedState allocated)
    : inventory_(std::move(inventory)), allocated_(std::move(allocated)) {
  exclusive_ = inventory_->Exclusive(allocated_);
  has_shares_ = allocated_.HasShares();
}

ClassDeviceCounts::Counts ClassDeviceCounts::Count(const api::DeviceClass& device_class,
                                                   const api::Node& node) const {
  // Each selector's memo, looked up once per node rather than per device; a class has a few
  // selectors, kept on the stack (Count runs for every scored node).
  constexpr size_t kInlineSelectors = 4;
  const size_t selectors = device_class.selectors.size();
  std::array<std::atomic<uint8_t>*, kInlineSelectors> inline_memos{};
  std::vector<std::atomic<uint8_t>*> spilled_memos;
  std::atomic<uint8_t>** memos = inline_memos.data();
  if (selectors > kInlineSelectors) {
    spilled_memos.resize(selectors);
    memos = spilled_memos.data();
  }
  for (size_t i = 0; i < selectors; i++) {
    memos[i] = inventory_->MemoFor(device_class.selectors[i].expression);
  }

  Counts counts;
  std::vector<Pool> scratch;
  for (const Pool& pool : *inventory_->PoolsFor(node, &scratch)) {
    for (size_t s = 0; s < pool.slices_targeting_node.size(); s++) {
      const api::ResourceSlice& slice = *pool.slices_targeting_node[s];
      const size_t first =
          s < pool.first_devices.size() ? pool.first_devices[s] : inventory_->FirstDevice(slice);
      for (size_t d = 0; d < slice.spec.devices.size(); d++) {
        const api::Device& device = slice.spec.devices[d];
        // A slice with per-device placement reaches the node when one of its devices does.
        if (slice.spec.per_device_node_selection &&
            !NodeMatches(node, device.node_name, device.all_nodes, device.node_selector)) {
          continue;
        }
        const size_t index = first == Inventory::kNoIndex ? Inventory::kNoIndex : first + d;
        bool selected = true;
        for (size_t i = 0; i < selectors && selected; i++) {
          SelectorResult error;
          std::optional<bool> selects = inventory_->SelectsAt(
              memos[i], device_class.selectors[i].expression, slice, d, index, &error);
          if (!selects) return {};
          selected = *selects;
        }
        if (!selected) continue;
        counts.devices++;
        const bool whole =
            index != Inventory::kNoIndex
                ? exclusive_.Contains(index)
                : allocated_.IsExclusive({slice.spec.driver, slice.spec.pool.name, device.name});
        if (whole || (has_shares_ && allocated_.IsAllocated(
                                         {slice.spec.driver, slice.spec.pool.name, device.name}))) {
          counts.allocated++;
        }
      }
    }
  }
  return counts;
}

std::shared_ptr<ClassDevices> ClassDevices::For(informer::SharedInformerFactory& informers) {
  static std::mutex mu;
  static std::map<const informer::SharedInformerFactory*, std::weak_ptr<ClassDevices>> all;
  std::shared_ptr<ClaimTracker> tracker = ClaimTracker::For(informers);
  std::lock_guard lock(mu);
  std::weak_ptr<ClassDevices>& slot = all[&informers];
  std::shared_ptr<ClassDevices> devices = slot.lock();
  // A factory made where a destroyed one was has a tracker of its own, and gets its own devices.
  if (devices == nullptr || devices->tracker_ != tracker) {
    devices = std::make_shared<ClassDevices>(informers);
    slot = devices;
  }
  return devices;
}

ClassDevices::ClassDevices(informer::SharedInformerFactory& informers)
    : tracker_(ClaimTracker::For(informers)), inventory_(informers, evaluator_) {}

std::shared_ptr<const ClassDeviceCounts> ClassDevices::Now() {
  AllocatedState allocated;
  // False only for an aggregated capacity past what a quantity holds; a score then at most misses
  // the later devices of that one claim, so the state is used as it is.
  tracker_->GatherAllocatedState(&allocated);
  return std::make_shared<const ClassDeviceCounts>(inventory_.Get(), std::move(allocated));
}

}  // namespace berth::plugins::dynamicresources
