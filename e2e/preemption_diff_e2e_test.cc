// Differential test of preemption against kube-scheduler: a seeded cluster of 30 full nodes whose
// pods have mixed priorities, then pods of higher PriorityClasses that fit nowhere, created one at
// a time and each settled (bound, or told why not) before the next, first through kube-scheduler
// (the pinned release, DefaultPreemption enabled) in one namespace, then, with the cluster filled
// again, through berth-scheduler in another. Both must evict the same number of pods per node,
// leave the same priorities behind, spare the same budget-protected pods, bind the same
// preemptors, and leave the others Pending with the same message.
//
// The generator keeps the outcome free of the ties each scheduler breaks its own way: pods of one
// priority all request the same cpu (so which of two equal victims goes changes nothing counted
// here), most preemptors select a single node, and the others select a pool of identical nodes.
//
// BERTH_DIFF_SEED=<n> replays another cluster and workload; the seed is printed.

#include <gtest/gtest.h>

#include <algorithm>
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

#include "e2e/diff.h"
#include "e2e/harness.h"
#include "pkg/client/client.h"
#include "test/testing/cluster.h"
#include "test/testing/kube_scheduler.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr size_t kNodes = 30;
constexpr size_t kPools = 2;
constexpr size_t kPoolSize = 3;
constexpr int kNodeMilliCpu = 4000;
constexpr const char* kPoolLabel = "berth-diff-pool";
// The budget-protected pods' label; the budget allows no disruption (minAvailable equals their
// number, and the disruption controller counts none of them healthy: no kubelet runs them).
constexpr const char* kGuarded = "guarded";

// One cpu request per priority: equal priority, interchangeable pods.
int MilliCpu(int priority) { return priority >= 100 ? 3000 : priority >= 50 ? 2000 : 1000; }

struct Filler {
  std::string name;
  int priority;
  bool guarded = false;
};

struct NodePlan {
  std::string suffix;
  std::string pool;  // Empty: a single preemptor selects it by name.
  std::vector<Filler> fillers;
};

struct Preemptor {
  std::string name;
  int priority;
  bool never = false;
  // The node suffix it selects, or the pool.
  std::string node;
  std::string pool;
};

struct Workload {
  std::vector<NodePlan> nodes;
  std::vector<Preemptor> preemptors;
};

Workload Generate(unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&](std::vector<int> from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  Workload w;
  int filler = 0;
  auto fill = [&](NodePlan& node, const std::vector<int>& priorities) {
    for (int p : priorities) node.fillers.push_back({"f" + std::to_string(filler++), p});
  };
  for (size_t pool = 0; pool < kPools; pool++) {
    // A node already preempted on keeps only the 30s, so a fresh one ranks first (its highest
    // victim is a 10): which nodes are used is fixed, if not which of the fresh ones.
    const std::vector<int> priorities = {10, 10, 30, 30};
    for (size_t i = 0; i < kPoolSize; i++) {
      NodePlan& node = w.nodes.emplace_back();
      node.suffix = "p" + std::to_string(pool) + "-" + std::to_string(i);
      node.pool = "pool-" + std::to_string(pool);
      fill(node, priorities);
    }
    for (int i = 0; i < 2; i++) {
      w.preemptors.push_back({"pool" + std::to_string(pool) + "-" + std::to_string(i), 50, false,
                              "", "pool-" + std::to_string(pool)});
    }
  }
  for (size_t i = 0; i < kNodes - kPools * kPoolSize; i++) {
    NodePlan& node = w.nodes.emplace_back();
    node.suffix = "n" + std::to_string(i);
    std::vector<int> priorities(kNodeMilliCpu / 1000);
    for (int& p : priorities) p = pick({10, 20, 30});
    fill(node, priorities);
    Preemptor p{"pin" + std::to_string(i), pick({20, 30, 50, 50, 100, 100}), false, node.suffix,
                ""};
    // A few may not preempt at all.
    if (p.priority == 100 && pick({0, 0, 0, 1}) == 1) p.never = true;
    w.preemptors.push_back(p);
  }
  // The first pinned node's two lowest fillers are protected by a budget: the preemptor evicts
  // others when enough of them rank below it.
  NodePlan& guarded = w.nodes[kPools * kPoolSize];
  std::sort(guarded.fillers.begin(), guarded.fillers.end(),
            [](const Filler& a, const Filler& b) { return a.priority < b.priority; });
  guarded.fillers[0].guarded = guarded.fillers[1].guarded = true;
  w.preemptors[kPools * 2].priority = 50;
  w.preemptors[kPools * 2].never = false;
  std::shuffle(w.preemptors.begin(), w.preemptors.end(), rng);
  return w;
}

