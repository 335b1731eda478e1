#include "pkg/plugins/dynamicresources/allocator.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pkg/plugins/dynamicresources/consumable_capacity.h"
#include "pkg/plugins/dynamicresources/pools.h"

namespace berth::plugins::dynamicresources {
namespace {

using api::Quantity;

constexpr int64_t kMaxResults = static_cast<int64_t>(api::kAllocationResultsMaxSize);
// Fractional capacity ranges (DRAFractionalCapacityRange) are on by default in v1.37.
constexpr bool kFractionalCapacityRange = true;

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

// klog.KObj's form: "namespace/name", or "name" without a namespace.
std::string ClaimRef(const api::ResourceClaim& claim) { return claim.meta.Key(); }

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

// The attribute `name` ("domain/id") of a device: looked up as written, else by its id when the
// domain is the device's driver (a driver may publish its own attributes without the domain).
const api::DeviceAttribute* LookupAttribute(const api::Device& device, const DeviceId& id,
                                            std::string_view name) {
  if (auto it = device.attributes.find(name); it != device.attributes.end()) {
    return &it->second;
  }
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || name.substr(0, slash) != id.driver) {
    return nullptr;
  }
  if (auto it = device.attributes.find(name.substr(slash + 1)); it != device.attributes.end()) {
    return &it->second;
  }
  return nullptr;
}

bool SameAttributeValue(const api::DeviceAttribute& a, const api::DeviceAttribute& b) {
  if (a.kind != b.kind) {
    return false;
  }
  switch (a.kind) {
    case api::DeviceAttribute::Kind::kInt:
      return a.int_value == b.int_value;
    case api::DeviceAttribute::Kind::kBool:
      return a.bool_value == b.bool_value;
    case api::DeviceAttribute::Kind::kString:
    case api::DeviceAttribute::Kind::kVersion:
      // Semantic versions are stored in their minimal form, so text equality is version
      // equality.
      return a.string_value == b.string_value;
  }
  return false;
}

// A claim constraint, checked as devices are added to and removed from a candidate solution.
// Constraints are monotonic: once a device is refused, adding more devices does not help.
class Constraint {
 public:
  Constraint(const std::vector<std::string>& requests, std::string attribute, bool distinct)
      : requests_(requests.begin(), requests.end()),
        attribute_(std::move(attribute)),
        distinct_(distinct) {}

  bool Add(const std::string& request, const std::string& sub_request, const api::Device& device,
           const DeviceId& id) {
    if (!AppliesTo(request, sub_request)) {
      return true;
    }
    const api::DeviceAttribute* attribute = LookupAttribute(device, id, attribute_);
    if (attribute == nullptr) {
      return false;
    }
    if (distinct_) {
      for (const api::DeviceAttribute* seen : values_) {
        if (SameAttributeValue(*seen, *attribute)) {
          return false;
        }
      }
    } else if (!values_.empty() && !SameAttributeValue(*values_.front(), *attribute)) {
      return false;
    }
    values_.push_back(attribute);
    return true;
  }

  // Undoes the matching successful Add.
  void Remove(const std::string& request, const std::string& sub_request) {
    if (AppliesTo(request, sub_request)) {
      values_.pop_back();
    }
  }

 private:
  bool AppliesTo(const std::string& request, const std::string& sub_request) const {
    if (requests_.empty()) {
      return true;
    }
    if (requests_.count(request) != 0) {
      return true;
    }
    return !sub_request.empty() && requests_.count(request + "/" + sub_request) != 0;
  }

  std::set<std::string, std::less<>> requests_;
  std::string attribute_;
  bool distinct_;
  // The attributes of the devices added so far; for matchAttribute they are all equal.
  std::vector<const api::DeviceAttribute*> values_;
};

// counter set -> counter -> amount.
using CounterSets =
    std::map<std::string, std::map<std::string, Quantity, std::less<>>, std::less<>>;

struct DeviceRef {
  const api::Device* device = nullptr;
  DeviceId id;
  const api::ResourceSlice* slice = nullptr;
  const Pool* pool = nullptr;
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

