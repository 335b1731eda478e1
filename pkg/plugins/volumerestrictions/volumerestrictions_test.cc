#include "pkg/plugins/volumerestrictions/volumerestrictions.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pkg/informer/factory.h"
#include "test/testing/fake_handle.h"
#include "test/testing/volumes.h"

namespace berth::plugins::volumerestrictions {
namespace {

using framework::Code;
using framework::CycleState;
using framework::NodeInfo;
using framework::PodInfo;
using framework::Status;
using json = nlohmann::json;
using namespace volumetesting;  // NOLINT(google-build-using-namespace): test vocabulary.

json Disk(const std::string& source, const json& members) {
  return {{"name", "disk"}, {source, members}};
}

framework::NodeInfoPtr NodeWithPods(const std::string& name, const std::vector<api::PodPtr>& pods) {
  auto info = std::make_shared<NodeInfo>(Node(name));
  for (const auto& pod : pods) info->AddPod(std::make_shared<PodInfo>(pod));
  return info;
}

class VolumeRestrictionsTest : public ::testing::Test {
 protected:
  std::shared_ptr<VolumeRestrictions> Plugin() {
    return std::dynamic_pointer_cast<VolumeRestrictions>(New(nullptr, handle_));
  }
  // PreFilter then Filter on `node`.
  Status Run(VolumeRestrictions& plugin, const api::Pod& pod, const NodeInfo& node) {
    CycleState state;
    framework::PreFilterResult result;
    Status pre = plugin.PreFilter(state, pod, {}, &result);
    if (!pre.IsSuccess()) return pre;
    return plugin.Filter(state, pod, node);
  }

