#include "pkg/api/codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;
using Entries = std::vector<StringMap::Entry>;

constexpr int64_t kMi = int64_t{1024} * 1024;
constexpr int64_t kGi = 1024 * kMi;

// A Deployment-owned pod as the apiserver serves it from GET /api/v1/namespaces/shop/pods/...
constexpr const char* kPodJson = R"json({
  "kind": "Pod",
  "apiVersion": "v1",
  "metadata": {
    "name": "checkout-7c9d6b5f8-x2x4q",
    "generateName": "checkout-7c9d6b5f8-",
    "namespace": "shop",
    "uid": "5b0f5a4e-2f53-4a8e-9c1e-0f6d1f3a9b21",
    "resourceVersion": "1234567",
    "generation": 1,
    "creationTimestamp": "2024-05-01T10:00:00Z",
    "labels": {
      "app.kubernetes.io/name": "checkout",
      "pod-template-hash": "7c9d6b5f8",
      "tier": "backend"
    },
    "annotations": {
      "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}",
      "kubectl.kubernetes.io/restartedAt": "2024-05-01T09:59:00Z",
      "prometheus.io/scrape": "true"
    },
    "ownerReferences": [
      {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "checkout-7c9d6b5f8",
        "uid": "0d3f3bb2-1c1d-4b7e-8f3a-9e4d3c2b1a00",
        "controller": true,
        "blockOwnerDeletion": true
      }
    ],
    "managedFields": [
      {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2024-05-01T10:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
          "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:tier": {}}},
          "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}
        }
      },
      {
        "manager": "kubelet",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2024-05-01T10:00:05Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:conditions": {}}},
        "subresource": "status"
      }
    ]
  },
  "spec": {
    "volumes": [
      {"name": "data", "persistentVolumeClaim": {"claimName": "checkout-data", "readOnly": true}},
      {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
      {
        "name": "kube-api-access-9zq7k",
        "projected": {
          "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
          ],
          "defaultMode": 420
        }
      }
    ],
    "initContainers": [
      {
        "name": "migrate",
        "image": "registry.example.com/checkout-migrate:1.4.2",
        "command": ["/migrate", "--up"],
        "resources": {"limits": {"cpu": "1", "memory": "256Mi"},
                      "requests": {"cpu": "500m", "memory": "256Mi"}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"
      },
      {
        "name": "mesh-proxy",
        "image": "registry.example.com/proxy:2.1",
        "restartPolicy": "Always",
        "ports": [{"name": "admin", "containerPort": 15000, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}
      }
    ],
    "containers": [
      {
        "name": "app",
        "image": "registry.example.com/checkout:1.4.2",
        "args": ["--port=8080"],
        "ports": [
          {"name": "http", "containerPort": 8080, "protocol": "TCP"},
          {"name": "metrics", "containerPort": 9100, "hostPort": 9100, "protocol": "TCP"}
        ],
        "env": [{"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"containerName": "app",
                 "resource": "limits.cpu", "divisor": "0"}}}],
        "resources": {
          "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"},
          "requests": {"cpu": "1500m", "memory": "768Mi", "ephemeral-storage": "2Gi",
                       "nvidia.com/gpu": "1"}
        },
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                           "timeoutSeconds": 1, "periodSeconds": 10},
        "terminationMessagePath": "/dev/termination-log",
        "imagePullPolicy": "IfNotPresent"
      },
      {
        "name": "log-shipper",
        "image": "registry.example.com/shipper:0.9",
        "resources": {}
      }
    ],
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "serviceAccountName": "checkout",
    "serviceAccount": "checkout",
    "securityContext": {"runAsNonRoot": true},
    "affinity": {
      "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
          "nodeSelectorTerms": [
            {"matchExpressions": [
              {"key": "node.kubernetes.io/instance-type", "operator": "In",
               "values": ["m5.xlarge", "m5.2xlarge"]},
              {"key": "example.com/cores", "operator": "Gt", "values": ["3"]}
            ]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["special-1"]}]}
          ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 20, "preference": {"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}]}}
        ]
      },
      "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchLabels": {"app.kubernetes.io/name": "cache"}},
           "topologyKey": "topology.kubernetes.io/zone",
           "namespaces": ["shop", "shared"]}
        ]
      },
      "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [
              {"key": "app.kubernetes.io/name", "operator": "In", "values": ["checkout"]}]},
            "topologyKey": "kubernetes.io/hostname",
            "namespaceSelector": {},
            "matchLabelKeys": ["pod-template-hash"],
            "mismatchLabelKeys": ["tenant"]}}
        ]
      }
    },
    "schedulerName": "berth",
    "tolerations": [
      {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 300},
      {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 300},
      {"key": "dedicated", "operator": "Equal", "value": "shop", "effect": "NoSchedule"}
    ],
    "priorityClassName": "business-critical",
    "priority": 100000,
    "preemptionPolicy": "Never",
    "enableServiceLinks": true,
    "overhead": {"cpu": "250m", "memory": "120Mi"},
    "topologySpreadConstraints": [
      {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
       "whenUnsatisfiable": "ScheduleAnyway",
       "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "checkout"}},
       "minDomains": 3, "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor",
       "matchLabelKeys": ["pod-template-hash"]},
      {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
       "whenUnsatisfiable": "DoNotSchedule",
       "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "checkout"}}}
    ],
    "schedulingGates": [{"name": "example.com/quota"}],
    "hostNetwork": false,
    "resourceClaims": [
      {"name": "gpu", "resourceClaimTemplateName": "checkout-gpu"},
      {"name": "license", "resourceClaimName": "shared-license"}
    ],
    "schedulingGroup": {"podGroupName": "checkout-workers"}
  },
  "status": {
    "phase": "Pending",
    "conditions": [
      {"type": "PodScheduled", "status": "False", "lastProbeTime": null,
       "lastTransitionTime": "2024-05-01T10:00:01Z", "reason": "Unschedulable",
       "message": "0/12 nodes are available: 12 Insufficient nvidia.com/gpu."},
      {"type": "Ready", "status": "False", "lastProbeTime": null,
       "lastTransitionTime": "2024-05-01T10:00:01Z"},
      {"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
       "lastTransitionTime": "2024-05-01T10:02:00Z", "reason": "PreemptionByScheduler",
       "message": "default-scheduler: preempting to accommodate a higher priority pod"}
    ],
    "nominatedNodeName": "gpu-node-3",
    "startTime": "2024-05-01T10:00:02Z",
    "qosClass": "Burstable",
    "resourceClaimStatuses": [
      {"name": "gpu", "resourceClaimName": "checkout-7c9d6b5f8-x2x4q-gpu-5fz8k"}
    ],
    "extendedResourceClaimStatus": {
      "requestMappings": [
        {"containerName": "checkout", "resourceName": "example.com/gpu",
         "requestName": "container-0-request-0"}
      ],
      "resourceClaimName": "checkout-7c9d6b5f8-x2x4q-extended-resources-b9r2w"
    }
  }
})json";

