// DynamicResources' cluster events and queueing hints.

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

}  // namespace berth::plugins::dynamicresources
