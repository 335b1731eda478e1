// The resource.k8s.io/v1 decoders and encoders: realistic objects decode to what they say, the
// fields of alpha features are recorded by path, and every malformed or oversized shape is refused
// with a DecodeError naming its field.

#include "pkg/api/dra_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/errors.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;

// A node-local slice of two GPUs, with what the beta features add to a device.
constexpr const char* kGpuSlice = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceSlice",
  "metadata": {"name": "worker-1-gpu.example.com-x8k2l", "uid": "6c1e4f5a-0000-4000-8000-000000000001",
               "resourceVersion": "3301", "generation": 2,
               "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "worker-1",
                                    "uid": "6c1e4f5a-0000-4000-8000-00000000000a",
                                    "controller": true}]},
  "spec": {
    "driver": "gpu.example.com",
    "pool": {"name": "worker-1", "generation": 4, "resourceSliceCount": 1},
    "nodeName": "worker-1",
    "devices": [
      {
        "name": "gpu-0",
        "attributes": {
          "index": {"int": 0},
          "productName": {"string": "Example A100 80GB"},
          "driverVersion": {"version": "1.2.3"},
          "sharing": {"bool": true},
          "gpu.example.com/uuid": {"string": "GPU-5a1b"}
        },
        "capacity": {
          "memory": {"value": "80Gi"},
          "cores": {"value": "108", "requestPolicy": {"default": "1",
                    "validRange": {"min": "1", "max": "108", "step": "1"}}},
          "slots": {"value": "8", "requestPolicy": {"default": "2", "validValues": ["2", "4", "8"]}}
        },
        "taints": [{"key": "gpu.example.com/unhealthy", "value": "ecc", "effect": "NoSchedule",
                    "timeAdded": "2026-11-20T08:00:00Z"}],
        "bindsToNode": true,
        "bindingConditions": ["gpu.example.com/attached"],
        "bindingFailureConditions": ["gpu.example.com/attach-failed"],
        "allowMultipleAllocations": true
      },
      {"name": "gpu-1", "attributes": {"index": {"int": 1}}, "capacity": {"memory": {"value": "80Gi"}}}
    ]
  }
})json";

// A partitionable GPU: the counter set in one slice, the partitions in another, each partition
// reachable from its own nodes.
constexpr const char* kCounterSlice = R"json({
  "metadata": {"name": "pool-a-counters"},
  "spec": {
    "driver": "gpu.example.com",
    "pool": {"name": "pool-a", "generation": 1, "resourceSliceCount": 2},
    "allNodes": true,
    "sharedCounters": [{"name": "gpu-0-counters",
                        "counters": {"memory": {"value": "40Gi"}, "slices": {"value": "7"}}}]
  }
})json";

constexpr const char* kPartitionSlice = R"json({
  "metadata": {"name": "pool-a-partitions"},
  "spec": {
    "driver": "gpu.example.com",
    "pool": {"name": "pool-a", "generation": 1, "resourceSliceCount": 2},
    "perDeviceNodeSelection": true,
    "devices": [
      {"name": "gpu-0-half-0", "nodeName": "worker-2",
       "consumesCounters": [{"counterSet": "gpu-0-counters",
                             "counters": {"memory": {"value": "20Gi"}, "slices": {"value": "3"}}}]},
      {"name": "gpu-0-half-1",
       "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
         {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b", "a"]}]}]},
       "consumesCounters": [{"counterSet": "gpu-0-counters",
                             "counters": {"memory": {"value": "20Gi"}}}]},
      {"name": "gpu-0-full", "allNodes": true}
    ]
  }
})json";

constexpr const char* kDeviceClass = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "DeviceClass",
  "metadata": {"name": "gpu.example.com"},
  "spec": {
    "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
    "config": [{"opaque": {"driver": "gpu.example.com",
                           "parameters": {"apiVersion": "gpu.example.com/v1", "kind": "GpuConfig",
                                          "sharing": {"strategy": "TimeSlicing"}}}}],
    "extendedResourceName": "example.com/gpu"
  }
})json";

// A claim asking for one large GPU or else two small ones, with its allocation written back.
constexpr const char* kClaim = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceClaim",
  "metadata": {"name": "train-0-gpu-7b2kx", "namespace": "ml",
               "uid": "0a6d3e0f-0000-4000-8000-000000000002", "resourceVersion": "77",
               "finalizers": ["resource.kubernetes.io/delete-protection"],
               "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"}},
  "spec": {
    "devices": {
      "requests": [
        {"name": "big", "exactly": {
          "deviceClassName": "gpu.example.com",
          "selectors": [{"cel": {"expression": "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"}}],
          "allocationMode": "ExactCount", "count": 2, "adminAccess": false,
          "tolerations": [{"key": "gpu.example.com/unhealthy", "operator": "Exists",
                           "effect": "NoSchedule"},
                          {"key": "maintenance", "value": "planned", "tolerationSeconds": 60}],
          "capacity": {"requests": {"cores": "4"}}}},
        {"name": "any", "firstAvailable": [
          {"name": "large", "deviceClassName": "gpu.example.com", "allocationMode": "All"},
          {"name": "small", "deviceClassName": "small-gpu.example.com", "count": 2}]},
        {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}
      ],
      "constraints": [{"requests": ["big", "any"], "matchAttribute": "gpu.example.com/numaNode"}],
      "config": [{"requests": ["big"], "opaque": {"driver": "gpu.example.com",
                                                  "parameters": {"mode": "exclusive"}}}]
    }
  },
  "status": {
    "allocation": {
      "devices": {
        "results": [
          {"request": "big", "driver": "gpu.example.com", "pool": "worker-1", "device": "gpu-0",
           "adminAccess": true,
           "tolerations": [{"key": "gpu.example.com/unhealthy", "operator": "Exists",
                            "effect": "NoSchedule"}],
           "bindingConditions": ["gpu.example.com/attached"],
           "bindingFailureConditions": ["gpu.example.com/attach-failed"],
           "shareID": "4f1c2b9e-0000-4000-8000-000000000003",
           "consumedCapacity": {"cores": "4", "memory": "8Gi"}},
          {"request": "any/small", "driver": "gpu.example.com", "pool": "worker-1",
           "device": "gpu-1"}
        ],
        "config": [
          {"source": "FromClass", "requests": ["big"],
           "opaque": {"driver": "gpu.example.com", "parameters": {"kind": "GpuConfig"}}},
          {"source": "FromClaim", "opaque": {"driver": "gpu.example.com",
                                             "parameters": {"mode": "exclusive"}}}
        ]
      },
      "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}]},
      "allocationTimestamp": "2026-11-28T10:00:00Z"
    },
    "reservedFor": [{"resource": "pods", "name": "train-0",
                     "uid": "0a6d3e0f-0000-4000-8000-000000000004"}],
    "devices": [{"driver": "gpu.example.com", "pool": "worker-1", "device": "gpu-0",
                 "conditions": [{"type": "Ready", "status": "True", "reason": "Attached",
                                 "message": "", "lastTransitionTime": "2026-11-28T10:00:01Z"}],
                 "data": {"bus": "0000:3b:00.0"},
                 "networkData": {"interfaceName": "net1", "ips": ["10.9.8.7/24"]}}]
  }
})json";