TEST(DecodePodTest, RealisticPod) {
  Pod pod = DecodePod(json::parse(kPodJson));

  EXPECT_EQ(pod.meta.name, "checkout-7c9d6b5f8-x2x4q");
  EXPECT_EQ(pod.meta.namespace_, "shop");
  EXPECT_EQ(pod.Key(), "shop/checkout-7c9d6b5f8-x2x4q");
  EXPECT_EQ(pod.meta.uid, "5b0f5a4e-2f53-4a8e-9c1e-0f6d1f3a9b21");
  EXPECT_EQ(pod.meta.resource_version, "1234567");
  EXPECT_EQ(pod.meta.generation, 1);
  EXPECT_EQ(pod.meta.creation_timestamp, "2024-05-01T10:00:00Z");
  EXPECT_FALSE(pod.meta.deletion_timestamp.has_value());
  EXPECT_EQ(pod.meta.labels.size(), 3u);
  EXPECT_EQ(*pod.meta.labels.Find("tier"), "backend");
  EXPECT_EQ(pod.meta.annotations.size(), 2u);
  EXPECT_FALSE(pod.meta.annotations.Contains("kubectl.kubernetes.io/last-applied-configuration"));
  EXPECT_EQ(*pod.meta.annotations.Find("prometheus.io/scrape"), "true");
  ASSERT_EQ(pod.meta.owner_references.size(), 1u);
  EXPECT_EQ(pod.meta.owner_references[0].api_version, "apps/v1");
  EXPECT_EQ(pod.meta.owner_references[0].kind, "ReplicaSet");
  EXPECT_EQ(pod.meta.owner_references[0].name, "checkout-7c9d6b5f8");
  EXPECT_EQ(pod.meta.owner_references[0].uid, "0d3f3bb2-1c1d-4b7e-8f3a-9e4d3c2b1a00");
  EXPECT_TRUE(pod.meta.owner_references[0].controller);

  const PodSpec& spec = pod.spec;
  EXPECT_EQ(spec.scheduler_name, "berth");
  EXPECT_EQ(spec.node_name, "");
  EXPECT_EQ(spec.priority, 100000);
  EXPECT_EQ(spec.priority_class_name, "business-critical");
  EXPECT_EQ(spec.preemption_policy, PreemptionPolicy::kNever);
  EXPECT_FALSE(spec.host_network);

  ASSERT_EQ(spec.containers.size(), 2u);
  const Container& app = spec.containers[0];
  EXPECT_EQ(app.name, "app");
  EXPECT_EQ(app.image, "registry.example.com/checkout:1.4.2");
  EXPECT_EQ(app.resources.requests.milli_cpu, 1500);
  EXPECT_EQ(app.resources.requests.memory, 768 * kMi);
  EXPECT_EQ(app.resources.requests.ephemeral_storage, 2 * kGi);
  EXPECT_EQ(app.resources.requests.Get("nvidia.com/gpu"), 1);
  EXPECT_EQ(app.resources.limits.milli_cpu, 2000);
  EXPECT_EQ(app.resources.limits.memory, kGi);
  EXPECT_TRUE(app.resources.has_cpu_request);
  EXPECT_TRUE(app.resources.has_memory_request);
  EXPECT_FALSE(app.restartable);
  ASSERT_EQ(app.ports.size(), 2u);
  EXPECT_EQ(app.ports[1].container_port, 9100);
  EXPECT_EQ(app.ports[1].host_port, 9100);
  EXPECT_EQ(app.ports[1].protocol, "TCP");
  const Container& shipper = spec.containers[1];
  EXPECT_FALSE(shipper.resources.has_cpu_request);
  EXPECT_FALSE(shipper.resources.has_memory_request);
  EXPECT_TRUE(shipper.resources.requests.IsZero());

  ASSERT_EQ(spec.init_containers.size(), 2u);
  EXPECT_FALSE(spec.init_containers[0].restartable);
  EXPECT_TRUE(spec.init_containers[1].restartable);
  EXPECT_EQ(spec.init_containers[1].name, "mesh-proxy");

  EXPECT_EQ(spec.overhead.milli_cpu, 250);
  EXPECT_EQ(spec.overhead.memory, 120 * kMi);
  EXPECT_FALSE(spec.resources.has_value());
  EXPECT_EQ(spec.node_selector, StringMap(Entries{{"kubernetes.io/os", "linux"}}));

  ASSERT_TRUE(spec.affinity.has_value());
  ASSERT_TRUE(spec.affinity->node_affinity.has_value());
  const NodeAffinity& na = *spec.affinity->node_affinity;
  ASSERT_TRUE(na.required.has_value());
  ASSERT_EQ(na.required->terms.size(), 2u);
  Labels m5({{"node.kubernetes.io/instance-type", "m5.xlarge"}, {"example.com/cores", "4"}});
  EXPECT_TRUE(na.required->Matches(m5, "n1"));
  EXPECT_FALSE(na.required->Matches(
      Labels({{"node.kubernetes.io/instance-type", "m5.xlarge"}, {"example.com/cores", "3"}}),
      "n1"));
  EXPECT_TRUE(na.required->Matches(Labels(), "special-1"));
  ASSERT_EQ(na.preferred.size(), 1u);
  EXPECT_EQ(na.preferred[0].weight, 20);
  EXPECT_TRUE(na.preferred[0].preference.Matches(
      Labels(Entries{{"topology.kubernetes.io/zone", "eu-west-1a"}}), "n1"));

  ASSERT_TRUE(spec.affinity->pod_affinity.has_value());
  const PodAffinity& pa = *spec.affinity->pod_affinity;
  ASSERT_EQ(pa.required.size(), 1u);
  EXPECT_TRUE(pa.preferred.empty());
  ASSERT_TRUE(pa.required[0].label_selector.has_value());
  EXPECT_TRUE(
      pa.required[0].label_selector->Matches(Labels(Entries{{"app.kubernetes.io/name", "cache"}})));
  EXPECT_EQ(pa.required[0].topology_key, "topology.kubernetes.io/zone");
  EXPECT_EQ(pa.required[0].namespaces, (std::vector<std::string>{"shop", "shared"}));
  EXPECT_FALSE(pa.required[0].namespace_selector.has_value());

  ASSERT_TRUE(spec.affinity->pod_anti_affinity.has_value());
  const PodAffinity& anti = *spec.affinity->pod_anti_affinity;
  EXPECT_TRUE(anti.required.empty());
  ASSERT_EQ(anti.preferred.size(), 1u);
  EXPECT_EQ(anti.preferred[0].weight, 100);
  const PodAffinityTerm& anti_term = anti.preferred[0].term;
  EXPECT_EQ(anti_term.topology_key, "kubernetes.io/hostname");
  ASSERT_TRUE(anti_term.namespace_selector.has_value());
  EXPECT_TRUE(anti_term.namespace_selector->Empty());
  EXPECT_EQ(anti_term.match_label_keys, std::vector<std::string>{"pod-template-hash"});
  EXPECT_EQ(anti_term.mismatch_label_keys, std::vector<std::string>{"tenant"});

  ASSERT_EQ(spec.tolerations.size(), 3u);
  EXPECT_EQ(spec.tolerations[0].op, TolerationOperator::kExists);
  EXPECT_EQ(spec.tolerations[0].effect, TaintEffect::kNoExecute);
  EXPECT_EQ(spec.tolerations[0].toleration_seconds, 300);
  EXPECT_TRUE(spec.tolerations[2].Tolerates({"dedicated", "shop", TaintEffect::kNoSchedule}));

  ASSERT_EQ(spec.topology_spread_constraints.size(), 2u);
  const TopologySpreadConstraint& zone = spec.topology_spread_constraints[0];
  EXPECT_EQ(zone.max_skew, 2);
  EXPECT_EQ(zone.topology_key, "topology.kubernetes.io/zone");
  EXPECT_EQ(zone.when_unsatisfiable, WhenUnsatisfiable::kScheduleAnyway);
  EXPECT_EQ(zone.min_domains, 3);
  EXPECT_EQ(zone.node_affinity_policy, NodeInclusionPolicy::kIgnore);
  EXPECT_EQ(zone.node_taints_policy, NodeInclusionPolicy::kHonor);
  EXPECT_EQ(zone.match_label_keys, std::vector<std::string>{"pod-template-hash"});
  ASSERT_TRUE(zone.label_selector.has_value());
  const TopologySpreadConstraint& host = spec.topology_spread_constraints[1];
  EXPECT_EQ(host.when_unsatisfiable, WhenUnsatisfiable::kDoNotSchedule);
  EXPECT_FALSE(host.min_domains.has_value());
  EXPECT_EQ(host.node_affinity_policy, NodeInclusionPolicy::kHonor);
  EXPECT_EQ(host.node_taints_policy, NodeInclusionPolicy::kIgnore);

  EXPECT_EQ(spec.scheduling_gates, std::vector<std::string>{"example.com/quota"});
  EXPECT_EQ(spec.scheduling_group, "checkout-workers");

  ASSERT_EQ(spec.volumes.size(), 3u);
  EXPECT_EQ(spec.volumes[0].name, "data");
  EXPECT_EQ(spec.volumes[0].source, "persistentVolumeClaim");
  EXPECT_EQ(spec.volumes[0].claim_name, "checkout-data");
  EXPECT_TRUE(spec.volumes[0].read_only);
  EXPECT_EQ(spec.volumes[1].source, "emptyDir");
  EXPECT_EQ(spec.volumes[1].claim_name, "");
  EXPECT_EQ(spec.volumes[2].source, "projected");

  ASSERT_EQ(spec.resource_claims.size(), 2u);
  EXPECT_EQ(spec.resource_claims[0].name, "gpu");
  EXPECT_EQ(spec.resource_claims[0].resource_claim_template_name, "checkout-gpu");
  EXPECT_FALSE(spec.resource_claims[0].resource_claim_name.has_value());
  EXPECT_EQ(spec.resource_claims[1].name, "license");
  EXPECT_EQ(spec.resource_claims[1].resource_claim_name, "shared-license");
  EXPECT_FALSE(spec.resource_claims[1].resource_claim_template_name.has_value());

  ASSERT_EQ(pod.status.resource_claim_statuses.size(), 1u);
  EXPECT_EQ(pod.status.resource_claim_statuses[0].name, "gpu");
  EXPECT_EQ(pod.status.resource_claim_statuses[0].resource_claim_name,
            "checkout-7c9d6b5f8-x2x4q-gpu-5fz8k");
  ASSERT_TRUE(pod.status.extended_resource_claim_status.has_value());
  const PodExtendedResourceClaimStatus& extended = *pod.status.extended_resource_claim_status;
  EXPECT_EQ(extended.resource_claim_name, "checkout-7c9d6b5f8-x2x4q-extended-resources-b9r2w");
  ASSERT_EQ(extended.request_mappings.size(), 1u);
  EXPECT_EQ(extended.request_mappings[0].container_name, "checkout");
  EXPECT_EQ(extended.request_mappings[0].resource_name, "example.com/gpu");
  EXPECT_EQ(extended.request_mappings[0].request_name, "container-0-request-0");

  EXPECT_EQ(pod.status.phase, "Pending");
  // Ready is dropped; what scheduling reads is kept.
  ASSERT_EQ(pod.status.conditions.size(), 2u);
  EXPECT_EQ(pod.status.conditions[0].type, "PodScheduled");
  EXPECT_EQ(pod.status.conditions[0].status, "False");
  EXPECT_EQ(pod.status.conditions[0].reason, "Unschedulable");
  EXPECT_EQ(pod.status.conditions[1].type, "DisruptionTarget");
  EXPECT_EQ(pod.status.conditions[1].reason, "PreemptionByScheduler");
  EXPECT_EQ(pod.status.nominated_node_name, "gpu-node-3");
  EXPECT_EQ(pod.status.start_time, "2024-05-01T10:00:02Z");

  // Containers: cpu 1500m, memory 768Mi. Init: migrate 500m/256Mi, then the proxy sidecar
  // 100m/64Mi which runs alongside the containers. Overhead 250m/120Mi.
  EXPECT_EQ(pod.requests.milli_cpu, 1500 + 100 + 250);
  EXPECT_EQ(pod.requests.memory, (768 + 64 + 120) * kMi);
  EXPECT_EQ(pod.requests.ephemeral_storage, 2 * kGi);
  EXPECT_EQ(pod.requests.Get("nvidia.com/gpu"), 1);
  // The log shipper states nothing and counts 100m / 200Mi for scoring.
  EXPECT_EQ(pod.non_zero_milli_cpu, 1500 + 100 + 100 + 250);
  EXPECT_EQ(pod.non_zero_memory, (768 + 200 + 64 + 120) * kMi);
  ASSERT_EQ(pod.host_ports.size(), 1u);
  EXPECT_EQ(pod.host_ports[0].host_port, 9100);
}

