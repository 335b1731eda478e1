#include "pkg/api/protobuf.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "pkg/api/errors.h"
#include "pkg/api/field_path.h"
#include "pkg/api/protobuf_internal.h"
#include "pkg/api/types.h"

namespace berth::api {

// What a schema field becomes in JSON. Every kind but the scalars is length-delimited on the wire.
enum class ProtobufKind : uint8_t {
  kString,
  kBool,
  kInt32,
  kInt64,
  kMessage,
  kInline,       // An embedded message whose fields JSON lifts into the parent (VolumeSource).
  kStringMap,    // map<string, string>
  kQuantityMap,  // map<string, resource.Quantity>: quantities become their string form.
  kTime,         // metav1.Time: RFC 3339 in UTC with second precision, as the JSON form.
};

struct ProtobufField {
  uint32_t number;
  std::string_view name;
  ProtobufKind kind;
  bool repeated = false;
  const ProtobufMessage* message = nullptr;
};

struct ProtobufMessage {
  std::span<const ProtobufField> fields;

  const ProtobufField* Find(uint32_t number) const {
    for (const ProtobufField& field : fields) {
      if (field.number == number) return &field;
    }
    return nullptr;
  }
};

namespace {

using json = nlohmann::json;
using K = ProtobufKind;

constexpr std::string_view kEnvelopeMagic{"k8s\0", 4};

// ---- Schemas (field numbers from k8s.io/api and k8s.io/apimachinery generated.proto) ----

// Messages Berth reads nothing from but whose presence matters (a volume's source).
constexpr ProtobufMessage kOpaque{};

constexpr ProtobufField kTypeMetaFields[] = {{1, "apiVersion", K::kString},
                                             {2, "kind", K::kString}};
constexpr ProtobufMessage kTypeMeta{kTypeMetaFields};

constexpr ProtobufField kOwnerReferenceFields[] = {
    {1, "kind", K::kString},       {3, "name", K::kString},     {4, "uid", K::kString},
    {5, "apiVersion", K::kString}, {6, "controller", K::kBool},
};
constexpr ProtobufMessage kOwnerReference{kOwnerReferenceFields};

constexpr ProtobufField kObjectMetaFields[] = {
    {1, "name", K::kString},
    {3, "namespace", K::kString},
    {5, "uid", K::kString},
    {6, "resourceVersion", K::kString},
    {7, "generation", K::kInt64},
    {8, "creationTimestamp", K::kTime},
    {9, "deletionTimestamp", K::kTime},
    {11, "labels", K::kStringMap},
    {12, "annotations", K::kStringMap},
    {13, "ownerReferences", K::kMessage, true, &kOwnerReference},
};
constexpr ProtobufMessage kObjectMeta{kObjectMetaFields};

constexpr ProtobufField kListMetaFields[] = {{2, "resourceVersion", K::kString},
                                             {3, "continue", K::kString}};
constexpr ProtobufMessage kListMeta{kListMetaFields};

// NodeSelectorRequirement and LabelSelectorRequirement share their field numbers.
constexpr ProtobufField kRequirementFields[] = {
    {1, "key", K::kString}, {2, "operator", K::kString}, {3, "values", K::kString, true}};
constexpr ProtobufMessage kRequirement{kRequirementFields};

constexpr ProtobufField kLabelSelectorFields[] = {
    {1, "matchLabels", K::kStringMap}, {2, "matchExpressions", K::kMessage, true, &kRequirement}};
constexpr ProtobufMessage kLabelSelector{kLabelSelectorFields};

constexpr ProtobufField kNodeSelectorTermFields[] = {
    {1, "matchExpressions", K::kMessage, true, &kRequirement},
    {2, "matchFields", K::kMessage, true, &kRequirement}};
constexpr ProtobufMessage kNodeSelectorTerm{kNodeSelectorTermFields};

constexpr ProtobufField kNodeSelectorFields[] = {
    {1, "nodeSelectorTerms", K::kMessage, true, &kNodeSelectorTerm}};
constexpr ProtobufMessage kNodeSelector{kNodeSelectorFields};

constexpr ProtobufField kPreferredSchedulingTermFields[] = {
    {1, "weight", K::kInt32}, {2, "preference", K::kMessage, false, &kNodeSelectorTerm}};
constexpr ProtobufMessage kPreferredSchedulingTerm{kPreferredSchedulingTermFields};

constexpr ProtobufField kNodeAffinityFields[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", K::kMessage, false, &kNodeSelector},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", K::kMessage, true,
     &kPreferredSchedulingTerm},
};
constexpr ProtobufMessage kNodeAffinity{kNodeAffinityFields};

constexpr ProtobufField kPodAffinityTermFields[] = {
    {1, "labelSelector", K::kMessage, false, &kLabelSelector},
    {2, "namespaces", K::kString, true},
    {3, "topologyKey", K::kString},
    {4, "namespaceSelector", K::kMessage, false, &kLabelSelector},
    {5, "matchLabelKeys", K::kString, true},
    {6, "mismatchLabelKeys", K::kString, true},
};
constexpr ProtobufMessage kPodAffinityTerm{kPodAffinityTermFields};

constexpr ProtobufField kWeightedPodAffinityTermFields[] = {
    {1, "weight", K::kInt32}, {2, "podAffinityTerm", K::kMessage, false, &kPodAffinityTerm}};
constexpr ProtobufMessage kWeightedPodAffinityTerm{kWeightedPodAffinityTermFields};

// PodAffinity and PodAntiAffinity share their field numbers.
constexpr ProtobufField kPodAffinityFields[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", K::kMessage, true, &kPodAffinityTerm},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", K::kMessage, true,
     &kWeightedPodAffinityTerm},
};
constexpr ProtobufMessage kPodAffinity{kPodAffinityFields};

