// Gang scheduling by the real berth-scheduler binary against the local control plane, with
// scheduler-plugins' PodGroup CRD installed from the chart's copy: a gang binds completely or not
// at all, gives back what it held when it cannot complete, and two gangs competing for the same
// room never deadlock. Also: without the CRD, gang scheduling is off and everything else works.

#include <thread>

#include "test/integration/gang_fixture.h"

namespace berth {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::Eventually;
using testing::GangTest;

void RemoveCrd(client::Client& client) {
  try {
    client.Delete(std::string(testing::kCrdPath) + "/" + testing::kPodGroupCrd);
  } catch (const client::ApiError& e) {
    ASSERT_EQ(e.reason(), client::ErrorReason::kNotFound) << e.what();
  }
  ASSERT_TRUE(Eventually(
      [&] {
        return !testing::ApiServed(client, "/apis/scheduling.x-k8s.io/v1alpha1", "podgroups");
      },
      60s))
      << testing::kPodGroupCrd << " is still served";
}

// Declared first: it removes the CRD, which the other suite installs again.
class WithoutCrd : public GangTest {
 protected:
  void SetUp() override {
    GangTest::SetUp();
    RemoveCrd(*client_);
  }
};

TEST_F(WithoutCrd, GangSchedulingIsOffAndEverythingElseIsScheduled) {
  nodes_->Add("0", "4", "8Gi");
  StartScheduler(60);
  Pod("plain", "", "100m");
  Pod("member", "train", "100m");
  ASSERT_TRUE(Eventually([&] { return Bound("plain") == 1; }, 30s));
  ASSERT_TRUE(Eventually(
      [&] { return Condition("member").find("PodGroup API") != std::string::npos; }, 30s))
      << Condition("member");
  EXPECT_NE(Condition("member").find("pod group \"" + ns_->name() +
                                     "/train\" cannot be read: the PodGroup API "
                                     "(scheduling.x-k8s.io/v1alpha1) is not served"),
            std::string::npos)
      << Condition("member");
  EXPECT_EQ(Bound("member"), 0);
  const std::string log = scheduler_->Log();
  const std::string line = "gang scheduling is off";
  ASSERT_NE(log.find(line), std::string::npos) << log;
  EXPECT_EQ(log.find(line, log.find(line) + 1), std::string::npos) << "logged more than once";
}

class GangIntegration : public GangTest {
 protected:
  static void SetUpTestSuite() { testing::InstallPodGroupCrd(*testing::AdminClient()); }
};

TEST_F(GangIntegration, AGangLargerThanTheClusterBindsNothingThenAllOfItWhenANodeIsAdded) {
  ExpectAGangLargerThanTheClusterToBindNothing();
  EXPECT_TRUE(Eventually([&] { return GroupStatus("train").value("phase", "") == "Pending"; }, 30s))
      << GroupStatus("train").dump();
  EXPECT_TRUE(GroupStatus("train").contains("scheduleStartTime")) << GroupStatus("train").dump();

  ExpectTheWholeGangToBindOnceANodeIsAdded();
  EXPECT_TRUE(Eventually(
      [&] {
        json status = GroupStatus("train");
        return status.value("phase", "") == "Running" && status.value("running", 0) == 4;
      },
      30s))
      << GroupStatus("train").dump();
}

TEST_F(GangIntegration, AGangOfEightNeedingSixBindsTheSixThatFit) {
  ExpectTheSixOfEightThatFitToBind();
}

TEST_F(GangIntegration, ATimedOutGangGivesBackTheRoomItHeld) {
  nodes_->Add("0", "4", "8Gi");
  StartScheduler(5);
  Group("held", 3);
  Pod("held-0", "held", "2");
  Pod("held-1", "held", "2");
  // The third member is held back by a scheduling gate: the other two wait for it, holding the
  // node.
  Pod("held-2", "held", "2", /*gated=*/true);
  ASSERT_TRUE(
      Eventually([&] { return GroupStatus("held").value("phase", "") == "Scheduling"; }, 30s))
      << GroupStatus("held").dump();
  Pod("other", "", "3");
  ASSERT_TRUE(Eventually(
      [&] { return Condition("other").find("Insufficient cpu") != std::string::npos; }, 30s))
      << "the waiting gang did not hold its room: " << Condition("other");
  EXPECT_TRUE(Eventually([&] { return Bound("other") == 1; }, 30s)) << Condition("other");
  EXPECT_EQ(Bound("held-"), 0);
  // Both waited from about the same moment: each may time out itself, or go with the other.
  for (const char* pod : {"held-0", "held-1"}) {
    EXPECT_TRUE(Eventually(
        [&] {
          return PodEventContains(pod, "rejected due to timeout after waiting 5s") ||
                 PodEventContains(pod, "required pods were placed within 5s");
        },
        30s))
        << pod << ": " << Condition(pod);
  }
}

TEST_F(GangIntegration, GangsThatFitOnlyOneAtATimeNeverDeadlock) {
  nodes_->Add("0", "4", "8Gi");
  nodes_->Add("1", "4", "8Gi");
  StartScheduler(10);
  Group("a", 4);
  Group("b", 4);
  // Interleaved, so both gangs have pods placed before either is complete; each fits alone
  // (two 1.5-cpu pods a node), not both.
  for (int i = 0; i < 4; i++) {
    Pod("a-" + std::to_string(i), "a", "1500m");
    Pod("b-" + std::to_string(i), "b", "1500m");
    if (i == 1) Pod("small", "", "500m");
  }
  // Within one wait period, one gang is bound whole and the small pod is not starved.
  ASSERT_TRUE(Eventually([&] { return Bound("a-") == 4 || Bound("b-") == 4; }, 10s))
      << "a: " << Bound("a-") << ", b: " << Bound("b-");
  EXPECT_TRUE(Eventually([&] { return Bound("small") == 1; }, 10s)) << Condition("small");
  std::this_thread::sleep_for(3s);
  const int a = Bound("a-");
  const int b = Bound("b-");
  EXPECT_TRUE((a == 4 && b == 0) || (a == 0 && b == 4)) << "a: " << a << ", b: " << b;
}

TEST_F(GangIntegration, DeletingAWaitingPodReleasesItsGangAtOnce) {
  nodes_->Add("0", "4", "8Gi");
  StartScheduler(60);
  Group("job", 3);
  Pod("job-0", "job", "1");
  Pod("job-1", "job", "1");
  Pod("job-2", "job", "1", /*gated=*/true);
  ASSERT_TRUE(
      Eventually([&] { return GroupStatus("job").value("phase", "") == "Scheduling"; }, 30s))
      << GroupStatus("job").dump();
  client_->Delete(PodsPath() + "/job-0");
  // Long before the 60s wait would end.
  EXPECT_TRUE(Eventually(
      [&] {
        return Condition("job-1").find("pod \"job-0\" was deleted while waiting") !=
                   std::string::npos ||
               Condition("job-1").find("has 2 of 3 required pods") != std::string::npos;
      },
      20s))
      << Condition("job-1");
  EXPECT_TRUE(Eventually([&] { return GroupStatus("job").value("phase", "") == "Pending"; }, 20s))
      << GroupStatus("job").dump();
  EXPECT_EQ(Bound("job-"), 0);
}

}  // namespace
}  // namespace berth
