// The record of each pod's last attempt, and explain and simulate on top of it: the scheduler
// core without an apiserver, with a recording Bind plugin, as scheduler_test.cc.
//
// Every hint test applies the change the hint names to the pod by hand (not through the hint),
// lets the real scheduling cycle place the changed pod, and checks that the cycle found at least
// as many feasible nodes as the hint promised.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using framework::Status;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::NodeBuilder;
using testing::PodBuilder;

class Binder : public framework::BindPlugin {
 public:
  std::string_view Name() const override { return "RecordingBinder"; }
  Status Bind(framework::CycleState&, const api::Pod& pod, const std::string& node) override {
    std::lock_guard lock(mu_);
    if (fail_next_) {
      fail_next_ = false;
      return Status::Error("simulated bind failure");
    }
    bound_[pod.Key()] = node;
    return {};
  }
  std::map<std::string, std::string> bound() {
    std::lock_guard lock(mu_);
    return bound_;
  }
  void FailNext() {
    std::lock_guard lock(mu_);
    fail_next_ = true;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> bound_;
  bool fail_next_ = false;
};

class ExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_ = plugins::registry::InTree();
    registry_["RecordingBinder"] = [this](const nlohmann::json&, framework::Handle&) {
      return binder_;
    };
    config::Configuration cfg = config::DefaultConfiguration();
    auto& plugins = cfg.profiles[0].plugins;
    plugins.bind.disabled.push_back({"*", 0});
    plugins.bind.enabled.push_back({"RecordingBinder", 0});
    SchedulerDeps deps;
    deps.recorder = &recorder_;
    SchedulerOptions options;
    options.seed = 3;
    options.binding_workers = 2;
    scheduler_ = std::make_unique<Scheduler>(cfg, registry_, deps, options);
  }

  void Drain() {
    while (scheduler_->queue().PendingPods().active > 0) scheduler_->ScheduleOne();
    for (int i = 0; i < 500 && scheduler_->InFlightBindings() > 0; i++) {
      std::this_thread::sleep_for(5ms);
    }
  }

  void AddNode(NodeBuilder node) { scheduler_->OnNodeAdd(node.Build()); }

  // Adds the pod, runs its cycle and returns its record (a failed attempt's is kept from a
  // background worker: it is waited for).
  explain::AttemptPtr Schedule(PodBuilder pod) {
    api::PodPtr p = pod.Build();
    pods_[p->Key()] = p;
    scheduler_->OnPodAdd(p);
    Drain();
    explain::AttemptPtr record;
    for (int i = 0; i < 400 && !record; i++) {
      record = scheduler_->attempts().Find(p->Key());
      if (!record) std::this_thread::sleep_for(5ms);
    }
    return record;
  }

  // The hint whose text is `text`; fails the test when there is none.
  explain::Hint HintWithText(const explain::Explanation& e, const std::string& text) {
    std::vector<std::string> texts;
    for (const auto& h : e.hints) {
      if (h.Text() == text) return h;
      texts.push_back(h.Text());
    }
    ADD_FAILURE() << "no hint \"" << text << "\"; hints: " << ::testing::PrintToString(texts)
                  << "\n"
                  << explain::ToText(e);
    return {};
  }

  // Schedules `changed` (the pending pod with a hint applied by hand) in place of `pending`, and
  // checks that the real cycle binds it and found at least `promised` feasible nodes.
  void ExpectChangedPodFits(const std::string& pending, PodBuilder changed, int promised) {
    scheduler_->OnPodDelete(pods_.at(pending));
    const std::string key = changed.pod().Key();
    auto record = Schedule(std::move(changed));
    ASSERT_NE(record, nullptr);
    EXPECT_EQ(record->outcome, explain::Outcome::kBound) << record->message;
    EXPECT_FALSE(binder_->bound()[key].empty());
    EXPECT_GE(record->feasible, promised);
  }

  std::shared_ptr<Binder> binder_ = std::make_shared<Binder>();
  framework::runtime::Registry registry_;
  testing::FakeRecorder recorder_;
  std::unique_ptr<Scheduler> scheduler_;
  std::map<std::string, api::PodPtr> pods_;
};

