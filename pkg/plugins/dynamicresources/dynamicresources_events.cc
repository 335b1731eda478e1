// DynamicResources' cluster events and queueing hints, and what explain says of its claims.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "pkg/plugins/dynamicresources/cycle_state.h"
#include "pkg/plugins/dynamicresources/dynamicresources.h"
#include "pkg/plugins/dynamicresources/inventory.h"
#include "pkg/plugins/dynamicresources/pools.h"

namespace berth::plugins::dynamicresources {

using framework::QueueingHint;

namespace {

QueueingHint ClaimChangeHint(const DynamicResources& plugin, const api::Pod& pod,
                             const framework::EventObjects& event);

}  // namespace

std::vector<framework::ClusterEventWithHint> DynamicResources::EventsToRegister() const {
  using framework::EventResource;
  using framework::kAdd;
  using framework::kDelete;
  using framework::kUpdate;
  const DynamicResources* self = this;
  return {
      // Devices and allocations may depend on node labels.
      {{EventResource::kNode,
        kAdd | framework::kUpdateNodeLabel | framework::kUpdateNodeAllocatable, ""},
       nullptr},
      // Allocations live in claims: any change may free devices or complete what the pod waits
      // for.
      {{EventResource::kResourceClaim, kAdd | kUpdate | kDelete, ""},
       [self](const api::Pod& pod, const framework::EventObjects& event) {
         return ClaimChangeHint(*self, pod, event);
       }},
      // The controller names the claim it made for the pod in the pod's status.
      {{EventResource::kUnscheduledPod, framework::kUpdatePodGeneratedResourceClaim, ""},
       [self](const api::Pod&, const framework::EventObjects& event) {
         if (!event.new_pod) return QueueingHint::kQueue;
         return self->ClaimsOf(*event.new_pod, nullptr) ? QueueingHint::kSkip
                                                        : QueueingHint::kQueue;
       }},
      // A pod may wait for a class to be made or changed.
      {{EventResource::kDeviceClass, kAdd | kUpdate, ""}, nullptr},
      // New or changed slices may publish devices; taint rules change what devices tolerate.
      {{EventResource::kResourceSlice, kAdd | kUpdate, ""}, nullptr},
      {{EventResource::kDeviceTaintRule, kAdd | kUpdate | kDelete, ""}, nullptr},
  };
}

namespace {

QueueingHint ClaimChangeHint(const DynamicResources& plugin, const api::Pod& pod,
                             const framework::EventObjects& event) {
  auto before = event.OldAs<api::ResourceClaim>();
  auto after = event.NewAs<api::ResourceClaim>();
  if (after == nullptr) {
    // Deleted: only an allocated claim frees devices.
    return before != nullptr && !before->status.allocation ? QueueingHint::kSkip
                                                           : QueueingHint::kQueue;
  }
  if (before != nullptr && before->status.allocation && !after->status.allocation) {
    // Deallocated: its devices may be what the pod needs.
    return QueueingHint::kQueue;
  }
  bool uses = false;
  if (plugin.ClaimsOf(pod, [&](const api::ResourceClaimPtr& claim) {
        if (claim->meta.uid == after->meta.uid) uses = true;
      })) {
    // The pod cannot use its claims yet; PreEnqueue holds it back.
    return QueueingHint::kSkip;
  }
  if (!uses) return QueueingHint::kSkip;
  if (before == nullptr) return QueueingHint::kQueue;
  // A change outside the status (a driver adding its finalizer) makes no difference.
  return before->status == after->status ? QueueingHint::kSkip : QueueingHint::kQueue;
}

}  // namespace

std::vector<framework::PodChange> DynamicResources::SuggestChanges(
    const framework::CycleState& state, const api::Pod&,
    std::span<const framework::NodeInfo* const> rejected, std::span<const framework::Status* const>,
    const framework::Status*) const {
  std::vector<framework::PodChange> out;
  State::Shared* s = ReadState(state);
  if (s == nullptr || rejected.empty()) return out;
  // "a, b, c and N more".
  auto some = [](const std::vector<std::string>& names) {
    constexpr size_t kShown = 3;
    std::string text;
    for (size_t i = 0; i < names.size() && i < kShown; i++) {
      text += (i == 0 ? "" : ", ") + names[i];
    }
    if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
    return text;
  };
  auto nodes = [&](const std::vector<std::string>& names) {
    return std::to_string(names.size()) + (names.size() == 1 ? " node (" : " nodes (") +
           some(names) + ")";
  };
  for (const ClaimEntry& entry : s->claims) {
    if (const api::AllocationResult* allocation = KnownAllocation(entry)) {
      if (!allocation->node_selector) continue;
      std::vector<std::string> outside;
      for (const framework::NodeInfo* node : rejected) {
        if (!NodeMatches(*node->node(), std::nullopt, false, allocation->node_selector)) {
          outside.push_back(node->name());
        }
      }
      if (outside.empty()) continue;
      framework::PodChange note;
      note.note_only = true;
      note.description = "claim " + Ref(entry.claim->meta) +
                         " is allocated already, to devices the pod cannot use on " +
                         nodes(outside) + "; the pod can go only where they are";
      out.push_back(std::move(note));
    }
  }
  if (s->allocator == nullptr) return out;
  // The claim alone, with the devices others hold, and alone on an empty cluster: what tells
  // "taken" from "not there".
  const Allocator unallocated(inventory_->Get(), AllocatedState{});
  for (size_t index : s->to_allocate) {
    const api::ResourceClaimPtr& claim = s->claims[index].claim;
    std::vector<std::string> fits, taken, missing;
    for (const framework::NodeInfo* node : rejected) {
      const api::Node& n = *node->node();
      if (s->allocator->Allocate(n, {claim}).kind == AllocateOutcome::Kind::kAllocated) {
        fits.push_back(node->name());
      } else if (unallocated.Allocate(n, {claim}).kind == AllocateOutcome::Kind::kAllocated) {
        taken.push_back(node->name());
      } else {
        missing.push_back(node->name());
      }
    }
    std::string text = "claim " + Ref(claim->meta) + ":";
    std::string sep = " ";
    if (!fits.empty()) {
      text += sep + nodes(fits) + " could give its devices, but the pod fails there otherwise";
      sep = "; ";
    }
    if (!taken.empty()) {
      text += sep + "on " + nodes(taken) + " the devices that match are allocated to others";
      sep = "; ";
    }
    if (!missing.empty()) {
      text += sep + nodes(missing) + (missing.size() == 1 ? " has" : " have") +
              " no devices (or too few) that match its requests, class and constraints";
    }
    framework::PodChange note;
    note.note_only = true;
    note.description = std::move(text);
    out.push_back(std::move(note));
  }
  return out;
}

}  // namespace berth::plugins::dynamicresources