constexpr ProtobufField kAffinityFields[] = {
    {1, "nodeAffinity", K::kMessage, false, &kNodeAffinity},
    {2, "podAffinity", K::kMessage, false, &kPodAffinity},
    {3, "podAntiAffinity", K::kMessage, false, &kPodAffinity},
};
constexpr ProtobufMessage kAffinity{kAffinityFields};

constexpr ProtobufField kTolerationFields[] = {
    {1, "key", K::kString},    {2, "operator", K::kString},         {3, "value", K::kString},
    {4, "effect", K::kString}, {5, "tolerationSeconds", K::kInt64},
};
constexpr ProtobufMessage kToleration{kTolerationFields};

constexpr ProtobufField kTopologySpreadConstraintFields[] = {
    {1, "maxSkew", K::kInt32},
    {2, "topologyKey", K::kString},
    {3, "whenUnsatisfiable", K::kString},
    {4, "labelSelector", K::kMessage, false, &kLabelSelector},
    {5, "minDomains", K::kInt32},
    {6, "nodeAffinityPolicy", K::kString},
    {7, "nodeTaintsPolicy", K::kString},
    {8, "matchLabelKeys", K::kString, true},
};
constexpr ProtobufMessage kTopologySpreadConstraint{kTopologySpreadConstraintFields};

constexpr ProtobufField kResourceRequirementsFields[] = {{1, "limits", K::kQuantityMap},
                                                         {2, "requests", K::kQuantityMap}};
constexpr ProtobufMessage kResourceRequirements{kResourceRequirementsFields};

constexpr ProtobufField kContainerPortFields[] = {
    {2, "hostPort", K::kInt32},
    {3, "containerPort", K::kInt32},
    {4, "protocol", K::kString},
    {5, "hostIP", K::kString},
};
constexpr ProtobufMessage kContainerPort{kContainerPortFields};

constexpr ProtobufField kVolumeMountFields[] = {{8, "bindMountOptions", K::kString, true}};
constexpr ProtobufMessage kVolumeMount{kVolumeMountFields};

constexpr ProtobufField kContainerRestartRuleFields[] = {{1, "action", K::kString}};
constexpr ProtobufMessage kContainerRestartRule{kContainerRestartRuleFields};

constexpr ProtobufField kContainerFields[] = {
    {1, "name", K::kString},
    {2, "image", K::kString},
    {6, "ports", K::kMessage, true, &kContainerPort},
    {8, "resources", K::kMessage, false, &kResourceRequirements},
    {9, "volumeMounts", K::kMessage, true, &kVolumeMount},
    {24, "restartPolicy", K::kString},
    {25, "restartPolicyRules", K::kMessage, true, &kContainerRestartRule},
};
constexpr ProtobufMessage kContainer{kContainerFields};

