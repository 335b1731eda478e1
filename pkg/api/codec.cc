#include "pkg/api/codec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/field_path.h"
#include "pkg/api/json_read.h"
#include "pkg/api/quantity.h"
#include "pkg/api/requests.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;

using Path = FieldPath;

// The readers shared with the other decoders (pkg/api/resources_codec.cc).
using json_read::DecodeQuantity;
using json_read::ExpectObject;
using json_read::FailType;
using json_read::GetObject;
using json_read::Member;
using json_read::ParseEnum;
using json_read::ReadArray;
using json_read::ReadBool;
using json_read::ReadEnum;
using json_read::ReadInt32;
using json_read::ReadInt64;
using json_read::ReadOptionalString;
using json_read::ReadString;
using json_read::ReadStringList;
using json_read::ReadStringMap;

constexpr std::array<std::pair<std::string_view, SelectorOperator>, 6> kSelectorOperators = {{
    {"In", SelectorOperator::kIn},
    {"NotIn", SelectorOperator::kNotIn},
    {"Exists", SelectorOperator::kExists},
    {"DoesNotExist", SelectorOperator::kDoesNotExist},
    {"Gt", SelectorOperator::kGt},
    {"Lt", SelectorOperator::kLt},
}};

constexpr std::array<std::pair<std::string_view, TaintEffect>, 3> kTaintEffects = {{
    {"NoSchedule", TaintEffect::kNoSchedule},
    {"PreferNoSchedule", TaintEffect::kPreferNoSchedule},
    {"NoExecute", TaintEffect::kNoExecute},
}};

constexpr std::array<std::pair<std::string_view, TaintEffect>, 4> kTolerationEffects = {{
    {"", TaintEffect::kAll},
    {"NoSchedule", TaintEffect::kNoSchedule},
    {"PreferNoSchedule", TaintEffect::kPreferNoSchedule},
    {"NoExecute", TaintEffect::kNoExecute},
}};

// "Equal" before "": the first name of a value is the one written back (TolerationOperatorName).
constexpr std::array<std::pair<std::string_view, TolerationOperator>, 3> kTolerationOperators = {{
    {"Equal", TolerationOperator::kEqual},
    {"", TolerationOperator::kEqual},
    {"Exists", TolerationOperator::kExists},
}};

constexpr std::array<std::pair<std::string_view, PreemptionPolicy>, 2> kPreemptionPolicies = {{
    {"PreemptLowerPriority", PreemptionPolicy::kPreemptLowerPriority},
    {"Never", PreemptionPolicy::kNever},
}};

constexpr std::array<std::pair<std::string_view, WhenUnsatisfiable>, 2> kWhenUnsatisfiable = {{
    {"DoNotSchedule", WhenUnsatisfiable::kDoNotSchedule},
    {"ScheduleAnyway", WhenUnsatisfiable::kScheduleAnyway},
}};

constexpr std::array<std::pair<std::string_view, NodeInclusionPolicy>, 2> kInclusionPolicies = {{
    {"Honor", NodeInclusionPolicy::kHonor},
    {"Ignore", NodeInclusionPolicy::kIgnore},
}};

// ---- Resources ----

ResourceList DecodeResourceListAt(const json& value, const Path& path) {
  ResourceList list;
  if (value.is_null()) {
    return list;
  }
  ExpectObject(value, path);
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string& name = it.key();
    Path entry_path = path.Field(name);
    list.Set(name, ResourceAmount(name, DecodeQuantity(*it, entry_path)));
  }
  return list;
}

void DecodeRequirements(const json& value, const Path& path, ResourceRequirements* out) {
  ExpectObject(value, path);
  Path requests_path = path.Field("requests");
  if (const json* requests = Member(value, requests_path)) {
    out->requests = DecodeResourceListAt(*requests, requests_path);
    out->has_cpu_request = requests->contains(kResourceCPU);
    out->has_memory_request = requests->contains(kResourceMemory);
  }
  Path limits_path = path.Field("limits");
  if (const json* limits = Member(value, limits_path)) {
    out->limits = DecodeResourceListAt(*limits, limits_path);
  }
}

