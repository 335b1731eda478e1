#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;
using Entries = std::vector<StringMap::Entry>;

// Runs `fn` and returns the DecodeError it throws, failing the test when it does not throw.
template <typename Fn>
DecodeError ExpectDecodeError(Fn fn) {
  try {
    fn();
  } catch (const DecodeError& e) {
    return e;
  }
  ADD_FAILURE() << "no DecodeError thrown";
  return DecodeError("", "");
}

LabelSelector Selector(const char* text) {
  return DecodeLabelSelector(json::parse(text), "spec.selector");
}

TEST(LabelSelectorTest, MatchLabelsBecomeInRequirements) {
  LabelSelector s = Selector(R"({"matchLabels": {"app": "web", "tier": "front"}})");
  ASSERT_EQ(s.requirements.size(), 2u);
  EXPECT_EQ(s.requirements[0].key, "app");
  EXPECT_EQ(s.requirements[0].op, SelectorOperator::kIn);
  EXPECT_EQ(s.requirements[0].values, std::vector<std::string>{"web"});
  EXPECT_TRUE(s.Matches(Labels({{"app", "web"}, {"tier", "front"}, {"extra", "x"}})));
  EXPECT_FALSE(s.Matches(Labels(Entries{{"app", "web"}})));
  EXPECT_FALSE(s.Matches(Labels({{"app", "api"}, {"tier", "front"}})));
  EXPECT_FALSE(s.Matches(Labels()));
}

TEST(LabelSelectorTest, EmptySelectorMatchesEverything) {
  LabelSelector s = Selector("{}");
  EXPECT_TRUE(s.Empty());
  EXPECT_TRUE(s.Matches(Labels()));
  EXPECT_TRUE(s.Matches(Labels(Entries{{"a", "b"}})));
  LabelSelector with_nulls = Selector(R"({"matchLabels": null, "matchExpressions": null})");
  EXPECT_TRUE(with_nulls.Empty());
}

TEST(LabelSelectorTest, MatchExpressions) {
  LabelSelector s = Selector(R"({
    "matchLabels": {"app": "web"},
    "matchExpressions": [
      {"key": "env", "operator": "In", "values": ["prod", "canary", "prod"]},
      {"key": "track", "operator": "NotIn", "values": ["beta"]},
      {"key": "owner", "operator": "Exists"},
      {"key": "legacy", "operator": "DoesNotExist", "values": []}
    ]})");
  ASSERT_EQ(s.requirements.size(), 5u);
  // Values are sorted and deduplicated for binary search.
  EXPECT_EQ(s.requirements[1].values, (std::vector<std::string>{"canary", "prod"}));

  Labels base({{"app", "web"}, {"env", "prod"}, {"owner", "team-a"}});
  EXPECT_TRUE(s.Matches(base));
  Labels canary({{"app", "web"}, {"env", "canary"}, {"owner", "x"}, {"track", "stable"}});
  EXPECT_TRUE(s.Matches(canary));
  EXPECT_FALSE(s.Matches(Labels({{"app", "web"}, {"env", "dev"}, {"owner", "x"}})));
  EXPECT_FALSE(s.Matches(Labels({{"app", "web"}, {"env", "prod"}})));
  EXPECT_FALSE(
      s.Matches(Labels({{"app", "web"}, {"env", "prod"}, {"owner", "x"}, {"track", "beta"}})));
  EXPECT_FALSE(
      s.Matches(Labels({{"app", "web"}, {"env", "prod"}, {"owner", "x"}, {"legacy", ""}})));
}

