#include "pkg/plugins/nodeaffinity/nodeaffinity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "test/testing/batch.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::nodeaffinity {
namespace {

using framework::Code;
using framework::QueueingHint;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

api::NodeSelectorTerm Term(const std::string& term_json) {
  return api::DecodeNodeSelectorTerm(json::parse(term_json), "term");
}

// A pod whose required node affinity is the ORed `terms` (JSON NodeSelectorTerms).
testing::PodBuilder PodRequiring(const std::vector<std::string>& terms) {
  testing::PodBuilder pod("p");
  pod.Uid("uid");
  api::NodeSelector selector;
  for (const auto& t : terms) selector.terms.push_back(Term(t));
  api::Affinity affinity;
  affinity.node_affinity.emplace().required = std::move(selector);
  pod.pod().spec.affinity = std::move(affinity);
  return pod;
}

testing::PodBuilder PodPreferring(const std::vector<std::pair<int32_t, std::string>>& terms) {
  testing::PodBuilder pod("p");
  api::Affinity affinity;
  auto& node_affinity = affinity.node_affinity.emplace();
  for (const auto& [weight, term] : terms) node_affinity.preferred.push_back({weight, Term(term)});
  pod.pod().spec.affinity = std::move(affinity);
  return pod;
}

std::shared_ptr<NodeAffinity> NewPlugin(const json& args = nullptr) {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<NodeAffinity>(New(args, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

framework::NodeInfoPtr NodeWithLabels(
    const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels) {
  testing::NodeBuilder node(name);
  for (const auto& [k, v] : labels) node.Label(k, v);
  return node.Info();
}

struct FilterCase {
  std::string name;
  api::PodPtr pod;
  framework::NodeInfoPtr node;
  std::string want_reason;  // Empty: the node fits.
};

void RunFilterCases(NodeAffinity& plugin, const std::vector<FilterCase>& cases) {
  for (const FilterCase& c : cases) {
    framework::CycleState state;
    framework::PreFilterResult result;
    framework::Status pre = plugin.PreFilter(state, *c.pod, {c.node}, &result);
    if (pre.IsSkip()) {
      EXPECT_TRUE(c.want_reason.empty()) << c.name << ": PreFilter skipped a constrained pod";
      continue;
    }
    ASSERT_TRUE(pre.IsSuccess()) << c.name << ": " << pre.Message();
    framework::Status status = plugin.Filter(state, *c.pod, *c.node);
    {
      SCOPED_TRACE(c.name);
      testing::ExpectFilterNodesMatchesFilter(plugin, state, *c.pod, {c.node});
    }
    if (c.want_reason.empty()) {
      EXPECT_TRUE(status.IsSuccess()) << c.name << ": " << status.Message();
    } else {
      EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable) << c.name;
      EXPECT_EQ(status.Message(), c.want_reason) << c.name;
    }
  }
}

const std::string kPodReason(kErrReasonPod);

TEST(NodeAffinityTest, FilterNodeSelector) {
  const std::vector<FilterCase> cases = {
      {"no constraints", testing::PodBuilder("p").Build(), NodeWithLabels("n", {}), ""},
      {"selector, node without labels", testing::PodBuilder("p").NodeSelector("foo", "bar").Build(),
       NodeWithLabels("n", {}), kPodReason},
      {"selector matches", testing::PodBuilder("p").NodeSelector("foo", "bar").Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), ""},
      {"selector is a subset of the node labels",
       testing::PodBuilder("p").NodeSelector("foo", "bar").Build(),
       NodeWithLabels("n", {{"foo", "bar"}, {"baz", "blah"}}), ""},
      {"selector value differs", testing::PodBuilder("p").NodeSelector("foo", "bar").Build(),
       NodeWithLabels("n", {{"foo", "baz"}}), kPodReason},
      {"every selector entry must match",
       testing::PodBuilder("p").NodeSelector("foo", "bar").NodeSelector("baz", "blah").Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), kPodReason},
  };
  RunFilterCases(*NewPlugin(), cases);
}

TEST(NodeAffinityTest, RejectedNodesShareOneReasonList) {
  // A selector that matches a few nodes rejects the rest of the cluster in every cycle: each
  // rejection points at one list instead of allocating its own.
  auto plugin = NewPlugin();
  framework::CycleState state;
  auto pod = testing::PodBuilder("p").NodeSelector("foo", "bar").Build();
  framework::Status a = plugin->Filter(state, *pod, *NodeWithLabels("a", {{"foo", "baz"}}));
  framework::Status b = plugin->Filter(state, *pod, *NodeWithLabels("b", {}));
  EXPECT_THAT(a.reasons(), ElementsAre(kPodReason));
  EXPECT_EQ(&a.reasons(), &b.reasons());
}

TEST(NodeAffinityTest, FilterNodesGivesEveryNodeFiltersStatus) {
  std::vector<std::pair<std::string, std::string>> many_labels;
  many_labels.reserve(20);
  for (int i = 0; i < 20; i++) many_labels.emplace_back("label-" + std::to_string(i), "v");
  auto many_with_foo = many_labels;
  many_with_foo.emplace_back("foo", "bar");
  const std::vector<framework::NodeInfoPtr> nodes = {
      NodeWithLabels("fits", {{"foo", "bar"}, {"zone", "a"}}),
      NodeWithLabels("no-labels", {}),
      NodeWithLabels("other-value", {{"foo", "baz"}}),
      NodeWithLabels("many-labels-fits", many_with_foo),
      NodeWithLabels("many-labels", many_labels),
      NodeWithLabels("fits-last", {{"foo", "bar"}}),
      std::make_shared<framework::NodeInfo>(),
  };
  const auto pod = testing::PodBuilder("p").NodeSelector("foo", "bar").Build();
  framework::CycleState state;
  testing::ExpectFilterNodesMatchesFilter(*NewPlugin(), state, *pod, nodes);
  // Besides matching Filter, each node gets the status its labels call for.
  const auto pointers = testing::NodePointers(nodes);
  std::vector<framework::Status> statuses(nodes.size());
  NewPlugin()->FilterNodes(state, *pod, pointers, statuses);
  EXPECT_TRUE(statuses[0].IsSuccess());
  EXPECT_EQ(statuses[1].Message(), kPodReason);
  EXPECT_EQ(statuses[2].Message(), kPodReason);
  EXPECT_TRUE(statuses[3].IsSuccess());
  EXPECT_EQ(statuses[4].Message(), kPodReason);
  EXPECT_TRUE(statuses[5].IsSuccess());
  EXPECT_EQ(statuses[6].code(), Code::kError);
}

// Over listed nodes (as the snapshot lists them) the plugin keeps each recurring selection's
// outcomes across cycles; every cycle must still give each node what Filter gives it, through a
// relabelled, an added and a removed node, with an addedAffinity in play.
TEST(NodeAffinityTest, KeptSelectionFollowsTheNodeListAcrossCycles) {
  auto plugin =
      NewPlugin(json::parse(R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["gpu"]}]}]}}})"));
  std::vector<framework::NodeInfoPtr> nodes = {
      NodeWithLabels("fits", {{"foo", "bar"}}),
      NodeWithLabels("other-value", {{"foo", "baz"}}),
      NodeWithLabels("gpu", {{"foo", "bar"}, {"pool", "gpu"}}),
      NodeWithLabels("later-fits", {}),
  };
  const auto pod =
      PodRequiring(
          {R"({"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]})"})
          .NodeSelector("team", "a")
          .Build();
  auto cycle = [&](const std::string& when) -> std::vector<std::string> {
    SCOPED_TRACE(when);
    for (size_t i = 0; i < nodes.size(); i++) nodes[i]->set_list_index(static_cast<uint32_t>(i));
    framework::CycleState state;
    framework::PreFilterResult result;
    EXPECT_TRUE(plugin->PreFilter(state, *pod, nodes, &result).IsSuccess());
    testing::ExpectFilterNodesMatchesFilter(*plugin, state, *pod, nodes);
    const auto pointers = testing::NodePointers(nodes);
    std::vector<framework::Status> statuses(nodes.size());
    plugin->FilterNodes(state, *pod, pointers, statuses);
    std::vector<std::string> out;
    for (const auto& s : statuses) out.push_back(s.IsSuccess() ? "ok" : s.Message());
    return out;
  };
  const std::string enforced(kErrReasonEnforced);
  for (const char* when : {"first", "second", "third"}) {
    EXPECT_EQ(cycle(when),
              (std::vector<std::string>{kPodReason, kPodReason, enforced, kPodReason}));
  }
  nodes[3] = NodeWithLabels("later-fits", {{"foo", "bar"}, {"team", "a"}});
  nodes[0] = NodeWithLabels("fits", {{"foo", "bar"}, {"team", "a"}});
  EXPECT_EQ(cycle("relabelled"), (std::vector<std::string>{"ok", kPodReason, enforced, "ok"}));
  nodes.push_back(NodeWithLabels("added", {{"foo", "bar"}, {"team", "a"}, {"pool", "gpu"}}));
  EXPECT_EQ(cycle("added"), (std::vector<std::string>{"ok", kPodReason, enforced, "ok", enforced}));
  nodes.erase(nodes.begin());
  EXPECT_EQ(cycle("removed"), (std::vector<std::string>{kPodReason, enforced, "ok", enforced}));
}

