#include "pkg/api/resources_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/resources.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;
using Entries = std::vector<StringMap::Entry>;

constexpr int64_t kGi = int64_t{1024} * 1024 * 1024;

// ---- Objects as `kubectl get -o json` shows them ----

constexpr const char* kNamespaceJson = R"json({
  "apiVersion": "v1",
  "kind": "Namespace",
  "metadata": {
    "creationTimestamp": "2024-05-01T09:00:00Z",
    "labels": {"kubernetes.io/metadata.name": "shop", "team": "payments"},
    "managedFields": [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                       "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}],
    "name": "shop",
    "resourceVersion": "412",
    "uid": "2f3a4b5c-0000-4000-8000-000000000001"
  },
  "spec": {"finalizers": ["kubernetes"]},
  "status": {"phase": "Active"}
})json";

constexpr const char* kPdbJson = R"json({
  "apiVersion": "policy/v1",
  "kind": "PodDisruptionBudget",
  "metadata": {
    "creationTimestamp": "2024-05-01T10:00:00Z",
    "generation": 2,
    "name": "checkout",
    "namespace": "shop",
    "resourceVersion": "90211",
    "uid": "6a1f0c7e-0000-4000-8000-000000000002"
  },
  "spec": {
    "maxUnavailable": "25%",
    "selector": {"matchLabels": {"app.kubernetes.io/name": "checkout"}},
    "unhealthyPodEvictionPolicy": "AlwaysAllow"
  },
  "status": {
    "conditions": [{"lastTransitionTime": "2024-05-01T10:05:00Z", "message": "",
                    "observedGeneration": 2, "reason": "SufficientPods",
                    "status": "True", "type": "DisruptionAllowed"}],
    "currentHealthy": 4,
    "desiredHealthy": 3,
    "disruptedPods": {"checkout-7c9d6b5f8-zq2x9": "2024-05-01T10:06:00Z",
                      "checkout-7c9d6b5f8-ab1cd": "2024-05-01T10:06:01Z"},
    "disruptionsAllowed": 1,
    "expectedPods": 4,
    "observedGeneration": 2
  }
})json";

constexpr const char* kPvcJson = R"json({
  "apiVersion": "v1",
  "kind": "PersistentVolumeClaim",
  "metadata": {
    "annotations": {
      "pv.kubernetes.io/bind-completed": "yes",
      "pv.kubernetes.io/bound-by-controller": "yes",
      "volume.beta.kubernetes.io/storage-provisioner": "ebs.csi.aws.com",
      "volume.kubernetes.io/selected-node": "ip-10-0-1-23.ec2.internal",
      "volume.kubernetes.io/storage-provisioner": "ebs.csi.aws.com"
    },
    "creationTimestamp": "2024-05-01T10:00:00Z",
    "finalizers": ["kubernetes.io/pvc-protection"],
    "labels": {"app.kubernetes.io/name": "postgres"},
    "name": "data-postgres-0",
    "namespace": "shop",
    "resourceVersion": "884213",
    "uid": "8d6b1a2e-0000-4000-8000-000000000003"
  },
  "spec": {
    "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"],
    "resources": {"requests": {"storage": "20Gi"}},
    "storageClassName": "gp3",
    "volumeMode": "Filesystem",
    "volumeName": "pvc-8d6b1a2e-0000-4000-8000-000000000003"
  },
  "status": {
    "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"],
    "capacity": {"storage": "20Gi"},
    "phase": "Bound"
  }
})json";

constexpr const char* kPvJson = R"json({
  "apiVersion": "v1",
  "kind": "PersistentVolume",
  "metadata": {
    "annotations": {"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com",
                    "volume.kubernetes.io/provisioner-deletion-secret-name": "",
                    "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""},
    "creationTimestamp": "2024-05-01T10:00:02Z",
    "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer",
                   "kubernetes.io/pv-protection", "external-attacher/ebs-csi-aws-com"],
    "name": "pvc-8d6b1a2e-0000-4000-8000-000000000003",
    "resourceVersion": "884210",
    "uid": "c4e5f6a7-0000-4000-8000-000000000004"
  },
  "spec": {
    "accessModes": ["ReadWriteOnce"],
    "capacity": {"storage": "20Gi"},
    "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "name": "data-postgres-0", "namespace": "shop", "resourceVersion": "884190",
                 "uid": "8d6b1a2e-0000-4000-8000-000000000003"},
    "csi": {"driver": "ebs.csi.aws.com", "fsType": "ext4",
            "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity":
                                 "1714555000000-8081-ebs.csi.aws.com"},
            "volumeHandle": "vol-0a1b2c3d4e5f60718"},
    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["us-east-1a"]}]}]}},
    "persistentVolumeReclaimPolicy": "Delete",
    "storageClassName": "gp3",
    "volumeMode": "Filesystem"
  },
  "status": {"lastPhaseTransitionTime": "2024-05-01T10:00:03Z", "phase": "Bound"}
})json";

constexpr const char* kLocalPvJson = R"json({
  "apiVersion": "v1",
  "kind": "PersistentVolume",
  "metadata": {"name": "local-pv-worker-1-nvme0", "resourceVersion": "5011",
               "labels": {"storage.tier": "nvme"}},
  "spec": {
    "accessModes": ["ReadWriteOnce"],
    "capacity": {"storage": "1490Gi"},
    "local": {"path": "/mnt/disks/nvme0"},
    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["worker-1"]}]}]}},
    "persistentVolumeReclaimPolicy": "Retain",
    "storageClassName": "local-nvme",
    "volumeMode": "Block"
  },
  "status": {"phase": "Available"}
})json";

// A pre-CSI volume: its class is only in the beta annotation.
constexpr const char* kGcePdPvJson = R"json({
  "apiVersion": "v1",
  "kind": "PersistentVolume",
  "metadata": {
    "annotations": {"volume.beta.kubernetes.io/storage-class": "standard"},
    "labels": {"topology.kubernetes.io/region": "us-central1",
               "topology.kubernetes.io/zone": "us-central1-b"},
    "name": "legacy-pd",
    "resourceVersion": "77"
  },
  "spec": {
    "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
    "capacity": {"storage": "500G"},
    "gcePersistentDisk": {"fsType": "ext4", "pdName": "legacy-disk-1"},
    "persistentVolumeReclaimPolicy": "Retain"
  },
  "status": {"phase": "Released"}
})json";

