// Victim minimisation, PodDisruptionBudget handling and the choice of node, with the default
// profile's plugins deciding what fits.

#include "pkg/plugins/defaultpreemption/victims.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/testing/preemption_test_util.h"

namespace berth::plugins::defaultpreemption {
namespace {

using berth::testing::NodeBuilder;
using berth::testing::PodBuilder;
using framework::Code;
using testing::Info;
using testing::Pdb;
using testing::Pod;

std::vector<std::string> Names(const std::vector<framework::PodInfoPtr>& pods) {
  std::vector<std::string> out;
  out.reserve(pods.size());
  for (const auto& p : pods) out.push_back(p->pod->meta.name);
  return out;
}

TEST(MoreImportantPod, HigherPriorityThenEarlierStartWithPodsNotStartedLast) {
  EXPECT_TRUE(MoreImportantPod(*Pod("a", "1", 2), *Pod("b", "1", 1, "", "2024-01-01T00:00:00Z")));
  EXPECT_TRUE(MoreImportantPod(*Pod("a", "1", 1, "", "2024-01-01T00:00:00Z"),
                               *Pod("b", "1", 1, "", "2024-01-01T00:00:01Z")));
  EXPECT_TRUE(MoreImportantPod(*Pod("a", "1", 1, "", "2024-01-01T00:00:00Z"), *Pod("b", "1", 1)));
  EXPECT_FALSE(MoreImportantPod(*Pod("a", "1", 1), *Pod("b", "1", 1, "", "2024-01-01T00:00:00Z")));
  EXPECT_FALSE(MoreImportantPod(*Pod("a", "1", 1), *Pod("b", "1", 1)));
}

TEST(TerminatingByPreemption, TakesADeletionAndTheSchedulersDisruptionCondition) {
  PodBuilder b("p");
  b.pod().status.conditions.push_back({"DisruptionTarget", "True", "PreemptionByScheduler", ""});
  EXPECT_FALSE(TerminatingByPreemption(*b.Build()));
  b.pod().meta.deletion_timestamp = "2024-01-01T00:00:00Z";
  EXPECT_TRUE(TerminatingByPreemption(*b.Build()));
  b.pod().status.conditions.back().reason = "DeletionByTaintManager";
  EXPECT_FALSE(TerminatingByPreemption(*b.Build()));
}

TEST(SplitByPdbViolation, ChargesEachMatchingBudgetOncePerPodInOrder) {
  PodBuilder other_ns("web-x", "other");
  other_ns.Label("app", "web");
  const std::vector<framework::PodInfoPtr> pods = {
      Info(Pod("web-1", "1", 1, "", "", "web")),
      Info(Pod("web-2", "1", 1, "", "", "web")),
      Info(Pod("web-3", "1", 1, "", "", "web")),
      Info(Pod("db-1", "1", 1, "", "", "db")),
      Info(Pod("unlabelled", "1", 1)),
      Info(other_ns.Build()),
      Info(Pod("cache-1", "1", 1, "", "", "cache")),
  };
  auto no_selector = std::make_shared<api::PodDisruptionBudget>(*Pdb("all", "x", 0));
  no_selector->spec.selector.reset();
  auto empty_selector = std::make_shared<api::PodDisruptionBudget>(*Pdb("empty", "x", 0));
  empty_selector->spec.selector->requirements.clear();
  const std::vector<api::PodDisruptionBudgetPtr> pdbs = {
      // One more disruption allowed, and web-2's eviction already counted.
      Pdb("web", "web", 1, {"web-2"}),
      Pdb("db", "db", 0),
      no_selector,
      empty_selector,
  };
  PdbSplit split = SplitByPdbViolation(pods, pdbs);
  EXPECT_EQ(Names(split.violating), (std::vector<std::string>{"web-3", "db-1"}));
  EXPECT_EQ(Names(split.non_violating),
            (std::vector<std::string>{"web-1", "web-2", "unlabelled", "web-x", "cache-1"}));
}

Candidate MakeCandidate(const std::string& node, const std::vector<api::PodPtr>& victims,
                        int64_t violations = 0) {
  Candidate c;
  c.node = node;
  for (const auto& v : victims) c.victims.push_back(Info(v));
  c.num_pdb_violations = violations;
  return c;
}

TEST(PickOneNodeForPreemption, AppliesUpstreamCriteriaInOrder) {
  struct Case {
    std::string name;
    std::vector<Candidate> candidates;
    std::string want;
  };
  const std::string t0 = "2024-01-01T00:00:00Z", t1 = "2024-01-01T00:00:01Z";
  const std::vector<Case> cases = {
      {"fewest PDB violations first",
       {MakeCandidate("a", {Pod("a1", "1", 1)}, 1), MakeCandidate("b", {Pod("b1", "1", 5)}, 0)},
       "b"},
      {"then the lowest highest-priority victim",
       {MakeCandidate("a", {Pod("a1", "1", 5)}),
        MakeCandidate("b", {Pod("b1", "1", 3), Pod("b2", "1", 3)})},
       "b"},
      {"then the lowest sum of priorities",
       {MakeCandidate("a", {Pod("a1", "1", 3), Pod("a2", "1", 2)}),
        MakeCandidate("b", {Pod("b1", "1", 3), Pod("b2", "1", 1)})},
       "b"},
      {"negative priorities are shifted, so fewer of them win",
       {MakeCandidate("a", {Pod("a1", "1", -5), Pod("a2", "1", -5)}),
        MakeCandidate("b", {Pod("b1", "1", -5)})},
       "b"},
      {"then the fewest victims",
       {MakeCandidate("a", {Pod("a1", "1", 0), Pod("a2", "1", 0)}),
        MakeCandidate("b", {Pod("b1", "1", 0)})},
       "b"},
      {"then the latest start of the highest-priority victims",
       {MakeCandidate("a", {Pod("a1", "1", 2, "", t1), Pod("a2", "1", 1, "", t1)}),
        MakeCandidate("b", {Pod("b1", "1", 2, "", t0), Pod("b2", "1", 1, "", t1)}),
        MakeCandidate("c", {Pod("c1", "1", 2, "", t1), Pod("c2", "1", 1, "", t0)})},
       "a"},
      {"a victim not started yet counts as starting now",
       {MakeCandidate("a", {Pod("a1", "1", 1, "", t1)}), MakeCandidate("b", {Pod("b1", "1", 1)})},
       "b"},
      {"then the first",
       {MakeCandidate("a", {Pod("a1", "1", 1)}), MakeCandidate("b", {Pod("b1", "1", 1)})},
       "a"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.candidates[PickOneNodeForPreemption(c.candidates)].node, c.want) << c.name;
  }
}

class SelectVictimsTest : public ::testing::Test {
 protected:
  // SelectVictimsOnNode for `preemptor` on (a copy of) node `node` after its PreFilter.
  framework::Status Select(const api::PodPtr& preemptor, size_t node, Candidate* out,
                           const std::vector<api::PodDisruptionBudgetPtr>& pdbs = {}) {
    framework::CycleState state;
    framework::PreFilterResult pre;
    fixture_.fwk_->RunPreFilterPlugins(state, *preemptor, fixture_.nodes_, &pre);
    auto copy = fixture_.nodes_[node]->Clone();
    return SelectVictimsOnNode(*fixture_.fwk_, state, *preemptor, *copy, pdbs, out);
  }

