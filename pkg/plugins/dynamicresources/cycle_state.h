#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CYCLE_STATE_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CYCLE_STATE_H_

// DynamicResources' state for one pod's cycle, shared by the plugin's files (not an API).

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/framework/interface.h"
#include "pkg/plugins/dynamicresources/allocator.h"
#include "pkg/plugins/dynamicresources/decision_memo.h"
#include "pkg/plugins/dynamicresources/dynamicresources.h"

namespace berth::plugins::dynamicresources {

inline const framework::StateKey& StateKeyOf() {
  static const framework::StateKey kKey{kName};
  return kKey;
}

// One claim of the pod, in the order of spec.resourceClaims (entries that need no claim left out).
struct ClaimEntry {
  // As of PreFilter; PreBind replaces it with what it wrote.
  api::ResourceClaimPtr claim;
  // Set by Reserve for a claim the scheduler allocates; PreBind writes it.
  std::optional<api::AllocationResult> allocation;
  // The allocation another pod of the same pod group reserved and has not written yet: this pod
  // shares it (set by PreFilter, with `allocation`).
  bool shares_pending = false;
};

// The claim for a pod's extended resources on one node: the devices the node must give.
struct NodeExtended {
  std::vector<api::DeviceRequest> requests;
  std::vector<api::ContainerExtendedResourceRequest> mappings;
  std::optional<api::AllocationResult> allocation;
};

// The claim for the pod's extended resources on every node that needs devices for all of them.
struct ExtendedEverywhere {
  NodeExtended node;
  // claims_to_allocate, then that claim.
  std::vector<api::ResourceClaimPtr> claims;
  std::shared_ptr<const DecisionMemo::Claims> memo_claims;
};

// What one cycle knows of the pod's claims. Copies share it (as upstream's state is shared by its
// clones): no PreFilter extension changes it.
class State final : public framework::StateData {
 public:
  struct Shared {
    std::vector<ClaimEntry> claims;
    // Indices into `claims` of the claims to allocate, and those claims, in that order.
    std::vector<size_t> to_allocate;
    std::vector<api::ResourceClaimPtr> claims_to_allocate;
    // Set when there is something to allocate.
    std::shared_ptr<const Allocator> allocator;
    // What the inventory's DecisionMemo compares of claims_to_allocate; set with the allocator.
    std::shared_ptr<const DecisionMemo::Claims> memo_claims;
    // The plugin's slot of each listed node in the allocator's inventory, by list position; set
    // with the allocator, valid until the next PreFilter (only Filter reads it).
    const std::vector<uint32_t>* slot_at = nullptr;
    // The plugin's LowestPriorityHoldingClaims of each listed node, by list position, as slot_at.
    const std::vector<int32_t>* claims_floor_at = nullptr;
    // Extended resources the pod requests that a DeviceClass serves: resource -> class.
    std::map<std::string, std::string> extended;
    // The claim an earlier attempt made for them (an entry of `claims` when allocated), or null.
    api::ResourceClaimPtr existing_extended;
    // Set when no claim stands for them yet: Filter makes one per node in memory, PreBind creates
    // it. Its in-flight allocation is tracked under this id.
    bool extended_in_memory = false;
    std::string extended_id;
    // Set with the allocator when extended_in_memory.
    std::shared_ptr<const ExtendedEverywhere> extended_everywhere;
    bool has_first_available = false;
    // The pod may preempt (its policy allows it); with its priority, for Filter to tell nodes where
    // victims' devices could make room from nodes where nothing would.
    bool may_preempt = false;
    int32_t priority = 0;
    // Set by Reserve when the chosen node needs the claim: its requests, mappings and allocation.
    std::optional<NodeExtended> reserved_extended;
    // Set by PreBind once it created that claim.
    api::ResourceClaimPtr created_extended;

    std::mutex mu;
    // Guarded by mu (Filter writes them from many threads).
    // Indices of allocated claims that some node could not use; PostFilter may deallocate one.
    std::set<size_t> unavailable;
    // Per node that passed Filter, the allocations of `claims_to_allocate` (then, when the node
    // needs devices for extended resources, that claim's allocation). A node that passed without
    // an entry was only decided (AllocateOptions::decide_only): Reserve allocates on it.
    std::unordered_map<std::string, std::vector<api::AllocationResult>> node_allocations;
    std::unordered_map<std::string, NodeExtended> node_extended;
  };

  // What a dry run changed of the devices this state (and its copies) sees: pods preemption took
  // off the node, and pods placed before this one in the same dry run (explain's members of a
  // gang). Replaced, never changed, by AddPod and RemovePod; null when nothing changed.
  struct DryRunDevices {
    // Removed pod's UID -> its allocated claims.
    std::map<std::string, std::vector<api::ResourceClaimPtr>> removed;
    // UIDs of the claims the removed pods hold alone: reserved for none but them, and with the
    // finalizer by which the resourceclaim controller deallocates a claim its last user left.
    std::set<std::string> released;
    // Allocations the placed pods' claims got on their nodes, by claim UID (the in-memory claims
    // for their extended resources under "<pod uid>/extended-resources").
    std::map<std::string, api::AllocationResult> placed;
    // The allocator that sees the released devices free and the placed ones taken; made by the
    // first Filter that needs it. Guarded by mu.
    std::mutex mu;
    std::shared_ptr<const Allocator> allocator;
  };

  std::shared_ptr<Shared> shared = std::make_shared<Shared>();
  std::shared_ptr<DryRunDevices> dry_run;

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<State>(*this);
  }
};

// Claims as a change that explain checks would make them, by "namespace/name": a dry run's
// PreFilter reads them in place of the cluster's. Written by the change's prepare.
class ChangedClaims final : public framework::StateData {
 public:
  std::map<std::string, api::ResourceClaimPtr> claims;

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<ChangedClaims>(*this);
  }
};

inline const framework::StateKey& ChangedClaimsKey() {
  static const framework::StateKey kKey{"DynamicResources/changed-claims"};
  return kKey;
}

inline State* ReadFullState(const framework::CycleState& state) {
  return state.Read<State>(StateKeyOf());
}

inline State::Shared* ReadState(const framework::CycleState& state) {
  State* s = state.Read<State>(StateKeyOf());
  return s == nullptr ? nullptr : s->shared.get();
}

inline framework::Status NoState() {
  return framework::Status::Error("error reading \"" + std::string(kName) +
                                  "\" from cycleState: not found");
}

// The lowest priority of a pod on the node that names claims (or has one for extended
// resources); INT32_MAX when none does. Only below a pod's priority can preemption free devices
// for it.
int32_t LowestPriorityHoldingClaims(const framework::NodeInfo& node);
// `rejection` with code Unschedulable when it was UnschedulableAndUnresolvable, so preemption
// tries the node; same reasons.
framework::Status Resolvable(const framework::Status& rejection);

// klog.KObj's form.
inline std::string Ref(const api::ObjectMeta& meta) { return meta.Key(); }

// The allocation the claim has, or shares with a pod of its group that has not written it yet.
inline const api::AllocationResult* KnownAllocation(const ClaimEntry& entry) {
  if (entry.claim->status.allocation) return &*entry.claim->status.allocation;
  if (entry.shares_pending) return &*entry.allocation;
  return nullptr;
}

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CYCLE_STATE_H_