constexpr const char* kStorageClassJson = R"json({
  "allowVolumeExpansion": true,
  "allowedTopologies": [{"matchLabelExpressions": [
      {"key": "topology.ebs.csi.aws.com/zone", "values": ["us-east-1b", "us-east-1a"]}]}],
  "apiVersion": "storage.k8s.io/v1",
  "kind": "StorageClass",
  "metadata": {
    "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
    "creationTimestamp": "2024-04-01T00:00:00Z",
    "name": "gp3",
    "resourceVersion": "1200",
    "uid": "0b1c2d3e-0000-4000-8000-000000000005"
  },
  "parameters": {"encrypted": "true", "type": "gp3"},
  "provisioner": "ebs.csi.aws.com",
  "reclaimPolicy": "Delete",
  "volumeBindingMode": "WaitForFirstConsumer"
})json";

constexpr const char* kCsiNodeJson = R"json({
  "apiVersion": "storage.k8s.io/v1",
  "kind": "CSINode",
  "metadata": {
    "annotations": {"storage.alpha.kubernetes.io/migrated-plugins":
                    "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/gce-pd"},
    "creationTimestamp": "2024-05-01T08:00:00Z",
    "name": "ip-10-0-1-23.ec2.internal",
    "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "ip-10-0-1-23.ec2.internal",
                         "uid": "9e8d7c6b-0000-4000-8000-000000000006"}],
    "resourceVersion": "3301",
    "uid": "1a2b3c4d-0000-4000-8000-000000000007"
  },
  "spec": {"drivers": [
    {"allocatable": {"count": 25}, "name": "ebs.csi.aws.com", "nodeID": "i-0123456789abcdef0",
     "topologyKeys": ["kubernetes.io/os", "topology.ebs.csi.aws.com/zone",
                      "topology.kubernetes.io/zone"]},
    {"name": "efs.csi.aws.com", "nodeID": "i-0123456789abcdef0", "topologyKeys": null}
  ]}
})json";

constexpr const char* kCsiDriverJson = R"json({
  "apiVersion": "storage.k8s.io/v1",
  "kind": "CSIDriver",
  "metadata": {"name": "topolvm.io", "resourceVersion": "2201",
               "uid": "5d6e7f80-0000-4000-8000-000000000008"},
  "spec": {"attachRequired": false, "fsGroupPolicy": "File", "podInfoOnMount": true,
           "requiresRepublish": false, "seLinuxMount": false, "storageCapacity": true,
           "volumeLifecycleModes": ["Persistent", "Ephemeral"]}
})json";

constexpr const char* kCsiStorageCapacityJson = R"json({
  "apiVersion": "storage.k8s.io/v1",
  "capacity": "512Gi",
  "kind": "CSIStorageCapacity",
  "maximumVolumeSize": "256Gi",
  "metadata": {
    "generateName": "csisc-",
    "labels": {"csi.storage.k8s.io/drivername": "topolvm.io"},
    "name": "csisc-7xk2p",
    "namespace": "topolvm-system",
    "resourceVersion": "6120"
  },
  "nodeTopology": {"matchLabels": {"topology.topolvm.io/node": "worker-1"}},
  "storageClassName": "topolvm-provisioner"
})json";

constexpr const char* kVolumeAttachmentJson = R"json({
  "apiVersion": "storage.k8s.io/v1",
  "kind": "VolumeAttachment",
  "metadata": {
    "annotations": {"csi.alpha.kubernetes.io/node-id": "i-0123456789abcdef0"},
    "finalizers": ["external-attacher/ebs-csi-aws-com"],
    "name": "csi-3f1c0d9a8b7e6f5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918070605",
    "resourceVersion": "884230"
  },
  "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "ip-10-0-1-23.ec2.internal",
           "source": {"persistentVolumeName": "pvc-8d6b1a2e-0000-4000-8000-000000000003"}},
  "status": {"attached": true, "attachmentMetadata": {"devicePath": "/dev/xvdaa"}}
})json";

constexpr const char* kServiceJson = R"json({
  "apiVersion": "v1",
  "kind": "Service",
  "metadata": {"name": "checkout", "namespace": "shop", "resourceVersion": "1402",
               "labels": {"app.kubernetes.io/name": "checkout"}},
  "spec": {
    "clusterIP": "10.96.12.34", "clusterIPs": ["10.96.12.34"], "internalTrafficPolicy": "Cluster",
    "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
    "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
    "selector": {"app.kubernetes.io/name": "checkout", "tier": "backend"},
    "sessionAffinity": "None", "type": "ClusterIP"
  },
  "status": {"loadBalancer": {}}
})json";

// The apiserver's own service has no selector (its endpoints are written directly).
constexpr const char* kKubernetesServiceJson = R"json({
  "apiVersion": "v1",
  "kind": "Service",
  "metadata": {"labels": {"component": "apiserver", "provider": "kubernetes"},
               "name": "kubernetes", "namespace": "default", "resourceVersion": "198"},
  "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP",
           "targetPort": 6443}], "sessionAffinity": "None", "type": "ClusterIP"},
  "status": {"loadBalancer": {}}
})json";

constexpr const char* kReplicaSetJson = R"json({
  "apiVersion": "apps/v1",
  "kind": "ReplicaSet",
  "metadata": {
    "annotations": {"deployment.kubernetes.io/desired-replicas": "3",
                    "deployment.kubernetes.io/max-replicas": "4",
                    "deployment.kubernetes.io/revision": "7"},
    "generation": 3,
    "labels": {"app.kubernetes.io/name": "checkout", "pod-template-hash": "7c9d6b5f8"},
    "name": "checkout-7c9d6b5f8",
    "namespace": "shop",
    "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": true, "controller": true,
                         "kind": "Deployment", "name": "checkout",
                         "uid": "0f1e2d3c-0000-4000-8000-000000000009"}],
    "resourceVersion": "90100"
  },
  "spec": {
    "replicas": 3,
    "selector": {"matchLabels": {"app.kubernetes.io/name": "checkout",
                                 "pod-template-hash": "7c9d6b5f8"}},
    "template": {"metadata": {"labels": {"app.kubernetes.io/name": "checkout",
                                         "pod-template-hash": "7c9d6b5f8"}},
                 "spec": {"containers": [{"name": "app", "image": "shop/checkout:1.4.2"}]}}
  },
  "status": {"availableReplicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 3,
             "readyReplicas": 3, "replicas": 3}
})json";