TEST(LabelSelectorTest, RejectsInvalidExpressions) {
  struct Case {
    const char* json;
    const char* field;
  };
  const Case cases[] = {
      {R"({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})",
       "spec.selector.matchExpressions[0].operator"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Lt", "values": ["1"]}]})",
       "spec.selector.matchExpressions[0].operator"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Within", "values": ["1"]}]})",
       "spec.selector.matchExpressions[0].operator"},
      {R"({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})",
       "spec.selector.matchExpressions[0].values"},
      {R"({"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b"}]})",
       "spec.selector.matchExpressions[0].values"},
      {R"({"matchExpressions": [{"key": "a", "operator": "NotIn"}]})",
       "spec.selector.matchExpressions[0].values"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})",
       "spec.selector.matchExpressions[0].values"},
      {R"({"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["x"]}]})",
       "spec.selector.matchExpressions[0].values"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Exists"}, {"operator": "Exists"}]})",
       "spec.selector.matchExpressions[1].key"},
      {R"({"matchExpressions": [{"key": "a"}]})", "spec.selector.matchExpressions[0].operator"},
      {R"({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]})",
       "spec.selector.matchExpressions[0].values[0]"},
      {R"({"matchExpressions": {"key": "a"}})", "spec.selector.matchExpressions"},
      {R"({"matchExpressions": ["x"]})", "spec.selector.matchExpressions[0]"},
      {R"({"matchLabels": {"app": 3}})", "spec.selector.matchLabels.app"},
      {R"({"matchLabels": []})", "spec.selector.matchLabels"},
      {R"([])", "spec.selector"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    DecodeError e = ExpectDecodeError([&] { Selector(c.json); });
    EXPECT_EQ(e.field(), c.field) << e.what();
  }
}

TEST(RequirementTest, OperatorsOnLabels) {
  Labels labels({{"cores", "16"}, {"name", "n1"}, {"bad", "sixteen"}});
  struct Case {
    Requirement requirement;
    bool matches;
  };
  const Case cases[] = {
      {{"name", SelectorOperator::kIn, {"n0", "n1"}, 0}, true},
      {{"name", SelectorOperator::kIn, {"n2"}, 0}, false},
      {{"missing", SelectorOperator::kIn, {"n1"}, 0}, false},
      {{"name", SelectorOperator::kNotIn, {"n2"}, 0}, true},
      {{"name", SelectorOperator::kNotIn, {"n1"}, 0}, false},
      {{"missing", SelectorOperator::kNotIn, {"n1"}, 0}, true},
      {{"name", SelectorOperator::kExists, {}, 0}, true},
      {{"missing", SelectorOperator::kExists, {}, 0}, false},
      {{"name", SelectorOperator::kDoesNotExist, {}, 0}, false},
      {{"missing", SelectorOperator::kDoesNotExist, {}, 0}, true},
      {{"cores", SelectorOperator::kGt, {"8"}, 8}, true},
      {{"cores", SelectorOperator::kGt, {"16"}, 16}, false},
      {{"cores", SelectorOperator::kLt, {"32"}, 32}, true},
      {{"cores", SelectorOperator::kLt, {"16"}, 16}, false},
      {{"missing", SelectorOperator::kGt, {"0"}, 0}, false},
      {{"missing", SelectorOperator::kLt, {"100"}, 100}, false},
      {{"bad", SelectorOperator::kGt, {"0"}, 0}, false},
      {{"bad", SelectorOperator::kLt, {"100"}, 100}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.requirement.key + " op " + std::to_string(static_cast<int>(c.requirement.op)));
    EXPECT_EQ(c.requirement.Matches(labels), c.matches);
  }
}

NodeSelectorTerm Term(const char* text) {
  return DecodeNodeSelectorTerm(json::parse(text), "term");
}