  std::string ResultName() const { return parent_name.empty() ? name : parent_name + "/" + name; }
};

struct RequestEntry {
  bool has_subrequests = false;
  std::vector<RequestData> alternatives;  // One entry unless has_subrequests.
  size_t selected = 0;                    // The alternative of the solution.
};

struct DeviceResult {
  std::string name;         // Own name of the request or subrequest.
  std::string parent_name;  // Empty unless a subrequest.
  DeviceId id;
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

enum class Search {
  kSuccess,
  kFailure,
  // error_ holds why; the search stops.
  kError,
  // The devices still needed do not fit the per-claim result limit: backtrack further.
  kMaxSizeExceeded,
};

enum class Placement { kAllocated, kRejected, kError };

std::string NotFound(std::string_view class_name) {
  return "deviceclass.resource.k8s.io \"" + std::string(class_name) + "\" not found";
}

bool SameRequirement(const api::Requirement& a, const api::Requirement& b) {
  if (a.key != b.key || a.op != b.op) {
    return false;
  }
  std::set<std::string> va(a.values.begin(), a.values.end());
  std::set<std::string> vb(b.values.begin(), b.values.end());
  return va == vb;
}

void AddNewRequirements(const std::vector<api::Requirement>& from,
                        std::vector<api::Requirement>& to) {
  for (const api::Requirement& requirement : from) {
    bool present = std::any_of(to.begin(), to.end(), [&](const api::Requirement& existing) {
      return SameRequirement(existing, requirement);
    });
    if (!present) {
      to.push_back(requirement);
    }
  }
}

}  // namespace

// The state of one Allocate call: one thread, no locking.
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
  std::optional<bool> IsSelectable(const MatchKey& key, const RequestData& rd,
                                   const api::ResourceSlice& slice, const api::Device& device,
                                   const DeviceId& id);
  std::optional<bool> SelectorsMatch(size_t claim, const api::Device& device, const DeviceId& id,
                                     const api::DeviceClass* device_class,
                                     const std::vector<api::CelDeviceSelector>& selectors);
  CapacityFit FitsCapacity(const RequestData& rd, const api::Device& device,
                           const DeviceId& id) const;
  Placement AllocateDevice(const Indices& r, const DeviceRef& device, bool must, Undo* undo);
  void Rollback(const Indices& r, const DeviceRef& device, const Undo& undo);
  // Adds the device's counter consumption to the pool's; nullopt when a sum is not
  // representable, false when a counter would be overdrawn (nothing is kept in either case).
  std::optional<bool> ReserveCounters(const DeviceRef& device, CounterUndo* undo);
  void RestoreCounters(const PoolId& pool, const CounterUndo& undo);
  const CounterSets& AvailableCounters(const Pool& pool);
  bool DeviceInUse(const DeviceId& id) const;
  bool AllocatingForClaim(const DeviceId& id, size_t claim) const;
  bool DeviceSharesInUse(const DeviceId& id) const;
  bool Aborted();
  std::optional<std::string> BuildResults(std::vector<api::AllocationResult>* out);

  RequestData& Data(const Indices& r) { return entries_[r.claim][r.request].alternatives[r.sub]; }

  const Allocator& a_;
  const api::Node& node_;
  const std::vector<api::ResourceClaimPtr>& claims_;
  const AllocateOptions& options_;

  std::vector<Pool> pools_;
  std::vector<std::vector<RequestEntry>> entries_;  // Per claim, per request.
  std::vector<std::vector<Constraint>> constraints_;
  std::unordered_map<MatchKey, bool, MatchKeyHash> matches_;
  // Devices this attempt allocates exclusively, with the claims (indices) they go to.
  std::unordered_map<DeviceId, std::set<size_t>, DeviceIdHash> allocating_devices_;
  // Capacity the shares this attempt allocates consume, per device.
  std::map<DeviceId, ConsumedCapacity> allocating_capacity_;
  std::map<PoolId, CounterSets> available_counters_;
  std::map<PoolId, CounterSets> consumed_counters_;
  std::vector<std::vector<DeviceResult>> results_;
  int64_t steps_ = 0;
  std::string error_;
  bool aborted_ = false;
};

