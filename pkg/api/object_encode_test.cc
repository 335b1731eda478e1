#include "pkg/api/object_encode.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;

// A pending pod that sets every field api::Pod holds, plus fields Berth does not read.
constexpr const char* kRichPodJson = R"json({
  "kind": "Pod",
  "apiVersion": "v1",
  "metadata": {
    "name": "trainer-0",
    "generateName": "trainer-",
    "namespace": "ml",
    "uid": "6f1c2a3b-0000-4000-8000-00000000a001",
    "resourceVersion": "4242",
    "generation": 3,
    "creationTimestamp": "2025-03-01T12:00:00Z",
    "deletionTimestamp": "2025-03-01T13:00:00Z",
    "labels": {"app": "trainer", "app.kubernetes.io/part-of": "ml", "tier": "gpu"},
    "annotations": {
      "kubectl.kubernetes.io/last-applied-configuration": "{}",
      "example.com/owner": "team-ml"
    },
    "ownerReferences": [
      {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "trainer",
       "uid": "6f1c2a3b-0000-4000-8000-00000000b001", "controller": true,
       "blockOwnerDeletion": true},
      {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg",
       "uid": "6f1c2a3b-0000-4000-8000-00000000b002"}
    ],
    "finalizers": ["example.com/keep"]
  },
  "spec": {
    "volumes": [
      {"name": "data", "persistentVolumeClaim": {"claimName": "data-trainer-0", "readOnly": true}},
      {"name": "scratch", "emptyDir": {"sizeLimit": "10Gi"}},
      {"name": "pd", "gcePersistentDisk": {"pdName": "disk-1", "fsType": "ext4", "readOnly": true}},
      {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-0abc", "fsType": "ext4"}},
      {"name": "cinder", "cinder": {"volumeID": "c-1"}},
      {"name": "px", "portworxVolume": {"volumeID": "px-1"}},
      {"name": "iscsi", "iscsi": {"targetPortal": "10.0.0.1:3260", "lun": 0,
                                  "iqn": "iqn.2001-04.com.example:storage", "readOnly": true}},
      {"name": "rbd", "rbd": {"monitors": ["10.0.0.2:6789", "10.0.0.3:6789"], "image": "img",
                              "pool": "kube", "readOnly": true}},
      {"name": "azure", "azureDisk": {"diskName": "d", "diskURI": "/subscriptions/x/disks/d"}},
      {"name": "inline", "csi": {"driver": "inline.storage.example", "readOnly": true}},
      {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}
    ],
    "initContainers": [
      {"name": "fetch", "image": "busybox:1.36", "command": ["sh", "-c", "true"],
       "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
       "restartPolicyRules": [{"action": "RestartAllContainers",
                               "exitCodes": {"operator": "In", "values": [42]}}]},
      {"name": "proxy", "image": "envoy:1.30", "restartPolicy": "Always",
       "ports": [{"name": "admin", "containerPort": 9901, "protocol": "TCP"}],
       "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                     "limits": {"memory": "128Mi"}}}
    ],
    "containers": [
      {"name": "train", "image": "trainer:v2",
       "env": [{"name": "EPOCHS", "value": "10"}],
       "ports": [{"containerPort": 8080, "hostPort": 18080, "hostIP": "10.1.2.3", "protocol": "UDP"},
                 {"containerPort": 9090}],
       "resources": {
         "requests": {"cpu": "2", "memory": "16393244Ki", "ephemeral-storage": "1G",
                      "nvidia.com/gpu": "2", "hugepages-2Mi": "512Mi", "example.com/zero": "0"},
         "limits": {"cpu": "4", "memory": "20Gi", "nvidia.com/gpu": "2"}},
       "volumeMounts": [{"name": "data", "mountPath": "/data", "bindMountOptions": ["rbind"]}],
       "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}}},
      {"name": "idle", "image": "pause:3.9", "resources": {"requests": {"cpu": "0", "memory": "0"}}}
    ],
    "ephemeralContainers": [
      {"name": "debug", "image": "busybox",
       "volumeMounts": [{"name": "data", "mountPath": "/d", "bindMountOptions": ["ro"]}]}
    ],
    "restartPolicy": "Always",
    "nodeSelector": {"kubernetes.io/os": "linux", "node.example.com/pool": "gpu"},
    "serviceAccountName": "trainer",
    "nodeName": "gpu-node-7",
    "hostNetwork": true,
    "affinity": {
      "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [
             {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b", "a"]},
             {"key": "node.example.com/retiring", "operator": "DoesNotExist"},
             {"key": "node.example.com/gpu-mem", "operator": "Gt", "values": ["16"]},
             {"key": "node.example.com/age", "operator": "Lt", "values": ["-3"]}],
           "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["bad-node"]}]},
          {"matchExpressions": [{"key": "node.example.com/spare", "operator": "Exists"}]}
        ]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 80, "preference": {"matchExpressions": [
             {"key": "node.example.com/fast", "operator": "In", "values": ["true"]}]}},
          {"weight": 1, "preference": {}}
        ]
      },
      "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchLabels": {"app": "ps", "role": "server"},
                             "matchExpressions": [{"key": "tier", "operator": "In",
                                                   "values": ["gpu"]}]},
           "namespaces": ["ml", "shared"], "topologyKey": "kubernetes.io/hostname",
           "namespaceSelector": {}, "matchLabelKeys": ["pod-template-hash"],
           "mismatchLabelKeys": ["tenant"]}
        ],
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 50, "podAffinityTerm": {
             "labelSelector": {"matchExpressions": [{"key": "cache", "operator": "Exists"}]},
             "topologyKey": "topology.kubernetes.io/zone",
             "namespaceSelector": {"matchLabels": {"team": "ml"}}}}
        ]
      },
      "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchLabels": {"app": "trainer"}},
           "topologyKey": "kubernetes.io/hostname"}
        ]
      }
    },
    "schedulerName": "berth-scheduler",
    "tolerations": [
      {"operator": "Exists"},
      {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 300},
      {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
      {"key": "dedicated", "value": "ml", "effect": "PreferNoSchedule"}
    ],
    "priorityClassName": "high",
    "priority": 100000,
    "preemptionPolicy": "Never",
    "overhead": {"cpu": "250m", "memory": "120Mi"},
    "topologySpreadConstraints": [
      {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
       "whenUnsatisfiable": "DoNotSchedule",
       "labelSelector": {"matchLabels": {"app": "trainer"}}},
      {"maxSkew": 3, "topologyKey": "kubernetes.io/hostname",
       "whenUnsatisfiable": "ScheduleAnyway",
       "labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn",
                                               "values": ["x", "y"]}]},
       "minDomains": 2, "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor",
       "matchLabelKeys": ["pod-template-hash"]}
    ],
    "hostUsers": false,
    "schedulingGates": [{"name": "example.com/quota"}, {"name": "example.com/data-ready"}],
    "resourceClaims": [
      {"name": "gpu", "resourceClaimTemplateName": "gpu-template"},
      {"name": "shared", "resourceClaimName": "shared-nic"}
    ],
    "resources": {"requests": {"cpu": "3", "memory": "24Gi"}, "limits": {"cpu": "6"}},
    "schedulingGroup": {"podGroupName": "trainer-gang"}
  },
  "status": {
    "phase": "Pending",
    "conditions": [
      {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
       "message": "0/12 nodes are available: 12 Insufficient nvidia.com/gpu.",
       "lastProbeTime": null, "lastTransitionTime": "2025-03-01T12:00:01Z"},
      {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
      {"type": "Ready", "status": "False"}
    ],
    "nominatedNodeName": "gpu-node-7",
    "startTime": "2025-03-01T12:00:02Z",
    "qosClass": "Burstable",
    "resourceClaimStatuses": [
      {"name": "gpu", "resourceClaimName": "trainer-0-gpu-x7k2p"},
      {"name": "unused"}
    ],
    "extendedResourceClaimStatus": {
      "requestMappings": [
        {"containerName": "train", "resourceName": "nvidia.com/gpu", "requestName": "container-0"}
      ],
      "resourceClaimName": "trainer-0-extended-resources-abcde"
    }
  }
})json";

