#include "pkg/plugins/nodevolumelimits/nodevolumelimits.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pkg/api/resources_codec.h"
#include "pkg/informer/factory.h"
#include "test/testing/fake_handle.h"
#include "test/testing/volumes.h"

namespace berth::plugins::nodevolumelimits {
namespace {

using framework::Code;
using framework::CycleState;
using framework::NodeInfo;
using framework::PodInfo;
using framework::Status;
using json = nlohmann::json;
using namespace volumetesting;  // NOLINT(google-build-using-namespace): test vocabulary.

constexpr const char* kDriver = "ebs.csi.aws.com";

json CSIVolumeJson(const std::string& name, const std::string& driver = kDriver) {
  json pv = VolumeJson(name, "", "1Gi");
  pv["spec"].erase("local");
  pv["spec"]["csi"] = {{"driver", driver}, {"volumeHandle", "handle-" + name}};
  return pv;
}

class NodeVolumeLimitsTest : public ::testing::Test {
 protected:
  NodeVolumeLimitsTest()
      : plugin_(std::dynamic_pointer_cast<NodeVolumeLimits>(New(nullptr, handle_))) {}

  informer::SharedInformerFactory& informers() { return handle_.informers(); }

  // A claim bound to a CSI volume of `driver`.
  void AddCSIClaim(const std::string& claim, const std::string& volume,
                   const std::string& driver = kDriver) {
    informers().For<api::PersistentVolume>().Upsert(Volume(CSIVolumeJson(volume, driver)));
    informers().For<api::PersistentVolumeClaim>().Upsert(Claim(BoundClaimJson(claim, volume)));
  }
  void SetLimit(const std::string& node, const json& drivers) {
    json csi_node = {{"metadata", {{"name", node}}}, {"spec", {{"drivers", drivers}}}};
    informers().For<api::CSINode>().Upsert(
        std::make_shared<const api::CSINode>(api::DecodeCSINode(csi_node)));
  }
  static json Driver(const std::string& name, int count) {
    return {{"name", name}, {"nodeID", "id"}, {"allocatable", {{"count", count}}}};
  }
  framework::NodeInfoPtr NodeWithPods(const std::string& name,
                                      const std::vector<api::PodPtr>& pods) {
    auto info = std::make_shared<NodeInfo>(Node(name));
    for (const auto& pod : pods) info->AddPod(std::make_shared<PodInfo>(pod));
    return info;
  }
  Status Run(const api::Pod& pod, const NodeInfo& node) {
    CycleState state;
    framework::PreFilterResult result;
    Status pre = plugin_->PreFilter(state, pod, {}, &result);
    if (!pre.IsSuccess()) return pre;
    return plugin_->Filter(state, pod, node);
  }

