// Differential test against kube-scheduler: a seeded cluster of 50 nodes in 3 zones and a few
// hundred pods using inter-pod affinity, anti-affinity and topology spread constraints are
// scheduled by kube-scheduler (the pinned release) in one namespace, then, once those pods are
// gone, the identical pods by berth-scheduler in another. Every placement either makes must keep
// every required constraint (an independent checker, e2e/constraint_check.h), and for the groups
// whose outcome the generator forces, the Pending pods and their whole FailedScheduling messages
// must be the same. Both run DefaultPreemption; every pod has the same priority, so the messages
// end with its "preemption: ..." account of why it cannot help. How many placements agree is
// printed; scores leave ties that each scheduler breaks its own way, so that number is not
// asserted.
//
// Pods go in one at a time, each created once the previous one is bound or reported
// unschedulable, so both schedulers see the same sequence; a forced group is built so that this
// order fixes which of its pods stay Pending, whatever node each earlier pod chose among equals.
//
// BERTH_DIFF_SEED=<n> replays another cluster and workload; the seed is printed.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e/constraint_check.h"
#include "e2e/diff.h"
#include "e2e/harness.h"
#include "pkg/client/client.h"
#include "test/testing/cluster.h"
#include "test/testing/kube_scheduler.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kZone = "topology.kubernetes.io/zone";
constexpr const char* kHostname = "kubernetes.io/hostname";
constexpr const char* kPoolLabel = "berth-diff-pool";
constexpr int kNodes = 50;
const std::vector<std::string> kZones = {"zone-a", "zone-b", "zone-c"};

struct NodeSpec {
  std::string suffix, zone, pool, cpu;
};

// Pods "<name>-<i>" labelled group=<name>, all selecting the nodes of one pool.
struct Group {
  std::string name;
  std::string pool;
  int size = 0;
  std::string cpu = "100m";
  // Whether the generator fixes the outcome: which pods stay Pending (expected_pending, the
  // group's last ones) and why, whatever equal nodes earlier pods chose.
  bool forced = true;
  int expected_pending = 0;
  std::function<void(nlohmann::json& pod)> constrain;
};

struct Workload {
  std::vector<NodeSpec> nodes;
  std::vector<Group> groups;
};

nlohmann::json Term(const std::string& group, const std::string& topology_key) {
  return {{"labelSelector", {{"matchLabels", {{"group", group}}}}}, {"topologyKey", topology_key}};
}

// kind: podAffinity or podAntiAffinity.
void Require(nlohmann::json& pod, const char* kind, const nlohmann::json& term) {
  pod["spec"]["affinity"][kind]["requiredDuringSchedulingIgnoredDuringExecution"].push_back(term);
}

void Prefer(nlohmann::json& pod, const char* kind, int weight, const nlohmann::json& term) {
  pod["spec"]["affinity"][kind]["preferredDuringSchedulingIgnoredDuringExecution"].push_back(
      {{"weight", weight}, {"podAffinityTerm", term}});
}

void Spread(nlohmann::json& pod, const std::string& group, const std::string& topology_key,
            int max_skew, bool hard, int min_domains = 0) {
  nlohmann::json c = {{"maxSkew", max_skew},
                      {"topologyKey", topology_key},
                      {"whenUnsatisfiable", hard ? "DoNotSchedule" : "ScheduleAnyway"},
                      {"labelSelector", {{"matchLabels", {{"group", group}}}}}};
  if (min_domains > 0) c["minDomains"] = min_domains;
  pod["spec"]["topologySpreadConstraints"].push_back(c);
}

