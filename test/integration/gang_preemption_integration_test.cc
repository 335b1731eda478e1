// Preemption for gangs by the real berth-scheduler binary against the local control plane: a
// high-priority gang evicts lower-priority pods only when the evictions let every member it needs
// be placed, and then exactly as many as it needs.

#include <set>
#include <thread>

#include "test/integration/gang_fixture.h"

namespace berth {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::Eventually;
using testing::GangTest;

class GangPreemptionIntegration : public GangTest {
 protected:
  static void SetUpTestSuite() { testing::InstallPodGroupCrd(*testing::AdminClient()); }
  void SetUp() override {
    GangTest::SetUp();
    classes_ = std::make_unique<testing::PriorityClasses>(client_);
    low_ = classes_->Add("gang-low", 100);
    high_ = classes_->Add("gang-high", 1000);
  }

  // A low-priority pod bound to `node` (no kubelet runs it; deleting it takes no grace).
  void LowPod(const std::string& name, const std::string& cpu, const std::string& node) {
    json pod = testing::PodManifest(ns_->name(), name, "berth-scheduler", cpu, "64Mi");
    pod["spec"]["priorityClassName"] = low_;
    pod["spec"]["terminationGracePeriodSeconds"] = 0;
    pod["spec"]["nodeName"] = node;
    client_->Post(PodsPath(), pod);
  }
  // A low-priority pod bound to `node` that joins `group` (labelled app=`group` too).
  void LowMember(const std::string& name, const std::string& group, const std::string& node) {
    json pod = testing::PodManifest(ns_->name(), name, "berth-scheduler", "1", "64Mi");
    pod["spec"]["priorityClassName"] = low_;
    pod["spec"]["terminationGracePeriodSeconds"] = 0;
    pod["spec"]["nodeName"] = node;
    pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = group;
    client_->Post(PodsPath(), pod);
  }
  // A high-priority member of `group` asking for a whole one-CPU node.
  void Member(const std::string& name, const std::string& group) {
    json pod = testing::PodManifest(ns_->name(), name, "berth-scheduler", "1", "64Mi");
    pod["spec"]["nodeSelector"] = {{"berth-it", nodes_->id()}};
    pod["spec"]["priorityClassName"] = high_;
    pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = group;
    client_->Post(PodsPath(), pod);
  }
  // A budget allowing no disruption of the pods labelled app=`app`, once the disruption
  // controller has counted them.
  void Budget(const std::string& app) {
    const std::string path = "/apis/policy/v1/namespaces/" + ns_->name() + "/poddisruptionbudgets";
    client_->Post(
        path, {{"apiVersion", "policy/v1"},
               {"kind", "PodDisruptionBudget"},
               {"metadata", {{"name", app}}},
               {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", app}}}}}}}});
    ASSERT_TRUE(Eventually(
        [&] {
          const json pdb = client_->Get(path + "/" + app);
          const json& status = pdb["status"];
          return status.value("observedGeneration", 0) == pdb["metadata"].value("generation", -1) &&
                 status.value("expectedPods", 0) == 1 &&
                 status.value("disruptionsAllowed", -1) == 0;
        },
        30s))
        << client_->Get(path + "/" + app).dump();
  }
  std::set<std::string> Existing(const std::string& prefix) {
    std::set<std::string> out;
    for (const auto& [name, node] : Placement(prefix)) out.insert(name);
    return out;
  }

  std::unique_ptr<testing::PriorityClasses> classes_;
  std::string low_;
  std::string high_;
};

// Issue 43: four one-CPU nodes full of low-priority pods and a gang of five. Evicting all four
// would still leave a member without a place: nothing is evicted, and the members say why.
TEST_F(GangPreemptionIntegration, AGangThatCannotFitAfterPreemptionEvictsNothing) {
  for (int i = 0; i < 4; i++) {
    LowPod("low-" + std::to_string(i), "1", nodes_->Add(std::to_string(i), "1", "8Gi"));
  }
  StartScheduler(60);
  Group("big", 5);
  for (int i = 0; i < 5; i++) Member("big-" + std::to_string(i), "big");

  const std::string why = "preemption: gang needs 5 places, at most 4 can be freed";
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < 5; i++) {
          if (PodEventContains("big-" + std::to_string(i), why)) return true;
        }
        return false;
      },
      60s))
      << Condition("big-0");
  // Further attempts (the gang backs off for a second between them) evict nothing either.
  std::this_thread::sleep_for(5s);
  EXPECT_EQ(Existing("low-"), (std::set<std::string>{"low-0", "low-1", "low-2", "low-3"}));
  EXPECT_EQ(Bound("big-"), 0);
}

