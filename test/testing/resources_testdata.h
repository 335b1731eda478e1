#ifndef BERTH_TEST_TESTING_RESOURCES_TESTDATA_H_
#define BERTH_TEST_TESTING_RESOURCES_TESTDATA_H_

// Objects of every resource the slim decoders read, as `kubectl get -o json` shows them; shared by
// the decoders' tests of realistic objects and of malformed fields.

namespace berth::api::testdata {

inline constexpr const char* kNamespaceJson = R"json({
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

inline constexpr const char* kPdbJson = R"json({
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

inline constexpr const char* kPvcJson = R"json({
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

inline constexpr const char* kPvJson = R"json({
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

inline constexpr const char* kLocalPvJson = R"json({
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
inline constexpr const char* kGcePdPvJson = R"json({
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

inline constexpr const char* kStorageClassJson = R"json({
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

inline constexpr const char* kCsiNodeJson = R"json({
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

inline constexpr const char* kCsiDriverJson = R"json({
  "apiVersion": "storage.k8s.io/v1",
  "kind": "CSIDriver",
  "metadata": {"name": "topolvm.io", "resourceVersion": "2201",
               "uid": "5d6e7f80-0000-4000-8000-000000000008"},
  "spec": {"attachRequired": false, "fsGroupPolicy": "File", "podInfoOnMount": true,
           "requiresRepublish": false, "seLinuxMount": false, "storageCapacity": true,
           "volumeLifecycleModes": ["Persistent", "Ephemeral"]}
})json";

inline constexpr const char* kCsiStorageCapacityJson = R"json({
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

inline constexpr const char* kVolumeAttachmentJson = R"json({
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

inline constexpr const char* kServiceJson = R"json({
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
inline constexpr const char* kKubernetesServiceJson = R"json({
  "apiVersion": "v1",
  "kind": "Service",
  "metadata": {"labels": {"component": "apiserver", "provider": "kubernetes"},
               "name": "kubernetes", "namespace": "default", "resourceVersion": "198"},
  "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP",
           "targetPort": 6443}], "sessionAffinity": "None", "type": "ClusterIP"},
  "status": {"loadBalancer": {}}
})json";

inline constexpr const char* kReplicaSetJson = R"json({
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

inline constexpr const char* kStatefulSetJson = R"json({
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

inline constexpr const char* kReplicationControllerJson = R"json({
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
inline constexpr const char* kPodGroupJson = R"json({
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

}  // namespace berth::api::testdata

#endif  // BERTH_TEST_TESTING_RESOURCES_TESTDATA_H_
