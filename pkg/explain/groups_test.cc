#include "pkg/explain/groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace berth::explain {
namespace {

using framework::Code;
using framework::FixedReasons;
using framework::Status;
using ::testing::ElementsAre;

Status Rejected(const std::string& plugin, Code code, std::vector<std::string> reasons) {
  Status s(code, std::move(reasons));
  s.WithPlugin(plugin);
  return s;
}

TEST(GroupBuilder, FoldsIdenticalVerdictsWithCountsAndTheFirstExampleNodes) {
  static const FixedReasons kTaint("node(s) had untolerated taint(s)");
  std::vector<std::string> names;
  names.reserve(10);
  for (int i = 0; i < 10; i++) names.push_back("n" + std::to_string(i));
  GroupBuilder b;
  // Interleaved: the cpu verdicts are separate statuses with equal text, the taint ones share
  // one FixedReasons.
  for (int i = 0; i < 10; i++) {
    if (i % 3 == 0) {
      b.Add(names[i],
            Status(Code::kUnschedulableAndUnresolvable, kTaint).WithPlugin("TaintToleration"));
    } else {
      b.Add(names[i], Rejected("NodeResourcesFit", Code::kUnschedulable, {"Insufficient cpu"}));
    }
  }
  Attempt a;
  b.Build(&a);
  EXPECT_EQ(b.nodes(), 10);
  ASSERT_EQ(a.groups.size(), 2u);
  EXPECT_EQ(a.groups[0].plugin, "NodeResourcesFit");
  EXPECT_EQ(a.groups[0].code, "Unschedulable");
  EXPECT_THAT(a.groups[0].reasons, ElementsAre("Insufficient cpu"));
  EXPECT_EQ(a.groups[0].nodes, 6);
  EXPECT_THAT(a.groups[0].examples, ElementsAre("n1", "n2", "n4"));
  EXPECT_EQ(a.groups[1].plugin, "TaintToleration");
  EXPECT_EQ(a.groups[1].code, "UnschedulableAndUnresolvable");
  EXPECT_EQ(a.groups[1].nodes, 4);
  EXPECT_THAT(a.groups[1].examples, ElementsAre("n0", "n3", "n6"));
  EXPECT_EQ(a.other_groups, 0);
}

TEST(GroupBuilder, TellsApartPluginCodeAndReasonSet) {
  GroupBuilder b;
  b.Add("a", Rejected("P1", Code::kUnschedulable, {"x"}));
  b.Add("b", Rejected("P2", Code::kUnschedulable, {"x"}));
  b.Add("c", Rejected("P1", Code::kUnschedulableAndUnresolvable, {"x"}));
  b.Add("d", Rejected("P1", Code::kUnschedulable, {"x", "y"}));
  b.Add("e", Rejected("P1", Code::kUnschedulable, {"x"}));
  Attempt a;
  b.Build(&a);
  ASSERT_EQ(a.groups.size(), 4u);
  EXPECT_EQ(a.groups[0].plugin, "P1");
  EXPECT_EQ(a.groups[0].nodes, 2);
  EXPECT_THAT(a.groups[0].examples, ElementsAre("a", "e"));
  for (size_t i = 1; i < a.groups.size(); i++) EXPECT_EQ(a.groups[i].nodes, 1) << i;
}

TEST(GroupBuilder, KeepsTheLargestGroupsAndCountsTheRest) {
  std::vector<std::string> names;
  names.reserve(200);
  for (int i = 0; i < 200; i++) names.push_back("node-" + std::to_string(i));
  GroupBuilder b;
  // Group g gets g + 1 nodes: 12 groups, 78 nodes.
  int n = 0;
  for (int g = 0; g < 12; g++) {
    for (int k = 0; k <= g; k++) {
      b.Add(names[n++], Rejected("P", Code::kUnschedulable, {"reason " + std::to_string(g)}));
    }
  }
  Attempt a;
  b.Build(&a);
  ASSERT_EQ(a.groups.size(), kMaxGroups);
  EXPECT_EQ(a.groups.front().nodes, 12);
  EXPECT_THAT(a.groups.front().reasons, ElementsAre("reason 11"));
  EXPECT_EQ(a.groups.back().nodes, 5);
  EXPECT_EQ(a.other_groups, 4);
  EXPECT_EQ(a.other_nodes, 1 + 2 + 3 + 4);
}

TEST(GroupBuilder, VerdictsBeyondTheTrackedOnesAreCountedNotLost) {
  std::vector<std::string> names;
  const int distinct = static_cast<int>(GroupBuilder::kMaxTracked) + 10;
  names.reserve(static_cast<size_t>(distinct));
  for (int i = 0; i < distinct; i++) names.push_back("n" + std::to_string(i));
  GroupBuilder b;
  for (int i = 0; i < distinct; i++) {
    b.Add(names[i], Rejected("P", Code::kUnschedulable, {"r" + std::to_string(i)}));
  }
  Attempt a;
  b.Build(&a);
  int counted = a.other_nodes;
  for (const auto& g : a.groups) counted += g.nodes;
  EXPECT_EQ(counted, distinct);
  EXPECT_EQ(a.groups.size(), kMaxGroups);
  EXPECT_GT(a.other_groups, 0);
}

TEST(GroupBuilder, NodesWithoutStatusesFormOneGroupWithTheirExamples) {
  GroupBuilder b;
  std::vector<std::string> names = {"x1", "x2", "x3", "x4"};
  b.AddMany(4000, "NodeAffinity",
            Status::Unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]"),
            {names[0], names[1], names[2], names[3]});
  b.Add("n1", Rejected("NodeResourcesFit", Code::kUnschedulable, {"Insufficient cpu"}));
  Attempt a;
  b.Build(&a);
  ASSERT_EQ(a.groups.size(), 2u);
  EXPECT_EQ(a.groups[0].plugin, "NodeAffinity");
  EXPECT_EQ(a.groups[0].nodes, 4000);
  EXPECT_THAT(a.groups[0].examples, ElementsAre("x1", "x2", "x3"));
  EXPECT_EQ(b.nodes(), 4001);
}

