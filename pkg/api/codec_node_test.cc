#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;

struct ErrorCase {
  const char* name;
  // Applied to a copy of kNodeJson.
  json patch;
  const char* field;
  const char* problem;  // A fragment of the message after the field.
};

constexpr const char* kNodeJson = R"json({
  "kind": "Node",
  "apiVersion": "v1",
  "metadata": {
    "name": "gpu-node-3",
    "uid": "9a8b7c6d-0000-4000-8000-000000000003",
    "resourceVersion": "998877",
    "creationTimestamp": "2024-04-01T08:00:00Z",
    "labels": {
      "beta.kubernetes.io/arch": "amd64",
      "kubernetes.io/arch": "amd64",
      "kubernetes.io/hostname": "gpu-node-3",
      "kubernetes.io/os": "linux",
      "node.kubernetes.io/instance-type": "p3.2xlarge",
      "topology.kubernetes.io/zone": "eu-west-1a"
    },
    "annotations": {
      "node.alpha.kubernetes.io/ttl": "0",
      "volumes.kubernetes.io/controller-managed-attach-detach": "true"
    },
    "managedFields": [
      {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
       "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:status": {"f:allocatable": {"f:cpu": {}}}}, "subresource": "status"}
    ]
  },
  "spec": {
    "podCIDR": "10.244.3.0/24",
    "podCIDRs": ["10.244.3.0/24"],
    "providerID": "aws:///eu-west-1a/i-0123456789abcdef0",
    "unschedulable": true,
    "taints": [
      {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
      {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
       "timeAdded": "2024-05-01T09:00:00Z"}
    ]
  },
  "status": {
    "capacity": {"cpu": "8", "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0",
                 "hugepages-2Mi": "0", "memory": "62771056Ki", "nvidia.com/gpu": "1",
                 "pods": "110"},
    "allocatable": {"cpu": "7910m", "ephemeral-storage": "96625420948",
                    "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "61619056Ki",
                    "nvidia.com/gpu": "1", "pods": "110"},
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2024-05-01T10:00:00Z",
       "lastTransitionTime": "2024-04-01T08:00:00Z", "reason": "KubeletHasSufficientMemory",
       "message": "kubelet has sufficient memory available"},
      {"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-05-01T10:00:00Z",
       "lastTransitionTime": "2024-04-01T08:01:00Z", "reason": "KubeletReady",
       "message": "kubelet is posting ready status"}
    ],
    "addresses": [{"type": "InternalIP", "address": "10.0.3.17"},
                  {"type": "Hostname", "address": "gpu-node-3"}],
    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
    "nodeInfo": {"kubeletVersion": "v1.31.1", "containerRuntimeVersion": "containerd://1.7.22",
                 "architecture": "amd64", "operatingSystem": "linux"},
    "images": [
      {"names": ["registry.example.com/checkout@sha256:0123", "registry.example.com/checkout:1.4.2"],
       "sizeBytes": 187654321},
      {"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}
    ]
  }
})json";

TEST(DecodeNodeTest, RealisticNode) {
  Node node = DecodeNode(json::parse(kNodeJson));
  EXPECT_EQ(node.Name(), "gpu-node-3");
  EXPECT_EQ(node.meta.Key(), "gpu-node-3");
  EXPECT_EQ(node.meta.resource_version, "998877");
  EXPECT_EQ(node.meta.labels.size(), 6u);
  EXPECT_EQ(*node.meta.labels.Find("topology.kubernetes.io/zone"), "eu-west-1a");
  EXPECT_EQ(node.meta.annotations.size(), 2u);

  EXPECT_TRUE(node.spec.unschedulable);
  ASSERT_EQ(node.spec.taints.size(), 2u);
  EXPECT_EQ(node.spec.taints[0].ToString(), "nvidia.com/gpu=present:NoSchedule");
  EXPECT_EQ(node.spec.taints[1].ToString(), "node.kubernetes.io/unschedulable:NoSchedule");

  EXPECT_EQ(node.status.capacity.milli_cpu, 8000);
  EXPECT_EQ(node.status.capacity.memory, 62771056LL * 1024);
  EXPECT_EQ(node.status.capacity.ephemeral_storage, 104845292LL * 1024);
  EXPECT_EQ(node.status.capacity.pods, 110);
  EXPECT_EQ(node.status.allocatable.milli_cpu, 7910);
  EXPECT_EQ(node.status.allocatable.memory, 61619056LL * 1024);
  EXPECT_EQ(node.status.allocatable.ephemeral_storage, 96625420948LL);
  EXPECT_EQ(node.status.allocatable.Get("nvidia.com/gpu"), 1);
  std::vector<std::pair<std::string, int64_t>> scalar = {
      {"hugepages-1Gi", 0}, {"hugepages-2Mi", 0}, {"nvidia.com/gpu", 1}};
  EXPECT_EQ(node.status.allocatable.scalar, scalar);

  ASSERT_EQ(node.status.images.size(), 2u);
  EXPECT_EQ(node.status.images[0].names.size(), 2u);
  EXPECT_EQ(node.status.images[0].size_bytes, 187654321);
  EXPECT_EQ(node.status.images[1].names[0], "registry.k8s.io/pause:3.10");
  ASSERT_EQ(node.status.conditions.size(), 2u);
  EXPECT_EQ(node.status.conditions[1].type, "Ready");
  EXPECT_EQ(node.status.conditions[1].status, "True");
  EXPECT_EQ(node.status.conditions[1].reason, "KubeletReady");
  EXPECT_EQ(node.status.conditions[1].message, "kubelet is posting ready status");
}

