#ifndef BERTH_PKG_API_TYPES_H_
#define BERTH_PKG_API_TYPES_H_

// Slim typed Kubernetes objects: only the fields scheduling reads, parsed once at decode time
// (see pkg/api/codec.h). Everything derived per pod (resource requests, compiled selectors) is
// computed there, never per node per cycle. Objects are immutable once decoded and shared as
// shared_ptr<const T>, so readers on any thread need no locks.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/util/box.h"

namespace berth::api {

// A string->string map kept as a vector sorted by key: label and annotation sets are small, so
// a binary search over contiguous pairs beats a tree in both time and bytes.
class StringMap {
 public:
  using Entry = std::pair<std::string, std::string>;

  StringMap() = default;
  // Takes entries in any order; a repeated key keeps the last value.
  explicit StringMap(std::vector<Entry> entries);

  const std::string* Find(std::string_view key) const;
  // Asks for the memory Find reads (a hint, no effect on results).
  void Prefetch() const {
    const size_t scanned = std::min(entries_.size(), kLinearFindMax);
    for (size_t i = 0; i < scanned; i++) __builtin_prefetch(&entries_[i]);
  }
  bool Contains(std::string_view key) const { return Find(key) != nullptr; }
  // Inserts or replaces.
  void Set(std::string key, std::string value);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }
  const std::vector<Entry>& entries() const { return entries_; }

  bool operator==(const StringMap& other) const = default;

 private:
  static constexpr size_t kLinearFindMax = 16;
  std::vector<Entry> entries_;
};

using Labels = StringMap;

// Well-known resource names.
inline constexpr std::string_view kResourceCPU = "cpu";
inline constexpr std::string_view kResourceMemory = "memory";
inline constexpr std::string_view kResourceEphemeralStorage = "ephemeral-storage";
inline constexpr std::string_view kResourcePods = "pods";

// Defaults the scheduler assumes for a container that states no request, when scoring
// (upstream pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest).
inline constexpr int64_t kDefaultMilliCPURequest = 100;
inline constexpr int64_t kDefaultMemoryRequest = 200LL * 1024 * 1024;

// A set of resource amounts. cpu is in millicores; memory, ephemeral-storage and every other
// resource in whole units (Quantity::Value()).
struct ResourceList {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t pods = 0;
  // Extended resources, hugepages-*, attachable-volumes-*: sorted by name, no duplicates.
  std::vector<std::pair<std::string, int64_t>> scalar;

  // Amount of an arbitrary named resource (0 when absent).
  int64_t Get(std::string_view name) const;
  void Set(std::string_view name, int64_t amount);
  void Add(const ResourceList& other);
  void Subtract(const ResourceList& other);
  // Element-wise maximum.
  void MaxWith(const ResourceList& other);
  bool IsZero() const;
  bool operator==(const ResourceList& other) const = default;
};

// Which of cpu and memory a container/pod states explicitly (needed for non-zero requests).
struct ResourceRequirements {
  ResourceList requests;
  ResourceList limits;
  bool has_cpu_request = false;
  bool has_memory_request = false;

  bool operator==(const ResourceRequirements& other) const = default;
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;

  bool operator==(const OwnerReference& other) const = default;
};

// The object an event is about (events.k8s.io/v1 `regarding`).
struct ObjectReference {
  std::string api_version;  // "v1", "scheduling.x-k8s.io/v1alpha1"
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;

  bool operator==(const ObjectReference& other) const = default;
};

// The annotation kubectl apply writes: a copy of the whole object, often its largest field.
inline constexpr std::string_view kLastAppliedAnnotation =
    "kubectl.kubernetes.io/last-applied-configuration";

struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::string creation_timestamp;  // RFC 3339, as served.
  std::optional<std::string> deletion_timestamp;
  Labels labels;
  // kLastAppliedAnnotation is dropped at decode: scheduling never reads it.
  StringMap annotations;
  std::vector<OwnerReference> owner_references;

  // "namespace/name", or "name" for cluster-scoped objects; the store key.
  std::string Key() const;

  bool operator==(const ObjectMeta& other) const = default;
};

enum class SelectorOperator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

// Parses a base-10 int64 the way Go's strconv.ParseInt(text, 10, 64) does (optional sign, no
// spaces); Gt/Lt selector values use this form.
bool ParseInt64(std::string_view text, int64_t* out);

// One requirement of a label selector or node selector term. For Gt/Lt, `number` holds the
// single value parsed as an integer at decode time.
struct Requirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kExists;
  std::vector<std::string> values;  // Sorted, for binary search.
  int64_t number = 0;

  bool Matches(const Labels& labels) const;
  // Matches a single value that is known to be present (field selectors on metadata.name).
  bool MatchesValue(std::string_view value) const;

  bool operator==(const Requirement& other) const = default;
};

// metav1.LabelSelector compiled to requirements (matchLabels become In with one value).
// An empty selector matches everything; callers model a nil selector as std::nullopt, which
// matches nothing, as upstream's LabelSelectorAsSelector does.
struct LabelSelector {
  std::vector<Requirement> requirements;

  bool Matches(const Labels& labels) const;
  bool Empty() const { return requirements.empty(); }

