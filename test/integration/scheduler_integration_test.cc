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
#include "test/integration/scheduler_fixture.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth {
namespace {

using namespace std::chrono_literals;
using testing::AdminClient;
using testing::Eventually;
using testing::PodManifest;
using testing::SchedulerIntegration;
using testing::TestNamespace;
using testing::TestNodes;

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
  EXPECT_NE(message.find(" node(s) had untolerated taint(s)"), std::string::npos) << message;
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

nlohmann::json AffinityTerm(const std::string& app, const std::string& topology_key) {
  return {{"labelSelector", {{"matchLabels", {{"app", app}}}}}, {"topologyKey", topology_key}};
}

// Upstream's behaviour: at most one replica per node, so of 6 replicas over 4 nodes 4 bind on
// distinct nodes and 2 stay Pending, each node counted under the anti-affinity reason.
TEST_F(SchedulerIntegration, RequiredAntiAffinityBindsOneReplicaPerNodeAndLeavesTheRestPending) {
  for (int i = 0; i < 4; i++) nodes_->Add("n" + std::to_string(i), "8", "16Gi");
  StartScheduler();
  for (int i = 0; i < 6; i++) {
    auto pod = AppPod("replica-" + std::to_string(i), "replica");
    pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        AffinityTerm("replica", "kubernetes.io/hostname")};
    client_->Post(PodsPath(), pod);
  }
  std::vector<std::string> pending;
  ASSERT_TRUE(Eventually(
      [&] {
        pending.clear();
        return BoundWithApp("replica", &pending).size() == 4;
      },
      60s));
  std::set<std::string> nodes;
  for (const auto& [pod, node] : BoundWithApp("replica")) nodes.insert(node);
  EXPECT_EQ(nodes.size(), 4u) << "two replicas share a node";
  ASSERT_EQ(pending.size(), 2u);
  const std::string reason = "4 node(s) didn't match pod anti-affinity rules";
  for (const std::string& pod : pending) {
    std::string message = UnschedulableMessage(pod, reason);
    EXPECT_NE(message.find(reason), std::string::npos) << pod << ": " << message;
  }
  std::set<std::string> with_event;
  EXPECT_TRUE(Eventually(
      [&] {
        auto events = client_->Get(client::EventsResource().Path(ns_->name()));
        for (const auto& e : events["items"]) {
          if (e["reason"] == "FailedScheduling" &&
              e.value("note", "").find(reason) != std::string::npos) {
            with_event.insert(e["regarding"]["name"].get<std::string>());
          }
        }
        return with_event == std::set<std::string>(pending.begin(), pending.end());
      },
      30s))
      << ::testing::PrintToString(with_event);
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(BoundWithApp("replica").size(), 4u);
}