  testing::Fixture fixture_;
};

TEST_F(SelectVictimsTest, TwoCpuNodeLosesOnlyTheLessImportantOfTwoLowPriorityPods) {
  fixture_.Build({NodeBuilder("n1")
                      .Capacity("2", "8Gi")
                      .Info({Info(Pod("low-late", "900m", 1, "n1", "2024-01-01T00:00:09Z")),
                             Info(Pod("low-early", "900m", 1, "n1", "2024-01-01T00:00:01Z"))})});
  Candidate c;
  ASSERT_TRUE(Select(Pod("high", "900m", 10), 0, &c).IsSuccess());
  EXPECT_EQ(c.node, "n1");
  EXPECT_EQ(Names(c.victims), (std::vector<std::string>{"low-late"}));
  EXPECT_EQ(c.num_pdb_violations, 0);
}

TEST_F(SelectVictimsTest, ABudgetProtectsItsPodWhenAnotherVictimSuffices) {
  fixture_.Build(
      {NodeBuilder("n1")
           .Capacity("2", "8Gi")
           .Info({Info(Pod("guarded", "900m", 1, "n1", "2024-01-01T00:00:09Z", "guarded")),
                  Info(Pod("plain", "900m", 1, "n1", "2024-01-01T00:00:01Z", "plain"))})});
  Candidate c;
  // Without the budget the later-started "guarded" would go.
  ASSERT_TRUE(
      Select(Pod("high", "900m", 10), 0, &c, {Pdb("min-available", "guarded", 0)}).IsSuccess());
  EXPECT_EQ(Names(c.victims), (std::vector<std::string>{"plain"}));
  EXPECT_EQ(c.num_pdb_violations, 0);

  // When every way violates a budget, the violations are counted; the victims are then in
  // order of importance, whatever budget they belong to.
  ASSERT_TRUE(
      Select(Pod("huge", "1900m", 10), 0, &c, {Pdb("min-available", "guarded", 0)}).IsSuccess());
  EXPECT_EQ(Names(c.victims), (std::vector<std::string>{"plain", "guarded"}));
  EXPECT_EQ(c.num_pdb_violations, 1);
}

TEST_F(SelectVictimsTest, OnlyPodsOfLowerPriorityAreVictims) {
  fixture_.Build(
      {NodeBuilder("n1")
           .Capacity("2", "8Gi")
           .Info({Info(Pod("peer", "900m", 10, "n1")), Info(Pod("above", "900m", 20, "n1"))})});
  Candidate c;
  framework::Status s = Select(Pod("high", "900m", 10), 0, &c);
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.Message(), "No preemption victims found for incoming pod");
}

TEST_F(SelectVictimsTest, NodeThatCannotFitEvenWithoutItsVictimsSaysWhy) {
  fixture_.Build(
      {NodeBuilder("n1")
           .Capacity("2", "8Gi")
           .Info({Info(Pod("keeper", "1500m", 20, "n1")), Info(Pod("low", "100m", 1, "n1"))})});
  Candidate c;
  framework::Status s = Select(Pod("high", "900m", 10), 0, &c);
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.Message(), "Insufficient cpu");
}

