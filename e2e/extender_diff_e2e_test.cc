// Differential test of scheduler extenders (KubeSchedulerConfiguration's `extenders:`) against
// kube-scheduler: each scenario's nodes are made once, then its pods are scheduled first by
// kube-scheduler (the pinned release) in one namespace and then, once those are gone, by
// berth-scheduler in another, each configured with the same extenders stanza pointed at its own
// instances of the test extender (test/testing/test_extender.h), whose answers the node labels
// decide. kube-scheduler's outcome is checked against what the scenario expects first, so the
// extender itself is proven against the oracle; then berth-scheduler must place every pod on the
// same node, leave the same pods Pending with the same PodScheduled message (the extenders' URLs,
// whose ports differ between the two runs, written as <extender-N>), evict the same number of pods
// per node, and send each extender the same pods, verbs, nodes and request forms.
//
// Scenarios: filter (rejected, unresolvable and silently dropped nodes; the nodeCacheCapable and
// the full-node forms), weighted prioritize, extenders that fail (HTTP 500, a closed connection,
// an answer slower than httpTimeout) with ignorable set and not, managedResources (pods asking
// for none of them are never sent; ignoredByScheduler), preemptVerb in both forms, and bindVerb.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/diff.h"
#include "e2e/harness.h"
#include "e2e/pods.h"
#include "pkg/client/client.h"
#include "test/testing/cluster.h"
#include "test/testing/kube_scheduler.h"
#include "test/testing/test_extender.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
namespace fs = std::filesystem;
using testing::ExtenderFault;

constexpr const char* kPoolLabel = "ext.berth.test/pool";
constexpr const char* kGpu = "ext.berth.test/gpu";
constexpr const char* kLicense = "ext.berth.test/license";

// One entry of the extenders list; urlPrefix is its own test extender's.
struct ExtenderSpec {
  std::string filter, prioritize, preempt, bind;  // Verbs; empty: not configured.
  int weight = 1;
  bool node_cache_capable = true;
  bool ignorable = false;
  std::string http_timeout;                           // Empty: the default (5s).
  std::vector<std::pair<std::string, bool>> managed;  // name, ignoredByScheduler
  ExtenderFault fault = ExtenderFault::kNone;         // For every verb.
};

struct NodeSpec {
  std::string suffix;
  std::string pool;
  std::string cpu = "4";
  std::string memory = "8Gi";
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> extended;  // Extended resources in capacity and allocatable.
};

// A pod bound by name before the scheduler starts.
struct FillerSpec {
  std::string name;
  std::string node;  // Suffix.
  std::string cpu;
  std::string memory;
  int priority = 0;  // 0: no PriorityClass.
};

// A pod the scheduler under test places, created once the one before it settled.
struct PodSpec {
  std::string name;
  std::string pool;  // Selects the pool's nodes, or
  std::string node;  // one node by hostname (suffix).
  std::string cpu = "500m";
  std::string memory = "1Gi";
  std::map<std::string, std::string> extended;       // The app container's requests and limits.
  std::map<std::string, std::string> init_extended;  // An init container's, when not empty.
  int priority = 0;
};

PodSpec InPool(const std::string& name, const std::string& pool) {
  PodSpec p;
  p.name = name;
  p.pool = pool;
  return p;
}

PodSpec OnNode(const std::string& name, const std::string& node) {
  PodSpec p;
  p.name = name;
  p.node = node;
  return p;
}

struct Scenario {
  std::vector<ExtenderSpec> extenders;
  std::vector<NodeSpec> nodes;
  std::vector<FillerSpec> fillers;
  std::vector<PodSpec> pods;
};

