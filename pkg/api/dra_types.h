#ifndef BERTH_PKG_API_DRA_TYPES_H_
#define BERTH_PKG_API_DRA_TYPES_H_

// Slim resource.k8s.io/v1 objects for dynamic resource allocation: ResourceSlice, DeviceClass,
// ResourceClaim, ResourceClaimTemplate and DeviceTaintRule, holding what the DynamicResources
// plugin reads to allocate devices and what it writes back (status.allocation, reservedFor).
//
// Fields of features that are alpha (off by default) in v1.37 are not modelled. When such a
// field is present on an object (a cluster that turned the gate on), its JSON path is recorded
// in `unsupported_fields`, so the plugin can hold the pods that depend on it Pending with a reason
// instead of allocating as if the field were absent.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pkg/api/quantity.h"
#include "pkg/api/types.h"

namespace berth::api {

// The finalizer the scheduler puts on a claim it allocates, so that the claim is not deleted
// while the allocation is being written and used.
inline constexpr std::string_view kResourceClaimFinalizer =
    "resource.kubernetes.io/delete-protection";
// The annotation that marks the claim the scheduler creates for a pod's DRA-backed extended
// resources.
inline constexpr std::string_view kExtendedResourceClaimAnnotation =
    "resource.kubernetes.io/extended-resource-claim";
// The annotation the resourceclaim controller puts on a claim made from a template: the name of
// the pod's claim entry it was made for.
inline constexpr std::string_view kPodResourceClaimAnnotation =
    "resource.kubernetes.io/pod-claim-name";
// The namespace label that allows admin access to devices.
inline constexpr std::string_view kDraAdminNamespaceLabel = "resource.kubernetes.io/admin-access";
// The prefix of the implicit extended resource name of every DeviceClass.
inline constexpr std::string_view kDeviceClassResourcePrefix =
    "deviceclass.resource.kubernetes.io/";

// API limits the allocator relies on (resource.k8s.io/v1 validation).
inline constexpr size_t kResourceClaimReservedForMaxSize = 256;
inline constexpr size_t kAllocationResultsMaxSize = 32;
inline constexpr size_t kCelSelectorExpressionMaxLength = 10 * 1024;
inline constexpr uint64_t kCelSelectorExpressionMaxCost = 1000000;
// The other count and size limits of resource.k8s.io/v1 validation the decoders enforce, so that
// an object no apiserver would have accepted cannot make the allocator's work larger.
inline constexpr size_t kResourceSliceMaxDevices = 128;
// When any device of the slice has taints or consumes counters.
inline constexpr size_t kResourceSliceMaxDevicesWithAdvancedFeatures = 64;
inline constexpr size_t kResourceSliceMaxCounterSets = 8;
inline constexpr size_t kResourceSliceMaxCountersPerCounterSet = 32;
inline constexpr size_t kResourceSliceMaxDeviceCounterConsumptionsPerDevice = 2;
inline constexpr size_t kResourceSliceMaxCountersPerDeviceCounterConsumption = 32;
inline constexpr size_t kResourceSliceMaxAttributesAndCapacitiesPerDevice = 32;
inline constexpr size_t kDeviceAttributeMaxValueLength = 64;
inline constexpr size_t kDeviceTaintsMaxLength = 16;
inline constexpr size_t kDeviceTolerationsMaxLength = 16;
inline constexpr size_t kBindingConditionsMaxSize = 4;
inline constexpr size_t kBindingFailureConditionsMaxSize = 4;
inline constexpr size_t kCapacityRequestPolicyDiscreteMaxOptions = 10;
inline constexpr size_t kDeviceRequestsMaxSize = kAllocationResultsMaxSize;
inline constexpr size_t kDeviceConstraintsMaxSize = 32;
inline constexpr size_t kDeviceConfigMaxSize = 32;
inline constexpr size_t kDeviceSelectorsMaxSize = 32;
inline constexpr size_t kFirstAvailableDeviceRequestMaxSize = 8;
// requests[] of a constraint or a configuration entry.
inline constexpr size_t kDeviceRequestNamesMaxSize = 32;
inline constexpr size_t kAllocationConfigMaxSize = 64;
inline constexpr size_t kOpaqueParametersMaxLength = 10 * 1024;
// status.devices[]: one entry per allocated device, so no more than the allocation's results.
inline constexpr size_t kAllocatedDeviceStatusMaxSize = kAllocationResultsMaxSize;
// status.devices[].conditions[].
inline constexpr size_t kAllocatedDeviceStatusMaxConditions = 8;

// One value of a device attribute. Exactly one alternative is set in a valid object.
struct DeviceAttribute {
  enum class Kind { kInt, kBool, kString, kVersion };
  Kind kind = Kind::kString;
  int64_t int_value = 0;
  bool bool_value = false;
  std::string string_value;  // kString, and kVersion's semantic version text.