constexpr const char* kStatefulSetJson = R"json({
  "apiVersion": "apps/v1",
  "kind": "StatefulSet",
  "metadata": {"generation": 1, "name": "postgres", "namespace": "shop",
               "resourceVersion": "88120"},
  "spec": {
    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    "podManagementPolicy": "OrderedReady",
    "replicas": 2,
    "selector": {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In",
                                       "values": ["postgres"]}]},
    "serviceName": "postgres",
    "template": {"metadata": {"labels": {"app.kubernetes.io/name": "postgres"}},
                 "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}},
    "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                              "metadata": {"name": "data"},
                              "spec": {"accessModes": ["ReadWriteOnce"],
                                       "resources": {"requests": {"storage": "20Gi"}}}}]
  },
  "status": {"availableReplicas": 2, "replicas": 2}
})json";

constexpr const char* kReplicationControllerJson = R"json({
  "apiVersion": "v1",
  "kind": "ReplicationController",
  "metadata": {"generation": 1, "labels": {"app": "legacy"}, "name": "legacy",
               "namespace": "shop", "resourceVersion": "3140"},
  "spec": {"replicas": 4, "selector": {"app": "legacy"},
           "template": {"metadata": {"labels": {"app": "legacy"}},
                        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}},
  "status": {"replicas": 4}
})json";

// A gang-scheduling PodGroup (a custom resource).
constexpr const char* kPodGroupJson = R"json({
  "apiVersion": "scheduling.x-k8s.io/v1alpha1",
  "kind": "PodGroup",
  "metadata": {
    "creationTimestamp": "2024-05-02T12:00:00Z",
    "generation": 1,
    "labels": {"job": "train-resnet"},
    "managedFields": [{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "fieldsType": "FieldsV1",
                       "fieldsV1": {"f:spec": {"f:minMember": {}}}, "manager": "kubectl",
                       "operation": "Update", "time": "2024-05-02T12:00:00Z"}],
    "name": "train-resnet",
    "namespace": "ml",
    "resourceVersion": "50123",
    "uid": "7b8c9d0e-0000-4000-8000-00000000000a"
  },
  "spec": {"minMember": 4, "minResources": {"cpu": "16", "nvidia.com/gpu": "4"},
           "scheduleTimeoutSeconds": 60},
  "status": {"phase": "Scheduling", "running": 0, "scheduled": 2}
})json";

// ---- Decoding realistic objects ----

TEST(ResourcesCodecTest, Namespace) {
  const Namespace ns = DecodeNamespace(json::parse(kNamespaceJson));
  EXPECT_EQ(ns.meta.Key(), "shop");
  EXPECT_EQ(ns.meta.resource_version, "412");
  EXPECT_EQ(ns.meta.labels,
            Labels({{"kubernetes.io/metadata.name", "shop"}, {"team", "payments"}}));
}

TEST(ResourcesCodecTest, PodDisruptionBudget) {
  const PodDisruptionBudget pdb = DecodePodDisruptionBudget(json::parse(kPdbJson));
  EXPECT_EQ(pdb.meta.Key(), "shop/checkout");
  EXPECT_EQ(pdb.meta.resource_version, "90211");
  EXPECT_EQ(pdb.spec.min_available, std::nullopt);
  EXPECT_EQ(pdb.spec.max_unavailable, (IntOrPercent{25, true}));
  ASSERT_TRUE(pdb.spec.selector.has_value());
  EXPECT_TRUE(pdb.spec.selector->Matches(
      Labels({{"app.kubernetes.io/name", "checkout"}, {"pod-template-hash", "x"}})));
  EXPECT_FALSE(pdb.spec.selector->Matches(Labels(Entries{{"app.kubernetes.io/name", "cart"}})));

  const PodDisruptionBudgetStatus want_status{
      .disruptions_allowed = 1,
      .current_healthy = 4,
      .desired_healthy = 3,
      .expected_pods = 4,
      .disrupted_pods = {"checkout-7c9d6b5f8-ab1cd", "checkout-7c9d6b5f8-zq2x9"},
  };
  EXPECT_EQ(pdb.status, want_status);
  EXPECT_TRUE(pdb.status.IsDisrupted("checkout-7c9d6b5f8-zq2x9"));
  EXPECT_TRUE(pdb.status.IsDisrupted("checkout-7c9d6b5f8-ab1cd"));
  EXPECT_FALSE(pdb.status.IsDisrupted("checkout-7c9d6b5f8-aaaaa"));
}

TEST(ResourcesCodecTest, PodDisruptionBudgetMinAvailableAndNoSelector) {
  json object = json::parse(kPdbJson);
  object["spec"] = {{"minAvailable", 2}};
  object.erase("status");
  const PodDisruptionBudget pdb = DecodePodDisruptionBudget(object);
  EXPECT_EQ(pdb.spec.min_available, (IntOrPercent{2, false}));
  EXPECT_EQ(pdb.spec.max_unavailable, std::nullopt);
  EXPECT_EQ(pdb.spec.selector, std::nullopt);
  EXPECT_EQ(pdb.status, PodDisruptionBudgetStatus{});
}

TEST(ResourcesCodecTest, IntOrPercentForms) {
  EXPECT_EQ(DecodeIntOrPercent(json(3), "f"), (IntOrPercent{3, false}));
  EXPECT_EQ(DecodeIntOrPercent(json(0), "f"), (IntOrPercent{0, false}));
  EXPECT_EQ(DecodeIntOrPercent(json("50%"), "f"), (IntOrPercent{50, true}));
  EXPECT_EQ(DecodeIntOrPercent(json("0%"), "f"), (IntOrPercent{0, true}));
  EXPECT_EQ(DecodeIntOrPercent(json("100%"), "f"), (IntOrPercent{100, true}));

  for (const json& bad :
       {json("50"), json("%"), json("5.5%"), json("half"), json("50 %"), json(1.5), json(true),
        json::array(), json(int64_t{3000000000}), json("3000000000%")}) {
    try {
      DecodeIntOrPercent(bad, "spec.minAvailable");
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const DecodeError& e) {
      EXPECT_EQ(e.field(), "spec.minAvailable") << bad.dump();
    }
  }
}