// EphemeralContainer: its common part is inlined in JSON; only volume mounts are read.
constexpr ProtobufField kEphemeralContainerCommonFields[] = {
    {9, "volumeMounts", K::kMessage, true, &kVolumeMount}};
constexpr ProtobufMessage kEphemeralContainerCommon{kEphemeralContainerCommonFields};
constexpr ProtobufField kEphemeralContainerFields[] = {
    {1, "", K::kInline, false, &kEphemeralContainerCommon}};
constexpr ProtobufMessage kEphemeralContainer{kEphemeralContainerFields};

constexpr ProtobufField kClaimSourceFields[] = {{1, "claimName", K::kString},
                                                {2, "readOnly", K::kBool}};
constexpr ProtobufMessage kClaimSource{kClaimSourceFields};

// The in-tree disk sources: only the members the volume plugins read.
constexpr ProtobufField kGCEPersistentDiskFields[] = {{1, "pdName", K::kString},
                                                      {4, "readOnly", K::kBool}};
constexpr ProtobufMessage kGCEPersistentDisk{kGCEPersistentDiskFields};
// AWSElasticBlockStoreVolumeSource, CinderVolumeSource and PortworxVolumeSource all number their
// volumeID 1.
constexpr ProtobufField kVolumeIDFields[] = {{1, "volumeID", K::kString}};
constexpr ProtobufMessage kVolumeID{kVolumeIDFields};
constexpr ProtobufField kISCSIFields[] = {{2, "iqn", K::kString}, {6, "readOnly", K::kBool}};
constexpr ProtobufMessage kISCSI{kISCSIFields};
constexpr ProtobufField kRBDFields[] = {{1, "monitors", K::kString, true},
                                        {2, "image", K::kString},
                                        {4, "pool", K::kString},
                                        {8, "readOnly", K::kBool}};
constexpr ProtobufMessage kRBD{kRBDFields};
constexpr ProtobufField kAzureDiskFields[] = {{2, "diskURI", K::kString}};
constexpr ProtobufMessage kAzureDisk{kAzureDiskFields};
constexpr ProtobufField kCSIVolumeFields[] = {{1, "driver", K::kString}};
constexpr ProtobufMessage kCSIVolume{kCSIVolumeFields};

// Every source is named, since the decoder records which one a volume has.
constexpr ProtobufField kVolumeSourceFields[] = {
    {1, "hostPath", K::kMessage, false, &kOpaque},
    {2, "emptyDir", K::kMessage, false, &kOpaque},
    {3, "gcePersistentDisk", K::kMessage, false, &kGCEPersistentDisk},
    {4, "awsElasticBlockStore", K::kMessage, false, &kVolumeID},
    {5, "gitRepo", K::kMessage, false, &kOpaque},
    {6, "secret", K::kMessage, false, &kOpaque},
    {7, "nfs", K::kMessage, false, &kOpaque},
    {8, "iscsi", K::kMessage, false, &kISCSI},
    {9, "glusterfs", K::kMessage, false, &kOpaque},
    {10, "persistentVolumeClaim", K::kMessage, false, &kClaimSource},
    {11, "rbd", K::kMessage, false, &kRBD},
    {12, "flexVolume", K::kMessage, false, &kOpaque},
    {13, "cinder", K::kMessage, false, &kVolumeID},
    {14, "cephfs", K::kMessage, false, &kOpaque},
    {15, "flocker", K::kMessage, false, &kOpaque},
    {16, "downwardAPI", K::kMessage, false, &kOpaque},
    {17, "fc", K::kMessage, false, &kOpaque},
    {18, "azureFile", K::kMessage, false, &kOpaque},
    {19, "configMap", K::kMessage, false, &kOpaque},
    {20, "vsphereVolume", K::kMessage, false, &kOpaque},
    {21, "quobyte", K::kMessage, false, &kOpaque},
    {22, "azureDisk", K::kMessage, false, &kAzureDisk},
    {23, "photonPersistentDisk", K::kMessage, false, &kOpaque},
    {24, "portworxVolume", K::kMessage, false, &kVolumeID},
    {25, "scaleIO", K::kMessage, false, &kOpaque},
    {26, "projected", K::kMessage, false, &kOpaque},
    {27, "storageos", K::kMessage, false, &kOpaque},
    {28, "csi", K::kMessage, false, &kCSIVolume},
    {29, "ephemeral", K::kMessage, false, &kOpaque},
    {30, "image", K::kMessage, false, &kOpaque},
};
constexpr ProtobufMessage kVolumeSource{kVolumeSourceFields};

