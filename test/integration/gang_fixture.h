#ifndef BERTH_TEST_INTEGRATION_GANG_FIXTURE_H_
#define BERTH_TEST_INTEGRATION_GANG_FIXTURE_H_

// What the gang integration tests share: a namespace and nodes of their own, the real
// berth-scheduler binary with Coscheduling's wait set, and gangs of either API Berth reads
// (scheduler-plugins' scheduling.x-k8s.io PodGroup, joined by label; upstream's scheduling.k8s.io
// PodGroup, joined by spec.schedulingGroup) with the pods, conditions, events and statuses a user
// would look at.

#include <gtest/gtest.h>
#include <signal.h>

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pkg/client/client.h"
#include "test/packaging/chart.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth::testing {

enum class GangApi { kSchedulerPlugins, kWorkload };

// Whether the apiserver serves `plural` in the group version at `path` ("/apis/g/v").
inline bool ApiServed(client::Client& client, const std::string& path, const std::string& plural) {
  try {
    const nlohmann::json list = client.Get(path);
    for (const nlohmann::json& r : list["resources"]) {
      if (r["name"] == plural) return true;
    }
  } catch (const client::ApiError&) {
  }
  return false;
}

inline constexpr char kPodGroupCrd[] = "podgroups.scheduling.x-k8s.io";
inline constexpr char kCrdPath[] = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

// Installs scheduler-plugins' PodGroup CRD from the chart's copy (replacing an older schema);
// returns once it is served.
inline void InstallPodGroupCrd(client::Client& client) {
  ASSERT_NO_THROW(packaging::ApplyPodGroupCrd(client));
  ASSERT_TRUE(Eventually(
      [&] { return ApiServed(client, "/apis/scheduling.x-k8s.io/v1alpha1", "podgroups"); },
      std::chrono::seconds(60)))
      << kPodGroupCrd << " is not served";
}

class GangTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  void SetUp() override {
    client_ = AdminClient();
    ns_ = std::make_unique<TestNamespace>(client_, "gang");
    nodes_ = std::make_unique<TestNodes>(client_);
  }
  void TearDown() override {
    if (scheduler_ && scheduler_->Running()) scheduler_->Stop(SIGTERM, std::chrono::seconds(10));
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
    auto path = WriteTempFile("gang-config.yaml", config);
    scheduler_ = std::make_unique<ChildProcess>();
    scheduler_->Start({BinaryPath("berth-scheduler"), "--kubeconfig", ClusterDir() + "/kubeconfig",
                       "--config", path, "--v", "2", "--bind-address", "127.0.0.1", "--secure-port",
                       std::to_string(FreePort())},
                      path + ".log");
  }

  std::string PodsPath() const { return client::PodsResource().Path(ns_->name()); }
  std::string GroupsPath() const {
    return (api_ == GangApi::kWorkload ? client::WorkloadPodGroupsResource()
                                       : client::PodGroupsResource())
        .Path(ns_->name());
  }

  // A gang of `min_member` in the API under test.
  void Group(const std::string& name, int min_member) {
    if (api_ == GangApi::kWorkload) {
      client_->Post(GroupsPath(),
                    {{"apiVersion", "scheduling.k8s.io/v1beta1"},
                     {"kind", "PodGroup"},
                     {"metadata", {{"name", name}}},
                     {"spec", {{"schedulingPolicy", {{"gang", {{"minCount", min_member}}}}}}}});
      return;
    }
    client_->Post(GroupsPath(), {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                 {"kind", "PodGroup"},
                                 {"metadata", {{"name", name}}},
                                 {"spec", {{"minMember", min_member}}}});
  }

  // A pod on this test's nodes requesting `cpu`, in `group` (joined as the API under test has it)
  // unless that is empty.
  void Pod(const std::string& name, const std::string& group, const std::string& cpu,
           bool gated = false) {
    json pod = PodManifest(ns_->name(), name, "berth-scheduler", cpu, "64Mi");
    pod["spec"]["nodeSelector"] = {{"berth-it", nodes_->id()}};
    if (!group.empty() && api_ == GangApi::kWorkload) {
      pod["spec"]["schedulingGroup"] = {{"podGroupName", group}};
    } else if (!group.empty()) {
      pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = group;
    }
    if (gated) pod["spec"]["schedulingGates"] = {{{"name", "example.com/hold"}}};
    client_->Post(PodsPath(), pod);
  }

  // The scenarios both APIs are tested with. A gang "train" of 4 one-CPU pods on room for 3: none
  // binds, each says its gang is why; then a node for the 4th, and all 4 bind.
  void ExpectAGangLargerThanTheClusterToBindNothing() {
    nodes_->Add("0", "3", "8Gi");
    StartScheduler(60);
    Group("train", 4);
    for (int i = 0; i < 4; i++) Pod("train-" + std::to_string(i), "train", "1");
    const std::string gang = "pod group \"" + ns_->name() + "/train\"";
    ASSERT_TRUE(Eventually([&] { return AllConditionsMention("train-", 4, gang); },
                           std::chrono::seconds(30)))
        << Condition("train-0") << "\n"
        << Condition("train-3");
    EXPECT_TRUE(
        Eventually([&] { return GroupEventContains("train", "3 of 4 required pods placed"); },
                   std::chrono::seconds(30)));
    EXPECT_EQ(Bound("train-"), 0);
  }
  void ExpectTheWholeGangToBindOnceANodeIsAdded() {
    nodes_->Add("1", "1", "8Gi");
    EXPECT_TRUE(Eventually([&] { return Bound("train-") == 4; }, std::chrono::seconds(30)))
        << Bound("train-");
  }
  // A gang of 8 whose minimum is 6, on room for 6: those 6 bind, the other 2 wait for room.
  void ExpectTheSixOfEightThatFitToBind() {
    nodes_->Add("0", "6", "8Gi");
    StartScheduler(60);
    Group("workers", 6);
    for (int i = 0; i < 8; i++) Pod("w-" + std::to_string(i), "workers", "1");
    ASSERT_TRUE(Eventually([&] { return Bound("w-") == 6; }, std::chrono::seconds(30)))
        << Bound("w-");
    std::this_thread::sleep_for(std::chrono::seconds(3));
    EXPECT_EQ(Bound("w-"), 6);
    EXPECT_EQ(PendingWith("w-", "Insufficient cpu"), 2);
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

  // The message of the pod's PodScheduled=False condition; empty when it has none.
  std::string Condition(const std::string& pod) {
    json object = client_->Get(PodsPath() + "/" + pod);
    for (const json& c : object["status"].value("conditions", json::array())) {
      if (c["type"] == "PodScheduled" && c["status"] == "False") return c.value("message", "");
    }
    return "";
  }

  // Whether pods <prefix>0 .. <prefix><n-1> all have a PodScheduled=False condition mentioning
  // `text`.
  bool AllConditionsMention(const std::string& prefix, int n, const std::string& text) {
    for (int i = 0; i < n; i++) {
      if (Condition(prefix + std::to_string(i)).find(text) == std::string::npos) return false;
    }
    return true;
  }
  // How many pending pods whose name starts with `prefix` have a condition mentioning `text`.
  int PendingWith(const std::string& prefix, const std::string& text) {
    int n = 0;
    for (const auto& [pod, node] : Placement(prefix)) {
      if (node.empty()) n += Condition(pod).find(text) != std::string::npos;
    }
    return n;
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

  GangApi api_ = GangApi::kSchedulerPlugins;
  std::shared_ptr<client::Client> client_;
  std::unique_ptr<TestNamespace> ns_;
  std::unique_ptr<TestNodes> nodes_;
  std::unique_ptr<ChildProcess> scheduler_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_INTEGRATION_GANG_FIXTURE_H_