// A cordoned GPU node as the kubelet reports it.
constexpr const char* kRichNodeJson = R"json({
  "kind": "Node",
  "apiVersion": "v1",
  "metadata": {
    "name": "gpu-node-7",
    "uid": "7a8b9c0d-0000-4000-8000-000000000007",
    "resourceVersion": "998877",
    "creationTimestamp": "2025-01-01T08:00:00Z",
    "labels": {"kubernetes.io/hostname": "gpu-node-7", "kubernetes.io/os": "linux",
               "topology.kubernetes.io/zone": "a"},
    "annotations": {"node.alpha.kubernetes.io/ttl": "0"}
  },
  "spec": {
    "podCIDR": "10.244.7.0/24",
    "unschedulable": true,
    "taints": [
      {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
      {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
       "timeAdded": "2025-03-01T09:00:00Z"},
      {"key": "example.com/drain", "effect": "NoExecute"},
      {"key": "example.com/soft", "value": "1", "effect": "PreferNoSchedule"}
    ]
  },
  "status": {
    "capacity": {"cpu": "8", "memory": "32827396Ki", "ephemeral-storage": "101430960Ki",
                 "hugepages-1Gi": "0", "hugepages-2Mi": "1Gi", "nvidia.com/gpu": "4",
                 "pods": "110"},
    "allocatable": {"cpu": "7910m", "memory": "31676420Ki", "ephemeral-storage": "93478772582",
                    "hugepages-1Gi": "0", "hugepages-2Mi": "1Gi", "nvidia.com/gpu": "4",
                    "pods": "110"},
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
       "message": "kubelet has sufficient memory available",
       "lastHeartbeatTime": "2025-03-01T12:00:00Z"},
      {"type": "Ready", "status": "True", "reason": "KubeletReady",
       "message": "kubelet is posting ready status"}
    ],
    "addresses": [{"type": "InternalIP", "address": "10.0.7.1"}],
    "nodeInfo": {"kubeletVersion": "v1.34.0"},
    "images": [
      {"names": ["trainer@sha256:0123", "trainer:v2"], "sizeBytes": 7340032000},
      {"names": ["pause:3.9"], "sizeBytes": 321000},
      {"sizeBytes": 1}
    ],
    "declaredFeatures": ["RestartAllContainersOnContainerExits", "VolumeBindMountOptions"]
  }
})json";

