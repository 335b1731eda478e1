#include "pkg/api/object_encode.h"

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/quantity.h"
#include "pkg/api/types.h"
#include "pkg/api/utf8.h"

// Each document's shape is written once, by the templates below, against a writer with the calls
// BeginObject/EndObject, BeginArray/EndArray, Key, String, Int, Bool and Null. TextWriter turns
// them into JSON text, DomWriter into an nlohmann::json; the two outputs cannot drift apart.

namespace berth::api {

void AppendJsonString(std::string_view text, std::string* out) {
  static constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";
  static constexpr std::string_view kHex = "0123456789abcdef";
  out->push_back('"');
  size_t copied = 0;  // text[copied, pos) is plain and not yet appended.
  size_t pos = 0;
  while (pos < text.size()) {
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      pos++;
      continue;
    }
    if (c >= 0x80) {
      const size_t length = Utf8SequenceLength(text, pos);
      if (length != 0) {
        pos += length;
        continue;
      }
    }
    out->append(text.substr(copied, pos - copied));
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (c >= 0x80) {
          out->append(kReplacementCharacter);
        } else {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        }
    }
    copied = ++pos;
  }
  out->append(text.substr(copied));
  out->push_back('"');
}

namespace {

using json = nlohmann::json;

// Writes JSON text, compact. A comma goes before a key or an array element whenever a value came
// before it at the same level: `need_comma_` is set by every finished value and cleared by an
// opening bracket and by a key.
class TextWriter {
 public:
  explicit TextWriter(std::string* out) : out_(out) {}

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view key) {
    Separate();
    AppendJsonString(key, out_);
    out_->push_back(':');
    need_comma_ = false;
  }
  void String(std::string_view value) {
    Separate();
    AppendJsonString(value, out_);
    need_comma_ = true;
  }
  void Int(int64_t value) {
    Separate();
    std::array<char, 24> digits{};
    const auto result = std::to_chars(digits.begin(), digits.end(), value);
    out_->append(digits.data(), result.ptr);
    need_comma_ = true;
  }
  void Bool(bool value) {
    Separate();
    out_->append(value ? "true" : "false");
    need_comma_ = true;
  }
  void Null() {
    Separate();
    out_->append("null");
    need_comma_ = true;
  }

 private:
  void Separate() {
    if (need_comma_) out_->push_back(',');
  }
  void Open(char bracket) {
    Separate();
    out_->push_back(bracket);
    need_comma_ = false;
  }
  void Close(char bracket) {
    out_->push_back(bracket);
    need_comma_ = true;
  }

  std::string* out_;
  bool need_comma_ = false;
};

// Builds an nlohmann::json. stack_ holds the open containers, innermost last; a container is only
// changed while it is innermost, so the pointers into its parent stay valid.
class DomWriter {
 public:
  json Take() { return std::move(root_); }

  void BeginObject() { stack_.push_back(Put(json::object())); }
  void EndObject() { stack_.pop_back(); }
  void BeginArray() { stack_.push_back(Put(json::array())); }
  void EndArray() { stack_.pop_back(); }
  void Key(std::string_view key) { key_ = Utf8(key); }
  void String(std::string_view value) { Put(Utf8(value)); }
  void Int(int64_t value) { Put(value); }
  void Bool(bool value) { Put(value); }
  void Null() { Put(nullptr); }

 private:
  // A json holding bytes that are not UTF-8 could not be dumped (nlohmann throws), so they are
  // replaced here as TextWriter replaces them.
  static std::string Utf8(std::string_view text) {
    return IsValidUtf8(text) ? std::string(text) : ValidUtf8(text);
  }

  json* Put(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    json& member = parent[key_];
    member = std::move(value);
    return &member;
  }

  json root_;
  std::vector<json*> stack_;
  std::string key_;
};

// ---- Small shapes ----

template <typename W>
void StringMember(W& w, std::string_view key, std::string_view value) {
  w.Key(key);
  w.String(value);
}