TEST(NodeAffinityTest, FilterOperators) {
  auto In = [](const std::string& key, const std::string& values) {
    return R"({"matchExpressions":[{"key":")" + key + R"(","operator":"In","values":)" + values +
           "}]}";
  };
  auto Op = [](const std::string& key, const std::string& op, const std::string& values) {
    return R"({"matchExpressions":[{"key":")" + key + R"(","operator":")" + op + "\"" +
           (values.empty() ? "" : R"(,"values":)" + values) + "}]}";
  };
  const std::vector<FilterCase> cases = {
      {"In matches", PodRequiring({In("foo", R"(["value1","bar"])")}).Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), ""},
      {"In does not match", PodRequiring({In("foo", R"(["value1"])")}).Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), kPodReason},
      {"In, label missing", PodRequiring({In("foo", R"(["bar"])")}).Build(),
       NodeWithLabels("n", {}), kPodReason},
      {"NotIn matches", PodRequiring({Op("foo", "NotIn", R"(["value1","value2"])")}).Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), ""},
      {"NotIn, label missing", PodRequiring({Op("foo", "NotIn", R"(["value1"])")}).Build(),
       NodeWithLabels("n", {}), ""},
      {"NotIn does not match", PodRequiring({Op("foo", "NotIn", R"(["bar"])")}).Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), kPodReason},
      {"Exists matches", PodRequiring({Op("foo", "Exists", "")}).Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), ""},
      {"Exists, label missing", PodRequiring({Op("foo", "Exists", "")}).Build(),
       NodeWithLabels("n", {}), kPodReason},
      {"DoesNotExist matches", PodRequiring({Op("foo", "DoesNotExist", "")}).Build(),
       NodeWithLabels("n", {{"bar", "x"}}), ""},
      {"DoesNotExist, label present", PodRequiring({Op("foo", "DoesNotExist", "")}).Build(),
       NodeWithLabels("n", {{"foo", "x"}}), kPodReason},
      {"Gt matches", PodRequiring({Op("kernel-version", "Gt", R"(["0204"])")}).Build(),
       NodeWithLabels("n", {{"kernel-version", "0206"}}), ""},
      {"Gt does not match", PodRequiring({Op("kernel-version", "Gt", R"(["0204"])")}).Build(),
       NodeWithLabels("n", {{"kernel-version", "0204"}}), kPodReason},
      {"Gt, label not a number", PodRequiring({Op("kernel-version", "Gt", R"(["1"])")}).Build(),
       NodeWithLabels("n", {{"kernel-version", "v2"}}), kPodReason},
      {"Lt matches", PodRequiring({Op("mem", "Lt", R"(["3"])")}).Build(),
       NodeWithLabels("n", {{"mem", "2"}}), ""},
      {"Lt does not match", PodRequiring({Op("mem", "Lt", R"(["3"])")}).Build(),
       NodeWithLabels("n", {{"mem", "3"}}), kPodReason},
      {"Lt, label missing", PodRequiring({Op("mem", "Lt", R"(["3"])")}).Build(),
       NodeWithLabels("n", {}), kPodReason},
      {"expressions of one term are ANDed",
       PodRequiring({R"({"matchExpressions":[{"key":"foo","operator":"Exists"},
                                              {"key":"GPU","operator":"In","values":["true"]}]})"})
           .Build(),
       NodeWithLabels("n", {{"foo", "x"}}), kPodReason},
      {"terms are ORed: second term matches",
       PodRequiring({In("foo", R"(["bar"])"), In("diffkey", R"(["wrong"])")}).Build(),
       NodeWithLabels("n", {{"diffkey", "wrong"}}), ""},
      {"terms are ORed: no term matches",
       PodRequiring({In("foo", R"(["bar"])"), In("diffkey", R"(["wrong"])")}).Build(),
       NodeWithLabels("n", {{"other", "x"}}), kPodReason},
      {"an empty term matches nothing", PodRequiring({"{}"}).Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), kPodReason},
      {"required affinity without terms matches nothing", PodRequiring({}).Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), kPodReason},
      {"selector and affinity must both match",
       PodRequiring({In("foo", R"(["bar"])")}).NodeSelector("zone", "a").Build(),
       NodeWithLabels("n", {{"foo", "bar"}}), kPodReason},
      {"selector and affinity both match",
       PodRequiring({In("foo", R"(["bar"])")}).NodeSelector("zone", "a").Build(),
       NodeWithLabels("n", {{"foo", "bar"}, {"zone", "a"}}), ""},
      {"matchFields metadata.name matches",
       PodRequiring({R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["n"]}]})"})
           .Build(),
       NodeWithLabels("n", {}), ""},
      {"matchFields metadata.name does not match",
       PodRequiring(
           {R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["other"]}]})"})
           .Build(),
       NodeWithLabels("n", {}), kPodReason},
  };
  RunFilterCases(*NewPlugin(), cases);
}

