// Gang scheduling with upstream Kubernetes' own PodGroup (scheduling.k8s.io/v1beta1), by the real
// berth-scheduler binary. The local cluster serves that API when started with
// BERTH_GENERIC_WORKLOAD=1 (its default): the GenericWorkload feature gate and the API version.
// Pods join with spec.schedulingGroup.podGroupName; Berth keeps the PodGroupInitiallyScheduled
// condition as kube-scheduler does.

#include <thread>

#include "test/integration/gang_fixture.h"

namespace berth {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::Eventually;

class WorkloadGang : public testing::GangTest {
 protected:
  void SetUp() override {
    testing::GangTest::SetUp();
    api_ = testing::GangApi::kWorkload;
    ASSERT_TRUE(testing::ApiServed(*client_, "/apis/scheduling.k8s.io/v1beta1", "podgroups"))
        << "the apiserver does not serve scheduling.k8s.io/v1beta1 PodGroups: start the local "
           "cluster with BERTH_GENERIC_WORKLOAD=1 (deploy/local-cluster.sh up)";
  }

  // The group's PodGroupInitiallyScheduled condition; empty when it has none.
  json Scheduled(const std::string& name) {
    for (const json& c : GroupStatus(name).value("conditions", json::array())) {
      if (c["type"] == "PodGroupInitiallyScheduled") return c;
    }
    return json::object();
  }
};

TEST_F(WorkloadGang, AGangLargerThanTheClusterBindsNothingThenAllOfItWhenANodeIsAdded) {
  ExpectAGangLargerThanTheClusterToBindNothing();
  ASSERT_TRUE(Eventually([&] { return !Scheduled("train").empty(); }, 30s));
  json condition = Scheduled("train");
  EXPECT_EQ(condition["status"], "False") << condition.dump();
  EXPECT_EQ(condition["reason"], "Unschedulable") << condition.dump();
  EXPECT_NE(condition.value("message", "").find("3 of 4 required pods placed"), std::string::npos)
      << condition.dump();

  ExpectTheWholeGangToBindOnceANodeIsAdded();
  EXPECT_TRUE(Eventually([&] { return Scheduled("train").value("status", "") == "True"; }, 30s))
      << Scheduled("train").dump();
  condition = Scheduled("train");
  EXPECT_EQ(condition["reason"], "Scheduled");
  EXPECT_EQ(condition["message"], "all 4 required pods placed");
  // The generation observed, as kube-scheduler writes it (this apiserver keeps none on PodGroups).
  EXPECT_EQ(condition.value("observedGeneration", 0),
            client_->Get(GroupsPath() + "/train")["metadata"].value("generation", 0));
}

TEST_F(WorkloadGang, AGangOfEightWithMinCountSixBindsTheSixThatFit) {
  ExpectTheSixOfEightThatFitToBind();
  EXPECT_EQ(Scheduled("workers").value("status", ""), "True") << Scheduled("workers").dump();
}

TEST_F(WorkloadGang, PodsWaitForTheirGroupAndTheirNumberAndTheBasicPolicyPlacesThemAlone) {
  nodes_->Add("0", "3", "8Gi");
  StartScheduler(60);
  // No such group yet, then too few pods for it.
  Pod("late-0", "late", "1");
  ASSERT_TRUE(Eventually(
      [&] { return Condition("late-0").find("/late\" does not exist") != std::string::npos; }, 30s))
      << Condition("late-0");
  Group("late", 2);
  ASSERT_TRUE(Eventually(
      [&] { return Condition("late-0").find("has 1 of 2 required pods") != std::string::npos; },
      30s))
      << Condition("late-0");
  EXPECT_EQ(Bound("late-"), 0);
  Pod("late-1", "late", "1");
  EXPECT_TRUE(Eventually([&] { return Bound("late-") == 2; }, 30s)) << Condition("late-1");

  // A basic group's pods need no quorum: the one that fits binds while the other waits.
  client_->Post(GroupsPath(), {{"apiVersion", "scheduling.k8s.io/v1beta1"},
                               {"kind", "PodGroup"},
                               {"metadata", {{"name", "loose"}}},
                               {"spec", {{"schedulingPolicy", {{"basic", json::object()}}}}}});
  Pod("loose-0", "loose", "1");
  Pod("loose-1", "loose", "1");
  EXPECT_TRUE(Eventually([&] { return Bound("loose-") == 1; }, 30s)) << Bound("loose-");
  EXPECT_TRUE(Eventually([&] { return PendingWith("loose-", "Insufficient cpu") == 1; }, 30s));
  EXPECT_TRUE(Eventually([&] { return Scheduled("loose").value("status", "") == "True"; }, 30s))
      << Scheduled("loose").dump();
}

// A basic group with disruptionMode: {all: {}} is placed pod by pod but preempted as one: its two
// pods, bound on two one-CPU nodes, both go for a higher-priority pod that needs the room of one.
TEST_F(WorkloadGang, ABasicGroupDisruptedOnlyAsAWholeIsEvictedWhole) {
  testing::PriorityClasses classes(client_);
  const std::string low = classes.Add("basic-low", 100);
  const std::string high = classes.Add("basic-high", 1000);
  client_->Post(GroupsPath(), {{"apiVersion", "scheduling.k8s.io/v1beta1"},
                               {"kind", "PodGroup"},
                               {"metadata", {{"name", "whole"}}},
                               {"spec",
                                {{"schedulingPolicy", {{"basic", json::object()}}},
                                 {"priorityClassName", low},
                                 {"disruptionMode", {{"all", json::object()}}}}}});
  for (int i = 0; i < 2; i++) {
    // Bound by the test (no kubelet runs it; deleting it takes no grace).
    json pod = testing::PodManifest(ns_->name(), "whole-" + std::to_string(i), "berth-scheduler",
                                    "1", "64Mi");
    pod["spec"]["priorityClassName"] = low;
    pod["spec"]["terminationGracePeriodSeconds"] = 0;
    pod["spec"]["nodeName"] = nodes_->Add(std::to_string(i), "1", "8Gi");
    pod["spec"]["schedulingGroup"] = {{"podGroupName", "whole"}};
    client_->Post(PodsPath(), pod);
  }
  ASSERT_EQ(Bound("whole-"), 2);
  StartScheduler(60);
  json pod = testing::PodManifest(ns_->name(), "high", "berth-scheduler", "1", "64Mi");
  pod["spec"]["nodeSelector"] = {{"berth-it", nodes_->id()}};
  pod["spec"]["priorityClassName"] = high;
  client_->Post(PodsPath(), pod);

  ASSERT_TRUE(Eventually([&] { return Bound("high") == 1; }, 60s)) << Condition("high");
  EXPECT_TRUE(Eventually([&] { return Placement("whole-").empty(); }, 30s))
      << Placement("whole-").size() << " of the basic group's 2 pods left";
}

// A gang of each API, each fitting the cluster alone but not both: one binds whole, the other
// binds nothing, and neither holds the other's room for good.
TEST_F(WorkloadGang, GangsOfBothApisNeverDeadlockEachOther) {
  testing::InstallPodGroupCrd(*client_);
  nodes_->Add("0", "4", "8Gi");
  nodes_->Add("1", "4", "8Gi");
  StartScheduler(10);
  Group("up", 4);
  api_ = testing::GangApi::kSchedulerPlugins;
  Group("sp", 4);
  for (int i = 0; i < 4; i++) {
    api_ = testing::GangApi::kWorkload;
    Pod("up-" + std::to_string(i), "up", "1500m");
    api_ = testing::GangApi::kSchedulerPlugins;
    Pod("sp-" + std::to_string(i), "sp", "1500m");
  }
  ASSERT_TRUE(Eventually([&] { return Bound("up-") == 4 || Bound("sp-") == 4; }, 10s))
      << "upstream: " << Bound("up-") << ", scheduler-plugins: " << Bound("sp-");
  std::this_thread::sleep_for(3s);
  const int up = Bound("up-");
  const int sp = Bound("sp-");
  EXPECT_TRUE((up == 4 && sp == 0) || (up == 0 && sp == 4)) << "up: " << up << ", sp: " << sp;
  api_ = testing::GangApi::kWorkload;
}

// Upstream's topology constraint (schedulingConstraints.topology, served with the
// TopologyAwareWorkloadScheduling gate the local cluster turns on): the gang lands in one rack,
// the one it fills.
TEST_F(WorkloadGang, ATopologyConstrainedGangLandsInTheRackItFills) {
  Rack("r0", "b0", 2, "2");
  Rack("r1", "b0", 2, "3");
  Rack("r2", "b1", 3, "4");
  StartScheduler(60);
  TopologyGroup("train", 6, {kRackKey});
  ASSERT_FALSE(client_->Get(GroupsPath() + "/train")["spec"]
                   .value("schedulingConstraints", json::object())
                   .empty())
      << "the apiserver dropped schedulingConstraints: start the local cluster with its "
         "TopologyAwareWorkloadScheduling gate (deploy/local-cluster.sh up)";
  for (int i = 0; i < 6; i++) Pod("train-" + std::to_string(i), "train", "1");
  ASSERT_TRUE(Eventually([&] { return Bound("train-") == 6; }, 60s)) << Bound("train-");
  EXPECT_EQ(Domains("train-", kRackKey), (std::map<std::string, int>{{"r1", 6}}));
}

}  // namespace
}  // namespace berth
