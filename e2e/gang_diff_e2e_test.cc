// Differential test of gang scheduling against kube-scheduler: upstream's own PodGroup
// (scheduling.k8s.io/v1beta1, a gang of six with minCount 6, joined by spec.schedulingGroup), run
// once through kube-scheduler (the pinned release, started with the cluster's GenericWorkload and
// TopologyAwareWorkloadScheduling gates, so its default profile has GangScheduling,
// TopologyPlacementGenerator, PodGroupPodsCount and pod group preemption) and once through
// berth-scheduler, on the same nodes, each run in a namespace of its own with the same low- and
// high-priority pods already bound. Every case has nodes of its own (its pods select them), each
// labelled with a rack whose value carries the test's id:
//
//   place         racks of 4, 6, 12 and 5 cpus and a rack constraint: only the racks of 6 and 12
//                 take the gang; both pick the rack of 6. kube-scheduler simulates every rack and
//                 scores the feasible ones by pods placed (equal here) plus MostAllocated over the
//                 rack, so the full rack wins outright and its random tie-break never comes into
//                 play; Berth simulates racks tightest first and takes the same one.
//   nowhere       racks of 4 and 3 cpus (7 in all) and the constraint: no rack takes six, nothing
//                 binds, every pod PodScheduled=False (Unschedulable), and the PodGroup's
//                 PodGroupInitiallyScheduled False (Unschedulable).
//   free          the nodes of `place` again (a copy), no constraint: all six bind under both
//                 (where they go is left to each scheduler's node scores, so only the count is
//                 compared).
//   preempt       three full nodes of four 1-cpu pods, two of the gang's priority and two of a low
//                 one each, and a high-priority gang: both evict exactly the six low pods and bind
//                 the whole gang.
//   preempt-rack  the same with the rack constraint: a rack like `preempt`'s, a rack full of pods
//                 of the gang's priority, and a rack of one node of four low pods (too small even
//                 emptied): both evict only the first rack's low pods and bind the gang there.
//   cannot        two nodes with one low pod and three of the gang's priority each: the gang does
//                 not fit even after evicting, so neither evicts anything and nothing binds.
//
// The outcome compared per case: how many gang pods bound, the racks they are in, the
// PodScheduled reasons of the pending ones, the PodGroup's PodGroupInitiallyScheduled status and
// reason, and the set of evicted pods. The PodScheduled messages are printed, not compared, since
// the texts differ. For a gang that fits no rack, kube-scheduler v1.37.2 writes "pod group is
// unschedulable, 0/<placements> placements are available, first placement status: minCount (6)
// cannot be satisfied: ...". It counts every rack in the cluster, as Berth does, but reports the
// first placement its map iteration yields, so one pod may instead carry a FitError from another
// case's rack ("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector").
// Berth writes "pod group ... fits in no single topology domain: 0/<n> domains of "<key>" can take
// 6 pods", then what preemption could free. For a gang that preemption cannot help, kube-scheduler
// writes the same "minCount (6) cannot be satisfied" text, and Berth writes the pod's FitError,
// then "preemption: gang needs 6 places, at most 2 can be freed". The reasons (Unschedulable) and
// the PodGroup's condition are the same.
//
// Observed upstream behaviour that Berth does not share: in `preempt-rack`, kube-scheduler v1.37.2
// evicted the right six pods and then, in one run of several, left the gang Pending for over 60 s,
// with "0/15 placements are available ... minCount (6) cannot be satisfied". Its attempt after the
// eviction failed in every rack, and it did not try the gang again within the wait; the cause in
// its alpha code was not pinned down. So the case accepts that outcome from kube-scheduler, still
// comparing the victims, and requires Berth to bind the whole gang. Without the constraint
// (`preempt`) kube-scheduler bound the gang in every run.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
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

constexpr const char* kRackKey = "example.com/rack";
// Each case's nodes carry <id>-<case> under this key; its pods select it.
constexpr const char* kCaseKey = "berth-diff-gang";
constexpr int kGang = 6;
constexpr const char* kGroupCondition = "PodGroupInitiallyScheduled";