// An omitempty string member.
template <typename W>
void OptionalString(W& w, std::string_view key, std::string_view value) {
  if (!value.empty()) StringMember(w, key, value);
}

template <typename W>
void IntMember(W& w, std::string_view key, int64_t value) {
  w.Key(key);
  w.Int(value);
}

// An omitempty bool member: only true is written.
template <typename W>
void TrueMember(W& w, std::string_view key, bool value) {
  if (value) {
    w.Key(key);
    w.Bool(true);
  }
}

// An omitempty []string member.
template <typename W>
void StringList(W& w, std::string_view key, const std::vector<std::string>& values) {
  if (values.empty()) return;
  w.Key(key);
  w.BeginArray();
  for (const std::string& value : values) w.String(value);
  w.EndArray();
}

// An omitempty map[string]string member (StringMap is sorted by key, as Go writes maps).
template <typename W>
void StringMapMember(W& w, std::string_view key, const StringMap& map) {
  if (map.empty()) return;
  w.Key(key);
  w.BeginObject();
  for (const auto& [k, v] : map) StringMember(w, k, v);
  w.EndObject();
}

// Writes a list of objects under `key` (omitempty), each by `write(w, element)`.
template <typename W, typename T, typename Write>
void ObjectList(W& w, std::string_view key, const std::vector<T>& elements, Write write) {
  if (elements.empty()) return;
  w.Key(key);
  w.BeginArray();
  for (const T& element : elements) {
    w.BeginObject();
    write(w, element);
    w.EndObject();
  }
  w.EndArray();
}

// ---- Quantities ----

// Resources counted in bytes, which kubelets and users write with binary suffixes.
bool IsByteResource(std::string_view name) {
  return name == kResourceMemory || name == kResourceEphemeralStorage ||
         name.starts_with("hugepages-");
}

// The canonical text of an amount as ResourceList holds it (millicores for cpu, whole units
// otherwise). The form it was written in is not kept; byte amounts take the shorter of the binary
// and decimal forms ("16393244Ki", "1G"), others the decimal form ("4", "250m", "110").
std::string QuantityText(std::string_view resource, int64_t amount) {
  if (resource == kResourceCPU) return Quantity::FromMilli(amount).Canonical();
  std::string decimal = Quantity::FromValue(amount).Canonical();
  // The binary form only differs from the decimal one for multiples of 1024.
  if (!IsByteResource(resource) || amount % 1024 != 0) return decimal;
  std::string binary = Quantity::FromValue(amount, Quantity::Format::kBinarySI).Canonical();
  return binary.size() <= decimal.size() ? binary : decimal;
}

// Writes a ResourceList as a map in key order (omitempty). The four named amounts are written when
// non-zero, or when `cpu_set` / `memory_set` say the request was stated (a stated zero request is
// not the same as none); each scalar entry is written, zero or not, as the decoder kept it.
template <typename W>
void ResourceListMember(W& w, std::string_view key, const ResourceList& list, bool cpu_set = false,
                        bool memory_set = false) {
  struct Named {
    std::string_view name;
    int64_t amount;
    bool present;
  };
  // Sorted by name, as the merge below needs.
  const std::array<Named, 4> named = {{
      {kResourceCPU, list.milli_cpu, list.milli_cpu != 0 || cpu_set},
      {kResourceEphemeralStorage, list.ephemeral_storage, list.ephemeral_storage != 0},
      {kResourceMemory, list.memory, list.memory != 0 || memory_set},
      {kResourcePods, list.pods, list.pods != 0},
  }};
  bool any = !list.scalar.empty();
  for (const Named& n : named) any = any || n.present;
  if (!any) return;
  w.Key(key);
  w.BeginObject();
  size_t s = 0;
  for (const Named& n : named) {
    for (; s < list.scalar.size() && list.scalar[s].first < n.name; s++) {
      StringMember(w, list.scalar[s].first,
                   QuantityText(list.scalar[s].first, list.scalar[s].second));
    }
    if (n.present) StringMember(w, n.name, QuantityText(n.name, n.amount));
  }
  for (; s < list.scalar.size(); s++) {
    StringMember(w, list.scalar[s].first,
                 QuantityText(list.scalar[s].first, list.scalar[s].second));
  }
  w.EndObject();
}