  bool operator==(const LabelSelector& other) const = default;
};

struct NodeSelectorTerm {
  std::vector<Requirement> match_expressions;
  std::vector<Requirement> match_fields;  // Only metadata.name is a supported field.

  // A term with neither expressions nor fields matches nothing.
  bool Matches(const Labels& node_labels, std::string_view node_name) const;

  bool operator==(const NodeSelectorTerm& other) const = default;
};

// Terms are ORed.
struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;
  bool Matches(const Labels& node_labels, std::string_view node_name) const;

  bool operator==(const NodeSelector& other) const = default;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;

  bool operator==(const PreferredSchedulingTerm& other) const = default;
};

struct NodeAffinity {
  std::optional<NodeSelector> required;
  std::vector<PreferredSchedulingTerm> preferred;

  bool operator==(const NodeAffinity& other) const = default;
};

struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> namespaces;
  std::string topology_key;
  std::optional<LabelSelector> namespace_selector;
  std::vector<std::string> match_label_keys;
  std::vector<std::string> mismatch_label_keys;

  bool operator==(const PodAffinityTerm& other) const = default;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;
  PodAffinityTerm term;

  bool operator==(const WeightedPodAffinityTerm& other) const = default;
};

struct PodAffinity {
  std::vector<PodAffinityTerm> required;
  std::vector<WeightedPodAffinityTerm> preferred;

  bool operator==(const PodAffinity& other) const = default;
};

struct Affinity {
  std::optional<NodeAffinity> node_affinity;
  std::optional<PodAffinity> pod_affinity;
  std::optional<PodAffinity> pod_anti_affinity;

  bool operator==(const Affinity& other) const = default;
};

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute, kAll };

// "NoSchedule", "PreferNoSchedule", "NoExecute"; "" for kAll (a toleration's empty effect).
std::string_view TaintEffectName(TaintEffect effect);

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;

  // "key=value:Effect" as kubectl prints it.
  std::string ToString() const;

  bool operator==(const Taint& other) const = default;
};

enum class TolerationOperator { kEqual, kExists };

struct Toleration {
  std::string key;  // Empty with kExists tolerates every key.
  TolerationOperator op = TolerationOperator::kEqual;
  std::string value;
  TaintEffect effect = TaintEffect::kAll;  // kAll: the toleration's effect was empty.
  std::optional<int64_t> toleration_seconds;

  bool Tolerates(const Taint& taint) const;

  bool operator==(const Toleration& other) const = default;
};

// True when some toleration tolerates the taint.
bool TolerationsTolerate(const std::vector<Toleration>& tolerations, const Taint& taint);

enum class WhenUnsatisfiable { kDoNotSchedule, kScheduleAnyway };
enum class NodeInclusionPolicy { kHonor, kIgnore };

struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  WhenUnsatisfiable when_unsatisfiable = WhenUnsatisfiable::kDoNotSchedule;
  std::optional<LabelSelector> label_selector;
  std::optional<int32_t> min_domains;
  NodeInclusionPolicy node_affinity_policy = NodeInclusionPolicy::kHonor;
  NodeInclusionPolicy node_taints_policy = NodeInclusionPolicy::kIgnore;
  std::vector<std::string> match_label_keys;

  bool operator==(const TopologySpreadConstraint& other) const = default;
};

struct ContainerPort {
  int32_t container_port = 0;
  int32_t host_port = 0;  // 0: no host port.
  std::string protocol = "TCP";
  std::string host_ip;  // Empty means 0.0.0.0.

  bool operator==(const ContainerPort& other) const = default;
};

struct Container {
  std::string name;
  std::string image;
  ResourceRequirements resources;
  std::vector<ContainerPort> ports;
  // An init container with restartPolicy: Always (a sidecar).
  bool restartable = false;
  // Some restartPolicyRules entry has action RestartAllContainers: the node must declare the
  // RestartAllContainersOnContainerExits feature (NodeDeclaredFeatures).
  bool restarts_all_containers = false;
  // Some volumeMounts entry sets bindMountOptions: the node must declare VolumeBindMountOptions.
  bool bind_mount_options = false;

  bool operator==(const Container& other) const = default;
};

struct Volume {
  std::string name;
  // The volume source's field name: "persistentVolumeClaim", "emptyDir", "hostPath", ...
  std::string source;
  std::string claim_name;  // For persistentVolumeClaim.
  // The source's readOnly, for the sources whose readOnly the volume plugins read:
  // persistentVolumeClaim, gcePersistentDisk, iscsi and rbd.
  bool read_only = false;
  // The disk an in-tree source names: gcePersistentDisk.pdName, awsElasticBlockStore.volumeID,
  // iscsi.iqn, rbd.image, azureDisk.diskURI, cinder.volumeID or portworxVolume.volumeID; empty for
  // any other source.
  std::string disk;
  // For rbd: the Ceph monitors and the pool (the apiserver defaults the pool to "rbd").
  std::vector<std::string> rbd_monitors;
  std::string rbd_pool;
  // For csi (an inline CSI volume): the driver's name.
  std::string csi_driver;

  bool operator==(const Volume& other) const = default;
};