// InterPodAffinity keeps its counts in the cycle state: only its RemovePod extension tells it a
// victim is gone, and its AddPod that a reprieved pod is back.
TEST_F(SelectVictimsTest, InterPodAffinitySeesVictimsRemovedThroughItsPreFilterExtension) {
  fixture_.Build({NodeBuilder("n1")
                      .Capacity("4", "8Gi")
                      .Info({Info(Pod("web", "100m", 1, "n1", "", "web")),
                             Info(Pod("db", "100m", 1, "n1", "", "db"))})});
  PodBuilder b("high");
  b.Container("100m", "64Mi").Priority(10);
  api::PodAffinityTerm term;
  term.label_selector.emplace().requirements.push_back(
      {"app", api::SelectorOperator::kIn, {"web"}, 0});
  term.topology_key = "kubernetes.io/hostname";
  b.pod().spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(term);
  Candidate c;
  ASSERT_TRUE(Select(b.Build(), 0, &c).IsSuccess());
  EXPECT_EQ(Names(c.victims), (std::vector<std::string>{"web"}));
}

// PodTopologySpread counts matching pods per domain in the cycle state, brought up to date by its
// extensions: one reprieved pod keeps the skew within bounds, a second would not.
TEST_F(SelectVictimsTest, PodTopologySpreadSeesVictimsRemovedThroughItsPreFilterExtension) {
  fixture_.Build(
      {NodeBuilder("n1")
           .Capacity("4", "8Gi")
           .Info({Info(Pod("spread-1", "100m", 1, "n1", "", "spread")),
                  Info(Pod("spread-2", "100m", 1, "n1", "2024-01-01T00:00:00Z", "spread"))}),
       NodeBuilder("n2").Capacity("4", "8Gi").Info()});
  PodBuilder b("high");
  b.Container("100m", "64Mi").Priority(10).Label("app", "spread");
  api::TopologySpreadConstraint spread;
  spread.max_skew = 2;
  spread.topology_key = "kubernetes.io/hostname";
  spread.label_selector.emplace().requirements.push_back(
      {"app", api::SelectorOperator::kIn, {"spread"}, 0});
  b.pod().spec.topology_spread_constraints.push_back(spread);
  Candidate c;
  ASSERT_TRUE(Select(b.Build(), 0, &c).IsSuccess());
  EXPECT_EQ(Names(c.victims), (std::vector<std::string>{"spread-1"}));
}

TEST_F(SelectVictimsTest, APodNominatedToTheNodeWithAtLeastThePreemptorsPriorityKeepsItsRoom) {
  fixture_.Build(
      {NodeBuilder("n1")
           .Capacity("2", "8Gi")
           .Info({Info(Pod("low-1", "900m", 1, "n1")), Info(Pod("low-2", "900m", 1, "n1"))})});
  Candidate c;
  ASSERT_TRUE(Select(Pod("high", "900m", 10), 0, &c).IsSuccess());
  EXPECT_EQ(c.victims.size(), 1u);

  fixture_.nominator_.AddNominatedPod(Info(Pod("nominated", "900m", 10)), "n1");
  ASSERT_TRUE(Select(Pod("high", "900m", 10), 0, &c).IsSuccess());
  EXPECT_EQ(c.victims.size(), 2u);
  // A nominated pod of lower priority does not count.
  fixture_.nominator_.AddNominatedPod(Info(Pod("nominated", "900m", 5)), "n1");
  ASSERT_TRUE(Select(Pod("high", "900m", 10), 0, &c).IsSuccess());
  EXPECT_EQ(c.victims.size(), 1u);
}

}  // namespace
}  // namespace berth::plugins::defaultpreemption