TEST(ResourcesCodecTest, IntOrPercentScaled) {
  const IntOrPercent two{2, false};
  EXPECT_EQ(two.Scaled(10, true), 2);
  EXPECT_EQ(two.Scaled(0, false), 2);
  const IntOrPercent half{50, true};
  EXPECT_EQ(half.Scaled(5, true), 3);
  EXPECT_EQ(half.Scaled(5, false), 2);
  EXPECT_EQ(half.Scaled(4, true), 2);
  EXPECT_EQ(half.Scaled(4, false), 2);
  const IntOrPercent quarter{25, true};
  EXPECT_EQ(quarter.Scaled(1, true), 1);
  EXPECT_EQ(quarter.Scaled(1, false), 0);
  EXPECT_EQ((IntOrPercent{100, true}).Scaled(7, false), 7);
}

TEST(ResourcesCodecTest, PersistentVolumeClaimBound) {
  const PersistentVolumeClaim pvc = DecodePersistentVolumeClaim(json::parse(kPvcJson));
  EXPECT_EQ(pvc.meta.Key(), "shop/data-postgres-0");
  EXPECT_EQ(pvc.meta.resource_version, "884213");
  const PersistentVolumeClaimSpec want{
      .storage_class_name = "gp3",
      .volume_name = "pvc-8d6b1a2e-0000-4000-8000-000000000003",
      .access_modes = {PersistentVolumeAccessMode::kReadWriteOnce,
                       PersistentVolumeAccessMode::kReadWriteOncePod},
      .storage_request = 20 * kGi,
      .volume_mode = PersistentVolumeMode::kFilesystem,
      .selector = std::nullopt,
      .volume_attributes_class_name = "",
  };
  EXPECT_EQ(pvc.spec, want);
  EXPECT_EQ(pvc.status.phase, PersistentVolumeClaimPhase::kBound);
  EXPECT_EQ(pvc.StorageClassName(), "gp3");
  EXPECT_TRUE(pvc.HasAccessMode(PersistentVolumeAccessMode::kReadWriteOncePod));
  EXPECT_FALSE(pvc.HasAccessMode(PersistentVolumeAccessMode::kReadWriteMany));
  const std::string* selected = pvc.meta.annotations.Find(kSelectedNodeAnnotation);
  ASSERT_NE(selected, nullptr);
  EXPECT_EQ(*selected, "ip-10-0-1-23.ec2.internal");
  EXPECT_TRUE(pvc.meta.annotations.Contains(kBindCompletedAnnotation));
}

TEST(ResourcesCodecTest, PersistentVolumeClaimPendingWithSelector) {
  const PersistentVolumeClaim pvc = DecodePersistentVolumeClaim(json::parse(R"json({
    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
    "metadata": {"name": "scratch", "namespace": "ml", "resourceVersion": "10",
                 "deletionTimestamp": "2024-05-03T00:00:00Z",
                 "annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}},
    "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "slow",
             "resources": {"limits": {"storage": "1Ti"}},
             "selector": {"matchLabels": {"storage.tier": "nvme"}},
             "volumeAttributesClassName": "gold", "volumeMode": "Block"},
    "status": {"phase": "Pending"}})json"));
  EXPECT_EQ(pvc.spec.storage_request, std::nullopt);
  EXPECT_EQ(pvc.spec.volume_mode, PersistentVolumeMode::kBlock);
  EXPECT_EQ(pvc.spec.volume_attributes_class_name, "gold");
  EXPECT_EQ(pvc.spec.volume_name, "");
  ASSERT_TRUE(pvc.spec.selector.has_value());
  EXPECT_TRUE(pvc.spec.selector->Matches(Labels(Entries{{"storage.tier", "nvme"}})));
  EXPECT_EQ(pvc.status.phase, PersistentVolumeClaimPhase::kPending);
  EXPECT_TRUE(pvc.meta.deletion_timestamp.has_value());
  // The beta annotation wins over spec.storageClassName.
  EXPECT_EQ(pvc.StorageClassName(), "fast");
}

TEST(ResourcesCodecTest, PersistentVolumeCsi) {
  const PersistentVolume pv = DecodePersistentVolume(json::parse(kPvJson));
  EXPECT_EQ(pv.meta.Key(), "pvc-8d6b1a2e-0000-4000-8000-000000000003");
  EXPECT_EQ(pv.meta.resource_version, "884210");
  const PersistentVolumeSpec& s = pv.spec;
  EXPECT_EQ(s.capacity, 20 * kGi);
  EXPECT_EQ(s.access_modes,
            std::vector<PersistentVolumeAccessMode>{PersistentVolumeAccessMode::kReadWriteOnce});
  EXPECT_EQ(s.claim_ref,
            (ClaimReference{"shop", "data-postgres-0", "8d6b1a2e-0000-4000-8000-000000000003"}));
  EXPECT_EQ(s.storage_class_name, "gp3");
  ASSERT_TRUE(s.node_affinity.has_value());
  ASSERT_EQ(s.node_affinity->terms.size(), 1u);
  EXPECT_TRUE(
      s.node_affinity->Matches(Labels(Entries{{"topology.ebs.csi.aws.com/zone", "us-east-1a"}}),
                               "ip-10-0-1-23.ec2.internal"));
  EXPECT_FALSE(s.node_affinity->Matches(
      Labels(Entries{{"topology.ebs.csi.aws.com/zone", "us-east-1b"}}), "ip-10-0-2-7"));
  EXPECT_EQ(s.volume_mode, PersistentVolumeMode::kFilesystem);
  EXPECT_EQ(s.reclaim_policy, PersistentVolumeReclaimPolicy::kDelete);
  EXPECT_EQ(s.source, "csi");
  EXPECT_EQ(s.csi, (CSIPersistentVolumeSource{"ebs.csi.aws.com", "vol-0a1b2c3d4e5f60718"}));
  EXPECT_EQ(s.in_tree_volume_id, "");
  EXPECT_EQ(pv.status.phase, PersistentVolumePhase::kBound);
  EXPECT_EQ(pv.StorageClassName(), "gp3");
}

