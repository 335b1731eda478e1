// Gangs with a topology constraint through the whole scheduler without an apiserver: nodes carry
// rack and block labels, PodGroups ask for one domain, and a binder sends bound pods back as the
// watch would. What is checked is where the pods end up and what the gang is told.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pkg/api/podgroup.h"
#include "pkg/config/load.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_handle.h"
#include "test/testing/feedback_binder.h"
#include "test/testing/informer_scheduler.h"
#include "test/testing/objects.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::Eventually;
using testing::FeedbackBinder;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr char kRack[] = "example.com/rack";
constexpr char kBlock[] = "example.com/block";

class GangTopologyTest : public testing::InformerSchedulerTest {
 protected:
  // Without `run`, no cycle runs: the informers, queue and cache are fed, and dry runs see them.
  void Start(json coscheduling_args = json::object(), bool run = true) {
    config::Configuration cfg = config::DefaultConfiguration();
    coscheduling_args["permitWaitingTimeSeconds"] = 30;
    cfg.profiles[0].plugin_config.push_back({"Coscheduling", coscheduling_args});
    StartScheduler(cfg, {}, {}, run);
  }

  // `count` nodes of `cpu` cpus each in rack `rack` of block `block`.
  void Rack(const std::string& rack, const std::string& block, int count, const std::string& cpu) {
    for (int i = 0; i < count; i++) {
      informers_.Nodes().Upsert(NodeBuilder(rack + "-n" + std::to_string(i))
                                    .Capacity(cpu, "64Gi")
                                    .Label(kRack, rack)
                                    .Label(kBlock, block)
                                    .Build());
    }
  }
  // A PodGroup (scheduling.x-k8s.io) of `min_member` asking for one domain of `keys`, narrowest
  // first; none: no constraint.
  void Group(const std::string& name, int min_member, const std::vector<std::string>& keys,
             const std::string& policy = "") {
    json spec = {{"minMember", min_member}};
    if (!keys.empty()) {
      json topology = json::array();
      for (const auto& k : keys) topology.push_back({{"key", k}});
      spec["schedulingConstraints"] = {{"topology", topology}};
      if (!policy.empty()) spec["schedulingConstraints"]["topologyPolicy"] = policy;
    }
    informers_.For<api::PodGroup>().Upsert(std::make_shared<api::PodGroup>(
        api::DecodePodGroup({{"metadata",
                              {{"name", name},
                               {"namespace", "default"},
                               {"uid", "uid-" + name},
                               {"creationTimestamp", "2025-01-01T00:00:00Z"}}},
                             {"spec", spec}})));
  }
  void Pods(const std::string& group, int count, const std::string& cpu) {
    for (int i = 0; i < count; i++) {
      PodBuilder pod(group + "-" + std::to_string(i));
      pod.Label(std::string(api::kPodGroupLabel), group);
      informers_.Pods().Upsert(pod.Container(cpu, "1Gi").Build());
    }
  }
  // The label `key` of each node the group's bound pods are on, with how many pods it holds.
  std::map<std::string, int> Domains(const std::string& group, const std::string& key) {
    std::map<std::string, int> out;
    for (const auto& [pod, node] : binder_->bound()) {
      if (pod.rfind(group + "-", 0) != 0) continue;
      api::NodePtr n = informers_.Nodes().store().Get(node);
      const std::string* value = n ? n->meta.labels.Find(key) : nullptr;
      out[value ? *value : "?"]++;
    }
    return out;
  }
  bool GroupEvent(const std::string& part) { return EventSays("PodGroup", part); }
};

// Of the racks that can take all 8 pods, the gang goes to the one its pods leave fullest; a gang
// without a constraint spreads over the cluster, as the nodes' scores make it.
TEST_F(GangTopologyTest, AConstrainedGangOfEightLandsInTheTightestRackThatTakesItWhole) {
  Rack("r-small", "b1", 2, "2");  // 4 cpus: too small.
  Rack("r-exact", "b1", 2, "4");  // 8 cpus: full with the gang.
  Rack("r-large", "b2", 4, "4");  // 16 cpus.
  Rack("r-odd", "b2", 3, "3");    // 9 cpus.
  Start();
  Group("train", 8, {kRack});
  Pods("train", 8, "1");
  ASSERT_TRUE(Eventually([&] { return Bound("train-") == 8; }, 20s)) << Bound("train-");
  EXPECT_EQ(Domains("train", kRack), (std::map<std::string, int>{{"r-exact", 8}}));
}

// A member still nominated to a node of another rack (an earlier preemption's) goes where the
// gang's plan puts it: the nominated node is tried first only when it is in the gang's domain.
TEST_F(GangTopologyTest, AStaleNominationOutsideTheDomainDoesNotSplitTheGang) {
  Rack("r-exact", "b1", 2, "4");
  Rack("r-large", "b2", 4, "4");
  Start();
  Group("train", 8, {kRack});
  PodBuilder first("train-0");
  first.Label(std::string(api::kPodGroupLabel), "train");
  first.pod().status.nominated_node_name = "r-large-n0";
  informers_.Pods().Upsert(first.Container("1", "1Gi").Build());
  for (int i = 1; i < 8; i++) {
    PodBuilder pod("train-" + std::to_string(i));
    pod.Label(std::string(api::kPodGroupLabel), "train");
    informers_.Pods().Upsert(pod.Container("1", "1Gi").Build());
  }
  ASSERT_TRUE(Eventually([&] { return Bound("train-") == 8; }, 20s)) << Bound("train-");
  EXPECT_EQ(Domains("train", kRack), (std::map<std::string, int>{{"r-exact", 8}}));
}