  testing::FakeHandle handle_;
};

TEST_F(VolumeRestrictionsTest, InTreeDisksInUseOnTheNode) {
  auto plugin = Plugin();
  struct Case {
    std::string name;
    json existing;
    json wanted;
    bool conflict;
  };
  const std::vector<Case> cases = {
      {"same GCE disk read-write", Disk("gcePersistentDisk", {{"pdName", "pd"}}),
       Disk("gcePersistentDisk", {{"pdName", "pd"}}), true},
      {"same GCE disk read-only twice",
       Disk("gcePersistentDisk", {{"pdName", "pd"}, {"readOnly", true}}),
       Disk("gcePersistentDisk", {{"pdName", "pd"}, {"readOnly", true}}), false},
      {"another GCE disk", Disk("gcePersistentDisk", {{"pdName", "pd"}}),
       Disk("gcePersistentDisk", {{"pdName", "other"}}), false},
      {"same EBS volume even read-only",
       Disk("awsElasticBlockStore", {{"volumeID", "vol-1"}, {"readOnly", true}}),
       Disk("awsElasticBlockStore", {{"volumeID", "vol-1"}, {"readOnly", true}}), true},
      {"same iSCSI target", Disk("iscsi", {{"iqn", "iqn.x"}, {"targetPortal", "a"}}),
       Disk("iscsi", {{"iqn", "iqn.x"}, {"targetPortal", "b"}}), true},
      {"same iSCSI target read-only twice", Disk("iscsi", {{"iqn", "iqn.x"}, {"readOnly", true}}),
       Disk("iscsi", {{"iqn", "iqn.x"}, {"readOnly", true}}), false},
      {"same RBD image through a shared monitor",
       Disk("rbd", {{"monitors", {"m1", "m2"}}, {"pool", "p"}, {"image", "i"}}),
       Disk("rbd", {{"monitors", {"m2", "m3"}}, {"pool", "p"}, {"image", "i"}}), true},
      {"same RBD image, no shared monitor",
       Disk("rbd", {{"monitors", {"m1"}}, {"pool", "p"}, {"image", "i"}}),
       Disk("rbd", {{"monitors", {"m2"}}, {"pool", "p"}, {"image", "i"}}), false},
      {"RBD images in other pools",
       Disk("rbd", {{"monitors", {"m1"}}, {"pool", "p"}, {"image", "i"}}),
       Disk("rbd", {{"monitors", {"m1"}}, {"pool", "q"}, {"image", "i"}}), false},
      {"different sources with one name", Disk("gcePersistentDisk", {{"pdName", "x"}}),
       Disk("awsElasticBlockStore", {{"volumeID", "x"}}), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto existing = PodWith("existing", json::array({c.existing}), "node-a");
    auto node = NodeWithPods("node-a", {existing});
    Status s = Run(*plugin, *PodWith("p", json::array({c.wanted})), *node);
    if (c.conflict) {
      EXPECT_EQ(s.code(), Code::kUnschedulable);
      EXPECT_EQ(s.Message(), "node(s) had no available disk");
    } else {
      EXPECT_TRUE(s.IsSuccess()) << s.Message();
    }
    // An empty node never conflicts.
    EXPECT_TRUE(
        Run(*plugin, *PodWith("p", json::array({c.wanted})), *NodeWithPods("b", {})).IsSuccess());
  }
}

TEST_F(VolumeRestrictionsTest, AReadWriteOncePodClaimInUseKeepsOthersOffEveryNode) {
  json claim = ClaimJson("exclusive", "");
  claim["spec"]["accessModes"] = {"ReadWriteOncePod"};
  handle_.informers().For<api::PersistentVolumeClaim>().Upsert(Claim(claim));
  handle_.informers().For<api::PersistentVolumeClaim>().Upsert(Claim(ClaimJson("shared", "")));
  auto holder = PodWith("holder", json::array({ClaimVolume("exclusive")}), "node-a");
  auto node_a = NodeWithPods("node-a", {holder});
  auto node_b = NodeWithPods("node-b", {});
  handle_.lister().Set({node_a, node_b});
  auto plugin = Plugin();

  auto pod = PodWith("p", json::array({ClaimVolume("exclusive")}));
  CycleState state;
  framework::PreFilterResult result;
  ASSERT_TRUE(plugin->PreFilter(state, *pod, {}, &result).IsSuccess());
  for (const auto& node : {node_a, node_b}) {
    Status s = plugin->Filter(state, *pod, *node);
    EXPECT_EQ(s.code(), Code::kUnschedulable);
    EXPECT_EQ(s.Message(),
              "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
              "already in-use by another pod");
  }
  // Preemption removing the holder frees the claim; adding it back takes it again.
  ASSERT_TRUE(plugin->RemovePod(state, *pod, PodInfo(holder), *node_a).IsSuccess());
  EXPECT_TRUE(plugin->Filter(state, *pod, *node_b).IsSuccess());
  auto copy = state.Clone();
  ASSERT_TRUE(plugin->AddPod(*copy, *pod, PodInfo(holder), *node_a).IsSuccess());
  EXPECT_FALSE(plugin->Filter(*copy, *pod, *node_b).IsSuccess());
  EXPECT_TRUE(plugin->Filter(state, *pod, *node_b).IsSuccess());

  // A claim without the mode, or an unused one, restricts nothing.
  CycleState shared_state;
  EXPECT_EQ(plugin
                ->PreFilter(shared_state, *PodWith("q", json::array({ClaimVolume("shared")})), {},
                            &result)
                .code(),
            Code::kSkip);
  handle_.lister().Set({node_b});
  CycleState unused;
  EXPECT_EQ(plugin->PreFilter(unused, *pod, {}, &result).code(), Code::kSkip);
}

TEST_F(VolumeRestrictionsTest, AMissingClaimIsUnresolvable) {
  auto plugin = Plugin();
  CycleState state;
  framework::PreFilterResult result;
  Status s =
      plugin->PreFilter(state, *PodWith("p", json::array({ClaimVolume("absent")})), {}, &result);
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.Message(), "persistentvolumeclaim \"absent\" not found");
  EXPECT_EQ(plugin->PreFilter(state, *PodWith("p", json::array()), {}, &result).code(),
            Code::kSkip);
}

TEST(VolumeRestrictionsHints, DeletedPodsAndAddedClaims) {
  using framework::QueueingHint;
  auto pod = PodWith(
      "p", json::array({ClaimVolume("data"), Disk("gcePersistentDisk", {{"pdName", "pd"}})}));
  framework::EventObjects deleted;
  deleted.old_pod = PodWith("holder", json::array({ClaimVolume("data")}), "n");
  EXPECT_EQ(IsSchedulableAfterAssignedPodDeleted(*pod, deleted), QueueingHint::kQueue);
  deleted.old_pod =
      PodWith("disk", json::array({Disk("gcePersistentDisk", {{"pdName", "pd"}})}), "n");
  EXPECT_EQ(IsSchedulableAfterAssignedPodDeleted(*pod, deleted), QueueingHint::kQueue);
  deleted.old_pod = PodWith("other", json::array({ClaimVolume("other")}), "n");
  EXPECT_EQ(IsSchedulableAfterAssignedPodDeleted(*pod, deleted), QueueingHint::kSkip);

  framework::EventObjects added;
  added.new_object = Claim(ClaimJson("data", ""));
  EXPECT_EQ(IsSchedulableAfterClaimAdded(*pod, added), QueueingHint::kQueue);
  added.new_object = Claim(ClaimJson("unrelated", ""));
  EXPECT_EQ(IsSchedulableAfterClaimAdded(*pod, added), QueueingHint::kSkip);
}

}  // namespace
}  // namespace berth::plugins::volumerestrictions