TEST(GroupBuilder, RunsOfSharedReasonsJoinTheGroupsOfSingleNodes) {
  static const FixedReasons kCpu("Insufficient cpu");
  const Status cpu = Status(Code::kUnschedulable, kCpu).WithPlugin("NodeResourcesFit");
  GroupBuilder b;
  b.Add("single", cpu);
  // The group has room for two more examples: both of the run's nodes.
  EXPECT_EQ(b.AddRun(cpu.plugin(), cpu.code(), kCpu, 2), 2u);
  b.AddExample("r1");
  b.AddExample("r2");
  EXPECT_EQ(b.AddRun(cpu.plugin(), Code::kUnschedulableAndUnresolvable, kCpu, 3), 3u);
  b.AddExample("r3");
  // A full group takes no more, however long the run.
  EXPECT_EQ(b.AddRun(cpu.plugin(), cpu.code(), kCpu, 40), 0u);
  b.AddExample("r4");
  Attempt a;
  b.Build(&a);
  EXPECT_EQ(b.nodes(), 46);
  ASSERT_EQ(a.groups.size(), 2u);
  EXPECT_EQ(a.groups[0].nodes, 43);
  EXPECT_EQ(a.groups[0].code, "Unschedulable");
  EXPECT_THAT(a.groups[0].examples, ElementsAre("single", "r1", "r2"));
  EXPECT_THAT(a.groups[0].reasons, ElementsAre("Insufficient cpu"));
  EXPECT_EQ(a.groups[1].nodes, 3);
  EXPECT_EQ(a.groups[1].code, "UnschedulableAndUnresolvable");
  EXPECT_THAT(a.groups[1].examples, ElementsAre("r3"));
}

TEST(GroupBuilder, ResetStartsOver) {
  GroupBuilder b;
  b.Add("a", Rejected("P", Code::kUnschedulable, {"x"}));
  b.Reset();
  b.Add("b", Rejected("Q", Code::kUnschedulable, {"y"}));
  Attempt a;
  b.Build(&a);
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].plugin, "Q");
  EXPECT_THAT(a.groups[0].examples, ElementsAre("b"));
}

TEST(GroupBuilder, LongReasonsAreCut) {
  GroupBuilder b;
  b.Add("a", Rejected("P", Code::kUnschedulable, {std::string(5000, 'x')}));
  Attempt a;
  b.Build(&a);
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].reasons[0].size(), kMaxTextBytes + 3);
  EXPECT_EQ(a.groups[0].reasons[0].substr(kMaxTextBytes), "...");
}

}  // namespace
}  // namespace berth::explain