template <typename W>
void Requirements(W& w, const ResourceRequirements& r) {
  ResourceListMember(w, "limits", r.limits);
  ResourceListMember(w, "requests", r.requests, r.has_cpu_request, r.has_memory_request);
}

// ---- Metadata ----

template <typename W>
void Meta(W& w, const ObjectMeta& meta) {
  w.Key("metadata");
  w.BeginObject();
  StringMember(w, "name", meta.name);
  OptionalString(w, "namespace", meta.namespace_);
  OptionalString(w, "uid", meta.uid);
  OptionalString(w, "resourceVersion", meta.resource_version);
  if (meta.generation != 0) IntMember(w, "generation", meta.generation);
  // metav1.Time is a struct, never omitted: Go writes a zero time as null.
  w.Key("creationTimestamp");
  if (meta.creation_timestamp.empty()) {
    w.Null();
  } else {
    w.String(meta.creation_timestamp);
  }
  if (meta.deletion_timestamp) StringMember(w, "deletionTimestamp", *meta.deletion_timestamp);
  StringMapMember(w, "labels", meta.labels);
  StringMapMember(w, "annotations", meta.annotations);
  ObjectList(w, "ownerReferences", meta.owner_references, [](W& o, const OwnerReference& ref) {
    StringMember(o, "apiVersion", ref.api_version);
    StringMember(o, "kind", ref.kind);
    StringMember(o, "name", ref.name);
    StringMember(o, "uid", ref.uid);
    TrueMember(o, "controller", ref.controller);
  });
  w.EndObject();
}

template <typename W>
void TypeMeta(W& w, std::string_view kind) {
  StringMember(w, "kind", kind);
  StringMember(w, "apiVersion", "v1");
}

template <typename W>
void Conditions(W& w, const std::vector<Condition>& conditions) {
  ObjectList(w, "conditions", conditions, [](W& o, const Condition& c) {
    StringMember(o, "type", c.type);
    StringMember(o, "status", c.status);
    OptionalString(o, "reason", c.reason);
    OptionalString(o, "message", c.message);
  });
}

// ---- Selectors and affinity ----

template <typename W>
void RequirementList(W& w, std::string_view key, const Requirement* begin, const Requirement* end) {
  if (begin == end) return;
  w.Key(key);
  w.BeginArray();
  for (const Requirement* r = begin; r != end; ++r) {
    w.BeginObject();
    StringMember(w, "key", r->key);
    StringMember(w, "operator", SelectorOperatorName(r->op));
    StringList(w, "values", r->values);
    w.EndObject();
  }
  w.EndArray();
}

template <typename W>
void RequirementList(W& w, std::string_view key, const std::vector<Requirement>& requirements) {
  RequirementList(w, key, requirements.data(), requirements.data() + requirements.size());
}

// The decoder puts matchLabels first, in key order, as In requirements with one value each. So a
// leading run of such requirements with increasing keys is written back as matchLabels (what the
// user most likely wrote) and decodes to the same requirements in the same order.
template <typename W>
void LabelSelectorMember(W& w, std::string_view key, const std::optional<LabelSelector>& selector) {
  if (!selector) return;
  const std::vector<Requirement>& all = selector->requirements;
  size_t labels = 0;
  while (labels < all.size() && all[labels].op == SelectorOperator::kIn &&
         all[labels].values.size() == 1 && (labels == 0 || all[labels - 1].key < all[labels].key)) {
    labels++;
  }
  w.Key(key);
  w.BeginObject();
  if (labels > 0) {
    w.Key("matchLabels");
    w.BeginObject();
    for (size_t i = 0; i < labels; i++) StringMember(w, all[i].key, all[i].values[0]);
    w.EndObject();
  }
  RequirementList(w, "matchExpressions", all.data() + labels, all.data() + all.size());
  w.EndObject();
}

