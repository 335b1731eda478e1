#include "pkg/api/resources_codec.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/field_path.h"
#include "pkg/api/json_read.h"
#include "pkg/api/resources.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;
using Path = FieldPath;
using namespace json_read;  // NOLINT(google-build-using-namespace): the decoders' vocabulary.

constexpr EnumTable<PersistentVolumeAccessMode, 4> kAccessModes = {{
    {"ReadWriteOnce", PersistentVolumeAccessMode::kReadWriteOnce},
    {"ReadOnlyMany", PersistentVolumeAccessMode::kReadOnlyMany},
    {"ReadWriteMany", PersistentVolumeAccessMode::kReadWriteMany},
    {"ReadWriteOncePod", PersistentVolumeAccessMode::kReadWriteOncePod},
}};

constexpr EnumTable<PersistentVolumeMode, 2> kVolumeModes = {{
    {"Filesystem", PersistentVolumeMode::kFilesystem},
    {"Block", PersistentVolumeMode::kBlock},
}};

constexpr EnumTable<PersistentVolumeClaimPhase, 3> kClaimPhases = {{
    {"Pending", PersistentVolumeClaimPhase::kPending},
    {"Bound", PersistentVolumeClaimPhase::kBound},
    {"Lost", PersistentVolumeClaimPhase::kLost},
}};

constexpr EnumTable<PersistentVolumePhase, 5> kVolumePhases = {{
    {"Pending", PersistentVolumePhase::kPending},
    {"Available", PersistentVolumePhase::kAvailable},
    {"Bound", PersistentVolumePhase::kBound},
    {"Released", PersistentVolumePhase::kReleased},
    {"Failed", PersistentVolumePhase::kFailed},
}};

constexpr EnumTable<PersistentVolumeReclaimPolicy, 3> kReclaimPolicies = {{
    {"Retain", PersistentVolumeReclaimPolicy::kRetain},
    {"Delete", PersistentVolumeReclaimPolicy::kDelete},
    {"Recycle", PersistentVolumeReclaimPolicy::kRecycle},
}};

constexpr EnumTable<VolumeBindingMode, 2> kBindingModes = {{
    {"Immediate", VolumeBindingMode::kImmediate},
    {"WaitForFirstConsumer", VolumeBindingMode::kWaitForFirstConsumer},
}};

// Every member of v1.PersistentVolumeSource, with the member of each in-tree block source that
// identifies its volume (empty when the source has none the scheduler reads).
struct VolumeSourceField {
  std::string_view source;
  std::string_view volume_id;
};
constexpr VolumeSourceField kVolumeSources[] = {
    {"awsElasticBlockStore", "volumeID"},
    {"azureDisk", "diskURI"},
    {"azureFile", ""},
    {"cephfs", ""},
    {"cinder", "volumeID"},
    {"csi", ""},
    {"fc", ""},
    {"flexVolume", ""},
    {"flocker", ""},
    {"gcePersistentDisk", "pdName"},
    {"glusterfs", ""},
    {"hostPath", ""},
    {"iscsi", ""},
    {"local", ""},
    {"nfs", ""},
    {"photonPersistentDisk", ""},
    {"portworxVolume", "volumeID"},
    {"quobyte", ""},
    {"rbd", ""},
    {"scaleIO", ""},
    {"storageos", ""},
    {"vsphereVolume", "volumePath"},
};

const VolumeSourceField* FindVolumeSource(std::string_view member) {
  for (const VolumeSourceField& field : kVolumeSources) {
    if (field.source == member) {
      return &field;
    }
  }
  return nullptr;
}

// Reads an optional label selector member: absent or null stays std::nullopt.
void ReadLabelSelector(const json& parent, const Path& field, std::optional<LabelSelector>* out) {
  if (const json* value = Member(parent, field)) {
    *out = DecodeLabelSelector(*value, field.str());
  }
}

void ReadAccessModes(const json& parent, const Path& field,
                     std::vector<PersistentVolumeAccessMode>* out) {
  ReadArray(parent, field, out, [](const json& e, const Path& p, PersistentVolumeAccessMode* mode) {
    *mode = DecodeEnum(e, p, kAccessModes);
  });
}