constexpr ProtobufField kVolumeFields[] = {{1, "name", K::kString},
                                           {2, "", K::kInline, false, &kVolumeSource}};
constexpr ProtobufMessage kVolume{kVolumeFields};

constexpr ProtobufField kSchedulingGateFields[] = {{1, "name", K::kString}};
constexpr ProtobufMessage kSchedulingGate{kSchedulingGateFields};

// PodResourceClaim: the name and its source.
constexpr ProtobufField kPodResourceClaimFields[] = {
    {1, "name", K::kString},
    {3, "resourceClaimName", K::kString},
    {4, "resourceClaimTemplateName", K::kString},
};
constexpr ProtobufMessage kPodResourceClaim{kPodResourceClaimFields};

// PodSchedulingGroup: the PodGroup a pod joins (the Workload API).
constexpr ProtobufField kPodSchedulingGroupFields[] = {{1, "podGroupName", K::kString}};
constexpr ProtobufMessage kPodSchedulingGroup{kPodSchedulingGroupFields};

constexpr ProtobufField kPodSpecFields[] = {
    {1, "volumes", K::kMessage, true, &kVolume},
    {2, "containers", K::kMessage, true, &kContainer},
    {7, "nodeSelector", K::kStringMap},
    {10, "nodeName", K::kString},
    {11, "hostNetwork", K::kBool},
    {18, "affinity", K::kMessage, false, &kAffinity},
    {19, "schedulerName", K::kString},
    {20, "initContainers", K::kMessage, true, &kContainer},
    {22, "tolerations", K::kMessage, true, &kToleration},
    {24, "priorityClassName", K::kString},
    {25, "priority", K::kInt32},
    {31, "preemptionPolicy", K::kString},
    {32, "overhead", K::kQuantityMap},
    {33, "topologySpreadConstraints", K::kMessage, true, &kTopologySpreadConstraint},
    {34, "ephemeralContainers", K::kMessage, true, &kEphemeralContainer},
    {37, "hostUsers", K::kBool},
    {38, "schedulingGates", K::kMessage, true, &kSchedulingGate},
    {39, "resourceClaims", K::kMessage, true, &kPodResourceClaim},
    {40, "resources", K::kMessage, false, &kResourceRequirements},
    {43, "schedulingGroup", K::kMessage, false, &kPodSchedulingGroup},
};
constexpr ProtobufMessage kPodSpec{kPodSpecFields};

// PodCondition and NodeCondition share the numbers of the fields Berth reads.
constexpr ProtobufField kConditionFields[] = {
    {1, "type", K::kString},
    {2, "status", K::kString},
    {5, "reason", K::kString},
    {6, "message", K::kString},
};
constexpr ProtobufMessage kCondition{kConditionFields};

constexpr ProtobufField kPodResourceClaimStatusFields[] = {
    {1, "name", K::kString},
    {2, "resourceClaimName", K::kString},
};
constexpr ProtobufMessage kPodResourceClaimStatus{kPodResourceClaimStatusFields};

constexpr ProtobufField kContainerExtendedResourceRequestFields[] = {
    {1, "containerName", K::kString},
    {2, "resourceName", K::kString},
    {3, "requestName", K::kString},
};
constexpr ProtobufMessage kContainerExtendedResourceRequest{
    kContainerExtendedResourceRequestFields};

constexpr ProtobufField kPodExtendedResourceClaimStatusFields[] = {
    {1, "requestMappings", K::kMessage, true, &kContainerExtendedResourceRequest},
    {2, "resourceClaimName", K::kString},
};
constexpr ProtobufMessage kPodExtendedResourceClaimStatus{kPodExtendedResourceClaimStatusFields};