api::Toleration Tolerate(const std::string& key, const std::string& value, api::TaintEffect e) {
  api::Toleration t;
  t.key = key;
  t.value = value;
  t.op = value.empty() ? api::TolerationOperator::kExists : api::TolerationOperator::kEqual;
  t.effect = e;
  return t;
}

// ---- The record ----

TEST_F(ExplainTest, AnUnschedulableAttemptIsRecordedWithItsVerdictsGrouped) {
  AddNode(NodeBuilder("a").Capacity("1", "4Gi"));
  AddNode(NodeBuilder("b").Capacity("1", "4Gi"));
  AddNode(NodeBuilder("t")
              .Capacity("8", "16Gi")
              .Taint("dedicated", "gpu", api::TaintEffect::kNoSchedule));
  auto record = Schedule(PodBuilder("big").Container("2", "64Mi"));
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->outcome, explain::Outcome::kUnschedulable);
  EXPECT_EQ(record->pod, "default/big");
  EXPECT_EQ(record->profile, "berth-scheduler");
  EXPECT_EQ(record->attempt, 1);
  EXPECT_THAT(record->message,
              ::testing::StartsWith("0/3 nodes are available: 1 node(s) had untolerated taint(s), "
                                    "2 Insufficient cpu. preemption: 0/3 nodes are available: "));
  EXPECT_EQ(record->num_nodes, 3);
  EXPECT_EQ(record->evaluated, 3);
  EXPECT_EQ(record->feasible, 0);
  EXPECT_EQ(record->pre_filter, "");
  ASSERT_EQ(record->groups.size(), 2u);
  EXPECT_EQ(record->groups[0].plugin, "NodeResourcesFit");
  EXPECT_EQ(record->groups[0].nodes, 2);
  EXPECT_THAT(record->groups[0].reasons, ElementsAre("Insufficient cpu"));
  EXPECT_THAT(record->groups[0].examples, ::testing::UnorderedElementsAre("a", "b"));
  EXPECT_EQ(record->groups[1].plugin, "TaintToleration");
  EXPECT_EQ(record->groups[1].code, "UnschedulableAndUnresolvable");
  EXPECT_THAT(record->groups[1].examples, ElementsAre("t"));
  EXPECT_EQ(record->post_filter,
            "DefaultPreemption: preemption: 0/3 nodes are available: 3 Preemption is not helpful "
            "for scheduling.");
  EXPECT_EQ(scheduler_->attempts().pending_count(), 1u);
}

// Verdicts that interleave (short of cpu, tainted, short of memory, tainted, ...) each make one
// group with its own count and first nodes, in a failed cycle and in one that found a node.
TEST_F(ExplainTest, InterleavedVerdictsAreGroupedWithTheirOwnExamples) {
  std::map<std::string, std::vector<std::string>> expected;
  for (int i = 0; i < 12; i++) {
    const std::string name = "n" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    if (i % 2 == 1) {
      AddNode(NodeBuilder(name)
                  .Capacity("8", "16Gi")
                  .Taint("dedicated", "x", api::TaintEffect::kNoSchedule));
      expected["TaintToleration"].push_back(name);
    } else if (i % 4 == 0) {
      AddNode(NodeBuilder(name).Capacity("1", "16Gi"));
      expected["Insufficient cpu"].push_back(name);
    } else {
      AddNode(NodeBuilder(name).Capacity("8", "1Gi"));
      expected["Insufficient memory"].push_back(name);
    }
  }
  auto check = [&](const explain::Attempt& record, int fitting) {
    ASSERT_EQ(record.groups.size(), 3u);
    int counted = 0;
    for (const auto& g : record.groups) {
      const std::string key = g.plugin == "TaintToleration" ? g.plugin : g.reasons.at(0);
      ASSERT_TRUE(expected.contains(key)) << key;
      const auto& nodes = expected.at(key);
      EXPECT_EQ(g.nodes, static_cast<int>(nodes.size())) << key;
      EXPECT_EQ(g.examples.size(), std::min<size_t>(nodes.size(), explain::kExamplesPerGroup));
      for (const auto& example : g.examples) {
        EXPECT_NE(std::find(nodes.begin(), nodes.end(), example), nodes.end()) << key << example;
      }
      counted += g.nodes;
    }
    EXPECT_EQ(counted + fitting, record.num_nodes);
  };
  auto record = Schedule(PodBuilder("p").Container("2", "2Gi"));
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->outcome, explain::Outcome::kUnschedulable);
  check(*record, 0);

  AddNode(NodeBuilder("z-fits").Capacity("8", "16Gi"));
  record = Schedule(PodBuilder("q").Container("2", "2Gi"));
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->outcome, explain::Outcome::kBound);
  check(*record, 1);
}