TEST(NodeSelectorTermTest, ExpressionsAndFieldsAreAnded) {
  NodeSelectorTerm term = Term(R"({
    "matchExpressions": [
      {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
      {"key": "cores", "operator": "Gt", "values": ["4"]},
      {"key": "cores", "operator": "Lt", "values": ["+64"]},
      {"key": "spot", "operator": "DoesNotExist"}
    ],
    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]
  })");
  ASSERT_EQ(term.match_expressions.size(), 4u);
  EXPECT_EQ(term.match_expressions[1].number, 4);
  EXPECT_EQ(term.match_expressions[2].number, 64);
  Labels good({{"kubernetes.io/os", "linux"}, {"cores", "8"}});
  EXPECT_TRUE(term.Matches(good, "n1"));
  EXPECT_TRUE(term.Matches(good, "n2"));
  EXPECT_FALSE(term.Matches(good, "n3"));
  EXPECT_FALSE(term.Matches(Labels({{"kubernetes.io/os", "linux"}, {"cores", "4"}}), "n1"));
  EXPECT_FALSE(term.Matches(Labels({{"kubernetes.io/os", "linux"}, {"cores", "64"}}), "n1"));
  EXPECT_FALSE(term.Matches(Labels({{"kubernetes.io/os", "linux"}, {"cores", "x"}}), "n1"));
  EXPECT_FALSE(term.Matches(
      Labels({{"kubernetes.io/os", "linux"}, {"cores", "8"}, {"spot", "true"}}), "n1"));
  EXPECT_FALSE(term.Matches(Labels({{"kubernetes.io/os", "windows"}, {"cores", "8"}}), "n1"));
}

TEST(NodeSelectorTermTest, FieldsAlone) {
  NodeSelectorTerm in = Term(R"({"matchFields": [
      {"key": "metadata.name", "operator": "In", "values": ["n1"]}]})");
  EXPECT_TRUE(in.Matches(Labels(), "n1"));
  EXPECT_FALSE(in.Matches(Labels(), "n2"));
  NodeSelectorTerm not_in = Term(R"({"matchFields": [
      {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]})");
  EXPECT_FALSE(not_in.Matches(Labels(), "n1"));
  EXPECT_TRUE(not_in.Matches(Labels(), "n2"));
}

TEST(NodeSelectorTermTest, EmptyTermMatchesNothing) {
  NodeSelectorTerm empty = Term("{}");
  EXPECT_FALSE(empty.Matches(Labels(), "n1"));
  EXPECT_FALSE(empty.Matches(Labels(Entries{{"a", "b"}}), "n1"));
  NodeSelectorTerm empty_lists = Term(R"({"matchExpressions": [], "matchFields": []})");
  EXPECT_FALSE(empty_lists.Matches(Labels(), "n1"));
}

TEST(NodeSelectorTest, TermsAreOred) {
  NodeSelector selector;
  EXPECT_FALSE(selector.Matches(Labels(), "n1"));
  selector.terms.push_back(
      Term(R"({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]})"));
  selector.terms.push_back(
      Term(R"({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]})"));
  EXPECT_TRUE(selector.Matches(Labels(Entries{{"zone", "a"}}), "n1"));
  EXPECT_TRUE(selector.Matches(Labels(Entries{{"zone", "b"}}), "n1"));
  EXPECT_FALSE(selector.Matches(Labels(Entries{{"zone", "c"}}), "n1"));
  selector.terms.push_back(Term("{}"));
  EXPECT_FALSE(selector.Matches(Labels(Entries{{"zone", "c"}}), "n1"));
}

TEST(NodeSelectorTermTest, RejectsInvalidRequirements) {
  struct Case {
    const char* json;
    const char* field;
  };
  const Case cases[] = {
      {R"({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]})",
       "term.matchExpressions[0].values[0]"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Lt", "values": ["1.5"]}]})",
       "term.matchExpressions[0].values[0]"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1", "2"]}]})",
       "term.matchExpressions[0].values"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Lt"}]})",
       "term.matchExpressions[0].values"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["1"]}]})",
       "term.matchExpressions[0].operator"},
      {R"({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})",
       "term.matchExpressions[0].values"},
      {R"({"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]})",
       "term.matchFields[0].key"},
      {R"({"matchFields": [{"key": "metadata.name", "operator": "Exists"}]})",
       "term.matchFields[0].operator"},
      {R"({"matchFields": [{"key": "metadata.name", "operator": "Gt", "values": ["1"]}]})",
       "term.matchFields[0].operator"},
      {R"({"matchFields": [{"key": "metadata.name", "operator": "In", "values": "n1"}]})",
       "term.matchFields[0].values"},
      {R"({"matchFields": "x"})", "term.matchFields"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    DecodeError e = ExpectDecodeError([&] { Term(c.json); });
    EXPECT_EQ(e.field(), c.field) << e.what();
  }
}

