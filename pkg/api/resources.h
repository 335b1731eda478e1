#ifndef BERTH_PKG_API_RESOURCES_H_
#define BERTH_PKG_API_RESOURCES_H_

// Slim typed objects for the kinds scheduling plugins read besides pods and nodes: namespaces,
// disruption budgets, storage objects, workload controllers, and custom resources kept whole.
// Like pkg/api/types.h they hold only the fields kube-scheduler's plugins read, decoded and
// validated once (pkg/api/resources_codec.h), then shared immutable as shared_ptr<const T>.
// Every type has `ObjectMeta meta`, the store key's source.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/types.h"

namespace berth::api {

// ---- core/v1 Namespace ----

// Only the labels are read (pod affinity namespaceSelector).
struct Namespace {
  ObjectMeta meta;

  bool operator==(const Namespace& other) const = default;
};

// ---- policy/v1 PodDisruptionBudget ----

// An IntOrString field that the apiserver only accepts as an integer or "<integer>%".
struct IntOrPercent {
  int32_t value = 0;
  bool percent = false;

  // The absolute amount out of `total`: the integer itself, or value percent of total rounded up
  // or down.
  int64_t Scaled(int32_t total, bool round_up) const;

  bool operator==(const IntOrPercent& other) const = default;
};

struct PodDisruptionBudgetSpec {
  std::optional<IntOrPercent> min_available;
  std::optional<IntOrPercent> max_unavailable;
  // std::nullopt when absent (selects no pod).
  std::optional<LabelSelector> selector;

  bool operator==(const PodDisruptionBudgetSpec& other) const = default;
};

struct PodDisruptionBudgetStatus {
  int32_t disruptions_allowed = 0;
  int32_t current_healthy = 0;
  int32_t desired_healthy = 0;
  int32_t expected_pods = 0;
  // Names of pods whose eviction was admitted but not yet observed by the disruption controller
  // (the keys of status.disruptedPods); sorted.
  std::vector<std::string> disrupted_pods;

  bool IsDisrupted(std::string_view pod_name) const;

  bool operator==(const PodDisruptionBudgetStatus& other) const = default;
};

struct PodDisruptionBudget {
  ObjectMeta meta;
  PodDisruptionBudgetSpec spec;
  PodDisruptionBudgetStatus status;

  bool operator==(const PodDisruptionBudget& other) const = default;
};

// ---- core/v1 PersistentVolumeClaim and PersistentVolume ----

enum class PersistentVolumeAccessMode {
  kReadWriteOnce,
  kReadOnlyMany,
  kReadWriteMany,
  kReadWriteOncePod
};
enum class PersistentVolumeMode { kFilesystem, kBlock };
enum class PersistentVolumeClaimPhase { kPending, kBound, kLost };
enum class PersistentVolumePhase { kPending, kAvailable, kBound, kReleased, kFailed };
enum class PersistentVolumeReclaimPolicy { kRetain, kDelete, kRecycle };

// The deprecated annotation that names a claim's or volume's class; it wins over
// spec.storageClassName when present.
inline constexpr std::string_view kBetaStorageClassAnnotation =
    "volume.beta.kubernetes.io/storage-class";
// Set by the scheduler on a claim it wants provisioned for a node.
inline constexpr std::string_view kSelectedNodeAnnotation = "volume.kubernetes.io/selected-node";
// Set on a claim once the volume controller finished binding it.
inline constexpr std::string_view kBindCompletedAnnotation = "pv.kubernetes.io/bind-completed";

struct PersistentVolumeClaimSpec {
  std::string storage_class_name;  // Empty when unset.
  std::string volume_name;         // The bound (or pre-bound) volume; empty when unbound.
  std::vector<PersistentVolumeAccessMode> access_modes;
  // resources.requests.storage in bytes; std::nullopt when the claim requests no storage.
  std::optional<int64_t> storage_request;
  PersistentVolumeMode volume_mode = PersistentVolumeMode::kFilesystem;
  // std::nullopt when absent: any volume qualifies.
  std::optional<LabelSelector> selector;
  std::string volume_attributes_class_name;  // Empty when unset.

  bool operator==(const PersistentVolumeClaimSpec& other) const = default;
};

struct PersistentVolumeClaimStatus {
  PersistentVolumeClaimPhase phase = PersistentVolumeClaimPhase::kPending;