TEST_F(GangTopologyTest, AGangWithoutAConstraintMaySpreadOverRacks) {
  Rack("r-small", "b1", 2, "2");
  Rack("r-exact", "b1", 2, "4");
  Rack("r-large", "b2", 4, "4");
  Rack("r-odd", "b2", 3, "3");
  Start();
  Group("plain", 8, {});
  Pods("plain", 8, "1");
  ASSERT_TRUE(Eventually([&] { return Bound("plain-") == 8; }, 20s));
  EXPECT_GT(Domains("plain", kRack).size(), 1u);
}

// No rack holds the gang: a required constraint binds nothing and says how close it came. The
// second rack has the cpus in all but in pieces too small for the pods.
TEST_F(GangTopologyTest, ARequiredConstraintNoRackCanMeetBindsNothingAndSaysWhy) {
  Rack("r1", "b1", 2, "4");
  Rack("r2", "b1", 3, "4");
  Start();
  Group("train", 4, {kRack});
  Pods("train", 4, "3");
  EXPECT_TRUE(Eventually(
      [&] {
        return GroupEvent(
            "pod group \"default/train\" fits in no single topology domain: 0/2 domains of "
            "\"example.com/rack\" can take 4 pods (\"r2\" came closest, with 3)");
      },
      20s));
  EXPECT_EQ(Bound("train-"), 0);
}

// Preferred, with a fallback level: no rack holds the gang, so it goes to one block; with no
// block either, anywhere.
TEST_F(GangTopologyTest, APreferredConstraintFallsBackALevelThenToAnywhere) {
  Rack("r1", "b1", 2, "2");
  Rack("r2", "b1", 2, "2");
  Rack("r3", "b2", 1, "2");
  Rack("r4", "b3", 1, "2");
  Start();
  Group("train", 8, {kRack, kBlock}, "Preferred");
  Pods("train", 8, "1");
  ASSERT_TRUE(Eventually([&] { return Bound("train-") == 8; }, 20s));
  EXPECT_EQ(Domains("train", kBlock), (std::map<std::string, int>{{"b1", 8}}));

  Group("wide", 4, {kRack, kBlock}, "Preferred");
  Pods("wide", 4, "1");
  ASSERT_TRUE(Eventually([&] { return Bound("wide-") == 4; }, 20s));
  EXPECT_EQ(Domains("wide", kBlock), (std::map<std::string, int>{{"b2", 2}, {"b3", 2}}));
}

// With topology placement turned off (TopologyPlacementGenerator disabled), a constrained gang is
// not placed as if it had no constraint.
TEST_F(GangTopologyTest, WithTopologyPlacementOffAConstrainedGangWaitsSayingWhy) {
  Rack("r1", "b1", 4, "4");
  Start({{"topologyPlacement", false}});
  Group("train", 2, {kRack});
  Pods("train", 2, "1");
  EXPECT_TRUE(Eventually(
      [&] {
        return GroupEvent(
            "has a topology constraint, and topology placement (TopologyPlacementGenerator) is "
            "disabled in this profile");
      },
      20s));
  EXPECT_EQ(Bound("train-"), 0);
}

// Explain for a constrained gang that fits only once lower-priority pods go: each rack could be
// freed, and the note names the one the gang's preemption would choose (its victims the least
// important). Nothing is evicted.
TEST_F(GangTopologyTest, ExplainNamesTheRackPreemptionWouldFreeForAConstrainedGang) {
  Rack("r1", "b1", 2, "1");
  Rack("r2", "b1", 2, "1");
  Start(json::object(), /*run=*/false);
  for (const auto& [rack, priority] : {std::pair{"r1", 5}, std::pair{"r2", 1}}) {
    for (int i = 0; i < 2; i++) {
      const std::string node = std::string(rack) + "-n" + std::to_string(i);
      informers_.Pods().Upsert(
          PodBuilder("low-" + node).Container("1", "1Gi").Priority(priority).Node(node).Build());
    }
  }
  Group("train", 2, {kRack});
  for (int i = 0; i < 2; i++) {
    PodBuilder pod("train-" + std::to_string(i));
    pod.Label(std::string(api::kPodGroupLabel), "train");
    informers_.Pods().Upsert(pod.Container("1", "1Gi").Priority(100).Build());
  }
  const explain::Explanation e =
      scheduler_->dry_runs().Simulate(*informers_.Pods().store().Get("default/train-0"));
  const std::string note =
      "preemption would evict 2 pods on 2 nodes (in example.com/rack=r2) for pod group "
      "\"default/train\"";
  EXPECT_NE(std::find(e.notes.begin(), e.notes.end(), note), e.notes.end()) << explain::ToText(e);
  for (const char* node : {"r1-n0", "r1-n1", "r2-n0", "r2-n1"}) {
    EXPECT_NE(informers_.Pods().store().Get(std::string("default/low-") + node), nullptr) << node;
  }
}

}  // namespace
}  // namespace berth::scheduler