TEST_F(ExplainTest, ABoundPodsRecordShowsTheWinnersScoresBesideTheRunnersUp) {
  for (int i = 0; i < 5; i++) {
    AddNode(NodeBuilder("n" + std::to_string(i)).Capacity(std::to_string(2 + i), "16Gi"));
  }
  auto record = Schedule(PodBuilder("p").Container("500m", "1Gi"));
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->outcome, explain::Outcome::kBound);
  EXPECT_EQ(record->node, binder_->bound()["default/p"]);
  EXPECT_EQ(record->node, "n4") << "the emptiest node wins under LeastAllocated";
  EXPECT_EQ(record->feasible, 5);
  ASSERT_EQ(record->scores.size(), 4u) << "the winner and the best three others";
  EXPECT_EQ(record->scores[0].node, "n4");
  EXPECT_EQ(record->scores[1].node, "n3");
  for (size_t i = 1; i < record->scores.size(); i++) {
    EXPECT_GE(record->scores[i - 1].total, record->scores[i].total);
  }
  for (const auto& s : record->scores) {
    int64_t sum = 0;
    for (const auto& p : s.plugins) {
      sum += p.weighted;
      EXPECT_GE(p.normalised(), 0);
      EXPECT_LE(p.normalised(), 100);
      EXPECT_EQ(p.weighted, p.normalised() * p.weight);
      if (p.plugin == "TaintToleration") {
        EXPECT_EQ(p.weight, 3);
      }
      if (p.plugin == "NodeResourcesFit") {
        EXPECT_EQ(p.weight, 1);
      }
    }
    EXPECT_EQ(sum, s.total) << s.node;
  }
  EXPECT_EQ(scheduler_->attempts().pending_count(), 0u);
  EXPECT_EQ(scheduler_->attempts().Recent().size(), 1u);
  const std::string text = explain::ToText(*scheduler_->dry_runs().Explain("default/p"));
  EXPECT_THAT(text, HasSubstr("PLUGIN  "));
  EXPECT_THAT(text, HasSubstr("n4 (chosen)  n3"));
}

TEST_F(ExplainTest, NodesRejectedInACycleThatFoundAHomeAreGrouped) {
  AddNode(NodeBuilder("big").Capacity("8", "16Gi"));
  AddNode(NodeBuilder("small-1").Capacity("1", "16Gi"));
  AddNode(NodeBuilder("small-2").Capacity("1", "16Gi"));
  auto record = Schedule(PodBuilder("p").Container("2", "1Gi"));
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->node, "big");
  EXPECT_EQ(record->feasible, 1);
  ASSERT_EQ(record->groups.size(), 1u);
  EXPECT_EQ(record->groups[0].nodes, 2);
  EXPECT_EQ(record->groups[0].plugin, "NodeResourcesFit");
  EXPECT_TRUE(record->scores.empty()) << "one feasible node: nothing was scored";
}