TEST(NodeAffinityTest, FilterAddedAffinity) {
  auto plugin = NewPlugin(json::parse(R"({"addedAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["foo"]}]}]}}})"));
  const std::string enforced(kErrReasonEnforced);
  const std::vector<FilterCase> cases = {
      {"added affinity matches", testing::PodBuilder("p").Build(),
       NodeWithLabels("n", {{"zone", "foo"}}), ""},
      {"added affinity does not match", testing::PodBuilder("p").Build(),
       NodeWithLabels("n", {{"zone", "bar"}}), enforced},
      {"added affinity matches but the pod's does not",
       PodRequiring({R"({"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]}]})"})
           .Build(),
       NodeWithLabels("n", {{"zone", "foo"}}), kPodReason},
      {"both match",
       PodRequiring({R"({"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]}]})"})
           .Build(),
       NodeWithLabels("n", {{"zone", "foo"}, {"foo", "bar"}}), ""},
  };
  RunFilterCases(*plugin, cases);
}

TEST(NodeAffinityTest, PreFilter) {
  auto names_term = [](const std::string& values) {
    return R"({"matchFields":[{"key":"metadata.name","operator":"In","values":)" + values + "}]}";
  };
  struct Case {
    std::string name;
    api::PodPtr pod;
    Code want_code;
    std::optional<std::set<std::string>> want_nodes;  // nullopt: all nodes.
  };
  const std::vector<Case> cases = {
      {"nothing to check", testing::PodBuilder("p").Build(), Code::kSkip, std::nullopt},
      {"node selector only", testing::PodBuilder("p").NodeSelector("a", "b").Build(),
       Code::kSuccess, std::nullopt},
      {"label affinity only",
       PodRequiring({R"({"matchExpressions":[{"key":"foo","operator":"Exists"}]})"}).Build(),
       Code::kSuccess, std::nullopt},
      {"one term with node names", PodRequiring({names_term(R"(["node1"])")}).Build(),
       Code::kSuccess, std::set<std::string>{"node1"}},
      {"terms union",
       PodRequiring({names_term(R"(["node1"])"), names_term(R"(["node2"])")}).Build(),
       Code::kSuccess, std::set<std::string>{"node1", "node2"}},
      {"requirements of one term intersect",
       PodRequiring({R"({"matchFields":[
            {"key":"metadata.name","operator":"In","values":["node1","node2"]},
            {"key":"metadata.name","operator":"In","values":["node2","node3"]}]})"})
           .Build(),
       Code::kSuccess, std::set<std::string>{"node2"}},
      {"a term without node names admits all nodes",
       PodRequiring({names_term(R"(["node1"])"),
                     R"({"matchExpressions":[{"key":"foo","operator":"Exists"}]})"})
           .Build(),
       Code::kSuccess, std::nullopt},
      {"NotIn does not narrow",
       PodRequiring({R"({"matchFields":[
            {"key":"metadata.name","operator":"NotIn","values":["node1"]}]})"})
           .Build(),
       Code::kSuccess, std::nullopt},
      {"conflicting names",
       PodRequiring({R"({"matchFields":[
            {"key":"metadata.name","operator":"In","values":["node1"]},
            {"key":"metadata.name","operator":"In","values":["node2"]}]})"})
           .Build(),
       Code::kUnschedulableAndUnresolvable, std::nullopt},
  };
  auto plugin = NewPlugin();
  for (const Case& c : cases) {
    framework::CycleState state;
    framework::PreFilterResult result;
    framework::Status status = plugin->PreFilter(state, *c.pod, {}, &result);
    EXPECT_EQ(status.code(), c.want_code) << c.name;
    EXPECT_EQ(result.node_names, c.want_nodes) << c.name;
    if (c.want_code == Code::kUnschedulableAndUnresolvable) {
      EXPECT_EQ(status.Message(), "pod affinity terms conflict") << c.name;
    }
  }
}

