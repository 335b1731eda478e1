#include "pkg/queue/events.h"

#include <optional>

namespace berth::queue {
namespace {

using framework::ActionType;
using framework::ClusterEvent;
using framework::EventResource;

// Field-by-field equality of the pod spec types, which pkg/api does not define (it has no use
// for it). Everything that reaches scheduling is compared; derived fields (requests, host ports)
// follow from the spec and are skipped.
bool Eq(const api::OwnerReference& a, const api::OwnerReference& b);
bool Eq(const api::Requirement& a, const api::Requirement& b);
bool Eq(const api::LabelSelector& a, const api::LabelSelector& b);
bool Eq(const api::NodeSelectorTerm& a, const api::NodeSelectorTerm& b);
bool Eq(const api::NodeSelector& a, const api::NodeSelector& b);
bool Eq(const api::PreferredSchedulingTerm& a, const api::PreferredSchedulingTerm& b);
bool Eq(const api::NodeAffinity& a, const api::NodeAffinity& b);
bool Eq(const api::PodAffinityTerm& a, const api::PodAffinityTerm& b);
bool Eq(const api::WeightedPodAffinityTerm& a, const api::WeightedPodAffinityTerm& b);
bool Eq(const api::PodAffinity& a, const api::PodAffinity& b);
bool Eq(const api::Affinity& a, const api::Affinity& b);
bool Eq(const api::Toleration& a, const api::Toleration& b);
bool Eq(const api::TopologySpreadConstraint& a, const api::TopologySpreadConstraint& b);
bool Eq(const api::ContainerPort& a, const api::ContainerPort& b);
bool Eq(const api::ResourceRequirements& a, const api::ResourceRequirements& b);
bool Eq(const api::Container& a, const api::Container& b);
bool Eq(const api::Volume& a, const api::Volume& b);

// Scalars, strings, enums and the api types that define operator== themselves.
template <typename T>
bool Eq(const T& a, const T& b) {
  return a == b;
}

template <typename T>
bool Eq(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!Eq(a[i], b[i])) return false;
  }
  return true;
}

template <typename T>
bool Eq(const std::optional<T>& a, const std::optional<T>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || Eq(*a, *b);
}

bool Eq(const api::OwnerReference& a, const api::OwnerReference& b) {
  return a.api_version == b.api_version && a.kind == b.kind && a.name == b.name && a.uid == b.uid &&
         a.controller == b.controller;
}

bool Eq(const api::Requirement& a, const api::Requirement& b) {
  return a.key == b.key && a.op == b.op && a.values == b.values && a.number == b.number;
}

bool Eq(const api::LabelSelector& a, const api::LabelSelector& b) {
  return Eq(a.requirements, b.requirements);
}

bool Eq(const api::NodeSelectorTerm& a, const api::NodeSelectorTerm& b) {
  return Eq(a.match_expressions, b.match_expressions) && Eq(a.match_fields, b.match_fields);
}

bool Eq(const api::NodeSelector& a, const api::NodeSelector& b) { return Eq(a.terms, b.terms); }

bool Eq(const api::PreferredSchedulingTerm& a, const api::PreferredSchedulingTerm& b) {
  return a.weight == b.weight && Eq(a.preference, b.preference);
}

bool Eq(const api::NodeAffinity& a, const api::NodeAffinity& b) {
  return Eq(a.required, b.required) && Eq(a.preferred, b.preferred);
}

bool Eq(const api::PodAffinityTerm& a, const api::PodAffinityTerm& b) {
  return Eq(a.label_selector, b.label_selector) && a.namespaces == b.namespaces &&
         a.topology_key == b.topology_key && Eq(a.namespace_selector, b.namespace_selector) &&
         a.match_label_keys == b.match_label_keys && a.mismatch_label_keys == b.mismatch_label_keys;
}

bool Eq(const api::WeightedPodAffinityTerm& a, const api::WeightedPodAffinityTerm& b) {
  return a.weight == b.weight && Eq(a.term, b.term);
}

