#include "pkg/plugins/podtopologyspread/podtopologyspread.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/noderesources/resource_allocation.h"
#include "pkg/plugins/podtopologyspread/common.h"

namespace berth::plugins::podtopologyspread {
namespace {

using framework::ArgsErrors;
using nlohmann::json;

constexpr std::string_view kDoNotSchedule = "DoNotSchedule";
constexpr std::string_view kScheduleAnyway = "ScheduleAnyway";

api::TopologySpreadConstraint SystemConstraint(std::string_view key, int32_t max_skew) {
  api::TopologySpreadConstraint c;
  c.topology_key = std::string(key);
  c.max_skew = max_skew;
  c.when_unsatisfiable = api::WhenUnsatisfiable::kScheduleAnyway;
  return c;
}

// Checks what upstream's validation checks of one default constraint, from its JSON (so that an
// absent maxSkew reads as 0, as in Go), and decodes it when it has the right shape.
void ParseDefaultConstraint(const json& item, const std::string& path, ArgsErrors& errors,
                            std::vector<api::TopologySpreadConstraint>* out) {
  if (!item.is_object()) {
    errors.Invalid(path, item, "must be an object");
    return;
  }
  bool ok = true;
  auto max_skew = item.find("maxSkew");
  if (max_skew == item.end() || max_skew->is_null()) {
    errors.Invalid(path + ".maxSkew", 0, "not in valid range (0, inf)");
    ok = false;
  } else if (max_skew->is_number_integer() && max_skew->get<int64_t>() <= 0) {
    errors.Invalid(path + ".maxSkew", *max_skew, "not in valid range (0, inf)");
    ok = false;
  }
  auto key = item.find("topologyKey");
  if (key == item.end() || key->is_null() || (key->is_string() && key->empty())) {
    errors.Required(path + ".topologyKey", "can not be empty");
    ok = false;
  } else if (key->is_string() && !noderesources::IsQualifiedName(key->get<std::string>())) {
    errors.Invalid(path + ".topologyKey", *key, "must be a qualified name");
    ok = false;
  }
  auto when = item.find("whenUnsatisfiable");
  if (when == item.end() || when->is_null() || (when->is_string() && when->empty())) {
    errors.Required(path + ".whenUnsatisfiable", "can not be empty");
    ok = false;
  } else if (when->is_string() && *when != kDoNotSchedule && *when != kScheduleAnyway) {
    errors.NotSupported(path + ".whenUnsatisfiable", *when, {kDoNotSchedule, kScheduleAnyway});
    ok = false;
  }
  auto selector = item.find("labelSelector");
  if (selector != item.end() && !selector->is_null()) {
    errors.Forbidden(path + ".labelSelector",
                     "constraint must not define a selector, as they deduced for each pod");
    ok = false;
  }
  if (!ok) return;
  try {
    out->push_back(api::DecodeTopologySpreadConstraint(item, path));
  } catch (const api::DecodeError& e) {
    errors.Add(e);
  }
}

// A requirement that a label equals `value` (a matchLabels entry).
api::Requirement Equals(const std::string& key, const std::string& value) {
  api::Requirement r;
  r.key = key;
  r.op = api::SelectorOperator::kIn;
  r.values = {value};
  return r;
}

// The pod's constraints with `action`, resolved against its labels.
std::vector<Constraint> ResolveConstraints(
    const std::vector<api::TopologySpreadConstraint>& constraints, const api::Labels& pod_labels,
    api::WhenUnsatisfiable action) {
  std::vector<Constraint> out;
  for (const api::TopologySpreadConstraint& c : constraints) {
    if (c.when_unsatisfiable != action) continue;
    Constraint& resolved = out.emplace_back();
    resolved.max_skew = c.max_skew;
    resolved.topology_key = c.topology_key;
    resolved.selector = c.label_selector;
    // The scheduler adds the pod's values of matchLabelKeys itself, whether or not the apiserver
    // already merged them into the selector (a repeated requirement changes nothing). Without a
    // labelSelector the constraint matches nothing either way.
    if (resolved.selector && !c.match_label_keys.empty()) {
      std::vector<api::Requirement> added;
      for (const std::string& key : c.match_label_keys) {
        if (const std::string* value = pod_labels.Find(key)) added.push_back(Equals(key, *value));
      }
      auto& requirements = resolved.selector->requirements;
      requirements.insert(requirements.begin(), added.begin(), added.end());
    }
    resolved.min_domains = c.min_domains.value_or(1);
    resolved.node_affinity_policy = c.node_affinity_policy;
    resolved.node_taints_policy = c.node_taints_policy;
  }
  return out;
}

bool AnySelectorMatches(const std::vector<Constraint>& constraints, const api::Labels& labels) {
  return std::any_of(constraints.begin(), constraints.end(),
                     [&](const Constraint& c) { return c.Matches(labels); });
}

// Whether a label change moved the pod into or out of some constraint's selector.
framework::QueueingHint AfterLabelChange(const api::Pod& before, const api::Pod& after,
                                         const std::vector<Constraint>& constraints) {
  if (before.meta.labels == after.meta.labels) return framework::QueueingHint::kSkip;
  for (const Constraint& c : constraints) {
    if (c.Matches(before.meta.labels) != c.Matches(after.meta.labels)) {
      return framework::QueueingHint::kQueue;
    }
  }
  return framework::QueueingHint::kSkip;
}

// A pod counts for spreading once it is on (or nominated to) a node, and only in its namespace.
bool InvolvedInSpreading(const api::Pod& other, const api::Pod& pod) {
  if (other.spec.node_name.empty() && other.status.nominated_node_name.empty()) return false;
  return other.meta.namespace_ == pod.meta.namespace_;
}

const api::OwnerReference* ControllerOf(const api::Pod& pod) {
  for (const api::OwnerReference& ref : pod.meta.owner_references) {
    if (ref.controller) return &ref;
  }
  return nullptr;
}

// Adds `labels` to `set` (a later value of a key replaces an earlier one).
void MergeLabels(api::StringMap& set, const api::StringMap& labels) {
  for (const auto& [key, value] : labels) set.Set(key, value);
}

api::LabelSelector FromSet(const api::StringMap& set) {
  api::LabelSelector selector;
  for (const auto& [key, value] : set) selector.requirements.push_back(Equals(key, value));
  return selector;
}

}  // namespace

const std::vector<api::TopologySpreadConstraint>& SystemDefaultConstraints() {
  static const std::vector<api::TopologySpreadConstraint> constraints = {
      SystemConstraint(kHostnameKey, 3),
      SystemConstraint(kZoneKey, 5),
  };
  return constraints;
}

Args ParseArgs(const json& args) {
  ArgsErrors errors;
  Args parsed;
  if (errors.CheckObject(args, {"defaultConstraints", "defaultingType"})) {
    bool type_supported = true;
    auto type = args.find("defaultingType");
    if (type != args.end() && !type->is_null()) {
      const std::string text = type->is_string() ? type->get<std::string>() : type->dump();
      if (text == "List") {
        parsed.defaulting_type = DefaultingType::kList;
      } else if (text != "System" && !(type->is_string() && text.empty())) {
        type_supported = false;
        errors.NotSupported("defaultingType", text, {"System", "List"});
      }
    }
    auto list = args.find("defaultConstraints");
    const bool has_constraints = list != args.end() && list->is_array() && !list->empty();
    if (parsed.defaulting_type == DefaultingType::kSystem && has_constraints && type_supported) {
      errors.Invalid("defaultingType", "System", "when .defaultConstraints are not empty");
    }
    if (list != args.end() && !list->is_null()) {
      if (!list->is_array()) {
        errors.Invalid("defaultConstraints", *list, "must be a list");
      } else {
        for (size_t i = 0; i < list->size(); i++) {
          const std::string path = framework::IndexField("defaultConstraints", i);
          const size_t before = parsed.default_constraints.size();
          ParseDefaultConstraint((*list)[i], path, errors, &parsed.default_constraints);
          if (parsed.default_constraints.size() == before) continue;
          const api::TopologySpreadConstraint& c = parsed.default_constraints.back();
          for (size_t j = 0; j + 1 < parsed.default_constraints.size(); j++) {
            const api::TopologySpreadConstraint& other = parsed.default_constraints[j];
            if (other.topology_key == c.topology_key &&
                other.when_unsatisfiable == c.when_unsatisfiable) {
              const std::string_view action =
                  c.when_unsatisfiable == api::WhenUnsatisfiable::kDoNotSchedule ? kDoNotSchedule
                                                                                 : kScheduleAnyway;
              errors.Duplicate(path, "{" + c.topology_key + ", " + std::string(action) + "}");
              break;
            }
          }
        }
      }
    }
  }
  errors.ThrowIfAny();
  return parsed;
}

api::LabelSelector DefaultSelector(const api::Pod& pod, const OwnerListers& listers) {
  api::StringMap set;
  if (listers.services) {
    for (const auto& service : listers.services->List(pod.meta.namespace_)) {
      // A Service without a selector selects nothing; one with an empty selector everything.
      if (!service->selector) continue;
      if (FromSet(*service->selector).Matches(pod.meta.labels)) {
        MergeLabels(set, *service->selector);
      }
    }
  }
  api::LabelSelector selector = FromSet(set);
  const api::OwnerReference* owner = ControllerOf(pod);
  if (owner == nullptr) return selector;
  auto add = [&](const std::optional<api::LabelSelector>& owner_selector) {
    // A controller without a selector adds nothing (upstream's Nothing selector has no
    // requirements to add).
    if (!owner_selector) return;
    selector.requirements.insert(selector.requirements.end(), owner_selector->requirements.begin(),
                                 owner_selector->requirements.end());
  };
  const std::string& api_version = owner->api_version;
  if (api_version == "v1" && owner->kind == "ReplicationController") {
    if (!listers.replication_controllers) return selector;
    if (auto rc = listers.replication_controllers->Get(pod.meta.namespace_, owner->name)) {
      if (rc->selector) MergeLabels(set, *rc->selector);
      selector = FromSet(set);
    }
  } else if (api_version == "apps/v1" && owner->kind == "ReplicaSet") {
    if (!listers.replica_sets) return selector;
    if (auto rs = listers.replica_sets->Get(pod.meta.namespace_, owner->name)) add(rs->selector);
  } else if (api_version == "apps/v1" && owner->kind == "StatefulSet") {
    if (!listers.stateful_sets) return selector;
    if (auto ss = listers.stateful_sets->Get(pod.meta.namespace_, owner->name)) add(ss->selector);
  }
  return selector;
}

PodTopologySpread::PodTopologySpread(Args args, framework::Handle& handle)
    : default_constraints_(args.defaulting_type == DefaultingType::kSystem
                               ? SystemDefaultConstraints()
                               : std::move(args.default_constraints)),
      system_defaulted_(args.defaulting_type == DefaultingType::kSystem),
      handle_(handle) {
  if (!default_constraints_.empty()) {
    // Asking for the listers here is what makes the scheduler watch these kinds and wait for
    // them before the first cycle.
    informer::SharedInformerFactory& factory = handle.SharedInformerFactory();
    listers_.services = factory.ListerFor<api::Service>();
    listers_.replication_controllers = factory.ListerFor<api::ReplicationController>();
    listers_.replica_sets = factory.ListerFor<api::ReplicaSet>();
    listers_.stateful_sets = factory.ListerFor<api::StatefulSet>();
  }
}

std::vector<Constraint> PodTopologySpread::DefaultConstraints(const api::Pod& pod,
                                                              api::WhenUnsatisfiable action) const {
  std::vector<Constraint> constraints =
      ResolveConstraints(default_constraints_, pod.meta.labels, action);
  if (constraints.empty()) return constraints;
  api::LabelSelector selector = DefaultSelector(pod, listers_);
  if (selector.Empty()) return {};
  for (Constraint& c : constraints) c.selector = selector;
  return constraints;
}

std::vector<Constraint> PodTopologySpread::GetConstraints(const api::Pod& pod,
                                                          api::WhenUnsatisfiable action) const {
  if (!pod.spec.topology_spread_constraints.empty()) {
    return ResolveConstraints(pod.spec.topology_spread_constraints, pod.meta.labels, action);
  }
  return DefaultConstraints(pod, action);
}

std::vector<framework::ClusterEventWithHint> PodTopologySpread::EventsToRegister() const {
  using framework::EventResource;
  return {
      {{EventResource::kPod, framework::kAdd | framework::kUpdatePodLabel | framework::kDelete,
        "AssignedPodAddOrUpdatePodLabelOrDelete"},
       [this](const api::Pod& pod, const framework::EventObjects& event) {
         return IsSchedulableAfterAssignedPodChange(pod, event);
       }},
      {{EventResource::kUnscheduledPod,
        framework::kUpdatePodTolerations | framework::kUpdatePodLabel,
        "UnscheduledPodUpdatePodTolerationsOrUpdatePodLabel"},
       [this](const api::Pod& pod, const framework::EventObjects& event) {
         return IsSchedulableAfterTargetPodChange(pod, event);
       }},
      {{EventResource::kNode,
        framework::kAdd | framework::kDelete | framework::kUpdateNodeLabel |
            framework::kUpdateNodeTaint,
        "NodeAddOrDeleteOrUpdateNodeLabelOrUpdateNodeTaint"},
       [this](const api::Pod& pod, const framework::EventObjects& event) {
         return IsSchedulableAfterNodeChange(pod, event);
       }},
  };
}

framework::QueueingHint PodTopologySpread::IsSchedulableAfterAssignedPodChange(
    const api::Pod& pod, const framework::EventObjects& event) const {
  const api::Pod* before = event.old_pod.get();
  const api::Pod* after = event.new_pod.get();
  if (before == nullptr && after == nullptr) return framework::QueueingHint::kQueue;
  if ((after && !InvolvedInSpreading(*after, pod)) ||
      (before && !InvolvedInSpreading(*before, pod))) {
    return framework::QueueingHint::kSkip;
  }
  const std::vector<Constraint> constraints =
      GetConstraints(pod, api::WhenUnsatisfiable::kDoNotSchedule);
  if (before && after) return AfterLabelChange(*before, *after, constraints);
  const api::Pod& changed = after ? *after : *before;
  return AnySelectorMatches(constraints, changed.meta.labels) ? framework::QueueingHint::kQueue
                                                              : framework::QueueingHint::kSkip;
}

framework::QueueingHint PodTopologySpread::IsSchedulableAfterTargetPodChange(
    const api::Pod& pod, const framework::EventObjects& event) const {
  if (!event.old_pod || !event.new_pod) return framework::QueueingHint::kQueue;
  const std::vector<Constraint> constraints =
      GetConstraints(pod, api::WhenUnsatisfiable::kDoNotSchedule);
  const bool honours_taints = std::any_of(
      constraints.begin(), constraints.end(),
      [](const Constraint& c) { return c.node_taints_policy == api::NodeInclusionPolicy::kHonor; });
  if (honours_taints && event.old_pod->spec.tolerations != event.new_pod->spec.tolerations) {
    return framework::QueueingHint::kQueue;
  }
  return AfterLabelChange(*event.old_pod, *event.new_pod, constraints);
}

framework::QueueingHint PodTopologySpread::IsSchedulableAfterNodeChange(
    const api::Pod& pod, const framework::EventObjects& event) const {
  const api::Node* before = event.old_node.get();
  const api::Node* after = event.new_node.get();
  if (before == nullptr && after == nullptr) return framework::QueueingHint::kQueue;
  const std::vector<Constraint> constraints =
      GetConstraints(pod, api::WhenUnsatisfiable::kDoNotSchedule);
  const bool before_matches = before && NodeHasAllKeys(before->meta.labels, constraints);
  const bool after_matches = after && NodeHasAllKeys(after->meta.labels, constraints);
  if (before && after) {
    if (before_matches != after_matches) return framework::QueueingHint::kQueue;
    if (!after_matches) return framework::QueueingHint::kSkip;
    for (const Constraint& c : constraints) {
      const std::string* old_value = before->meta.labels.Find(c.topology_key);
      const std::string* new_value = after->meta.labels.Find(c.topology_key);
      if (std::string_view(old_value ? *old_value : "") !=
          std::string_view(new_value ? *new_value : "")) {
        return framework::QueueingHint::kQueue;
      }
    }
    return before->spec.taints != after->spec.taints ? framework::QueueingHint::kQueue
                                                     : framework::QueueingHint::kSkip;
  }
  const bool matches = after ? after_matches : before_matches;
  return matches ? framework::QueueingHint::kQueue : framework::QueueingHint::kSkip;
}

framework::PluginPtr New(const json& args, framework::Handle& handle) {
  return std::make_shared<PodTopologySpread>(ParseArgs(args), handle);
}

}  // namespace berth::plugins::podtopologyspread
