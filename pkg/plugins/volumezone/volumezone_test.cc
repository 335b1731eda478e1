#include "pkg/plugins/volumezone/volumezone.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pkg/informer/factory.h"
#include "test/testing/fake_handle.h"
#include "test/testing/volumes.h"

namespace berth::plugins::volumezone {
namespace {

using framework::Code;
using framework::CycleState;
using framework::NodeInfo;
using framework::Status;
using json = nlohmann::json;
using namespace volumetesting;  // NOLINT(google-build-using-namespace): test vocabulary.

constexpr const char* kZone = "topology.kubernetes.io/zone";
constexpr const char* kRegion = "topology.kubernetes.io/region";
constexpr const char* kBetaZone = "failure-domain.beta.kubernetes.io/zone";

class VolumeZoneTest : public ::testing::Test {
 protected:
  VolumeZoneTest() : plugin_(std::dynamic_pointer_cast<VolumeZone>(New(nullptr, handle_))) {}

  void AddVolume(const std::string& name, const json& labels) {
    json pv = VolumeJson(name, "", "1Gi");
    pv["metadata"]["labels"] = labels;
    handle_.informers().For<api::PersistentVolume>().Upsert(Volume(pv));
    handle_.informers().For<api::PersistentVolumeClaim>().Upsert(
        Claim(BoundClaimJson("claim-" + name, name)));
  }

  // PreFilter then Filter on a node labelled `labels`.
  Status Run(const std::vector<std::string>& claims, const json& labels) {
    json volumes = json::array();
    for (size_t i = 0; i < claims.size(); i++) {
      volumes.push_back(ClaimVolume(claims[i], "v" + std::to_string(i)));
    }
    auto pod = PodWith("p", volumes);
    CycleState state;
    framework::PreFilterResult result;
    Status pre = plugin_->PreFilter(state, *pod, {}, &result);
    if (!pre.IsSuccess()) return pre;
    return plugin_->Filter(state, *pod, NodeInfo(Node("n", labels)));
  }