// The seeded cluster and pods. Nodes form three pools a pod selects by nodeSelector: "shared"
// (most nodes, all zones) and two small pools, each used by one group only, where a group's
// resources or its own constraints leave some of its pods without a node.
Workload Generate(unsigned seed) {
  std::mt19937 rng(seed);
  auto between = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Workload w;
  const int solo_nodes = between(3, 5);
  const std::string& solo_zone = kZones[between(0, 2)];
  const int tight_nodes = between(3, 4);
  for (int i = 0; i < kNodes; i++) {
    NodeSpec n{"n" + std::to_string(i), kZones[i % 3], "shared", "64"};
    if (i < solo_nodes) {
      n.pool = "solo";
      n.zone = solo_zone;
    } else if (i < solo_nodes + tight_nodes) {
      n.pool = "tight";
      n.cpu = "2";  // Two 900m pods fit, a third does not.
    }
    w.nodes.push_back(n);
  }
  auto add = [&](const std::string& name, const std::string& pool, int size, int pending,
                 std::function<void(nlohmann::json&)> constrain) -> Group& {
    w.groups.push_back({name, pool, size, "100m", true, pending, std::move(constrain)});
    return w.groups.back();
  };

  // Forced: one pod per solo node, the rest find every solo node taken by the group.
  const int solo = solo_nodes + between(1, 3);
  add("solo-anti", "solo", solo, solo - solo_nodes,
      [](nlohmann::json& p) { Require(p, "podAntiAffinity", Term("solo-anti", kHostname)); });
  // Forced: one pod per zone.
  const int zone_anti = 3 + between(1, 2);
  add("zone-anti", "shared", zone_anti, zone_anti - 3,
      [](nlohmann::json& p) { Require(p, "podAntiAffinity", Term("zone-anti", kZone)); });
  // Forced: with fewer zones than minDomains the least domain counts as 0, so each zone takes
  // maxSkew pods.
  const int skew = between(1, 2);
  const int min_domains = between(4, 5);
  const int capped = 3 * skew + between(1, 2);
  add("min-domains", "shared", capped, capped - 3 * skew,
      [=](nlohmann::json& p) { Spread(p, "min-domains", kZone, skew, true, min_domains); });
  // Forced: the spread fills every tight node evenly up to its cpu, two pods each.
  const int tight = 2 * tight_nodes + between(1, 2);
  add("tight-spread", "tight", tight, tight - 2 * tight_nodes, [](nlohmann::json& p) {
    Spread(p, "tight-spread", kHostname, 1, true);
  }).cpu = "900m";
  // Forced: the term selects no pod and not the pod itself.
  const std::string absent_key = between(0, 1) ? kZone : kHostname;
  const int absent = between(2, 3);
  add("absent-peer", "shared", absent, absent,
      [=](nlohmann::json& p) { Require(p, "podAffinity", Term("nobody", absent_key)); });
  // Forced, all bound: the first pod goes anywhere, the others must join it.
  add("self-affinity", "shared", between(3, 6), 0,
      [](nlohmann::json& p) { Require(p, "podAffinity", Term("self-affinity", kHostname)); });
  // Forced, all bound: the solo pods are all in one zone, and these follow them there.
  add("follow-solo", "shared", between(3, 5), 0,
      [](nlohmann::json& p) { Require(p, "podAffinity", Term("solo-anti", kZone)); });
  // Forced, all pending: zone-anti holds every zone.
  const int repelled = between(1, 2);
  add("repelled", "shared", repelled, repelled,
      [](nlohmann::json& p) { Require(p, "podAntiAffinity", Term("zone-anti", kZone)); });
  // Forced, all bound: fewer pods than shared nodes.
  add("host-anti", "shared", between(8, 15), 0,
      [](nlohmann::json& p) { Require(p, "podAntiAffinity", Term("host-anti", kHostname)); });
  const int zone_skew = between(1, 3);
  add("zone-spread", "shared", between(12, 24), 0,
      [=](nlohmann::json& p) { Spread(p, "zone-spread", kZone, zone_skew, true); });
  const int host_skew = between(1, 2);
  const int w0 = between(1, 100);
  add("host-spread", "shared", between(20, 35), 0, [=](nlohmann::json& p) {
    Spread(p, "host-spread", kHostname, host_skew, true, 3);
    Prefer(p, "podAntiAffinity", w0, Term("host-spread", kZone));
  });
  // Preferences only: always bound, anywhere.
  const int w1 = between(1, 100), w2 = between(1, 100);
  add("prefer-together", "shared", between(20, 35), 0, [=](nlohmann::json& p) {
    Prefer(p, "podAffinity", w1, Term("host-anti", kHostname));
    Prefer(p, "podAffinity", w2, Term("prefer-together", kZone));
  });
  const int w3 = between(1, 100);
  add("prefer-apart", "shared", between(20, 35), 0, [=](nlohmann::json& p) {
    Prefer(p, "podAntiAffinity", w3, Term("prefer-apart", kHostname));
  });
  const int soft_skew = between(1, 2);
  add("soft-spread", "shared", between(20, 35), 0, [=](nlohmann::json& p) {
    Spread(p, "soft-spread", kZone, 1, false);
    Spread(p, "soft-spread", kHostname, soft_skew, false);
  });
  const int w4 = between(1, 100);
  add("mixed", "shared", between(20, 35), 0, [=](nlohmann::json& p) {
    Spread(p, "mixed", kZone, 2, true);
    Require(p, "podAntiAffinity", Term("self-affinity", kHostname));
    Prefer(p, "podAffinity", w4, Term("zone-spread", kZone));
  });
  // Not forced: whether a node holds a prefer-apart pod but no host-anti pod depends on where
  // earlier pods went among equal nodes.
  Group& choosy = add("choosy", "shared", between(10, 20), 0, [](nlohmann::json& p) {
    Require(p, "podAffinity", Term("prefer-apart", kHostname));
    Require(p, "podAntiAffinity", Term("host-anti", kHostname));
  });
  choosy.forced = false;
  return w;
}