template <typename W>
void NodeSelectorTermBody(W& w, const NodeSelectorTerm& term) {
  RequirementList(w, "matchExpressions", term.match_expressions);
  RequirementList(w, "matchFields", term.match_fields);
}

template <typename W>
void PodAffinityTermBody(W& w, const PodAffinityTerm& term) {
  LabelSelectorMember(w, "labelSelector", term.label_selector);
  StringList(w, "namespaces", term.namespaces);
  StringMember(w, "topologyKey", term.topology_key);
  LabelSelectorMember(w, "namespaceSelector", term.namespace_selector);
  StringList(w, "matchLabelKeys", term.match_label_keys);
  StringList(w, "mismatchLabelKeys", term.mismatch_label_keys);
}

template <typename W>
void PodAffinityMember(W& w, std::string_view key, const std::optional<PodAffinity>& affinity) {
  if (!affinity) return;
  w.Key(key);
  w.BeginObject();
  ObjectList(w, "requiredDuringSchedulingIgnoredDuringExecution", affinity->required,
             PodAffinityTermBody<W>);
  ObjectList(w, "preferredDuringSchedulingIgnoredDuringExecution", affinity->preferred,
             [](W& o, const WeightedPodAffinityTerm& t) {
               IntMember(o, "weight", t.weight);
               o.Key("podAffinityTerm");
               o.BeginObject();
               PodAffinityTermBody(o, t.term);
               o.EndObject();
             });
  w.EndObject();
}