constexpr ProtobufField kPodStatusFields[] = {
    {1, "phase", K::kString},
    {2, "conditions", K::kMessage, true, &kCondition},
    {7, "startTime", K::kTime},
    {11, "nominatedNodeName", K::kString},
    {15, "resourceClaimStatuses", K::kMessage, true, &kPodResourceClaimStatus},
    {18, "extendedResourceClaimStatus", K::kMessage, false, &kPodExtendedResourceClaimStatus},
};
constexpr ProtobufMessage kPodStatus{kPodStatusFields};

constexpr ProtobufField kPodFields[] = {
    {1, "metadata", K::kMessage, false, &kObjectMeta},
    {2, "spec", K::kMessage, false, &kPodSpec},
    {3, "status", K::kMessage, false, &kPodStatus},
};
constexpr ProtobufMessage kPod{kPodFields};

constexpr ProtobufField kTaintFields[] = {
    {1, "key", K::kString}, {2, "value", K::kString}, {3, "effect", K::kString}};
constexpr ProtobufMessage kTaint{kTaintFields};

constexpr ProtobufField kNodeSpecFields[] = {{4, "unschedulable", K::kBool},
                                             {5, "taints", K::kMessage, true, &kTaint}};
constexpr ProtobufMessage kNodeSpec{kNodeSpecFields};

constexpr ProtobufField kContainerImageFields[] = {{1, "names", K::kString, true},
                                                   {2, "sizeBytes", K::kInt64}};
constexpr ProtobufMessage kContainerImage{kContainerImageFields};

constexpr ProtobufField kNodeStatusFields[] = {
    {1, "capacity", K::kQuantityMap},
    {2, "allocatable", K::kQuantityMap},
    {4, "conditions", K::kMessage, true, &kCondition},
    {8, "images", K::kMessage, true, &kContainerImage},
    {14, "declaredFeatures", K::kString, true},
};
constexpr ProtobufMessage kNodeStatus{kNodeStatusFields};

constexpr ProtobufField kNodeFields[] = {
    {1, "metadata", K::kMessage, false, &kObjectMeta},
    {2, "spec", K::kMessage, false, &kNodeSpec},
    {3, "status", K::kMessage, false, &kNodeStatus},
};
constexpr ProtobufMessage kNode{kNodeFields};

constexpr ProtobufField kStatusDetailsFields[] = {{5, "retryAfterSeconds", K::kInt32}};
constexpr ProtobufMessage kStatusDetails{kStatusDetailsFields};

constexpr ProtobufField kStatusFields[] = {
    {2, "status", K::kString}, {3, "message", K::kString},
    {4, "reason", K::kString}, {5, "details", K::kMessage, false, &kStatusDetails},
    {6, "code", K::kInt32},
};
constexpr ProtobufMessage kStatus{kStatusFields};

constexpr ProtobufField kPodListFields[] = {{1, "metadata", K::kMessage, false, &kListMeta},
                                            {2, "items", K::kMessage, true, &kPod}};
constexpr ProtobufMessage kPodList{kPodListFields};

constexpr ProtobufField kNodeListFields[] = {{1, "metadata", K::kMessage, false, &kListMeta},
                                             {2, "items", K::kMessage, true, &kNode}};
constexpr ProtobufMessage kNodeList{kNodeListFields};

// The objects an envelope may hold, by kind.
constexpr std::pair<std::string_view, const ProtobufMessage*> kKinds[] = {
    {"Pod", &kPod},         {"Node", &kNode},         {"Status", &kStatus},
    {"PodList", &kPodList}, {"NodeList", &kNodeList},
};

void DecodeFields(std::string_view bytes, const ProtobufMessage& message, json& out,
                  const FieldPath& path);

// A map entry: the kubectl last-applied-configuration annotation is dropped, as the JSON decoder
// drops it.
void DecodeMapEntry(std::string_view bytes, const ProtobufField& field, json& map,
                    const FieldPath& path) {
  auto [key, value] = ReadMapEntry(bytes, field.kind == K::kQuantityMap, path);
  if (field.name == "annotations" && key == kLastAppliedAnnotation) return;
  map[std::move(key)] = std::move(value);
}