constexpr const char* kClaimTemplate = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceClaimTemplate",
  "metadata": {"name": "single-gpu", "namespace": "ml"},
  "spec": {
    "metadata": {"labels": {"team": "ml"}},
    "spec": {"devices": {"requests": [{"name": "gpu",
                                       "exactly": {"deviceClassName": "gpu.example.com"}}]}}
  }
})json";

constexpr const char* kTaintRule = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "DeviceTaintRule",
  "metadata": {"name": "drain-worker-1-gpus"},
  "spec": {
    "deviceSelector": {"driver": "gpu.example.com", "pool": "worker-1"},
    "taint": {"key": "example.com/maintenance", "value": "firmware", "effect": "NoExecute"}
  },
  "status": {"conditions": [{"type": "EvictionInProgress", "status": "False", "reason": "Done",
                             "message": "", "lastTransitionTime": "2026-11-28T10:00:00Z",
                             "observedGeneration": 1}]}
})json";

std::string Text(const Quantity& q) { return q.ToString(); }

DeviceAttribute Attribute(DeviceAttribute::Kind kind, int64_t i, bool b, std::string text) {
  DeviceAttribute a;
  a.kind = kind;
  a.int_value = i;
  a.bool_value = b;
  a.string_value = std::move(text);
  return a;
}

DeviceToleration Toleration(std::string key, DeviceToleration::Operator op, std::string value,
                            std::optional<DeviceTaint::Effect> effect,
                            std::optional<int64_t> seconds) {
  DeviceToleration t;
  t.key = std::move(key);
  t.op = op;
  t.value = std::move(value);
  t.effect = effect;
  t.toleration_seconds = seconds;
  return t;
}

Labels Zone(const char* zone) {
  return Labels(std::vector<Labels::Entry>{{"topology.kubernetes.io/zone", zone}});
}

TEST(DecodeResourceSlice, NodeLocalGpus) {
  const ResourceSlice slice = DecodeResourceSlice(json::parse(kGpuSlice));
  EXPECT_EQ(slice.meta.name, "worker-1-gpu.example.com-x8k2l");
  EXPECT_EQ(slice.meta.generation, 2);
  EXPECT_EQ(slice.spec.driver, "gpu.example.com");
  EXPECT_EQ(slice.spec.pool.name, "worker-1");
  EXPECT_EQ(slice.spec.pool.generation, 4);
  EXPECT_EQ(slice.spec.pool.resource_slice_count, 1);
  EXPECT_EQ(slice.spec.node_name, "worker-1");
  EXPECT_FALSE(slice.spec.node_selector.has_value());
  EXPECT_FALSE(slice.spec.all_nodes);
  EXPECT_FALSE(slice.spec.per_device_node_selection);
  EXPECT_TRUE(slice.unsupported_fields.empty());
  ASSERT_EQ(slice.spec.devices.size(), 2u);

  const Device& gpu = slice.spec.devices[0];
  EXPECT_EQ(gpu.name, "gpu-0");
  ASSERT_EQ(gpu.attributes.size(), 5u);
  EXPECT_EQ(gpu.attributes.at("index"), Attribute(DeviceAttribute::Kind::kInt, 0, false, ""));
  EXPECT_EQ(gpu.attributes.at("productName"),
            (DeviceAttribute{.kind = DeviceAttribute::Kind::kString,
                             .string_value = "Example A100 80GB"}));
  EXPECT_EQ(gpu.attributes.at("driverVersion"),
            (DeviceAttribute{.kind = DeviceAttribute::Kind::kVersion, .string_value = "1.2.3"}));
  EXPECT_EQ(gpu.attributes.at("sharing"), Attribute(DeviceAttribute::Kind::kBool, 0, true, ""));
  EXPECT_EQ(gpu.attributes.at("gpu.example.com/uuid").string_value, "GPU-5a1b");

  ASSERT_EQ(gpu.capacity.size(), 3u);
  EXPECT_EQ(gpu.capacity.at("memory").value.Value(), int64_t{80} << 30);
  EXPECT_FALSE(gpu.capacity.at("memory").request_policy.has_value());
  const CapacityRequestPolicy& cores = *gpu.capacity.at("cores").request_policy;
  EXPECT_EQ(Text(*cores.default_value), "1");
  ASSERT_TRUE(cores.valid_range.has_value());
  EXPECT_EQ(Text(cores.valid_range->min), "1");
  EXPECT_EQ(Text(*cores.valid_range->max), "108");
  EXPECT_EQ(Text(*cores.valid_range->step), "1");
  const CapacityRequestPolicy& slots = *gpu.capacity.at("slots").request_policy;
  ASSERT_EQ(slots.valid_values.size(), 3u);
  EXPECT_EQ(Text(slots.valid_values[2]), "8");
  EXPECT_FALSE(slots.valid_range.has_value());

  ASSERT_EQ(gpu.taints.size(), 1u);
  EXPECT_EQ(gpu.taints[0], (DeviceTaint{.key = "gpu.example.com/unhealthy",
                                        .value = "ecc",
                                        .effect = DeviceTaint::Effect::kNoSchedule,
                                        .time_added = "2026-11-20T08:00:00Z"}));
  EXPECT_TRUE(gpu.binds_to_node);
  EXPECT_EQ(gpu.binding_conditions, std::vector<std::string>{"gpu.example.com/attached"});
  EXPECT_EQ(gpu.binding_failure_conditions,
            std::vector<std::string>{"gpu.example.com/attach-failed"});
  EXPECT_TRUE(gpu.allow_multiple_allocations);

  const Device& second = slice.spec.devices[1];
  EXPECT_EQ(second.attributes.at("index").int_value, 1);
  EXPECT_TRUE(second.taints.empty());
  EXPECT_FALSE(second.binds_to_node);
}

