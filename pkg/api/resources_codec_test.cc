#include "pkg/api/resources_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/resources.h"
#include "pkg/api/types.h"
#include "test/testing/resources_testdata.h"

namespace berth::api {
namespace {

using json = nlohmann::json;
using Entries = std::vector<StringMap::Entry>;
using namespace testdata;  // NOLINT(google-build-using-namespace)

constexpr int64_t kGi = int64_t{1024} * 1024 * 1024;

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

}  // namespace
}  // namespace berth::api