Toleration Tol(const char* text) { return DecodeToleration(json::parse(text), "tolerations[0]"); }

TEST(TolerationTest, DecodeDefaults) {
  Toleration t = Tol(R"({"key": "k"})");
  EXPECT_EQ(t.op, TolerationOperator::kEqual);
  EXPECT_EQ(t.effect, TaintEffect::kAll);
  EXPECT_FALSE(t.toleration_seconds.has_value());
  Toleration full = Tol(
      R"({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
          "tolerationSeconds": 300})");
  EXPECT_EQ(full.op, TolerationOperator::kExists);
  EXPECT_EQ(full.effect, TaintEffect::kNoExecute);
  EXPECT_EQ(full.toleration_seconds, 300);
  EXPECT_EQ(Tol(R"({"operator": "Equal", "effect": ""})").effect, TaintEffect::kAll);
}

TEST(TolerationTest, RejectsUnknownStrings) {
  EXPECT_EQ(ExpectDecodeError([] { Tol(R"({"key": "k", "operator": "Gt"})"); }).field(),
            "tolerations[0].operator");
  EXPECT_EQ(ExpectDecodeError([] { Tol(R"({"key": "k", "effect": "NoRun"})"); }).field(),
            "tolerations[0].effect");
  EXPECT_EQ(ExpectDecodeError([] { Tol(R"({"key": 1})"); }).field(), "tolerations[0].key");
  EXPECT_EQ(ExpectDecodeError([] { Tol(R"({"key": "k", "tolerationSeconds": "5"})"); }).field(),
            "tolerations[0].tolerationSeconds");
}

TEST(TaintTest, DecodeAndToString) {
  Taint t = DecodeTaint(json::parse(R"({"key": "dedicated", "value": "gpu",
      "effect": "NoSchedule", "timeAdded": null})"),
                        "spec.taints[0]");
  EXPECT_EQ(t.ToString(), "dedicated=gpu:NoSchedule");
  Taint no_value =
      DecodeTaint(json::parse(R"({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
          "timeAdded": "2024-05-01T10:00:00Z"})"),
                  "spec.taints[0]");
  EXPECT_EQ(no_value.ToString(), "node.kubernetes.io/unreachable:NoExecute");
  EXPECT_EQ((Taint{"k", "v", TaintEffect::kPreferNoSchedule}).ToString(), "k=v:PreferNoSchedule");

  EXPECT_EQ(ExpectDecodeError([] {
              DecodeTaint(json::parse(R"({"key": "k", "effect": "Evict"})"), "spec.taints[2]");
            }).field(),
            "spec.taints[2].effect");
  EXPECT_EQ(ExpectDecodeError([] {
              DecodeTaint(json::parse(R"({"key": "k"})"), "spec.taints[2]");
            }).field(),
            "spec.taints[2].effect");
  EXPECT_EQ(ExpectDecodeError([] {
              DecodeTaint(json::parse(R"({"effect": "NoSchedule"})"), "spec.taints[2]");
            }).field(),
            "spec.taints[2].key");
}