TEST(ResourcesCodecTest, PersistentVolumeLocal) {
  const PersistentVolume pv = DecodePersistentVolume(json::parse(kLocalPvJson));
  EXPECT_EQ(pv.spec.source, "local");
  EXPECT_EQ(pv.spec.csi, std::nullopt);
  EXPECT_EQ(pv.spec.claim_ref, std::nullopt);
  EXPECT_EQ(pv.spec.capacity, 1490 * kGi);
  EXPECT_EQ(pv.spec.volume_mode, PersistentVolumeMode::kBlock);
  EXPECT_EQ(pv.spec.reclaim_policy, PersistentVolumeReclaimPolicy::kRetain);
  EXPECT_EQ(pv.status.phase, PersistentVolumePhase::kAvailable);
  ASSERT_TRUE(pv.spec.node_affinity.has_value());
  EXPECT_TRUE(
      pv.spec.node_affinity->Matches(Labels(Entries{{"kubernetes.io/hostname", "worker-1"}}), "w"));
  EXPECT_FALSE(
      pv.spec.node_affinity->Matches(Labels(Entries{{"kubernetes.io/hostname", "worker-2"}}), "w"));
  EXPECT_EQ(pv.meta.labels, Labels(Entries{{"storage.tier", "nvme"}}));
}

TEST(ResourcesCodecTest, PersistentVolumeInTree) {
  const PersistentVolume pv = DecodePersistentVolume(json::parse(kGcePdPvJson));
  EXPECT_EQ(pv.spec.source, "gcePersistentDisk");
  EXPECT_EQ(pv.spec.in_tree_volume_id, "legacy-disk-1");
  EXPECT_EQ(pv.spec.csi, std::nullopt);
  EXPECT_EQ(pv.spec.capacity, int64_t{500} * 1000 * 1000 * 1000);
  EXPECT_EQ(pv.spec.node_affinity, std::nullopt);
  EXPECT_EQ(pv.spec.storage_class_name, "");
  EXPECT_EQ(pv.StorageClassName(), "standard");
  EXPECT_EQ(pv.status.phase, PersistentVolumePhase::kReleased);

  struct Case {
    const char* source;
    const char* body;
    const char* want_id;
  };
  const Case cases[] = {
      {"awsElasticBlockStore", R"({"volumeID": "vol-0abc", "fsType": "ext4"})", "vol-0abc"},
      {"azureDisk", R"({"diskName": "d1", "diskURI": "/subscriptions/s/disks/d1"})",
       "/subscriptions/s/disks/d1"},
      {"cinder", R"({"volumeID": "3c1f"})", "3c1f"},
      {"vsphereVolume", R"({"volumePath": "[ds1] volumes/v1.vmdk"})", "[ds1] volumes/v1.vmdk"},
      {"portworxVolume", R"({"volumeID": "px-9"})", "px-9"},
      {"nfs", R"({"server": "10.0.0.5", "path": "/exports"})", ""},
      {"hostPath", R"({"path": "/data", "type": ""})", ""},
  };
  for (const Case& c : cases) {
    json object = json::parse(kGcePdPvJson);
    object["spec"].erase("gcePersistentDisk");
    object["spec"][c.source] = json::parse(c.body);
    const PersistentVolume decoded = DecodePersistentVolume(object);
    EXPECT_EQ(decoded.spec.source, c.source);
    EXPECT_EQ(decoded.spec.in_tree_volume_id, c.want_id) << c.source;
  }
}

TEST(ResourcesCodecTest, StorageClass) {
  const StorageClass sc = DecodeStorageClass(json::parse(kStorageClassJson));
  EXPECT_EQ(sc.meta.Key(), "gp3");
  EXPECT_EQ(sc.meta.resource_version, "1200");
  EXPECT_EQ(sc.provisioner, "ebs.csi.aws.com");
  EXPECT_EQ(sc.volume_binding_mode, VolumeBindingMode::kWaitForFirstConsumer);
  TopologySelectorTerm want_term;
  want_term.match_label_expressions.push_back(
      TopologySelectorRequirement{"topology.ebs.csi.aws.com/zone", {"us-east-1a", "us-east-1b"}});
  const std::vector<TopologySelectorTerm> want_topologies{want_term};
  EXPECT_EQ(sc.allowed_topologies, want_topologies);
  EXPECT_TRUE(sc.AllowsTopology(Labels(Entries{{"topology.ebs.csi.aws.com/zone", "us-east-1b"}})));
  EXPECT_FALSE(sc.AllowsTopology(Labels(Entries{{"topology.ebs.csi.aws.com/zone", "us-east-1c"}})));
  EXPECT_FALSE(sc.AllowsTopology(Labels(Entries{{"topology.kubernetes.io/zone", "us-east-1a"}})));
}

TEST(ResourcesCodecTest, StorageClassDefaultsAndTopologyTerms) {
  const StorageClass local = DecodeStorageClass(json::parse(R"json({
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": "manual"}, "provisioner": "kubernetes.io/no-provisioner"})json"));
  EXPECT_EQ(local.volume_binding_mode, VolumeBindingMode::kImmediate);
  EXPECT_TRUE(local.allowed_topologies.empty());
  EXPECT_TRUE(local.AllowsTopology(Labels()));

  // Terms are ORed, requirements within a term ANDed; a term without requirements allows nothing.
  const StorageClass zoned = DecodeStorageClass(json::parse(R"json({
    "metadata": {"name": "zoned"}, "provisioner": "pd.csi.storage.gke.io",
    "allowedTopologies": [
      {"matchLabelExpressions": []},
      {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}, {"key": "rack", "values": ["r1"]}]},
      {"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}]})json"));
  EXPECT_TRUE(zoned.AllowsTopology(Labels({{"zone", "a"}, {"rack", "r1"}})));
  EXPECT_FALSE(zoned.AllowsTopology(Labels({{"zone", "a"}, {"rack", "r2"}})));
  EXPECT_TRUE(zoned.AllowsTopology(Labels(Entries{{"zone", "b"}})));
  EXPECT_FALSE(zoned.AllowsTopology(Labels(Entries{{"zone", "c"}})));
  EXPECT_FALSE(zoned.AllowsTopology(Labels()));
}