template <typename W>
void AffinityMember(W& w, const util::Box<Affinity>& affinity) {
  if (!affinity) return;
  w.Key("affinity");
  w.BeginObject();
  if (const std::optional<NodeAffinity>& node = affinity->node_affinity) {
    w.Key("nodeAffinity");
    w.BeginObject();
    if (node->required) {
      w.Key("requiredDuringSchedulingIgnoredDuringExecution");
      w.BeginObject();
      // nodeSelectorTerms has no omitempty.
      w.Key("nodeSelectorTerms");
      w.BeginArray();
      for (const NodeSelectorTerm& term : node->required->terms) {
        w.BeginObject();
        NodeSelectorTermBody(w, term);
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
    }
    ObjectList(w, "preferredDuringSchedulingIgnoredDuringExecution", node->preferred,
               [](W& o, const PreferredSchedulingTerm& t) {
                 IntMember(o, "weight", t.weight);
                 o.Key("preference");
                 o.BeginObject();
                 NodeSelectorTermBody(o, t.preference);
                 o.EndObject();
               });
    w.EndObject();
  }
  PodAffinityMember(w, "podAffinity", affinity->pod_affinity);
  PodAffinityMember(w, "podAntiAffinity", affinity->pod_anti_affinity);
  w.EndObject();
}

// ---- Pod ----

template <typename W>
void ContainerBody(W& w, const Container& c) {
  StringMember(w, "name", c.name);
  OptionalString(w, "image", c.image);
  ObjectList(w, "ports", c.ports, [](W& o, const ContainerPort& p) {
    if (p.host_port != 0) IntMember(o, "hostPort", p.host_port);
    IntMember(o, "containerPort", p.container_port);
    OptionalString(o, "protocol", p.protocol);
    OptionalString(o, "hostIP", p.host_ip);
  });
  // resources is a struct, never omitted.
  w.Key("resources");
  w.BeginObject();
  Requirements(w, c.resources);
  w.EndObject();
  if (c.restartable) StringMember(w, "restartPolicy", "Always");
}

// A volume: its name and its source holding the members api::Volume keeps for that source.
template <typename W>
void VolumeBody(W& w, const Volume& v) {
  StringMember(w, "name", v.name);
  if (v.source.empty()) return;
  w.Key(v.source);
  w.BeginObject();
  const std::string_view source = v.source;
  if (source == "persistentVolumeClaim") {
    StringMember(w, "claimName", v.claim_name);
  } else if (source == "gcePersistentDisk") {
    OptionalString(w, "pdName", v.disk);
  } else if (source == "awsElasticBlockStore" || source == "cinder" || source == "portworxVolume") {
    OptionalString(w, "volumeID", v.disk);
  } else if (source == "iscsi") {
    OptionalString(w, "iqn", v.disk);
  } else if (source == "rbd") {
    StringList(w, "monitors", v.rbd_monitors);
    OptionalString(w, "image", v.disk);
    OptionalString(w, "pool", v.rbd_pool);
  } else if (source == "azureDisk") {
    OptionalString(w, "diskURI", v.disk);
  } else if (source == "csi") {
    OptionalString(w, "driver", v.csi_driver);
  }
  // readOnly comes last in each of the sources that have it; the decoder only sets it for those.
  TrueMember(w, "readOnly", v.read_only);
  w.EndObject();
}

template <typename W>
void TolerationBody(W& w, const Toleration& t) {
  OptionalString(w, "key", t.key);
  StringMember(w, "operator", TolerationOperatorName(t.op));
  OptionalString(w, "value", t.value);
  OptionalString(w, "effect", TaintEffectName(t.effect));
  if (t.toleration_seconds) IntMember(w, "tolerationSeconds", *t.toleration_seconds);
}

template <typename W>
void SpreadConstraintBody(W& w, const TopologySpreadConstraint& c) {
  IntMember(w, "maxSkew", c.max_skew);
  StringMember(w, "topologyKey", c.topology_key);
  StringMember(w, "whenUnsatisfiable", WhenUnsatisfiableName(c.when_unsatisfiable));
  LabelSelectorMember(w, "labelSelector", c.label_selector);
  if (c.min_domains) IntMember(w, "minDomains", *c.min_domains);
  // Both policies are pointers left unset for their defaults (Honor, Ignore).
  if (c.node_affinity_policy != NodeInclusionPolicy::kHonor) {
    StringMember(w, "nodeAffinityPolicy", NodeInclusionPolicyName(c.node_affinity_policy));
  }
  if (c.node_taints_policy != NodeInclusionPolicy::kIgnore) {
    StringMember(w, "nodeTaintsPolicy", NodeInclusionPolicyName(c.node_taints_policy));
  }
  StringList(w, "matchLabelKeys", c.match_label_keys);
}

template <typename W>
void PodSpecMember(W& w, const PodSpec& spec) {
  w.Key("spec");
  w.BeginObject();
  ObjectList(w, "volumes", spec.volumes, VolumeBody<W>);
  ObjectList(w, "initContainers", spec.init_containers, ContainerBody<W>);
  // containers has no omitempty.
  w.Key("containers");
  w.BeginArray();
  for (const Container& c : spec.containers) {
    w.BeginObject();
    ContainerBody(w, c);
    w.EndObject();
  }
  w.EndArray();
  StringMapMember(w, "nodeSelector", spec.node_selector);
  OptionalString(w, "nodeName", spec.node_name);
  TrueMember(w, "hostNetwork", spec.host_network);
  AffinityMember(w, spec.affinity);
  OptionalString(w, "schedulerName", spec.scheduler_name);
  ObjectList(w, "tolerations", spec.tolerations, TolerationBody<W>);
  OptionalString(w, "priorityClassName", spec.priority_class_name);
  // The apiserver's admission sets priority and preemptionPolicy on every pod it serves.
  IntMember(w, "priority", spec.priority);
  StringMember(w, "preemptionPolicy", PreemptionPolicyName(spec.preemption_policy));
  ResourceListMember(w, "overhead", spec.overhead);
  ObjectList(w, "topologySpreadConstraints", spec.topology_spread_constraints,
             SpreadConstraintBody<W>);
  if (spec.host_users) {
    w.Key("hostUsers");
    w.Bool(*spec.host_users);
  }
  ObjectList(w, "schedulingGates", spec.scheduling_gates,
             [](W& o, const std::string& name) { StringMember(o, "name", name); });
  ObjectList(w, "resourceClaims", spec.resource_claims, [](W& o, const PodResourceClaim& c) {
    StringMember(o, "name", c.name);
    if (c.resource_claim_name) StringMember(o, "resourceClaimName", *c.resource_claim_name);
    if (c.resource_claim_template_name) {
      StringMember(o, "resourceClaimTemplateName", *c.resource_claim_template_name);
    }
  });
  if (spec.resources) {
    w.Key("resources");
    w.BeginObject();
    Requirements(w, *spec.resources);
    w.EndObject();
  }
  if (spec.scheduling_group) {
    // Set but empty: a schedulingGroup that names no PodGroup, of a form Berth does not read.
    w.Key("schedulingGroup");
    w.BeginObject();
    OptionalString(w, "podGroupName", *spec.scheduling_group);
    w.EndObject();
  }
  w.EndObject();
}

template <typename W>
void PodStatusMember(W& w, const PodStatus& status) {
  w.Key("status");
  w.BeginObject();
  OptionalString(w, "phase", status.phase);
  Conditions(w, status.conditions);
  OptionalString(w, "nominatedNodeName", status.nominated_node_name);
  OptionalString(w, "startTime", status.start_time);
  ObjectList(w, "resourceClaimStatuses", status.resource_claim_statuses,
             [](W& o, const PodResourceClaimStatus& s) {
               StringMember(o, "name", s.name);
               if (s.resource_claim_name) {
                 StringMember(o, "resourceClaimName", *s.resource_claim_name);
               }
             });
  if (const auto& extended = status.extended_resource_claim_status) {
    w.Key("extendedResourceClaimStatus");
    w.BeginObject();
    // Both members are required by the API: no omitempty.
    w.Key("requestMappings");
    w.BeginArray();
    for (const ContainerExtendedResourceRequest& m : extended->request_mappings) {
      w.BeginObject();
      StringMember(w, "containerName", m.container_name);
      StringMember(w, "resourceName", m.resource_name);
      StringMember(w, "requestName", m.request_name);
      w.EndObject();
    }
    w.EndArray();
    StringMember(w, "resourceClaimName", extended->resource_claim_name);
    w.EndObject();
  }
  w.EndObject();
}

template <typename W>
void WritePod(W& w, const Pod& pod) {
  w.BeginObject();
  TypeMeta(w, "Pod");
  Meta(w, pod.meta);
  PodSpecMember(w, pod.spec);
  PodStatusMember(w, pod.status);
  w.EndObject();
}

// ---- Node ----

template <typename W>
void WriteNode(W& w, const Node& node) {
  w.BeginObject();
  TypeMeta(w, "Node");
  Meta(w, node.meta);
  w.Key("spec");
  w.BeginObject();
  TrueMember(w, "unschedulable", node.spec.unschedulable);
  ObjectList(w, "taints", node.spec.taints, [](W& o, const Taint& t) {
    StringMember(o, "key", t.key);
    OptionalString(o, "value", t.value);
    StringMember(o, "effect", TaintEffectName(t.effect));
  });
  w.EndObject();
  w.Key("status");
  w.BeginObject();
  ResourceListMember(w, "capacity", node.status.capacity);
  ResourceListMember(w, "allocatable", node.status.allocatable);
  Conditions(w, node.status.conditions);
  ObjectList(w, "images", node.status.images, [](W& o, const ContainerImage& image) {
    StringList(o, "names", image.names);
    if (image.size_bytes != 0) IntMember(o, "sizeBytes", image.size_bytes);
  });
  StringList(w, "declaredFeatures", node.status.declared_features);
  w.EndObject();
  w.EndObject();
}

}  // namespace

json EncodePod(const Pod& pod) {
  DomWriter w;
  WritePod(w, pod);
  return w.Take();
}

json EncodeNode(const Node& node) {
  DomWriter w;
  WriteNode(w, node);
  return w.Take();
}

void AppendPodJson(const Pod& pod, std::string* out) {
  TextWriter w(out);
  WritePod(w, pod);
}

void AppendNodeJson(const Node& node, std::string* out) {
  TextWriter w(out);
  WriteNode(w, node);
}

}  // namespace berth::api