// ---- Selectors ----

enum class SelectorKind { kLabel, kNodeExpression, kNodeField };

Requirement DecodeRequirement(const json& value, const Path& path, SelectorKind kind) {
  ExpectObject(value, path);
  Requirement r;
  Path key_path = path.Field("key");
  if (!ReadString(value, key_path, &r.key) || r.key.empty()) {
    FailAt(key_path, "required");
  }
  if (kind == SelectorKind::kNodeField && r.key != "metadata.name") {
    FailAt(key_path, "unsupported field selector key \"" + r.key + "\"");
  }

  Path op_path = path.Field("operator");
  std::string op;
  if (!ReadString(value, op_path, &op)) {
    FailAt(op_path, "required");
  }
  r.op = ParseEnum(op, kSelectorOperators, op_path);
  const bool is_set_op = r.op == SelectorOperator::kIn || r.op == SelectorOperator::kNotIn;
  const bool is_number_op = r.op == SelectorOperator::kGt || r.op == SelectorOperator::kLt;
  if ((kind == SelectorKind::kLabel && is_number_op) ||
      (kind == SelectorKind::kNodeField && !is_set_op)) {
    FailAt(op_path, "operator \"" + op + "\" is not supported here");
  }

  Path values_path = path.Field("values");
  ReadStringList(value, values_path, &r.values);
  if (is_set_op && r.values.empty()) {
    FailAt(values_path, "operator " + op + " needs at least one value");
  }
  if (!is_set_op && !is_number_op && !r.values.empty()) {
    FailAt(values_path, "operator " + op + " takes no values");
  }
  if (is_number_op) {
    if (r.values.size() != 1) {
      FailAt(values_path, "operator " + op + " needs exactly one value");
    }
    if (!ParseInt64(r.values[0], &r.number)) {
      Path value_path = values_path.Index(0);
      FailAt(value_path, "\"" + r.values[0] + "\" is not an integer");
    }
  }
  std::sort(r.values.begin(), r.values.end());
  r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
  return r;
}

LabelSelector DecodeLabelSelectorAt(const json& value, const Path& path) {
  ExpectObject(value, path);
  LabelSelector selector;
  Path labels_path = path.Field("matchLabels");
  if (const json* labels = GetObject(value, labels_path)) {
    selector.requirements.reserve(labels->size());
    for (auto it = labels->begin(); it != labels->end(); ++it) {
      if (!it->is_string()) {
        Path entry_path = labels_path.Field(it.key());
        FailType(entry_path, "string", *it);
      }
      Requirement& r = selector.requirements.emplace_back();
      r.key = it.key();
      r.op = SelectorOperator::kIn;
      r.values.push_back(it->get_ref<const std::string&>());
    }
  }
  ReadArray(value, path.Field("matchExpressions"), &selector.requirements,
            [](const json& e, const Path& p, Requirement* r) {
              *r = DecodeRequirement(e, p, SelectorKind::kLabel);
            });
  return selector;
}

// Reads an optional selector member: absent or null stays std::nullopt (matches nothing).
void ReadLabelSelector(const json& parent, const Path& field, std::optional<LabelSelector>* out) {
  if (const json* value = Member(parent, field)) {
    *out = DecodeLabelSelectorAt(*value, field);
  }
}

NodeSelectorTerm DecodeNodeSelectorTermAt(const json& value, const Path& path) {
  ExpectObject(value, path);
  NodeSelectorTerm term;
  ReadArray(value, path.Field("matchExpressions"), &term.match_expressions,
            [](const json& e, const Path& p, Requirement* r) {
              *r = DecodeRequirement(e, p, SelectorKind::kNodeExpression);
            });
  ReadArray(value, path.Field("matchFields"), &term.match_fields,
            [](const json& e, const Path& p, Requirement* r) {
              *r = DecodeRequirement(e, p, SelectorKind::kNodeField);
            });
  return term;
}

