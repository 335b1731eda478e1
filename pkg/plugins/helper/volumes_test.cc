#include "pkg/plugins/helper/volumes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace berth::plugins::helper {
namespace {

api::Requirement In(std::string key, std::vector<std::string> values) {
  api::Requirement r;
  r.key = std::move(key);
  r.op = api::SelectorOperator::kIn;
  r.values = std::move(values);
  return r;
}

api::NodeSelector Terms(std::vector<std::vector<api::Requirement>> terms) {
  api::NodeSelector selector;
  for (auto& expressions : terms) {
    api::NodeSelectorTerm term;
    term.match_expressions = std::move(expressions);
    selector.terms.push_back(std::move(term));
  }
  return selector;
}

api::Volume MakeVolume(std::string name, std::string source, std::string claim = "",
                       std::string disk = "") {
  api::Volume v;
  v.name = std::move(name);
  v.source = std::move(source);
  v.claim_name = std::move(claim);
  v.disk = std::move(disk);
  return v;
}

api::PersistentVolume InTreePV(const std::string& source, const std::string& id) {
  api::PersistentVolume pv;
  pv.meta.name = "pv";
  pv.spec.source = source;
  pv.spec.in_tree_volume_id = id;
  return pv;
}

TEST(VolumeClaims, PersistentAndEphemeralVolumesNameTheirClaims) {
  api::Pod pod;
  pod.meta.name = "web-0";
  api::Volume pvc = MakeVolume("data", "persistentVolumeClaim", "data-web-0");
  api::Volume ephemeral = MakeVolume("scratch", "ephemeral");
  api::Volume empty_dir = MakeVolume("tmp", "emptyDir");
  ASSERT_TRUE(ClaimOf(pod, pvc).has_value());
  EXPECT_EQ(ClaimOf(pod, pvc)->name, "data-web-0");
  EXPECT_FALSE(ClaimOf(pod, pvc)->ephemeral);
  ASSERT_TRUE(ClaimOf(pod, ephemeral).has_value());
  EXPECT_EQ(ClaimOf(pod, ephemeral)->name, "web-0-scratch");
  EXPECT_TRUE(ClaimOf(pod, ephemeral)->ephemeral);
  EXPECT_FALSE(ClaimOf(pod, empty_dir).has_value());
}

TEST(VolumeClaims, AnEphemeralClaimMustBeControlledByThePod) {
  api::Pod pod;
  pod.meta.name = "web-0";
  pod.meta.namespace_ = "shop";
  pod.meta.uid = "uid-pod";
  api::PersistentVolumeClaim claim;
  claim.meta.name = "web-0-scratch";
  claim.meta.namespace_ = "shop";
  const std::string refusal =
      "PVC shop/web-0-scratch was not created for pod shop/web-0 (pod is not owner)";
  EXPECT_EQ(EphemeralClaimOwnerError(pod, claim), refusal);
  claim.meta.owner_references.push_back({"v1", "Pod", "web-0", "uid-pod", /*controller=*/false});
  EXPECT_EQ(EphemeralClaimOwnerError(pod, claim), refusal);
  claim.meta.owner_references[0].controller = true;
  EXPECT_EQ(EphemeralClaimOwnerError(pod, claim), "");
  claim.meta.owner_references[0].uid = "uid-other";
  EXPECT_EQ(EphemeralClaimOwnerError(pod, claim), refusal);
}

TEST(VolumeClaims, FullyBoundNeedsTheVolumeAndTheControllersAnnotation) {
  api::PersistentVolumeClaim claim;
  EXPECT_FALSE(ClaimFullyBound(claim));
  claim.spec.volume_name = "pv-1";
  EXPECT_FALSE(ClaimFullyBound(claim));
  claim.meta.annotations.Set(std::string(api::kBindCompletedAnnotation), "yes");
  EXPECT_TRUE(ClaimFullyBound(claim));
  EXPECT_EQ(NotFoundMessage("persistentvolumeclaim", "data"),
            "persistentvolumeclaim \"data\" not found");
}

TEST(VolumeAffinity, LabelsDecideAndNodeNamesMatchNothing) {
  api::Labels labels(std::vector<api::StringMap::Entry>{{"kubernetes.io/hostname", "node-a"}});
  EXPECT_TRUE(VolumeAffinityMatches(std::nullopt, labels));
  EXPECT_TRUE(VolumeAffinityMatches(Terms({{In("kubernetes.io/hostname", {"node-a"})}}), labels));
  EXPECT_FALSE(VolumeAffinityMatches(Terms({{In("kubernetes.io/hostname", {"node-b"})}}), labels));
  api::NodeSelector by_name;
  by_name.terms.emplace_back().match_fields.push_back(In("metadata.name", {"node-a"}));
  EXPECT_FALSE(VolumeAffinityMatches(by_name, labels));
}

TEST(InTreeMigration, PluginsAndTheMigratedPluginsAnnotation) {
  const InTreePlugin* ebs = InTreePluginForSource("awsElasticBlockStore");
  ASSERT_NE(ebs, nullptr);
  EXPECT_EQ(ebs->csi_driver, "ebs.csi.aws.com");
  EXPECT_EQ(InTreePluginByName("kubernetes.io/aws-ebs"), ebs);
  EXPECT_FALSE(InTreePluginForSource("azureFile")->counts_for_limits);
  EXPECT_EQ(InTreePluginForSource("local"), nullptr);
  EXPECT_EQ(InTreePluginForSource("csi"), nullptr);

  api::CSINode node;
  EXPECT_FALSE(MigratedOnNode(*ebs, nullptr));
  EXPECT_FALSE(MigratedOnNode(*ebs, &node));
  node.meta.annotations.Set(std::string(api::kMigratedPluginsAnnotation),
                            "kubernetes.io/gce-pd,kubernetes.io/aws-ebs");
  EXPECT_TRUE(MigratedOnNode(*ebs, &node));
  EXPECT_FALSE(MigratedOnNode(*InTreePluginForSource("cinder"), &node));
}

TEST(InTreeMigration, EBSHandlesLoseTheirZonePrefix) {
  const InTreePlugin& ebs = *InTreePluginForSource("awsElasticBlockStore");
  EXPECT_EQ(TranslateInTreeVolume(InTreePV("awsElasticBlockStore", "vol-1"), ebs).volume_handle,
            "vol-1");
  TranslatedVolume zoned =
      TranslateInTreeVolume(InTreePV("awsElasticBlockStore", "aws://us-east-1a/vol-2"), ebs);
  EXPECT_EQ(zoned.volume_handle, "vol-2");
  EXPECT_EQ(zoned.driver, "ebs.csi.aws.com");
  EXPECT_EQ(zoned.error, "");
  TranslatedVolume bad =
      TranslateInTreeVolume(InTreePV("awsElasticBlockStore", "aws://us-east-1a/disk-2"), ebs);
  EXPECT_NE(bad.error.find("Invalid format for AWS volume (aws://us-east-1a/disk-2)"),
            std::string::npos);
  api::Volume inline_volume = MakeVolume("v", "awsElasticBlockStore", "", "aws://us-east-1a/vol-3");
  EXPECT_EQ(TranslateInlineVolume(inline_volume, ebs).volume_handle, "vol-3");
}

TEST(InTreeMigration, GCEHandlesComeFromTheZoneLabels) {
  const InTreePlugin& gce = *InTreePluginForSource("gcePersistentDisk");
  api::PersistentVolume pv = InTreePV("gcePersistentDisk", "pd-1");
  EXPECT_EQ(TranslateInTreeVolume(pv, gce).volume_handle,
            "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/pd-1");
  pv.meta.labels.Set(std::string(kLabelTopologyZone), "us-central1-a");
  EXPECT_EQ(TranslateInTreeVolume(pv, gce).volume_handle,
            "projects/UNSPECIFIED/zones/us-central1-a/disks/pd-1");
  pv.meta.labels.Set(std::string(kLabelTopologyZone), "us-central1-a__us-central1-b");
  EXPECT_EQ(TranslateInTreeVolume(pv, gce).volume_handle,
            "projects/UNSPECIFIED/regions/us-central1/disks/pd-1");
  pv.meta.labels.Set(std::string(kLabelTopologyZone), "us-central1-a__europe-west1-b");
  EXPECT_NE(TranslateInTreeVolume(pv, gce).error, "");
  api::Volume inline_volume = MakeVolume("v", "gcePersistentDisk", "", "pd-2");
  EXPECT_EQ(TranslateInlineVolume(inline_volume, gce).volume_handle,
            "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/pd-2");
}

TEST(InTreeMigration, TopologyMovesToTheDriversZoneKey) {
  const InTreePlugin& ebs = *InTreePluginForSource("awsElasticBlockStore");
  const std::string csi_key = "topology.ebs.csi.aws.com/zone";

  // The in-tree zone key of the node affinity is renamed.
  api::PersistentVolume pv = InTreePV("awsElasticBlockStore", "vol-1");
  pv.spec.node_affinity = Terms({{In(std::string(kLabelTopologyZone), {"a"})}});
  EXPECT_EQ(TranslateInTreeVolume(pv, ebs).node_affinity, Terms({{In(csi_key, {"a"})}}));

  // Beta keys: zone renamed to the driver's, region to the GA key.
  pv.spec.node_affinity =
      Terms({{In(std::string(kLabelBetaZone), {"a"}), In(std::string(kLabelBetaRegion), {"r"})}});
  EXPECT_EQ(TranslateInTreeVolume(pv, ebs).node_affinity,
            Terms({{In(csi_key, {"a"}), In(std::string(kLabelTopologyRegion), {"r"})}}));

  // No zone in the affinity: the zone label becomes a requirement of every term.
  pv.spec.node_affinity = Terms({{In("rack", {"1"})}, {In("rack", {"2"})}});
  pv.meta.labels.Set(std::string(kLabelTopologyZone), "b__ a");
  EXPECT_EQ(TranslateInTreeVolume(pv, ebs).node_affinity,
            Terms({{In("rack", {"1"}), In(csi_key, {"a", "b"})},
                   {In("rack", {"2"}), In(csi_key, {"a", "b"})}}));
  pv.spec.node_affinity.reset();
  EXPECT_EQ(TranslateInTreeVolume(pv, ebs).node_affinity, Terms({{In(csi_key, {"a", "b"})}}));

  // Portworx translation keeps the topology as it is.
  api::PersistentVolume px = InTreePV("portworxVolume", "px-1");
  px.meta.labels.Set(std::string(kLabelTopologyZone), "a");
  TranslatedVolume translated = TranslateInTreeVolume(px, *InTreePluginForSource("portworxVolume"));
  EXPECT_FALSE(translated.node_affinity.has_value());
  EXPECT_EQ(translated.volume_handle, "px-1");
}

TEST(InTreeMigration, VSphereTopologyMovesToItsDriversZoneAndRegionKeys) {
  const InTreePlugin& vsphere = *InTreePluginForSource("vsphereVolume");
  EXPECT_FALSE(vsphere.counts_for_limits);
  const std::string zone = "topology.csi.vmware.com/zone";
  const std::string region = "topology.csi.vmware.com/region";

  // Zone and region keys of the affinity are both renamed, GA or beta.
  api::PersistentVolume pv = InTreePV("vsphereVolume", "[ds1] volumes/v1.vmdk");
  pv.spec.node_affinity = Terms({{In(std::string(kLabelTopologyZone), {"z1"}),
                                  In(std::string(kLabelTopologyRegion), {"r"})}});
  TranslatedVolume translated = TranslateInTreeVolume(pv, vsphere);
  EXPECT_EQ(translated.driver, "csi.vsphere.vmware.com");
  EXPECT_EQ(translated.volume_handle, "[ds1] volumes/v1.vmdk");
  EXPECT_EQ(translated.node_affinity, Terms({{In(zone, {"z1"}), In(region, {"r"})}}));
  pv.spec.node_affinity =
      Terms({{In(std::string(kLabelBetaZone), {"z1"}), In(std::string(kLabelBetaRegion), {"r"})}});
  EXPECT_EQ(TranslateInTreeVolume(pv, vsphere).node_affinity,
            Terms({{In(zone, {"z1"}), In(region, {"r"})}}));

  // Without them in the affinity, the zone and region labels are added whole: a vSphere zone
  // label is not split at the multi-zone delimiter.
  pv.spec.node_affinity.reset();
  pv.meta.labels.Set(std::string(kLabelTopologyZone), "z1__z2");
  pv.meta.labels.Set(std::string(kLabelTopologyRegion), "r");
  EXPECT_EQ(TranslateInTreeVolume(pv, vsphere).node_affinity,
            Terms({{In(zone, {"z1__z2"}), In(region, {"r"})}}));
}

TEST(InTreeMigration, AzureFileNeedsASecretNamespaceAndKeepsItsTopology) {
  const InTreePlugin& azure_file = *InTreePluginForSource("azureFile");
  api::PersistentVolume pv = InTreePV("azureFile", "");
  pv.meta.labels.Set(std::string(kLabelTopologyZone), "z1");
  EXPECT_EQ(TranslateInTreeVolume(pv, azure_file).error,
            "could not find a secret namespace in PersistentVolumeSource or ClaimRef");
  pv.spec.claim_ref.emplace().namespace_ = "team-a";
  TranslatedVolume translated = TranslateInTreeVolume(pv, azure_file);
  EXPECT_EQ(translated.error, "");
  EXPECT_EQ(translated.driver, "file.csi.azure.com");
  EXPECT_FALSE(translated.node_affinity.has_value());
  // An empty secretNamespace is taken as given, not replaced by the claim's namespace.
  pv.spec.azure_file_secret_namespace = "";
  EXPECT_NE(TranslateInTreeVolume(pv, azure_file).error, "");
  pv.spec.azure_file_secret_namespace = "secrets";
  pv.spec.claim_ref.reset();
  EXPECT_EQ(TranslateInTreeVolume(pv, azure_file).error, "");
}

}  // namespace
}  // namespace berth::plugins::helper