TEST(ResourcesCodecTest, CSINode) {
  const CSINode node = DecodeCSINode(json::parse(kCsiNodeJson));
  EXPECT_EQ(node.meta.Key(), "ip-10-0-1-23.ec2.internal");
  EXPECT_EQ(node.meta.resource_version, "3301");
  const std::vector<CSINodeDriver> want{
      {"ebs.csi.aws.com",
       "i-0123456789abcdef0",
       {"kubernetes.io/os", "topology.ebs.csi.aws.com/zone", "topology.kubernetes.io/zone"},
       25},
      {"efs.csi.aws.com", "i-0123456789abcdef0", {}, std::nullopt},
  };
  EXPECT_EQ(node.drivers, want);
  ASSERT_NE(node.FindDriver("ebs.csi.aws.com"), nullptr);
  EXPECT_EQ(node.FindDriver("ebs.csi.aws.com")->allocatable_count, 25);
  EXPECT_EQ(node.FindDriver("pd.csi.storage.gke.io"), nullptr);
  const std::string* migrated = node.meta.annotations.Find(kMigratedPluginsAnnotation);
  ASSERT_NE(migrated, nullptr);
  EXPECT_EQ(*migrated, "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/gce-pd");
}

TEST(ResourcesCodecTest, CSIDriver) {
  const CSIDriver driver = DecodeCSIDriver(json::parse(kCsiDriverJson));
  EXPECT_EQ(driver.meta.Key(), "topolvm.io");
  EXPECT_EQ(driver.meta.resource_version, "2201");
  EXPECT_FALSE(driver.attach_required);
  EXPECT_TRUE(driver.storage_capacity);
  EXPECT_FALSE(driver.prevent_pod_scheduling_if_missing);

  const CSIDriver opted_in = DecodeCSIDriver(json::parse(
      R"({"metadata": {"name": "d"}, "spec": {"preventPodSchedulingIfMissing": true}})"));
  EXPECT_TRUE(opted_in.attach_required);
  EXPECT_FALSE(opted_in.storage_capacity);
  EXPECT_TRUE(opted_in.prevent_pod_scheduling_if_missing);
}

TEST(ResourcesCodecTest, CSIStorageCapacity) {
  const CSIStorageCapacity capacity =
      DecodeCSIStorageCapacity(json::parse(kCsiStorageCapacityJson));
  EXPECT_EQ(capacity.meta.Key(), "topolvm-system/csisc-7xk2p");
  EXPECT_EQ(capacity.storage_class_name, "topolvm-provisioner");
  EXPECT_EQ(capacity.capacity, 512 * kGi);
  EXPECT_EQ(capacity.maximum_volume_size, 256 * kGi);
  ASSERT_TRUE(capacity.node_topology.has_value());
  EXPECT_TRUE(
      capacity.node_topology->Matches(Labels(Entries{{"topology.topolvm.io/node", "worker-1"}})));
  EXPECT_FALSE(
      capacity.node_topology->Matches(Labels(Entries{{"topology.topolvm.io/node", "worker-2"}})));

  const CSIStorageCapacity bare = DecodeCSIStorageCapacity(
      json::parse(R"({"metadata": {"name": "c", "namespace": "n"}, "storageClassName": "s"})"));
  EXPECT_EQ(bare.capacity, std::nullopt);
  EXPECT_EQ(bare.maximum_volume_size, std::nullopt);
  EXPECT_EQ(bare.node_topology, std::nullopt);
}

TEST(ResourcesCodecTest, VolumeAttachment) {
  const VolumeAttachment va = DecodeVolumeAttachment(json::parse(kVolumeAttachmentJson));
  EXPECT_EQ(va.meta.Key(), "csi-3f1c0d9a8b7e6f5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918070605");
  EXPECT_EQ(va.attacher, "ebs.csi.aws.com");
  EXPECT_EQ(va.node_name, "ip-10-0-1-23.ec2.internal");
  EXPECT_EQ(va.persistent_volume_name, "pvc-8d6b1a2e-0000-4000-8000-000000000003");
}

TEST(ResourcesCodecTest, Service) {
  const Service service = DecodeService(json::parse(kServiceJson));
  EXPECT_EQ(service.meta.Key(), "shop/checkout");
  EXPECT_EQ(service.meta.resource_version, "1402");
  EXPECT_EQ(service.selector,
            (StringMap({{"app.kubernetes.io/name", "checkout"}, {"tier", "backend"}})));

  const Service kubernetes = DecodeService(json::parse(kKubernetesServiceJson));
  EXPECT_EQ(kubernetes.meta.Key(), "default/kubernetes");
  EXPECT_EQ(kubernetes.selector, std::nullopt);
}

TEST(ResourcesCodecTest, ReplicaSet) {
  const ReplicaSet rs = DecodeReplicaSet(json::parse(kReplicaSetJson));
  EXPECT_EQ(rs.meta.Key(), "shop/checkout-7c9d6b5f8");
  EXPECT_EQ(rs.meta.resource_version, "90100");
  EXPECT_EQ(rs.replicas, 3);
  ASSERT_TRUE(rs.selector.has_value());
  EXPECT_TRUE(rs.selector->Matches(
      Labels({{"app.kubernetes.io/name", "checkout"}, {"pod-template-hash", "7c9d6b5f8"}})));
  EXPECT_FALSE(rs.selector->Matches(Labels(Entries{{"app.kubernetes.io/name", "checkout"}})));
  ASSERT_EQ(rs.meta.owner_references.size(), 1u);
  EXPECT_EQ(rs.meta.owner_references[0].kind, "Deployment");
}

TEST(ResourcesCodecTest, StatefulSet) {
  const StatefulSet ss = DecodeStatefulSet(json::parse(kStatefulSetJson));
  EXPECT_EQ(ss.meta.Key(), "shop/postgres");
  EXPECT_EQ(ss.replicas, 2);
  ASSERT_TRUE(ss.selector.has_value());
  EXPECT_TRUE(ss.selector->Matches(Labels(Entries{{"app.kubernetes.io/name", "postgres"}})));
  EXPECT_FALSE(ss.selector->Matches(Labels(Entries{{"app.kubernetes.io/name", "redis"}})));
}

TEST(ResourcesCodecTest, ReplicationController) {
  const ReplicationController rc =
      DecodeReplicationController(json::parse(kReplicationControllerJson));
  EXPECT_EQ(rc.meta.Key(), "shop/legacy");
  EXPECT_EQ(rc.replicas, 4);
  EXPECT_EQ(rc.selector, StringMap(Entries{{"app", "legacy"}}));
}