TEST(DecodePodTest, MinimalPodGetsDefaults) {
  Pod pod = DecodePod(json::parse(R"({"metadata": {"name": "bare"}})"));
  EXPECT_EQ(pod.meta.name, "bare");
  EXPECT_EQ(pod.Key(), "bare");
  EXPECT_EQ(pod.spec.scheduler_name, "default-scheduler");
  EXPECT_EQ(pod.spec.preemption_policy, PreemptionPolicy::kPreemptLowerPriority);
  EXPECT_EQ(pod.spec.priority, 0);
  EXPECT_FALSE(pod.spec.affinity.has_value());
  EXPECT_TRUE(pod.spec.containers.empty());
  EXPECT_TRUE(pod.spec.resource_claims.empty());
  EXPECT_TRUE(pod.requests.IsZero());
  EXPECT_EQ(pod.status.phase, "");
}

TEST(DecodePodTest, NullsAreAbsent) {
  Pod pod = DecodePod(json::parse(R"({
    "metadata": {"name": "p", "namespace": null, "labels": null, "annotations": null,
                 "deletionTimestamp": null, "ownerReferences": null},
    "spec": {"schedulerName": null, "nodeName": null, "affinity": null, "tolerations": null,
             "containers": [{"name": "c", "resources": {"requests": null, "limits": null},
                             "ports": null}],
             "overhead": null, "resources": null, "nodeSelector": null, "volumes": null,
             "resourceClaims": null, "schedulingGroup": null},
    "status": null})"));
  EXPECT_EQ(pod.spec.scheduler_name, "default-scheduler");
  EXPECT_FALSE(pod.spec.affinity.has_value());
  EXPECT_FALSE(pod.spec.resources.has_value());
  EXPECT_TRUE(pod.spec.resource_claims.empty());
  EXPECT_FALSE(pod.spec.scheduling_group.has_value());
  ASSERT_EQ(pod.spec.containers.size(), 1u);
  EXPECT_FALSE(pod.spec.containers[0].resources.has_cpu_request);
  EXPECT_EQ(pod.non_zero_milli_cpu, kDefaultMilliCPURequest);
}