TEST(DecodeNodeTest, MalformedFieldsNameTheirPath) {
  const json base = json::parse(kNodeJson);
  const std::vector<ErrorCase> cases = {
      {"allocatable cpu", json::parse(R"([{"op": "replace", "path": "/status/allocatable/cpu",
         "value": "7.9.1"}])"),
       "status.allocatable.cpu", "invalid quantity \"7.9.1\""},
      {"capacity type", json::parse(R"([{"op": "replace", "path": "/status/capacity",
         "value": []}])"),
       "status.capacity", "expected object"},
      {"taint effect", json::parse(R"([{"op": "replace", "path": "/spec/taints/1/effect",
         "value": "NoWay"}])"),
       "spec.taints[1].effect", "unknown value \"NoWay\""},
      {"taint key", json::parse(R"([{"op": "remove", "path": "/spec/taints/0/key"}])"),
       "spec.taints[0].key", "required"},
      {"unschedulable", json::parse(R"([{"op": "replace", "path": "/spec/unschedulable",
         "value": 1}])"),
       "spec.unschedulable", "expected boolean"},
      {"image size", json::parse(R"([{"op": "replace", "path": "/status/images/1/sizeBytes",
         "value": "320368"}])"),
       "status.images[1].sizeBytes", "expected integer"},
      {"image names", json::parse(R"([{"op": "replace", "path": "/status/images/0/names",
         "value": "checkout"}])"),
       "status.images[0].names", "expected array"},
      {"condition", json::parse(R"([{"op": "replace", "path": "/status/conditions/0",
         "value": null}])"),
       "status.conditions[0]", "expected object, got null"},
      {"missing name", json::parse(R"([{"op": "remove", "path": "/metadata/name"}])"),
       "metadata.name", "required"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    json node = base.patch(c.patch);
    try {
      DecodeNode(node);
      ADD_FAILURE() << "decoded";
    } catch (const DecodeError& e) {
      EXPECT_EQ(e.field(), c.field);
      EXPECT_NE(std::string(e.what()).find(c.problem), std::string::npos) << e.what();
    }
  }
}

TEST(DecodeResourceListTest, StringsAndNumbers) {
  ResourceList r = DecodeResourceList(
      json::parse(R"({"cpu": 2, "memory": 1.5, "pods": 110, "example.com/dongle": "3",
                      "ephemeral-storage": "1e3"})"),
      "spec.overhead");
  EXPECT_EQ(r.milli_cpu, 2000);
  EXPECT_EQ(r.memory, 2);
  EXPECT_EQ(r.pods, 110);
  EXPECT_EQ(r.ephemeral_storage, 1000);
  EXPECT_EQ(r.Get("example.com/dongle"), 3);
  EXPECT_EQ(DecodeResourceList(json::parse(R"({"cpu": 0.25})"), "x").milli_cpu, 250);
  EXPECT_TRUE(DecodeResourceList(json(nullptr), "x").IsZero());
  EXPECT_TRUE(DecodeResourceList(json::object(), "x").IsZero());
}

TEST(DecodeResourceListTest, ErrorsNameTheResource) {
  struct Case {
    const char* json;
    const char* field;
    const char* message;
  };
  const Case cases[] = {
      {R"({"cpu": "100m", "memory": true})", "requests.memory",
       "requests.memory: expected quantity string, got boolean"},
      {R"({"nvidia.com/gpu": ["1"]})", "requests.nvidia.com/gpu",
       "requests.nvidia.com/gpu: expected quantity string, got array"},
      {R"({"cpu": "1K"})", "requests.cpu",
       "requests.cpu: invalid quantity \"1K\": unknown suffix \"K\""},
      {R"({"memory": ""})", "requests.memory",
       "requests.memory: invalid quantity \"\": empty string"},
      {R"({"memory": null})", "requests.memory",
       "requests.memory: expected quantity string, got null"},
      {R"("100m")", "requests", "requests: expected object, got string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    try {
      DecodeResourceList(json::parse(c.json), "requests");
      ADD_FAILURE() << "decoded";
    } catch (const DecodeError& e) {
      EXPECT_EQ(e.field(), c.field);
      EXPECT_STREQ(e.what(), c.message);
    }
  }
}

// The members of the volume sources that VolumeBinding, VolumeRestrictions and NodeVolumeLimits
// read, as the apiserver serves them.

}  // namespace
}  // namespace berth::api
