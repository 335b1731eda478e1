#include "pkg/plugins/dynamicresources/allocator.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/dynamicresources/allocation_run.h"
#include "pkg/plugins/dynamicresources/consumable_capacity.h"
#include "pkg/plugins/dynamicresources/pools.h"

namespace berth::plugins::dynamicresources {
namespace {

std::string RandomUuid() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t hi = rng();
  uint64_t lo = rng();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;                            // Version 4.
  lo = (lo & ~(0xC000000000000000ULL)) | 0x8000000000000000ULL;  // RFC 4122 variant.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 32; ++i) {
    const uint64_t word = i < 16 ? hi : lo;
    const int shift = 60 - 4 * (i % 16);
    out += kHex[(word >> shift) & 0xF];
    if (i == 7 || i == 11 || i == 15 || i == 19) {
      out += '-';
    }
  }
  return out;
}

// The deadline is read on the first step and every this many after: a step takes well under a
// microsecond, and reading the clock per step cost a few percent of a search.
constexpr int64_t kStepsPerClockRead = 64;

std::string NotFound(std::string_view class_name) {
  return "deviceclass.resource.k8s.io \"" + std::string(class_name) + "\" not found";
}

}  // namespace

Allocator::Allocator(AllocatedState allocated, const std::vector<api::DeviceClassPtr>& classes,
                     const std::vector<api::ResourceSlicePtr>& slices,
                     const std::vector<api::DeviceTaintRule>& taint_rules,
                     const DeviceSelectorEvaluator& evaluator, ShareIdGenerator share_ids)
    : Allocator(std::make_shared<const Inventory>(classes, slices, taint_rules, evaluator),
                std::move(allocated), std::move(share_ids)) {}

Allocator::Allocator(std::shared_ptr<const Inventory> inventory, AllocatedState allocated,
                     ShareIdGenerator share_ids)
    : inventory_(std::move(inventory)),
      allocated_(std::move(allocated)),
      exclusive_(inventory_->Exclusive(allocated_)),
      exclusive_only_(!allocated_.HasShares()),
      share_ids_(std::move(share_ids)) {
  if (!share_ids_) {
    share_ids_ = RandomUuid;
  }
}

AllocateOutcome Allocator::Allocate(const api::Node& node,
                                    const std::vector<api::ResourceClaimPtr>& claims,
                                    const AllocateOptions& options) const {
  AllocationRun run(*this, node, claims, options);
  return run.Run();
}

bool Allocator::NodeAllocationState(const api::Node& node, std::string* state, size_t* slot) const {
  *slot = inventory_->SlotOf(node);
  return SlotAllocationState(*slot, state);
}

bool Allocator::SlotAllocationState(size_t slot, std::string* state) const {
  if (!exclusive_only_) return false;
  const Inventory::DeviceRange* begin = nullptr;
  const Inventory::DeviceRange* end = nullptr;
  if (!inventory_->WholeDeviceRangesAt(slot, &begin, &end)) return false;
  state->clear();
  for (const Inventory::DeviceRange* range = begin; range != end; ++range) {
    for (size_t i = range->first; i < size_t{range->first} + range->count; i++) {
      state->push_back(exclusive_.Contains(i) ? '1' : '0');
    }
  }
  return true;
}

bool Allocator::SlotHasAllocationState(size_t slot) const {
  const Inventory::DeviceRange* begin = nullptr;
  const Inventory::DeviceRange* end = nullptr;
  return exclusive_only_ && inventory_->WholeDeviceRangesAt(slot, &begin, &end);
}

bool Allocator::SlotAllocationStateIs(size_t slot, std::string_view state) const {
  const Inventory::DeviceRange* begin = nullptr;
  const Inventory::DeviceRange* end = nullptr;
  if (!exclusive_only_ || !inventory_->WholeDeviceRangesAt(slot, &begin, &end)) return false;
  size_t at = 0;
  for (const Inventory::DeviceRange* range = begin; range != end; ++range) {
    for (size_t i = range->first; i < size_t{range->first} + range->count; i++, at++) {
      if (at >= state.size() || state[at] != (exclusive_.Contains(i) ? '1' : '0')) return false;
    }
  }
  return at == state.size();
}