TEST(DecodePodTest, TerminatingBoundPodWithPodLevelResources) {
  Pod pod = DecodePod(json::parse(R"({
    "metadata": {"name": "p", "namespace": "ns",
                 "deletionTimestamp": "2024-05-01T11:00:00Z",
                 "deletionGracePeriodSeconds": 30},
    "spec": {"nodeName": "node-1", "hostNetwork": true, "schedulerName": "",
             "resources": {"requests": {"cpu": "2", "memory": "4Gi"},
                           "limits": {"cpu": "4"}},
             "containers": [{"name": "a"}, {"name": "b",
                             "resources": {"requests": {"cpu": "250m"}}}]},
    "status": {"phase": "Running"}})"));
  EXPECT_TRUE(pod.IsTerminating());
  EXPECT_EQ(*pod.meta.deletion_timestamp, "2024-05-01T11:00:00Z");
  EXPECT_EQ(pod.spec.node_name, "node-1");
  EXPECT_TRUE(pod.spec.host_network);
  EXPECT_EQ(pod.spec.scheduler_name, "default-scheduler");
  ASSERT_TRUE(pod.spec.resources.has_value());
  EXPECT_TRUE(pod.spec.resources->has_cpu_request);
  EXPECT_TRUE(pod.spec.resources->has_memory_request);
  EXPECT_EQ(pod.spec.resources->limits.milli_cpu, 4000);
  EXPECT_EQ(pod.requests.milli_cpu, 2000);
  EXPECT_EQ(pod.requests.memory, 4 * kGi);
  EXPECT_EQ(pod.non_zero_milli_cpu, 2000);
  EXPECT_EQ(pod.non_zero_memory, 4 * kGi);
}

