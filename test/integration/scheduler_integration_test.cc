// The real berth-scheduler binary against the local control plane: pods are bound where they
// must be, other schedulers' pods are left alone, unschedulable pods get the event and condition
// and are bound once a node fits.

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/client/client.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth {
namespace {

using namespace std::chrono_literals;
using testing::AdminClient;
using testing::Eventually;
using testing::PodManifest;
using testing::TestNamespace;
using testing::TestNodes;

class SchedulerIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ns_ = std::make_unique<TestNamespace>(client_, "sched");
    nodes_ = std::make_unique<TestNodes>(client_);
  }
  void TearDown() override {
    if (scheduler_ && scheduler_->Running()) scheduler_->Stop(SIGTERM, 10s);
    if (HasFailure() && scheduler_) {
      std::cerr << "---- berth-scheduler log ----\n" << scheduler_->Log() << "\n";
    }
  }

  void StartScheduler(const std::string& config_yaml = "") {
    std::string config = config_yaml.empty() ? "apiVersion: kubescheduler.config.k8s.io/v1\n"
                                               "kind: KubeSchedulerConfiguration\n"
                                               "leaderElection:\n  leaderElect: false\n"
                                             : config_yaml;
    auto config_path = testing::WriteTempFile("config.yaml", config);
    scheduler_ = std::make_unique<testing::ChildProcess>();
    scheduler_->Start({testing::BinaryPath("berth-scheduler"), "--kubeconfig",
                       testing::ClusterDir() + "/kubeconfig", "--config", config_path, "--v", "2",
                       "--bind-address", "127.0.0.1:" + std::to_string(testing::FreePort())},
                      config_path + ".log");
  }

  nlohmann::json Pod(const std::string& name, const std::string& cpu = "100m",
                     const std::string& scheduler = "berth-scheduler") {
    auto pod = PodManifest(ns_->name(), name, scheduler, cpu, "64Mi");
    pod["spec"]["nodeSelector"] = {{"berth-it", nodes_->id()}};
    return pod;
  }

  std::string PodsPath() const { return client::PodsResource().Path(ns_->name()); }

  // name -> nodeName ("" when unbound) of every pod in the namespace.
  std::map<std::string, std::string> Placement() {
    std::map<std::string, std::string> out;
    auto list = client_->Get(PodsPath());
    for (const auto& item : list["items"]) {
      out[item["metadata"]["name"].get<std::string>()] = item["spec"].value("nodeName", "");
    }
    return out;
  }

  std::string NodeOf(const std::string& pod) {
    return client_->Get(PodsPath() + "/" + pod)["spec"].value("nodeName", "");
  }

  bool WaitBound(const std::string& pod, std::chrono::milliseconds timeout = 30s) {
    return Eventually([&] { return !NodeOf(pod).empty(); }, timeout);
  }

  std::shared_ptr<client::Client> client_;
  std::unique_ptr<TestNamespace> ns_;
  std::unique_ptr<TestNodes> nodes_;
  std::unique_ptr<testing::ChildProcess> scheduler_;
};

TEST_F(SchedulerIntegration, BindsTwoHundredPodsOverTenNodesWithoutOvercommit) {
  std::map<std::string, int64_t> capacity_milli;
  for (int i = 0; i < 10; i++) {
    // Uneven nodes: 2..6.5 cores; 200 pods x 100m = 20 cores of the 42.5 available.
    std::string cpu = std::to_string(2000 + 500 * i) + "m";
    capacity_milli[nodes_->Add("n" + std::to_string(i), cpu, "32Gi")] = 2000 + 500 * i;
  }
  StartScheduler();
  testing::CreateMany(*client_, PodsPath(), 200,
                      [&](int i) { return Pod("p" + std::to_string(i), i % 2 ? "100m" : "150m"); });

  ASSERT_TRUE(Eventually(
      [&] {
        for (const auto& [pod, node] : Placement()) {
          if (node.empty()) return false;
        }
        return true;
      },
      120s))
      << "not every pod was bound";
  std::map<std::string, int64_t> used;
  auto list = client_->Get(PodsPath());
  ASSERT_EQ(list["items"].size(), 200u);
  for (const auto& item : list["items"]) {
    auto pod = api::DecodePod(item);
    ASSERT_TRUE(capacity_milli.count(pod.spec.node_name)) << pod.spec.node_name;
    used[pod.spec.node_name] += pod.requests.milli_cpu;
  }
  for (const auto& [node, milli] : used) {
    EXPECT_LE(milli, capacity_milli[node]) << node << " is over-committed";
  }
  EXPECT_GE(used.size(), 5u) << "LeastAllocated scoring should spread pods over the nodes";
}