AllocateOutcome AllocationRun::Run() {
  AllocateOutcome outcome;
  auto fail = [&](AllocateOutcome::Kind kind, std::string message) {
    outcome.kind = kind;
    outcome.message = std::move(message);
    outcome.steps = steps_;
    return outcome;
  };

  pools_ = a_.inventory_->PoolsFor(node_, &own_pools_);

  entries_.resize(claims_.size());
  constraints_.resize(claims_.size());
  results_.resize(claims_.size());
  for (size_t c = 0; c < claims_.size(); ++c) {
    const api::ResourceClaim& claim = *claims_[c];
    int64_t min_devices_per_claim = 0;
    const auto& requests = claim.spec.requests;
    entries_[c].resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      const api::DeviceRequest& request = requests[i];
      RequestEntry& entry = entries_[c][i];
      int64_t min_devices = 0;
      if (!request.exactly && !request.first_available.empty()) {
        entry.has_subrequests = true;
        min_devices = std::numeric_limits<int64_t>::max();
        entry.alternatives.resize(request.first_available.size());
        for (size_t s = 0; s < request.first_available.size(); ++s) {
          const api::DeviceSubRequest& sub = request.first_available[s];
          if (auto err = ValidateRequest(sub.request, sub.name, request.name, c, i, s,
                                         &entry.alternatives[s])) {
            return fail(AllocateOutcome::Kind::kError, *err);
          }
          min_devices = std::min(min_devices, entry.alternatives[s].num_devices);
        }
      } else if (request.exactly) {
        entry.alternatives.resize(1);
        if (auto err = ValidateRequest(*request.exactly, request.name, "", c, i, 0,
                                       &entry.alternatives[0])) {
          return fail(AllocateOutcome::Kind::kError, *err);
        }
        min_devices = entry.alternatives[0].num_devices;
      } else {
        return fail(AllocateOutcome::Kind::kError,
                    "claim " + ClaimRef(claim) + ", request " + request.name +
                        ": missing device class name (unsupported request type?)");
      }
      // Compared against what is left so that a huge count cannot overflow the sum.
      if (min_devices > kMaxResults - min_devices_per_claim) {
        return fail(AllocateOutcome::Kind::kError,
                    "claim " + ClaimRef(claim) + ", request " + request.name + ": adding " +
                        std::to_string(min_devices) + " devices exceeds the claim limit of " +
                        std::to_string(kMaxResults) + ", with " +
                        std::to_string(min_devices_per_claim) + " already accounted for");
      }
      min_devices_per_claim += min_devices;
    }
    results_[c].reserve(static_cast<size_t>(min_devices_per_claim));

    for (size_t k = 0; k < claim.spec.constraints.size(); ++k) {
      const api::DeviceConstraint& constraint = claim.spec.constraints[k];
      if (constraint.match_attribute) {
        constraints_[c].emplace_back(constraint.requests, *constraint.match_attribute, false,
                                     a_.inventory_->AttributesFor(*constraint.match_attribute));
      } else if (constraint.distinct_attribute) {
        constraints_[c].emplace_back(constraint.requests, *constraint.distinct_attribute, true,
                                     a_.inventory_->AttributesFor(*constraint.distinct_attribute));
      } else {
        return fail(AllocateOutcome::Kind::kError,
                    "claim " + ClaimRef(claim) + ", constraint #" + std::to_string(k) +
                        ": empty constraint (unsupported constraint type?)");
      }
    }
  }
  // Matches found while validating "All" requests are not reused, as upstream does not.
  matches_.clear();

  const Search search = AllocateOne(Indices{}, false, Location{});
  outcome.steps = steps_;
  if (search == Search::kError) {
    return fail(aborted_ ? AllocateOutcome::Kind::kAborted : AllocateOutcome::Kind::kError, error_);
  }
  if (search == Search::kMaxSizeExceeded) {
    return fail(AllocateOutcome::Kind::kError, "allocation max size exceeded");
  }
  if (search == Search::kFailure) {
    // An invalid pool might have held the devices: say so rather than just "cannot allocate".
    for (const Pool& pool : pools()) {
      if (pool.invalid) {
        return fail(AllocateOutcome::Kind::kUnschedulable,
                    "invalid resource pools were encountered");
      }
    }
    return fail(AllocateOutcome::Kind::kUnschedulable, std::string(kCannotAllocateAllClaims));
  }
  if (options_.decide_only) {
    outcome.kind = AllocateOutcome::Kind::kAllocated;
    return outcome;
  }
  if (auto err = BuildResults(&outcome.results)) {
    outcome.results.clear();
    return fail(AllocateOutcome::Kind::kError, *err);
  }
  outcome.kind = AllocateOutcome::Kind::kAllocated;
  return outcome;
}