struct ErrorCase {
  const char* name;
  // Applied to a copy of kPodJson.
  json patch;
  const char* field;
  const char* problem;  // A fragment of the message after the field.
};

TEST(DecodePodTest, MalformedFieldsNameTheirPath) {
  const json base = json::parse(kPodJson);
  const std::vector<ErrorCase> cases = {
      {"bad quantity", json::parse(R"([{"op": "replace",
         "path": "/spec/containers/1/resources", "value": {"requests": {"cpu": "1x"}}}])"),
       "spec.containers[1].resources.requests.cpu", "invalid quantity \"1x\": unknown suffix"},
      {"quantity of wrong type", json::parse(R"([{"op": "replace",
         "path": "/spec/containers/1/resources", "value": {"requests": {"cpu": true}}}])"),
       "spec.containers[1].resources.requests.cpu", "expected quantity string, got boolean"},
      {"limits not an object", json::parse(R"([{"op": "replace",
         "path": "/spec/containers/0/resources/limits", "value": ["1"]}])"),
       "spec.containers[0].resources.limits", "expected object, got array"},
      {"init port", json::parse(R"([{"op": "add",
         "path": "/spec/initContainers/1/ports/0/hostPort", "value": "80"}])"),
       "spec.initContainers[1].ports[0].hostPort", "expected integer, got string"},
      {"containers not an array", json::parse(R"([{"op": "replace",
         "path": "/spec/containers", "value": {"name": "app"}}])"),
       "spec.containers", "expected array, got object"},
      {"container not an object", json::parse(R"([{"op": "replace",
         "path": "/spec/containers/1", "value": "log-shipper"}])"),
       "spec.containers[1]", "expected object, got string"},
      {"priority type", json::parse(R"([{"op": "replace", "path": "/spec/priority",
         "value": "high"}])"),
       "spec.priority", "expected integer, got string"},
      {"priority range", json::parse(R"([{"op": "replace", "path": "/spec/priority",
         "value": 3000000000}])"),
       "spec.priority", "out of int32 range"},
      {"priority float", json::parse(R"([{"op": "replace", "path": "/spec/priority",
         "value": 1.5}])"),
       "spec.priority", "expected integer, got number"},
      {"preemption policy", json::parse(R"([{"op": "replace", "path": "/spec/preemptionPolicy",
         "value": "Always"}])"),
       "spec.preemptionPolicy", "unknown value \"Always\""},
      {"host network", json::parse(R"([{"op": "replace", "path": "/spec/hostNetwork",
         "value": "true"}])"),
       "spec.hostNetwork", "expected boolean, got string"},
      {"label value", json::parse(R"([{"op": "replace", "path": "/metadata/labels/tier",
         "value": 7}])"),
       "metadata.labels.tier", "expected string, got number"},
      {"annotations", json::parse(R"([{"op": "replace", "path": "/metadata/annotations",
         "value": "x"}])"),
       "metadata.annotations", "expected object, got string"},
      {"owner controller", json::parse(R"([{"op": "replace",
         "path": "/metadata/ownerReferences/0/controller", "value": "yes"}])"),
       "metadata.ownerReferences[0].controller", "expected boolean"},
      {"generation", json::parse(R"([{"op": "replace", "path": "/metadata/generation",
         "value": "1"}])"),
       "metadata.generation", "expected integer"},
      {"toleration effect", json::parse(R"([{"op": "replace", "path": "/spec/tolerations/1/effect",
         "value": "NoRun"}])"),
       "spec.tolerations[1].effect", "unknown value \"NoRun\""},
      {"node affinity Gt value", json::parse(R"([{"op": "replace", "path":
         "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1/values",
         "value": ["three"]}])"),
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[1].values[0]",
       "is not an integer"},
      {"preferred weight", json::parse(R"([{"op": "replace", "path":
         "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/weight",
         "value": "20"}])"),
       "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
       "expected integer"},
      {"anti-affinity selector", json::parse(R"([{"op": "replace", "path":
         "/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/podAffinityTerm/labelSelector/matchExpressions/0/operator",
         "value": "Gt"}])"),
       "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]."
       "podAffinityTerm.labelSelector.matchExpressions[0].operator",
       "not supported"},
      {"pod affinity namespaces", json::parse(R"([{"op": "replace", "path":
         "/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/0/namespaces/1",
         "value": 5}])"),
       "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[1]",
       "expected string"},
      {"spread whenUnsatisfiable", json::parse(R"([{"op": "replace", "path":
         "/spec/topologySpreadConstraints/1/whenUnsatisfiable", "value": "Sometimes"}])"),
       "spec.topologySpreadConstraints[1].whenUnsatisfiable", "unknown value \"Sometimes\""},
      {"spread policy", json::parse(R"([{"op": "replace", "path":
         "/spec/topologySpreadConstraints/0/nodeTaintsPolicy", "value": "Maybe"}])"),
       "spec.topologySpreadConstraints[0].nodeTaintsPolicy", "unknown value"},
      {"spread maxSkew", json::parse(R"([{"op": "replace", "path":
         "/spec/topologySpreadConstraints/0/maxSkew", "value": null}, {"op": "replace", "path":
         "/spec/topologySpreadConstraints/0/minDomains", "value": "3"}])"),
       "spec.topologySpreadConstraints[0].minDomains", "expected integer"},
      {"scheduling gate", json::parse(R"([{"op": "replace", "path": "/spec/schedulingGates/0",
         "value": "example.com/quota"}])"),
       "spec.schedulingGates[0]", "expected object"},
      {"claim name", json::parse(R"([{"op": "replace", "path":
         "/spec/volumes/0/persistentVolumeClaim/claimName", "value": 5}])"),
       "spec.volumes[0].persistentVolumeClaim.claimName", "expected string"},
      {"resource claim", json::parse(R"([{"op": "replace", "path": "/spec/resourceClaims/0",
         "value": "gpu"}])"),
       "spec.resourceClaims[0]", "expected object, got string"},
      {"resource claim name", json::parse(R"([{"op": "replace", "path":
         "/spec/resourceClaims/1/name", "value": 3}])"),
       "spec.resourceClaims[1].name", "expected string, got number"},
      {"resource claims not an array", json::parse(R"([{"op": "replace", "path":
         "/spec/resourceClaims", "value": {"name": "gpu"}}])"),
       "spec.resourceClaims", "expected array, got object"},
      {"resource claim template name", json::parse(R"([{"op": "replace", "path":
         "/spec/resourceClaims/0/resourceClaimTemplateName", "value": ["checkout-gpu"]}])"),
       "spec.resourceClaims[0].resourceClaimTemplateName", "expected string, got array"},
      {"resource claim source name", json::parse(R"([{"op": "replace", "path":
         "/spec/resourceClaims/1/resourceClaimName", "value": 1}])"),
       "spec.resourceClaims[1].resourceClaimName", "expected string, got number"},
      {"resource claim status", json::parse(R"([{"op": "replace", "path":
         "/status/resourceClaimStatuses/0", "value": "gpu"}])"),
       "status.resourceClaimStatuses[0]", "expected object, got string"},
      {"resource claim status claim name", json::parse(R"([{"op": "replace", "path":
         "/status/resourceClaimStatuses/0/resourceClaimName", "value": false}])"),
       "status.resourceClaimStatuses[0].resourceClaimName", "expected string, got boolean"},
      {"extended resource claim status", json::parse(R"([{"op": "replace", "path":
         "/status/extendedResourceClaimStatus", "value": []}])"),
       "status.extendedResourceClaimStatus", "expected object, got array"},
      {"extended resource request mapping", json::parse(R"([{"op": "replace", "path":
         "/status/extendedResourceClaimStatus/requestMappings/0/requestName", "value": 0}])"),
       "status.extendedResourceClaimStatus.requestMappings[0].requestName",
       "expected string, got number"},
      {"extended resource claim name", json::parse(R"([{"op": "replace", "path":
         "/status/extendedResourceClaimStatus/resourceClaimName", "value": {}}])"),
       "status.extendedResourceClaimStatus.resourceClaimName", "expected string, got object"},
      {"scheduling group", json::parse(R"([{"op": "replace", "path": "/spec/schedulingGroup",
         "value": "checkout-workers"}])"),
       "spec.schedulingGroup", "expected object, got string"},
      {"scheduling group name", json::parse(R"([{"op": "replace", "path":
         "/spec/schedulingGroup/podGroupName", "value": 7}])"),
       "spec.schedulingGroup.podGroupName", "expected string, got number"},
      {"overhead", json::parse(R"([{"op": "replace", "path": "/spec/overhead/memory",
         "value": "lots"}])"),
       "spec.overhead.memory", "invalid quantity \"lots\""},
      {"pod-level resources", json::parse(R"([{"op": "add", "path": "/spec/resources",
         "value": {"requests": {"memory": "1Gix"}}}])"),
       "spec.resources.requests.memory", "invalid quantity \"1Gix\""},
      {"node selector", json::parse(R"([{"op": "replace", "path": "/spec/nodeSelector",
         "value": ["linux"]}])"),
       "spec.nodeSelector", "expected object"},
      {"status condition", json::parse(R"([{"op": "replace", "path":
         "/status/conditions/0/type", "value": 1}])"),
       "status.conditions[0].type", "expected string"},
      {"nominated node", json::parse(R"([{"op": "replace", "path": "/status/nominatedNodeName",
         "value": {}}])"),
       "status.nominatedNodeName", "expected string"},
      {"spec not an object", json::parse(R"([{"op": "replace", "path": "/spec", "value": []}])"),
       "spec", "expected object, got array"},
      {"missing name", json::parse(R"([{"op": "remove", "path": "/metadata/name"}])"),
       "metadata.name", "required"},
      {"empty name", json::parse(R"([{"op": "replace", "path": "/metadata/name", "value": ""}])"),
       "metadata.name", "required"},
      {"name type", json::parse(R"([{"op": "replace", "path": "/metadata/name", "value": 1}])"),
       "metadata.name", "expected string"},
      {"missing metadata", json::parse(R"([{"op": "remove", "path": "/metadata"}])"),
       "metadata.name", "required"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    json pod = base.patch(c.patch);
    try {
      DecodePod(pod);
      ADD_FAILURE() << "decoded";
    } catch (const DecodeError& e) {
      EXPECT_EQ(e.field(), c.field);
      std::string message = e.what();
      std::string prefix = std::string(c.field) + ": ";
      EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
      EXPECT_NE(message.find(c.problem), std::string::npos) << message;
    }
  }
}