// ---- Taints and tolerations ----

Toleration DecodeTolerationAt(const json& value, const Path& path) {
  ExpectObject(value, path);
  Toleration t;
  ReadString(value, path.Field("key"), &t.key);
  ReadEnum(value, path.Field("operator"), kTolerationOperators, &t.op);
  ReadString(value, path.Field("value"), &t.value);
  ReadEnum(value, path.Field("effect"), kTolerationEffects, &t.effect);
  int64_t seconds = 0;
  if (ReadInt64(value, path.Field("tolerationSeconds"), &seconds)) {
    t.toleration_seconds = seconds;
  }
  return t;
}

Taint DecodeTaintAt(const json& value, const Path& path) {
  ExpectObject(value, path);
  Taint t;
  Path key_path = path.Field("key");
  if (!ReadString(value, key_path, &t.key) || t.key.empty()) {
    FailAt(key_path, "required");
  }
  ReadString(value, path.Field("value"), &t.value);
  Path effect_path = path.Field("effect");
  std::string effect;
  if (!ReadString(value, effect_path, &effect)) {
    FailAt(effect_path, "required");
  }
  t.effect = ParseEnum(effect, kTaintEffects, effect_path);
  return t;
}

// ---- Metadata ----

void DecodeCondition(const json& value, const Path& path, Condition* out) {
  ExpectObject(value, path);
  ReadString(value, path.Field("type"), &out->type);
  ReadString(value, path.Field("status"), &out->status);
  ReadString(value, path.Field("reason"), &out->reason);
  ReadString(value, path.Field("message"), &out->message);
}

void DecodeOwnerReference(const json& value, const Path& path, OwnerReference* out) {
  ExpectObject(value, path);
  ReadString(value, path.Field("apiVersion"), &out->api_version);
  ReadString(value, path.Field("kind"), &out->kind);
  ReadString(value, path.Field("name"), &out->name);
  ReadString(value, path.Field("uid"), &out->uid);
  ReadBool(value, path.Field("controller"), &out->controller);
}

void DecodeMeta(const json& object, const Path& root, ObjectMeta* meta) {
  Path path = root.Field("metadata");
  Path name_path = path.Field("name");
  const json* m = GetObject(object, path);
  if (m == nullptr || !ReadString(*m, name_path, &meta->name) || meta->name.empty()) {
    FailAt(name_path, "required");
  }
  ReadString(*m, path.Field("namespace"), &meta->namespace_);
  ReadString(*m, path.Field("uid"), &meta->uid);
  ReadString(*m, path.Field("resourceVersion"), &meta->resource_version);
  ReadInt64(*m, path.Field("generation"), &meta->generation);
  ReadString(*m, path.Field("creationTimestamp"), &meta->creation_timestamp);
  std::string deletion;
  if (ReadString(*m, path.Field("deletionTimestamp"), &deletion)) {
    meta->deletion_timestamp = std::move(deletion);
  }
  ReadStringMap(*m, path.Field("labels"), &meta->labels);
  ReadStringMap(*m, path.Field("annotations"), &meta->annotations, kLastAppliedAnnotation);
  ReadArray(*m, path.Field("ownerReferences"), &meta->owner_references, DecodeOwnerReference);
}

// ---- Pod ----

void DecodeContainerPort(const json& value, const Path& path, ContainerPort* out) {
  ExpectObject(value, path);
  ReadInt32(value, path.Field("containerPort"), &out->container_port);
  ReadInt32(value, path.Field("hostPort"), &out->host_port);
  ReadString(value, path.Field("protocol"), &out->protocol);
  ReadString(value, path.Field("hostIP"), &out->host_ip);
}