struct Outcome {
  bool ran = false;                            // The scheduler started and every pod settled.
  std::map<std::string, std::string> node;     // Pod -> node suffix; "" while Pending.
  std::map<std::string, std::string> message;  // Pending pod -> PodScheduled message, normalised.
  std::map<std::string, std::string> raw;      // Pending pod -> PodScheduled message as written.
  std::map<std::string, std::string> reason;   // Pending pod -> PodScheduled reason.
  std::map<std::string, int> fillers_left;     // Node suffix -> fillers still there.
  // Per extender: "<pod> <verb>" -> what its first such request carried: the node suffixes
  // (sorted) and the form ("names" or "objects").
  std::vector<std::map<std::string, std::string>> calls;
  std::vector<int> binds;
  std::map<std::string, int> scheduled_events;
};

struct Env {
  std::shared_ptr<client::Client> admin;
  const testing::TestNodes* nodes;
  std::map<int, std::string> classes;  // Priority -> PriorityClass name.
};

std::string ExtendersYaml(const std::vector<ExtenderSpec>& specs,
                          const std::vector<std::unique_ptr<testing::TestExtender>>& servers) {
  std::ostringstream out;
  out << "extenders:\n";
  for (size_t i = 0; i < specs.size(); i++) {
    const ExtenderSpec& s = specs[i];
    out << "- urlPrefix: " << servers[i]->url() << "\n";
    if (!s.filter.empty()) out << "  filterVerb: " << s.filter << "\n";
    if (!s.prioritize.empty()) {
      out << "  prioritizeVerb: " << s.prioritize << "\n  weight: " << s.weight << "\n";
    }
    if (!s.preempt.empty()) out << "  preemptVerb: " << s.preempt << "\n";
    if (!s.bind.empty()) out << "  bindVerb: " << s.bind << "\n";
    out << "  nodeCacheCapable: " << (s.node_cache_capable ? "true" : "false") << "\n";
    out << "  ignorable: " << (s.ignorable ? "true" : "false") << "\n";
    if (!s.http_timeout.empty()) out << "  httpTimeout: " << s.http_timeout << "\n";
    if (!s.managed.empty()) {
      out << "  managedResources:\n";
      for (const auto& [name, ignored] : s.managed) {
        out << "  - name: " << name << "\n    ignoredByScheduler: " << (ignored ? "true" : "false")
            << "\n";
      }
    }
  }
  return out.str();
}

void MakeNodes(testing::TestNodes& nodes, const Scenario& s) {
  for (const NodeSpec& n : s.nodes) {
    nodes.Add(n.suffix, n.cpu, n.memory, [&](json& node) {
      node["metadata"]["labels"][kPoolLabel] = n.pool;
      for (const auto& [k, v] : n.labels) node["metadata"]["labels"][k] = v;
      for (const auto& [k, v] : n.extended) {
        node["status"]["capacity"][k] = v;
        node["status"]["allocatable"][k] = v;
      }
    });
  }
}

// "<id>-<suffix>" -> "<suffix>".
std::string Suffix(const Env& env, const std::string& node) {
  const std::string prefix = env.nodes->id() + "-";
  return node.rfind(prefix, 0) == 0 ? node.substr(prefix.size()) : node;
}

json PodOf(const Env& env, const std::string& ns, const std::string& scheduler, const PodSpec& p) {
  json pod = testing::PodManifest(ns, p.name, scheduler, p.cpu, p.memory);
  auto& container = pod["spec"]["containers"][0];
  for (const auto& [k, v] : p.extended) {
    container["resources"]["requests"][k] = v;
    container["resources"]["limits"][k] = v;
  }
  if (!p.init_extended.empty()) {
    json init = {{"name", "init"}, {"image", "pause"}};
    for (const auto& [k, v] : p.init_extended) {
      init["resources"]["requests"][k] = v;
      init["resources"]["limits"][k] = v;
    }
    pod["spec"]["initContainers"] = json::array({init});
  }
  pod["spec"]["nodeSelector"] = {{"berth-it", env.nodes->id()}};
  if (!p.node.empty()) {
    pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] = env.nodes->id() + "-" + p.node;
  } else {
    pod["spec"]["nodeSelector"][kPoolLabel] = p.pool;
  }
  if (p.priority != 0) pod["spec"]["priorityClassName"] = env.classes.at(p.priority);
  return pod;
}

