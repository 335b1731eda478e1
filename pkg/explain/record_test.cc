#include "pkg/explain/record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace berth::explain {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<Attempt> Unschedulable() {
  auto a = std::make_shared<Attempt>();
  a->pod = "default/web";
  a->uid = "u1";
  a->profile = "berth-scheduler";
  a->time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1714564800123));
  a->attempt = 3;
  a->outcome = Outcome::kUnschedulable;
  a->message = "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s).";
  a->num_nodes = 5;
  a->evaluated = 5;
  a->groups = {{"TaintToleration",
                "UnschedulableAndUnresolvable",
                {"node(s) had untolerated taint(s)"},
                3,
                {"t1", "t2", "t3"}},
               {"NodeResourcesFit", "Unschedulable", {"Insufficient cpu"}, 2, {"c1", "c2"}}};
  a->post_filter = "DefaultPreemption: preemption: 0/5 nodes are available.";
  return a;
}

TEST(Record, TextShowsTheVerdictTableAndTheHints) {
  Explanation e;
  e.attempt = Unschedulable();
  e.hints_computed = true;
  e.hints_time = e.attempt->time;
  e.hints_nodes = 5;
  e.hints.push_back({"NodeResourcesFit",
                     "reduce cpu request by 300m",
                     2,
                     {{"c1", "cpu 300m short"}, {"c2", "cpu 300m short"}}});
  const std::string text = ToText(e);
  EXPECT_EQ(
      text,
      "Pod default/web (profile berth-scheduler)\n"
      "Last attempt: 2024-05-01T12:00:00.123Z, attempt 3: Unschedulable\n"
      "  0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s).\n"
      "PreFilter: passed, 5 nodes kept\n"
      "Filter: 5 of 5 nodes evaluated, 0 feasible\n"
      "  NODES  PLUGIN            VERDICT        REASONS                           EXAMPLES\n"
      "  3      TaintToleration   unresolvable   node(s) had untolerated taint(s)  t1, t2, t3\n"
      "  2      NodeResourcesFit  unschedulable  Insufficient cpu                  c1, c2\n"
      "PostFilter: DefaultPreemption: preemption: 0/5 nodes are available.\n"
      "What would make it fit (checked 2024-05-01T12:00:00.123Z against 5 nodes):\n"
      "  - reduce cpu request by 300m (fits 2 nodes)\n"
      "      c1: cpu 300m short\n"
      "      c2: cpu 300m short\n");
}

