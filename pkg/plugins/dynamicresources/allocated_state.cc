#include "pkg/plugins/dynamicresources/allocated_state.h"

#include <string>
#include <utility>

namespace berth::plugins::dynamicresources {

std::string DeviceId::ToString() const { return driver + "/" + pool + "/" + device; }

size_t DeviceIdHash::operator()(const DeviceId& id) const {
  std::hash<std::string> h;
  size_t seed = h(id.driver);
  seed ^= h(id.pool) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
  seed ^= h(id.device) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
  return seed;
}

bool AddConsumedCapacity(ConsumedCapacity& total, const ConsumedCapacity& added) {
  for (const auto& [name, quantity] : added) {
    auto it = total.find(name);
    if (it == total.end()) {
      total.emplace(name, quantity);
      continue;
    }
    std::optional<api::Quantity> sum = api::Quantity::Add(it->second, quantity);
    if (!sum) {
      return false;
    }
    it->second = *sum;
  }
  return true;
}

bool AllocatedState::AddAllocation(const api::AllocationResult& allocation) {
  for (const api::DeviceRequestAllocationResult& result : allocation.results) {
    if (result.admin_access) {
      continue;
    }
    DeviceId id{result.driver, result.pool, result.device};
    if (result.share_id) {
      shared_devices.insert(SharedDeviceId{id, *result.share_id});
      if (!result.consumed_capacity.empty() &&
          !AddConsumedCapacity(aggregated_capacity[id], result.consumed_capacity)) {
        return false;
      }
      continue;
    }
    devices.insert(std::move(id));
  }
  return true;
}

bool AllocatedState::IsExclusive(const DeviceId& id) const {
  // Most states are a base plus a few devices: skip hashing the ID for an empty set.
  return (!devices.empty() && devices.count(id) != 0) || (base != nullptr && base->IsExclusive(id));
}

bool AllocatedState::IsAllocated(const DeviceId& id) const {
  return IsExclusive(id) || HasShare(id);
}

bool AllocatedState::HasShares() const {
  for (const AllocatedState* state = this; state != nullptr; state = state->base.get()) {
    if (!state->shared_devices.empty() || !state->aggregated_capacity.empty()) return true;
  }
  return false;
}

bool AllocatedState::HasShare(const DeviceId& id) const {
  if (aggregated_capacity.count(id) != 0) {
    return true;
  }
  auto it = shared_devices.lower_bound(SharedDeviceId{id, ""});
  if (it != shared_devices.end() && it->device == id) {
    return true;
  }
  return base != nullptr && base->HasShare(id);
}

const ConsumedCapacity* AllocatedState::AggregatedCapacity(const DeviceId& id,
                                                           ConsumedCapacity* scratch) const {
  const ConsumedCapacity* own = nullptr;
  if (auto it = aggregated_capacity.find(id); it != aggregated_capacity.end()) {
    own = &it->second;
  }
  const ConsumedCapacity* below = base != nullptr ? base->AggregatedCapacity(id, scratch) : nullptr;
  if (below == nullptr) {
    return own;
  }
  if (own == nullptr) {
    return below;
  }
  ConsumedCapacity sum = *below;
  if (!AddConsumedCapacity(sum, *own)) {
    return nullptr;
  }
  *scratch = std::move(sum);
  return scratch;
}

bool AllocatedState::SumsWithBase() const {
  ConsumedCapacity scratch;
  for (const auto& [id, capacity] : aggregated_capacity) {
    if (base != nullptr && base->AggregatedCapacity(id, &scratch) != nullptr &&
        AggregatedCapacity(id, &scratch) == nullptr) {
      return false;
    }
  }
  return true;
}

}  // namespace berth::plugins::dynamicresources