TEST(DecodePodTest, RejectsNonObject) {
  try {
    DecodePod(json::array());
    ADD_FAILURE() << "decoded";
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("expected object, got array"), std::string::npos);
  }
  EXPECT_THROW(DecodeNode(json("node")), DecodeError);
}

TEST(DecodePodTest, MissingNameMessage) {
  try {
    DecodePod(json::parse(R"({"metadata": {"namespace": "ns"}, "spec": {}})"));
    ADD_FAILURE() << "decoded";
  } catch (const DecodeError& e) {
    EXPECT_STREQ(e.what(), "metadata.name: required");
  }
}

TEST(DecodePodTest, VolumeSourcesThePluginsRead) {
  const Pod pod = DecodePod(json::parse(R"json({
    "metadata": {"name": "disks", "namespace": "shop"},
    "spec": {"volumes": [
      {"name": "gce", "gcePersistentDisk": {"pdName": "pd-1", "fsType": "ext4", "readOnly": true}},
      {"name": "ebs", "awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-1"}},
      {"name": "iscsi", "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.x:t",
                                  "lun": 0, "readOnly": true}},
      {"name": "rbd", "rbd": {"monitors": ["10.0.0.2:6789", "10.0.0.3:6789"], "image": "img",
                              "pool": "kube", "user": "admin"}},
      {"name": "azure", "azureDisk": {"diskName": "d", "diskURI": "/subscriptions/s/disks/d"}},
      {"name": "cinder", "cinder": {"volumeID": "c-1"}},
      {"name": "px", "portworxVolume": {"volumeID": "px-1"}},
      {"name": "inline", "csi": {"driver": "inline.csi.example.com", "readOnly": true}},
      {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
    ]}
  })json"));
  const std::vector<Volume>& v = pod.spec.volumes;
  ASSERT_EQ(v.size(), 9u);
  EXPECT_EQ(v[0].source, "gcePersistentDisk");
  EXPECT_EQ(v[0].disk, "pd-1");
  EXPECT_TRUE(v[0].read_only);
  EXPECT_EQ(v[1].disk, "aws://us-east-1a/vol-1");
  EXPECT_FALSE(v[1].read_only);
  EXPECT_EQ(v[2].disk, "iqn.2001-04.com.x:t");
  EXPECT_TRUE(v[2].read_only);
  EXPECT_EQ(v[3].disk, "img");
  EXPECT_EQ(v[3].rbd_monitors, (std::vector<std::string>{"10.0.0.2:6789", "10.0.0.3:6789"}));
  EXPECT_EQ(v[3].rbd_pool, "kube");
  EXPECT_FALSE(v[3].read_only);
  EXPECT_EQ(v[4].disk, "/subscriptions/s/disks/d");
  EXPECT_EQ(v[5].disk, "c-1");
  EXPECT_EQ(v[6].disk, "px-1");
  EXPECT_EQ(v[7].source, "csi");
  EXPECT_EQ(v[7].csi_driver, "inline.csi.example.com");
  // The readOnly of an inline CSI volume is not one a plugin reads.
  EXPECT_FALSE(v[7].read_only);
  EXPECT_EQ(v[8].source, "ephemeral");
  EXPECT_EQ(v[8].disk, "");
}