// Whether some restartPolicyRules entry of a container has action RestartAllContainers.
bool ReadRestartsAllContainers(const json& container, const Path& path) {
  std::vector<std::string> actions;
  ReadArray(container, path.Field("restartPolicyRules"), &actions,
            [](const json& e, const Path& p, std::string* action) {
              ExpectObject(e, p);
              ReadString(e, p.Field("action"), action);
            });
  return std::find(actions.begin(), actions.end(), "RestartAllContainers") != actions.end();
}

// Whether some volumeMounts entry of a container sets bindMountOptions.
bool ReadSetsBindMountOptions(const json& container, const Path& path) {
  std::vector<size_t> option_counts;
  ReadArray(container, path.Field("volumeMounts"), &option_counts,
            [](const json& e, const Path& p, size_t* count) {
              ExpectObject(e, p);
              std::vector<std::string> options;
              ReadStringList(e, p.Field("bindMountOptions"), &options);
              *count = options.size();
            });
  return std::any_of(option_counts.begin(), option_counts.end(),
                     [](size_t count) { return count > 0; });
}

void DecodeContainer(const json& value, const Path& path, bool init, Container* out) {
  ExpectObject(value, path);
  ReadString(value, path.Field("name"), &out->name);
  ReadString(value, path.Field("image"), &out->image);
  Path resources_path = path.Field("resources");
  if (const json* resources = Member(value, resources_path)) {
    DecodeRequirements(*resources, resources_path, &out->resources);
  }
  ReadArray(value, path.Field("ports"), &out->ports, DecodeContainerPort);
  std::string restart_policy;
  if (ReadString(value, path.Field("restartPolicy"), &restart_policy)) {
    out->restartable = init && restart_policy == "Always";
  }
  out->restarts_all_containers = ReadRestartsAllContainers(value, path);
  out->bind_mount_options = ReadSetsBindMountOptions(value, path);
}

PodAffinityTerm DecodePodAffinityTerm(const json& value, const Path& path) {
  ExpectObject(value, path);
  PodAffinityTerm term;
  ReadLabelSelector(value, path.Field("labelSelector"), &term.label_selector);
  ReadStringList(value, path.Field("namespaces"), &term.namespaces);
  ReadString(value, path.Field("topologyKey"), &term.topology_key);
  ReadLabelSelector(value, path.Field("namespaceSelector"), &term.namespace_selector);
  ReadStringList(value, path.Field("matchLabelKeys"), &term.match_label_keys);
  ReadStringList(value, path.Field("mismatchLabelKeys"), &term.mismatch_label_keys);
  return term;
}

PodAffinity DecodePodAffinity(const json& value, const Path& path) {
  PodAffinity affinity;
  ReadArray(
      value, path.Field("requiredDuringSchedulingIgnoredDuringExecution"), &affinity.required,
      [](const json& e, const Path& p, PodAffinityTerm* t) { *t = DecodePodAffinityTerm(e, p); });
  ReadArray(value, path.Field("preferredDuringSchedulingIgnoredDuringExecution"),
            &affinity.preferred, [](const json& e, const Path& p, WeightedPodAffinityTerm* t) {
              ExpectObject(e, p);
              ReadInt32(e, p.Field("weight"), &t->weight);
              Path term_path = p.Field("podAffinityTerm");
              if (const json* term = Member(e, term_path)) {
                t->term = DecodePodAffinityTerm(*term, term_path);
              }
            });
  return affinity;
}

NodeAffinity DecodeNodeAffinity(const json& value, const Path& path) {
  NodeAffinity affinity;
  Path required_path = path.Field("requiredDuringSchedulingIgnoredDuringExecution");
  if (const json* required = GetObject(value, required_path)) {
    NodeSelector selector;
    ReadArray(*required, required_path.Field("nodeSelectorTerms"), &selector.terms,
              [](const json& e, const Path& p, NodeSelectorTerm* t) {
                *t = DecodeNodeSelectorTermAt(e, p);
              });
    affinity.required = std::move(selector);
  }
  ReadArray(value, path.Field("preferredDuringSchedulingIgnoredDuringExecution"),
            &affinity.preferred, [](const json& e, const Path& p, PreferredSchedulingTerm* t) {
              ExpectObject(e, p);
              ReadInt32(e, p.Field("weight"), &t->weight);
              Path preference_path = p.Field("preference");
              if (const json* preference = Member(e, preference_path)) {
                t->preference = DecodeNodeSelectorTermAt(*preference, preference_path);
              }
            });
  return affinity;
}