// The JSON slot for one occurrence of `field` in `out`: the member itself, or a new element of
// the member's array when the field is repeated. `index` receives the element's index.
json& Slot(const ProtobufField& field, json& out, int64_t* index) {
  json& member = out[field.name];
  if (!field.repeated) return member;
  if (!member.is_array()) member = json::array();
  *index = static_cast<int64_t>(member.size());
  member.emplace_back();
  return member.back();
}

void DecodeField(const ProtobufField& field, const FieldHeader& header, const FieldValue& value,
                 json& out, const FieldPath& parent) {
  if (field.kind == K::kInline) {
    ExpectWire(header, kLengthDelimited, parent);
    DecodeFields(value.bytes, *field.message, out, parent);
    return;
  }
  const FieldPath path = parent.Field(field.name);
  switch (field.kind) {
    case K::kBool:
    case K::kInt32:
    case K::kInt64:
      ExpectWire(header, kVarint, path);
      break;
    default:
      ExpectWire(header, kLengthDelimited, path);
      break;
  }
  int64_t index = -1;
  switch (field.kind) {
    case K::kString: {
      std::string text = Utf8String(value.bytes, path);
      Slot(field, out, &index) = std::move(text);
      return;
    }
    case K::kBool:
      Slot(field, out, &index) = value.number != 0;
      return;
    case K::kInt32:
      // As Go decodes an int32: the low 32 bits of the varint.
      Slot(field, out, &index) = static_cast<int32_t>(static_cast<uint32_t>(value.number));
      return;
    case K::kInt64:
      Slot(field, out, &index) = static_cast<int64_t>(value.number);
      return;
    case K::kMessage: {
      json& target = Slot(field, out, &index);
      if (!target.is_object()) target = json::object();
      if (index < 0) {
        DecodeFields(value.bytes, *field.message, target, path);
      } else {
        const FieldPath element = path.Index(static_cast<size_t>(index));
        DecodeFields(value.bytes, *field.message, target, element);
      }
      return;
    }
    case K::kInline:  // Handled above.
      return;
    case K::kStringMap:
    case K::kQuantityMap: {
      json& map = out[field.name];
      if (!map.is_object()) map = json::object();
      DecodeMapEntry(value.bytes, field, map, path);
      return;
    }
    case K::kTime:
      if (auto text = TimeText(value.bytes, path)) out[field.name] = std::move(*text);
      return;
  }
}

// Decodes the fields of `message` found in `bytes` into the JSON object `out`; fields the schema
// does not name are skipped.
void DecodeFields(std::string_view bytes, const ProtobufMessage& message, json& out,
                  const FieldPath& path) {
  MessageFields fields(bytes, path);
  while (fields.Next()) {
    if (const ProtobufField* field = message.Find(fields.number())) {
      DecodeField(*field, fields.header(), fields.value(), out, path);
    }
  }
}

const ProtobufMessage& MessageOfKind(std::string_view kind, const FieldPath& path) {
  for (const auto& [name, message] : kKinds) {
    if (name == kind) return *message;
  }
  FailAt(path, "no protobuf decoding for kind \"" + std::string(kind) + "\"");
}

// The kind named by a runtime.Unknown's typeMeta.
std::string KindOf(std::string_view type_meta, const FieldPath& path) {
  json fields = json::object();
  DecodeFields(type_meta, kTypeMeta, fields, path);
  auto kind = fields.find("kind");
  return kind != fields.end() ? kind->get<std::string>() : std::string();
}

// Reads one field of a runtime.Unknown (typeMeta = 1, raw = 2, contentEncoding = 3); returns the
// kind it names when it is the typeMeta. The raw object's bytes are the caller's to take.
void CheckEnvelopeField(const FieldHeader& header, const FieldValue& value, std::string* kind,
                        const FieldPath& path) {
  if (header.number == 1) {
    ExpectWire(header, kLengthDelimited, path);
    *kind = KindOf(value.bytes, path);
  } else if (header.number == 2) {
    ExpectWire(header, kLengthDelimited, path);
  } else if (header.number == 3 && header.wire == kLengthDelimited && !value.bytes.empty()) {
    FailAt(path, "unsupported protobuf content encoding \"" + std::string(value.bytes) + "\"");
  }
}