// Settled, and not waiting for the victims of its own preemption to go.
bool PodSettled(const json& pod) {
  if (!Settled(pod)) return false;
  if (!pod["spec"].value("nodeName", "").empty()) return true;
  return PodScheduledMessage(pod).find("found a potential placement") == std::string::npos;
}

// Runs the scenario's pods through kube-scheduler (`berth` false) or berth-scheduler.
Outcome Run(const Env& env, const Scenario& s, bool berth, const fs::path& dir) {
  client::Client& admin = *env.admin;
  const std::string who = berth ? "berth" : "kube";
  testing::TestNamespace ns(env.admin, "e2e-ext-" + who);
  const std::string path = client::PodsResource().Path(ns.name());
  const std::string scheduler = "ext-diff-" + who + "-" + env.nodes->id();
  Outcome out;

  std::vector<json> fillers;
  for (const FillerSpec& f : s.fillers) {
    json pod = testing::PodManifest(ns.name(), f.name, "nobody", f.cpu, f.memory);
    pod["spec"]["nodeName"] = env.nodes->id() + "-" + f.node;
    if (f.priority != 0) pod["spec"]["priorityClassName"] = env.classes.at(f.priority);
    fillers.push_back(pod);
  }
  if (!fillers.empty()) {
    testing::CreateMany(admin, path, static_cast<int>(fillers.size()),
                        [&](int i) { return fillers[static_cast<size_t>(i)]; });
  }

  std::vector<std::unique_ptr<testing::TestExtender>> extenders;
  for (const ExtenderSpec& spec : s.extenders) {
    extenders.push_back(std::make_unique<testing::TestExtender>(env.admin));
    if (spec.fault != ExtenderFault::kNone) extenders.back()->SetFault("", spec.fault);
  }
  const std::string stanza = ExtendersYaml(s.extenders, extenders);

  {
    std::unique_ptr<testing::KubeSchedulerProcess> ks;
    std::unique_ptr<BerthProcess> b;
    std::function<std::string()> log;
    if (berth) {
      b = std::make_unique<BerthProcess>(scheduler, SchedulerConfig(scheduler, false) + stanza);
      log = [&] { return b->Log(); };
      testing::Eventually(
          [&] { return HttpGet(b->url() + "/readyz").status == 200 || !b->process().Running(); },
          60s);
      if (HttpGet(b->url() + "/readyz").status != 200) {
        ADD_FAILURE() << "berth-scheduler did not become ready with the extenders stanza:\n"
                      << stanza << "its log:\n"
                      << log();
        return out;
      }
    } else {
      ks = std::make_unique<testing::KubeSchedulerProcess>(
          KubeSchedulerDiffConfig(scheduler) + stanza, dir / "kube-scheduler");
      log = [&] { return ks->process().Log(); };
      if (!ks->WaitReady(60s)) {
        ADD_FAILURE() << "kube-scheduler did not become ready:\n" << log();
        return out;
      }
    }
    for (const PodSpec& p : s.pods) {
      admin.Post(path, PodOf(env, ns.name(), scheduler, p));
      if (!testing::Eventually([&] { return PodSettled(admin.Get(path + "/" + p.name)); }, 60s)) {
        ADD_FAILURE() << who << "-scheduler did not settle " << p.name << " within 60 s; its log:\n"
                      << log();
        return out;
      }
    }
    // Pending pods are retried meanwhile; they fail again the same way.
    std::this_thread::sleep_for(2s);
    out.ran = true;
  }

  std::set<std::string> filler_names;
  for (const FillerSpec& f : s.fillers) filler_names.insert(f.name);
  const json pods = admin.Get(path);
  for (const auto& pod : pods["items"]) {
    const std::string name = pod["metadata"]["name"];
    const std::string node = Suffix(env, pod["spec"].value("nodeName", ""));
    if (filler_names.count(name) != 0) {
      out.fillers_left[node]++;
      continue;
    }
    out.node[name] = node;
    if (node.empty()) {
      std::string message = PodScheduledMessage(pod);
      out.raw[name] = message;
      for (const auto& c : pod["status"].value("conditions", json::array())) {
        if (c.value("type", "") == "PodScheduled") out.reason[name] = c.value("reason", "");
      }
      for (size_t i = 0; i < extenders.size(); i++) {
        const std::string host = "127.0.0.1:" + std::to_string(extenders[i]->port());
        for (size_t at; (at = message.find(host)) != std::string::npos;) {
          message.replace(at, host.size(), "<extender-" + std::to_string(i) + ">");
        }
      }
      out.message[name] = message;
    }
  }
  for (const auto& e : extenders) {
    auto& calls = out.calls.emplace_back();
    for (const auto& c : e->Calls()) {
      const std::string key = c.pod.substr(c.pod.find('/') + 1) + " " + c.verb;
      if (calls.count(key) != 0) continue;
      std::vector<std::string> nodes;
      for (const auto& n : c.nodes) nodes.push_back(Suffix(env, n));
      std::sort(nodes.begin(), nodes.end());
      std::string summary;
      for (const auto& n : nodes) summary += n + ",";
      calls[key] = summary + (c.names_only ? " names" : " objects");
    }
    out.binds.push_back(e->binds());
  }
  out.scheduled_events = ScheduledEvents(admin, ns.name());
  DeletePods(admin, ns.name());
  return out;
}

