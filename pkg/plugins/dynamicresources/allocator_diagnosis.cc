// Allocator::DevicesPerRequest: for explain, how the devices a node reaches narrow down to those a
// request could have. Not on the scheduling path.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/dynamicresources/allocation_run.h"
#include "pkg/plugins/dynamicresources/consumable_capacity.h"
#include "pkg/plugins/dynamicresources/inventory.h"
#include "pkg/plugins/dynamicresources/pools.h"

namespace berth::plugins::dynamicresources {
namespace {

std::vector<std::atomic<uint8_t>*> MemosOf(const Inventory& inventory,
                                           const std::vector<api::CelDeviceSelector>& selectors) {
  std::vector<std::atomic<uint8_t>*> memos;
  for (const api::CelDeviceSelector& selector : selectors) {
    memos.push_back(inventory.MemoFor(selector.expression));
  }
  return memos;
}

// Whether every selector is true on device `device` of `slice` (inventory index `index`); unset
// when one cannot be evaluated.
std::optional<bool> AllSelect(const Inventory& inventory,
                              const std::vector<api::CelDeviceSelector>& selectors,
                              const std::vector<std::atomic<uint8_t>*>& memos,
                              const api::ResourceSlice& slice, size_t device, size_t index) {
  for (size_t i = 0; i < selectors.size(); i++) {
    SelectorResult error;
    std::optional<bool> selects =
        inventory.SelectsAt(memos[i], selectors[i].expression, slice, device, index, &error);
    if (!selects) return std::nullopt;
    if (!*selects) return false;
  }
  return true;
}

}  // namespace

std::optional<std::vector<RequestDevices>> Allocator::DevicesPerRequest(
    const api::Node& node, const api::ResourceClaim& claim, const AllocateOptions& options,
    int64_t* steps) const {
  std::vector<Pool> scratch;
  const std::vector<Pool>& pools = *inventory_->PoolsFor(node, &scratch);
  const ConsumedCapacity none;
  // Steps left for the searches below; options.max_steps bounds them together.
  const bool limited = options.max_steps > 0;
  int64_t budget = options.max_steps;
  std::vector<RequestDevices> out;
  for (const api::DeviceRequest& request : claim.spec.requests) {
    // Each subrequest as a request of its own with only that alternative.
    std::vector<api::DeviceRequest> alternatives;
    if (request.exactly) alternatives.push_back(request);
    for (const api::DeviceSubRequest& sub : request.first_available) {
      api::DeviceRequest alone;
      alone.name = request.name;
      alone.first_available = {sub};
      alternatives.push_back(std::move(alone));
    }
    for (const api::DeviceRequest& alternative : alternatives) {
      const api::ExactDeviceRequest& exact =
          alternative.exactly ? *alternative.exactly : alternative.first_available[0].request;
      RequestDevices counts;
      counts.request = alternative.exactly
                           ? alternative.name
                           : alternative.name + "/" + alternative.first_available[0].name;
      counts.device_class = exact.device_class_name;
      const api::DeviceClass* device_class = inventory_->Class(exact.device_class_name);
      if (device_class == nullptr) return std::nullopt;
      const auto class_memos = MemosOf(*inventory_, device_class->selectors);
      const auto request_memos = MemosOf(*inventory_, exact.selectors);
      for (const Pool& pool : pools) {
        // Such a pool gives out no devices, so it keeps none; its slices are looked up to count
        // the devices of the class that it holds back.
        const bool usable = !pool.incomplete && !pool.invalid;
        const std::vector<const api::ResourceSlice*> slices =
            usable ? pool.slices_targeting_node : inventory_->SlicesOfPool(node, pool.id);
        for (size_t s = 0; s < slices.size(); s++) {
          const api::ResourceSlice& slice = *slices[s];
          const size_t first = usable && s < pool.first_devices.size()
                                   ? pool.first_devices[s]
                                   : inventory_->FirstDevice(slice);
          for (size_t d = 0; d < slice.spec.devices.size(); d++) {
            const api::Device& device = slice.spec.devices[d];
            const size_t index = first == Inventory::kNoIndex ? first : first + d;
            if (slice.spec.per_device_node_selection &&
                !NodeMatches(node, device.node_name, device.all_nodes, device.node_selector)) {
              continue;
            }
            std::optional<bool> of_class =
                AllSelect(*inventory_, device_class->selectors, class_memos, slice, d, index);
            if (!of_class) return std::nullopt;
            if (!*of_class) continue;
            if (!usable) {
              counts.of_class_unusable++;
              continue;
            }
            counts.of_class++;
            std::optional<bool> selected =
                AllSelect(*inventory_, exact.selectors, request_memos, slice, d, index);
            if (!selected) return std::nullopt;
            if (!*selected) continue;
            counts.selected++;
            const CapacityFit fit = RequestFitsCapacity(
                none, exact.capacity_requests, device.capacity, nullptr, kFractionalCapacityRange);
            if (fit.error || !fit.fits) continue;
            counts.with_capacity++;
            if (TaintPreventsAllocation(device, exact.tolerations)) continue;
            counts.tolerated++;
            counts.draws_counters = counts.draws_counters || !device.consumes_counters.empty();
          }
        }
      }
      counts.wanted = exact.allocation_mode == api::DeviceAllocationMode::kAll
                          ? std::max<int64_t>(1, counts.with_capacity)
                          : exact.count;
      // The devices are there one by one; whether they are together (shared counters, the
      // result limit) only a search tells.
      if (counts.tolerated >= counts.wanted && (!limited || budget > 0)) {
        auto alone = std::make_shared<api::ResourceClaim>(claim);
        alone->spec.requests = {alternative};
        alone->spec.constraints.clear();
        AllocateOptions bounded = options;
        bounded.max_steps = limited ? budget : 0;
        bounded.decide_only = true;
        const AllocateOutcome outcome = Allocate(node, {alone}, bounded);
        *steps += outcome.steps;
        if (limited) budget -= std::max<int64_t>(1, outcome.steps);
        if (outcome.kind == AllocateOutcome::Kind::kAllocated) {
          counts.fits_alone = true;
        } else if (outcome.kind == AllocateOutcome::Kind::kUnschedulable) {
          counts.fits_alone = false;
        }
      }
      out.push_back(std::move(counts));
    }
  }
  return out;
}

}  // namespace berth::plugins::dynamicresources