// Nodes of `cpu` cores, each holding `keepers` 1-cpu pods of the gangs' high priority (never
// victims: a victim's priority is strictly lower) and `lows` 1-cpu pods of a low one.
struct Rack {
  std::string name;
  int nodes;
  int cpu;
  int keepers = 0;
  int lows = 0;
};

struct Case {
  std::string name;
  std::vector<Rack> racks;
  bool constrained;
  bool high;  // The gang's PodGroup and pods have the high PriorityClass.
  bool binds;
  // kube-scheduler v1.37.2 may evict the victims and then leave the gang Pending (see the top of
  // the file): its outcome is then recorded, not compared, save for the victims.
  bool upstream_may_stall = false;
};

const std::vector<Rack> kPlaceRacks = {{"r0", 2, 2}, {"r1", 2, 3}, {"r2", 3, 4}, {"r3", 1, 5}};

std::vector<Case> Cases() {
  return {
      {"place", kPlaceRacks, true, false, true},
      {"nowhere", {{"r0", 2, 2}, {"r1", 1, 3}}, true, false, false},
      {"free", kPlaceRacks, false, false, true},
      {"preempt", {{"r0", 3, 4, 2, 2}}, false, true, true},
      {"preempt-rack",
       {{"r0", 3, 4, 2, 2}, {"r1", 2, 4, 4, 0}, {"r2", 1, 4, 0, 4}},
       true,
       true,
       true,
       true},
      {"cannot", {{"r0", 2, 4, 3, 1}}, false, true, false},
  };
}

std::string NodeSuffix(const Case& c, const Rack& r, int i) {
  return c.name + "-" + r.name + "-" + std::to_string(i);
}

struct Filler {
  std::string name;
  std::string node_suffix;
  bool keeper;
};

std::vector<Filler> Fillers(const Case& c) {
  std::vector<Filler> out;
  for (const Rack& r : c.racks) {
    for (int i = 0; i < r.nodes; i++) {
      const std::string node = NodeSuffix(c, r, i);
      for (int k = 0; k < r.keepers; k++)
        out.push_back({node + "-keep" + std::to_string(k), node, true});
      for (int k = 0; k < r.lows; k++)
        out.push_back({node + "-low" + std::to_string(k), node, false});
    }
  }
  return out;
}

struct Attempt {
  std::string ns;
  std::string scheduler;
  std::string nodes_id;
  std::string high_class;
  std::string low_class;
  bool reference;  // The kube-scheduler run.
};

void CreateFillers(client::Client& client, const std::vector<Case>& cases, const Attempt& run) {
  std::vector<json> pods;
  for (const Case& c : cases) {
    for (const Filler& f : Fillers(c)) {
      json pod = testing::PodManifest(run.ns, f.name, run.scheduler, "1", "64Mi");
      pod["spec"]["nodeName"] = run.nodes_id + "-" + f.node_suffix;
      pod["spec"]["priorityClassName"] = f.keeper ? run.high_class : run.low_class;
      pods.push_back(pod);
    }
  }
  if (pods.empty()) return;
  testing::CreateMany(client, client::PodsResource().Path(run.ns), static_cast<int>(pods.size()),
                      [&](int i) { return pods[static_cast<size_t>(i)]; });
}

std::string GroupsPath(const Attempt& run) {
  return client::WorkloadPodGroupsResource().Path(run.ns);
}