const Group* GroupOf(const Workload& w, const std::string& pod) {
  for (const auto& g : w.groups) {
    if (pod.rfind(g.name + "-", 0) == 0 &&
        pod.find_first_not_of("0123456789", g.name.size() + 1) == std::string::npos) {
      return &g;
    }
  }
  return nullptr;
}

nlohmann::json MakePod(const Group& g, int i, const std::string& ns, const std::string& scheduler,
                       const std::string& run) {
  auto pod = testing::PodManifest(ns, g.name + "-" + std::to_string(i), scheduler, g.cpu, "64Mi");
  pod["metadata"]["labels"]["group"] = g.name;
  pod["spec"]["nodeSelector"] = {{"berth-it", run}, {kPoolLabel, g.pool}};
  g.constrain(pod);
  return pod;
}

// What one scheduler did with the workload.
struct Outcome {
  std::vector<nlohmann::json> pods;
  std::map<std::string, std::string> node;     // Bound pods.
  std::map<std::string, std::string> pending;  // Pending pods -> their PodScheduled message.
};

Outcome Read(client::Client& client, const std::string& ns) {
  Outcome out;
  const nlohmann::json list = client.Get(client::PodsResource().Path(ns));
  for (const auto& p : list["items"]) {
    out.pods.push_back(p);
    const std::string name = p["metadata"]["name"];
    const std::string node = p["spec"].value("nodeName", "");
    if (!node.empty()) {
      out.node[name] = node;
      continue;
    }
    // The condition's message is the scheduler's last FailedScheduling message for the pod.
    out.pending[name] = PodScheduledMessage(p);
  }
  return out;
}

// Creates the pods one after the other, each once the one before has settled, and returns what
// the scheduler made of them.
Outcome Schedule(client::Client& client, const Workload& w, const std::string& ns,
                 const std::string& scheduler, const std::string& run,
                 const std::function<std::string()>& log) {
  const std::string path = client::PodsResource().Path(ns);
  for (const auto& g : w.groups) {
    for (int i = 0; i < g.size; i++) {
      auto pod = MakePod(g, i, ns, scheduler, run);
      const std::string name = pod["metadata"]["name"];
      std::string pod_path = path;
      pod_path.append("/").append(name);
      client.Post(path, pod);
      if (!testing::Eventually([&] { return Settled(client.Get(pod_path)); }, 60s)) {
        ADD_FAILURE() << scheduler << " neither bound nor reported " << ns << "/" << name
                      << " within 60 s; its log:\n"
                      << log();
        return Read(client, ns);
      }
    }
  }
  // A Pending pod is retried when later pods bind; a forced one fails again the same way. Let
  // the retries the last pods caused run before reading.
  std::this_thread::sleep_for(2s);
  return Read(client, ns);
}