Affinity DecodeAffinityAt(const json& value, const Path& path) {
  Affinity affinity;
  Path node_path = path.Field("nodeAffinity");
  if (const json* node = GetObject(value, node_path)) {
    affinity.node_affinity = DecodeNodeAffinity(*node, node_path);
  }
  Path pod_path = path.Field("podAffinity");
  if (const json* pod = GetObject(value, pod_path)) {
    affinity.pod_affinity = DecodePodAffinity(*pod, pod_path);
  }
  Path anti_path = path.Field("podAntiAffinity");
  if (const json* anti = GetObject(value, anti_path)) {
    affinity.pod_anti_affinity = DecodePodAffinity(*anti, anti_path);
  }
  return affinity;
}

void DecodeSpreadConstraint(const json& value, const Path& path, TopologySpreadConstraint* out) {
  ExpectObject(value, path);
  ReadInt32(value, path.Field("maxSkew"), &out->max_skew);
  ReadString(value, path.Field("topologyKey"), &out->topology_key);
  ReadEnum(value, path.Field("whenUnsatisfiable"), kWhenUnsatisfiable, &out->when_unsatisfiable);
  ReadLabelSelector(value, path.Field("labelSelector"), &out->label_selector);
  int32_t min_domains = 0;
  if (ReadInt32(value, path.Field("minDomains"), &min_domains)) {
    out->min_domains = min_domains;
  }
  ReadEnum(value, path.Field("nodeAffinityPolicy"), kInclusionPolicies, &out->node_affinity_policy);
  ReadEnum(value, path.Field("nodeTaintsPolicy"), kInclusionPolicies, &out->node_taints_policy);
  ReadStringList(value, path.Field("matchLabelKeys"), &out->match_label_keys);
}

void DecodeVolume(const json& value, const Path& path, Volume* out) {
  ExpectObject(value, path);
  ReadString(value, path.Field("name"), &out->name);
  // A volume object holds its name plus exactly one source member.
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it.key() == "name" || it->is_null()) {
      continue;
    }
    out->source = it.key();
    break;
  }
  // The sources whose members a volume plugin reads; any other is kept by name only.
  static constexpr std::string_view kReadSources[] = {"persistentVolumeClaim",
                                                      "gcePersistentDisk",
                                                      "awsElasticBlockStore",
                                                      "cinder",
                                                      "portworxVolume",
                                                      "iscsi",
                                                      "rbd",
                                                      "azureDisk",
                                                      "csi"};
  if (std::find(std::begin(kReadSources), std::end(kReadSources), out->source) ==
      std::end(kReadSources)) {
    return;
  }
  const Path source_path = path.Field(out->source);
  const json* source = GetObject(value, source_path);
  const auto disk = [&](std::string_view field) {
    ReadString(*source, source_path.Field(field), &out->disk);
  };
  const auto read_only = [&] { ReadBool(*source, source_path.Field("readOnly"), &out->read_only); };
  if (out->source == "persistentVolumeClaim") {
    ReadString(*source, source_path.Field("claimName"), &out->claim_name);
    read_only();
  } else if (out->source == "gcePersistentDisk") {
    disk("pdName");
    read_only();
  } else if (out->source == "awsElasticBlockStore" || out->source == "cinder" ||
             out->source == "portworxVolume") {
    disk("volumeID");
  } else if (out->source == "iscsi") {
    disk("iqn");
    read_only();
  } else if (out->source == "rbd") {
    disk("image");
    ReadStringList(*source, source_path.Field("monitors"), &out->rbd_monitors);
    ReadString(*source, source_path.Field("pool"), &out->rbd_pool);
    read_only();
  } else if (out->source == "azureDisk") {
    disk("diskURI");
  } else if (out->source == "csi") {
    ReadString(*source, source_path.Field("driver"), &out->csi_driver);
  }
}

