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
  // A high-priority member of `group` asking for a whole one-CPU node.
  void Member(const std::string& name, const std::string& group) {
    json pod = testing::PodManifest(ns_->name(), name, "berth-scheduler", "1", "64Mi");
    pod["spec"]["nodeSelector"] = {{"berth-it", nodes_->id()}};
    pod["spec"]["priorityClassName"] = high_;
    pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = group;
    client_->Post(PodsPath(), pod);
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

}  // namespace
}  // namespace berth