TEST(Record, TextOfABoundPodPutsTheWinnerBesideTheRunnersUp) {
  auto a = std::make_shared<Attempt>();
  a->pod = "default/web";
  a->profile = "berth-scheduler";
  a->attempt = 1;
  a->outcome = Outcome::kBound;
  a->node = "n2";
  a->num_nodes = 3;
  a->evaluated = 3;
  a->feasible = 3;
  a->scores = {{"n2", 300, {{"NodeResourcesFit", 1, 100}, {"TaintToleration", 3, 300}}},
               {"n1", 290, {{"NodeResourcesFit", 1, 90}, {"TaintToleration", 3, 300}}}};
  Explanation e;
  e.attempt = a;
  const std::string text = ToText(e);
  EXPECT_THAT(text, HasSubstr("attempt 1: bound to n2\n"));
  EXPECT_THAT(text, HasSubstr("  PLUGIN            n2 (chosen)  n1\n"
                              "  NodeResourcesFit  100x1=100    90x1=90\n"
                              "  TaintToleration   100x3=300    100x3=300\n"
                              "  TOTAL             300          290\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("What would make it fit")));
}

TEST(Record, JsonCarriesEveryField) {
  Explanation e;
  e.attempt = Unschedulable();
  e.hints.push_back({"TaintToleration", "add toleration dedicated=gpu:NoSchedule", 3, {}});
  e.hints_computed = true;
  e.hints_nodes = 5;
  const nlohmann::json j = ToJson(e);
  EXPECT_EQ(j["attempt"]["pod"], "default/web");
  EXPECT_EQ(j["attempt"]["outcome"], "Unschedulable");
  EXPECT_EQ(j["attempt"]["time"], "2024-05-01T12:00:00.123Z");
  EXPECT_EQ(j["attempt"]["nodes"]["total"], 5);
  EXPECT_EQ(j["attempt"]["groups"][0]["plugin"], "TaintToleration");
  EXPECT_EQ(j["attempt"]["groups"][0]["nodes"], 3);
  EXPECT_EQ(j["attempt"]["groups"][1]["examples"], nlohmann::json({"c1", "c2"}));
  EXPECT_EQ(j["hints"][0]["text"], "add toleration dedicated=gpu:NoSchedule (fits 3 nodes)");
  EXPECT_EQ(j["hints"][0]["nodes"], 3);
  EXPECT_EQ(j["hintsCheckedNodes"], 5);
  EXPECT_FALSE(j["dryRun"].get<bool>());
  EXPECT_FALSE(j["cutShort"].get<bool>());
}

// Dry runs stopped at their budget: the answer does not say that no change was found, since not
// every change was checked.
TEST(Record, AnAnswerCutShortSaysSoInsteadOfThatNothingWasFound) {
  Explanation e;
  e.attempt = Unschedulable();
  e.hints_computed = true;
  e.hints_nodes = 5;
  e.feasible_now = 0;
  e.cut_short = true;
  e.notes.push_back("the dry runs were cut short");
  const std::string text = ToText(e);
  EXPECT_THAT(text, HasSubstr("  none found before the dry runs were cut short\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("no change to the pod found")));
  EXPECT_TRUE(ToJson(e)["cutShort"].get<bool>());

  e.group = "pod group \"ml/train\"";
  e.group_needs = 4;
  e.group_fit_now = 1;
  EXPECT_THAT(ToText(e), HasSubstr("  none found before the dry runs were cut short\n"));
}

TEST(Record, AGroupIsExplainedByHowManyOfItsPodsFitTogetherWithItsNotes) {
  Explanation e;
  e.attempt = Unschedulable();
  e.hints_computed = true;
  e.hints_time = e.attempt->time;
  e.hints_nodes = 5;
  e.feasible_now = 2;
  e.group = "pod group \"ml/train\"";
  e.group_needs = 4;
  e.group_fit_now = 3;
  e.hints.push_back({"NodeResourcesFit",
                     "reduce cpu request by 1 in each pod of pod group \"ml/train\"",
                     2,
                     {},
                     4});
  e.notes.push_back("pod group \"ml/train\" lacks 1 pod: it has 3 of minMember 4");
  const std::string text = ToText(e);
  // The pod fits two nodes alone; what counts is its group.
  EXPECT_THAT(text, ::testing::Not(HasSubstr("its next attempt should place it")));
  EXPECT_THAT(
      text,
      HasSubstr("Now (2024-05-01T12:00:00.123Z): 3 of the 4 pods pod group \"ml/train\" needs "
                "fit together.\n"
                "What would make it fit (checked 2024-05-01T12:00:00.123Z against 5 nodes):\n"
                "  - reduce cpu request by 1 in each pod of pod group \"ml/train\" (4 pods fit "
                "together, on 2 nodes)\n"
                "Note: pod group \"ml/train\" lacks 1 pod: it has 3 of minMember 4\n"));
  const nlohmann::json j = ToJson(e);
  EXPECT_EQ(j["group"], nlohmann::json({{"name", "pod group \"ml/train\""},
                                        {"needs", 4},
                                        {"fitTogetherNow", 3},
                                        {"standIns", 0}}));
  EXPECT_EQ(j["hints"][0]["groupPods"], 4);
  EXPECT_EQ(j["notes"][0], "pod group \"ml/train\" lacks 1 pod: it has 3 of minMember 4");

  e.group_fit_now = 4;
  e.hints.clear();
  e.notes.clear();
  EXPECT_THAT(ToText(e), HasSubstr("4 of the 4 pods pod group \"ml/train\" needs fit together; "
                                   "its next attempt should place them.\n"));
}

TEST(Record, BoundedCutsOnACharacterBoundary) {
  std::string text(kMaxTextBytes - 1, 'a');
  text += "\xc3\xa9\xc3\xa9";  // Two two-byte characters straddling the limit.
  const std::string cut = Bounded(text);
  EXPECT_EQ(cut, std::string(kMaxTextBytes - 1, 'a') + "...");
  EXPECT_EQ(Bounded("short"), "short");
}

}  // namespace
}  // namespace berth::explain