TEST(NodeAffinityTest, PreFilterDoesNotSkipWithAddedAffinity) {
  auto plugin = NewPlugin(json::parse(R"({"addedAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}})"));
  framework::CycleState state;
  framework::PreFilterResult result;
  EXPECT_TRUE(plugin->PreFilter(state, *testing::PodBuilder("p").Build(), {}, &result).IsSuccess());
  EXPECT_TRUE(result.AllNodes());
}

// Runs PreScore, Score on every node and NormalizeScore; returns raw and normalized scores.
std::pair<std::vector<int64_t>, std::vector<int64_t>> ScoreNodes(
    NodeAffinity& plugin, const api::Pod& pod, const std::vector<framework::NodeInfoPtr>& nodes) {
  framework::CycleState state;
  EXPECT_TRUE(plugin.PreScore(state, pod, testing::NodePointers(nodes)).IsSuccess());
  framework::NodeScoreList scores;
  std::vector<int64_t> raw;
  for (const auto& node : nodes) {
    int64_t score = -1;
    EXPECT_TRUE(plugin.Score(state, pod, *node, &score).IsSuccess());
    raw.push_back(score);
    scores.push_back({node->name(), score});
  }
  EXPECT_TRUE(plugin.GetScoreExtensions()->NormalizeScore(state, pod, scores).IsSuccess());
  std::vector<int64_t> normalized;
  for (const auto& s : scores) normalized.push_back(s.score);
  return {raw, normalized};
}