IntOrPercent DecodeIntOrPercentAt(const json& value, const Path& path) {
  IntOrPercent out;
  int64_t number = 0;
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get_ref<const uint64_t&>();
    number = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? std::numeric_limits<int64_t>::max()
                 : static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    number = value.get_ref<const int64_t&>();
  } else if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text.size() < 2 || text.back() != '%' ||
        !ParseInt64(std::string_view(text).substr(0, text.size() - 1), &number)) {
      FailAt(path, "invalid value \"" + text + "\": want an integer or \"<integer>%\"");
    }
    out.percent = true;
  } else {
    FailType(path, "integer or percent string", value);
  }
  if (number < std::numeric_limits<int32_t>::min() ||
      number > std::numeric_limits<int32_t>::max()) {
    FailAt(path, std::to_string(number) + " out of int32 range");
  }
  out.value = static_cast<int32_t>(number);
  return out;
}

void ReadIntOrPercent(const json& parent, const Path& field, std::optional<IntOrPercent>* out) {
  if (const json* value = Member(parent, field)) {
    *out = DecodeIntOrPercentAt(*value, field);
  }
}

// The workload controllers' shared spec: a selector read by `read_selector` and replicas.
template <typename T, typename ReadSelector>
T DecodeController(const json& object, ReadSelector read_selector) {
  const Path root("");
  T out;
  out.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    read_selector(*spec, spec_path.Field("selector"), &out.selector);
    ReadInt32(*spec, spec_path.Field("replicas"), &out.replicas);
  }
  return out;
}

void ReadOptionalStringMap(const json& parent, const Path& field, std::optional<StringMap>* out) {
  StringMap map;
  if (ReadStringMap(parent, field, &map)) {
    *out = std::move(map);
  }
}

}  // namespace

IntOrPercent DecodeIntOrPercent(const json& value, const std::string& field) {
  const Path path(field);
  return DecodeIntOrPercentAt(value, path);
}

Namespace DecodeNamespace(const json& object) {
  Namespace ns;
  ns.meta = DecodeObjectMeta(object);
  return ns;
}

PodDisruptionBudget DecodePodDisruptionBudget(const json& object) {
  const Path root("");
  PodDisruptionBudget pdb;
  pdb.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    ReadIntOrPercent(*spec, spec_path.Field("minAvailable"), &pdb.spec.min_available);
    ReadIntOrPercent(*spec, spec_path.Field("maxUnavailable"), &pdb.spec.max_unavailable);
    ReadLabelSelector(*spec, spec_path.Field("selector"), &pdb.spec.selector);
  }
  const Path status_path = root.Field("status");
  if (const json* status = GetObject(object, status_path)) {
    PodDisruptionBudgetStatus& s = pdb.status;
    ReadInt32(*status, status_path.Field("disruptionsAllowed"), &s.disruptions_allowed);
    ReadInt32(*status, status_path.Field("currentHealthy"), &s.current_healthy);
    ReadInt32(*status, status_path.Field("desiredHealthy"), &s.desired_healthy);
    ReadInt32(*status, status_path.Field("expectedPods"), &s.expected_pods);
    const Path disrupted_path = status_path.Field("disruptedPods");
    if (const json* disrupted = GetObject(*status, disrupted_path)) {
      s.disrupted_pods.reserve(disrupted->size());
      for (auto it = disrupted->begin(); it != disrupted->end(); ++it) {
        // Values are the eviction times; only the names are read.
        s.disrupted_pods.push_back(it.key());
      }
      std::sort(s.disrupted_pods.begin(), s.disrupted_pods.end());
    }
  }
  return pdb;
}

PersistentVolumeClaim DecodePersistentVolumeClaim(const json& object) {
  const Path root("");
  PersistentVolumeClaim pvc;
  pvc.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    PersistentVolumeClaimSpec& s = pvc.spec;
    ReadString(*spec, spec_path.Field("storageClassName"), &s.storage_class_name);
    ReadString(*spec, spec_path.Field("volumeName"), &s.volume_name);
    ReadAccessModes(*spec, spec_path.Field("accessModes"), &s.access_modes);
    const Path resources_path = spec_path.Field("resources");
    if (const json* resources = GetObject(*spec, resources_path)) {
      const Path requests_path = resources_path.Field("requests");
      if (const json* requests = GetObject(*resources, requests_path)) {
        int64_t storage = 0;
        if (ReadQuantityValue(*requests, requests_path.Field("storage"), &storage)) {
          s.storage_request = storage;
        }
      }
    }
    ReadEnum(*spec, spec_path.Field("volumeMode"), kVolumeModes, &s.volume_mode);
    ReadLabelSelector(*spec, spec_path.Field("selector"), &s.selector);
    ReadString(*spec, spec_path.Field("volumeAttributesClassName"),
               &s.volume_attributes_class_name);
  }
  const Path status_path = root.Field("status");
  if (const json* status = GetObject(object, status_path)) {
    ReadEnum(*status, status_path.Field("phase"), kClaimPhases, &pvc.status.phase);
  }
  return pvc;
}