std::string PodText(const Pod& pod) {
  std::string out;
  AppendPodJson(pod, &out);
  return out;
}

std::string NodeText(const Node& node) {
  std::string out;
  AppendNodeJson(node, &out);
  return out;
}

// Flags the decoder derives from members the encoder cannot write back (restartPolicyRules,
// volumeMounts' bindMountOptions: Berth keeps neither list); cleared before comparing round trips.
void ClearDerivedFlags(Pod& pod) {
  for (auto* containers : {&pod.spec.containers, &pod.spec.init_containers}) {
    for (Container& c : *containers) {
      c.restarts_all_containers = false;
      c.bind_mount_options = false;
    }
  }
  pod.spec.ephemeral_bind_mount_options = false;
}

TEST(ObjectEncodeTest, RichPodRoundTripsThroughBothEncoders) {
  Pod pod = DecodePod(json::parse(kRichPodJson));
  // The fixture reaches the fields it is meant to cover.
  ASSERT_EQ(pod.spec.volumes.size(), 11u);
  ASSERT_TRUE(pod.spec.affinity && pod.spec.affinity->pod_anti_affinity);
  ASSERT_TRUE(pod.spec.init_containers[1].restartable);
  ASSERT_TRUE(pod.spec.resources && pod.spec.containers[1].resources.has_cpu_request);
  ASSERT_TRUE(pod.status.extended_resource_claim_status);
  ASSERT_EQ(pod.status.conditions.size(), 2u);
  ASSERT_TRUE(pod.spec.init_containers[0].restarts_all_containers);
  ClearDerivedFlags(pod);

  const json encoded = EncodePod(pod);
  EXPECT_EQ(DecodePod(encoded), pod);
  const json text = json::parse(PodText(pod));
  EXPECT_EQ(DecodePod(text), pod);
  // One shape, written two ways.
  EXPECT_EQ(text, encoded);
}

