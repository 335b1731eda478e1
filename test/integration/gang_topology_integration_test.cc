// Gangs with a topology constraint (scheduler-plugins' PodGroup, as the chart's CRD defines it),
// by the real berth-scheduler binary against the local apiserver: where the pods are bound.

#include "test/integration/gang_fixture.h"

namespace berth {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;

class GangTopologyIntegration : public testing::GangTest {
 protected:
  static void SetUpTestSuite() { testing::InstallPodGroupCrd(*testing::AdminClient()); }
};

// A gang of 8 that asks for one rack lands in the one rack with room for it; then a plain gang of
// 8, for which no rack has room left, is not held to one: it binds across the other two.
TEST_F(GangTopologyIntegration, AConstrainedGangOfEightLandsInOneRackAndAPlainOneMaySpread) {
  Rack("r0", "b0", 2, "2");  // 4 cpus.
  Rack("r1", "b0", 2, "4");  // 8 cpus: the only rack for the gang.
  Rack("r2", "b1", 3, "2");  // 6 cpus.
  StartScheduler(60);
  TopologyGroup("train", 8, {kRackKey});
  for (int i = 0; i < 8; i++) Pod("train-" + std::to_string(i), "train", "1");
  ASSERT_TRUE(Eventually([&] { return Bound("train-") == 8; }, 60s)) << Bound("train-");
  EXPECT_EQ(Domains("train-", kRackKey), (std::map<std::string, int>{{"r1", 8}}));

  Group("plain", 8);
  for (int i = 0; i < 8; i++) Pod("plain-" + std::to_string(i), "plain", "1");
  ASSERT_TRUE(Eventually([&] { return Bound("plain-") == 8; }, 60s)) << Bound("plain-");
  EXPECT_EQ(Domains("plain-", kRackKey).size(), 2u);
}

// Preferred, with the block as the fallback: no rack has room for 8, so the gang goes to the one
// block that has.
TEST_F(GangTopologyIntegration, APreferredConstraintFallsBackToOneBlockWhenNoRackHasRoom) {
  Rack("r0", "b0", 2, "2");
  Rack("r1", "b0", 2, "2");
  Rack("r2", "b1", 2, "2");
  StartScheduler(60);
  TopologyGroup("train", 8, {kRackKey, kBlockKey}, "Preferred");
  for (int i = 0; i < 8; i++) Pod("train-" + std::to_string(i), "train", "1");
  ASSERT_TRUE(Eventually([&] { return Bound("train-") == 8; }, 60s)) << Bound("train-");
  EXPECT_EQ(Domains("train-", kBlockKey), (std::map<std::string, int>{{"b0", 8}}));
  EXPECT_EQ(Domains("train-", kRackKey).size(), 2u);
}

// Required, and no rack can take the gang: nothing binds, and the PodGroup's events say how close
// the nearest rack came.
TEST_F(GangTopologyIntegration, ARequiredConstraintNoRackMeetsBindsNothingAndSaysHowCloseItCame) {
  Rack("r0", "b0", 2, "4");
  Rack("r1", "b0", 3, "4");
  StartScheduler(60);
  TopologyGroup("train", 4, {kRackKey});
  for (int i = 0; i < 4; i++) Pod("train-" + std::to_string(i), "train", "3");
  const std::string expected =
      "fits in no single topology domain: 0/2 domains of "
      "\"example.com/rack\" can take 4 pods (\"" +
      nodes_->id() + "-r1\" came closest, with 3)";
  EXPECT_TRUE(Eventually([&] { return GroupEventContains("train", expected); }, 60s));
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(Bound("train-"), 0);
}

}  // namespace
}  // namespace berth