  bool operator==(const DeviceAttribute& other) const = default;
};

// A range of amounts a request may consume from a capacity that several allocations share.
struct CapacityRequestPolicyRange {
  Quantity min;
  std::optional<Quantity> max;
  std::optional<Quantity> step;
};

struct CapacityRequestPolicy {
  std::optional<Quantity> default_value;
  std::vector<Quantity> valid_values;
  std::optional<CapacityRequestPolicyRange> valid_range;
};

struct DeviceCapacity {
  Quantity value;
  std::optional<CapacityRequestPolicy> request_policy;
};

struct DeviceTaint {
  enum class Effect { kNone, kNoSchedule, kNoExecute };
  std::string key;
  std::string value;
  Effect effect = Effect::kNoSchedule;
  std::optional<std::string> time_added;  // RFC 3339 as served.

  bool operator==(const DeviceTaint& other) const = default;
};

// Counters a device draws from one of its slice's shared counter sets.
struct DeviceCounterConsumption {
  std::string counter_set;
  std::map<std::string, Quantity, std::less<>> counters;
};

// Attribute and capacity names are "domain/id" or a bare "id" (domain: the driver's name).
struct Device {
  std::string name;
  std::map<std::string, DeviceAttribute, std::less<>> attributes;
  std::map<std::string, DeviceCapacity, std::less<>> capacity;
  std::vector<DeviceCounterConsumption> consumes_counters;
  // Per-device node placement, for slices with perDeviceNodeSelection: exactly one is set.
  std::optional<std::string> node_name;
  std::optional<NodeSelector> node_selector;
  bool all_nodes = false;
  std::vector<DeviceTaint> taints;
  bool binds_to_node = false;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  bool allow_multiple_allocations = false;
};

struct CounterSet {
  std::string name;
  std::map<std::string, Quantity, std::less<>> counters;
};

struct ResourcePool {
  std::string name;
  int64_t generation = 0;
  int64_t resource_slice_count = 0;
};

struct ResourceSliceSpec {
  std::string driver;
  ResourcePool pool;
  // Which nodes the slice's devices are reachable from: exactly one of these is set.
  std::optional<std::string> node_name;
  std::optional<NodeSelector> node_selector;
  bool all_nodes = false;
  bool per_device_node_selection = false;
  std::vector<Device> devices;
  std::vector<CounterSet> shared_counters;
};

struct ResourceSlice {
  ObjectMeta meta;
  ResourceSliceSpec spec;
  std::vector<std::string> unsupported_fields;
};

struct CelDeviceSelector {
  std::string expression;

  bool operator==(const CelDeviceSelector& other) const = default;
};

// One entry of a DeviceClass's spec.config: opaque parameters for one driver.
struct DeviceClassConfiguration {
  std::string driver;
  // The opaque parameters, kept as the JSON text served, to be copied into the allocation.
  std::string parameters_json;
};

struct DeviceClass {
  ObjectMeta meta;
  std::vector<CelDeviceSelector> selectors;
  // The extended resource a pod may ask for in its containers' requests to be served by a
  // device of this class (DRA-backed extended resources).
  std::optional<std::string> extended_resource_name;
  // spec.config, copied into an allocation's config with source FromClass.
  std::vector<DeviceClassConfiguration> config;
  std::vector<std::string> unsupported_fields;
};

enum class DeviceAllocationMode { kExactCount, kAll };

struct DeviceToleration {
  enum class Operator { kEqual, kExists };
  std::string key;
  Operator op = Operator::kEqual;
  std::string value;
  std::optional<DeviceTaint::Effect> effect;  // Unset: tolerates every effect.
  std::optional<int64_t> toleration_seconds;