void SubmitGang(client::Client& client, const Case& c, const Attempt& run) {
  json spec = {{"schedulingPolicy", {{"gang", {{"minCount", kGang}}}}}};
  if (c.constrained) spec["schedulingConstraints"] = {{"topology", {{{"key", kRackKey}}}}};
  // kube-scheduler requires the group's priority to be its pods'.
  if (c.high) spec["priorityClassName"] = run.high_class;
  client.Post(GroupsPath(run), {{"apiVersion", "scheduling.k8s.io/v1beta1"},
                                {"kind", "PodGroup"},
                                {"metadata", {{"name", c.name}}},
                                {"spec", spec}});
  if (c.constrained) {
    ASSERT_FALSE(client.Get(GroupsPath(run) + "/" + c.name)["spec"]
                     .value("schedulingConstraints", json::object())
                     .empty())
        << "the apiserver dropped schedulingConstraints: start the local cluster with its "
           "TopologyAwareWorkloadScheduling gate (deploy/local-cluster.sh up)";
  }
  const std::string path = client::PodsResource().Path(run.ns);
  for (int i = 0; i < kGang; i++) {
    json pod =
        testing::PodManifest(run.ns, c.name + "-" + std::to_string(i), run.scheduler, "1", "64Mi");
    pod["spec"]["nodeSelector"] = {{kCaseKey, run.nodes_id + "-" + c.name}};
    pod["spec"]["schedulingGroup"] = {{"podGroupName", c.name}};
    if (c.high) pod["spec"]["priorityClassName"] = run.high_class;
    client.Post(path, pod);
  }
}

bool IsGangPod(const Case& c, const std::string& name) {
  const std::string prefix = c.name + "-";
  if (name.rfind(prefix, 0) != 0) return false;
  const std::string rest = name.substr(prefix.size());
  return !rest.empty() && rest.find_first_not_of("0123456789") == std::string::npos;
}

struct Outcome {
  int bound = 0;
  std::set<std::string> racks;     // Of the bound gang pods, without the test's id.
  std::set<std::string> reasons;   // PodScheduled=False reasons of the pending gang pods.
  std::set<std::string> messages;  // Their messages: printed, not compared.
  std::string group_condition;     // PodGroupInitiallyScheduled "<status>/<reason>".
  std::set<std::string> victims;   // Fillers gone.
};

// Whether the case is done: the whole gang bound, or (for a case that binds nothing) every pod
// told why not. For kube-scheduler on a case where it may stall, also: every low pod gone and
// every gang pod told why not by an attempt after its preemption.
bool CaseSettled(client::Client& client, const Case& c, const Attempt& run) {
  const json list = client.Get(client::PodsResource().Path(run.ns));
  int bound = 0, refused = 0, lows = 0;
  for (const auto& pod : list["items"]) {
    const std::string name = pod["metadata"]["name"];
    if (name.rfind(c.name + "-", 0) == 0 && name.find("-low") != std::string::npos) lows++;
    if (!IsGangPod(c, name)) continue;
    if (!pod["spec"].value("nodeName", "").empty()) {
      bound++;
    } else if (Settled(pod) && PodScheduledMessage(pod).find("preempting") == std::string::npos) {
      refused++;
    }
  }
  if (!c.binds) return refused == kGang;
  if (run.reference && c.upstream_may_stall && lows == 0 && refused == kGang) return true;
  return bound == kGang;
}

std::map<std::string, Outcome> Collect(client::Client& client, const std::vector<Case>& cases,
                                       const Attempt& run,
                                       const std::map<std::string, std::string>& rack_of) {
  std::map<std::string, Outcome> out;
  const json pods = client.Get(client::PodsResource().Path(run.ns));
  std::set<std::string> present;
  for (const auto& pod : pods["items"]) present.insert(pod["metadata"]["name"].get<std::string>());
  const json groups = client.Get(GroupsPath(run));
  for (const Case& c : cases) {
    Outcome& o = out[c.name];
    for (const Filler& f : Fillers(c)) {
      if (!present.contains(f.name)) o.victims.insert(f.name);
    }
    for (const auto& pod : pods["items"]) {
      if (!IsGangPod(c, pod["metadata"]["name"])) continue;
      const std::string node = pod["spec"].value("nodeName", "");
      if (!node.empty()) {
        o.bound++;
        auto it = rack_of.find(node);
        o.racks.insert(it == rack_of.end() ? "?" + node : it->second);
        continue;
      }
      for (const auto& cond :
           pod.value("status", json::object()).value("conditions", json::array())) {
        if (cond.value("type", "") == "PodScheduled" && cond.value("status", "") == "False") {
          o.reasons.insert(cond.value("reason", ""));
          o.messages.insert(cond.value("message", ""));
        }
      }
    }
    for (const auto& g : groups["items"]) {
      if (g["metadata"]["name"] != c.name) continue;
      for (const auto& cond :
           g.value("status", json::object()).value("conditions", json::array())) {
        if (cond.value("type", "") == kGroupCondition) {
          o.group_condition = cond.value("status", "") + "/" + cond.value("reason", "");
        }
      }
    }
  }
  return out;
}