TEST_F(SchedulerIntegration, LeavesOtherSchedulersPodsAlone) {
  nodes_->Add("n0", "4", "8Gi");
  StartScheduler();
  client_->Post(PodsPath(), Pod("theirs", "100m", "default-scheduler"));
  client_->Post(PodsPath(), Pod("ours"));
  ASSERT_TRUE(WaitBound("ours"));
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(NodeOf("theirs"), "");
  auto theirs = client_->Get(PodsPath() + "/theirs");
  EXPECT_FALSE(theirs["status"].contains("conditions"))
      << "berth-scheduler must not write conditions on other schedulers' pods";
}

TEST_F(SchedulerIntegration, UnschedulablePodGetsEventAndConditionThenBindsWhenNodeFits) {
  nodes_->Add("small-a", "1", "4Gi");
  nodes_->Add("small-b", "1", "4Gi");
  StartScheduler();
  client_->Post(PodsPath(), Pod("big", "2"));

  std::string message;
  ASSERT_TRUE(Eventually(
      [&] {
        auto pod = client_->Get(PodsPath() + "/big");
        for (const auto& c : pod["status"].value("conditions", nlohmann::json::array())) {
          if (c["type"] == "PodScheduled" && c["status"] == "False" &&
              c["reason"] == "Unschedulable") {
            message = c.value("message", "");
            return true;
          }
        }
        return false;
      },
      30s))
      << "no PodScheduled=False condition";
  EXPECT_EQ(message.rfind("0/", 0), 0u) << message;
  EXPECT_NE(message.find(" nodes are available: "), std::string::npos) << message;
  EXPECT_NE(message.find("2 Insufficient cpu"), std::string::npos) << message;
  EXPECT_EQ(message.back(), '.') << message;

  bool event_found = Eventually(
      [&] {
        auto events = client_->Get(client::EventsResource().Path(ns_->name()));
        for (const auto& e : events["items"]) {
          if (e["regarding"]["name"] == "big" && e["reason"] == "FailedScheduling" &&
              e["type"] == "Warning" && e.value("note", "") == message &&
              e["reportingController"] == "berth-scheduler") {
            return true;
          }
        }
        return false;
      },
      30s);
  EXPECT_TRUE(event_found) << "no FailedScheduling event with the condition's message";

  // A node that fits appears: the NodeAdd event (not the 5-minute flush) moves the pod.
  auto added = std::chrono::steady_clock::now();
  std::string big = nodes_->Add("big", "4", "8Gi");
  ASSERT_TRUE(WaitBound("big", 20s));
  EXPECT_EQ(NodeOf("big"), big);
  EXPECT_LT(std::chrono::steady_clock::now() - added, 20s);

  bool scheduled_event = Eventually(
      [&] {
        auto events = client_->Get(client::EventsResource().Path(ns_->name()));
        for (const auto& e : events["items"]) {
          if (e["regarding"]["name"] == "big" && e["reason"] == "Scheduled" &&
              e.value("note", "") == "Successfully assigned " + ns_->name() + "/big to " + big) {
            return true;
          }
        }
        return false;
      },
      15s);
  EXPECT_TRUE(scheduled_event);
}