Allocator::Allocator(AllocatedState allocated, const std::vector<api::DeviceClassPtr>& classes,
                     const std::vector<api::ResourceSlicePtr>& slices,
                     const std::vector<api::DeviceTaintRule>& taint_rules,
                     const DeviceSelectorEvaluator& evaluator, ShareIdGenerator share_ids)
    : allocated_(std::move(allocated)),
      slices_(ApplyDeviceTaintRules(slices, taint_rules)),
      evaluator_(evaluator),
      share_ids_(std::move(share_ids)) {
  for (const api::DeviceClassPtr& device_class : classes) {
    classes_.emplace(device_class->meta.name, device_class);
  }
  for (const api::ResourceSlicePtr& slice : slices_) {
    all_slices_.push_back(slice.get());
    if (slice->spec.node_name && !slice->spec.node_name->empty()) {
      slices_by_node_[*slice->spec.node_name].push_back(slice.get());
    } else {
      slices_without_node_.push_back(slice.get());
    }
  }
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

AllocateOutcome AllocationRun::Run() {
  AllocateOutcome outcome;
  auto fail = [&](AllocateOutcome::Kind kind, std::string message) {
    outcome.kind = kind;
    outcome.message = std::move(message);
    outcome.steps = steps_;
    return outcome;
  };

  std::vector<const api::ResourceSlice*> for_node;
  if (auto it = a_.slices_by_node_.find(node_.Name()); it != a_.slices_by_node_.end()) {
    for_node = it->second;
  }
  for_node.insert(for_node.end(), a_.slices_without_node_.begin(), a_.slices_without_node_.end());
  pools_ = GatherPools(for_node, node_, a_.all_slices_);

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
        constraints_[c].emplace_back(constraint.requests, *constraint.match_attribute, false);
      } else if (constraint.distinct_attribute) {
        constraints_[c].emplace_back(constraint.requests, *constraint.distinct_attribute, true);
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
    for (const Pool& pool : pools_) {
      if (pool.invalid) {
        return fail(AllocateOutcome::Kind::kUnschedulable,
                    "invalid resource pools were encountered");
      }
    }
    return fail(AllocateOutcome::Kind::kUnschedulable, std::string(kCannotAllocateAllClaims));
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
  const std::string prefix = "claim " + ClaimRef(*claims_[claim]) + ", request " + name + ": ";
  out->request = &request;
  out->name = name;
  out->parent_name = parent_name;
  // Subrequests have no admin access field.
  out->admin_access = parent_name.empty() && request.admin_access;
  if (request.device_class_name.empty()) {
    return prefix + "missing device class name (unsupported request type?)";
  }
  auto found = a_.classes_.find(request.device_class_name);
  if (found == a_.classes_.end()) {
    return prefix + "could not retrieve device class " + request.device_class_name + ": " +
           NotFound(request.device_class_name);
  }
  out->device_class = found->second.get();

  if (request.allocation_mode == api::DeviceAllocationMode::kExactCount) {
    out->num_devices = request.count;
    return std::nullopt;
  }
  out->all_mode = true;
  const ConsumedCapacity empty;
  for (const Pool& pool : pools_) {
    if (pool.incomplete) {
      return prefix + "asks for all devices, but resource pool " + pool.id.ToString() +
             " is currently being updated";
    }
    if (pool.invalid) {
      return prefix + "asks for all devices, but resource pool " + pool.id.ToString() +
             " is currently invalid";
    }
    for (const api::ResourceSlice* slice : pool.slices_targeting_node) {
      for (const api::Device& device : slice->spec.devices) {
        DeviceId id{slice->spec.driver, slice->spec.pool.name, device.name};
        std::optional<bool> selectable =
            IsSelectable(MatchKey{&device, claim, request_index, sub}, *out, *slice, device, id);
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
          return prefix + "checking capacity for device " + device.name + ": " + *fit.error;
        }
        if (!fit.fits) {
          continue;
        }
        out->all_devices.push_back(DeviceRef{&device, std::move(id), slice, &pool});
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
  } else if (options_.deadline && std::chrono::steady_clock::now() >= *options_.deadline) {
    error_ = "filter operation aborted: deadline exceeded";
    aborted_ = true;
  }
  return aborted_;
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

  for (size_t p = start.pool; p < pools_.size(); ++p) {
    const Pool& pool = pools_[p];
    if (pool.incomplete || pool.invalid) {
      continue;
    }
    const size_t slice_start = p == start.pool ? start.slice : 0;
    for (size_t s = slice_start; s < pool.slices_targeting_node.size(); ++s) {
      const api::ResourceSlice* slice = pool.slices_targeting_node[s];
      const size_t device_start = (p == start.pool && s == start.slice) ? start.device : 0;
      for (size_t d = device_start; d < slice->spec.devices.size(); ++d) {
        const api::Device& device = slice->spec.devices[d];
        DeviceId id{pool.id.driver, pool.id.pool, device.name};
        // Cheap checks first.
        if (rd.admin_access ? AllocatingForClaim(id, r.claim) : DeviceInUse(id)) {
          continue;
        }
        std::optional<bool> selectable =
            IsSelectable(MatchKey{&device, r.claim, r.request, r.sub}, rd, *slice, device, id);
        if (!selectable) {
          return Search::kError;
        }
        if (!*selectable) {
          continue;
        }
        CapacityFit fit = FitsCapacity(rd, device, id);
        if (fit.error) {
          error_ = "claim " + ClaimRef(*claims_[r.claim]) + ", request " + rd.name +
                   ": checking capacity for device " + id.ToString() + ": " + *fit.error;
          return Search::kError;
        }
        if (!fit.fits) {
          continue;
        }
        DeviceRef ref{&device, id, slice, &pool};
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
                                                const api::Device& device, const DeviceId& id) {
  if (auto it = matches_.find(key); it != matches_.end()) {
    return it->second;
  }
  auto remember = [&](bool value) {
    matches_.emplace(key, value);
    return value;
  };
  if (rd.device_class != nullptr) {
    std::optional<bool> match =
        SelectorsMatch(key.claim, device, id, rd.device_class, rd.device_class->selectors);
    if (!match) {
      return std::nullopt;
    }
    if (!*match) {
      return remember(false);
    }
  }
  std::optional<bool> match = SelectorsMatch(key.claim, device, id, nullptr, rd.request->selectors);
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
    size_t claim, const api::Device& device, const DeviceId& id,
    const api::DeviceClass* device_class, const std::vector<api::CelDeviceSelector>& selectors) {
  for (size_t i = 0; i < selectors.size(); ++i) {
    SelectorResult result = a_.evaluator_.Evaluate(selectors[i].expression, id.driver, device);
    const std::string owner = device_class != nullptr ? "class " + device_class->meta.name
                                                      : "claim " + ClaimRef(*claims_[claim]);
    switch (result.failure) {
      case SelectorResult::Failure::kCompile:
        error_ =
            owner + ": selector #" + std::to_string(i) + ": CEL compile error: " + result.error;
        return std::nullopt;
      case SelectorResult::Failure::kRuntime:
        error_ = owner + ": selector #" + std::to_string(i) + " on device " + id.ToString() +
                 ": CEL runtime error: " + result.error;
        return std::nullopt;
      case SelectorResult::Failure::kNone:
        break;
    }
    if (!result.matches) {
      return false;
    }
  }
  return true;
}

CapacityFit AllocationRun::FitsCapacity(const RequestData& rd, const api::Device& device,
                                        const DeviceId& id) const {
  static const ConsumedCapacity kNone;
  const ConsumedCapacity* allocated = &kNone;
  if (auto it = a_.allocated_.aggregated_capacity.find(id);
      it != a_.allocated_.aggregated_capacity.end()) {
    allocated = &it->second;
  }
  const ConsumedCapacity* allocating = nullptr;
  if (auto it = allocating_capacity_.find(id); it != allocating_capacity_.end()) {
    allocating = &it->second;
  }
  return RequestFitsCapacity(*allocated, rd.request->capacity_requests, device.capacity, allocating,
                             kFractionalCapacityRange);
}

bool AllocationRun::AllocatingForClaim(const DeviceId& id, size_t claim) const {
  auto it = allocating_devices_.find(id);
  return it != allocating_devices_.end() && it->second.count(claim) != 0;
}

bool AllocationRun::DeviceInUse(const DeviceId& id) const {
  if (a_.allocated_.devices.count(id) != 0) {
    return true;
  }
  auto it = allocating_devices_.find(id);
  return it != allocating_devices_.end() && !it->second.empty();
}

bool AllocationRun::DeviceSharesInUse(const DeviceId& id) const {
  return a_.allocated_.HasShare(id) || allocating_capacity_.count(id) != 0;
}

Placement AllocationRun::AllocateDevice(const Indices& r, const DeviceRef& device, bool must,
                                        Undo* undo) {
  const RequestData& rd = Data(r);
  const api::Device& d = *device.device;
  const bool multiple = d.allow_multiple_allocations;
  if (!multiple && rd.admin_access && AllocatingForClaim(device.id, r.claim)) {
    return Placement::kRejected;
  }
  if (!rd.admin_access && DeviceInUse(device.id)) {
    return Placement::kRejected;
  }
  const std::string claim_ref = ClaimRef(*claims_[r.claim]);

  // Another share of a multi-allocatable device already drew its counters.
  const bool skip_counters = multiple && DeviceSharesInUse(device.id);
  if (!skip_counters && !d.consumes_counters.empty()) {
    std::optional<bool> reserved = ReserveCounters(device, &undo->counters);
    if (!reserved) {
      error_ = "claim " + claim_ref + ", request " + rd.name + ": counters of device " +
               device.id.ToString() + " cannot be summed exactly";
      return Placement::kError;
    }
    if (!*reserved) {
      return Placement::kRejected;
    }
    undo->counters_reserved = true;
  }
  undo->previous_results = results_[r.claim].size();

  const std::string& base_name = rd.parent_name.empty() ? rd.name : rd.parent_name;
  const std::string sub_name = rd.parent_name.empty() ? std::string() : rd.name;

  if (TaintPreventsAllocation(d, rd.request->tolerations)) {
    Rollback(r, device, *undo);
    return Placement::kRejected;
  }
  std::vector<Constraint>& constraints = constraints_[r.claim];
  for (Constraint& constraint : constraints) {
    if (!constraint.Add(base_name, sub_name, d, device.id)) {
      Rollback(r, device, *undo);
      if (must) {
        // A claim whose constraint rules out one of "all" devices can never be satisfied.
        error_ = "claim " + claim_ref + ", request " + rd.name + ": cannot add device " +
                 device.id.ToString() + " because a claim constraint would not be satisfied";
        return Placement::kError;
      }
      return Placement::kRejected;
    }
    ++undo->constraints_added;
  }

  if (!multiple) {
    allocating_devices_[device.id].insert(r.claim);
    undo->device_marked = true;
  }

  CapacityFit fit = FitsCapacity(rd, d, device.id);
  if (fit.error) {
    Rollback(r, device, *undo);
    error_ = "claim " + claim_ref + ", request " + rd.name + ": rechecking capacity for device " +
             device.id.ToString() + ": " + *fit.error;
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
      error_ = "claim " + claim_ref + ", request " + rd.name +
               ": computing consumed capacity for device " + device.id.ToString() + ": " + *err;
      return Placement::kError;
    }
    result.share_id = a_.share_ids_();
    // An existing entry (possibly empty: it still marks the device as shared) is restored on
    // rollback, a new one removed, which undoes the addition exactly.
    auto [entry, inserted] = allocating_capacity_.try_emplace(device.id);
    if (!inserted) {
      undo->previous_capacity = entry->second;
    }
    undo->capacity_recorded = true;
    if (!AddConsumedCapacity(entry->second, result.consumed)) {
      Rollback(r, device, *undo);
      error_ = "claim " + claim_ref + ", request " + rd.name + ": consumed capacity of device " +
               device.id.ToString() + " cannot be summed exactly";
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
      allocating_capacity_[device.id] = *undo.previous_capacity;
    } else {
      allocating_capacity_.erase(device.id);
    }
  }
  if (undo.device_marked) {
    auto it = allocating_devices_.find(device.id);
    if (it != allocating_devices_.end()) {
      it->second.erase(r.claim);
    }
  }
  if (undo.constraints_added > 0) {
    const RequestData& rd = Data(r);
    const std::string& base_name = rd.parent_name.empty() ? rd.name : rd.parent_name;
    const std::string sub_name = rd.parent_name.empty() ? std::string() : rd.name;
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

std::optional<std::string> AllocationRun::BuildResults(std::vector<api::AllocationResult>* out) {
  out->resize(claims_.size());
  for (size_t c = 0; c < claims_.size(); ++c) {
    const api::ResourceClaim& claim = *claims_[c];
    api::AllocationResult& allocation = (*out)[c];
    for (const DeviceResult& internal : results_[c]) {
      api::DeviceRequestAllocationResult& result = allocation.results.emplace_back();
      result.request =
          internal.parent_name.empty() ? internal.name : internal.parent_name + "/" + internal.name;
      result.driver = internal.id.driver;
      result.pool = internal.id.pool;
      result.device = internal.id.device;
      result.admin_access = internal.admin_access;
      result.tolerations = internal.request->tolerations;
      result.binding_conditions = internal.device->binding_conditions;
      result.binding_failure_conditions = internal.device->binding_failure_conditions;
      result.share_id = internal.share_id;
      result.consumed_capacity = internal.consumed;
    }

    // Class configuration: each class's entries once, naming every request the class served.
    std::map<std::string, std::pair<size_t, size_t>, std::less<>> class_ranges;
    const auto& requests = claim.spec.requests;
    for (size_t i = 0; i < requests.size(); ++i) {
      const RequestEntry& entry = entries_[c][i];
      const RequestData& rd = entry.alternatives[entry.has_subrequests ? entry.selected : 0];
      if (rd.device_class == nullptr) {
        continue;
      }
      const std::string name = rd.ResultName();
      if (auto range = class_ranges.find(rd.device_class->meta.name); range != class_ranges.end()) {
        for (size_t k = range->second.first; k < range->second.second; ++k) {
          allocation.config[k].requests.push_back(name);
        }
        continue;
      }
      const size_t begin = allocation.config.size();
      for (const api::DeviceClassConfiguration& config : rd.device_class->config) {
        allocation.config.push_back(api::DeviceAllocationConfiguration{
            true, {name}, config.driver, config.parameters_json});
      }
      class_ranges.emplace(rd.device_class->meta.name,
                           std::make_pair(begin, allocation.config.size()));
    }
    auto selected_name = [&](size_t i) -> std::optional<std::string> {
      const RequestEntry& entry = entries_[c][i];
      if (!entry.has_subrequests) {
        return std::nullopt;
      }
      return entry.alternatives[entry.selected].ResultName();
    };
    auto names = [](const std::vector<std::string>& list, const std::string& name) {
      return std::find(list.begin(), list.end(), name) != list.end();
    };
    // Claim configuration: kept when it applies to a request or to the chosen subrequest.
    for (const api::DeviceClaimConfiguration& config : claim.spec.config) {
      bool applies = config.requests.empty();
      for (size_t i = 0; i < requests.size() && !applies; ++i) {
        const std::optional<std::string> sub = selected_name(i);
        applies = names(config.requests, requests[i].name) || (sub && names(config.requests, *sub));
      }
      if (applies) {
        allocation.config.push_back(api::DeviceAllocationConfiguration{
            false, config.requests, config.driver, config.parameters_json});
      }
    }
    // A configuration naming every request applies to all: say so with an empty list.
    for (api::DeviceAllocationConfiguration& config : allocation.config) {
      if (config.requests.empty()) {
        continue;
      }
      bool all = true;
      for (size_t i = 0; i < requests.size() && all; ++i) {
        if (names(config.requests, requests[i].name)) {
          continue;
        }
        auto sub = selected_name(i);
        all = sub && names(config.requests, *sub);
      }
      if (all) {
        config.requests.clear();
      }
    }

    // Node selector: the node itself when any device is local to it (or binds to it), else the
    // union of the requirements of the devices' node selectors, else none (reachable anywhere).
    api::NodeSelectorTerm term;
    bool local = false;
    for (const DeviceResult& internal : results_[c]) {
      const api::ResourceSlice& slice = *internal.slice;
      const bool per_device = slice.spec.per_device_node_selection;
      const std::optional<std::string>& node_name =
          per_device ? internal.device->node_name : slice.spec.node_name;
      const std::optional<api::NodeSelector>& selector =
          per_device ? internal.device->node_selector : slice.spec.node_selector;
      if ((node_name && !node_name->empty()) || internal.device->binds_to_node) {
        local = true;
        break;
      }
      if (!selector) {
        continue;
      }
      if (selector->terms.size() > 1) {
        return "create NodeSelector for claim " + claim.meta.name +
               ": unsupported ResourceSlice.NodeSelector with " +
               std::to_string(selector->terms.size()) + " terms";
      }
      if (selector->terms.size() == 1) {
        AddNewRequirements(selector->terms[0].match_fields, term.match_fields);
        AddNewRequirements(selector->terms[0].match_expressions, term.match_expressions);
      }
    }
    if (local) {
      api::NodeSelectorTerm node_term;
      node_term.match_fields.push_back(
          api::Requirement{"metadata.name", api::SelectorOperator::kIn, {node_.Name()}, 0});
      allocation.node_selector = api::NodeSelector{{std::move(node_term)}};
    } else if (!term.match_fields.empty() || !term.match_expressions.empty()) {
      allocation.node_selector = api::NodeSelector{{std::move(term)}};
    }
  }
  return std::nullopt;
}

}  // namespace berth::plugins::dynamicresources
