#include "pkg/queue/events.h"

#include <string>
#include <utility>
#include <vector>

namespace berth::queue {
namespace {

using framework::ActionType;
using framework::ClusterEvent;
using framework::EventResource;

// Meta equality up to what every write moves: resource_version, and generation, which counts
// spec writes the spec comparison sees anyway. `b` is copied with `a`'s counters rather than
// listing the other fields, so a field ObjectMeta gains is compared without a change here.
bool MetaEqExceptWriteCounters(const api::ObjectMeta& a, const api::ObjectMeta& b) {
  if (a.resource_version == b.resource_version && a.generation == b.generation) return a == b;
  api::ObjectMeta b_counted_as_a = b;
  b_counted_as_a.resource_version = a.resource_version;
  b_counted_as_a.generation = a.generation;
  return a == b_counted_as_a;
}

// True when some request of old_pod is larger than in new_pod (a request dropped to nothing
// counts): room may have appeared for the pod itself.
bool RequestsScaledDown(const api::ResourceList& old_req, const api::ResourceList& new_req) {
  if (old_req.milli_cpu > new_req.milli_cpu || old_req.memory > new_req.memory ||
      old_req.ephemeral_storage > new_req.ephemeral_storage || old_req.pods > new_req.pods) {
    return true;
  }
  for (const auto& [name, amount] : old_req.scalar) {
    if (amount > new_req.Get(name)) return true;
  }
  return false;
}

std::string ActionNames(uint32_t actions) {
  if ((actions & framework::kAll) == framework::kAll) return "All";
  if ((actions & framework::kUpdate) == framework::kUpdate &&
      (actions & ~static_cast<uint32_t>(framework::kUpdate)) == 0) {
    return "Update";
  }
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {framework::kAdd, "Add"},
      {framework::kDelete, "Delete"},
      {framework::kUpdateNodeAllocatable, "UpdateNodeAllocatable"},
      {framework::kUpdateNodeLabel, "UpdateNodeLabel"},
      {framework::kUpdateNodeTaint, "UpdateNodeTaint"},
      {framework::kUpdateNodeCondition, "UpdateNodeCondition"},
      {framework::kUpdateNodeAnnotation, "UpdateNodeAnnotation"},
      {framework::kUpdatePodLabel, "UpdatePodLabel"},
      {framework::kUpdatePodScaleDown, "UpdatePodScaleDown"},
      {framework::kUpdatePodTolerations, "UpdatePodTolerations"},
      {framework::kUpdatePodSchedulingGatesEliminated, "UpdatePodSchedulingGatesEliminated"},
      {framework::kUpdatePodGeneratedResourceClaim, "UpdatePodGeneratedResourceClaim"},
      {framework::kUpdateNodeSpecUnschedulable, "UpdateNodeSpecUnschedulable"},
      {framework::kUpdateNodeDeclaredFeature, "UpdateNodeDeclaredFeature"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((actions & bit) == 0) continue;
    if (!out.empty()) out += "|";
    out += name;
  }
  return out;
}

}  // namespace

bool IsWildcardEvent(const ClusterEvent& event) {
  return event.resource.IsWildcard() && (event.actions & framework::kAll) == framework::kAll;
}

std::string EventLabel(const ClusterEvent& event) {
  if (!event.label.empty()) return event.label;
  return std::string(event.resource.name()) + ActionNames(event.actions);
}

std::vector<ClusterEvent> PodSchedulingPropertiesChange(const api::Pod& new_pod,
                                                        const api::Pod& old_pod) {
  EventResource resource =
      new_pod.spec.node_name.empty() ? EventResource::kUnscheduledPod : EventResource::kPod;
  std::vector<ClusterEvent> events;
  auto add = [&](ActionType action) {
    ClusterEvent event{resource, action, ""};
    event.label = EventLabel(event);
    events.push_back(std::move(event));
  };
  if (!(new_pod.meta.labels == old_pod.meta.labels)) add(framework::kUpdatePodLabel);
  if (RequestsScaledDown(old_pod.requests, new_pod.requests)) add(framework::kUpdatePodScaleDown);
  if (new_pod.spec.scheduling_gates.empty() && !old_pod.spec.scheduling_gates.empty()) {
    add(framework::kUpdatePodSchedulingGatesEliminated);
  }
  // The API only lets tolerations be added, so a changed count is a changed set.
  if (new_pod.spec.tolerations.size() != old_pod.spec.tolerations.size()) {
    add(framework::kUpdatePodTolerations);
  }
  if (new_pod.status.resource_claim_statuses != old_pod.status.resource_claim_statuses) {
    add(framework::kUpdatePodGeneratedResourceClaim);
  }
  // Nothing specific: the generic Update reaches only plugins that registered update actions.
  if (events.empty()) add(framework::kUpdate);
  return events;
}

bool IsPodUpdated(const api::Pod& old_pod, const api::Pod& new_pod) {
  if (&old_pod == &new_pod) return false;
  // The api types' defaulted operator== keeps this in step with every field they gain. Status
  // and the fields derived from the spec at decode (requests, host ports) are left out.
  // The claims the resourceclaim controller made for the pod are the one part of the status that
  // decides where it may go, as upstream keeps them.
  return !(old_pod.spec == new_pod.spec) ||
         !MetaEqExceptWriteCounters(old_pod.meta, new_pod.meta) ||
         old_pod.status.resource_claim_statuses != new_pod.status.resource_claim_statuses;
}

}  // namespace berth::queue