TEST(DecodeResourceSlice, PartitionableDevices) {
  const ResourceSlice counters = DecodeResourceSlice(json::parse(kCounterSlice));
  EXPECT_TRUE(counters.spec.all_nodes);
  EXPECT_TRUE(counters.spec.devices.empty());
  ASSERT_EQ(counters.spec.shared_counters.size(), 1u);
  EXPECT_EQ(counters.spec.shared_counters[0].name, "gpu-0-counters");
  EXPECT_EQ(Text(counters.spec.shared_counters[0].counters.at("memory")), "40Gi");
  EXPECT_EQ(counters.spec.shared_counters[0].counters.at("slices").Value(), 7);

  const ResourceSlice partitions = DecodeResourceSlice(json::parse(kPartitionSlice));
  EXPECT_TRUE(partitions.spec.per_device_node_selection);
  EXPECT_FALSE(partitions.spec.all_nodes);
  ASSERT_EQ(partitions.spec.devices.size(), 3u);
  const Device& half0 = partitions.spec.devices[0];
  EXPECT_EQ(half0.node_name, "worker-2");
  ASSERT_EQ(half0.consumes_counters.size(), 1u);
  EXPECT_EQ(half0.consumes_counters[0].counter_set, "gpu-0-counters");
  EXPECT_EQ(Text(half0.consumes_counters[0].counters.at("memory")), "20Gi");
  const Device& half1 = partitions.spec.devices[1];
  ASSERT_TRUE(half1.node_selector.has_value());
  EXPECT_TRUE(half1.node_selector->Matches(Zone("a"), "n"));
  EXPECT_FALSE(half1.node_selector->Matches(Zone("c"), "n"));
  EXPECT_TRUE(partitions.spec.devices[2].all_nodes);
}

TEST(DecodeDeviceClass, SelectorsConfigAndExtendedResource) {
  const DeviceClass device_class = DecodeDeviceClass(json::parse(kDeviceClass));
  EXPECT_EQ(device_class.meta.name, "gpu.example.com");
  ASSERT_EQ(device_class.selectors.size(), 1u);
  EXPECT_EQ(device_class.selectors[0].expression, "device.driver == 'gpu.example.com'");
  ASSERT_EQ(device_class.config.size(), 1u);
  EXPECT_EQ(device_class.config[0].driver, "gpu.example.com");
  EXPECT_EQ(json::parse(device_class.config[0].parameters_json),
            json::parse(kDeviceClass)["spec"]["config"][0]["opaque"]["parameters"]);
  EXPECT_EQ(device_class.extended_resource_name, "example.com/gpu");

  const DeviceClass bare = DecodeDeviceClass(json::parse(R"({"metadata": {"name": "any"}})"));
  EXPECT_TRUE(bare.config.empty());
  EXPECT_FALSE(bare.extended_resource_name.has_value());
}

TEST(DecodeResourceClaim, SpecAndStatus) {
  const ResourceClaim claim = DecodeResourceClaim(json::parse(kClaim));
  EXPECT_EQ(claim.meta.Key(), "ml/train-0-gpu-7b2kx");
  EXPECT_EQ(claim.finalizers, std::vector<std::string>{std::string(kResourceClaimFinalizer)});
  EXPECT_TRUE(claim.unsupported_fields.empty());

  const ResourceClaimSpec& spec = claim.spec;
  ASSERT_EQ(spec.requests.size(), 3u);
  const DeviceRequest& big = spec.requests[0];
  EXPECT_EQ(big.name, "big");
  ASSERT_TRUE(big.exactly.has_value());
  EXPECT_TRUE(big.first_available.empty());
  EXPECT_EQ(big.exactly->device_class_name, "gpu.example.com");
  ASSERT_EQ(big.exactly->selectors.size(), 1u);
  EXPECT_EQ(big.exactly->allocation_mode, DeviceAllocationMode::kExactCount);
  EXPECT_EQ(big.exactly->count, 2);
  EXPECT_FALSE(big.exactly->admin_access);
  ASSERT_EQ(big.exactly->tolerations.size(), 2u);
  EXPECT_EQ(big.exactly->tolerations[0],
            Toleration("gpu.example.com/unhealthy", DeviceToleration::Operator::kExists, "",
                       DeviceTaint::Effect::kNoSchedule, std::nullopt));
  EXPECT_EQ(big.exactly->tolerations[1], (DeviceToleration{.key = "maintenance",
                                                           .op = DeviceToleration::Operator::kEqual,
                                                           .value = "planned",
                                                           .effect = std::nullopt,
                                                           .toleration_seconds = 60}));
  EXPECT_EQ(Text(big.exactly->capacity_requests.at("cores")), "4");

  const DeviceRequest& any = spec.requests[1];
  EXPECT_FALSE(any.exactly.has_value());
  ASSERT_EQ(any.first_available.size(), 2u);
  EXPECT_EQ(any.first_available[0].name, "large");
  EXPECT_EQ(any.first_available[0].request.allocation_mode, DeviceAllocationMode::kAll);
  EXPECT_EQ(any.first_available[1].request.device_class_name, "small-gpu.example.com");
  EXPECT_EQ(any.first_available[1].request.count, 2);
  // An ExactCount request without a count asks for one device, as the apiserver defaults it.
  EXPECT_EQ(spec.requests[2].exactly->count, 1);

  ASSERT_EQ(spec.constraints.size(), 1u);
  EXPECT_EQ(spec.constraints[0].requests, (std::vector<std::string>{"big", "any"}));
  EXPECT_EQ(spec.constraints[0].match_attribute, "gpu.example.com/numaNode");
  ASSERT_EQ(spec.config.size(), 1u);
  EXPECT_EQ(spec.config[0].requests, std::vector<std::string>{"big"});
  EXPECT_EQ(spec.config[0].driver, "gpu.example.com");
  EXPECT_EQ(spec.config[0].parameters_json, R"({"mode":"exclusive"})");

  const ResourceClaimStatus& status = claim.status;
  ASSERT_TRUE(status.allocation.has_value());
  const AllocationResult& allocation = *status.allocation;
  ASSERT_EQ(allocation.results.size(), 2u);
  const DeviceRequestAllocationResult& first = allocation.results[0];
  EXPECT_EQ(first.request, "big");
  EXPECT_EQ(first.device, "gpu-0");
  EXPECT_TRUE(first.admin_access);
  EXPECT_EQ(first.tolerations.size(), 1u);
  EXPECT_EQ(first.share_id, "4f1c2b9e-0000-4000-8000-000000000003");
  EXPECT_EQ(Text(first.consumed_capacity.at("memory")), "8Gi");
  EXPECT_EQ(allocation.results[1].request, "any/small");
  EXPECT_FALSE(allocation.results[1].share_id.has_value());
  ASSERT_EQ(allocation.config.size(), 2u);
  EXPECT_TRUE(allocation.config[0].from_class);
  EXPECT_FALSE(allocation.config[1].from_class);
  ASSERT_TRUE(allocation.node_selector.has_value());
  EXPECT_TRUE(allocation.node_selector->Matches(Labels{}, "worker-1"));
  EXPECT_FALSE(allocation.node_selector->Matches(Labels{}, "worker-2"));
  EXPECT_EQ(allocation.allocation_timestamp, "2026-11-28T10:00:00Z");

  ASSERT_EQ(status.reserved_for.size(), 1u);
  EXPECT_EQ(status.reserved_for[0],
            (ResourceClaimConsumerReference{.api_group = "",
                                            .resource = "pods",
                                            .name = "train-0",
                                            .uid = "0a6d3e0f-0000-4000-8000-000000000004"}));
  ASSERT_EQ(status.devices.size(), 1u);
  EXPECT_EQ(status.devices[0].device, "gpu-0");
  ASSERT_EQ(status.devices[0].conditions.size(), 1u);
  EXPECT_EQ(status.devices[0].conditions[0].reason, "Attached");
}