enum class PreemptionPolicy { kPreemptLowerPriority, kNever };

// One entry of spec.resourceClaims: a claim the pod names, or a template the resourceclaim
// controller makes the pod's own claim from. At most one source is set in a valid pod.
struct PodResourceClaim {
  std::string name;
  std::optional<std::string> resource_claim_name;
  std::optional<std::string> resource_claim_template_name;

  bool operator==(const PodResourceClaim& other) const = default;
};

// status.resourceClaimStatuses: the claim the controller made for a template entry (unset
// resource_claim_name: no claim is needed for that entry).
struct PodResourceClaimStatus {
  std::string name;
  std::optional<std::string> resource_claim_name;

  bool operator==(const PodResourceClaimStatus& other) const = default;
};

// status.extendedResourceClaimStatus: the claim the scheduler made for the pod's DRA-backed
// extended resources, and which container request each of its device requests serves.
struct ContainerExtendedResourceRequest {
  std::string container_name;
  std::string resource_name;
  std::string request_name;

  bool operator==(const ContainerExtendedResourceRequest& other) const = default;
};

struct PodExtendedResourceClaimStatus {
  std::vector<ContainerExtendedResourceRequest> request_mappings;
  std::string resource_claim_name;

  bool operator==(const PodExtendedResourceClaimStatus& other) const = default;
};

struct PodSpec {
  std::string scheduler_name = "default-scheduler";
  std::string node_name;
  int32_t priority = 0;
  std::string priority_class_name;
  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  ResourceList overhead;
  // Pod-level resources (spec.resources), when set. Boxed, as affinity: rarely set, and a pod
  // would otherwise carry the room for them.
  util::Box<ResourceRequirements> resources;
  StringMap node_selector;
  util::Box<Affinity> affinity;
  std::vector<Toleration> tolerations;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<std::string> scheduling_gates;
  std::vector<Volume> volumes;
  bool host_network = false;
  std::optional<bool> host_users;  // spec.hostUsers; unset means true.
  // Some ephemeral container's volumeMounts entry sets bindMountOptions (ephemeral containers
  // are otherwise not kept: they request no resources).
  bool ephemeral_bind_mount_options = false;
  // spec.resourceClaims (dynamic resource allocation).
  std::vector<PodResourceClaim> resource_claims;
  // spec.schedulingGroup.podGroupName: the upstream PodGroup (scheduling.k8s.io) the pod joins, in
  // its own namespace. Empty but set when schedulingGroup names no PodGroup (a form of it Berth
  // does not know), so the pod is not taken for one outside any group.
  std::optional<std::string> scheduling_group;

  bool operator==(const PodSpec& other) const = default;
};

struct Condition {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;

  bool operator==(const Condition& other) const = default;
};

struct PodStatus {
  std::string phase;
  // Only the PodScheduled and DisruptionTarget conditions are kept at decode.
  std::vector<Condition> conditions;
  std::string nominated_node_name;
  // status.startTime as served (RFC 3339 in UTC, whole seconds); empty until the kubelet sets it.
  std::string start_time;
  std::vector<PodResourceClaimStatus> resource_claim_statuses;
  util::Box<PodExtendedResourceClaimStatus> extended_resource_claim_status;

  bool operator==(const PodStatus& other) const = default;
};

struct Pod {
  ObjectMeta meta;
  PodSpec spec;
  PodStatus status;

  // Computed once at decode with upstream rules (containers summed, init containers as a max
  // that accounts for sidecars, pod-level resources, overhead added).
  ResourceList requests;
  // The same with kDefaultMilliCPURequest / kDefaultMemoryRequest for containers that state
  // no cpu / memory request; used for scoring (upstream "non-zero" requests).
  int64_t non_zero_milli_cpu = 0;
  int64_t non_zero_memory = 0;
  // Host ports the pod occupies (containers and init containers, host_port != 0).
  std::vector<ContainerPort> host_ports;

  bool IsTerminating() const { return meta.deletion_timestamp.has_value(); }
  std::string Key() const { return meta.Key(); }

  bool operator==(const Pod& other) const = default;
};

struct ContainerImage {
  std::vector<std::string> names;
  int64_t size_bytes = 0;

  bool operator==(const ContainerImage& other) const = default;
};

struct NodeSpec {
  bool unschedulable = false;
  std::vector<Taint> taints;

  bool operator==(const NodeSpec& other) const = default;
};

struct NodeStatus {
  ResourceList capacity;
  ResourceList allocatable;
  std::vector<ContainerImage> images;
  std::vector<Condition> conditions;
  // status.declaredFeatures: the node features the kubelet declares (NodeDeclaredFeatures).
  std::vector<std::string> declared_features;

  bool operator==(const NodeStatus& other) const = default;
};

struct Node {
  ObjectMeta meta;
  NodeSpec spec;
  NodeStatus status;

  const std::string& Name() const { return meta.name; }

  bool operator==(const Node& other) const = default;
};

using PodPtr = std::shared_ptr<const Pod>;
using NodePtr = std::shared_ptr<const Node>;

}  // namespace berth::api

#endif  // BERTH_PKG_API_TYPES_H_