// The PriorityClasses the workload uses, by (priority, preemptionPolicy Never).
class Classes {
 public:
  Classes(std::shared_ptr<client::Client> client, const Workload& w) : classes_(std::move(client)) {
    std::set<std::pair<int, bool>> wanted;
    for (const auto& n : w.nodes) {
      for (const auto& f : n.fillers) wanted.insert({f.priority, false});
    }
    for (const auto& p : w.preemptors) wanted.insert({p.priority, p.never});
    for (const auto& [priority, never] : wanted) {
      names_[{priority, never}] = classes_.Add(
          "diff-p" + std::to_string(priority) + (never ? "-never" : ""), priority, never);
    }
  }
  const std::string& Name(int priority, bool never) const { return names_.at({priority, never}); }

 private:
  testing::PriorityClasses classes_;
  std::map<std::pair<int, bool>, std::string> names_;
};

struct Attempt {
  std::string ns;
  std::string scheduler;
  std::string nodes_id;  // TestNodes::id(): node "<id>-<suffix>".
  const Classes* classes;
};

json PodOf(const Attempt& run, const std::string& name, int priority, bool never) {
  // Without a grace period (PodManifest's), a deleted pod is gone at once: no kubelet runs here.
  json pod = testing::PodManifest(run.ns, name, run.scheduler,
                                  std::to_string(MilliCpu(priority)) + "m", "64Mi");
  pod["spec"]["priorityClassName"] = run.classes->Name(priority, never);
  return pod;
}

void CreateFillers(client::Client& client, const Workload& w, const Attempt& run) {
  client.Post(
      "/apis/policy/v1/namespaces/" + run.ns + "/poddisruptionbudgets",
      {{"apiVersion", "policy/v1"},
       {"kind", "PodDisruptionBudget"},
       {"metadata", {{"name", kGuarded}}},
       {"spec", {{"minAvailable", 2}, {"selector", {{"matchLabels", {{"app", kGuarded}}}}}}}});
  std::vector<json> pods;
  for (const auto& n : w.nodes) {
    for (const auto& f : n.fillers) {
      json pod = PodOf(run, f.name, f.priority, false);
      pod["spec"]["nodeName"] = run.nodes_id + "-" + n.suffix;
      if (f.guarded) pod["metadata"]["labels"]["app"] = kGuarded;
      pods.push_back(pod);
    }
  }
  testing::CreateMany(client, client::PodsResource().Path(run.ns), static_cast<int>(pods.size()),
                      [&](int i) { return pods[static_cast<size_t>(i)]; });
}

// A preemptor has settled once bound, or pending for a reason other than its own preemption in
// progress (whose message says where it found room).
bool PreemptorSettled(const json& pod) {
  if (!Settled(pod)) return false;
  if (!pod["spec"].value("nodeName", "").empty()) return true;
  return PodScheduledMessage(pod).find("found a potential placement") == std::string::npos;
}

struct Outcome {
  std::map<std::string, std::string> bound;    // Preemptor -> node suffix.
  std::map<std::string, std::string> pending;  // Preemptor -> PodScheduled message.
  // The priorities of the fillers left on each node, sorted, by node suffix for a preemptor's own
  // node and by pool for a pool (whose nodes are interchangeable); and the guarded fillers left.
  std::map<std::string, std::vector<std::vector<int>>> left;
  std::set<std::string> guarded_left;
  int victims = 0;
};