TEST(TolerationTest, MatchingTable) {
  using E = TaintEffect;
  using O = TolerationOperator;
  const Taint taints[] = {
      {"dedicated", "gpu", E::kNoSchedule}, {"dedicated", "gpu", E::kPreferNoSchedule},
      {"dedicated", "gpu", E::kNoExecute},  {"dedicated", "", E::kNoSchedule},
      {"other", "gpu", E::kNoSchedule},
  };
  struct Case {
    Toleration toleration;
    // Expected result per taint above, in order.
    std::vector<bool> tolerates;
  };
  const Case cases[] = {
      // Equal with a value, every effect.
      {{"dedicated", O::kEqual, "gpu", E::kNoSchedule, {}}, {true, false, false, false, false}},
      {{"dedicated", O::kEqual, "gpu", E::kPreferNoSchedule, {}},
       {false, true, false, false, false}},
      {{"dedicated", O::kEqual, "gpu", E::kNoExecute, {}}, {false, false, true, false, false}},
      {{"dedicated", O::kEqual, "gpu", E::kAll, {}}, {true, true, true, false, false}},
      // Equal with another value, and with the empty value.
      {{"dedicated", O::kEqual, "cpu", E::kAll, {}}, {false, false, false, false, false}},
      {{"dedicated", O::kEqual, "", E::kNoSchedule, {}}, {false, false, false, true, false}},
      // Exists ignores the value but not the key or effect.
      {{"dedicated", O::kExists, "", E::kNoSchedule, {}}, {true, false, false, true, false}},
      {{"dedicated", O::kExists, "", E::kPreferNoSchedule, {}}, {false, true, false, false, false}},
      {{"dedicated", O::kExists, "", E::kNoExecute, {}}, {false, false, true, false, false}},
      {{"dedicated", O::kExists, "", E::kAll, {}}, {true, true, true, true, false}},
      // Empty key with Exists tolerates every key (for the given effect).
      {{"", O::kExists, "", E::kAll, {}}, {true, true, true, true, true}},
      {{"", O::kExists, "", E::kNoSchedule, {}}, {true, false, false, true, true}},
      {{"", O::kExists, "", E::kNoExecute, 60}, {false, false, true, false, false}},
      // Empty key requires Exists.
      {{"", O::kEqual, "gpu", E::kAll, {}}, {false, false, false, false, false}},
      {{"other", O::kEqual, "gpu", E::kAll, {}}, {false, false, false, false, true}},
  };
  for (const Case& c : cases) {
    for (size_t i = 0; i < std::size(taints); ++i) {
      SCOPED_TRACE("toleration key=" + c.toleration.key + " value=" + c.toleration.value +
                   " op=" + std::to_string(static_cast<int>(c.toleration.op)) +
                   " effect=" + std::string(TaintEffectName(c.toleration.effect)) + " taint " +
                   taints[i].ToString());
      EXPECT_EQ(c.toleration.Tolerates(taints[i]), c.tolerates[i]);
    }
  }
}

TEST(TolerationTest, TolerationsTolerateAny) {
  Taint taint{"dedicated", "gpu", TaintEffect::kNoSchedule};
  std::vector<Toleration> none;
  EXPECT_FALSE(TolerationsTolerate(none, taint));
  std::vector<Toleration> some = {
      {"other", TolerationOperator::kExists, "", TaintEffect::kAll, {}},
      {"dedicated", TolerationOperator::kEqual, "gpu", TaintEffect::kNoSchedule, {}},
  };
  EXPECT_TRUE(TolerationsTolerate(some, taint));
  some.pop_back();
  EXPECT_FALSE(TolerationsTolerate(some, taint));
}

TEST(TaintEffectTest, Names) {
  EXPECT_EQ(TaintEffectName(TaintEffect::kNoSchedule), "NoSchedule");
  EXPECT_EQ(TaintEffectName(TaintEffect::kPreferNoSchedule), "PreferNoSchedule");
  EXPECT_EQ(TaintEffectName(TaintEffect::kNoExecute), "NoExecute");
  EXPECT_EQ(TaintEffectName(TaintEffect::kAll), "");
}

}  // namespace
}  // namespace berth::api