TEST(NodeAffinityTest, ScorePreferredTerms) {
  api::PodPtr pod =
      PodPreferring(
          {{2, R"({"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]}]})"},
           {4, R"({"matchExpressions":[{"key":"key","operator":"Exists"}]})"},
           {5, R"({"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]},
                                       {"key":"key","operator":"In","values":["value"]},
                                       {"key":"az","operator":"In","values":["az1"]}]})"}})
          .Build();
  std::vector<framework::NodeInfoPtr> nodes = {
      NodeWithLabels("node1", {{"foo", "bar"}}),
      NodeWithLabels("node2", {{"key", "value"}}),
      NodeWithLabels("node3", {{"foo", "bar"}, {"key", "value"}, {"az", "az1"}}),
      NodeWithLabels("node4", {}),
  };
  auto [raw, normalized] = ScoreNodes(*NewPlugin(), *pod, nodes);
  EXPECT_EQ(raw, (std::vector<int64_t>{2, 4, 11, 0}));
  EXPECT_EQ(normalized, (std::vector<int64_t>{18, 36, 100, 0}));
}

TEST(NodeAffinityTest, ScoreAddsAddedAffinityPreferredTerms) {
  auto plugin = NewPlugin(json::parse(R"({"addedAffinity": {
      "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 3, "preference": {"matchExpressions": [
          {"key": "zone", "operator": "In", "values": ["z1"]}]}}]}})"));
  api::PodPtr pod =
      PodPreferring({{1, R"({"matchExpressions":[{"key":"foo","operator":"Exists"}]})"}}).Build();
  std::vector<framework::NodeInfoPtr> nodes = {
      NodeWithLabels("node1", {{"zone", "z1"}, {"foo", "x"}}),
      NodeWithLabels("node2", {{"zone", "z1"}}),
      NodeWithLabels("node3", {{"foo", "x"}}),
      NodeWithLabels("node4", {}),
  };
  auto [raw, normalized] = ScoreNodes(*plugin, *pod, nodes);
  EXPECT_EQ(raw, (std::vector<int64_t>{4, 3, 1, 0}));
  EXPECT_EQ(normalized, (std::vector<int64_t>{100, 75, 25, 0}));

  // A pod without preferences is still scored by the added terms.
  auto [raw_plain, normalized_plain] =
      ScoreNodes(*plugin, *testing::PodBuilder("q").Build(), nodes);
  EXPECT_EQ(raw_plain, (std::vector<int64_t>{3, 3, 0, 0}));
  EXPECT_EQ(normalized_plain, (std::vector<int64_t>{100, 100, 0, 0}));
}