std::string Show(const std::map<std::string, std::string>& m) {
  std::string out;
  for (const auto& [k, v] : m) out += "  " + k + ": " + v + "\n";
  return out;
}

// Prints kube-scheduler's outcome (the messages berth-scheduler must match), then runs
// berth-scheduler and compares.
class ExtenderDiff {
 public:
  ExtenderDiff(const std::string& what, Scenario scenario, const std::vector<int>& priorities = {})
      : what_(what), scenario_(std::move(scenario)), nodes_(testing::AdminClient()) {
    env_.admin = testing::AdminClient();
    env_.nodes = &nodes_;
    MakeNodes(nodes_, scenario_);
    for (int p : priorities) {
      env_.classes[p] = classes_.Add("ext-diff-p" + std::to_string(p), p);
    }
    foreign_ = ForeignNodes(*env_.admin, nodes_.id());
    dir_ = fs::temp_directory_path() / ("berth-extender-diff-" + nodes_.id());
    fs::create_directories(dir_);
  }

  const Outcome& Kube() {
    kube_ = Run(env_, scenario_, false, dir_);
    std::printf("%s: kube-scheduler placed:\n%s", what_.c_str(), Show(kube_.node).c_str());
    for (const auto& [pod, message] : kube_.raw) {
      std::printf("%s: kube-scheduler left %s Pending (%s): %s\n", what_.c_str(), pod.c_str(),
                  kube_.reason[pod].c_str(), message.c_str());
    }
    for (size_t i = 0; i < kube_.calls.size(); i++) {
      std::printf("%s: extender %zu was sent:\n%s", what_.c_str(), i, Show(kube_.calls[i]).c_str());
    }
    return kube_;
  }