TEST(DecodeResourceClaimTemplate, ReadsTheClaimSpec) {
  const ResourceClaimTemplate t = DecodeResourceClaimTemplate(json::parse(kClaimTemplate));
  EXPECT_EQ(t.meta.Key(), "ml/single-gpu");
  ASSERT_EQ(t.spec.requests.size(), 1u);
  EXPECT_EQ(t.spec.requests[0].exactly->device_class_name, "gpu.example.com");
  EXPECT_EQ(t.spec.requests[0].exactly->count, 1);
  EXPECT_TRUE(t.unsupported_fields.empty());
}

TEST(DecodeDeviceTaintRule, SelectorAndTaint) {
  const DeviceTaintRule rule = DecodeDeviceTaintRule(json::parse(kTaintRule));
  EXPECT_EQ(rule.meta.name, "drain-worker-1-gpus");
  ASSERT_TRUE(rule.device_selector.has_value());
  EXPECT_EQ(rule.device_selector->driver, "gpu.example.com");
  EXPECT_EQ(rule.device_selector->pool, "worker-1");
  EXPECT_FALSE(rule.device_selector->device.has_value());
  EXPECT_EQ(rule.taint, (DeviceTaint{.key = "example.com/maintenance",
                                     .value = "firmware",
                                     .effect = DeviceTaint::Effect::kNoExecute,
                                     .time_added = std::nullopt}));
}

// ---- Encoding ----

TEST(EncodeAllocationResult, IsTheJsonTheAllocationWasReadFrom) {
  const json claim = json::parse(kClaim);
  const AllocationResult allocation = *DecodeResourceClaim(claim).status.allocation;
  const json& served = claim["status"]["allocation"];
  const json encoded = EncodeAllocationResult(allocation);
  EXPECT_EQ(encoded, served) << encoded.dump(2);

  // And what is encoded decodes back to the same allocation.
  json again = claim;
  again["status"]["allocation"] = encoded;
  EXPECT_EQ(EncodeAllocationResult(*DecodeResourceClaim(again).status.allocation), encoded);
}

TEST(EncodeAllocationResult, LeavesOutWhatTheApiserverOmits) {
  AllocationResult allocation;
  DeviceRequestAllocationResult& result = allocation.results.emplace_back();
  result.request = "gpu";
  result.driver = "gpu.example.com";
  result.pool = "worker-1";
  result.device = "gpu-0";
  EXPECT_EQ(EncodeAllocationResult(allocation), json::parse(R"({"devices": {"results": [
    {"request": "gpu", "driver": "gpu.example.com", "pool": "worker-1", "device": "gpu-0"}]}})"));
  EXPECT_EQ(EncodeAllocationResult(AllocationResult{}), json::parse(R"({"devices": {}})"));
}

TEST(EncodeConsumerReference, PodReference) {
  EXPECT_EQ(EncodeConsumerReference({.api_group = "",
                                     .resource = "pods",
                                     .name = "train-0",
                                     .uid = "0a6d3e0f-0000-4000-8000-000000000004"}),
            json::parse(R"({"resource": "pods", "name": "train-0",
                            "uid": "0a6d3e0f-0000-4000-8000-000000000004"})"));
  EXPECT_EQ(
      EncodeConsumerReference(
          {.api_group = "scheduling.k8s.io", .resource = "podgroups", .name = "g", .uid = "u"}),
      json::parse(R"({"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g",
                            "uid": "u"})"));
}

// ---- Unsupported (alpha) fields ----