TEST(ResourcesCodecTest, ControllersDefaultToOneReplica) {
  const json bare = json::parse(R"({"metadata": {"name": "x", "namespace": "n"}, "spec": {}})");
  EXPECT_EQ(DecodeReplicaSet(bare).replicas, 1);
  EXPECT_EQ(DecodeReplicaSet(bare).selector, std::nullopt);
  EXPECT_EQ(DecodeStatefulSet(bare).replicas, 1);
  EXPECT_EQ(DecodeReplicationController(bare).replicas, 1);
  EXPECT_EQ(DecodeReplicationController(bare).selector, std::nullopt);
  json zero = bare;
  zero["spec"]["replicas"] = 0;
  EXPECT_EQ(DecodeReplicaSet(zero).replicas, 0);
}

TEST(ResourcesCodecTest, UnstructuredKeepsSpecAndStatus) {
  const json object = json::parse(kPodGroupJson);
  const Unstructured group = DecodeUnstructured(object);
  EXPECT_EQ(group.meta.Key(), "ml/train-resnet");
  EXPECT_EQ(group.meta.resource_version, "50123");
  EXPECT_EQ(group.meta.uid, "7b8c9d0e-0000-4000-8000-00000000000a");
  EXPECT_EQ(group.meta.labels, Labels(Entries{{"job", "train-resnet"}}));
  EXPECT_EQ(group.api_version, "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ(group.kind, "PodGroup");
  EXPECT_EQ(group.object["spec"], object["spec"]);
  EXPECT_EQ(group.object["spec"]["minMember"], 4);
  EXPECT_EQ(group.object["spec"]["minResources"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(group.object["status"], object["status"]);
  EXPECT_EQ(group.object["status"]["phase"], "Scheduling");
  EXPECT_EQ(group.object["metadata"]["name"], "train-resnet");
  EXPECT_FALSE(group.object["metadata"].contains("managedFields"));

  json without_managed = object;
  without_managed["metadata"].erase("managedFields");
  EXPECT_EQ(group.object, without_managed);
}

// ---- Malformed fields are reported with their path ----

struct MalformedCase {
  const char* kind;
  std::function<void(const json&)> decode;
  const char* base;
  const char* pointer;  // JSON pointer of the member to replace.
  json value;           // Its replacement; a discarded value removes the member.
  const char* want_field;
};

void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.kind << " " << c.pointer; }

class MalformedFieldTest : public testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedFieldTest, ThrowsDecodeErrorNamingTheField) {
  const MalformedCase& c = GetParam();
  const json base = json::parse(c.base);
  // The unmodified object decodes, so the error comes from the one field changed.
  ASSERT_NO_THROW(c.decode(base));

  json object = base;
  const json::json_pointer pointer(c.pointer);
  if (c.value.is_discarded()) {
    object[pointer.parent_pointer()].erase(pointer.back());
  } else {
    object[pointer] = c.value;
  }
  try {
    c.decode(object);
    ADD_FAILURE() << c.kind << ": no DecodeError for " << c.pointer << " = " << c.value.dump();
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.field(), c.want_field) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.want_field), std::string::npos) << e.what();
  }
}

void DecodeNamespaceVoid(const json& j) { DecodeNamespace(j); }
void DecodePdbVoid(const json& j) { DecodePodDisruptionBudget(j); }
void DecodePvcVoid(const json& j) { DecodePersistentVolumeClaim(j); }
void DecodePvVoid(const json& j) { DecodePersistentVolume(j); }
void DecodeScVoid(const json& j) { DecodeStorageClass(j); }
void DecodeCsiNodeVoid(const json& j) { DecodeCSINode(j); }
void DecodeCsiDriverVoid(const json& j) { DecodeCSIDriver(j); }
void DecodeCapacityVoid(const json& j) { DecodeCSIStorageCapacity(j); }
void DecodeAttachmentVoid(const json& j) { DecodeVolumeAttachment(j); }
void DecodeServiceVoid(const json& j) { DecodeService(j); }
void DecodeRsVoid(const json& j) { DecodeReplicaSet(j); }
void DecodeSsVoid(const json& j) { DecodeStatefulSet(j); }
void DecodeRcVoid(const json& j) { DecodeReplicationController(j); }
void DecodeUnstructuredVoid(const json& j) { DecodeUnstructured(j); }

const json kRemove = json(json::value_t::discarded);