// Submits every case's gang, waits until each has settled (60 s for all), leaves 2 s more for an
// eviction or a binding that should not happen, and reads the outcome.
std::map<std::string, Outcome> Schedule(client::Client& client, const std::vector<Case>& cases,
                                        const Attempt& run,
                                        const std::map<std::string, std::string>& rack_of,
                                        const std::function<std::string()>& log) {
  for (const Case& c : cases) SubmitGang(client, c, run);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (const Case& c : cases) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const bool settled = testing::Eventually([&] { return CaseSettled(client, c, run); },
                                             std::max(left, std::chrono::milliseconds(1000)));
    // kube-scheduler's stall after its pod group preemption (see the case) is its outcome, which
    // the comparison reports; it is no failure of this test.
    if (!settled && !(run.reference && c.upstream_may_stall)) {
      ADD_FAILURE() << run.scheduler << " did not settle case " << c.name << "; its log:\n"
                    << log();
    }
  }
  std::this_thread::sleep_for(2s);
  return Collect(client, cases, run, rack_of);
}

void Print(const char* who, const std::map<std::string, Outcome>& outcomes) {
  for (const auto& [name, o] : outcomes) {
    std::string racks;
    for (const auto& r : o.racks) racks += (racks.empty() ? "" : ",") + r;
    std::printf("gang diff: %s %-12s bound %d racks {%s} victims %zu group %s\n", who, name.c_str(),
                o.bound, racks.c_str(), o.victims.size(), o.group_condition.c_str());
    for (const auto& m : o.messages)
      std::printf("gang diff: %s %-12s   message: %s\n", who, name.c_str(), m.c_str());
  }
}

