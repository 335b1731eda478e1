// Gang scheduling by the real berth-scheduler binary against the local control plane, with
// scheduler-plugins' PodGroup CRD installed from the chart's copy: a gang binds completely or not
// at all, gives back what it held when it cannot complete, and two gangs competing for the same
// room never deadlock. Also: without the CRD, gang scheduling is off and everything else works.

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "pkg/client/client.h"
#include "test/packaging/chart.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::Eventually;

constexpr char kCrd[] = "podgroups.scheduling.x-k8s.io";
constexpr char kCrdPath[] = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
constexpr char kGroupVersion[] = "/apis/scheduling.x-k8s.io/v1alpha1";

bool Served(client::Client& client) {
  try {
    const json list = client.Get(kGroupVersion);
    for (const json& r : list["resources"]) {
      if (r["name"] == "podgroups") return true;
    }
  } catch (const client::ApiError&) {
  }
  return false;
}

void InstallCrd(client::Client& client) {
  std::vector<json> docs = packaging::ParseYamlDocuments(
      packaging::ReadFile(packaging::ChartDir() + "/files/podgroups.scheduling.x-k8s.io.yaml"));
  ASSERT_EQ(docs.size(), 1u);
  try {
    client.Post(kCrdPath, docs[0]);
  } catch (const client::ApiError& e) {
    ASSERT_EQ(e.reason(), client::ErrorReason::kAlreadyExists) << e.what();
  }
  ASSERT_TRUE(Eventually([&] { return Served(client); }, 60s)) << kCrd << " is not served";
}

void RemoveCrd(client::Client& client) {
  try {
    client.Delete(std::string(kCrdPath) + "/" + kCrd);
  } catch (const client::ApiError& e) {
    ASSERT_EQ(e.reason(), client::ErrorReason::kNotFound) << e.what();
  }
  ASSERT_TRUE(Eventually([&] { return !Served(client); }, 60s)) << kCrd << " is still served";
}

class GangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = testing::AdminClient();
    ns_ = std::make_unique<testing::TestNamespace>(client_, "gang");
    nodes_ = std::make_unique<testing::TestNodes>(client_);
  }
  void TearDown() override {
    if (scheduler_ && scheduler_->Running()) scheduler_->Stop(SIGTERM, 10s);
    if (HasFailure() && scheduler_) {
      std::cerr << "---- berth-scheduler log ----\n" << scheduler_->Log() << "\n";
    }
  }

  void StartScheduler(int permit_wait_seconds) {
    const std::string config =
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaderElect: false\n"
        "profiles:\n"
        "- schedulerName: berth-scheduler\n"
        "  pluginConfig:\n"
        "  - name: Coscheduling\n"
        "    args: {permitWaitingTimeSeconds: " +
        std::to_string(permit_wait_seconds) + "}\n";
    auto path = testing::WriteTempFile("gang-config.yaml", config);
    scheduler_ = std::make_unique<testing::ChildProcess>();
    scheduler_->Start({testing::BinaryPath("berth-scheduler"), "--kubeconfig",
                       testing::ClusterDir() + "/kubeconfig", "--config", path, "--v", "2",
                       "--bind-address", "127.0.0.1:" + std::to_string(testing::FreePort())},
                      path + ".log");
  }

  std::string PodsPath() const { return client::PodsResource().Path(ns_->name()); }
  std::string GroupsPath() const { return client::PodGroupsResource().Path(ns_->name()); }

  void Group(const std::string& name, int min_member) {
    client_->Post(GroupsPath(), {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                 {"kind", "PodGroup"},
                                 {"metadata", {{"name", name}}},
                                 {"spec", {{"minMember", min_member}}}});
  }

  // A pod on this test's nodes requesting `cpu`, in `group` unless that is empty.
  void Pod(const std::string& name, const std::string& group, const std::string& cpu,
           bool gated = false) {
    json pod = testing::PodManifest(ns_->name(), name, "berth-scheduler", cpu, "64Mi");
    pod["spec"]["nodeSelector"] = {{"berth-it", nodes_->id()}};
    if (!group.empty()) pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = group;
    if (gated) pod["spec"]["schedulingGates"] = {{{"name", "example.com/hold"}}};
    client_->Post(PodsPath(), pod);
  }

  // Pod name -> node ("" when pending) of the pods whose name starts with `prefix`.
  std::map<std::string, std::string> Placement(const std::string& prefix) {
    std::map<std::string, std::string> out;
    const json pods = client_->Get(PodsPath());
    for (const json& item : pods["items"]) {
      std::string name = item["metadata"]["name"];
      if (name.rfind(prefix, 0) == 0) out[name] = item["spec"].value("nodeName", "");
    }
    return out;
  }
  int Bound(const std::string& prefix) {
    int n = 0;
    for (const auto& [pod, node] : Placement(prefix)) n += node.empty() ? 0 : 1;
    return n;
  }

  std::string Condition(const std::string& pod) {
    json object = client_->Get(PodsPath() + "/" + pod);
    for (const json& c : object["status"].value("conditions", json::array())) {
      if (c["type"] == "PodScheduled" && c["status"] == "False") return c.value("message", "");
    }
    return "";
  }

  // Notes of the events recorded on PodGroup `name`.
  std::vector<std::string> GroupEvents(const std::string& name) {
    std::vector<std::string> notes;
    const json events = client_->Get(client::EventsResource().Path(ns_->name()));
    for (const json& e : events["items"]) {
      if (e["regarding"].value("kind", "") == "PodGroup" && e["regarding"]["name"] == name) {
        notes.push_back(e.value("note", ""));
      }
    }
    return notes;
  }
  bool PodEventContains(const std::string& pod, const std::string& part) {
    const json events = client_->Get(client::EventsResource().Path(ns_->name()));
    for (const json& e : events["items"]) {
      if (e["regarding"].value("kind", "") == "Pod" && e["regarding"]["name"] == pod &&
          e.value("note", "").find(part) != std::string::npos) {
        return true;
      }
    }
    return false;
  }
  bool GroupEventContains(const std::string& name, const std::string& part) {
    for (const std::string& note : GroupEvents(name)) {
      if (note.find(part) != std::string::npos) return true;
    }
    return false;
  }
  json GroupStatus(const std::string& name) {
    return client_->Get(GroupsPath() + "/" + name).value("status", json::object());
  }

  std::shared_ptr<client::Client> client_;
  std::unique_ptr<testing::TestNamespace> ns_;
  std::unique_ptr<testing::TestNodes> nodes_;
  std::unique_ptr<testing::ChildProcess> scheduler_;
};

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
  static void SetUpTestSuite() { InstallCrd(*testing::AdminClient()); }
};