void DecodePodSpec(const json& spec, const Path& path, PodSpec* out) {
  ReadString(spec, path.Field("schedulerName"), &out->scheduler_name);
  ReadString(spec, path.Field("nodeName"), &out->node_name);
  ReadInt32(spec, path.Field("priority"), &out->priority);
  ReadString(spec, path.Field("priorityClassName"), &out->priority_class_name);
  ReadEnum(spec, path.Field("preemptionPolicy"), kPreemptionPolicies, &out->preemption_policy);
  ReadArray(spec, path.Field("containers"), &out->containers,
            [](const json& e, const Path& p, Container* c) { DecodeContainer(e, p, false, c); });
  ReadArray(spec, path.Field("initContainers"), &out->init_containers,
            [](const json& e, const Path& p, Container* c) { DecodeContainer(e, p, true, c); });
  Path overhead_path = path.Field("overhead");
  if (const json* overhead = Member(spec, overhead_path)) {
    out->overhead = DecodeResourceListAt(*overhead, overhead_path);
  }
  Path resources_path = path.Field("resources");
  if (const json* resources = Member(spec, resources_path)) {
    DecodeRequirements(*resources, resources_path, &out->resources.emplace());
  }
  ReadStringMap(spec, path.Field("nodeSelector"), &out->node_selector);
  Path affinity_path = path.Field("affinity");
  if (const json* affinity = GetObject(spec, affinity_path)) {
    out->affinity = DecodeAffinityAt(*affinity, affinity_path);
  }
  ReadArray(spec, path.Field("tolerations"), &out->tolerations,
            [](const json& e, const Path& p, Toleration* t) { *t = DecodeTolerationAt(e, p); });
  ReadArray(spec, path.Field("topologySpreadConstraints"), &out->topology_spread_constraints,
            DecodeSpreadConstraint);
  ReadArray(spec, path.Field("schedulingGates"), &out->scheduling_gates,
            [](const json& e, const Path& p, std::string* name) {
              ExpectObject(e, p);
              ReadString(e, p.Field("name"), name);
            });
  ReadArray(spec, path.Field("volumes"), &out->volumes, DecodeVolume);
  ReadBool(spec, path.Field("hostNetwork"), &out->host_network);
  if (bool host_users = true; ReadBool(spec, path.Field("hostUsers"), &host_users)) {
    out->host_users = host_users;
  }
  std::vector<char> ephemeral_bind_mounts;
  ReadArray(spec, path.Field("ephemeralContainers"), &ephemeral_bind_mounts,
            [](const json& e, const Path& p, char* sets) {
              ExpectObject(e, p);
              *sets = ReadSetsBindMountOptions(e, p) ? 1 : 0;
            });
  out->ephemeral_bind_mount_options =
      std::find(ephemeral_bind_mounts.begin(), ephemeral_bind_mounts.end(), 1) !=
      ephemeral_bind_mounts.end();
  ReadArray(spec, path.Field("resourceClaims"), &out->resource_claims,
            [](const json& e, const Path& p, PodResourceClaim* claim) {
              ExpectObject(e, p);
              ReadString(e, p.Field("name"), &claim->name);
              ReadOptionalString(e, p.Field("resourceClaimName"), &claim->resource_claim_name);
              ReadOptionalString(e, p.Field("resourceClaimTemplateName"),
                                 &claim->resource_claim_template_name);
            });
  Path group_path = path.Field("schedulingGroup");
  if (const json* group = GetObject(spec, group_path)) {
    ReadString(*group, group_path.Field("podGroupName"), &out->scheduling_group.emplace());
  }
}