TEST_F(SchedulerIntegration, HonoursTaintsNodeAffinityAndHostPorts) {
  std::string tainted = nodes_->Add("tainted", "8", "16Gi", [](nlohmann::json& n) {
    n["spec"]["taints"] = {{{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}};
  });
  std::string zone_a = nodes_->Add("zone-a", "2", "4Gi", [](nlohmann::json& n) {
    n["metadata"]["labels"]["topology.kubernetes.io/zone"] = "a";
  });
  std::string zone_b = nodes_->Add("zone-b", "2", "4Gi", [](nlohmann::json& n) {
    n["metadata"]["labels"]["topology.kubernetes.io/zone"] = "b";
  });
  StartScheduler();

  // Without a toleration nothing lands on the tainted node, however roomy it is.
  for (int i = 0; i < 6; i++) client_->Post(PodsPath(), Pod("plain-" + std::to_string(i)));
  // With the toleration and required affinity to it, it must land there.
  auto tolerant = Pod("tolerant");
  tolerant["spec"]["tolerations"] = {
      {{"key", "dedicated"}, {"operator", "Equal"}, {"value", "gpu"}, {"effect", "NoSchedule"}}};
  tolerant["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms",
       {{{"matchExpressions",
          {{{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {tainted}}}}}}}}};
  client_->Post(PodsPath(), tolerant);
  // Required zone b.
  auto in_b = Pod("in-zone-b");
  in_b["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms",
       {{{"matchExpressions",
          {{{"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", {"b"}}}}}}}}};
  client_->Post(PodsPath(), in_b);
  // Two pods wanting the same host port on zone a: only one fits there.
  for (const char* name : {"port-1", "port-2"}) {
    auto p = Pod(name);
    p["spec"]["nodeSelector"]["topology.kubernetes.io/zone"] = "a";
    p["spec"]["containers"][0]["ports"] = {{{"containerPort", 80}, {"hostPort", 8080}}};
    client_->Post(PodsPath(), p);
  }

  ASSERT_TRUE(WaitBound("tolerant"));
  ASSERT_TRUE(WaitBound("in-zone-b"));
  EXPECT_EQ(NodeOf("tolerant"), tainted);
  EXPECT_EQ(NodeOf("in-zone-b"), zone_b);
  for (int i = 0; i < 6; i++) {
    std::string pod = "plain-" + std::to_string(i);
    ASSERT_TRUE(WaitBound(pod));
    EXPECT_NE(NodeOf(pod), tainted) << pod << " landed on a node whose taint it does not tolerate";
  }
  ASSERT_TRUE(
      Eventually([&] { return !NodeOf("port-1").empty() || !NodeOf("port-2").empty(); }, 30s));
  std::this_thread::sleep_for(2s);
  int bound = !NodeOf("port-1").empty() + !NodeOf("port-2").empty();
  EXPECT_EQ(bound, 1) << "two pods with host port 8080 on the one zone-a node";
  std::string pending = NodeOf("port-1").empty() ? "port-1" : "port-2";
  auto pod = client_->Get(PodsPath() + "/" + pending);
  std::string message;
  for (const auto& c : pod["status"].value("conditions", nlohmann::json::array())) {
    if (c["type"] == "PodScheduled") message = c.value("message", "");
  }
  EXPECT_NE(message.find("1 node(s) didn't have free ports for the requested pod ports"),
            std::string::npos)
      << message;
  // Other nodes of the shared cluster (the demo's, say) may add to the counts of this reason.
  EXPECT_NE(message.find(" node(s) had untolerated taint {dedicated: gpu}"), std::string::npos)
      << message;
}

// Required hostname anti-affinity among six replicas over four nodes: one replica per node, and
// the two left over stay Pending with the reason kube-scheduler gives.
TEST_F(SchedulerIntegration, RequiredAntiAffinitySpreadsReplicasOnePerNode) {
  std::set<std::string> names;
  for (int i = 0; i < 4; i++) names.insert(nodes_->Add("n" + std::to_string(i), "4", "8Gi"));
  StartScheduler();
  const std::string app = "spread-" + nodes_->id();
  for (int i = 0; i < 6; i++) {
    auto pod = Pod("r" + std::to_string(i));
    pod["metadata"]["labels"]["app"] = app;
    pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {{"labelSelector", {{"matchLabels", {{"app", app}}}}},
         {"topologyKey", "kubernetes.io/hostname"}}};
    client_->Post(PodsPath(), pod);
  }

  auto bound = [&] {
    std::map<std::string, std::string> out;
    for (const auto& [pod, node] : Placement()) {
      if (!node.empty()) out[pod] = node;
    }
    return out;
  };
  ASSERT_TRUE(Eventually([&] { return bound().size() == 4; }, 60s)) << bound().size();
  const std::string reason = "node(s) didn't match pod anti-affinity rules";
  std::map<std::string, std::string> notes;
  EXPECT_TRUE(Eventually(
      [&] {
        notes.clear();
        auto events = client_->Get(client::EventsResource().Path(ns_->name()));
        for (const auto& e : events["items"]) {
          if (e["reason"] != "FailedScheduling") continue;
          const std::string note = e.value("note", "");
          if (note.find(reason) != std::string::npos) {
            notes[e["regarding"]["name"].get<std::string>()] = note;
          }
        }
        return notes.size() == 2;
      },
      30s))
      << ::testing::PrintToString(notes);
  // Nothing more gets bound later: a seventh placement would break the rule.
  std::this_thread::sleep_for(2s);
  const auto placed = bound();
  ASSERT_EQ(placed.size(), 4u);
  std::set<std::string> used;
  for (const auto& [pod, node] : placed) {
    EXPECT_TRUE(names.count(node)) << node;
    used.insert(node);
    EXPECT_FALSE(notes.count(pod)) << pod << " is bound yet has the anti-affinity event";
  }
  EXPECT_EQ(used.size(), 4u) << "two replicas share a node";
}