Outcome Schedule(client::Client& client, const Workload& w, const Attempt& run,
                 const std::function<std::string()>& log) {
  const std::string path = client::PodsResource().Path(run.ns);
  for (const auto& p : w.preemptors) {
    json pod = PodOf(run, p.name, p.priority, p.never);
    pod["spec"]["nodeSelector"] = {{"berth-it", run.nodes_id}};
    if (!p.node.empty()) {
      pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] = run.nodes_id + "-" + p.node;
    } else {
      pod["spec"]["nodeSelector"][kPoolLabel] = p.pool;
    }
    client.Post(path, pod);
    if (!testing::Eventually([&] { return PreemptorSettled(client.Get(path + "/" + p.name)); },
                             60s)) {
      ADD_FAILURE() << run.scheduler << " did not settle " << p.name << " within 60 s; its log:\n"
                    << log();
      break;
    }
  }
  // Pending preemptors are retried as later ones evict; they fail again the same way.
  std::this_thread::sleep_for(2s);
  std::map<std::string, const Filler*> fillers;
  std::map<std::string, const NodePlan*> node_of;
  for (const auto& n : w.nodes) {
    for (const auto& f : n.fillers) {
      fillers[f.name] = &f;
      node_of[f.name] = &n;
    }
  }
  Outcome out;
  std::map<const NodePlan*, std::vector<int>> left;
  for (const auto& n : w.nodes) left[&n];
  const json list = client.Get(path);
  for (const auto& pod : list["items"]) {
    const std::string name = pod["metadata"]["name"];
    if (auto it = fillers.find(name); it != fillers.end()) {
      left[node_of[name]].push_back(it->second->priority);
      if (it->second->guarded) out.guarded_left.insert(name);
      continue;
    }
    const std::string node = pod["spec"].value("nodeName", "");
    if (node.empty()) {
      out.pending[name] = PodScheduledMessage(pod);
    } else {
      out.bound[name] = node.substr(run.nodes_id.size() + 1);
    }
  }
  out.victims = static_cast<int>(fillers.size());
  for (auto& [node, priorities] : left) {
    out.victims -= static_cast<int>(priorities.size());
    std::sort(priorities.begin(), priorities.end());
    out.left[node->pool.empty() ? node->suffix : node->pool].push_back(priorities);
  }
  for (auto& [key, lists] : out.left) std::sort(lists.begin(), lists.end());
  return out;
}

// The victims the generator's rules imply: each pinned preemptor evicts its node's lowest fillers
// of lower priority until its request fits, or none when that is not enough (or it never
// preempts); each pool preemptor evicts on a fresh node of its pool.
int ExpectedVictims(const Workload& w) {
  std::map<std::string, const NodePlan*> nodes;
  for (const auto& n : w.nodes) nodes[n.suffix] = &n;
  int victims = 0;
  for (const auto& p : w.preemptors) {
    const NodePlan* node = nullptr;
    if (!p.node.empty()) {
      node = nodes[p.node];
    } else {
      for (const auto& n : w.nodes) {
        if (n.pool == p.pool) node = &n;
      }
    }
    std::vector<int> lower;
    for (const auto& f : node->fillers) {
      if (f.priority < p.priority) lower.push_back(MilliCpu(f.priority));
    }
    const int needed = (MilliCpu(p.priority) + 999) / 1000;
    if (p.never || static_cast<int>(lower.size()) < needed) continue;
    victims += needed;
  }
  return victims;
}