// Four one-CPU nodes with a low-priority pod each, a free one, and one with half its CPU taken:
// a gang of five needs four evictions, gets exactly four, and binds whole.
TEST_F(GangPreemptionIntegration, AFittingGangEvictsExactlyTheVictimsItNeedsAndBindsWhole) {
  for (int i = 0; i < 4; i++) {
    LowPod("low-" + std::to_string(i), "1", nodes_->Add(std::to_string(i), "1", "8Gi"));
  }
  nodes_->Add("free", "1", "8Gi");
  LowPod("low-half", "500m", nodes_->Add("half", "1", "8Gi"));
  StartScheduler(60);
  Group("fit", 5);
  for (int i = 0; i < 5; i++) Member("fit-" + std::to_string(i), "fit");

  ASSERT_TRUE(Eventually([&] { return Bound("fit-") == 5; }, 90s))
      << Bound("fit-") << " of 5 bound; " << Condition("fit-0");
  EXPECT_EQ(Existing("low-").size(), 1u) << "exactly four of the five low-priority pods must go";
  EXPECT_TRUE(Eventually(
      [&] { return GroupEventContains("fit", "all 5 required pods placed; binding them"); }, 30s));
}

// Three one-CPU nodes with a low-priority pod each, one of them guarded by a budget that allows
// no disruption: a gang of two evicts the two others. A gang of three has no other choice and
// evicts the guarded pod too, as DefaultPreemption does for a single pod.
TEST_F(GangPreemptionIntegration, ABudgetSparesItsPodUnlessNoOtherChoiceExists) {
  json guarded = testing::PodManifest(ns_->name(), "low-guarded", "berth-scheduler", "1", "64Mi");
  guarded["spec"]["priorityClassName"] = low_;
  guarded["spec"]["terminationGracePeriodSeconds"] = 0;
  guarded["spec"]["nodeName"] = nodes_->Add("g", "1", "8Gi");
  guarded["metadata"]["labels"]["app"] = "guarded";
  client_->Post(PodsPath(), guarded);
  LowPod("low-0", "1", nodes_->Add("0", "1", "8Gi"));
  LowPod("low-1", "1", nodes_->Add("1", "1", "8Gi"));
  Budget("guarded");
  StartScheduler(60);
  Group("two", 2);
  for (int i = 0; i < 2; i++) Member("two-" + std::to_string(i), "two");
  ASSERT_TRUE(Eventually([&] { return Bound("two-") == 2; }, 90s)) << Condition("two-0");
  EXPECT_EQ(Existing("low-"), (std::set<std::string>{"low-guarded"}));

  // Room for one more: the guarded pod's node, whose budget allows nothing; a gang of one more
  // member than the free nodes goes through the budget, having no other choice.
  nodes_->Add("free", "1", "8Gi");
  Group("next", 2);
  for (int i = 0; i < 2; i++) Member("next-" + std::to_string(i), "next");
  ASSERT_TRUE(Eventually([&] { return Bound("next-") == 2; }, 90s)) << Condition("next-0");
  EXPECT_TRUE(Existing("low-").empty());
}

// A lower-priority gang of two, bound, is a victim as a whole or not at all: a high-priority gang
// of two on three full one-CPU nodes never leaves it with one pod.
TEST_F(GangPreemptionIntegration, ALowerPriorityGangVictimGoesWholeOrNotAtAll) {
  Group("victims", 2);
  LowMember("victim-0", "victims", nodes_->Add("0", "1", "8Gi"));
  LowMember("victim-1", "victims", nodes_->Add("1", "1", "8Gi"));
  LowPod("low-plain", "1", nodes_->Add("2", "1", "8Gi"));
  StartScheduler(60);
  Group("high", 2);
  for (int i = 0; i < 2; i++) Member("high-" + std::to_string(i), "high");
  ASSERT_TRUE(Eventually([&] { return Bound("high-") == 2; }, 90s)) << Condition("high-0");
  std::this_thread::sleep_for(2s);
  const size_t left = Existing("victim-").size();
  EXPECT_TRUE(left == 0 || left == 2) << left << " of the victim gang's 2 pods left";
}

// A gang that asks for one rack frees room inside one rack, the one needing fewest evictions:
// rack r1 has a free node and a low-priority pod, rack r0 two low-priority pods.
TEST_F(GangPreemptionIntegration, AConstrainedGangFreesRoomInsideOneRack) {
  for (int i = 0; i < 2; i++) {
    const std::string node = nodes_->Add("r0-" + std::to_string(i), "1", "8Gi", [&](json& n) {
      n["metadata"]["labels"][kRackKey] = nodes_->id() + "-r0";
    });
    node_labels_[node] = {{kRackKey, "r0"}};
    LowPod("low-r0-" + std::to_string(i), "1", node);
  }
  for (int i = 0; i < 2; i++) {
    const std::string node = nodes_->Add("r1-" + std::to_string(i), "1", "8Gi", [&](json& n) {
      n["metadata"]["labels"][kRackKey] = nodes_->id() + "-r1";
    });
    node_labels_[node] = {{kRackKey, "r1"}};
    if (i == 0) LowPod("low-r1", "1", node);
  }
  StartScheduler(60);
  TopologyGroup("rack", 2, {kRackKey});
  for (int i = 0; i < 2; i++) Member("rack-" + std::to_string(i), "rack");
  ASSERT_TRUE(Eventually([&] { return Bound("rack-") == 2; }, 90s)) << Condition("rack-0");
  EXPECT_EQ(Domains("rack-", kRackKey), (std::map<std::string, int>{{"r1", 2}}));
  EXPECT_EQ(Existing("low-"), (std::set<std::string>{"low-r0-0", "low-r0-1"}));
}

}  // namespace
}  // namespace berth