PersistentVolume DecodePersistentVolume(const json& object) {
  const Path root("");
  PersistentVolume pv;
  pv.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    PersistentVolumeSpec& s = pv.spec;
    const Path capacity_path = spec_path.Field("capacity");
    if (const json* capacity = GetObject(*spec, capacity_path)) {
      ReadQuantityValue(*capacity, capacity_path.Field("storage"), &s.capacity);
    }
    ReadAccessModes(*spec, spec_path.Field("accessModes"), &s.access_modes);
    const Path claim_path = spec_path.Field("claimRef");
    if (const json* claim = GetObject(*spec, claim_path)) {
      ClaimReference& ref = s.claim_ref.emplace();
      ReadString(*claim, claim_path.Field("namespace"), &ref.namespace_);
      ReadString(*claim, claim_path.Field("name"), &ref.name);
      ReadString(*claim, claim_path.Field("uid"), &ref.uid);
    }
    ReadString(*spec, spec_path.Field("storageClassName"), &s.storage_class_name);
    const Path affinity_path = spec_path.Field("nodeAffinity");
    if (const json* affinity = GetObject(*spec, affinity_path)) {
      const Path required_path = affinity_path.Field("required");
      if (const json* required = Member(*affinity, required_path)) {
        s.node_affinity = DecodeNodeSelector(*required, required_path.str());
      }
    }
    ReadEnum(*spec, spec_path.Field("volumeMode"), kVolumeModes, &s.volume_mode);
    ReadEnum(*spec, spec_path.Field("persistentVolumeReclaimPolicy"), kReclaimPolicies,
             &s.reclaim_policy);
    ReadString(*spec, spec_path.Field("volumeAttributesClassName"),
               &s.volume_attributes_class_name);

    for (auto it = spec->begin(); it != spec->end(); ++it) {
      const VolumeSourceField* source = FindVolumeSource(it.key());
      if (source == nullptr || it->is_null()) {
        continue;
      }
      const Path source_path = spec_path.Field(it.key());
      if (!s.source.empty()) {
        FailAt(source_path, "a volume has one source, this one also has \"" + s.source + "\"");
      }
      ExpectObject(*it, source_path);
      s.source = it.key();
      if (!source->volume_id.empty()) {
        ReadString(*it, source_path.Field(source->volume_id), &s.in_tree_volume_id);
      }
      if (s.source == "azureFile") {
        const Path namespace_path = source_path.Field("secretNamespace");
        if (Member(*it, namespace_path) != nullptr) {
          ReadString(*it, namespace_path, &s.azure_file_secret_namespace.emplace());
        }
      }
      if (s.source == "csi") {
        CSIPersistentVolumeSource& csi = s.csi.emplace();
        ReadString(*it, source_path.Field("driver"), &csi.driver);
        ReadString(*it, source_path.Field("volumeHandle"), &csi.volume_handle);
      }
    }
  }
  const Path status_path = root.Field("status");
  if (const json* status = GetObject(object, status_path)) {
    ReadEnum(*status, status_path.Field("phase"), kVolumePhases, &pv.status.phase);
  }
  return pv;
}

StorageClass DecodeStorageClass(const json& object) {
  const Path root("");
  StorageClass sc;
  sc.meta = DecodeObjectMeta(object);
  ReadString(object, root.Field("provisioner"), &sc.provisioner);
  ReadEnum(object, root.Field("volumeBindingMode"), kBindingModes, &sc.volume_binding_mode);
  ReadArray(object, root.Field("allowedTopologies"), &sc.allowed_topologies,
            [](const json& e, const Path& p, TopologySelectorTerm* term) {
              ExpectObject(e, p);
              ReadArray(e, p.Field("matchLabelExpressions"), &term->match_label_expressions,
                        [](const json& re, const Path& rp, TopologySelectorRequirement* r) {
                          ExpectObject(re, rp);
                          const Path key_path = rp.Field("key");
                          if (!ReadString(re, key_path, &r->key) || r->key.empty()) {
                            FailAt(key_path, "required");
                          }
                          ReadStringList(re, rp.Field("values"), &r->values);
                          std::sort(r->values.begin(), r->values.end());
                        });
            });
  return sc;
}