void CheckMagic(std::string_view bytes, const FieldPath& path) {
  if (bytes.substr(0, kEnvelopeMagic.size()) != kEnvelopeMagic) {
    FailAt(path, "not a Kubernetes protobuf object (the \"k8s\\0\" prefix is missing)");
  }
}

// An enveloped object's kind and undecoded message; `root` is where it sits, for error paths.
struct Unwrapped {
  std::string kind;
  std::string_view raw;
};

Unwrapped Unwrap(std::string_view envelope, const FieldPath& root) {
  CheckMagic(envelope, root);
  Unwrapped out;
  bool has_raw = false;
  MessageFields fields(envelope.substr(kEnvelopeMagic.size()), root);
  while (fields.Next()) {
    if (fields.number() == 2) {
      if (has_raw) FailAt(root, "protobuf envelope with two objects");
      out.raw = fields.Bytes();
      has_raw = true;
    } else {
      CheckEnvelopeField(fields.header(), fields.value(), &out.kind, root);
    }
  }
  MessageOfKind(out.kind, root);
  if (!has_raw) FailAt(root, "protobuf envelope without an object");
  return out;
}

json DecodeMessage(std::string_view raw, const ProtobufMessage& message, const FieldPath& root) {
  json object = json::object();
  DecodeFields(raw, message, object, root);
  return object;
}

// Decodes an enveloped object; `root` is where it sits, for error paths.
json DecodeEnvelope(std::string_view envelope, const FieldPath& root) {
  const Unwrapped unwrapped = Unwrap(envelope, root);
  return DecodeMessage(unwrapped.raw, MessageOfKind(unwrapped.kind, root), root);
}

}  // namespace

json ProtobufAffinityToJson(std::string_view message, const FieldPath& path) {
  return DecodeMessage(message, kAffinity, path);
}

json ProtobufSpreadConstraintToJson(std::string_view message, const FieldPath& path) {
  return DecodeMessage(message, kTopologySpreadConstraint, path);
}

std::string_view VolumeSourceName(uint32_t number) {
  const ProtobufField* field = kVolumeSource.Find(number);
  return field != nullptr ? field->name : std::string_view();
}

bool IsProtobufMediaType(std::string_view content_type) {
  const std::string_view type = content_type.substr(0, content_type.find(';'));
  std::string lowered;
  for (const char c : type) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      lowered.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return lowered == kProtobufMediaType;
}

json DecodeProtobufObject(std::string_view envelope) {
  const FieldPath root("");
  return DecodeEnvelope(envelope, root);
}

json ProtobufPodToJson(std::string_view message) {
  const FieldPath root("");
  return DecodeMessage(message, kPod, root);
}

ParsedWatchEvent ParseProtobufWatchEvent(std::string_view frame, bool undecoded_pods) {
  const FieldPath root("");
  ParsedWatchEvent event;
  // The object is decoded once the type is known (Go writes the type first, but need not).
  std::string_view envelope;
  const FieldPath type_path = root.Field("type");
  const FieldPath object_path = root.Field("object");
  MessageFields fields(frame, root);
  while (fields.Next()) {
    if (fields.number() == 1) {
      ExpectWire(fields.header(), kLengthDelimited, type_path);
      event.type = Utf8String(fields.value().bytes, type_path);
    } else if (fields.number() == 2) {
      // A runtime.RawExtension: the enveloped object is its field 1.
      ExpectWire(fields.header(), kLengthDelimited, object_path);
      MessageFields raw(fields.value().bytes, object_path);
      while (raw.Next()) {
        if (raw.number() != 1) continue;
        envelope = raw.Bytes();
        event.has_object = true;
      }
    }
  }
  if (!event.has_object) return event;
  const Unwrapped unwrapped = Unwrap(envelope, object_path);
  if (undecoded_pods && unwrapped.kind == "Pod" &&
      (event.type == "ADDED" || event.type == "MODIFIED" || event.type == "DELETED")) {
    event.protobuf_pod.assign(unwrapped.raw);
  } else {
    event.object =
        DecodeMessage(unwrapped.raw, MessageOfKind(unwrapped.kind, object_path), object_path);
  }
  return event;
}