TEST_F(ExplainTest, APendingPodsRecordGoesWhenItIsDeletedOrBound) {
  AddNode(NodeBuilder("a").Capacity("1", "4Gi"));
  ASSERT_NE(Schedule(PodBuilder("gone").Container("2", "64Mi")), nullptr);
  scheduler_->OnPodDelete(pods_["default/gone"]);
  EXPECT_EQ(scheduler_->attempts().Find("default/gone"), nullptr);

  ASSERT_NE(Schedule(PodBuilder("elsewhere").Container("2", "64Mi")), nullptr);
  auto bound = std::make_shared<api::Pod>(*pods_["default/elsewhere"]);
  bound->spec.node_name = "a";
  scheduler_->OnPodUpdate(pods_["default/elsewhere"], bound);
  EXPECT_EQ(scheduler_->attempts().Find("default/elsewhere"), nullptr)
      << "bound by someone else: no longer pending";
  EXPECT_EQ(scheduler_->attempts().pending_count(), 0u);
}

TEST_F(ExplainTest, AFailedBindingIsRecordedWithTheNodeItChose) {
  AddNode(NodeBuilder("a").Capacity("4", "4Gi"));
  binder_->FailNext();
  auto record = Schedule(PodBuilder("p").Container("1", "64Mi"));
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->outcome, explain::Outcome::kFailedAfterSelection);
  EXPECT_EQ(record->node, "a");
  EXPECT_THAT(record->message, HasSubstr("simulated bind failure"));
}

// ---- Hints: each applied by hand, then the real cycle ----

TEST_F(ExplainTest, ResourceShortfallHintNamesTheSmallestReductionAndTheClosestNodes) {
  for (const char* n : {"c1", "c2", "c3"}) AddNode(NodeBuilder(n).Capacity("1", "8Gi"));
  for (const char* n : {"far1", "far2"}) AddNode(NodeBuilder(n).Capacity("500m", "8Gi"));
  ASSERT_NE(Schedule(PodBuilder("p").Container("1300m", "1Gi")), nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->attempt->outcome, explain::Outcome::kUnschedulable);
  EXPECT_EQ(e->hints_nodes, 5);
  EXPECT_EQ(e->feasible_now, 0);
  const explain::Hint h = HintWithText(*e, "reduce cpu request by 300m (fits 3 nodes)");
  EXPECT_EQ(h.plugin, "NodeResourcesFit");
  EXPECT_THAT(h.details, ElementsAre(std::pair<std::string, std::string>{"c1", "cpu 300m short"},
                                     std::pair<std::string, std::string>{"c2", "cpu 300m short"},
                                     std::pair<std::string, std::string>{"c3", "cpu 300m short"}));
  ExpectChangedPodFits("default/p", PodBuilder("p-fixed").Container("1", "1Gi"), h.nodes);
}