CSINode DecodeCSINode(const json& object) {
  const Path root("");
  CSINode node;
  node.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    ReadArray(*spec, spec_path.Field("drivers"), &node.drivers,
              [](const json& e, const Path& p, CSINodeDriver* driver) {
                ExpectObject(e, p);
                const Path name_path = p.Field("name");
                if (!ReadString(e, name_path, &driver->name) || driver->name.empty()) {
                  FailAt(name_path, "required");
                }
                ReadString(e, p.Field("nodeID"), &driver->node_id);
                ReadStringList(e, p.Field("topologyKeys"), &driver->topology_keys);
                const Path allocatable_path = p.Field("allocatable");
                if (const json* allocatable = GetObject(e, allocatable_path)) {
                  int32_t count = 0;
                  if (ReadInt32(*allocatable, allocatable_path.Field("count"), &count)) {
                    driver->allocatable_count = count;
                  }
                }
              });
  }
  return node;
}

CSIDriver DecodeCSIDriver(const json& object) {
  const Path root("");
  CSIDriver driver;
  driver.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    ReadBool(*spec, spec_path.Field("attachRequired"), &driver.attach_required);
    ReadBool(*spec, spec_path.Field("storageCapacity"), &driver.storage_capacity);
    ReadBool(*spec, spec_path.Field("preventPodSchedulingIfMissing"),
             &driver.prevent_pod_scheduling_if_missing);
  }
  return driver;
}

CSIStorageCapacity DecodeCSIStorageCapacity(const json& object) {
  const Path root("");
  CSIStorageCapacity capacity;
  capacity.meta = DecodeObjectMeta(object);
  ReadString(object, root.Field("storageClassName"), &capacity.storage_class_name);
  ReadLabelSelector(object, root.Field("nodeTopology"), &capacity.node_topology);
  int64_t bytes = 0;
  if (ReadQuantityValue(object, root.Field("capacity"), &bytes)) {
    capacity.capacity = bytes;
  }
  if (ReadQuantityValue(object, root.Field("maximumVolumeSize"), &bytes)) {
    capacity.maximum_volume_size = bytes;
  }
  return capacity;
}

VolumeAttachment DecodeVolumeAttachment(const json& object) {
  const Path root("");
  VolumeAttachment attachment;
  attachment.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    ReadString(*spec, spec_path.Field("attacher"), &attachment.attacher);
    ReadString(*spec, spec_path.Field("nodeName"), &attachment.node_name);
    const Path source_path = spec_path.Field("source");
    if (const json* source = GetObject(*spec, source_path)) {
      ReadString(*source, source_path.Field("persistentVolumeName"),
                 &attachment.persistent_volume_name);
    }
  }
  return attachment;
}

Service DecodeService(const json& object) {
  const Path root("");
  Service service;
  service.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    ReadOptionalStringMap(*spec, spec_path.Field("selector"), &service.selector);
  }
  return service;
}

ReplicationController DecodeReplicationController(const json& object) {
  return DecodeController<ReplicationController>(object, ReadOptionalStringMap);
}

ReplicaSet DecodeReplicaSet(const json& object) {
  return DecodeController<ReplicaSet>(object, ReadLabelSelector);
}

StatefulSet DecodeStatefulSet(const json& object) {
  return DecodeController<StatefulSet>(object, ReadLabelSelector);
}

Unstructured DecodeUnstructured(const json& object) {
  const Path root("");
  Unstructured out;
  out.meta = DecodeObjectMeta(object);
  ReadString(object, root.Field("apiVersion"), &out.api_version);
  ReadString(object, root.Field("kind"), &out.kind);
  out.object = object;
  // DecodeObjectMeta checked that metadata is an object.
  out.object["metadata"].erase("managedFields");
  return out;
}

}  // namespace berth::api