  testing::FakeHandle handle_;
  std::shared_ptr<NodeVolumeLimits> plugin_;
};

TEST_F(NodeVolumeLimitsTest, ACSINodeCountCapsTheDriversVolumesOnTheNode) {
  AddCSIClaim("used", "pv-used");
  AddCSIClaim("data", "pv-data");
  AddCSIClaim("other-driver", "pv-other", "other.csi.example.com");
  SetLimit("node-a", json::array({Driver(kDriver, 1)}));
  auto existing = PodWith("existing", json::array({ClaimVolume("used")}), "node-a");
  auto node = NodeWithPods("node-a", {existing});

  Status full = Run(*PodWith("p", json::array({ClaimVolume("data")})), *node);
  EXPECT_EQ(full.code(), Code::kUnschedulable);
  EXPECT_EQ(full.Message(), "node(s) exceed max volume count");
  // The volume already attached there counts once.
  EXPECT_TRUE(Run(*PodWith("p", json::array({ClaimVolume("used")})), *node).IsSuccess());
  // Another driver's volumes have no limit on this node.
  EXPECT_TRUE(Run(*PodWith("p", json::array({ClaimVolume("other-driver")})), *node).IsSuccess());
  // An empty node takes one, not two.
  auto empty = NodeWithPods("node-a", {});
  EXPECT_TRUE(Run(*PodWith("p", json::array({ClaimVolume("data")})), *empty).IsSuccess());
  EXPECT_FALSE(
      Run(*PodWith("p", json::array({ClaimVolume("data"), ClaimVolume("used", "second")})), *empty)
          .IsSuccess());
  // Nodes without a CSINode have no limits.
  EXPECT_TRUE(
      Run(*PodWith("p", json::array({ClaimVolume("data")})), *NodeWithPods("node-b", {existing}))
          .IsSuccess());
}

TEST_F(NodeVolumeLimitsTest, VolumeAttachmentsToTheNodeCount) {
  AddCSIClaim("data", "pv-data");
  AddCSIClaim("used", "pv-used");
  informers().For<api::PersistentVolume>().Upsert(Volume(CSIVolumeJson("pv-detaching")));
  SetLimit("node-a", json::array({Driver(kDriver, 2)}));
  const auto attach = [&](const std::string& name, const std::string& volume,
                          const std::string& node_name = "node-a") {
    json attachment = {{"metadata", {{"name", name}}},
                       {"spec",
                        {{"attacher", kDriver},
                         {"nodeName", node_name},
                         {"source", {{"persistentVolumeName", volume}}}}}};
    informers().For<api::VolumeAttachment>().Upsert(
        std::make_shared<const api::VolumeAttachment>(api::DecodeVolumeAttachment(attachment)));
  };
  // The attachment of a volume a pod there uses is that same volume; a volume still attached
  // after its pod left is another.
  attach("va-used", "pv-used");
  attach("va-detaching", "pv-detaching");
  auto existing = PodWith("existing", json::array({ClaimVolume("used")}), "node-a");
  auto node = NodeWithPods("node-a", {existing});
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  EXPECT_FALSE(Run(*pod, *node).IsSuccess());
  informers().For<api::VolumeAttachment>().Remove("va-detaching");
  EXPECT_TRUE(Run(*pod, *node).IsSuccess());
  // Attachments to other nodes do not count here.
  attach("va-elsewhere", "pv-detaching", "node-b");
  EXPECT_TRUE(Run(*pod, *node).IsSuccess());
}

TEST_F(NodeVolumeLimitsTest, ClaimsToProvisionCountForTheirProvisioner) {
  informers().For<api::StorageClass>().Upsert(
      Class(ClassJson("dynamic", "WaitForFirstConsumer", kDriver)));
  informers().For<api::PersistentVolumeClaim>().Upsert(Claim(ClaimJson("one", "dynamic")));
  informers().For<api::PersistentVolumeClaim>().Upsert(Claim(ClaimJson("two", "dynamic")));
  SetLimit("node-a", json::array({Driver(kDriver, 1)}));
  auto existing = PodWith("existing", json::array({ClaimVolume("one")}), "node-a");
  EXPECT_FALSE(
      Run(*PodWith("p", json::array({ClaimVolume("two")})), *NodeWithPods("node-a", {existing}))
          .IsSuccess());
  EXPECT_TRUE(Run(*PodWith("p", json::array({ClaimVolume("two")})), *NodeWithPods("node-a", {}))
                  .IsSuccess());
}

TEST_F(NodeVolumeLimitsTest, ADriverThatMustBeInstalledKeepsPodsOffNodesWithoutIt) {
  AddCSIClaim("data", "pv-data", "strict.csi.example.com");
  json driver = {{"metadata", {{"name", "strict.csi.example.com"}}},
                 {"spec", {{"preventPodSchedulingIfMissing", true}}}};
  informers().For<api::CSIDriver>().Upsert(
      std::make_shared<const api::CSIDriver>(api::DecodeCSIDriver(driver)));
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  Status missing = Run(*pod, *NodeWithPods("node-a", {}));
  EXPECT_EQ(missing.code(), Code::kUnschedulable);
  EXPECT_EQ(missing.Message(), "strict.csi.example.com CSI driver is not installed on the node");
  SetLimit("node-a", json::array({{{"name", "strict.csi.example.com"}, {"nodeID", "x"}}}));
  EXPECT_TRUE(Run(*pod, *NodeWithPods("node-a", {})).IsSuccess());
}

TEST_F(NodeVolumeLimitsTest, MigratedInTreeVolumesCountForTheirCSIDriver) {
  json ebs = VolumeJson("pv-ebs", "", "1Gi");
  ebs["spec"].erase("local");
  ebs["spec"]["awsElasticBlockStore"] = {{"volumeID", "aws://zone-a/vol-1"}};
  informers().For<api::PersistentVolume>().Upsert(Volume(ebs));
  informers().For<api::PersistentVolumeClaim>().Upsert(Claim(BoundClaimJson("ebs", "pv-ebs")));
  SetLimit("node-a", json::array({Driver(kDriver, 1)}));
  // The inline disk and the claimed one are both EBS volumes of the node's driver.
  auto inline_pod =
      PodWith("existing",
              json::array({{{"name", "disk"}, {"awsElasticBlockStore", {{"volumeID", "vol-2"}}}}}),
              "node-a");
  auto node = NodeWithPods("node-a", {inline_pod});
  EXPECT_FALSE(Run(*PodWith("p", json::array({ClaimVolume("ebs")})), *node).IsSuccess());
  // The same disk inline is the same volume (vol-1 either way).
  auto same = PodWith(
      "same", json::array({{{"name", "disk"}, {"awsElasticBlockStore", {{"volumeID", "vol-1"}}}}}),
      "node-a");
  EXPECT_TRUE(Run(*PodWith("p", json::array({ClaimVolume("ebs")})), *NodeWithPods("node-a", {same}))
                  .IsSuccess());
  // A malformed EBS id on the pod is an error, as translation fails.
  Status bad = Run(
      *PodWith("p", json::array({{{"name", "d"},
                                  {"awsElasticBlockStore", {{"volumeID", "aws://zone/disk-1"}}}}})),
      *node);
  EXPECT_EQ(bad.code(), Code::kError);
}

TEST_F(NodeVolumeLimitsTest, PodsWithoutCountedVolumesAndMissingClaims) {
  CycleState state;
  framework::PreFilterResult result;
  EXPECT_EQ(
      plugin_
          ->PreFilter(state,
                      *PodWith("p", json::array({{{"name", "t"}, {"emptyDir", json::object()}}})),
                      {}, &result)
          .code(),
      Code::kSkip);
  Status missing = Run(*PodWith("p", json::array({ClaimVolume("absent")})), *NodeWithPods("n", {}));
  EXPECT_EQ(missing.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(missing.Message(),
            "looking up PVC ns/absent: persistentvolumeclaim \"absent\" not found");
}

// What a listed node has attached is kept across cycles: a change of the node's pods (a new
// NodeInfo at its position) or of any storage object is seen in the next cycle.
TEST_F(NodeVolumeLimitsTest, KeptAttachmentsFollowNodeAndStorageChanges) {
  AddCSIClaim("used", "pv-used");
  AddCSIClaim("data", "pv-data");
  SetLimit("node-a", json::array({Driver(kDriver, 1)}));
  auto existing = PodWith("existing", json::array({ClaimVolume("used")}), "node-a");
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  // A cycle over a snapshot list, as the scheduler runs one.
  const auto cycle = [&](const std::vector<framework::NodeInfoPtr>& nodes) {
    for (size_t i = 0; i < nodes.size(); i++) nodes[i]->set_list_index(static_cast<uint32_t>(i));
    CycleState state;
    framework::PreFilterResult result;
    Status pre = plugin_->PreFilter(state, *pod, nodes, &result);
    if (!pre.IsSuccess()) return pre;
    return plugin_->Filter(state, *pod, *nodes[0]);
  };
  auto full = NodeWithPods("node-a", {existing});
  EXPECT_FALSE(cycle({full}).IsSuccess());
  EXPECT_FALSE(cycle({full}).IsSuccess());
  // A higher limit (a CSINode update) is seen although the NodeInfo is the same.
  SetLimit("node-a", json::array({Driver(kDriver, 2)}));
  EXPECT_TRUE(cycle({full}).IsSuccess());
  SetLimit("node-a", json::array({Driver(kDriver, 1)}));
  EXPECT_FALSE(cycle({full}).IsSuccess());
  // The existing pod gone: a new NodeInfo at the node's position.
  EXPECT_TRUE(cycle({NodeWithPods("node-a", {})}).IsSuccess());
  EXPECT_FALSE(cycle({full}).IsSuccess());
  // The existing pod's claim now bound to the pod's own volume: one volume, which fits.
  informers().For<api::PersistentVolumeClaim>().Upsert(Claim(BoundClaimJson("used", "pv-data")));
  EXPECT_TRUE(cycle({full}).IsSuccess());
}

TEST(NodeVolumeLimitsHints, LimitsPodsClaimsAndAttachments) {
  using framework::QueueingHint;
  const auto csi_node = [](int count) {
    json node = {
        {"metadata", {{"name", "n"}}},
        {"spec", {{"drivers", {{{"name", kDriver}, {"allocatable", {{"count", count}}}}}}}}};
    return std::make_shared<const api::CSINode>(api::DecodeCSINode(node));
  };
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  framework::EventObjects update;
  update.old_object = csi_node(2);
  update.new_object = csi_node(2);
  EXPECT_EQ(IsSchedulableAfterCSINodeUpdated(*pod, update), QueueingHint::kSkip);
  update.new_object = csi_node(3);
  EXPECT_EQ(IsSchedulableAfterCSINodeUpdated(*pod, update), QueueingHint::kQueue);

  framework::EventObjects deleted;
  deleted.old_pod = PodWith("gone", json::array({ClaimVolume("x")}), "n");
  EXPECT_EQ(IsSchedulableAfterAssignedPodDeleted(*pod, deleted), QueueingHint::kQueue);
  deleted.old_pod =
      PodWith("gone", json::array({{{"name", "t"}, {"emptyDir", json::object()}}}), "n");
  EXPECT_EQ(IsSchedulableAfterAssignedPodDeleted(*pod, deleted), QueueingHint::kSkip);

  framework::EventObjects added;
  added.new_object = Claim(ClaimJson("data", ""));
  EXPECT_EQ(IsSchedulableAfterClaimAdded(*pod, added), QueueingHint::kQueue);
  added.new_object = Claim(ClaimJson("else", ""));
  EXPECT_EQ(IsSchedulableAfterClaimAdded(*pod, added), QueueingHint::kSkip);

  json attachment = {{"metadata", {{"name", "va"}}},
                     {"spec", {{"attacher", kDriver}, {"nodeName", "n"}}}};
  framework::EventObjects detached;
  detached.old_object =
      std::make_shared<const api::VolumeAttachment>(api::DecodeVolumeAttachment(attachment));
  EXPECT_EQ(IsSchedulableAfterAttachmentDeleted(*pod, detached), QueueingHint::kQueue);
  auto inline_pod = PodWith(
      "q", json::array({{{"name", "d"}, {"awsElasticBlockStore", {{"volumeID", "vol-1"}}}}}));
  EXPECT_EQ(IsSchedulableAfterAttachmentDeleted(*inline_pod, detached), QueueingHint::kQueue);
  auto gce_pod =
      PodWith("q", json::array({{{"name", "d"}, {"gcePersistentDisk", {{"pdName", "pd"}}}}}));
  EXPECT_EQ(IsSchedulableAfterAttachmentDeleted(*gce_pod, detached), QueueingHint::kSkip);
}

}  // namespace
}  // namespace berth::plugins::nodevolumelimits
