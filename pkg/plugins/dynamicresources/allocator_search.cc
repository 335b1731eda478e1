#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/dynamicresources/allocation_run.h"
#include "pkg/plugins/dynamicresources/inventory.h"

namespace berth::plugins::dynamicresources {
namespace {

bool Tolerates(const api::DeviceToleration& toleration, const api::DeviceTaint& taint) {
  if (toleration.effect && *toleration.effect != taint.effect) {
    return false;
  }
  if (!toleration.key.empty() && toleration.key != taint.key) {
    return false;
  }
  switch (toleration.op) {
    case api::DeviceToleration::Operator::kEqual:
      return toleration.value == taint.value;
    case api::DeviceToleration::Operator::kExists:
      return true;
  }
  return false;
}

}  // namespace

// Only NoSchedule and NoExecute keep a device from being allocated; None (and any effect a newer
// API adds) is informational.
bool TaintPreventsAllocation(const api::Device& device,
                             const std::vector<api::DeviceToleration>& tolerations) {
  for (const api::DeviceTaint& taint : device.taints) {
    if (taint.effect != api::DeviceTaint::Effect::kNoSchedule &&
        taint.effect != api::DeviceTaint::Effect::kNoExecute) {
      continue;
    }
    bool tolerated =
        std::any_of(tolerations.begin(), tolerations.end(),
                    [&](const api::DeviceToleration& t) { return Tolerates(t, taint); });
    if (!tolerated) {
      return true;
    }
  }
  return false;
}

Search AllocationRun::AllocateOne(Indices r, bool allocating_sub, Location start) {
  ++steps_;
  if (Aborted()) {
    return Search::kError;
  }
  if (r.claim >= claims_.size()) {
    return Search::kSuccess;
  }
  std::vector<RequestEntry>& claim_entries = entries_[r.claim];
  if (r.request >= claim_entries.size()) {
    Search next = AllocateOne(Indices{r.claim + 1, 0, 0, 0}, false, Location{});
    // Another claim ran out of result slots: a different choice in this claim cannot change
    // that claim's own limit, but it is not an error either.
    return next == Search::kMaxSizeExceeded ? Search::kFailure : next;
  }

  RequestEntry& entry = claim_entries[r.request];
  if (!allocating_sub && entry.has_subrequests) {
    // Exactly one alternative is allocated: the first that leads to a full solution.
    bool all_exceeded = true;
    for (size_t s = 0; s < entry.alternatives.size(); ++s) {
      r.sub = s;
      Search result = AllocateOne(r, true, Location{});
      if (result == Search::kMaxSizeExceeded) {
        continue;
      }
      all_exceeded = false;
      if (result == Search::kError) {
        return result;
      }
      if (result == Search::kSuccess) {
        entry.selected = s;
        return result;
      }
    }
    return all_exceeded ? Search::kMaxSizeExceeded : Search::kFailure;
  }

  RequestData& rd = entry.alternatives[r.sub];
  if (rd.all_mode && rd.all_devices.empty()) {
    return Search::kFailure;
  }
  if (r.device >= rd.num_devices) {
    return AllocateOne(Indices{r.claim, r.request + 1, 0, 0}, false, Location{});
  }
  const int64_t remaining = rd.num_devices - r.device;
  const int64_t available = kMaxResults - static_cast<int64_t>(results_[r.claim].size());
  if (remaining > available) {
    return Search::kMaxSizeExceeded;
  }

  if (rd.all_mode) {
    // The devices are fixed; their order does not matter, so only this one is tried.
    const DeviceRef& device = rd.all_devices[static_cast<size_t>(r.device)];
    Undo undo;
    Placement placed = AllocateDevice(r, device, true, &undo);
    if (placed == Placement::kError) {
      return Search::kError;
    }
    if (placed == Placement::kRejected) {
      return Search::kFailure;
    }
    Search next =
        AllocateOne(Indices{r.claim, r.request, r.sub, r.device + 1}, allocating_sub, Location{});
    if (next != Search::kSuccess) {
      Rollback(r, device, undo);
    }
    return next;
  }

  for (size_t p = start.pool; p < pools().size(); ++p) {
    const Pool& pool = pools()[p];
    if (pool.incomplete || pool.invalid) {
      continue;
    }
    const size_t slice_start = p == start.pool ? start.slice : 0;
    for (size_t s = slice_start; s < pool.slices_targeting_node.size(); ++s) {
      const api::ResourceSlice* slice = pool.slices_targeting_node[s];
      const size_t device_start = (p == start.pool && s == start.slice) ? start.device : 0;
      const size_t first = s < pool.first_devices.size() ? pool.first_devices[s]
                                                         : a_.inventory_->FirstDevice(*slice);
      const DeviceId* ids =
          first == Inventory::kNoIndex ? nullptr : a_.inventory_->DeviceIdAt(first);
      for (size_t d = device_start; d < slice->spec.devices.size(); ++d) {
        const api::Device& device = slice->spec.devices[d];
        // A slice of another inventory (none in practice) has its IDs made here, kept for as long
        // as a result may point to them.
        const DeviceId& id = ids != nullptr ? ids[d]
                                            : *own_ids_.emplace_back(std::make_unique<DeviceId>(
                                                  pool.id.driver, pool.id.pool, device.name));
        const size_t index = first == Inventory::kNoIndex ? first : first + d;
        // Cheap checks first.
        if (rd.admin_access ? AllocatingForClaim(id, index, r.claim) : DeviceInUse(id, index)) {
          continue;
        }
        std::optional<bool> selectable = IsSelectable(MatchKey{&device, r.claim, r.request, r.sub},
                                                      rd, *slice, device, id, index);
        if (!selectable) {
          return Search::kError;
        }
        if (!*selectable) {
          continue;
        }
        CapacityFit fit = FitsCapacity(rd, device, id, index);
        if (fit.error) {
          error_ = "claim " + ClaimRef(*claims_[r.claim]) + ", request " + rd.name +
                   ": checking capacity for device " + id.ToString() + ": " + *fit.error;
          return Search::kError;
        }
        if (!fit.fits) {
          continue;
        }
        DeviceRef ref{&device, &id, slice, &pool, index};
        Undo undo;
        Placement placed = AllocateDevice(r, ref, false, &undo);
        if (placed == Placement::kError) {
          return Search::kError;
        }
        if (placed == Placement::kRejected) {
          continue;
        }
        // The next device of the same request only looks past this one: within a request the
        // order of devices does not matter, so combinations are tried, not permutations.
        Search next = AllocateOne(Indices{r.claim, r.request, r.sub, r.device + 1}, allocating_sub,
                                  Location{p, s, d + 1});
        if (next == Search::kSuccess) {
          return next;
        }
        Rollback(r, ref, undo);
        if (next == Search::kError || next == Search::kMaxSizeExceeded) {
          return next;
        }
      }
    }
  }
  return Search::kFailure;
}

std::optional<bool> AllocationRun::IsSelectable(const MatchKey& key, const RequestData& rd,
                                                const api::ResourceSlice& slice,
                                                const api::Device& device, const DeviceId& id,
                                                size_t index) {
  // Remembered per search only when it costs more than reading the inventory's memos again.
  const bool remembered = !rd.memoized || slice.spec.per_device_node_selection;
  if (remembered) {
    if (auto it = matches_.find(key); it != matches_.end()) {
      return it->second;
    }
  }
  const size_t device_index = static_cast<size_t>(&device - slice.spec.devices.data());
  auto remember = [&](bool value) {
    if (remembered) {
      matches_.emplace(key, value);
    }
    return value;
  };
  if (rd.device_class != nullptr) {
    std::optional<bool> match =
        SelectorsMatch(key.claim, slice, device_index, index, id, rd.device_class,
                       rd.device_class->selectors, rd.class_memos);
    if (!match) {
      return std::nullopt;
    }
    if (!*match) {
      return remember(false);
    }
  }
  std::optional<bool> match = SelectorsMatch(key.claim, slice, device_index, index, id, nullptr,
                                             rd.request->selectors, rd.request_memos);
  if (!match) {
    return std::nullopt;
  }
  if (!*match) {
    return remember(false);
  }
  if (slice.spec.per_device_node_selection &&
      !NodeMatches(node_, device.node_name, device.all_nodes, device.node_selector)) {
    return remember(false);
  }
  return remember(true);
}

std::optional<bool> AllocationRun::SelectorsMatch(
    size_t claim, const api::ResourceSlice& slice, size_t device_index, size_t index,
    const DeviceId& id, const api::DeviceClass* device_class,
    const std::vector<api::CelDeviceSelector>& selectors,
    const std::vector<std::atomic<uint8_t>*>& memos) {
  for (size_t i = 0; i < selectors.size(); ++i) {
    SelectorResult result;
    std::optional<bool> matches = a_.inventory_->SelectsAt(memos[i], selectors[i].expression, slice,
                                                           device_index, index, &result);
    if (matches) {
      if (!*matches) {
        return false;
      }
      continue;
    }
    const std::string owner = device_class != nullptr ? "class " + device_class->meta.name
                                                      : "claim " + ClaimRef(*claims_[claim]);
    // Selects gives no outcome only for a compile or runtime failure.
    if (result.failure == SelectorResult::Failure::kCompile) {
      error_ = owner + ": selector #" + std::to_string(i) + ": CEL compile error: " + result.error;
    } else {
      error_ = owner + ": selector #" + std::to_string(i) + " on device " + id.ToString() +
               ": CEL runtime error: " + result.error;
    }
    return std::nullopt;
  }
  return true;
}

CapacityFit AllocationRun::FitsCapacity(const RequestData& rd, const api::Device& device,
                                        const DeviceId& id, size_t index) const {
  static const ConsumedCapacity kNone;
  ConsumedCapacity scratch;
  // Without a share anywhere no device has consumed capacity: skip walking the state's levels.
  const ConsumedCapacity* allocated =
      a_.exclusive_only_ ? nullptr : a_.allocated_.AggregatedCapacity(id, &scratch);
  if (allocated == nullptr) {
    allocated = &kNone;
  }
  const ConsumedCapacity* allocating = nullptr;
  if (auto it = allocating_capacity_.find(id); it != allocating_capacity_.end()) {
    allocating = &it->second;
  }
  // What RequestFitsCapacity would find, without reading the device's capacities (a cache miss
  // per device the search looks at).
  if (rd.request->capacity_requests.empty() && allocated->empty() &&
      (allocating == nullptr || allocating->empty()) && a_.inventory_->PlainCapacity(index)) {
    return {true, std::nullopt};
  }
  return RequestFitsCapacity(*allocated, rd.request->capacity_requests, device.capacity, allocating,
                             kFractionalCapacityRange);
}

bool AllocationRun::AllocatingForClaim(const DeviceId& id, size_t index, size_t claim) const {
  return std::any_of(allocating_devices_.begin(), allocating_devices_.end(),
                     [&](const AllocatingDevice& device) {
                       return device.claim == claim && Same(device, id, index);
                     });
}

bool AllocationRun::DeviceInUse(const DeviceId& id, size_t index) const {
  if (index != Inventory::kNoIndex) {
    if (a_.exclusive_.Contains(index)) {
      return true;
    }
  } else if (a_.allocated_.IsExclusive(id)) {
    return true;
  }
  return std::any_of(allocating_devices_.begin(), allocating_devices_.end(),
                     [&](const AllocatingDevice& device) { return Same(device, id, index); });
}

bool AllocationRun::DeviceSharesInUse(const DeviceId& id) const {
  return a_.allocated_.HasShare(id) || allocating_capacity_.count(id) != 0;
}

Placement AllocationRun::AllocateDevice(const Indices& r, const DeviceRef& device, bool must,
                                        Undo* undo) {
  const RequestData& rd = Data(r);
  const api::Device& d = *device.device;
  const bool multiple = d.allow_multiple_allocations;
  if (!multiple && rd.admin_access && AllocatingForClaim(*device.id, device.index, r.claim)) {
    return Placement::kRejected;
  }
  if (!rd.admin_access && DeviceInUse(*device.id, device.index)) {
    return Placement::kRejected;
  }
  // Made only for an error: this runs for every device placed.
  auto claim_ref = [&] { return ClaimRef(*claims_[r.claim]); };

  // Another share of a multi-allocatable device already drew its counters.
  const bool skip_counters = multiple && DeviceSharesInUse(*device.id);
  if (!skip_counters && !d.consumes_counters.empty()) {
    std::optional<bool> reserved = ReserveCounters(device, &undo->counters);
    if (!reserved) {
      error_ = "claim " + claim_ref() + ", request " + rd.name + ": counters of device " +
               device.id->ToString() + " cannot be summed exactly";
      return Placement::kError;
    }
    if (!*reserved) {
      return Placement::kRejected;
    }
    undo->counters_reserved = true;
  }
  undo->previous_results = results_[r.claim].size();

  const std::string& base_name = rd.parent_name.empty() ? rd.name : rd.parent_name;
  static const std::string kNoSubRequest;
  const std::string& sub_name = rd.parent_name.empty() ? kNoSubRequest : rd.name;

  if (TaintPreventsAllocation(d, rd.request->tolerations)) {
    Rollback(r, device, *undo);
    return Placement::kRejected;
  }
  std::vector<Constraint>& constraints = constraints_[r.claim];
  for (Constraint& constraint : constraints) {
    if (!constraint.Add(base_name, sub_name, d, *device.id, device.index)) {
      Rollback(r, device, *undo);
      if (must) {
        // A claim whose constraint rules out one of "all" devices can never be satisfied.
        error_ = "claim " + claim_ref() + ", request " + rd.name + ": cannot add device " +
                 device.id->ToString() + " because a claim constraint would not be satisfied";
        return Placement::kError;
      }
      return Placement::kRejected;
    }
    ++undo->constraints_added;
  }

  if (!multiple) {
    allocating_devices_.push_back(AllocatingDevice{device.id, device.index, r.claim});
    undo->device_marked = true;
  }

  CapacityFit fit = FitsCapacity(rd, d, *device.id, device.index);
  if (fit.error) {
    Rollback(r, device, *undo);
    error_ = "claim " + claim_ref() + ", request " + rd.name + ": rechecking capacity for device " +
             device.id->ToString() + ": " + *fit.error;
    return Placement::kError;
  }
  if (!fit.fits) {
    Rollback(r, device, *undo);
    return Placement::kRejected;
  }

  DeviceResult result;
  if (multiple) {
    if (auto err = ConsumedCapacityFromRequests(rd.request->capacity_requests, d.capacity,
                                                kFractionalCapacityRange, &result.consumed)) {
      Rollback(r, device, *undo);
      error_ = "claim " + claim_ref() + ", request " + rd.name +
               ": computing consumed capacity for device " + device.id->ToString() + ": " + *err;
      return Placement::kError;
    }
    // Deciding only: no results are built, so no share IDs are made.
    if (!options_.decide_only) {
      result.share_id = a_.share_ids_();
    }
    // An existing entry (possibly empty: it still marks the device as shared) is restored on
    // rollback, a new one removed, which undoes the addition exactly.
    auto [entry, inserted] = allocating_capacity_.try_emplace(*device.id);
    if (!inserted) {
      undo->previous_capacity = entry->second;
    }
    undo->capacity_recorded = true;
    if (!AddConsumedCapacity(entry->second, result.consumed)) {
      Rollback(r, device, *undo);
      error_ = "claim " + claim_ref() + ", request " + rd.name + ": consumed capacity of device " +
               device.id->ToString() + " cannot be summed exactly";
      return Placement::kError;
    }
  }

  result.name = rd.name;
  result.parent_name = rd.parent_name;
  result.id = device.id;
  result.device = &d;
  result.slice = device.slice;
  result.request = rd.request;
  result.admin_access = rd.admin_access;
  results_[r.claim].push_back(std::move(result));
  undo->result_added = true;
  return Placement::kAllocated;
}

void AllocationRun::Rollback(const Indices& r, const DeviceRef& device, const Undo& undo) {
  if (undo.result_added) {
    results_[r.claim].resize(undo.previous_results);
  }
  if (undo.capacity_recorded) {
    if (undo.previous_capacity) {
      allocating_capacity_[*device.id] = *undo.previous_capacity;
    } else {
      allocating_capacity_.erase(*device.id);
    }
  }
  if (undo.device_marked) {
    // Placements are undone in reverse order, so this one is the last of its device and claim.
    for (size_t i = allocating_devices_.size(); i-- > 0;) {
      const AllocatingDevice& marked = allocating_devices_[i];
      if (marked.claim == r.claim && Same(marked, *device.id, device.index)) {
        allocating_devices_.erase(allocating_devices_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  if (undo.constraints_added > 0) {
    const RequestData& rd = Data(r);
    const std::string& base_name = rd.parent_name.empty() ? rd.name : rd.parent_name;
    static const std::string kNoSubRequest;
    const std::string& sub_name = rd.parent_name.empty() ? kNoSubRequest : rd.name;
    std::vector<Constraint>& constraints = constraints_[r.claim];
    for (size_t i = undo.constraints_added; i-- > 0;) {
      constraints[i].Remove(base_name, sub_name);
    }
  }
  if (undo.counters_reserved) {
    RestoreCounters(device.pool->id, undo.counters);
  }
}

const CounterSets& AllocationRun::AvailableCounters(const Pool& pool) {
  auto [it, inserted] = available_counters_.try_emplace(pool.id);
  if (!inserted) {
    return it->second;
  }
  CounterSets& available = it->second;
  for (const auto& [name, set] : pool.counter_sets) {
    available[name].insert(set->counters.begin(), set->counters.end());
  }
  // Devices allocated in the cluster draw on the counters too, wherever they are reachable from.
  for (const auto* list : {&pool.slices_targeting_node, &pool.slices_not_targeting_node}) {
    for (const api::ResourceSlice* slice : *list) {
      for (const api::Device& device : slice->spec.devices) {
        if (device.consumes_counters.empty() ||
            !a_.allocated_.IsAllocated(
                DeviceId{slice->spec.driver, slice->spec.pool.name, device.name})) {
          continue;
        }
        for (const api::DeviceCounterConsumption& consumption : device.consumes_counters) {
          auto set = available.find(consumption.counter_set);
          if (set == available.end()) {
            continue;
          }
          for (const auto& [name, amount] : consumption.counters) {
            auto counter = set->second.find(name);
            if (counter == set->second.end()) {
              continue;
            }
            // May go negative: then nothing is left.
            std::optional<Quantity> left = Quantity::Sub(counter->second, amount);
            // Not representable only for amounts 58 orders of magnitude apart; treating the
            // counter as used up is the safe reading.
            counter->second = left ? *left : Quantity::FromValue(-1);
          }
        }
      }
    }
  }
  return available;
}

std::optional<bool> AllocationRun::ReserveCounters(const DeviceRef& device, CounterUndo* undo) {
  const Pool& pool = *device.pool;
  const CounterSets& available = AvailableCounters(pool);
  CounterSets& consumed = consumed_counters_[pool.id];
  for (const api::DeviceCounterConsumption& consumption : device.device->consumes_counters) {
    auto& set = consumed[consumption.counter_set];
    for (const auto& [name, amount] : consumption.counters) {
      auto [counter, inserted] = set.try_emplace(name, amount);
      if (inserted) {
        undo->push_back({consumption.counter_set, name, std::nullopt});
        continue;
      }
      std::optional<Quantity> sum = Quantity::Add(counter->second, amount);
      if (!sum) {
        RestoreCounters(pool.id, *undo);
        return std::nullopt;
      }
      undo->push_back({consumption.counter_set, name, counter->second});
      counter->second = *sum;
    }
  }
  for (const auto& [set_name, counters] : available) {
    auto consumed_set = consumed.find(set_name);
    for (const auto& [name, amount] : counters) {
      Quantity used;
      if (consumed_set != consumed.end()) {
        if (auto c = consumed_set->second.find(name); c != consumed_set->second.end()) {
          used = c->second;
        }
      }
      if (Quantity::Compare(amount, used) < 0) {
        RestoreCounters(pool.id, *undo);
        return false;
      }
    }
  }
  return true;
}

void AllocationRun::RestoreCounters(const PoolId& pool, const CounterUndo& undo) {
  CounterSets& consumed = consumed_counters_[pool];
  for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
    auto& set = consumed[it->set];
    if (it->previous) {
      set[it->counter] = *it->previous;
    } else {
      set.erase(it->counter);
    }
  }
}

}  // namespace berth::plugins::dynamicresources