TEST(ObjectEncodeTest, RichNodeRoundTripsThroughBothEncoders) {
  const Node node = DecodeNode(json::parse(kRichNodeJson));
  ASSERT_EQ(node.spec.taints.size(), 4u);
  ASSERT_EQ(node.status.images.size(), 3u);
  ASSERT_EQ(node.status.allocatable.scalar.size(), 3u);

  const json encoded = EncodeNode(node);
  EXPECT_EQ(DecodeNode(encoded), node);
  const json text = json::parse(NodeText(node));
  EXPECT_EQ(DecodeNode(text), node);
  EXPECT_EQ(text, encoded);
}

TEST(ObjectEncodeTest, DerivedFlagsAreNotSent) {
  const Pod pod = DecodePod(json::parse(kRichPodJson));
  const Pod again = DecodePod(EncodePod(pod));
  EXPECT_FALSE(again.spec.init_containers[0].restarts_all_containers);
  EXPECT_FALSE(again.spec.containers[0].bind_mount_options);
  EXPECT_FALSE(again.spec.ephemeral_bind_mount_options);
}

TEST(ObjectEncodeTest, EmptyFieldsAreLeftOutInGoOrder) {
  Pod pod;
  pod.meta.name = "p";
  pod.spec.containers.emplace_back().name = "c";
  EXPECT_EQ(PodText(pod),
            R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","creationTimestamp":null},)"
            R"("spec":{"containers":[{"name":"c","resources":{}}],)"
            R"("schedulerName":"default-scheduler","priority":0,)"
            R"("preemptionPolicy":"PreemptLowerPriority"},"status":{}})");
  EXPECT_EQ(DecodePod(json::parse(PodText(pod))), DecodePod(EncodePod(pod)));

  Node node;
  node.meta.name = "n";
  node.meta.creation_timestamp = "2025-01-01T00:00:00Z";
  EXPECT_EQ(NodeText(node),
            R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"n",)"
            R"("creationTimestamp":"2025-01-01T00:00:00Z"},"spec":{},"status":{}})");
  EXPECT_EQ(EncodeNode(node), json::parse(NodeText(node)));
}