  // `berth_nodes`: pods Berth places elsewhere on purpose (a documented deviation), with the
  // node it must choose; every other outcome must be kube-scheduler's.
  void CompareBerth(const std::map<std::string, std::string>& berth_nodes = {}) {
    if (!kube_.ran) return;
    Outcome berth = Run(env_, scenario_, true, dir_);
    if (!berth.ran) return;
    for (const auto& [pod, node] : berth_nodes) {
      EXPECT_EQ(berth.node[pod], node) << "berth-scheduler's node for " << pod;
      berth.node[pod] = kube_.node[pod];
    }
    EXPECT_EQ(ForeignNodes(*env_.admin, nodes_.id()), foreign_)
        << "nodes other than this test's came or went; the node counts in the messages would "
           "differ for that alone";
    EXPECT_EQ(berth.node, kube_.node) << "each pod's node (berth-scheduler first)";
    EXPECT_EQ(berth.message, kube_.message)
        << "the Pending pods' messages (berth-scheduler first, kube-scheduler second)";
    EXPECT_EQ(berth.reason, kube_.reason) << "the Pending pods' PodScheduled reasons";
    EXPECT_EQ(berth.fillers_left, kube_.fillers_left) << "the pods left on each node";
    EXPECT_EQ(berth.calls, kube_.calls)
        << "what each extender was sent (berth-scheduler first, kube-scheduler second)";
    EXPECT_EQ(berth.binds, kube_.binds) << "the bindings each extender made";
    EXPECT_EQ(berth.scheduled_events, kube_.scheduled_events) << "the Scheduled events";
  }

  ~ExtenderDiff() { KeepLogsIfFailed(dir_, ::testing::Test::HasFailure(), what_); }

 private:
  std::string what_;
  Scenario scenario_;
  testing::TestNodes nodes_;
  testing::PriorityClasses classes_{testing::AdminClient()};
  Env env_;
  std::set<std::string> foreign_;
  fs::path dir_;
  Outcome kube_;
};

std::string Call(const std::vector<std::string>& nodes, bool names) {
  std::string out;
  for (const auto& n : nodes) out += n + ",";
  return out + (names ? " names" : " objects");
}

// ---- filter ----------------------------------------------------------------------------------

class ExtenderFilterDiffE2E : public ::testing::TestWithParam<bool> {};

// Pool f: the extender rejects the node the scores prefer. Pool r: every node the plugins pass
// is rejected, unresolvable or dropped, and one more fails NodeResourcesFit (and so is never
// sent). Pool q: a node that is larger but nearly full beside a small empty one.
TEST_P(ExtenderFilterDiffE2E, RejectedNodesAndTheirReasons) {
  const bool cache = GetParam();
  ExtenderSpec ext;
  ext.filter = "filter";
  ext.node_cache_capable = cache;
  Scenario s;
  s.extenders = {ext};
  s.nodes = {
      {"f-a", "f", "4", "8Gi", {{testing::kExtenderFilterLabel, "reject"}}, {}},
      {"f-b", "f", "4", "8Gi", {}, {}},
      {"r-a", "r", "4", "8Gi", {{testing::kExtenderFilterLabel, "reject"}}, {}},
      {"r-b", "r", "4", "8Gi", {{testing::kExtenderFilterLabel, "unresolvable"}}, {}},
      {"r-c", "r", "4", "8Gi", {{testing::kExtenderFilterLabel, "drop"}}, {}},
      {"r-d", "r", "100m", "8Gi", {}, {}},
      {"q-a", "q", "8", "16Gi", {}, {}},
      {"q-b", "q", "4", "8Gi", {}, {}},
  };
  s.fillers = {{"busy-f-b", "f-b", "1", "2Gi"}, {"busy-q-a", "q-a", "7", "14Gi"}};
  s.pods = {InPool("through", "f"), InPool("nowhere", "r"), InPool("quirk", "q")};
  ExtenderDiff diff(cache ? "extender filter (nodeCacheCapable)" : "extender filter (nodes)", s);
  const Outcome& kube = diff.Kube();
  ASSERT_TRUE(kube.ran);
  EXPECT_EQ(kube.node.at("through"), "f-b");
  EXPECT_EQ(kube.node.at("nowhere"), "");
  // With nodeCacheCapable, the scores see the nodes as they are: the small empty one is freer.
  // Without it, kube-scheduler scores the node objects the extender returned, as nodes without
  // pods: the larger one then looks freer.
  EXPECT_EQ(kube.node.at("quirk"), cache ? "q-b" : "q-a");
  EXPECT_EQ(kube.calls[0].at("through filter"), Call({"f-a", "f-b"}, cache));
  EXPECT_EQ(kube.calls[0].at("nowhere filter"), Call({"r-a", "r-b", "r-c"}, cache));
  const std::string& message = kube.message.at("nowhere");
  EXPECT_NE(message.find("1 extender rejects node"), std::string::npos) << message;
  EXPECT_NE(message.find("1 extender says node is unresolvable"), std::string::npos) << message;
  // Berth matches the returned node objects to its own nodes by name and scores them with their
  // pods (pkg/extender/extender.h): the emptier node, as with nodeCacheCapable.
  diff.CompareBerth(cache ? std::map<std::string, std::string>{}
                          : std::map<std::string, std::string>{{"quirk", "q-b"}});
}