const MalformedCase kMalformedCases[] = {
    {"Namespace", DecodeNamespaceVoid, kNamespaceJson, "/metadata/labels/team", 5,
     "metadata.labels.team"},
    {"Namespace", DecodeNamespaceVoid, kNamespaceJson, "/metadata/name", kRemove, "metadata.name"},
    {"Namespace", DecodeNamespaceVoid, kNamespaceJson, "/metadata", "shop", "metadata"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/spec/maxUnavailable", "a quarter",
     "spec.maxUnavailable"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/spec/minAvailable", 1.5,
     "spec.minAvailable"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/spec/selector/matchLabels",
     json::array({"checkout"}), "spec.selector.matchLabels"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/spec/selector/matchExpressions",
     json::parse(R"([{"key": "app", "operator": "Near", "values": ["a"]}])"),
     "spec.selector.matchExpressions[0].operator"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/status/disruptionsAllowed", "1",
     "status.disruptionsAllowed"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/status/expectedPods", int64_t{1} << 40,
     "status.expectedPods"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/status/disruptedPods",
     json::array({"checkout-7c9d6b5f8-zq2x9"}), "status.disruptedPods"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/resources/requests/storage", "20Gx",
     "spec.resources.requests.storage"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/resources/requests", "20Gi",
     "spec.resources.requests"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/accessModes/1", "ReadWriteSometimes",
     "spec.accessModes[1]"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/accessModes", "ReadWriteOnce",
     "spec.accessModes"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/volumeMode", "Raw",
     "spec.volumeMode"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/volumeName", 3, "spec.volumeName"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/selector", "app=db", "spec.selector"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/status/phase", "Gone", "status.phase"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/capacity/storage", "lots",
     "spec.capacity.storage"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/claimRef/uid", 7, "spec.claimRef.uid"},
    {"PersistentVolume", DecodePvVoid, kPvJson,
     "/spec/nodeAffinity/required/nodeSelectorTerms/0/matchExpressions/0/operator", "Like",
     "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/nodeAffinity/required/nodeSelectorTerms",
     json::object(), "spec.nodeAffinity.required.nodeSelectorTerms"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/persistentVolumeReclaimPolicy", "Keep",
     "spec.persistentVolumeReclaimPolicy"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/accessModes/0", 1, "spec.accessModes[0]"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/csi", "ebs.csi.aws.com", "spec.csi"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/csi/volumeHandle", json::object(),
     "spec.csi.volumeHandle"},
    // Object members are visited in name order, so the second source seen is "nfs".
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/nfs",
     json::parse(R"({"server": "10.0.0.5", "path": "/exports"})"), "spec.nfs"},
    {"PersistentVolume", DecodePvVoid, kGcePdPvJson, "/spec/gcePersistentDisk/pdName", false,
     "spec.gcePersistentDisk.pdName"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/status/phase", "Lost", "status.phase"},
    {"StorageClass", DecodeScVoid, kStorageClassJson, "/volumeBindingMode", "Later",
     "volumeBindingMode"},
    {"StorageClass", DecodeScVoid, kStorageClassJson, "/provisioner", json::array(), "provisioner"},
    {"StorageClass", DecodeScVoid, kStorageClassJson,
     "/allowedTopologies/0/matchLabelExpressions/0/key", kRemove,
     "allowedTopologies[0].matchLabelExpressions[0].key"},
    {"StorageClass", DecodeScVoid, kStorageClassJson,
     "/allowedTopologies/0/matchLabelExpressions/0/values/1", 1,
     "allowedTopologies[0].matchLabelExpressions[0].values[1]"},
    {"CSINode", DecodeCsiNodeVoid, kCsiNodeJson, "/spec/drivers/0/allocatable/count", "25",
     "spec.drivers[0].allocatable.count"},
    {"CSINode", DecodeCsiNodeVoid, kCsiNodeJson, "/spec/drivers/1/name", kRemove,
     "spec.drivers[1].name"},
    {"CSINode", DecodeCsiNodeVoid, kCsiNodeJson, "/spec/drivers/0/topologyKeys", "zone",
     "spec.drivers[0].topologyKeys"},
    {"CSIDriver", DecodeCsiDriverVoid, kCsiDriverJson, "/spec/storageCapacity", "true",
     "spec.storageCapacity"},
    {"CSIDriver", DecodeCsiDriverVoid, kCsiDriverJson, "/spec/attachRequired", 0,
     "spec.attachRequired"},
    {"CSIStorageCapacity", DecodeCapacityVoid, kCsiStorageCapacityJson, "/capacity", "plenty",
     "capacity"},
    {"CSIStorageCapacity", DecodeCapacityVoid, kCsiStorageCapacityJson, "/maximumVolumeSize", true,
     "maximumVolumeSize"},
    {"CSIStorageCapacity", DecodeCapacityVoid, kCsiStorageCapacityJson,
     "/nodeTopology/matchLabels/topology.topolvm.io~1node", 1,
     "nodeTopology.matchLabels.topology.topolvm.io/node"},
    {"VolumeAttachment", DecodeAttachmentVoid, kVolumeAttachmentJson,
     "/spec/source/persistentVolumeName", json::object(), "spec.source.persistentVolumeName"},
    {"VolumeAttachment", DecodeAttachmentVoid, kVolumeAttachmentJson, "/spec/nodeName", 1,
     "spec.nodeName"},
    {"Service", DecodeServiceVoid, kServiceJson, "/spec/selector/tier", json::array(),
     "spec.selector.tier"},
    {"Service", DecodeServiceVoid, kServiceJson, "/spec", "ClusterIP", "spec"},
    {"ReplicaSet", DecodeRsVoid, kReplicaSetJson, "/spec/selector/matchLabels", "app",
     "spec.selector.matchLabels"},
    {"ReplicaSet", DecodeRsVoid, kReplicaSetJson, "/spec/replicas", 2.5, "spec.replicas"},
    {"StatefulSet", DecodeSsVoid, kStatefulSetJson, "/spec/replicas", int64_t{5000000000},
     "spec.replicas"},
    {"StatefulSet", DecodeSsVoid, kStatefulSetJson, "/spec/selector/matchExpressions/0/values",
     json::array(), "spec.selector.matchExpressions[0].values"},
    {"ReplicationController", DecodeRcVoid, kReplicationControllerJson, "/spec/selector",
     json::array({"app"}), "spec.selector"},
    {"ReplicationController", DecodeRcVoid, kReplicationControllerJson, "/spec/replicas", "4",
     "spec.replicas"},
    {"Unstructured", DecodeUnstructuredVoid, kPodGroupJson, "/kind", 3, "kind"},
    {"Unstructured", DecodeUnstructuredVoid, kPodGroupJson, "/apiVersion", json::object(),
     "apiVersion"},
    {"Unstructured", DecodeUnstructuredVoid, kPodGroupJson, "/metadata/name", kRemove,
     "metadata.name"},
    {"Unstructured", DecodeUnstructuredVoid, kPodGroupJson, "/metadata/annotations", "a=b",
     "metadata.annotations"},
};

INSTANTIATE_TEST_SUITE_P(AllKinds, MalformedFieldTest, testing::ValuesIn(kMalformedCases));

TEST(ResourcesCodecTest, EveryDecoderRejectsANonObject) {
  const std::function<void(const json&)> decoders[] = {
      DecodeNamespaceVoid,  DecodePdbVoid,          DecodePvcVoid,       DecodePvVoid,
      DecodeScVoid,         DecodeCsiNodeVoid,      DecodeCsiDriverVoid, DecodeCapacityVoid,
      DecodeAttachmentVoid, DecodeServiceVoid,      DecodeRsVoid,        DecodeSsVoid,
      DecodeRcVoid,         DecodeUnstructuredVoid,
  };
  for (const auto& decode : decoders) {
    for (const json& bad : {json::array(), json("pod"), json(nullptr)}) {
      try {
        decode(bad);
        ADD_FAILURE() << "accepted " << bad.dump();
      } catch (const DecodeError& e) {
        EXPECT_EQ(e.field(), "(object)") << bad.dump();
      }
    }
  }
}

}  // namespace
}  // namespace berth::api