std::optional<std::string> AllocationRun::ValidateRequest(const api::ExactDeviceRequest& request,
                                                          const std::string& name,
                                                          const std::string& parent_name,
                                                          size_t claim, size_t request_index,
                                                          size_t sub, RequestData* out) {
  // Made only for an error: this runs for every node.
  auto prefix_of = [&] {
    return "claim " + ClaimRef(*claims_[claim]) + ", request " + name + ": ";
  };
  out->request = &request;
  out->name = name;
  out->parent_name = parent_name;
  // Subrequests have no admin access field.
  out->admin_access = parent_name.empty() && request.admin_access;
  if (request.device_class_name.empty()) {
    return prefix_of() + "missing device class name (unsupported request type?)";
  }
  out->device_class = a_.inventory_->Class(request.device_class_name);
  if (out->device_class == nullptr) {
    return prefix_of() + "could not retrieve device class " + request.device_class_name + ": " +
           NotFound(request.device_class_name);
  }
  for (const api::CelDeviceSelector& selector : out->device_class->selectors) {
    out->class_memos.push_back(a_.inventory_->MemoFor(selector.expression));
  }
  for (const api::CelDeviceSelector& selector : request.selectors) {
    out->request_memos.push_back(a_.inventory_->MemoFor(selector.expression));
  }
  auto has_memo = [](const std::atomic<uint8_t>* memo) { return memo != nullptr; };
  out->memoized = std::all_of(out->class_memos.begin(), out->class_memos.end(), has_memo) &&
                  std::all_of(out->request_memos.begin(), out->request_memos.end(), has_memo);

  if (request.allocation_mode == api::DeviceAllocationMode::kExactCount) {
    out->num_devices = request.count;
    return std::nullopt;
  }
  out->all_mode = true;
  const ConsumedCapacity empty;
  for (const Pool& pool : pools()) {
    if (pool.incomplete) {
      return prefix_of() + "asks for all devices, but resource pool " + pool.id.ToString() +
             " is currently being updated";
    }
    if (pool.invalid) {
      return prefix_of() + "asks for all devices, but resource pool " + pool.id.ToString() +
             " is currently invalid";
    }
    for (const api::ResourceSlice* slice : pool.slices_targeting_node) {
      const size_t first = a_.inventory_->FirstDevice(*slice);
      for (size_t d = 0; d < slice->spec.devices.size(); ++d) {
        const api::Device& device = slice->spec.devices[d];
        const size_t index = first == Inventory::kNoIndex ? first : first + d;
        const DeviceId* known =
            index == Inventory::kNoIndex ? nullptr : a_.inventory_->DeviceIdAt(index);
        const DeviceId& id = known != nullptr
                                 ? *known
                                 : *own_ids_.emplace_back(std::make_unique<DeviceId>(DeviceId{
                                       slice->spec.driver, slice->spec.pool.name, device.name}));
        std::optional<bool> selectable = IsSelectable(MatchKey{&device, claim, request_index, sub},
                                                      *out, *slice, device, id, index);
        if (!selectable) {
          return error_;
        }
        if (!*selectable) {
          continue;
        }
        // Only the device's own capacity here: whether what others hold leaves room is checked
        // when the device is placed, so a matching device that is full makes "All" fail.
        CapacityFit fit = RequestFitsCapacity(empty, request.capacity_requests, device.capacity,
                                              nullptr, kFractionalCapacityRange);
        if (fit.error) {
          return prefix_of() + "checking capacity for device " + device.name + ": " + *fit.error;
        }
        if (!fit.fits) {
          continue;
        }
        out->all_devices.push_back(DeviceRef{&device, &id, slice, &pool, index});
      }
    }
  }
  out->num_devices = static_cast<int64_t>(out->all_devices.size());
  return std::nullopt;
}

bool AllocationRun::Aborted() {
  if (options_.max_steps > 0 && steps_ > options_.max_steps) {
    error_ = "filter operation aborted: search step budget of " +
             std::to_string(options_.max_steps) + " exceeded";
    aborted_ = true;
  } else if (options_.cancelled != nullptr && options_.cancelled->load(std::memory_order_relaxed)) {
    error_ = "filter operation aborted: canceled";
    aborted_ = true;
  } else if (options_.deadline && steps_ % kStepsPerClockRead == 1 &&
             std::chrono::steady_clock::now() >= *options_.deadline) {
    error_ = "filter operation aborted: deadline exceeded";
    aborted_ = true;
  }
  return aborted_;
}

}  // namespace berth::plugins::dynamicresources