void DecodePodStatus(const json& status, const Path& path, PodStatus* out) {
  ReadString(status, path.Field("phase"), &out->phase);
  ReadArray(status, path.Field("conditions"), &out->conditions, DecodeCondition);
  ReadString(status, path.Field("startTime"), &out->start_time);
  ReadString(status, path.Field("nominatedNodeName"), &out->nominated_node_name);
  ReadArray(status, path.Field("resourceClaimStatuses"), &out->resource_claim_statuses,
            [](const json& e, const Path& p, PodResourceClaimStatus* claim) {
              ExpectObject(e, p);
              ReadString(e, p.Field("name"), &claim->name);
              ReadOptionalString(e, p.Field("resourceClaimName"), &claim->resource_claim_name);
            });
  Path extended_path = path.Field("extendedResourceClaimStatus");
  if (const json* extended = GetObject(status, extended_path)) {
    PodExtendedResourceClaimStatus& e = out->extended_resource_claim_status.emplace();
    ReadArray(*extended, extended_path.Field("requestMappings"), &e.request_mappings,
              [](const json& m, const Path& p, ContainerExtendedResourceRequest* mapping) {
                ExpectObject(m, p);
                ReadString(m, p.Field("containerName"), &mapping->container_name);
                ReadString(m, p.Field("resourceName"), &mapping->resource_name);
                ReadString(m, p.Field("requestName"), &mapping->request_name);
              });
    ReadString(*extended, extended_path.Field("resourceClaimName"), &e.resource_claim_name);
  }
}

// ---- Node ----

void DecodeImage(const json& value, const Path& path, ContainerImage* out) {
  ExpectObject(value, path);
  ReadStringList(value, path.Field("names"), &out->names);
  ReadInt64(value, path.Field("sizeBytes"), &out->size_bytes);
}

void DecodeNodeStatus(const json& status, const Path& path, NodeStatus* out) {
  Path capacity_path = path.Field("capacity");
  if (const json* capacity = Member(status, capacity_path)) {
    out->capacity = DecodeResourceListAt(*capacity, capacity_path);
  }
  Path allocatable_path = path.Field("allocatable");
  if (const json* allocatable = Member(status, allocatable_path)) {
    out->allocatable = DecodeResourceListAt(*allocatable, allocatable_path);
  }
  ReadArray(status, path.Field("images"), &out->images, DecodeImage);
  ReadArray(status, path.Field("conditions"), &out->conditions, DecodeCondition);
  ReadStringList(status, path.Field("declaredFeatures"), &out->declared_features);
}

}  // namespace

ResourceList DecodeResourceList(const json& object, const std::string& field) {
  Path path(field);
  return DecodeResourceListAt(object, path);
}

std::string_view SelectorOperatorName(SelectorOperator op) {
  return json_read::EnumName(kSelectorOperators, op);
}

LabelSelector DecodeLabelSelector(const json& object, const std::string& field) {
  Path path(field);
  return DecodeLabelSelectorAt(object, path);
}

NodeSelectorTerm DecodeNodeSelectorTerm(const json& object, const std::string& field) {
  Path path(field);
  return DecodeNodeSelectorTermAt(object, path);
}

NodeSelector DecodeNodeSelector(const json& object, const std::string& field) {
  Path path(field);
  ExpectObject(object, path);
  NodeSelector selector;
  ReadArray(object, path.Field("nodeSelectorTerms"), &selector.terms,
            [](const json& e, const Path& p, NodeSelectorTerm* t) {
              *t = DecodeNodeSelectorTermAt(e, p);
            });
  return selector;
}

Condition DecodeCondition(const json& object, const std::string& field) {
  Path path(field);
  Condition condition;
  DecodeCondition(object, path, &condition);
  return condition;
}

Toleration DecodeToleration(const json& object, const std::string& field) {
  Path path(field);
  return DecodeTolerationAt(object, path);
}

Taint DecodeTaint(const json& object, const std::string& field) {
  Path path(field);
  return DecodeTaintAt(object, path);
}

ObjectMeta DecodeObjectMeta(const json& object) {
  Path root("");
  ExpectObject(object, root);
  ObjectMeta meta;
  DecodeMeta(object, root, &meta);
  return meta;
}