TEST_F(GangIntegration, AGangLargerThanTheClusterBindsNothingThenAllOfItWhenANodeIsAdded) {
  nodes_->Add("0", "3", "8Gi");
  StartScheduler(60);
  Group("train", 4);
  for (int i = 0; i < 4; i++) Pod("train-" + std::to_string(i), "train", "1");

  const std::string gang = "pod group \"" + ns_->name() + "/train\"";
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < 4; i++) {
          if (Condition("train-" + std::to_string(i)).find(gang) == std::string::npos) {
            return false;
          }
        }
        return true;
      },
      30s))
      << Condition("train-0") << "\n"
      << Condition("train-3");
  EXPECT_TRUE(
      Eventually([&] { return GroupEventContains("train", "3 of 4 required pods placed"); }, 30s));
  EXPECT_TRUE(Eventually([&] { return GroupStatus("train").value("phase", "") == "Pending"; }, 30s))
      << GroupStatus("train").dump();
  EXPECT_TRUE(GroupStatus("train").contains("scheduleStartTime")) << GroupStatus("train").dump();
  EXPECT_EQ(Bound("train-"), 0);

  nodes_->Add("1", "1", "8Gi");
  EXPECT_TRUE(Eventually([&] { return Bound("train-") == 4; }, 30s)) << Bound("train-");
  EXPECT_TRUE(Eventually(
      [&] {
        json status = GroupStatus("train");
        return status.value("phase", "") == "Running" && status.value("running", 0) == 4;
      },
      30s))
      << GroupStatus("train").dump();
}

TEST_F(GangIntegration, AGangOfEightNeedingSixBindsTheSixThatFit) {
  nodes_->Add("0", "6", "8Gi");
  StartScheduler(60);
  Group("workers", 6);
  for (int i = 0; i < 8; i++) Pod("w-" + std::to_string(i), "workers", "1");
  ASSERT_TRUE(Eventually([&] { return Bound("w-") == 6; }, 30s)) << Bound("w-");
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(Bound("w-"), 6);
  int insufficient = 0;
  for (const auto& [pod, node] : Placement("w-")) {
    if (node.empty()) insufficient += Condition(pod).find("Insufficient cpu") != std::string::npos;
  }
  EXPECT_EQ(insufficient, 2);
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