TEST(ObjectEncodeTest, QuantitiesAreCanonicalStrings) {
  const json pod = EncodePod(DecodePod(json::parse(kRichPodJson)));
  const json& train = pod["spec"]["containers"][0]["resources"];
  EXPECT_EQ(train["requests"], json::parse(R"({"cpu": "2", "memory": "16393244Ki",
      "ephemeral-storage": "1G", "nvidia.com/gpu": "2", "hugepages-2Mi": "512Mi",
      "example.com/zero": "0"})"));
  EXPECT_EQ(train["limits"],
            json::parse(R"({"cpu": "4", "memory": "20Gi", "nvidia.com/gpu": "2"})"));
  // A stated zero request is kept: it is not the same as no request.
  EXPECT_EQ(pod["spec"]["containers"][1]["resources"],
            json::parse(R"({"requests": {"cpu": "0", "memory": "0"}})"));
  EXPECT_EQ(pod["spec"]["overhead"], json::parse(R"({"cpu": "250m", "memory": "120Mi"})"));

  // A list holding nothing but a zero amount of an extended resource is still written.
  Pod zero;
  zero.meta.name = "zero";
  zero.spec.overhead.Set("example.com/zero", 0);
  EXPECT_EQ(EncodePod(zero)["spec"]["overhead"], json::parse(R"({"example.com/zero": "0"})"));
  EXPECT_EQ(DecodePod(json::parse(PodText(zero))), DecodePod(EncodePod(zero)));
  EXPECT_EQ(DecodePod(EncodePod(zero)).spec.overhead, zero.spec.overhead);

  const json node = EncodeNode(DecodeNode(json::parse(kRichNodeJson)));
  EXPECT_EQ(node["status"]["allocatable"], json::parse(R"({"cpu": "7910m",
      "memory": "31676420Ki", "ephemeral-storage": "93478772582", "hugepages-1Gi": "0",
      "hugepages-2Mi": "1Gi", "nvidia.com/gpu": "4", "pods": "110"})"));

  // Counts stay decimal even when a binary suffix would be shorter.
  Node counts;
  counts.meta.name = "n";
  counts.status.capacity.Set("example.com/slots", 1024);
  counts.status.capacity.Set(kResourcePods, 2048);
  counts.status.capacity.Set(kResourceMemory, 1000000000);
  EXPECT_EQ(EncodeNode(counts)["status"]["capacity"],
            json::parse(R"({"example.com/slots": "1024", "pods": "2048", "memory": "1G"})"));
}

TEST(ObjectEncodeTest, AffinityAndTolerationsHaveTheApiShape) {
  const json pod = EncodePod(DecodePod(json::parse(kRichPodJson)));
  const json& affinity = pod["spec"]["affinity"];
  // Values come back sorted (the decoder sorts them); matchLabels stay matchLabels.
  EXPECT_EQ(affinity["nodeAffinity"], json::parse(R"({
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
      {"matchExpressions": [
         {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a", "b"]},
         {"key": "node.example.com/retiring", "operator": "DoesNotExist"},
         {"key": "node.example.com/gpu-mem", "operator": "Gt", "values": ["16"]},
         {"key": "node.example.com/age", "operator": "Lt", "values": ["-3"]}],
       "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["bad-node"]}]},
      {"matchExpressions": [{"key": "node.example.com/spare", "operator": "Exists"}]}]},
    "preferredDuringSchedulingIgnoredDuringExecution": [
      {"weight": 80, "preference": {"matchExpressions": [
         {"key": "node.example.com/fast", "operator": "In", "values": ["true"]}]}},
      {"weight": 1, "preference": {}}]})"));
  EXPECT_EQ(affinity["podAffinity"], json::parse(R"({
    "requiredDuringSchedulingIgnoredDuringExecution": [
      {"labelSelector": {"matchLabels": {"app": "ps", "role": "server", "tier": "gpu"}},
       "namespaces": ["ml", "shared"], "topologyKey": "kubernetes.io/hostname",
       "namespaceSelector": {}, "matchLabelKeys": ["pod-template-hash"],
       "mismatchLabelKeys": ["tenant"]}],
    "preferredDuringSchedulingIgnoredDuringExecution": [
      {"weight": 50, "podAffinityTerm": {
         "labelSelector": {"matchExpressions": [{"key": "cache", "operator": "Exists"}]},
         "topologyKey": "topology.kubernetes.io/zone",
         "namespaceSelector": {"matchLabels": {"team": "ml"}}}}]})"));
  EXPECT_EQ(pod["spec"]["tolerations"], json::parse(R"([
    {"operator": "Exists"},
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "PreferNoSchedule"}])"));
  EXPECT_EQ(pod["spec"]["topologySpreadConstraints"][1], json::parse(R"({
    "maxSkew": 3, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
    "labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn",
                                            "values": ["x", "y"]}]},
    "minDomains": 2, "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor",
    "matchLabelKeys": ["pod-template-hash"]})"));
  EXPECT_EQ(pod["spec"]["volumes"][0], json::parse(R"({"name": "data",
                "persistentVolumeClaim": {"claimName": "data-trainer-0", "readOnly": true}})"));
  EXPECT_EQ(pod["spec"]["volumes"][10], json::parse(R"({"name": "cfg", "configMap": {}})"));
}