TEST(NodeAffinityTest, ScoreNoMatchesNormalizesToZero) {
  api::PodPtr pod =
      PodPreferring({{7, R"({"matchExpressions":[{"key":"gpu","operator":"Exists"}]})"}}).Build();
  auto [raw, normalized] =
      ScoreNodes(*NewPlugin(), *pod, {NodeWithLabels("a", {}), NodeWithLabels("b", {})});
  EXPECT_EQ(raw, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(normalized, (std::vector<int64_t>{0, 0}));
}

TEST(NodeAffinityTest, PreScoreSkipsWithoutPreferredTerms) {
  framework::CycleState state;
  EXPECT_TRUE(NewPlugin()
                  ->PreScore(state, *testing::PodBuilder("p").NodeSelector("a", "b").Build(), {})
                  .IsSkip());
}

TEST(NodeAffinityTest, Args) {
  EXPECT_NO_THROW(NewPlugin(nullptr));
  EXPECT_NO_THROW(NewPlugin(json::object()));
  EXPECT_NO_THROW(NewPlugin(json::parse(R"({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                            "kind": "NodeAffinityArgs", "addedAffinity": {}})")));

  auto error_of = [](const std::string& args) -> std::string {
    try {
      ParseArgs(json::parse(args));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THAT(error_of(R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                 {"nodeSelectorTerms": [{"matchExpressions": [
                   {"key": "zone", "operator": "Near", "values": ["a"]}]}]}}})"),
              StartsWith("addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                         "nodeSelectorTerms[0].matchExpressions[0].operator: "));
  EXPECT_THAT(error_of(R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                 {"nodeSelectorTerms": [{"matchFields": [
                   {"key": "metadata.uid", "operator": "In", "values": ["a"]}]}]}}})"),
              StartsWith("addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                         "nodeSelectorTerms[0].matchFields[0].key: "));
  EXPECT_THAT(error_of(R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                 {"nodeSelectorTerms": []}}})"),
              StartsWith("addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                         "nodeSelectorTerms: "));
  EXPECT_THAT(error_of(R"({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                 {"weight": 1, "preference": {"matchExpressions": [
                   {"key": "zone", "operator": "In"}]}}]}})"),
              StartsWith("addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]."
                         "preference.matchExpressions[0].values: "));
  EXPECT_THAT(error_of(R"({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                 {"weight": -1, "preference": {}}]}})"),
              StartsWith("addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]."
                         "weight: "));
  EXPECT_THAT(error_of(R"({"addedAffinity": {"requiredDuringScheduling": {}}})"),
              StartsWith("addedAffinity.requiredDuringScheduling: unknown field"));
  EXPECT_THAT(error_of(R"({"addedAfinity": {}})"), StartsWith("addedAfinity: unknown field"));
  EXPECT_THAT(error_of(R"([1])"), HasSubstr("must be an object"));
}