// Required hostname affinity to a running pod puts the pods on that pod's node.
TEST_F(SchedulerIntegration, RequiredPodAffinityFollowsTheTargetPod) {
  for (int i = 0; i < 4; i++) nodes_->Add("n" + std::to_string(i), "4", "8Gi");
  StartScheduler();
  const std::string role = "db-" + nodes_->id();
  auto db = Pod("db");
  db["metadata"]["labels"]["role"] = role;
  client_->Post(PodsPath(), db);
  ASSERT_TRUE(WaitBound("db"));
  const std::string target = NodeOf("db");

  for (int i = 0; i < 4; i++) {
    auto web = Pod("web" + std::to_string(i));
    web["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {{"labelSelector", {{"matchLabels", {{"role", role}}}}},
         {"topologyKey", "kubernetes.io/hostname"}}};
    client_->Post(PodsPath(), web);
  }
  for (int i = 0; i < 4; i++) {
    const std::string name = "web" + std::to_string(i);
    ASSERT_TRUE(WaitBound(name)) << name;
    EXPECT_EQ(NodeOf(name), target) << name;
  }
}

// Fields Berth has no plugin for: the pods stay Pending with an event and a condition naming the
// field, while a plain pod beside them is bound. The apiserver accepts a claim or a PVC that does
// not exist, so none is created.
TEST_F(SchedulerIntegration, PodsUsingUnsupportedFieldsStayPendingNamingTheField) {
  nodes_->Add("n0", "4", "8Gi");
  StartScheduler();
  auto claims = Pod("claims");
  claims["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimName", "absent-claim"}}};
  client_->Post(PodsPath(), claims);
  auto iscsi = Pod("iscsi");
  iscsi["spec"]["volumes"] = {{{"name", "disk"},
                               {"iscsi",
                                {{"targetPortal", "192.0.2.1:3260"},
                                 {"iqn", "iqn.2001-04.com.example:disk"},
                                 {"lun", 0}}}}};
  client_->Post(PodsPath(), iscsi);
  auto pvc = Pod("pvc");
  pvc["spec"]["volumes"] = {
      {{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "absent-claim"}}}}};
  client_->Post(PodsPath(), pvc);
  client_->Post(PodsPath(), Pod("plain"));
  ASSERT_TRUE(WaitBound("plain"));

  const std::map<std::string, std::string> fields = {
      {"claims", "spec.resourceClaims (dynamic resource allocation)"},
      {"iscsi", "spec.volumes[0].iscsi (volume conflicts)"},
      {"pvc", "spec.volumes[0].persistentVolumeClaim (persistent volume binding)"},
  };
  for (const auto& [name, field] : fields) {
    SCOPED_TRACE(name);
    const std::string reason = " nodes are available: pod uses " + field +
                               ", which berth-scheduler does not support yet; use the default "
                               "scheduler for this pod.";
    // "0/N": other checkouts' tests and the demo may have nodes in the shared cluster.
    auto names_field = [&](const std::string& message) {
      return message.rfind("0/", 0) == 0 && message.size() > reason.size() &&
             message.compare(message.size() - reason.size(), reason.size(), reason) == 0;
    };
    std::string condition;
    EXPECT_TRUE(Eventually(
        [&] {
          auto pod = client_->Get(PodsPath() + "/" + name);
          for (const auto& c : pod["status"].value("conditions", nlohmann::json::array())) {
            if (c["type"] == "PodScheduled" && c["status"] == "False" &&
                c["reason"] == "Unschedulable") {
              condition = c.value("message", "");
              return names_field(condition);
            }
          }
          return false;
        },
        30s))
        << condition;
    std::vector<std::string> notes;
    EXPECT_TRUE(Eventually(
        [&] {
          notes.clear();
          auto events = client_->Get(client::EventsResource().Path(ns_->name()));
          for (const auto& e : events["items"]) {
            if (e["regarding"]["name"] != name || e["reason"] != "FailedScheduling") continue;
            notes.push_back(e.value("note", ""));
            if (e["type"] == "Warning" && names_field(notes.back())) return true;
          }
          return false;
        },
        30s))
        << ::testing::PrintToString(notes);
    EXPECT_EQ(NodeOf(name), "");
  }
}