TEST(UnsupportedFields, SliceRecordsEveryAlphaFieldByPath) {
  json slice = json::parse(kPartitionSlice);
  slice["spec"]["partitionTypeAttribute"] = "gpu.example.com/profile";
  slice["spec"]["skipNodeOperations"] = {"*"};
  json& device = slice["spec"]["devices"][0];
  device["attributes"] = {{"index", {{"int", 0}}},
                          {"ids", {{"ints", {1, 2}}}},
                          {"flags", {{"bools", {true}}}},
                          {"names", {{"strings", {"a"}}}},
                          {"gpu.example.com/firmware", {{"versions", {"1.0.0"}}}}};
  device["consumesCounters"][0]["compatibilityGroups"] = {"mig"};
  device["nodeAllocatableResources"] = {{"cpu", {{"mapping", {{"deviceMultiplier", "4"}}}}}};
  // Requests have derivedAttributes; a device has no such field, so it is not reported.
  device["derivedAttributes"] = {{{"name", "x/y"}, {"expression", "1"}}};
  // Empty lists are what unset fields decode to.
  slice["spec"]["devices"][1]["attributes"] = {{"empty", {{"int", 3}, {"ints", json::array()}}}};

  const ResourceSlice decoded = DecodeResourceSlice(slice);
  EXPECT_EQ(decoded.unsupported_fields,
            (std::vector<std::string>{
                "spec.devices[0].attributes.flags.bools",
                "spec.devices[0].attributes.gpu.example.com/firmware.versions",
                "spec.devices[0].attributes.ids.ints",
                "spec.devices[0].attributes.names.strings",
                "spec.devices[0].consumesCounters[0].compatibilityGroups",
                "spec.devices[0].nodeAllocatableResources",
                "spec.partitionTypeAttribute",
                "spec.skipNodeOperations",
            }));
  // A list-type attribute is not taken for a value it does not hold.
  const Device& d = decoded.spec.devices[0];
  EXPECT_EQ(d.attributes.size(), 1u);
  EXPECT_TRUE(d.attributes.contains("index"));
  EXPECT_EQ(decoded.spec.devices[1].attributes.at("empty").int_value, 3);
}

TEST(UnsupportedFields, ClaimRecordsEveryAlphaFieldByPath) {
  json claim = json::parse(kClaim);
  json& requests = claim["spec"]["devices"]["requests"];
  requests[0]["exactly"]["derivedAttributes"] = {{{"name", "x/y"}, {"expression", "1"}}};
  requests[1]["firstAvailable"][1]["derivedAttributes"] = {{{"name", "x/z"}, {"expression", "2"}}};
  claim["spec"]["devices"]["constraints"].push_back(
      {{"requests", {"big"}}, {"distinctAttribute", "gpu.example.com/uuid"}});
  claim["status"]["allocation"]["devices"]["results"][1]["skipNodeOperations"] = {
      "NodePrepareResources"};
  const ResourceClaim decoded = DecodeResourceClaim(claim);
  EXPECT_EQ(decoded.unsupported_fields,
            (std::vector<std::string>{
                "spec.devices.requests[0].exactly.derivedAttributes",
                "spec.devices.requests[1].firstAvailable[1].derivedAttributes",
                "status.allocation.devices.results[1].skipNodeOperations",
            }));
  // distinctAttribute belongs to DRAConsumableCapacity, beta and on by default since v1.36: it is
  // read, not recorded as unsupported.
  ASSERT_EQ(decoded.spec.constraints.size(), 2u);
  EXPECT_EQ(decoded.spec.constraints[1].distinct_attribute, "gpu.example.com/uuid");

  json claim_template = json::parse(kClaimTemplate);
  claim_template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["derivedAttributes"] = {
      {{"name", "x/y"}, {"expression", "1"}}};
  EXPECT_EQ(DecodeResourceClaimTemplate(claim_template).unsupported_fields,
            std::vector<std::string>{"spec.spec.devices.requests[0].exactly.derivedAttributes"});
}

// ---- Malformed shapes ----

json Repeat(const json& element, size_t n) {
  json out = json::array();
  for (size_t i = 0; i < n; i++) out.push_back(element);
  return out;
}

json Devices(size_t n, const json& extra = json::object()) {
  json out = json::array();
  for (size_t i = 0; i < n; i++) {
    json device = {{"name", "d" + std::to_string(i)}};
    device.update(extra);
    out.push_back(device);
  }
  return out;
}

json NumberedObject(size_t n, const json& value) {
  json out = json::object();
  for (size_t i = 0; i < n; i++) out["k" + std::to_string(i)] = value;
  return out;
}

struct MalformedCase {
  const char* name;
  std::function<void(const json&)> decode;
  const char* base;
  json patch;        // A JSON patch (RFC 6902) applied to the base.
  std::string want;  // The DecodeError's whole message.
};

void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }

class MalformedDraObject : public testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedDraObject, IsRefusedNamingTheField) {
  const MalformedCase& c = GetParam();
  const json base = json::parse(c.base);
  ASSERT_NO_THROW(c.decode(base));
  const json object = base.patch(c.patch);
  try {
    c.decode(object);
    ADD_FAILURE() << "decoded";
  } catch (const DecodeError& e) {
    EXPECT_EQ(std::string(e.what()), c.want);
  }
}

json Replace(const char* path, json value) {
  return json::array({{{"op", "add"}, {"path", path}, {"value", std::move(value)}}});
}
json Remove(const char* path) { return json::array({{{"op", "remove"}, {"path", path}}}); }

const auto kSlice = [](const json& j) { DecodeResourceSlice(j); };
const auto kClass = [](const json& j) { DecodeDeviceClass(j); };
const auto kClaimDecode = [](const json& j) { DecodeResourceClaim(j); };
const auto kTemplate = [](const json& j) { DecodeResourceClaimTemplate(j); };
const auto kRule = [](const json& j) { DecodeDeviceTaintRule(j); };

const std::string kLongExpression(kCelSelectorExpressionMaxLength + 1, 'x');