TEST(DecodePodTest, MalformedVolumeSourcesNameTheirPath) {
  struct Case {
    const char* volume;
    const char* field;
  };
  const Case cases[] = {
      {R"({"name": "a", "gcePersistentDisk": {"pdName": 7}})",
       "spec.volumes[0].gcePersistentDisk.pdName"},
      {R"({"name": "a", "gcePersistentDisk": {"pdName": "p", "readOnly": "yes"}})",
       "spec.volumes[0].gcePersistentDisk.readOnly"},
      {R"({"name": "a", "awsElasticBlockStore": "vol-1"})", "spec.volumes[0].awsElasticBlockStore"},
      {R"({"name": "a", "rbd": {"monitors": "10.0.0.2", "image": "i"}})",
       "spec.volumes[0].rbd.monitors"},
      {R"({"name": "a", "rbd": {"monitors": ["m", 3], "image": "i"}})",
       "spec.volumes[0].rbd.monitors[1]"},
      {R"({"name": "a", "iscsi": {"iqn": ["x"]}})", "spec.volumes[0].iscsi.iqn"},
      {R"({"name": "a", "csi": {"driver": false}})", "spec.volumes[0].csi.driver"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.volume);
    json pod = {{"metadata", {{"name", "p"}}},
                {"spec", {{"volumes", json::array({json::parse(c.volume)})}}}};
    try {
      DecodePod(pod);
      ADD_FAILURE() << "decoded";
    } catch (const DecodeError& e) {
      EXPECT_EQ(e.field(), c.field);
    }
  }
}

}  // namespace
}  // namespace berth::api