TEST_F(SchedulerIntegration, SecondProfileWithItsOwnSchedulerNameWorks) {
  nodes_->Add("n0", "4", "8Gi");
  StartScheduler(
      "apiVersion: kubescheduler.config.k8s.io/v1\n"
      "kind: KubeSchedulerConfiguration\n"
      "leaderElection:\n  leaderElect: false\n"
      "profiles:\n"
      "- schedulerName: berth-scheduler\n"
      "- schedulerName: berth-packer\n"
      "  plugins:\n"
      "    score:\n"
      "      disabled:\n      - name: NodeResourcesBalancedAllocation\n"
      "  pluginConfig:\n"
      "  - name: NodeResourcesFit\n"
      "    args:\n"
      "      scoringStrategy:\n"
      "        type: MostAllocated\n");
  client_->Post(PodsPath(), Pod("a", "100m", "berth-packer"));
  client_->Post(PodsPath(), Pod("b", "100m", "berth-scheduler"));
  client_->Post(PodsPath(), Pod("c", "100m", "someone-else"));
  EXPECT_TRUE(WaitBound("a"));
  EXPECT_TRUE(WaitBound("b"));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(NodeOf("c"), "");
}

TEST(SchedulerCommandLine, MalformedConfigExitsNonZeroNamingTheField) {
  auto path = testing::WriteTempFile("bad.yaml",
                                     "apiVersion: kubescheduler.config.k8s.io/v1\n"
                                     "kind: KubeSchedulerConfiguration\n"
                                     "profiles:\n"
                                     "- schedulerName: berth-scheduler\n"
                                     "  plugins:\n"
                                     "    filter:\n"
                                     "      enabled:\n"
                                     "      - name: NoSuchPlugin\n");
  testing::ChildProcess proc;
  // An unreachable server: the config must be rejected before any connection is attempted.
  proc.Start({testing::BinaryPath("berth-scheduler"), "--config", path, "--kubeconfig",
              "/nonexistent/kubeconfig"},
             path + ".log");
  int code = proc.WaitExit(10s);
  EXPECT_NE(code, 0);
  EXPECT_NE(code, -1) << "did not exit";
  std::string log = proc.Log();
  EXPECT_NE(log.find(path), std::string::npos) << log;
  EXPECT_NE(log.find("profiles[0].plugins.filter.enabled[0].name"), std::string::npos) << log;
  EXPECT_NE(log.find("NoSuchPlugin"), std::string::npos) << log;
  EXPECT_NE(log.find("NodeResourcesFit"), std::string::npos) << "known plugins listed: " << log;
}

TEST(SchedulerCommandLine, BadPluginArgsExitNonZeroBeforeConnecting) {
  auto path = testing::WriteTempFile("badargs.yaml",
                                     "apiVersion: kubescheduler.config.k8s.io/v1\n"
                                     "kind: KubeSchedulerConfiguration\n"
                                     "leaderElection:\n  leaderElect: false\n"
                                     "profiles:\n"
                                     "- pluginConfig:\n"
                                     "  - name: NodeResourcesFit\n"
                                     "    args:\n"
                                     "      scoringStrategy:\n"
                                     "        type: Fastest\n");
  testing::ChildProcess proc;
  proc.Start({testing::BinaryPath("berth-scheduler"), "--config", path, "--kubeconfig",
              testing::ClusterDir() + "/kubeconfig-wrong-ca"},
             path + ".log");
  int code = proc.WaitExit(10s);
  EXPECT_NE(code, 0);
  EXPECT_NE(code, -1);
  std::string log = proc.Log();
  EXPECT_NE(log.find("scoringStrategy.type"), std::string::npos) << log;
  EXPECT_EQ(log.find("certificate"), std::string::npos) << "connected before validating: " << log;
}

}  // namespace
}  // namespace berth