TEST(SchedulerDiffE2E, AffinityAndSpreadingPlacementsKeepTheRulesAndPendingPodsMatchKubeScheduler) {
  // Fails here, naming the command, when kube-scheduler was not built.
  const std::string binary = testing::KubeSchedulerBinary();
  const Workload w = Generate(DiffSeed(20260525, "scheduler diff"));

  auto admin = testing::AdminClient();
  testing::TestNodes nodes(admin);
  for (const auto& n : w.nodes) {
    nodes.Add(n.suffix, n.cpu, "256Gi", [&](nlohmann::json& node) {
      node["metadata"]["labels"][kZone] = n.zone;
      node["metadata"]["labels"][kPoolLabel] = n.pool;
    });
  }
  NodeLabels labels;
  const nlohmann::json own = admin->Get("/api/v1/nodes?labelSelector=berth-it=" + nodes.id());
  for (const auto& n : own["items"]) {
    for (const auto& [k, v] : n["metadata"]["labels"].items()) {
      labels[n["metadata"]["name"]][k] = v.get<std::string>();
    }
  }
  ASSERT_EQ(labels.size(), static_cast<size_t>(kNodes));
  // A message counts every node of the cluster, this test's or not: the tests that share the
  // control plane run one at a time (RESOURCE_LOCK), so other nodes must stay as they are until
  // both schedulers are done.
  const auto foreign = ForeignNodes(*admin, nodes.id());
  int pods = 0;
  for (const auto& g : w.groups) pods += g.size;
  std::printf(
      "scheduler diff: %d nodes of this test (%zu others in the cluster), %zu groups, %d "
      "pods\n",
      kNodes, foreign.size(), w.groups.size(), pods);

  const fs::path dir = fs::temp_directory_path() / ("berth-diff-" + nodes.id());
  fs::create_directories(dir);
  testing::TestNamespace kube_ns(admin, "e2e-diff-kube");
  Outcome kube;
  {
    const std::string name = "diff-kube-scheduler-" + nodes.id();
    testing::KubeSchedulerProcess ks(KubeSchedulerDiffConfig(name), dir / "kube-scheduler");
    ASSERT_TRUE(ks.WaitReady(60s)) << "kube-scheduler (" << binary << ") did not become ready:\n"
                                   << ks.process().Log();
    const auto start = std::chrono::steady_clock::now();
    kube =
        Schedule(*admin, w, kube_ns.name(), name, nodes.id(), [&] { return ks.process().Log(); });
    std::printf("scheduler diff: kube-scheduler took %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  DeletePods(*admin, kube_ns.name());

  testing::TestNamespace berth_ns(admin, "e2e-diff-berth");
  Outcome berth;
  {
    const std::string name = "diff-berth-" + nodes.id();
    BerthProcess b(name, SchedulerConfig(name, false));
    ASSERT_TRUE(
        testing::Eventually([&] { return HttpGet(b.url() + "/readyz").status == 200; }, 60s))
        << b.Log();
    const auto start = std::chrono::steady_clock::now();
    berth = Schedule(*admin, w, berth_ns.name(), name, nodes.id(), [&] { return b.Log(); });
    std::printf("scheduler diff: berth-scheduler took %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  ASSERT_EQ(ForeignNodes(*admin, nodes.id()), foreign)
      << "nodes other than this test's came or went while it ran; the node counts in the "
         "messages would differ for that alone";
  ASSERT_EQ(kube.pods.size(), static_cast<size_t>(pods));
  ASSERT_EQ(berth.pods.size(), static_cast<size_t>(pods));

  for (const auto& v : CheckRequiredConstraints(kube.pods, labels)) {
    ADD_FAILURE() << "kube-scheduler (the checker's sanity): " << v;
  }
  for (const auto& v : CheckRequiredConstraints(berth.pods, labels)) {
    ADD_FAILURE() << "berth-scheduler: " << v;
  }
  // The checker does see a broken rule: two solo-anti pods on one node.
  {
    auto broken = kube.pods;
    std::vector<nlohmann::json*> solo;
    for (auto& p : broken) {
      if (p["metadata"]["labels"].value("group", "") == "solo-anti" &&
          !p["spec"].value("nodeName", "").empty()) {
        solo.push_back(&p);
      }
    }
    ASSERT_GE(solo.size(), 2u);
    (*solo[1])["spec"]["nodeName"] = (*solo[0])["spec"]["nodeName"];
    EXPECT_FALSE(CheckRequiredConstraints(broken, labels).empty());
  }

  for (const auto& g : w.groups) {
    if (!g.forced) continue;
    std::map<std::string, std::string> kube_pending, berth_pending;
    for (const auto& [pod, message] : kube.pending) {
      if (GroupOf(w, pod) == &g) kube_pending[pod] = message;
    }
    for (const auto& [pod, message] : berth.pending) {
      if (GroupOf(w, pod) == &g) berth_pending[pod] = message;
    }
    // The generator's forcing, seen in the reference.
    std::set<std::string> expected;
    for (int i = g.size - g.expected_pending; i < g.size; i++) {
      expected.insert(g.name + "-" + std::to_string(i));
    }
    std::set<std::string> kube_names;
    for (const auto& [pod, message] : kube_pending) kube_names.insert(pod);
    EXPECT_EQ(kube_names, expected) << "kube-scheduler's Pending pods of forced group " << g.name;
    EXPECT_EQ(berth_pending, kube_pending)
        << "Pending pods and their messages in forced group " << g.name
        << " (berth-scheduler first, kube-scheduler second)";
  }

  int same = 0, both = 0;
  for (const auto& [pod, node] : berth.node) {
    auto it = kube.node.find(pod);
    if (it == kube.node.end()) continue;
    both++;
    same += it->second == node ? 1 : 0;
  }
  std::printf(
      "scheduler diff: bound by kube-scheduler %zu, by berth-scheduler %zu; of the %d pods both "
      "bound, %d on the same node\n",
      kube.node.size(), berth.node.size(), both, same);
  KeepLogsIfFailed(dir, HasFailure(), "scheduler diff");
}

}  // namespace
}  // namespace berth::e2e