TEST(ObjectEncodeTest, QuantitiesAtTheEdgesOfInt64RoundTrip) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  Node node;
  node.meta.name = "huge";
  ResourceList& capacity = node.status.capacity;
  capacity.milli_cpu = kMax;
  capacity.memory = int64_t{1} << 62;
  capacity.ephemeral_storage = kMax - 1023;
  capacity.pods = kMin;
  capacity.Set("hugepages-1Gi", kMax & ~int64_t{1023});
  capacity.Set("example.com/big", kMax);
  node.status.allocatable = capacity;
  node.status.allocatable.milli_cpu = kMax - 1;

  const std::string text = NodeText(node);
  EXPECT_EQ(DecodeNode(json::parse(text)), node);
  EXPECT_EQ(DecodeNode(EncodeNode(node)), node);
  const json capacity_json = json::parse(text)["status"]["capacity"];
  EXPECT_EQ(capacity_json["cpu"], "9223372036854775807m");
  EXPECT_EQ(capacity_json["memory"], "4Ei");
  EXPECT_EQ(capacity_json["pods"], "-9223372036854775808");
  EXPECT_EQ(capacity_json["example.com/big"], "9223372036854775807");
  EXPECT_EQ(capacity_json["hugepages-1Gi"], "9007199254740991Ki");
}

TEST(ObjectEncodeTest, HostileStringsAreEscapedValidly) {
  Pod pod;
  pod.meta.name = "p";
  pod.meta.labels = Labels({{"zone", "東京-ü"},
                            {"ctl", std::string("a\x01\n\t\"\\b\x1f\x7f")},
                            {"line-sep", "x\u2028y"},
                            {"not-utf8", "ok\xff\xfe\xc3"},
                            {"nul", std::string("a\0b", 3)}});
  pod.meta.annotations.Set("k\"ey\n", "v");
  pod.spec.containers.emplace_back().name = "c\xc0\xaf";

  const std::string text = PodText(pod);
  // nlohmann's parser rejects malformed JSON and malformed UTF-8.
  const json parsed = json::parse(text);
  EXPECT_NE(text.find(R"("a\u0001\n\t\"\\b\u001f)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("a\u0000b")"), std::string::npos) << text;
  const json& labels = parsed["metadata"]["labels"];
  EXPECT_EQ(labels["zone"], "東京-ü");
  EXPECT_EQ(labels["ctl"], std::string("a\x01\n\t\"\\b\x1f\x7f"));
  EXPECT_EQ(labels["line-sep"], "x\u2028y");
  EXPECT_EQ(labels["nul"], std::string("a\0b", 3));
  // Bytes that are not UTF-8 become U+FFFD, one per byte, as Go's encoding/json writes them.
  EXPECT_EQ(labels["not-utf8"], "ok\uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(parsed["metadata"]["annotations"]["k\"ey\n"], "v");
  EXPECT_EQ(parsed["spec"]["containers"][0]["name"], "c\uFFFD\uFFFD");
  // The DOM form holds the same replaced text, so dumping it cannot throw.
  const json encoded = EncodePod(pod);
  EXPECT_EQ(encoded, parsed);
  EXPECT_EQ(json::parse(encoded.dump()), parsed);
}

TEST(ObjectEncodeTest, AppendAddsToWhatIsThere) {
  const Node node = DecodeNode(json::parse(kRichNodeJson));
  std::string out = "[";
  AppendNodeJson(node, &out);
  out += ',';
  AppendNodeJson(node, &out);
  out += ']';
  const json list = json::parse(out);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(DecodeNode(list[1]), node);
}

}  // namespace
}  // namespace berth::api