TEST(PreemptionDiffE2E, VictimsAndBoundPreemptorsMatchKubeScheduler) {
  const std::string binary = testing::KubeSchedulerBinary();
  const Workload w = Generate(DiffSeed(20261126, "preemption diff"));

  auto admin = testing::AdminClient();
  testing::TestNodes nodes(admin);
  for (const auto& n : w.nodes) {
    nodes.Add(n.suffix, std::to_string(kNodeMilliCpu) + "m", "64Gi", [&](json& node) {
      if (!n.pool.empty()) node["metadata"]["labels"][kPoolLabel] = n.pool;
    });
  }
  const Classes classes(admin, w);
  const auto foreign = ForeignNodes(*admin, nodes.id());
  std::printf("preemption diff: %zu nodes (%zu others in the cluster), %zu preemptors\n", kNodes,
              foreign.size(), w.preemptors.size());
  const fs::path dir = fs::temp_directory_path() / ("berth-preemption-diff-" + nodes.id());
  fs::create_directories(dir);

  testing::TestNamespace kube_ns(admin, "e2e-preempt-kube");
  Outcome kube;
  {
    const Attempt run{kube_ns.name(), "diff-kube-scheduler-" + nodes.id(), nodes.id(), &classes};
    CreateFillers(*admin, w, run);
    testing::KubeSchedulerProcess ks(KubeSchedulerDiffConfig(run.scheduler),
                                     dir / "kube-scheduler");
    ASSERT_TRUE(ks.WaitReady(60s)) << "kube-scheduler (" << binary << ") did not become ready:\n"
                                   << ks.process().Log();
    kube = Schedule(*admin, w, run, [&] { return ks.process().Log(); });
  }
  DeletePods(*admin, kube_ns.name());

  testing::TestNamespace berth_ns(admin, "e2e-preempt-berth");
  Outcome berth;
  {
    const Attempt run{berth_ns.name(), "diff-berth-" + nodes.id(), nodes.id(), &classes};
    CreateFillers(*admin, w, run);
    BerthProcess b(run.scheduler, SchedulerConfig(run.scheduler, false));
    ASSERT_TRUE(
        testing::Eventually([&] { return HttpGet(b.url() + "/readyz").status == 200; }, 60s))
        << b.Log();
    berth = Schedule(*admin, w, run, [&] { return b.Log(); });
    const auto attempts = b.Metric("scheduler_preemption_attempts_total");
    ASSERT_TRUE(attempts.has_value()) << b.Log();
    // Every preemptor fit nowhere at first.
    EXPECT_GE(*attempts, static_cast<double>(w.preemptors.size()));
  }
  DeletePods(*admin, berth_ns.name());
  ASSERT_EQ(ForeignNodes(*admin, nodes.id()), foreign)
      << "nodes other than this test's came or went while it ran; the node counts in the "
         "messages would differ for that alone";

  // The generator's rules, seen in the reference.
  EXPECT_EQ(kube.victims, ExpectedVictims(w)) << "kube-scheduler's victims";
  EXPECT_EQ(kube.guarded_left.size(), 2u) << "kube-scheduler evicted a budget-protected pod";

  EXPECT_EQ(berth.victims, kube.victims);
  EXPECT_EQ(berth.left, kube.left) << "the fillers left per node (by priority)";
  EXPECT_EQ(berth.guarded_left, kube.guarded_left);
  std::set<std::string> kube_bound, berth_bound;
  for (const auto& [pod, node] : kube.bound) kube_bound.insert(pod);
  for (const auto& [pod, node] : berth.bound) berth_bound.insert(pod);
  EXPECT_EQ(berth_bound, kube_bound) << "the preemptors bound";
  EXPECT_EQ(berth.pending, kube.pending)
      << "pending preemptors and their messages (berth-scheduler first, kube-scheduler second)";
  std::printf(
      "preemption diff: kube-scheduler evicted %d and bound %zu of %zu preemptors; "
      "berth-scheduler evicted %d and bound %zu\n",
      kube.victims, kube.bound.size(), w.preemptors.size(), berth.victims, berth.bound.size());
  KeepLogsIfFailed(dir, HasFailure(), "preemption diff");
}

}  // namespace
}  // namespace berth::e2e