INSTANTIATE_TEST_SUITE_P(
    Slice, MalformedDraObject,
    testing::Values(
        MalformedCase{"no spec", kSlice, kGpuSlice, Remove("/spec"), "spec: required"},
        MalformedCase{"no driver", kSlice, kGpuSlice, Remove("/spec/driver"),
                      "spec.driver: required"},
        MalformedCase{"pool name", kSlice, kGpuSlice, Replace("/spec/pool/name", 1),
                      "spec.pool.name: expected string, got number"},
        MalformedCase{"pool generation", kSlice, kGpuSlice, Replace("/spec/pool/generation", "4"),
                      "spec.pool.generation: expected integer, got string"},
        MalformedCase{"two node selections", kSlice, kGpuSlice, Replace("/spec/allNodes", true),
                      "spec: at most one of nodeName, nodeSelector, allNodes and "
                      "perDeviceNodeSelection may be set"},
        MalformedCase{"devices not an array", kSlice, kGpuSlice, Replace("/spec/devices", "gpu"),
                      "spec.devices: expected array, got string"},
        MalformedCase{"device without a name", kSlice, kGpuSlice, Remove("/spec/devices/1/name"),
                      "spec.devices[1].name: required"},
        MalformedCase{"attribute with two values", kSlice, kGpuSlice,
                      Replace("/spec/devices/0/attributes/index/string", "zero"),
                      "spec.devices[0].attributes.index: an attribute holds exactly one value, "
                      "this one has 2"},
        MalformedCase{"attribute with a scalar and a list", kSlice, kGpuSlice,
                      Replace("/spec/devices/0/attributes/index/ints", json::array({1})),
                      "spec.devices[0].attributes.index: an attribute holds exactly one value, "
                      "this one has 2"},
        MalformedCase{"attribute without a value", kSlice, kGpuSlice,
                      Replace("/spec/devices/0/attributes/index", json::object()),
                      "spec.devices[0].attributes.index: an attribute needs one value: int, bool, "
                      "string or version"},
        MalformedCase{"attribute of the wrong type", kSlice, kGpuSlice,
                      Replace("/spec/devices/0/attributes/index/int", "0"),
                      "spec.devices[0].attributes.index.int: expected integer, got string"},
        MalformedCase{
            "attribute string too long", kSlice, kGpuSlice,
            Replace("/spec/devices/0/attributes/productName/string", std::string(65, 'a')),
            "spec.devices[0].attributes.productName.string: 65 bytes, more than the "
            "limit of 64"},
        MalformedCase{"capacity garbage", kSlice, kGpuSlice,
                      Replace("/spec/devices/0/capacity/memory/value", "80 gigs"),
                      "spec.devices[0].capacity.memory.value: invalid quantity \"80 gigs\": "
                      "unknown suffix \" gigs\""},
        MalformedCase{"capacity without a value", kSlice, kGpuSlice,
                      Remove("/spec/devices/0/capacity/memory/value"),
                      "spec.devices[0].capacity.memory.value: required"},
        MalformedCase{"negative capacity", kSlice, kGpuSlice,
                      Replace("/spec/devices/1/capacity/memory/value", "-1Gi"),
                      "spec.devices[1].capacity.memory.value: must not be negative, got "
                      "\"-1Gi\""},
        MalformedCase{
            "policy with values and a range", kSlice, kGpuSlice,
            Replace("/spec/devices/0/capacity/slots/requestPolicy/validRange", {{"min", "2"}}),
            "spec.devices[0].capacity.slots.requestPolicy.validRange: only one of "
            "validValues and validRange may be set"},
        MalformedCase{"range without min", kSlice, kGpuSlice,
                      Remove("/spec/devices/0/capacity/cores/requestPolicy/validRange/min"),
                      "spec.devices[0].capacity.cores.requestPolicy.validRange.min: required"},
        MalformedCase{
            "too many valid values", kSlice, kGpuSlice,
            Replace("/spec/devices/0/capacity/slots/requestPolicy/validValues", Repeat("2", 11)),
            "spec.devices[0].capacity.slots.requestPolicy.validValues: 11 entries, "
            "more than the limit of 10"},
        MalformedCase{"taint effect", kSlice, kGpuSlice,
                      Replace("/spec/devices/0/taints/0/effect", "PreferNoSchedule"),
                      "spec.devices[0].taints[0].effect: unknown value \"PreferNoSchedule\""},
        MalformedCase{"taint without effect", kSlice, kGpuSlice,
                      Remove("/spec/devices/0/taints/0/effect"),
                      "spec.devices[0].taints[0].effect: required"},
        MalformedCase{"too many devices", kSlice, kGpuSlice, Replace("/spec/devices", Devices(129)),
                      "spec.devices: 129 entries, more than the limit of 128"},
        MalformedCase{"many devices, not as an array", kSlice, kGpuSlice,
                      Replace("/spec/devices", NumberedObject(129, {{"name", "d"}})),
                      "spec.devices: expected array, got object"},
        MalformedCase{"too many tainted devices", kSlice, kGpuSlice,
                      Replace("/spec/devices",
                              Devices(65, {{"taints", {{{"key", "k"}, {"effect", "None"}}}}})),
                      "spec.devices: 65 devices, more than the limit of 64 when a device has "
                      "taints or consumes counters"},
        MalformedCase{"too many attributes and capacities", kSlice, kGpuSlice,
                      Replace("/spec/devices/1/attributes", NumberedObject(32, {{"int", 1}})),
                      "spec.devices[1]: 33 attributes and capacities, more than the limit of 32"},
        MalformedCase{
            "too many taints", kSlice, kGpuSlice,
            Replace("/spec/devices/1/taints", Repeat({{"key", "k"}, {"effect", "None"}}, 17)),
            "spec.devices[1].taints: 17 entries, more than the limit of 16"},
        MalformedCase{"too many binding conditions", kSlice, kGpuSlice,
                      Replace("/spec/devices/0/bindingConditions", Repeat("c", 5)),
                      "spec.devices[0].bindingConditions: 5 entries, more than the limit of 4"},
        MalformedCase{"binding condition type", kSlice, kGpuSlice,
                      Replace("/spec/devices/0/bindingFailureConditions/0", 1),
                      "spec.devices[0].bindingFailureConditions[0]: expected string, got number"},
        MalformedCase{"per-device node name without the slice's flag", kSlice, kGpuSlice,
                      Replace("/spec/devices/0/nodeName", "worker-1"),
                      "spec.devices[0]: nodeName, nodeSelector and allNodes need "
                      "spec.perDeviceNodeSelection"},
        MalformedCase{"too many counter sets", kSlice, kCounterSlice,
                      Replace("/spec/sharedCounters",
                              Repeat({{"name", "s"}, {"counters", json::object()}}, 9)),
                      "spec.sharedCounters: 9 entries, more than the limit of 8"},
        MalformedCase{
            "too many counters", kSlice, kCounterSlice,
            Replace("/spec/sharedCounters/0/counters", NumberedObject(33, {{"value", "1"}})),
            "spec.sharedCounters[0].counters: 33 entries, more than the limit of 32"},
        MalformedCase{"counter garbage", kSlice, kCounterSlice,
                      Replace("/spec/sharedCounters/0/counters/memory/value", true),
                      "spec.sharedCounters[0].counters.memory.value: expected quantity string, "
                      "got boolean"},
        MalformedCase{"devices beside counters", kSlice, kCounterSlice,
                      Replace("/spec/devices", Devices(1)),
                      "spec.sharedCounters: a slice holds devices or sharedCounters, not both"},
        MalformedCase{"per-device selection missing", kSlice, kPartitionSlice,
                      Remove("/spec/devices/0/nodeName"),
                      "spec.devices[0]: spec.perDeviceNodeSelection needs one of nodeName, "
                      "nodeSelector and allNodes"},
        MalformedCase{"two per-device selections", kSlice, kPartitionSlice,
                      Replace("/spec/devices/2/nodeName", "worker-3"),
                      "spec.devices[2]: at most one of nodeName, nodeSelector and allNodes may "
                      "be set"},
        MalformedCase{"per-device node selector", kSlice, kPartitionSlice,
                      Replace("/spec/devices/1/nodeSelector/nodeSelectorTerms/0/"
                              "matchExpressions/0/operator",
                              "Near"),
                      "spec.devices[1].nodeSelector.nodeSelectorTerms[0].matchExpressions[0]."
                      "operator: unknown value \"Near\""},
        MalformedCase{"too many counter consumptions", kSlice, kPartitionSlice,
                      Replace("/spec/devices/0/consumesCounters", Repeat({{"counterSet", "s"}}, 3)),
                      "spec.devices[0].consumesCounters: 3 entries, more than the limit of 2"},
        MalformedCase{"counter consumption without a set", kSlice, kPartitionSlice,
                      Remove("/spec/devices/0/consumesCounters/0/counterSet"),
                      "spec.devices[0].consumesCounters[0].counterSet: required"}));