INSTANTIATE_TEST_SUITE_P(NodeCacheCapable, ExtenderFilterDiffE2E, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Names" : "Nodes"; });

// ---- prioritize --------------------------------------------------------------------------------

class ExtenderPrioritizeDiffE2E : public ::testing::TestWithParam<bool> {};

// Pool eq: two equal nodes, the extender's score decides. Pool w: the plugins prefer w-b by 25
// points (w-a is a quarter used); the extender scores w-a one higher, which is worth 50 points at
// weight 5 (scores 0-10 count 10 times over, on the plugins' 0-100 scale) and only 10 if the
// weight were not applied.
TEST_P(ExtenderPrioritizeDiffE2E, WeightedScoresDecide) {
  const bool cache = GetParam();
  ExtenderSpec ext;
  ext.prioritize = "prioritize";
  ext.weight = 5;
  ext.node_cache_capable = cache;
  Scenario s;
  s.extenders = {ext};
  s.nodes = {
      {"eq-a", "eq", "4", "8Gi", {{testing::kExtenderScoreLabel, "3"}}, {}},
      {"eq-b", "eq", "4", "8Gi", {{testing::kExtenderScoreLabel, "8"}}, {}},
      {"w-a", "w", "4", "8Gi", {{testing::kExtenderScoreLabel, "6"}}, {}},
      {"w-b", "w", "4", "8Gi", {{testing::kExtenderScoreLabel, "5"}}, {}},
  };
  s.fillers = {{"busy-w-a", "w-a", "1", "2Gi"}};
  s.pods = {InPool("equal", "eq"), InPool("weighted", "w")};
  ExtenderDiff diff(
      cache ? "extender prioritize (nodeCacheCapable)" : "extender prioritize (nodes)", s);
  const Outcome& kube = diff.Kube();
  ASSERT_TRUE(kube.ran);
  EXPECT_EQ(kube.node.at("equal"), "eq-b");
  EXPECT_EQ(kube.node.at("weighted"), "w-a");
  EXPECT_EQ(kube.calls[0].at("weighted prioritize"), Call({"w-a", "w-b"}, cache));
  diff.CompareBerth();
}

INSTANTIATE_TEST_SUITE_P(NodeCacheCapable, ExtenderPrioritizeDiffE2E, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Names" : "Nodes"; });

// ---- failing extenders
// ---------------------------------------------------------------------------

struct FaultCase {
  bool ignorable;
  ExtenderFault fault;
  std::string name;
};

void PrintTo(const FaultCase& c, std::ostream* out) { *out << c.name; }

class ExtenderFaultDiffE2E : public ::testing::TestWithParam<FaultCase> {};

// The extender filters and scores (it would put the pod on g-b) but fails every call. Ignorable:
// it is skipped and the plugins' choice, g-a, stands. Not ignorable: the pod stays Pending with
// the failure.
TEST_P(ExtenderFaultDiffE2E, FailingExtender) {
  const FaultCase& c = GetParam();
  ExtenderSpec ext;
  ext.filter = "filter";
  ext.prioritize = "prioritize";
  ext.ignorable = c.ignorable;
  ext.fault = c.fault;
  ext.http_timeout = "1s";
  Scenario s;
  s.extenders = {ext};
  s.nodes = {
      {"g-a", "g", "4", "8Gi", {{testing::kExtenderFilterLabel, "reject"}}, {}},
      {"g-b", "g", "4", "8Gi", {{testing::kExtenderScoreLabel, "10"}}, {}},
  };
  s.fillers = {{"busy-g-b", "g-b", "1", "2Gi"}};
  s.pods = {InPool("faulty", "g")};
  ExtenderDiff diff("failing extender " + c.name, s);
  const Outcome& kube = diff.Kube();
  ASSERT_TRUE(kube.ran);
  EXPECT_EQ(kube.node.at("faulty"), c.ignorable ? "g-a" : "");
  EXPECT_EQ(kube.calls[0].count("faulty filter"), 1u);
  diff.CompareBerth();
}

INSTANTIATE_TEST_SUITE_P(
    Faults, ExtenderFaultDiffE2E,
    ::testing::Values(FaultCase{true, ExtenderFault::kStatus500, "Ignorable500"},
                      FaultCase{true, ExtenderFault::kClose, "IgnorableClosed"},
                      FaultCase{true, ExtenderFault::kSlow, "IgnorableSlow"},
                      FaultCase{false, ExtenderFault::kStatus500, "Required500"},
                      FaultCase{false, ExtenderFault::kClose, "RequiredClosed"},
                      FaultCase{false, ExtenderFault::kSlow, "RequiredSlow"}),
    [](const auto& info) { return info.param.name; });

// ---- managedResources --------------------------------------------------------------------------

// Extender 0 manages ext.berth.test/gpu, which m-a and m-b advertise, and rejects m-a. Extender 1
// manages ext.berth.test/license, which no node advertises, with ignoredByScheduler.
TEST(ExtenderManagedResourcesDiffE2E, OnlyPodsAskingForAManagedResourceAreSent) {
  ExtenderSpec gpu;
  gpu.filter = "filter";
  gpu.managed = {{kGpu, false}};
  ExtenderSpec license;
  license.filter = "filter";
  license.prioritize = "prioritize";
  license.managed = {{kLicense, true}};
  Scenario s;
  s.extenders = {gpu, license};
  s.nodes = {
      {"m-a", "m", "4", "8Gi", {{testing::kExtenderFilterLabel, "reject"}}, {{kGpu, "2"}}},
      {"m-b", "m", "4", "8Gi", {}, {{kGpu, "2"}}},
      {"m-c", "m", "4", "8Gi", {}, {}},
  };
  s.pods = {InPool("gpu", "m"), InPool("init-gpu", "m"),
            // Pinned to the node extender 0 rejects: bound only because it is not sent there.
            OnNode("plain", "m-a"),
            // Bound only because NodeResourcesFit ignores the license.
            OnNode("licensed", "m-c")};
  s.pods[0].extended = {{kGpu, "1"}};
  s.pods[1].init_extended = {{kGpu, "1"}};
  s.pods[3].extended = {{kLicense, "1"}};
  ExtenderDiff diff("extender managedResources", s);
  const Outcome& kube = diff.Kube();
  ASSERT_TRUE(kube.ran);
  EXPECT_EQ(kube.node.at("gpu"), "m-b");
  EXPECT_EQ(kube.node.at("init-gpu"), "m-b");
  EXPECT_EQ(kube.node.at("plain"), "m-a");
  EXPECT_EQ(kube.node.at("licensed"), "m-c");
  EXPECT_EQ(kube.calls[0].at("gpu filter"), Call({"m-a", "m-b"}, true));
  EXPECT_EQ(kube.calls[0].count("init-gpu filter"), 1u);
  EXPECT_EQ(kube.calls[0].count("plain filter"), 0u);
  EXPECT_EQ(kube.calls[0].count("licensed filter"), 0u);
  EXPECT_EQ(kube.calls[1].at("licensed filter"), Call({"m-c"}, true));
  EXPECT_EQ(kube.calls[1].count("gpu filter"), 0u);
  EXPECT_EQ(kube.calls[1].count("plain filter"), 0u);
  diff.CompareBerth();
}

// ---- preemptVerb -------------------------------------------------------------------------------

class ExtenderPreemptDiffE2E : public ::testing::TestWithParam<bool> {};

// Pool p: both nodes are full; DefaultPreemption alone would preempt on p-a (its victims have the
// lower priority), but the extender drops p-a from the candidates, so the preemption happens on
// p-b. Pool n: the extender drops the only candidate.
TEST_P(ExtenderPreemptDiffE2E, TheExtenderChoosesTheCandidates) {
  const bool cache = GetParam();
  ExtenderSpec ext;
  ext.preempt = "preempt";
  ext.node_cache_capable = cache;
  Scenario s;
  s.extenders = {ext};
  s.nodes = {
      {"p-a", "p", "4", "8Gi", {{testing::kExtenderPreemptLabel, "reject"}}, {}},
      {"p-b", "p", "4", "8Gi", {}, {}},
      {"n-a", "n", "4", "8Gi", {{testing::kExtenderPreemptLabel, "reject"}}, {}},
  };
  s.fillers = {
      {"low-a1", "p-a", "2", "1Gi", 10}, {"low-a2", "p-a", "2", "1Gi", 10},
      {"mid-b1", "p-b", "2", "1Gi", 20}, {"mid-b2", "p-b", "2", "1Gi", 20},
      {"low-n1", "n-a", "2", "1Gi", 10}, {"low-n2", "n-a", "2", "1Gi", 10},
  };
  s.pods = {InPool("preemptor", "p"), InPool("stuck", "n")};
  for (PodSpec& p : s.pods) {
    p.cpu = "2";
    p.priority = 100;
  }
  ExtenderDiff diff(cache ? "extender preempt (nodeCacheCapable)" : "extender preempt (victims)", s,
                    {10, 20, 100});
  const Outcome& kube = diff.Kube();
  ASSERT_TRUE(kube.ran);
  EXPECT_EQ(kube.node.at("preemptor"), "p-b");
  EXPECT_EQ(kube.node.at("stuck"), "");
  EXPECT_EQ(kube.fillers_left, (std::map<std::string, int>{{"p-a", 2}, {"p-b", 1}, {"n-a", 2}}));
  EXPECT_EQ(kube.calls[0].at("preemptor preempt"), Call({"p-a", "p-b"}, cache));
  EXPECT_EQ(kube.calls[0].at("stuck preempt"), Call({"n-a"}, cache));
  diff.CompareBerth();
}

INSTANTIATE_TEST_SUITE_P(NodeCacheCapable, ExtenderPreemptDiffE2E, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Names" : "Victims"; });

// ---- bindVerb ----------------------------------------------------------------------------------

// The extender binds: the pod on b-a through it, and it refuses to bind on b-e.
TEST(ExtenderBindDiffE2E, TheExtenderBinds) {
  ExtenderSpec ext;
  ext.bind = "bind";
  Scenario s;
  s.extenders = {ext};
  s.nodes = {
      {"b-a", "b", "4", "8Gi", {}, {}},
      {"b-e", "b", "4", "8Gi", {{testing::kExtenderBindLabel, "error"}}, {}},
  };
  s.pods = {OnNode("bound", "b-a"), OnNode("refused", "b-e")};
  ExtenderDiff diff("extender bind", s);
  const Outcome& kube = diff.Kube();
  ASSERT_TRUE(kube.ran);
  EXPECT_EQ(kube.node.at("bound"), "b-a");
  EXPECT_EQ(kube.node.at("refused"), "");
  EXPECT_EQ(kube.binds, std::vector<int>{1});
  EXPECT_EQ(kube.calls[0].at("bound bind"), Call({"b-a"}, false));
  EXPECT_EQ(kube.scheduled_events.count("bound"), 1u);
  diff.CompareBerth();
}

}  // namespace
}  // namespace berth::e2e