ProtobufListParser::ProtobufListParser(std::function<void(json&)> on_item,
                                       ProtobufItemHandler on_message)
    : on_item_(std::move(on_item)), on_message_(std::move(on_message)) {}

void ProtobufListParser::Feed(std::string_view bytes) {
  if (pending_.empty()) {
    // The common case: whole items inside the piece are decoded in place, only a tail is copied.
    pending_.assign(bytes.substr(Consume(bytes)));
    return;
  }
  pending_.append(bytes);
  pending_.erase(0, Consume(pending_));
}

size_t ProtobufListParser::Consume(std::string_view data) {
  const FieldPath root("");
  size_t pos = 0;
  for (;;) {
    switch (stage_) {
      case Stage::kMagic:
        if (data.size() - pos < kEnvelopeMagic.size()) return pos;
        CheckMagic(data.substr(pos), root);
        pos += kEnvelopeMagic.size();
        stage_ = Stage::kEnvelope;
        break;
      case Stage::kEnvelope: {
        size_t at = pos;
        FieldHeader header;
        if (!TryReadHeader(data, &at, &header, root)) return pos;
        if (header.number == 2 && header.wire == kLengthDelimited) {
          // The list itself: consumed field by field as it arrives instead of waited for.
          if (item_message_ == nullptr)
            FailAt(root, "protobuf list without a kind before its items");
          if (list_seen_) FailAt(root, "protobuf envelope with two objects");
          list_seen_ = true;
          list_left_ = header.length;
          pos = at;
          stage_ = Stage::kList;
          break;
        }
        FieldValue value;
        if (!TryReadValue(data, &at, header, &value, root)) return pos;
        std::string kind;
        CheckEnvelopeField(header, value, &kind, root);
        if (header.number == 1) {
          const ProtobufMessage& list = MessageOfKind(kind, root);
          const ProtobufField* items = list.Find(2);
          if (items == nullptr || items->name != "items") {
            FailAt(root, "kind \"" + kind + "\" is not a list");
          }
          item_message_ = items->message;
        }
        pos = at;
        break;
      }
      case Stage::kList: {
        if (list_left_ == 0) {
          stage_ = Stage::kEnvelope;
          break;
        }
        const std::string_view list = data.substr(
            pos, static_cast<size_t>(std::min<uint64_t>(list_left_, data.size() - pos)));
        size_t at = 0;
        FieldHeader header;
        FieldValue value;
        if (!TryReadHeader(list, &at, &header, root) ||
            !TryReadValue(list, &at, header, &value, root)) {
          if (list.size() == list_left_)
            FailAt(root, "malformed protobuf: list ends inside a field");
          return pos;
        }
        if (header.number == 2) {
          const FieldPath items = root.Field("items");
          const FieldPath item_path = items.Index(items_);
          ExpectWire(header, kLengthDelimited, item_path);
          items_++;
          if (!on_message_ || !on_message_(value.bytes)) {
            json item = json::object();
            DecodeFields(value.bytes, *item_message_, item, item_path);
            on_item_(item);
          }
        } else if (header.number == 1) {
          const FieldPath meta_path = root.Field("metadata");
          ExpectWire(header, kLengthDelimited, meta_path);
          json meta = json::object();
          DecodeFields(value.bytes, kListMeta, meta, meta_path);
          meta_.resource_version = meta.value("resourceVersion", "");
          meta_.continue_token = meta.value("continue", "");
        }
        pos += at;
        list_left_ -= at;
        break;
      }
    }
  }
}

ListMeta ProtobufListParser::Finish() {
  const FieldPath root("");
  if (stage_ != Stage::kEnvelope || !pending_.empty()) {
    FailAt(root, "malformed protobuf: the body ends early");
  }
  if (!list_seen_) FailAt(root, "protobuf envelope without a list");
  return meta_;
}

std::unique_ptr<ListDecoder> NewListDecoder(std::string_view content_type,
                                            std::function<void(json&)> on_item,
                                            ProtobufItemHandler on_message) {
  if (IsProtobufMediaType(content_type)) {
    return std::make_unique<ProtobufListParser>(std::move(on_item), std::move(on_message));
  }
  return std::make_unique<ListStreamParser>(std::move(on_item));
}

}  // namespace berth::api