INSTANTIATE_TEST_SUITE_P(
    Class, MalformedDraObject,
    testing::Values(
        MalformedCase{"no name", kClass, kDeviceClass, Remove("/metadata/name"),
                      "metadata.name: required"},
        MalformedCase{"selector without cel", kClass, kDeviceClass,
                      Replace("/spec/selectors/0", json::object()),
                      "spec.selectors[0].cel: required"},
        MalformedCase{"expression too long", kClass, kDeviceClass,
                      Replace("/spec/selectors/0/cel/expression", kLongExpression),
                      "spec.selectors[0].cel.expression: 10241 bytes, more than the limit of "
                      "10240"},
        MalformedCase{"too many selectors", kClass, kDeviceClass,
                      Replace("/spec/selectors", Repeat({{"cel", {{"expression", "true"}}}}, 33)),
                      "spec.selectors: 33 entries, more than the limit of 32"},
        MalformedCase{"config without opaque", kClass, kDeviceClass,
                      Remove("/spec/config/0/opaque"), "spec.config[0].opaque: required"},
        MalformedCase{"config without parameters", kClass, kDeviceClass,
                      Remove("/spec/config/0/opaque/parameters"),
                      "spec.config[0].opaque.parameters: required"},
        MalformedCase{
            "parameters too long", kClass, kDeviceClass,
            Replace("/spec/config/0/opaque/parameters", {{"blob", std::string(10 * 1024, 'a')}}),
            "spec.config[0].opaque.parameters: 10251 bytes, more than the limit of "
            "10240"},
        MalformedCase{"extended resource name", kClass, kDeviceClass,
                      Replace("/spec/extendedResourceName", 3),
                      "spec.extendedResourceName: expected string, got number"}));