TEST(GangDiffE2E, GangPlacementAndPreemptionMatchKubeScheduler) {
  const std::string binary = testing::KubeSchedulerBinary();
  ASSERT_NE(testing::ClusterWorkloadFeatureGates().find("TopologyAwareWorkloadScheduling=true"),
            std::string::npos)
      << "the local cluster runs without upstream's workload gates: BERTH_GENERIC_WORKLOAD=1 "
         "deploy/local-cluster.sh up";
  const std::vector<Case> cases = Cases();

  auto admin = testing::AdminClient();
  testing::TestNodes nodes(admin);
  std::map<std::string, std::string> rack_of;  // Node name -> rack (without the id).
  for (const Case& c : cases) {
    for (const Rack& r : c.racks) {
      for (int i = 0; i < r.nodes; i++) {
        const std::string name =
            nodes.Add(NodeSuffix(c, r, i), std::to_string(r.cpu), "8Gi", [&](json& node) {
              node["metadata"]["labels"][kRackKey] = nodes.id() + "-" + c.name + "-" + r.name;
              node["metadata"]["labels"][kCaseKey] = nodes.id() + "-" + c.name;
            });
        rack_of[name] = r.name;
      }
    }
  }
  testing::PriorityClasses classes(admin);
  const std::string high = classes.Add("gang-diff-high", 1000);
  const std::string low = classes.Add("gang-diff-low", 10);
  const auto foreign = ForeignNodes(*admin, nodes.id());
  const fs::path dir = fs::temp_directory_path() / ("berth-gang-diff-" + nodes.id());
  fs::create_directories(dir);

  testing::TestNamespace kube_ns(admin, "e2e-gang-kube");
  std::map<std::string, Outcome> kube;
  {
    const Attempt run{
        kube_ns.name(), "diff-kube-scheduler-" + nodes.id(), nodes.id(), high, low, true};
    CreateFillers(*admin, cases, run);
    testing::KubeSchedulerProcess ks(KubeSchedulerDiffConfig(run.scheduler),
                                     dir / "kube-scheduler");
    ASSERT_TRUE(ks.WaitReady(60s)) << "kube-scheduler (" << binary << ") did not become ready:\n"
                                   << ks.process().Log();
    kube = Schedule(*admin, cases, run, rack_of, [&] { return ks.process().Log(); });
  }
  DeletePods(*admin, kube_ns.name());

  testing::TestNamespace berth_ns(admin, "e2e-gang-berth");
  std::map<std::string, Outcome> berth;
  std::string berth_log;
  {
    const Attempt run{berth_ns.name(), "diff-berth-" + nodes.id(), nodes.id(), high, low, false};
    CreateFillers(*admin, cases, run);
    BerthProcess b(run.scheduler, SchedulerConfig(run.scheduler, false));
    ASSERT_TRUE(
        testing::Eventually([&] { return HttpGet(b.url() + "/readyz").status == 200; }, 60s))
        << b.Log();
    berth = Schedule(*admin, cases, run, rack_of, [&] { return b.Log(); });
    berth_log = b.Log();
  }
  DeletePods(*admin, berth_ns.name());
  ASSERT_EQ(ForeignNodes(*admin, nodes.id()), foreign)
      << "nodes other than this test's came or went while it ran";
  Print("kube-scheduler ", kube);
  Print("berth-scheduler", berth);

  for (const Case& c : cases) {
    SCOPED_TRACE("case " + c.name);
    const Outcome& k = kube[c.name];
    const Outcome& b = berth[c.name];
    EXPECT_EQ(b.bound, c.binds ? kGang : 0) << "berth-scheduler";
    EXPECT_EQ(b.victims, k.victims) << "the evicted pods";
    if (c.upstream_may_stall && k.bound == 0) {
      std::printf(
          "gang diff: kube-scheduler evicted %zu pods for case %s and left its gang Pending\n",
          k.victims.size(), c.name.c_str());
      continue;
    }
    // What the case is built for, seen in the reference.
    EXPECT_EQ(k.bound, c.binds ? kGang : 0) << "kube-scheduler";
    if (c.binds && c.constrained) {
      EXPECT_EQ(k.racks.size(), 1u) << "kube-scheduler";
    }
    // Berth against the reference.
    EXPECT_EQ(b.bound, k.bound);
    if (c.constrained) {
      EXPECT_EQ(b.racks, k.racks) << "the racks the gang is in";
    }
    EXPECT_EQ(b.reasons, k.reasons) << "the pending pods' PodScheduled reasons";
    EXPECT_EQ(b.group_condition, k.group_condition) << kGroupCondition;
  }
  // The choices themselves.
  auto lows = [&](const std::string& name, const std::string& rack) {
    std::set<std::string> out;
    for (const Case& c : cases) {
      if (c.name != name) continue;
      for (const Filler& f : Fillers(c)) {
        if (!f.keeper && f.name.starts_with(name + "-" + rack + "-")) out.insert(f.name);
      }
    }
    return out;
  };
  EXPECT_EQ(berth["place"].racks, std::set<std::string>{"r1"});
  EXPECT_EQ(berth["nowhere"].reasons, std::set<std::string>{"Unschedulable"});
  EXPECT_EQ(berth["preempt"].victims, lows("preempt", "r0"));
  EXPECT_EQ(berth["preempt-rack"].racks, std::set<std::string>{"r0"});
  EXPECT_EQ(berth["preempt-rack"].victims, lows("preempt-rack", "r0"));
  EXPECT_TRUE(berth["cannot"].victims.empty());
  if (HasFailure()) std::printf("---- berth-scheduler log ----\n%s\n", berth_log.c_str());
  KeepLogsIfFailed(dir, HasFailure(), "gang diff");
}

}  // namespace
}  // namespace berth::e2e