TEST_F(ExplainTest, MemoryAndCpuShortfallsAreReducedTogether) {
  AddNode(NodeBuilder("m1").Capacity("2", "1Gi"));
  AddNode(NodeBuilder("m2").Capacity("1", "4Gi"));
  ASSERT_NE(Schedule(PodBuilder("p").Container("2500m", "1536Mi")), nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  // m1 lacks 500m of 2500m and 512Mi of 1536Mi (0.53); m2 lacks 1500m (0.6).
  const explain::Hint h =
      HintWithText(*e, "reduce cpu request by 500m and memory request by 512Mi (fits 1 node)");
  ExpectChangedPodFits("default/p", PodBuilder("p-fixed").Container("2", "1Gi"), h.nodes);
}

TEST_F(ExplainTest, TaintHintTolerationAdmitsThePromisedNodes) {
  for (const char* n : {"g1", "g2"}) {
    AddNode(NodeBuilder(n)
                .Capacity("4", "8Gi")
                .Taint("dedicated", "gpu", api::TaintEffect::kNoSchedule));
  }
  AddNode(
      NodeBuilder("x").Capacity("4", "8Gi").Taint("maintenance", "", api::TaintEffect::kNoExecute));
  ASSERT_NE(Schedule(PodBuilder("p").Container("100m", "64Mi")), nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(e->hints.size(), 2u) << explain::ToText(*e);
  const explain::Hint h =
      HintWithText(*e, "add toleration dedicated=gpu:NoSchedule (fits 2 nodes)");
  EXPECT_THAT(h.details[0], ::testing::Pair("g1", "taint dedicated=gpu:NoSchedule"));
  HintWithText(*e, "add toleration maintenance:NoExecute (fits 1 node)");
  ExpectChangedPodFits("default/p",
                       PodBuilder("p-fixed")
                           .Container("100m", "64Mi")
                           .Toleration(Tolerate("dedicated", "gpu", api::TaintEffect::kNoSchedule)),
                       h.nodes);
}

TEST_F(ExplainTest, NodeSelectorHintRemovesTheTermThatExcludesTheMostNodes) {
  AddNode(NodeBuilder("z1").Capacity("4", "8Gi").Label("zone", "a").Label("disktype", "hdd"));
  AddNode(NodeBuilder("z2").Capacity("4", "8Gi").Label("zone", "a").Label("disktype", "hdd"));
  AddNode(NodeBuilder("z3").Capacity("4", "8Gi").Label("zone", "b").Label("disktype", "hdd"));
  ASSERT_NE(Schedule(PodBuilder("p")
                         .Container("100m", "64Mi")
                         .NodeSelector("disktype", "ssd")
                         .NodeSelector("zone", "a")),
            nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(e->hints.size(), 1u) << "removing zone=a alone opens nothing\n" << explain::ToText(*e);
  const explain::Hint h = HintWithText(*e, "remove nodeSelector disktype=ssd (fits 2 nodes)");
  EXPECT_EQ(h.details.front(),
            (std::pair<std::string, std::string>{"excludes", "3 of the 3 nodes it rejected"}));
  EXPECT_EQ(h.details[1], (std::pair<std::string, std::string>{"z1", "disktype=hdd"}));
  ExpectChangedPodFits("default/p",
                       PodBuilder("p-fixed").Container("100m", "64Mi").NodeSelector("zone", "a"),
                       h.nodes);
}

TEST_F(ExplainTest, RequiredNodeAffinityHintDropsTheBlockingRequirement) {
  AddNode(NodeBuilder("a1").Capacity("4", "8Gi").Label("arch", "amd64").Label("tier", "web"));
  AddNode(NodeBuilder("a2").Capacity("4", "8Gi").Label("arch", "amd64").Label("tier", "web"));
  PodBuilder pod("p");
  pod.Container("100m", "64Mi");
  api::NodeSelectorTerm term;
  term.match_expressions.push_back({"arch", api::SelectorOperator::kIn, {"arm64"}, 0});
  term.match_expressions.push_back({"tier", api::SelectorOperator::kExists, {}, 0});
  pod.pod().spec.affinity.emplace().node_affinity.emplace().required.emplace().terms.push_back(
      term);
  ASSERT_NE(Schedule(pod), nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  const explain::Hint h =
      HintWithText(*e, "remove arch In (arm64) from required node affinity (fits 2 nodes)");
  PodBuilder fixed("p-fixed");
  fixed.Container("100m", "64Mi");
  term.match_expressions.erase(term.match_expressions.begin());
  fixed.pod().spec.affinity.emplace().node_affinity.emplace().required.emplace().terms.push_back(
      term);
  ExpectChangedPodFits("default/p", fixed, h.nodes);
}

TEST_F(ExplainTest, AntiAffinityHintNamesTheTermAndTheDomainsThatBlockIt) {
  for (const char* n : {"h1", "h2"}) AddNode(NodeBuilder(n).Capacity("4", "8Gi"));
  scheduler_->OnPodAdd(
      PodBuilder("web-1").Container("100m", "64Mi").Label("app", "web").Node("h1").Build());
  scheduler_->OnPodAdd(
      PodBuilder("web-2").Container("100m", "64Mi").Label("app", "web").Node("h2").Build());
  api::PodAffinityTerm term;
  term.label_selector.emplace().requirements.push_back(
      {"app", api::SelectorOperator::kIn, {"web"}, 0});
  term.topology_key = "kubernetes.io/hostname";
  PodBuilder pod("p");
  pod.Container("100m", "64Mi").Label("app", "web");
  pod.pod().spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(term);
  ASSERT_NE(Schedule(pod), nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  const explain::Hint h = HintWithText(
      *e,
      "remove the required pod anti-affinity term (topologyKey kubernetes.io/hostname, pods "
      "matching app=web) (fits 2 nodes)");
  EXPECT_THAT(h.details, ElementsAre(::testing::Pair("kubernetes.io/hostname=h1", "1 node"),
                                     ::testing::Pair("kubernetes.io/hostname=h2", "1 node")));
  ExpectChangedPodFits(
      "default/p", PodBuilder("p-fixed").Container("100m", "64Mi").Label("app", "web"), h.nodes);
}

// The pods already on both nodes keep any app=web pod off theirs: the hint names them and the
// label their term selects the pod by.
TEST_F(ExplainTest, ExistingPodsAntiAffinityHintRemovesTheLabelItSelects) {
  for (const char* n : {"h1", "h2"}) AddNode(NodeBuilder(n).Capacity("4", "8Gi"));
  api::PodAffinityTerm term;
  term.label_selector.emplace().requirements.push_back(
      {"app", api::SelectorOperator::kIn, {"web"}, 0});
  term.topology_key = "kubernetes.io/hostname";
  for (const auto& [name, node] : {std::pair{"web-1", "h1"}, std::pair{"web-2", "h2"}}) {
    PodBuilder existing(name);
    existing.Container("100m", "64Mi").Label("app", "cache").Node(node);
    existing.pod().spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(term);
    scheduler_->OnPodAdd(existing.Build());
  }
  ASSERT_NE(
      Schedule(PodBuilder("p").Container("100m", "64Mi").Label("app", "web").Label("tier", "a")),
      nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  const explain::Hint h = HintWithText(
      *e,
      "remove label app=web, which the required pod anti-affinity of default/web-1 and 1 other "
      "pod (topologyKey kubernetes.io/hostname, pods matching app=web) selects (fits 2 "
      "nodes)");
  EXPECT_EQ(h.plugin, "InterPodAffinity");
  EXPECT_THAT(h.details,
              ElementsAre(::testing::Pair("kubernetes.io/hostname=h1", "pod default/web-1"),
                          ::testing::Pair("kubernetes.io/hostname=h2", "pod default/web-2")));
  EXPECT_TRUE(e->notes.empty());
  ExpectChangedPodFits("default/p",
                       PodBuilder("p-fixed").Container("100m", "64Mi").Label("tier", "a"), h.nodes);
}

// A term that selects every pod but app=db ones keeps this pod out whatever labels it drops: no
// hint, a note that names the pod whose term it is. Once that pod is gone, the pod binds.
TEST_F(ExplainTest, ExistingAntiAffinityNoLabelEscapesIsANote) {
  AddNode(NodeBuilder("h1").Capacity("4", "8Gi"));
  api::PodAffinityTerm term;
  term.label_selector.emplace().requirements.push_back(
      {"app", api::SelectorOperator::kNotIn, {"db"}, 0});
  term.topology_key = "kubernetes.io/hostname";
  PodBuilder loner("loner");
  loner.Container("100m", "64Mi").Label("app", "db").Node("h1");
  loner.pod().spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(term);
  api::PodPtr loner_pod = loner.Build();
  scheduler_->OnPodAdd(loner_pod);
  ASSERT_NE(Schedule(PodBuilder("p").Container("100m", "64Mi").Label("app", "web")), nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->hints.empty()) << explain::ToText(*e);
  EXPECT_THAT(e->notes,
              ElementsAre("the required pod anti-affinity of default/loner (topologyKey "
                          "kubernetes.io/hostname, pods matching app NotIn (db)) selects this pod "
                          "whatever its labels: no change to the pod gets past it; those pods "
                          "would have to move or drop the term"));
  EXPECT_THAT(explain::ToText(*e), HasSubstr("Note: the required pod anti-affinity of"));
  scheduler_->OnPodDelete(loner_pod);
  auto record = Schedule(PodBuilder("p2").Container("100m", "64Mi").Label("app", "web"));
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->outcome, explain::Outcome::kBound) << record->message;
}

TEST_F(ExplainTest, SpreadHintRelaxesTheConstraintAndTaintHintAdmitsTheOtherDomain) {
  AddNode(NodeBuilder("za").Capacity("4", "8Gi").Label("zone", "a"));
  AddNode(NodeBuilder("zb")
              .Capacity("4", "8Gi")
              .Label("zone", "b")
              .Taint("dedicated", "batch", api::TaintEffect::kNoSchedule));
  for (const char* name : {"s-1", "s-2"}) {
    scheduler_->OnPodAdd(
        PodBuilder(name).Container("100m", "64Mi").Label("app", "s").Node("za").Build());
  }
  api::TopologySpreadConstraint c;
  c.max_skew = 1;
  c.topology_key = "zone";
  c.label_selector.emplace().requirements.push_back({"app", api::SelectorOperator::kIn, {"s"}, 0});
  PodBuilder pod("p");
  pod.Container("100m", "64Mi").Label("app", "s");
  pod.pod().spec.topology_spread_constraints.push_back(c);
  ASSERT_NE(Schedule(pod), nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  const explain::Hint spread = HintWithText(
      *e,
      "set whenUnsatisfiable: ScheduleAnyway on the topology spread constraint (topologyKey "
      "zone, maxSkew 1, app=s) (fits 1 node)");
  EXPECT_THAT(spread.details, ElementsAre(::testing::Pair("zone=a", "1 node")));
  const explain::Hint taint =
      HintWithText(*e, "add toleration dedicated=batch:NoSchedule (fits 1 node)");

  PodBuilder relaxed("p-relaxed");
  relaxed.Container("100m", "64Mi").Label("app", "s");
  c.when_unsatisfiable = api::WhenUnsatisfiable::kScheduleAnyway;
  relaxed.pod().spec.topology_spread_constraints.push_back(c);
  ExpectChangedPodFits("default/p", relaxed, spread.nodes);
  EXPECT_EQ(binder_->bound()["default/p-relaxed"], "za");
}

TEST_F(ExplainTest, CordonedNodesHintTheirToleration) {
  AddNode(NodeBuilder("c").Capacity("4", "8Gi").Unschedulable());
  ASSERT_NE(Schedule(PodBuilder("p").Container("100m", "64Mi")), nullptr);
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  const explain::Hint h =
      HintWithText(*e, "add toleration node.kubernetes.io/unschedulable:NoSchedule (fits 1 node)");
  ExpectChangedPodFits("default/p",
                       PodBuilder("p-fixed")
                           .Container("100m", "64Mi")
                           .Toleration(Tolerate("node.kubernetes.io/unschedulable", "",
                                                api::TaintEffect::kNoSchedule)),
                       h.nodes);
}

TEST_F(ExplainTest, APodThatFitsNowSaysSoInsteadOfHinting) {
  AddNode(NodeBuilder("small").Capacity("1", "4Gi"));
  ASSERT_NE(Schedule(PodBuilder("p").Container("2", "64Mi")), nullptr);
  AddNode(NodeBuilder("big").Capacity("4", "4Gi"));
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->feasible_now, 1);
  EXPECT_TRUE(e->hints.empty());
  EXPECT_THAT(explain::ToText(*e), HasSubstr("it fits 1 node; its next attempt should place it"));
}

// ---- Simulate ----

TEST_F(ExplainTest, SimulateScoresWithoutAssumingBindingOrReporting) {
  for (int i = 0; i < 4; i++) {
    AddNode(NodeBuilder("n" + std::to_string(i)).Capacity(std::to_string(1 + i), "8Gi"));
  }
  auto pod = PodBuilder("what-if").Container("1500m", "64Mi").Build();
  explain::Explanation e = scheduler_->dry_runs().Simulate(*pod);
  EXPECT_TRUE(e.dry_run);
  ASSERT_NE(e.attempt, nullptr);
  EXPECT_EQ(e.attempt->outcome, explain::Outcome::kBound);
  EXPECT_EQ(e.attempt->node, "n3");
  EXPECT_EQ(e.attempt->feasible, 3);
  ASSERT_EQ(e.attempt->scores.size(), 3u);
  EXPECT_EQ(e.attempt->scores[1].node, "n2");
  ASSERT_EQ(e.attempt->groups.size(), 1u);
  EXPECT_THAT(e.attempt->groups[0].examples, ElementsAre("n0"));
  EXPECT_EQ(scheduler_->cache().Size().assumed_pods, 0u);
  EXPECT_EQ(scheduler_->cache().Size().pods, 0u);
  EXPECT_TRUE(binder_->bound().empty());
  EXPECT_TRUE(recorder_.events().empty());
  EXPECT_EQ(scheduler_->attempts().Find("default/what-if"), nullptr);
  EXPECT_THAT(explain::ToText(e), HasSubstr("would bind to n3"));

  auto too_big = PodBuilder("huge").Container("16", "64Mi").Build();
  explain::Explanation no = scheduler_->dry_runs().Simulate(*too_big);
  EXPECT_EQ(no.attempt->outcome, explain::Outcome::kUnschedulable);
  EXPECT_EQ(no.attempt->message, "0/4 nodes are available: 4 Insufficient cpu.");
  ASSERT_EQ(no.hints.size(), 1u);
  EXPECT_EQ(no.hints[0].Text(), "reduce cpu request by 12 (fits 1 node)");

  PodBuilder other("other");
  other.pod().spec.scheduler_name = "default-scheduler";
  EXPECT_THROW(scheduler_->dry_runs().Simulate(*other.Build()), std::invalid_argument);
}

// Dry runs take turns with the scheduling thread: many of them while it binds pods leave every
// pod bound once, on a node that has room for it.
TEST_F(ExplainTest, DryRunsTakeTurnsWithTheSchedulingThread) {
  for (int i = 0; i < 8; i++) AddNode(NodeBuilder("n" + std::to_string(i)).Capacity("2", "8Gi"));
  scheduler_->Run();
  std::atomic<bool> stop{false};
  std::atomic<int> simulated{0};
  std::thread side([&] {
    auto pod = PodBuilder("probe").Container("500m", "64Mi").Build();
    while (!stop) {
      explain::Explanation e = scheduler_->dry_runs().Simulate(*pod);
      if (e.attempt && e.attempt->outcome != explain::Outcome::kError) simulated++;
    }
  });
  for (int i = 0; i < 30; i++) {
    scheduler_->OnPodAdd(PodBuilder("p" + std::to_string(i)).Container("500m", "64Mi").Build());
  }
  for (int i = 0; i < 400 && binder_->bound().size() < 30; i++) std::this_thread::sleep_for(10ms);
  stop = true;
  side.join();
  scheduler_->Stop();
  const auto bound = binder_->bound();
  EXPECT_EQ(bound.size(), 30u);
  std::map<std::string, int> per_node;
  for (const auto& [pod, node] : bound) per_node[node]++;
  for (const auto& [node, count] : per_node) EXPECT_LE(count, 4) << node;
  EXPECT_GT(simulated.load(), 0);
}

}  // namespace
}  // namespace berth::scheduler