INSTANTIATE_TEST_SUITE_P(
    Claim, MalformedDraObject,
    testing::Values(
        MalformedCase{"finalizers", kClaimDecode, kClaim, Replace("/metadata/finalizers", "x"),
                      "metadata.finalizers: expected array, got string"},
        MalformedCase{"request without a name", kClaimDecode, kClaim,
                      Remove("/spec/devices/requests/0/name"),
                      "spec.devices.requests[0].name: required"},
        MalformedCase{
            "request with both kinds", kClaimDecode, kClaim,
            Replace("/spec/devices/requests/1/exactly", {{"deviceClassName", "gpu.example.com"}}),
            "spec.devices.requests[1]: exactly one of exactly and firstAvailable must "
            "be set"},
        MalformedCase{"request with neither", kClaimDecode, kClaim,
                      Remove("/spec/devices/requests/2/exactly"),
                      "spec.devices.requests[2]: exactly one of exactly and firstAvailable must "
                      "be set"},
        MalformedCase{"request without a class", kClaimDecode, kClaim,
                      Remove("/spec/devices/requests/0/exactly/deviceClassName"),
                      "spec.devices.requests[0].exactly.deviceClassName: required"},
        MalformedCase{"allocation mode", kClaimDecode, kClaim,
                      Replace("/spec/devices/requests/0/exactly/allocationMode", "Some"),
                      "spec.devices.requests[0].exactly.allocationMode: unknown value \"Some\""},
        MalformedCase{"negative count", kClaimDecode, kClaim,
                      Replace("/spec/devices/requests/0/exactly/count", -2),
                      "spec.devices.requests[0].exactly.count: must not be negative, got -2"},
        MalformedCase{"toleration operator", kClaimDecode, kClaim,
                      Replace("/spec/devices/requests/0/exactly/tolerations/0/operator", "In"),
                      "spec.devices.requests[0].exactly.tolerations[0].operator: unknown value "
                      "\"In\""},
        MalformedCase{"too many tolerations", kClaimDecode, kClaim,
                      Replace("/spec/devices/requests/0/exactly/tolerations",
                              Repeat({{"operator", "Exists"}}, 17)),
                      "spec.devices.requests[0].exactly.tolerations: 17 entries, more than the "
                      "limit of 16"},
        MalformedCase{"capacity request garbage", kClaimDecode, kClaim,
                      Replace("/spec/devices/requests/0/exactly/capacity/requests/cores", "4x"),
                      "spec.devices.requests[0].exactly.capacity.requests.cores: invalid "
                      "quantity \"4x\": unknown suffix \"x\""},
        MalformedCase{
            "expression too long", kClaimDecode, kClaim,
            Replace("/spec/devices/requests/0/exactly/selectors/0/cel/expression", kLongExpression),
            "spec.devices.requests[0].exactly.selectors[0].cel.expression: 10241 bytes, "
            "more than the limit of 10240"},
        MalformedCase{"too many subrequests", kClaimDecode, kClaim,
                      Replace("/spec/devices/requests/1/firstAvailable",
                              Repeat({{"name", "s"}, {"deviceClassName", "c"}}, 9)),
                      "spec.devices.requests[1].firstAvailable: 9 entries, more than the limit "
                      "of 8"},
        MalformedCase{"subrequest without a class", kClaimDecode, kClaim,
                      Remove("/spec/devices/requests/1/firstAvailable/0/deviceClassName"),
                      "spec.devices.requests[1].firstAvailable[0].deviceClassName: required"},
        MalformedCase{"too many requests", kClaimDecode, kClaim,
                      Replace("/spec/devices/requests",
                              Repeat({{"name", "r"}, {"exactly", {{"deviceClassName", "c"}}}}, 33)),
                      "spec.devices.requests: 33 entries, more than the limit of 32"},
        MalformedCase{"too many constraints", kClaimDecode, kClaim,
                      Replace("/spec/devices/constraints", Repeat(json::object(), 33)),
                      "spec.devices.constraints: 33 entries, more than the limit of 32"},
        MalformedCase{"too many constraint requests", kClaimDecode, kClaim,
                      Replace("/spec/devices/constraints/0/requests", Repeat("big", 33)),
                      "spec.devices.constraints[0].requests: 33 entries, more than the limit of "
                      "32"},
        MalformedCase{"match attribute", kClaimDecode, kClaim,
                      Replace("/spec/devices/constraints/0/matchAttribute", json::array()),
                      "spec.devices.constraints[0].matchAttribute: expected string, got array"},
        MalformedCase{"config driver", kClaimDecode, kClaim,
                      Remove("/spec/devices/config/0/opaque/driver"),
                      "spec.devices.config[0].opaque.driver: required"},
        MalformedCase{
            "too many results", kClaimDecode, kClaim,
            Replace("/status/allocation/devices/results",
                    Repeat({{"request", "r"}, {"driver", "d"}, {"pool", "p"}, {"device", "x"}},
                           33)),
            "status.allocation.devices.results: 33 entries, more than the limit of 32"},
        MalformedCase{"result without a device", kClaimDecode, kClaim,
                      Remove("/status/allocation/devices/results/1/device"),
                      "status.allocation.devices.results[1].device: required"},
        MalformedCase{
            "consumed capacity garbage", kClaimDecode, kClaim,
            Replace("/status/allocation/devices/results/0/consumedCapacity/memory", json::object()),
            "status.allocation.devices.results[0].consumedCapacity.memory: expected "
            "quantity string, got object"},
        MalformedCase{"config source", kClaimDecode, kClaim,
                      Replace("/status/allocation/devices/config/0/source", "FromNowhere"),
                      "status.allocation.devices.config[0].source: unknown value "
                      "\"FromNowhere\""},
        MalformedCase{"config without source", kClaimDecode, kClaim,
                      Remove("/status/allocation/devices/config/1/source"),
                      "status.allocation.devices.config[1].source: required"},
        MalformedCase{"too many allocation configs", kClaimDecode, kClaim,
                      Replace("/status/allocation/devices/config",
                              Repeat({{"source", "FromClaim"},
                                      {"opaque", {{"driver", "d"}, {"parameters", 1}}}},
                                     65)),
                      "status.allocation.devices.config: 65 entries, more than the limit of 64"},
        MalformedCase{"allocation node selector", kClaimDecode, kClaim,
                      Replace("/status/allocation/nodeSelector", "worker-1"),
                      "status.allocation.nodeSelector: expected object, got string"},
        MalformedCase{"too many consumers", kClaimDecode, kClaim,
                      Replace("/status/reservedFor",
                              Repeat({{"resource", "pods"}, {"name", "p"}, {"uid", "u"}}, 257)),
                      "status.reservedFor: 257 entries, more than the limit of 256"},
        MalformedCase{"consumer without uid", kClaimDecode, kClaim,
                      Remove("/status/reservedFor/0/uid"), "status.reservedFor[0].uid: required"},
        MalformedCase{"device status condition", kClaimDecode, kClaim,
                      Replace("/status/devices/0/conditions/0/status", true),
                      "status.devices[0].conditions[0].status: expected string, got boolean"},
        MalformedCase{"too many device statuses", kClaimDecode, kClaim,
                      Replace("/status/devices", Repeat({{"driver", "d"}, {"device", "x"}}, 33)),
                      "status.devices: 33 entries, more than the limit of 32"},
        MalformedCase{"too many device conditions", kClaimDecode, kClaim,
                      Replace("/status/devices/0/conditions", Repeat({{"type", "Ready"}}, 9)),
                      "status.devices[0].conditions: 9 entries, more than the limit of 8"}));

INSTANTIATE_TEST_SUITE_P(
    TemplateAndRule, MalformedDraObject,
    testing::Values(
        MalformedCase{"template spec", kTemplate, kClaimTemplate, Replace("/spec/spec", 1),
                      "spec.spec: expected object, got number"},
        MalformedCase{"template request", kTemplate, kClaimTemplate,
                      Remove("/spec/spec/devices/requests/0/exactly"),
                      "spec.spec.devices.requests[0]: exactly one of exactly and firstAvailable "
                      "must be set"},
        MalformedCase{"rule without a taint", kRule, kTaintRule, Remove("/spec/taint"),
                      "spec.taint: required"},
        MalformedCase{"rule taint key", kRule, kTaintRule, Remove("/spec/taint/key"),
                      "spec.taint.key: required"},
        MalformedCase{"rule taint effect", kRule, kTaintRule,
                      Replace("/spec/taint/effect", "Evict"),
                      "spec.taint.effect: unknown value \"Evict\""},
        MalformedCase{"rule selector", kRule, kTaintRule, Replace("/spec/deviceSelector/device", 0),
                      "spec.deviceSelector.device: expected string, got number"}));

}  // namespace
}  // namespace berth::api