bool Eq(const api::PodAffinity& a, const api::PodAffinity& b) {
  return Eq(a.required, b.required) && Eq(a.preferred, b.preferred);
}

bool Eq(const api::Affinity& a, const api::Affinity& b) {
  return Eq(a.node_affinity, b.node_affinity) && Eq(a.pod_affinity, b.pod_affinity) &&
         Eq(a.pod_anti_affinity, b.pod_anti_affinity);
}

bool Eq(const api::Toleration& a, const api::Toleration& b) {
  return a.key == b.key && a.op == b.op && a.value == b.value && a.effect == b.effect &&
         a.toleration_seconds == b.toleration_seconds;
}

bool Eq(const api::TopologySpreadConstraint& a, const api::TopologySpreadConstraint& b) {
  return a.max_skew == b.max_skew && a.topology_key == b.topology_key &&
         a.when_unsatisfiable == b.when_unsatisfiable && Eq(a.label_selector, b.label_selector) &&
         a.min_domains == b.min_domains && a.node_affinity_policy == b.node_affinity_policy &&
         a.node_taints_policy == b.node_taints_policy && a.match_label_keys == b.match_label_keys;
}

bool Eq(const api::ContainerPort& a, const api::ContainerPort& b) {
  return a.container_port == b.container_port && a.host_port == b.host_port &&
         a.protocol == b.protocol && a.host_ip == b.host_ip;
}

bool Eq(const api::ResourceRequirements& a, const api::ResourceRequirements& b) {
  return a.requests == b.requests && a.limits == b.limits &&
         a.has_cpu_request == b.has_cpu_request && a.has_memory_request == b.has_memory_request;
}

bool Eq(const api::Container& a, const api::Container& b) {
  return a.name == b.name && a.image == b.image && Eq(a.resources, b.resources) &&
         Eq(a.ports, b.ports) && a.restartable == b.restartable;
}

bool Eq(const api::Volume& a, const api::Volume& b) {
  return a.name == b.name && a.source == b.source && a.claim_name == b.claim_name &&
         a.read_only == b.read_only;
}

bool MetaEq(const api::ObjectMeta& a, const api::ObjectMeta& b) {
  // resource_version and generation are left out on purpose: they change on every write.
  return a.name == b.name && a.namespace_ == b.namespace_ && a.uid == b.uid &&
         a.creation_timestamp == b.creation_timestamp &&
         a.deletion_timestamp == b.deletion_timestamp && a.labels == b.labels &&
         a.annotations == b.annotations && Eq(a.owner_references, b.owner_references);
}

bool SpecEq(const api::PodSpec& a, const api::PodSpec& b) {
  return a.scheduler_name == b.scheduler_name && a.node_name == b.node_name &&
         a.priority == b.priority && a.priority_class_name == b.priority_class_name &&
         a.preemption_policy == b.preemption_policy && Eq(a.containers, b.containers) &&
         Eq(a.init_containers, b.init_containers) && a.overhead == b.overhead &&
         Eq(a.resources, b.resources) && a.node_selector == b.node_selector &&
         Eq(a.affinity, b.affinity) && Eq(a.tolerations, b.tolerations) &&
         Eq(a.topology_spread_constraints, b.topology_spread_constraints) &&
         a.scheduling_gates == b.scheduling_gates && Eq(a.volumes, b.volumes) &&
         a.host_network == b.host_network;
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
  // Nothing specific: the generic Update reaches only plugins that registered update actions.
  if (events.empty()) add(framework::kUpdate);
  return events;
}

bool IsPodUpdated(const api::Pod& old_pod, const api::Pod& new_pod) {
  if (&old_pod == &new_pod) return false;
  return !MetaEq(old_pod.meta, new_pod.meta) || !SpecEq(old_pod.spec, new_pod.spec);
}

}  // namespace berth::queue