  testing::FakeHandle handle_;
  std::shared_ptr<VolumeZone> plugin_;
};

TEST_F(VolumeZoneTest, BoundVolumesKeepThePodInTheirZonesAndRegions) {
  AddVolume("zonal", {{kZone, "us-west1-a"}});
  AddVolume("multi", {{kZone, "us-west1-a__us-west1-b"}});
  AddVolume("regional", {{kRegion, "us-west1"}});
  AddVolume("beta", {{kBetaZone, "us-west1-c"}});
  AddVolume("plain", json::object());

  EXPECT_TRUE(Run({"claim-zonal"}, {{kZone, "us-west1-a"}}).IsSuccess());
  Status other = Run({"claim-zonal"}, {{kZone, "us-west1-b"}});
  EXPECT_EQ(other.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(other.Message(), "node(s) had no available volume zone");
  // A node without zone or region labels is not constrained.
  EXPECT_TRUE(Run({"claim-zonal"}, {{"rack", "1"}}).IsSuccess());
  // A node with a region but no zone misses the zone.
  EXPECT_FALSE(Run({"claim-zonal"}, {{kRegion, "us-west1"}}).IsSuccess());

  EXPECT_TRUE(Run({"claim-multi"}, {{kZone, "us-west1-b"}}).IsSuccess());
  EXPECT_FALSE(Run({"claim-multi"}, {{kZone, "us-west1-c"}}).IsSuccess());
  EXPECT_TRUE(Run({"claim-regional"}, {{kRegion, "us-west1"}, {kZone, "x"}}).IsSuccess());
  EXPECT_FALSE(Run({"claim-regional"}, {{kRegion, "us-east1"}}).IsSuccess());
  // A beta label on the volume is matched against the node's GA label too.
  EXPECT_TRUE(Run({"claim-beta"}, {{kZone, "us-west1-c"}}).IsSuccess());
  EXPECT_TRUE(Run({"claim-beta"}, {{kBetaZone, "us-west1-c"}}).IsSuccess());
  // Every volume must fit.
  EXPECT_FALSE(Run({"claim-zonal", "claim-beta"}, {{kZone, "us-west1-a"}}).IsSuccess());
  // Volumes without topology labels: nothing to check.
  auto pod = PodWith("p", json::array({ClaimVolume("claim-plain")}));
  CycleState state;
  framework::PreFilterResult result;
  EXPECT_EQ(plugin_->PreFilter(state, *pod, {}, &result).code(), Code::kSkip);
}

TEST_F(VolumeZoneTest, UnreadableClaimsAreRejectedWithUpstreamsWords) {
  auto& informers = handle_.informers();
  informers.For<api::StorageClass>().Upsert(Class(ClassJson("wffc", "WaitForFirstConsumer")));
  informers.For<api::StorageClass>().Upsert(Class(ClassJson("now", "Immediate")));
  informers.For<api::PersistentVolumeClaim>().Upsert(Claim(ClaimJson("waiting", "wffc")));
  informers.For<api::PersistentVolumeClaim>().Upsert(Claim(ClaimJson("immediate", "now")));
  informers.For<api::PersistentVolumeClaim>().Upsert(Claim(ClaimJson("classless", "")));
  informers.For<api::PersistentVolumeClaim>().Upsert(Claim(ClaimJson("lost-class", "gone")));
  informers.For<api::PersistentVolumeClaim>().Upsert(Claim(BoundClaimJson("dangling", "pv-x")));

  EXPECT_EQ(Run({"missing"}, json::object()).Message(),
            "persistentvolumeclaim \"missing\" not found");
  EXPECT_EQ(Run({"immediate"}, json::object()).Message(), "PersistentVolume had no name");
  EXPECT_EQ(Run({"classless"}, json::object()).Message(),
            "PersistentVolumeClaim had no pv name and storageClass name");
  EXPECT_EQ(Run({"lost-class"}, json::object()).Message(),
            "storageclass.storage.k8s.io \"gone\" not found");
  EXPECT_EQ(Run({"dangling"}, json::object()).Message(), "persistentvolume \"pv-x\" not found");
  EXPECT_EQ(Run({""}, json::object()).Message(), "PersistentVolumeClaim had no name");
  // Not bound yet and WaitForFirstConsumer: VolumeBinding's business.
  EXPECT_EQ(Run({"waiting"}, json::object()).code(), Code::kSkip);
}

TEST(VolumeZoneTopologies, MalformedLabelsAreIgnored) {
  json pv = VolumeJson("pv", "", "1Gi");
  pv["metadata"]["labels"] = {{kZone, "a__"}, {kRegion, " r1 "}};
  const auto topologies = TopologiesOf(*Volume(pv));
  ASSERT_EQ(topologies.size(), 1u);
  EXPECT_EQ(topologies[0].key, kRegion);
  EXPECT_EQ(topologies[0].values, std::vector<std::string>{"r1"});
}

TEST(VolumeZoneHints, ClaimsClassesAndVolumeLabels) {
  using framework::QueueingHint;
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  framework::EventObjects claim;
  claim.new_object = Claim(ClaimJson("data", ""));
  EXPECT_EQ(IsSchedulableAfterClaimChange(*pod, claim), QueueingHint::kQueue);
  claim.new_object = Claim(ClaimJson("other", ""));
  EXPECT_EQ(IsSchedulableAfterClaimChange(*pod, claim), QueueingHint::kSkip);

  framework::EventObjects added;
  added.new_object = Class(ClassJson("c", "WaitForFirstConsumer"));
  EXPECT_EQ(IsSchedulableAfterStorageClassAdded(*pod, added), QueueingHint::kQueue);
  added.new_object = Class(ClassJson("c", "Immediate"));
  EXPECT_EQ(IsSchedulableAfterStorageClassAdded(*pod, added), QueueingHint::kSkip);

  json before = VolumeJson("pv", "", "1Gi");
  before["metadata"]["labels"] = {{kZone, "a"}};
  json after = before;
  after["spec"]["capacity"]["storage"] = "2Gi";
  framework::EventObjects update;
  update.old_object = Volume(before);
  update.new_object = Volume(after);
  EXPECT_EQ(IsSchedulableAfterVolumeChange(*pod, update), QueueingHint::kSkip);
  after["metadata"]["labels"][kZone] = "b";
  update.new_object = Volume(after);
  EXPECT_EQ(IsSchedulableAfterVolumeChange(*pod, update), QueueingHint::kQueue);
  framework::EventObjects create;
  create.new_object = Volume(after);
  EXPECT_EQ(IsSchedulableAfterVolumeChange(*pod, create), QueueingHint::kQueue);
}

}  // namespace
}  // namespace berth::plugins::volumezone