Affinity DecodeAffinity(const json& object, const std::string& field) {
  Path path(field);
  ExpectObject(object, path);
  return DecodeAffinityAt(object, path);
}

TopologySpreadConstraint DecodeTopologySpreadConstraint(const json& object,
                                                        const std::string& field) {
  Path path(field);
  TopologySpreadConstraint constraint;
  DecodeSpreadConstraint(object, path, &constraint);
  return constraint;
}

int64_t ResourceAmount(std::string_view resource, const Quantity& quantity) {
  return resource == kResourceCPU ? quantity.MilliValue() : quantity.Value();
}

std::string_view TolerationOperatorName(TolerationOperator op) {
  return json_read::EnumName(kTolerationOperators, op);
}

std::string_view PreemptionPolicyName(PreemptionPolicy policy) {
  return json_read::EnumName(kPreemptionPolicies, policy);
}

std::string_view WhenUnsatisfiableName(WhenUnsatisfiable when) {
  return json_read::EnumName(kWhenUnsatisfiable, when);
}

std::string_view NodeInclusionPolicyName(NodeInclusionPolicy policy) {
  return json_read::EnumName(kInclusionPolicies, policy);
}

bool ParseTolerationOperator(std::string_view text, TolerationOperator* out) {
  return json_read::FindEnum(text, kTolerationOperators, out);
}

bool ParseTolerationEffect(std::string_view text, TaintEffect* out) {
  return json_read::FindEnum(text, kTolerationEffects, out);
}

bool ParseTaintEffect(std::string_view text, TaintEffect* out) {
  return json_read::FindEnum(text, kTaintEffects, out);
}

bool ParsePreemptionPolicy(std::string_view text, PreemptionPolicy* out) {
  return json_read::FindEnum(text, kPreemptionPolicies, out);
}

void FinishDecodedPod(Pod& pod) {
  // The apiserver defaults an empty scheduler name and port protocol the same way as missing ones.
  if (pod.spec.scheduler_name.empty()) {
    pod.spec.scheduler_name = "default-scheduler";
  }
  for (auto* containers : {&pod.spec.containers, &pod.spec.init_containers}) {
    for (Container& c : *containers) {
      for (ContainerPort& port : c.ports) {
        if (port.protocol.empty()) {
          port.protocol = "TCP";
        }
      }
    }
  }
  // Only PodScheduled (to skip redundant status patches) and DisruptionTarget (a victim of
  // preemption) are read by scheduling; the others (Ready, Initialized, ...) would be a large
  // share of a running pod's footprint.
  std::erase_if(pod.status.conditions, [](const Condition& c) {
    return c.type != "PodScheduled" && c.type != "DisruptionTarget";
  });
  pod.status.conditions.shrink_to_fit();
  ComputePodRequests(pod);
}

Pod DecodePod(const json& object) {
  Path root("");
  ExpectObject(object, root);
  Pod pod;
  DecodeMeta(object, root, &pod.meta);
  Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    DecodePodSpec(*spec, spec_path, &pod.spec);
  }
  Path status_path = root.Field("status");
  if (const json* status = GetObject(object, status_path)) {
    DecodePodStatus(*status, status_path, &pod.status);
  }
  FinishDecodedPod(pod);
  return pod;
}

Node DecodeNode(const json& object) {
  Path root("");
  ExpectObject(object, root);
  Node node;
  DecodeMeta(object, root, &node.meta);
  Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    ReadBool(*spec, spec_path.Field("unschedulable"), &node.spec.unschedulable);
    ReadArray(*spec, spec_path.Field("taints"), &node.spec.taints,
              [](const json& e, const Path& p, Taint* t) { *t = DecodeTaintAt(e, p); });
  }
  Path status_path = root.Field("status");
  if (const json* status = GetObject(object, status_path)) {
    DecodeNodeStatus(*status, status_path, &node.status);
  }
  return node;
}

}  // namespace berth::api