TEST(NodeAffinityTest, EventsToRegister) {
  auto events = NewPlugin()->EventsToRegister();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kNode);
  EXPECT_EQ(events[0].event.actions, framework::kAdd | framework::kUpdateNodeLabel);
  EXPECT_EQ(events[1].event.resource, framework::EventResource::kUnscheduledPod);
  EXPECT_TRUE(events[0].hint);
  EXPECT_TRUE(events[1].hint);
}

TEST(NodeAffinityTest, NodeChangeHint) {
  api::PodPtr pod =
      PodRequiring({R"({"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]}]})"})
          .Build();
  api::NodePtr matching = testing::NodeBuilder("n").Label("foo", "bar").Build();
  api::NodePtr other = testing::NodeBuilder("n").Label("foo", "baz").Build();
  api::NodePtr matching_relabelled =
      testing::NodeBuilder("n").Label("foo", "bar").Label("extra", "x").Build();
  struct Case {
    std::string name;
    api::NodePtr old_node;
    api::NodePtr new_node;
    QueueingHint want;
  };
  const Case cases[] = {
      {"matching node added", nullptr, matching, QueueingHint::kQueue},
      {"non-matching node added", nullptr, other, QueueingHint::kSkip},
      {"label update makes the node match", other, matching, QueueingHint::kQueue},
      {"node matched before the update", matching, matching_relabelled, QueueingHint::kSkip},
      {"node stops matching", matching, other, QueueingHint::kSkip},
  };
  auto hint = NewPlugin()->EventsToRegister()[0].hint;
  for (const Case& c : cases) {
    framework::EventObjects event;
    event.old_node = c.old_node;
    event.new_node = c.new_node;
    EXPECT_EQ(hint(*pod, event), c.want) << c.name;
  }
}

TEST(NodeAffinityTest, NodeChangeHintHonoursAddedAffinity) {
  auto plugin = NewPlugin(json::parse(R"({"addedAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["foo"]}]}]}}})"));
  api::PodPtr pod = testing::PodBuilder("p").Build();
  auto hint = plugin->EventsToRegister()[0].hint;
  framework::EventObjects in_zone;
  in_zone.new_node = testing::NodeBuilder("n").Label("zone", "foo").Build();
  EXPECT_EQ(hint(*pod, in_zone), QueueingHint::kQueue);
  framework::EventObjects out_of_zone;
  out_of_zone.new_node = testing::NodeBuilder("n").Label("zone", "bar").Build();
  EXPECT_EQ(hint(*pod, out_of_zone), QueueingHint::kSkip);
  framework::EventObjects moved_into_zone;
  moved_into_zone.old_node = out_of_zone.new_node;
  moved_into_zone.new_node = in_zone.new_node;
  EXPECT_EQ(hint(*pod, moved_into_zone), QueueingHint::kQueue);
}

TEST(NodeAffinityTest, PodChangeHint) {
  api::PodPtr pod = testing::PodBuilder("p").Uid("uid").NodeSelector("zone", "a").Build();
  auto hint = NewPlugin()->EventsToRegister()[1].hint;
  auto event_to = [&](api::PodPtr updated) {
    framework::EventObjects event;
    event.old_pod = pod;
    event.new_pod = std::move(updated);
    return event;
  };
  EXPECT_EQ(
      hint(*pod, event_to(testing::PodBuilder("p").Uid("uid").NodeSelector("zone", "b").Build())),
      QueueingHint::kQueue);
  EXPECT_EQ(hint(*pod, event_to(PodRequiring({R"({"matchExpressions":[
                                                 {"key":"foo","operator":"Exists"}]})"})
                                    .NodeSelector("zone", "a")
                                    .Build())),
            QueueingHint::kQueue);
  EXPECT_EQ(hint(*pod, event_to(testing::PodBuilder("p")
                                    .Uid("uid")
                                    .NodeSelector("zone", "a")
                                    .Label("app", "x")
                                    .Build())),
            QueueingHint::kSkip);
  EXPECT_EQ(
      hint(*pod, event_to(testing::PodBuilder("q").Uid("other").NodeSelector("zone", "b").Build())),
      QueueingHint::kSkip);
}

}  // namespace
}  // namespace berth::plugins::nodeaffinity