// Zones may differ by at most one matching pod, however uneven the zones' node counts: with 4
// nodes in z1 and one in each of z2 and z3, spreading by node alone would put most pods in z1.
TEST_F(SchedulerIntegration, ZoneSpreadWithMaxSkewOnePlacesNinePodsThreePerZone) {
  std::map<std::string, std::string> zone_of;
  auto add = [&](const std::string& suffix, const std::string& zone) {
    zone_of[nodes_->Add(suffix, "8", "16Gi", [&](nlohmann::json& n) {
      n["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone;
    })] = zone;
  };
  for (int i = 0; i < 4; i++) add("z1-" + std::to_string(i), "z1");
  add("z2-0", "z2");
  add("z3-0", "z3");
  StartScheduler();
  for (int i = 0; i < 9; i++) {
    auto pod = AppPod("spread-" + std::to_string(i), "spread");
    pod["spec"]["topologySpreadConstraints"] = {
        {{"maxSkew", 1},
         {"topologyKey", "topology.kubernetes.io/zone"},
         {"whenUnsatisfiable", "DoNotSchedule"},
         {"labelSelector", {{"matchLabels", {{"app", "spread"}}}}}}};
    client_->Post(PodsPath(), pod);
  }
  ASSERT_TRUE(Eventually([&] { return BoundWithApp("spread").size() == 9; }, 60s));
  std::map<std::string, int> per_zone;
  for (const auto& [pod, node] : BoundWithApp("spread")) per_zone[zone_of.at(node)]++;
  EXPECT_EQ(per_zone, (std::map<std::string, int>{{"z1", 3}, {"z2", 3}, {"z3", 3}}));
}

// Required affinity puts pods in their target's topology domain; a pod whose terms match no pod
// (and not itself) fits nowhere.
TEST_F(SchedulerIntegration, RequiredPodAffinityCoLocatesWithItsTarget) {
  for (int i = 0; i < 5; i++) nodes_->Add("n" + std::to_string(i), "8", "16Gi");
  StartScheduler();
  client_->Post(PodsPath(), AppPod("db", "db"));
  ASSERT_TRUE(WaitBound("db"));
  const std::string db_node = NodeOf("db");
  for (int i = 0; i < 3; i++) {
    auto pod = AppPod("cache-" + std::to_string(i), "cache");
    pod["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        AffinityTerm("db", "kubernetes.io/hostname")};
    client_->Post(PodsPath(), pod);
  }
  auto orphan = AppPod("orphan", "orphan");
  orphan["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      AffinityTerm("absent", "kubernetes.io/hostname")};
  client_->Post(PodsPath(), orphan);
  for (int i = 0; i < 3; i++) {
    std::string pod = "cache-" + std::to_string(i);
    ASSERT_TRUE(WaitBound(pod));
    EXPECT_EQ(NodeOf(pod), db_node) << pod;
  }
  std::string message = UnschedulableMessage("orphan", "5 node(s) didn't match pod affinity rules");
  EXPECT_NE(message.find("5 node(s) didn't match pod affinity rules"), std::string::npos)
      << message;
  EXPECT_EQ(NodeOf("orphan"), "");
}

// Pods a ReplicaSet owns spread over nodes and zones by the system default constraints, with no
// constraint of their own. The same pods without an owner all go to the roomier node, which
// scores higher for every pod of the test: that is what spreading overrides.
TEST_F(SchedulerIntegration, ReplicaSetPodsSpreadByTheSystemDefaultConstraints) {
  const std::string big = nodes_->Add("big", "64", "128Gi", [](nlohmann::json& n) {
    n["metadata"]["labels"]["topology.kubernetes.io/zone"] = "z1";
  });
  const std::string small = nodes_->Add("small", "4", "8Gi", [](nlohmann::json& n) {
    n["metadata"]["labels"]["topology.kubernetes.io/zone"] = "z2";
  });
  StartScheduler();
  for (int i = 0; i < 6; i++)
    client_->Post(PodsPath(), AppPod("solo-" + std::to_string(i), "solo"));
  ASSERT_TRUE(Eventually([&] { return BoundWithApp("solo").size() == 6; }, 60s));
  for (const auto& [pod, node] : BoundWithApp("solo")) EXPECT_EQ(node, big) << pod;
  client_->Delete(PodsPath() + "?labelSelector=app%3Dsolo&gracePeriodSeconds=0");
  ASSERT_TRUE(Eventually([&] { return BoundWithApp("solo").empty(); }, 30s));

  // The controller-manager here runs no ReplicaSet controller, so the ReplicaSet creates no pods:
  // the test does, owned by it as that controller's would be.
  const nlohmann::json replica_set = client_->Post(
      client::ReplicaSetsResource().Path(ns_->name()),
      {{"apiVersion", "apps/v1"},
       {"kind", "ReplicaSet"},
       {"metadata", {{"name", "web"}}},
       {"spec",
        {{"replicas", 0},
         {"selector", {{"matchLabels", {{"app", "web"}}}}},
         {"template",
          {{"metadata", {{"labels", {{"app", "web"}}}}},
           {"spec",
            {{"containers", {{{"name", "app"}, {"image", "registry.k8s.io/pause:3.10"}}}}}}}}}}});
  for (int i = 0; i < 6; i++) {
    auto pod = AppPod("web-" + std::to_string(i), "web");
    pod["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"},
                                           {"kind", "ReplicaSet"},
                                           {"name", "web"},
                                           {"uid", replica_set["metadata"]["uid"]},
                                           {"controller", true}}};
    client_->Post(PodsPath(), pod);
  }
  ASSERT_TRUE(Eventually([&] { return BoundWithApp("web").size() == 6; }, 60s));
  std::map<std::string, int> per_node;
  for (const auto& [pod, node] : BoundWithApp("web")) per_node[node]++;
  EXPECT_GE(per_node[small], 2) << "the ReplicaSet's pods piled onto " << big;
}

}  // namespace
}  // namespace berth