  bool operator==(const PersistentVolumeClaimStatus& other) const = default;
};

struct PersistentVolumeClaim {
  ObjectMeta meta;
  PersistentVolumeClaimSpec spec;
  PersistentVolumeClaimStatus status;

  // The class the claim asks for: kBetaStorageClassAnnotation, else spec.storage_class_name.
  const std::string& StorageClassName() const;
  bool HasAccessMode(PersistentVolumeAccessMode mode) const;

  bool operator==(const PersistentVolumeClaim& other) const = default;
};

struct ClaimReference {
  std::string namespace_;
  std::string name;
  std::string uid;  // Empty for a volume pre-bound by name only.

  bool operator==(const ClaimReference& other) const = default;
};

struct CSIPersistentVolumeSource {
  std::string driver;
  std::string volume_handle;

  bool operator==(const CSIPersistentVolumeSource& other) const = default;
};

struct PersistentVolumeSpec {
  int64_t capacity = 0;  // capacity.storage in bytes.
  std::vector<PersistentVolumeAccessMode> access_modes;
  std::optional<ClaimReference> claim_ref;
  std::string storage_class_name;  // Empty when unset.
  // nodeAffinity.required: the nodes that can reach the volume; std::nullopt: every node.
  std::optional<NodeSelector> node_affinity;
  PersistentVolumeMode volume_mode = PersistentVolumeMode::kFilesystem;
  PersistentVolumeReclaimPolicy reclaim_policy = PersistentVolumeReclaimPolicy::kRetain;
  std::string volume_attributes_class_name;  // Empty when unset.
  // The volume source's member name ("csi", "local", "gcePersistentDisk", ...), empty when the
  // spec names none Berth knows.
  std::string source;
  // For source "csi".
  std::optional<CSIPersistentVolumeSource> csi;
  // For the in-tree block sources a CSI driver can take over, the source's own volume identity
  // (awsElasticBlockStore.volumeID, gcePersistentDisk.pdName, azureDisk.diskURI,
  // cinder.volumeID, vsphereVolume.volumePath, portworxVolume.volumeID); empty otherwise.
  std::string in_tree_volume_id;
  // azureFile.secretNamespace: CSI translation of an azureFile volume needs a namespace for its
  // secret, from here or else from claimRef.
  std::optional<std::string> azure_file_secret_namespace;

  bool operator==(const PersistentVolumeSpec& other) const = default;
};

struct PersistentVolumeStatus {
  PersistentVolumePhase phase = PersistentVolumePhase::kPending;

  bool operator==(const PersistentVolumeStatus& other) const = default;
};

struct PersistentVolume {
  ObjectMeta meta;
  PersistentVolumeSpec spec;
  PersistentVolumeStatus status;

  // kBetaStorageClassAnnotation, else spec.storage_class_name.
  const std::string& StorageClassName() const;

  bool operator==(const PersistentVolume& other) const = default;
};

// ---- storage.k8s.io/v1 ----

enum class VolumeBindingMode { kImmediate, kWaitForFirstConsumer };

// One requirement of a topology selector term: the label `key` has one of `values` (sorted).
struct TopologySelectorRequirement {
  std::string key;
  std::vector<std::string> values;

  bool operator==(const TopologySelectorRequirement& other) const = default;
};

// Requirements are ANDed.
struct TopologySelectorTerm {
  std::vector<TopologySelectorRequirement> match_label_expressions;

  bool operator==(const TopologySelectorTerm& other) const = default;
};

struct StorageClass {
  ObjectMeta meta;
  std::string provisioner;
  // The apiserver defaults an unset mode to Immediate.
  VolumeBindingMode volume_binding_mode = VolumeBindingMode::kImmediate;
  // Terms are ORed; empty: volumes can be provisioned anywhere.
  std::vector<TopologySelectorTerm> allowed_topologies;

  // Whether a node with these labels is inside allowed_topologies: true with no terms; a term
  // without requirements, or with a requirement that lists no value, allows nothing.
  bool AllowsTopology(const Labels& node_labels) const;

  bool operator==(const StorageClass& other) const = default;
};

struct CSINodeDriver {
  std::string name;
  std::string node_id;
  std::vector<std::string> topology_keys;
  // allocatable.count: how many of the driver's volumes the node can attach; std::nullopt: no
  // limit.
  std::optional<int32_t> allocatable_count;