  bool operator==(const DeviceToleration& other) const = default;
};

// The device part of a request or of one firstAvailable subrequest.
struct ExactDeviceRequest {
  std::string device_class_name;
  std::vector<CelDeviceSelector> selectors;
  DeviceAllocationMode allocation_mode = DeviceAllocationMode::kExactCount;
  int64_t count = 1;
  bool admin_access = false;
  std::vector<DeviceToleration> tolerations;
  // capacity.requests: how much of each shared capacity one allocated device gives the claim.
  std::map<std::string, Quantity, std::less<>> capacity_requests;

  bool operator==(const ExactDeviceRequest& other) const = default;
};

struct DeviceSubRequest {
  std::string name;
  ExactDeviceRequest request;

  bool operator==(const DeviceSubRequest& other) const = default;
};

struct DeviceRequest {
  std::string name;
  std::optional<ExactDeviceRequest> exactly;
  std::vector<DeviceSubRequest> first_available;  // Tried in order when `exactly` is unset.

  bool operator==(const DeviceRequest& other) const = default;
};

struct DeviceConstraint {
  std::vector<std::string> requests;  // Empty: every request of the claim.
  std::optional<std::string> match_attribute;
  // Every device must have the attribute, each with a different value (DRAConsumableCapacity).
  std::optional<std::string> distinct_attribute;

  bool operator==(const DeviceConstraint& other) const = default;
};

struct DeviceClaimConfiguration {
  std::vector<std::string> requests;
  std::string driver;
  // The opaque parameters, kept as the JSON text served, to be copied into the allocation.
  std::string parameters_json;

  bool operator==(const DeviceClaimConfiguration& other) const = default;
};

struct ResourceClaimSpec {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  std::vector<DeviceClaimConfiguration> config;

  bool operator==(const ResourceClaimSpec& other) const = default;
};

struct DeviceRequestAllocationResult {
  std::string request;  // "req" or "req/subrequest".
  std::string driver;
  std::string pool;
  std::string device;
  bool admin_access = false;
  std::vector<DeviceToleration> tolerations;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<std::string> share_id;
  std::map<std::string, Quantity, std::less<>> consumed_capacity;

  bool operator==(const DeviceRequestAllocationResult& other) const = default;
};

struct DeviceAllocationConfiguration {
  bool from_class = false;  // source: FromClass, else FromClaim.
  std::vector<std::string> requests;
  std::string driver;
  std::string parameters_json;

  bool operator==(const DeviceAllocationConfiguration& other) const = default;
};

struct AllocationResult {
  std::vector<DeviceRequestAllocationResult> results;
  std::vector<DeviceAllocationConfiguration> config;
  std::optional<NodeSelector> node_selector;
  std::optional<std::string> allocation_timestamp;

  bool operator==(const AllocationResult& other) const = default;
};

struct ResourceClaimConsumerReference {
  std::string api_group;
  std::string resource;
  std::string name;
  std::string uid;

  bool operator==(const ResourceClaimConsumerReference& other) const = default;
};

struct AllocatedDeviceStatus {
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  std::vector<Condition> conditions;

  bool operator==(const AllocatedDeviceStatus& other) const = default;
};

struct ResourceClaimStatus {
  std::optional<AllocationResult> allocation;
  std::vector<ResourceClaimConsumerReference> reserved_for;
  std::vector<AllocatedDeviceStatus> devices;

  bool operator==(const ResourceClaimStatus& other) const = default;
};

struct ResourceClaim {
  ObjectMeta meta;
  std::vector<std::string> finalizers;
  ResourceClaimSpec spec;
  ResourceClaimStatus status;
  std::vector<std::string> unsupported_fields;
};

struct ResourceClaimTemplate {
  ObjectMeta meta;
  ResourceClaimSpec spec;
  std::vector<std::string> unsupported_fields;
};

// Selects the devices a DeviceTaintRule taints; unset fields match everything.
struct DeviceTaintSelector {
  std::optional<std::string> driver;
  std::optional<std::string> pool;
  std::optional<std::string> device;
};

struct DeviceTaintRule {
  ObjectMeta meta;
  std::optional<DeviceTaintSelector> device_selector;
  DeviceTaint taint;
  std::vector<std::string> unsupported_fields;
};

using ResourceSlicePtr = std::shared_ptr<const ResourceSlice>;
using DeviceClassPtr = std::shared_ptr<const DeviceClass>;
using ResourceClaimPtr = std::shared_ptr<const ResourceClaim>;

}  // namespace berth::api

#endif  // BERTH_PKG_API_DRA_TYPES_H_