  bool operator==(const CSINodeDriver& other) const = default;
};

// The annotation on a CSINode listing the in-tree plugins migrated to CSI on that node.
inline constexpr std::string_view kMigratedPluginsAnnotation =
    "storage.alpha.kubernetes.io/migrated-plugins";

struct CSINode {
  ObjectMeta meta;
  std::vector<CSINodeDriver> drivers;

  // The driver named `name`, or nullptr.
  const CSINodeDriver* FindDriver(std::string_view name) const;

  bool operator==(const CSINode& other) const = default;
};

// Unset booleans take the values the apiserver (or, for the last one, the scheduler) assumes.
struct CSIDriver {
  ObjectMeta meta;
  bool attach_required = true;
  bool storage_capacity = false;
  bool prevent_pod_scheduling_if_missing = false;

  bool operator==(const CSIDriver& other) const = default;
};

// What a CSI driver reports it can still provision for a class in one topology segment.
struct CSIStorageCapacity {
  ObjectMeta meta;
  std::string storage_class_name;
  // The nodes that can reach this capacity; std::nullopt: none.
  std::optional<LabelSelector> node_topology;
  std::optional<int64_t> capacity;             // Bytes.
  std::optional<int64_t> maximum_volume_size;  // Bytes.

  bool operator==(const CSIStorageCapacity& other) const = default;
};

struct VolumeAttachment {
  ObjectMeta meta;
  std::string attacher;  // The CSI driver.
  std::string node_name;
  // spec.source.persistentVolumeName; empty for an inline volume.
  std::string persistent_volume_name;

  bool operator==(const VolumeAttachment& other) const = default;
};

// ---- Spreading owners: core/v1 Service and ReplicationController, apps/v1 ----

struct Service {
  ObjectMeta meta;
  // spec.selector; std::nullopt when absent (a service without a selector matches no pod).
  std::optional<StringMap> selector;

  bool operator==(const Service& other) const = default;
};

struct ReplicationController {
  ObjectMeta meta;
  std::optional<StringMap> selector;  // spec.selector
  int32_t replicas = 1;               // The apiserver's default.

  bool operator==(const ReplicationController& other) const = default;
};

struct ReplicaSet {
  ObjectMeta meta;
  std::optional<LabelSelector> selector;  // spec.selector
  int32_t replicas = 1;

  bool operator==(const ReplicaSet& other) const = default;
};

struct StatefulSet {
  ObjectMeta meta;
  std::optional<LabelSelector> selector;  // spec.selector
  int32_t replicas = 1;

  bool operator==(const StatefulSet& other) const = default;
};

// ---- Custom resources ----

// An object of a kind Berth has no type for (a CRD's): its metadata decoded like any other, and
// the rest kept as served for the plugin that owns the kind to read spec and status from.
struct Unstructured {
  ObjectMeta meta;
  std::string api_version;
  std::string kind;
  // The whole object except metadata.managedFields, which no reader needs and which is often the
  // largest part.
  nlohmann::json object;

  bool operator==(const Unstructured& other) const = default;
};

using NamespacePtr = std::shared_ptr<const Namespace>;
using PodDisruptionBudgetPtr = std::shared_ptr<const PodDisruptionBudget>;
using PersistentVolumeClaimPtr = std::shared_ptr<const PersistentVolumeClaim>;
using PersistentVolumePtr = std::shared_ptr<const PersistentVolume>;
using StorageClassPtr = std::shared_ptr<const StorageClass>;
using CSINodePtr = std::shared_ptr<const CSINode>;
using CSIDriverPtr = std::shared_ptr<const CSIDriver>;
using CSIStorageCapacityPtr = std::shared_ptr<const CSIStorageCapacity>;
using VolumeAttachmentPtr = std::shared_ptr<const VolumeAttachment>;
using ServicePtr = std::shared_ptr<const Service>;
using ReplicationControllerPtr = std::shared_ptr<const ReplicationController>;
using ReplicaSetPtr = std::shared_ptr<const ReplicaSet>;
using StatefulSetPtr = std::shared_ptr<const StatefulSet>;
using UnstructuredPtr = std::shared_ptr<const Unstructured>;

}  // namespace berth::api

#endif  // BERTH_PKG_API_RESOURCES_H_
