#include "pkg/plugins/interpodaffinity/interpodaffinity.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::interpodaffinity {
namespace {

using framework::QueueingHint;
using testing::PodBuilder;

constexpr char kHostname[] = "kubernetes.io/hostname";

api::Requirement Req(std::string key, api::SelectorOperator op,
                     std::vector<std::string> values = {}) {
  api::Requirement r;
  r.key = std::move(key);
  r.op = op;
  std::sort(values.begin(), values.end());
  r.values = std::move(values);
  return r;
}

api::Requirement In(std::string key, std::vector<std::string> values) {
  return Req(std::move(key), api::SelectorOperator::kIn, std::move(values));
}

api::LabelSelector Selector(std::vector<api::Requirement> requirements) {
  return api::LabelSelector{std::move(requirements)};
}

api::PodAffinityTerm Term(std::optional<api::LabelSelector> selector, std::string topology_key,
                          std::vector<std::string> namespaces = {},
                          std::optional<api::LabelSelector> namespace_selector = std::nullopt) {
  api::PodAffinityTerm term;
  term.label_selector = std::move(selector);
  term.topology_key = std::move(topology_key);
  term.namespaces = std::move(namespaces);
  term.namespace_selector = std::move(namespace_selector);
  return term;
}

// A term on security=`value` over `topology_key`.
api::PodAffinityTerm Security(std::string value, std::string topology_key) {
  return Term(Selector({In("security", {std::move(value)})}), std::move(topology_key));
}

// A pod with labels, optionally on a node, with the affinity parts given.
struct PodSpec {
  std::string name;
  std::string ns = "default";
  std::vector<std::pair<std::string, std::string>> labels = {};
  std::string node = {};
  std::vector<api::PodAffinityTerm> affinity = {};
  std::vector<api::PodAffinityTerm> anti_affinity = {};
  std::vector<api::WeightedPodAffinityTerm> preferred_affinity = {};
  std::vector<api::WeightedPodAffinityTerm> preferred_anti_affinity = {};
};

api::PodPtr MakePod(const PodSpec& s) {
  PodBuilder b(s.name, s.ns);
  for (const auto& [k, v] : s.labels) b.Label(k, v);
  if (!s.node.empty()) b.Node(s.node);
  if (!s.affinity.empty() || !s.preferred_affinity.empty()) {
    auto& a = b.pod().spec.affinity.emplace().pod_affinity.emplace();
    a.required = s.affinity;
    a.preferred = s.preferred_affinity;
  }
  if (!s.anti_affinity.empty() || !s.preferred_anti_affinity.empty()) {
    if (!b.pod().spec.affinity) b.pod().spec.affinity.emplace();
    auto& a = b.pod().spec.affinity->pod_anti_affinity.emplace();
    a.required = s.anti_affinity;
    a.preferred = s.preferred_anti_affinity;
  }
  return b.Build();
}

// A node with exactly these labels.
api::NodePtr MakeNode(const std::string& name,
                      std::vector<std::pair<std::string, std::string>> labels) {
  auto node = std::make_shared<api::Node>();
  node->meta.name = name;
  node->meta.labels = api::Labels(std::move(labels));
  return node;
}

std::vector<framework::NodeInfoPtr> Infos(const std::vector<api::NodePtr>& nodes,
                                          const std::vector<api::PodPtr>& pods) {
  std::vector<framework::NodeInfoPtr> infos;
  for (const auto& node : nodes) {
    auto info = std::make_shared<framework::NodeInfo>(node);
    for (const auto& pod : pods) {
      if (pod->spec.node_name == node->Name()) {
        info->AddPod(std::make_shared<framework::PodInfo>(pod));
      }
    }
    // Listed, as the snapshot lists its NodeInfos, so that Filter may read them by position.
    info->set_list_index(static_cast<uint32_t>(infos.size()));
    infos.push_back(std::move(info));
  }
  return infos;
}

std::shared_ptr<const api::Namespace> Namespace(
    const std::string& name, std::vector<std::pair<std::string, std::string>> labels) {
  auto ns = std::make_shared<api::Namespace>();
  ns->meta.name = name;
  ns->meta.labels = api::Labels(std::move(labels));
  return ns;
}

std::string Describe(const framework::Status& status) {
  if (status.IsSuccess()) return "ok";
  return std::string(framework::CodeName(status.code())) + ": " + status.Message();
}

const std::string kAffinityReason =
    "UnschedulableAndUnresolvable: " + std::string(kErrReasonAffinityRulesNotMatch);
const std::string kAntiAffinityReason =
    "Unschedulable: " + std::string(kErrReasonAntiAffinityRulesNotMatch);
const std::string kExistingReason =
    "Unschedulable: " + std::string(kErrReasonExistingAntiAffinityRulesNotMatch);

// The plugin over a fixed cluster, built through New as the framework builds it.
class Harness {
 public:
  Harness(const std::vector<api::NodePtr>& nodes, const std::vector<api::PodPtr>& pods,
          const nlohmann::json& args = nullptr,
          const std::vector<std::shared_ptr<const api::Namespace>>& namespaces = {})
      : handle_(Infos(nodes, pods)) {
    for (const auto& ns : namespaces) handle_.informers().For<api::Namespace>().Upsert(ns);
    plugin_ = std::dynamic_pointer_cast<InterPodAffinity>(New(args, handle_));
  }

  InterPodAffinity& plugin() { return *plugin_; }
  testing::FakeHandle& handle() { return handle_; }
  const std::vector<framework::NodeInfoPtr>& nodes() { return handle_.lister().List(); }

  // PreFilter's status ("Skip" included) and, unless it skipped or failed, each node's Filter
  // result by name.
  //
  // Runs the cycle twice, as two pods alike would: the plugin counts for the first by label
  // values and keeps the counts from the second on, when Filter reads listed nodes by position;
  // both must give the same results.
  std::pair<std::string, std::map<std::string, std::string>> Filter(const api::Pod& pod) {
    framework::CycleState first_state;
    auto first = FilterIn(first_state, pod);
    framework::CycleState second_state;
    EXPECT_EQ(FilterIn(second_state, pod), first) << "second cycle of " << pod.meta.name;
    return first;
  }
  std::pair<std::string, std::map<std::string, std::string>> FilterIn(framework::CycleState& state,
                                                                      const api::Pod& pod) {
    framework::PreFilterResult result;
    framework::Status pre = plugin_->PreFilter(state, pod, nodes(), &result);
    std::map<std::string, std::string> out;
    if (!pre.IsSuccess()) return {pre.IsSkip() ? "Skip" : Describe(pre), out};
    out = FilterNodes(state, pod);
    return {"ok", out};
  }
  std::map<std::string, std::string> FilterNodes(const framework::CycleState& state,
                                                 const api::Pod& pod) {
    std::map<std::string, std::string> out;
    for (const auto& node : nodes())
      out[node->name()] = Describe(plugin_->Filter(state, pod, *node));
    return out;
  }

  // PreScore's status and, when it succeeded, the normalized scores in node order.
  std::pair<std::string, std::vector<int64_t>> Scores(const api::Pod& pod) {
    framework::CycleState state;
    std::vector<const framework::NodeInfo*> feasible;
    for (const auto& node : nodes()) feasible.push_back(node.get());
    framework::Status pre = plugin_->PreScore(state, pod, feasible);
    if (!pre.IsSuccess()) return {pre.IsSkip() ? "Skip" : Describe(pre), {}};
    framework::NodeScoreList scores;
    for (const auto* node : feasible) {
      int64_t score = 0;
      framework::Status s = plugin_->Score(state, pod, *node, &score);
      if (!s.IsSuccess()) return {Describe(s), {}};
      scores.push_back({node->name(), score});
    }
    framework::Status n = plugin_->NormalizeScore(state, pod, scores);
    if (!n.IsSuccess()) return {Describe(n), {}};
    std::vector<int64_t> out;
    for (const auto& s : scores) out.push_back(s.score);
    return {"ok", out};
  }

 private:
  testing::FakeHandle handle_;
  std::shared_ptr<InterPodAffinity> plugin_;
};

using Results = std::map<std::string, std::string>;

// ---- Filter: one node ----

struct SingleNodeCase {
  const char* name;
  PodSpec pod;
  std::vector<PodSpec> existing;  // On node1.
  std::string want;               // Filter's result on node1.
};

TEST(InterPodAffinityFilter, OneNodeCasesOfUpstream) {
  const std::vector<std::pair<std::string, std::string>> s1 = {{"security", "S1"}};
  const std::vector<std::pair<std::string, std::string>> s2 = {{"security", "S2"}};
  const SingleNodeCase cases[] = {
      {"affinity In operator matched by the existing pod",
       {"p", "default", s2, "", {Security("S1", "region")}},
       {{"e", "default", s1}},
       "ok"},
      {"affinity NotIn operator matched by the existing pod",
       {"p",
        "default",
        s2,
        "",
        {Term(Selector({Req("security", api::SelectorOperator::kNotIn, {"securityscan3"})}),
              "region")}},
       {{"e", "default", s1}},
       "ok"},
      {"affinity not satisfied by a matching pod in another namespace",
       {"p", "default", s2, "", {Security("S1", "region")}},
       {{"e", "other", s1}},
       kAffinityReason},
      {"affinity not satisfied when the selector does not match the existing pod",
       {"p", "default", {}, "", {Security("S2", "region")}},
       {{"e", "default", s1}},
       kAffinityReason},
      {"the requirements of one selector are ANDed",
       {"p",
        "default",
        s2,
        "",
        {Term(Selector({In("security", {"S1"}), In("wrongkey", {"x"})}), "region")}},
       {{"e", "default", s1}},
       kAffinityReason},
      {"affinity satisfied and anti-affinity not violated",
       {"p", "default", s2, "", {Security("S1", "region")}, {Security("S2", "node")}},
       {{"e", "default", s1}},
       "ok"},
      {"affinity satisfied but the pod's anti-affinity violated",
       {"p", "default", s2, "", {Security("S1", "region")}, {Security("S1", "zone")}},
       {{"e", "default", s1}},
       kAntiAffinityReason},
      {"the existing pod's anti-affinity rejects the pod",
       {"p", "default", s1},
       {{"e", "default", s2, "", {}, {Security("S1", "zone")}}},
       kExistingReason},
      {"the existing pod's anti-affinity does not match the pod",
       {"p", "default", s1},
       {{"e", "default", s2, "", {}, {Security("S2", "zone")}}},
       "Skip"},
      {"the existing pod's anti-affinity on a key the node lacks is not violated",
       {"p", "default", s1},
       {{"e", "default", s2, "", {}, {Security("S1", "rack")}}},
       "Skip"},
      {"a pod whose affinity it matches itself may go first",
       {"p", "default", s1, "", {Security("S1", "region")}},
       {},
       "ok"},
      {"a nil label selector matches no pod, so anti-affinity with it never conflicts",
       {"p", "default", s1, "", {}, {Term(std::nullopt, "zone")}},
       {{"e", "default", s1}},
       "ok"},
      {"an empty label selector matches every pod of the namespace",
       {"p", "default", s1, "", {}, {Term(api::LabelSelector{}, "zone")}},
       {{"e", "default", s2}},
       kAntiAffinityReason},
  };
  const auto node = MakeNode("node1", {{"region", "r1"}, {"zone", "z11"}, {"node", "node1"}});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<api::PodPtr> pods;
    for (PodSpec e : c.existing) {
      e.node = "node1";
      pods.push_back(MakePod(e));
    }
    Harness h({node}, pods);
    auto [pre, results] = h.Filter(*MakePod(c.pod));
    if (c.want == "Skip") {
      EXPECT_EQ(pre, "Skip");
    } else {
      ASSERT_EQ(pre, "ok");
      EXPECT_EQ(results["node1"], c.want);
    }
  }
}

TEST(InterPodAffinityFilter, PreFilterSkipsPodsWithoutTermsWhenNoAssignedPodAvoidsThem) {
  const auto node = MakeNode("node1", {{"zone", "z1"}});
  Harness h({node}, {MakePod({"e", "default", {{"app", "db"}}, "node1"})});
  EXPECT_EQ(h.Filter(*MakePod({"p", "default", {{"app", "web"}}})).first, "Skip");
}

// ---- Filter: several nodes ----

TEST(InterPodAffinityFilter, AffinityAdmitsEveryNodeOfTheMatchingPodsDomain) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("nodeA", {{"zone", "az1"}, {"hostname", "h1"}}),
      MakeNode("nodeB", {{"zone", "az1"}, {"hostname", "h2"}}),
      MakeNode("nodeC", {{"zone", "az2"}, {"hostname", "h3"}}),
  };
  Harness h(nodes, {MakePod({"e", "default", {{"foo", "bar"}}, "nodeA"})});
  auto pod = MakePod({"p", "default", {}, "", {Term(Selector({In("foo", {"bar"})}), "zone")}});
  EXPECT_EQ(h.Filter(*pod).second,
            (Results{{"nodeA", "ok"}, {"nodeB", "ok"}, {"nodeC", kAffinityReason}}));
}

TEST(InterPodAffinityFilter, FirstPodOfAGroupGoesToAnyNodeWithTheTopologyKeys) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("nodeA", {{"region", "r1"}, {"zone", "z1"}}),
      MakeNode("nodeB", {{"region", "r1"}}),
      MakeNode("nodeC", {{"zone", "z2"}}),
  };
  // No assigned pod matches; the pod matches both its terms itself.
  Harness h(nodes, {MakePod({"e", "default", {{"app", "other"}}, "nodeA"})});
  auto first = MakePod({"p",
                        "default",
                        {{"app", "web"}},
                        "",
                        {Term(Selector({In("app", {"web"})}), "region"),
                         Term(Selector({In("app", {"web"})}), "zone")}});
  EXPECT_EQ(h.Filter(*first).second,
            (Results{{"nodeA", "ok"}, {"nodeB", kAffinityReason}, {"nodeC", kAffinityReason}}));

  // A pod that does not match its own terms gets no such pass.
  auto stranger = MakePod(
      {"q", "default", {{"app", "api"}}, "", {Term(Selector({In("app", {"web"})}), "region")}});
  EXPECT_EQ(h.Filter(*stranger).second, (Results{{"nodeA", kAffinityReason},
                                                 {"nodeB", kAffinityReason},
                                                 {"nodeC", kAffinityReason}}));
}

TEST(InterPodAffinityFilter, FirstPodRuleEndsOnceAnyPodMatches) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("nodeA", {{"zone", "z1"}}),
      MakeNode("nodeB", {{"zone", "z2"}}),
  };
  Harness h(nodes, {MakePod({"e", "default", {{"app", "web"}}, "nodeB"})});
  auto pod = MakePod(
      {"p", "default", {{"app", "web"}}, "", {Term(Selector({In("app", {"web"})}), "zone")}});
  EXPECT_EQ(h.Filter(*pod).second, (Results{{"nodeA", kAffinityReason}, {"nodeB", "ok"}}));
}

TEST(InterPodAffinityFilter, AffinityTermsMustAllMatchOnePod) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("nodeA", {{kHostname, "nodeA"}}),
      MakeNode("nodeB", {{kHostname, "nodeB"}}),
  };
  // Each pod on nodeA matches one term; the pod on nodeB matches both.
  Harness h(nodes, {MakePod({"a1", "default", {{"foo", "x"}}, "nodeA"}),
                    MakePod({"a2", "default", {{"bar", "y"}}, "nodeA"}),
                    MakePod({"b", "default", {{"foo", "x"}, {"bar", "y"}}, "nodeB"})});
  auto pod = MakePod({"p",
                      "default",
                      {},
                      "",
                      {Term(Selector({In("foo", {"x"})}), kHostname),
                       Term(Selector({In("bar", {"y"})}), kHostname)}});
  EXPECT_EQ(h.Filter(*pod).second, (Results{{"nodeA", kAffinityReason}, {"nodeB", "ok"}}));
}

TEST(InterPodAffinityFilter, AntiAffinityCoversTheWholeTopologyDomain) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("nodeA", {{"zone", "z1"}}),
      MakeNode("nodeB", {{"zone", "z1"}}),
      MakeNode("nodeC", {{"zone", "z2"}}),
      MakeNode("nodeD", {}),
  };
  Harness h(nodes, {MakePod({"e", "default", {{"app", "web"}}, "nodeA"})});
  auto pod = MakePod(
      {"p", "default", {{"app", "web"}}, "", {}, {Term(Selector({In("app", {"web"})}), "zone")}});
  EXPECT_EQ(h.Filter(*pod).second, (Results{{"nodeA", kAntiAffinityReason},
                                            {"nodeB", kAntiAffinityReason},
                                            {"nodeC", "ok"},
                                            {"nodeD", "ok"}}));
}

TEST(InterPodAffinityFilter, ExistingPodsAntiAffinityRejectsTheirDomainOnly) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("nodeA", {{"zone", "z1"}}),
      MakeNode("nodeB", {{"zone", "z1"}}),
      MakeNode("nodeC", {{"zone", "z2"}}),
  };
  Harness h(
      nodes,
      {MakePod({"e", "default", {}, "nodeA", {}, {Term(Selector({In("app", {"web"})}), "zone")}})});
  auto pod = MakePod({"p", "default", {{"app", "web"}}});
  EXPECT_EQ(h.Filter(*pod).second,
            (Results{{"nodeA", kExistingReason}, {"nodeB", kExistingReason}, {"nodeC", "ok"}}));
  // A pod in another namespace is not the existing pod's concern.
  auto elsewhere = MakePod({"q", "other", {{"app", "web"}}});
  EXPECT_EQ(h.Filter(*elsewhere).first, "Skip");
}

TEST(InterPodAffinityFilter, AffinityCheckedBeforeAntiAffinityBeforeExistingPods) {
  const std::vector<api::NodePtr> nodes = {MakeNode("nodeA", {{"zone", "z1"}})};
  Harness h(nodes, {MakePod({"e",
                             "default",
                             {{"app", "web"}},
                             "nodeA",
                             {},
                             {Term(Selector({In("app", {"web"})}), "zone")}})});
  auto all = MakePod({"p",
                      "default",
                      {{"app", "web"}},
                      "",
                      {Term(Selector({In("app", {"db"})}), "zone")},
                      {Term(Selector({In("app", {"web"})}), "zone")}});
  EXPECT_EQ(h.Filter(*all).second.at("nodeA"), kAffinityReason);
  auto anti = MakePod(
      {"q", "default", {{"app", "web"}}, "", {}, {Term(Selector({In("app", {"web"})}), "zone")}});
  EXPECT_EQ(h.Filter(*anti).second.at("nodeA"), kAntiAffinityReason);
  auto plain = MakePod({"r", "default", {{"app", "web"}}});
  EXPECT_EQ(h.Filter(*plain).second.at("nodeA"), kExistingReason);
}

// ---- namespaces and namespaceSelector ----

TEST(InterPodAffinityFilter, NamespaceSelectorResolvedThroughTheNamespaceLister) {
  const std::vector<api::NodePtr> nodes = {MakeNode("node1", {{"region", "r1"}})};
  const std::vector<std::shared_ptr<const api::Namespace>> namespaces = {
      Namespace("subteam1.team1", {{"team", "team1"}}),
      Namespace("subteam1.team2", {{"team", "team2"}}),
  };
  const auto existing = MakePod({"e", "subteam1.team1", {{"security", "S1"}}, "node1"});
  Harness h(nodes, {existing}, nullptr, namespaces);

  auto with_selector = [](std::string team, bool anti) {
    auto term = Term(Selector({In("security", {"S1"})}), "region", {},
                     Selector({In("team", {std::move(team)})}));
    PodSpec spec{"p", "default"};
    (anti ? spec.anti_affinity : spec.affinity).push_back(term);
    return MakePod(spec);
  };
  EXPECT_EQ(h.Filter(*with_selector("team1", false)).second.at("node1"), "ok");
  EXPECT_EQ(h.Filter(*with_selector("team2", false)).second.at("node1"), kAffinityReason);
  EXPECT_EQ(h.Filter(*with_selector("team1", true)).second.at("node1"), kAntiAffinityReason);
  EXPECT_EQ(h.Filter(*with_selector("team2", true)).second.at("node1"), "ok");

  // An empty namespaceSelector means every namespace.
  auto all =
      MakePod({"p",
               "default",
               {},
               "",
               {},
               {Term(Selector({In("security", {"S1"})}), "region", {}, api::LabelSelector{})}});
  EXPECT_EQ(h.Filter(*all).second.at("node1"), kAntiAffinityReason);
  // No namespaces and no selector: the pod's own namespace only.
  auto own =
      MakePod({"p", "default", {}, "", {}, {Term(Selector({In("security", {"S1"})}), "region")}});
  EXPECT_EQ(h.Filter(*own).second.at("node1"), "ok");
  // Listed namespaces.
  auto listed = MakePod({"p",
                         "default",
                         {},
                         "",
                         {},
                         {Term(Selector({In("security", {"S1"})}), "region", {"subteam1.team1"})}});
  EXPECT_EQ(h.Filter(*listed).second.at("node1"), kAntiAffinityReason);
}

TEST(InterPodAffinityFilter, ExistingPodsNamespaceSelectorMatchesTheIncomingPodsNamespaceLabels) {
  const std::vector<api::NodePtr> nodes = {MakeNode("node1", {{"region", "r1"}})};
  const std::vector<std::shared_ptr<const api::Namespace>> namespaces = {
      Namespace("subteam1.team1", {{"team", "team1"}}),
      Namespace("subteam1.team2", {{"team", "team2"}}),
  };
  const auto existing = MakePod({"e",
                                 "other",
                                 {},
                                 "node1",
                                 {},
                                 {Term(Selector({In("security", {"S1"})}), "region", {},
                                       Selector({In("team", {"team1"})}))}});
  Harness h(nodes, {existing}, nullptr, namespaces);
  EXPECT_EQ(h.Filter(*MakePod({"p", "subteam1.team1", {{"security", "S1"}}})).second.at("node1"),
            kExistingReason);
  EXPECT_EQ(h.Filter(*MakePod({"p", "subteam1.team2", {{"security", "S1"}}})).first, "Skip");
  // A namespace the lister does not know has no labels.
  EXPECT_EQ(h.Filter(*MakePod({"p", "unknown", {{"security", "S1"}}})).first, "Skip");
}

// ---- PreFilter extensions ----

TEST(InterPodAffinityFilter, AddPodAndRemovePodUpdateTheCycleCounts) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("nodeA", {{"zone", "z1"}}),
      MakeNode("nodeB", {{"zone", "z2"}}),
  };
  // One assigned pod on nodeB gives every count something to start from.
  const auto on_b = MakePod({"b", "default", {{"app", "web"}}, "nodeB"});
  Harness h(nodes, {on_b});
  const auto pod = MakePod({"p",
                            "default",
                            {{"app", "web"}},
                            "",
                            {Term(Selector({In("app", {"web"})}), "zone")},
                            {Term(Selector({In("role", {"cache"})}), "zone")}});
  framework::CycleState state;
  ASSERT_EQ(h.FilterIn(state, *pod).second, (Results{{"nodeA", kAffinityReason}, {"nodeB", "ok"}}));

  const framework::NodeInfo& node_a = *h.nodes()[0];
  const framework::NodeInfo& node_b = *h.nodes()[1];
  // A web pod nominated to nodeA satisfies the affinity there too.
  framework::PodInfo web(MakePod({"w", "default", {{"app", "web"}}}));
  ASSERT_TRUE(h.plugin().AddPod(state, *pod, web, node_a).IsSuccess());
  EXPECT_EQ(h.FilterNodes(state, *pod), (Results{{"nodeA", "ok"}, {"nodeB", "ok"}}));

  // A cache pod on nodeA violates the pod's anti-affinity there; a clone taken before is
  // unaffected.
  auto before = state.Clone();
  framework::PodInfo cache(MakePod({"c", "default", {{"app", "web"}, {"role", "cache"}}}));
  ASSERT_TRUE(h.plugin().AddPod(state, *pod, cache, node_a).IsSuccess());
  EXPECT_EQ(h.FilterNodes(state, *pod), (Results{{"nodeA", kAntiAffinityReason}, {"nodeB", "ok"}}));
  EXPECT_EQ(h.FilterNodes(*before, *pod), (Results{{"nodeA", "ok"}, {"nodeB", "ok"}}));

  // A pod whose anti-affinity rejects the pod, then taken away again.
  framework::PodInfo guard(
      MakePod({"g", "default", {}, "", {}, {Term(Selector({In("app", {"web"})}), "zone")}}));
  ASSERT_TRUE(h.plugin().AddPod(state, *pod, guard, node_b).IsSuccess());
  EXPECT_EQ(h.FilterNodes(state, *pod),
            (Results{{"nodeA", kAntiAffinityReason}, {"nodeB", kExistingReason}}));
  ASSERT_TRUE(h.plugin().RemovePod(state, *pod, guard, node_b).IsSuccess());
  ASSERT_TRUE(h.plugin().RemovePod(state, *pod, cache, node_a).IsSuccess());
  ASSERT_TRUE(h.plugin().RemovePod(state, *pod, web, node_a).IsSuccess());
  EXPECT_EQ(h.FilterNodes(state, *pod), (Results{{"nodeA", kAffinityReason}, {"nodeB", "ok"}}));

  // Removing the only matching pod brings back the first-pod rule: the pod matches itself.
  framework::PodInfo b_info(on_b);
  ASSERT_TRUE(h.plugin().RemovePod(state, *pod, b_info, node_b).IsSuccess());
  EXPECT_EQ(h.FilterNodes(state, *pod), (Results{{"nodeA", "ok"}, {"nodeB", "ok"}}));
}

TEST(InterPodAffinityFilter, ExtensionsWithoutPreFilterStateAreErrors) {
  Harness h({MakeNode("nodeA", {})}, {});
  framework::CycleState state;
  auto pod = MakePod({"p"});
  framework::PodInfo other(MakePod({"o"}));
  EXPECT_EQ(h.plugin().AddPod(state, *pod, other, *h.nodes()[0]).code(), framework::Code::kError);
  EXPECT_EQ(h.plugin().Filter(state, *pod, *h.nodes()[0]).code(), framework::Code::kError);
}

// ---- counts kept across cycles ----

TEST(InterPodAffinityFilter, CountsFollowTheSnapshotAcrossCycles) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("nodeA", {{kHostname, "nodeA"}}),
      MakeNode("nodeB", {{kHostname, "nodeB"}}),
      MakeNode("nodeC", {{kHostname, "nodeC"}}),
  };
  Harness h(nodes, {});
  auto pod_named = [](const std::string& name) {
    return MakePod({name,
                    "default",
                    {{"color", "green"}},
                    "",
                    {},
                    {Term(Selector({In("color", {"green"})}), kHostname)}});
  };
  // Place pods one by one as a scheduler would, replacing the NodeInfo each time as the snapshot
  // does; the first cycles see an empty cluster, later ones what the earlier placed.
  std::vector<api::PodPtr> placed;
  const char* const order[] = {"nodeB", "nodeA"};
  for (int i = 0; i < 2; i++) {
    auto pod = pod_named("p" + std::to_string(i));
    auto results = h.Filter(*pod).second;
    for (const auto& p : placed) EXPECT_NE(results[p->spec.node_name], "ok") << p->meta.name;
    PodSpec spec{"p" + std::to_string(i),
                 "default",
                 {{"color", "green"}},
                 order[i],
                 {},
                 {Term(Selector({In("color", {"green"})}), kHostname)}};
    placed.push_back(MakePod(spec));
    h.handle().lister().Set(Infos(nodes, placed));
  }
  const Results want = {
      {"nodeA", kAntiAffinityReason}, {"nodeB", kAntiAffinityReason}, {"nodeC", "ok"}};
  // The same pod shape several times: first scan, then kept, then brought up to date.
  for (int i = 0; i < 3; i++) EXPECT_EQ(h.Filter(*pod_named("q")).second, want) << i;

  // Deleting the pod on nodeB frees it in the next cycle.
  placed.erase(placed.begin());
  h.handle().lister().Set(Infos(nodes, placed));
  EXPECT_EQ(h.Filter(*pod_named("q")).second,
            (Results{{"nodeA", kAntiAffinityReason}, {"nodeB", "ok"}, {"nodeC", "ok"}}));
  // A relabelled node (a new Node object) is recounted under its new value.
  const std::vector<api::NodePtr> relabelled = {
      MakeNode("nodeA", {{kHostname, "nodeA"}}),
      MakeNode("nodeB", {{kHostname, "nodeA"}}),
      MakeNode("nodeC", {{kHostname, "nodeC"}}),
  };
  h.handle().lister().Set(Infos(relabelled, placed));
  EXPECT_EQ(
      h.Filter(*pod_named("q")).second,
      (Results{{"nodeA", kAntiAffinityReason}, {"nodeB", kAntiAffinityReason}, {"nodeC", "ok"}}));
}

// Pods that differ only in labels no assigned pod's anti-affinity reads share counts; a label
// that some selector reads (even one added later) still tells them apart.
TEST(InterPodAffinityFilter, ExistingAntiAffinityCountsSharedAcrossIrrelevantLabels) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("nodeA", {{"zone", "z1"}}),
      MakeNode("nodeB", {{"zone", "z2"}}),
  };
  std::vector<api::PodPtr> assigned = {
      MakePod(
          {"guard", "default", {}, "nodeA", {}, {Term(Selector({In("app", {"web"})}), "zone")}}),
  };
  Harness h(nodes, assigned);
  auto replica = [](const std::string& name, const std::string& app) {
    return MakePod({name, "default", {{"app", app}, {"pod-name", name}}});
  };
  for (int round = 0; round < 3; round++) {
    EXPECT_EQ(h.Filter(*replica("w" + std::to_string(round), "web")).second,
              (Results{{"nodeA", kExistingReason}, {"nodeB", "ok"}}))
        << round;
    EXPECT_EQ(h.Filter(*replica("d" + std::to_string(round), "db")).first, "Skip") << round;
  }
  // A pod whose anti-affinity reads pod-name: now that label matters too.
  assigned.push_back(MakePod(
      {"picky", "default", {}, "nodeB", {}, {Term(Selector({In("pod-name", {"w9"})}), "zone")}}));
  h.handle().lister().Set(Infos(nodes, assigned));
  for (int round = 0; round < 3; round++) {
    EXPECT_EQ(h.Filter(*replica("w9", "web")).second,
              (Results{{"nodeA", kExistingReason}, {"nodeB", kExistingReason}}))
        << round;
    EXPECT_EQ(h.Filter(*replica("w8", "web")).second,
              (Results{{"nodeA", kExistingReason}, {"nodeB", "ok"}}))
        << round;
  }
}

TEST(InterPodAffinityFilter, StateReadAfterALaterCycleUpdatedTheCountsIsAnError) {
  const std::vector<api::NodePtr> nodes = {MakeNode("nodeA", {{"zone", "z1"}})};
  Harness h(nodes, {});
  auto pod = MakePod(
      {"p", "default", {{"app", "web"}}, "", {}, {Term(Selector({In("app", {"web"})}), "zone")}});
  h.Filter(*pod);  // First sighting: not kept.
  framework::CycleState old_state;
  ASSERT_EQ(h.FilterIn(old_state, *pod).second.at("nodeA"), "ok");  // Kept from here on.
  h.handle().lister().Set(Infos(nodes, {MakePod({"e", "default", {{"app", "web"}}, "nodeA"})}));
  EXPECT_EQ(h.Filter(*pod).second.at("nodeA"), kAntiAffinityReason);
  EXPECT_EQ(h.plugin().Filter(old_state, *pod, *h.nodes()[0]).code(), framework::Code::kError);
}

// ---- Score ----

struct ScoreCase {
  const char* name;
  PodSpec pod;
  std::vector<PodSpec> existing;
  std::vector<api::NodePtr> nodes;
  std::string want_status;
  std::vector<int64_t> want;
  nlohmann::json args = nullptr;
};

TEST(InterPodAffinityScore, CasesOfUpstream) {
  const std::vector<std::pair<std::string, std::string>> s1 = {{"security", "S1"}};
  const std::vector<std::pair<std::string, std::string>> s2 = {{"security", "S2"}};
  const auto china = [](const std::string& n) { return MakeNode(n, {{"region", "China"}}); };
  const auto india = [](const std::string& n) { return MakeNode(n, {{"region", "India"}}); };
  const auto az1 = [](const std::string& n) { return MakeNode(n, {{"az", "az1"}}); };
  auto weighted = [](int32_t w, api::PodAffinityTerm t) {
    return api::WeightedPodAffinityTerm{w, std::move(t)};
  };
  const auto stay_with_s1 = weighted(5, Security("S1", "region"));
  const auto stay_with_s2 = weighted(6, Security("S2", "region"));
  const std::vector<api::WeightedPodAffinityTerm> affinity3 = {
      weighted(8, Term(Selector({Req("security", api::SelectorOperator::kNotIn, {"S1"}),
                                 In("security", {"S2"})}),
                       "region")),
      weighted(2, Term(Selector({Req("security", api::SelectorOperator::kExists),
                                 Req("wrongkey", api::SelectorOperator::kDoesNotExist)}),
                       "region")),
  };
  const auto avoid_s1 = weighted(5, Security("S1", "region"));

  ScoreCase cases[] = {
      {"no affinity anywhere: skipped",
       {"p", "default", s1},
       {},
       {china("node1"), india("node2"), az1("node3")},
       "Skip",
       {}},
      {"preferred affinity: the node with a matching pod in its region scores highest",
       {"p", "default", s1, "", {}, {}, {stay_with_s1}},
       {{"a", "default", s1, "node1"},
        {"b", "default", s2, "node2"},
        {"c", "default", s1, "node3"}},
       {china("node1"), india("node2"), az1("node3")},
       "ok",
       {100, 0, 0}},
      {"nodes of the matching pod's region score alike",
       {"p", "default", {}, "", {}, {}, {stay_with_s1}},
       {{"a", "default", s1, "node1"}},
       {china("node1"), MakeNode("node2", {{"region", "China"}, {"az", "az1"}}), india("node3")},
       "ok",
       {100, 100, 0}},
      {"the region with more matching pods scores higher",
       {"p", "default", s1, "", {}, {}, {stay_with_s2}},
       {{"a", "default", s2, "node1"},
        {"b", "default", s2, "node1"},
        {"c", "default", s2, "node2"},
        {"d", "default", s2, "node3"},
        {"e", "default", s2, "node4"},
        {"f", "default", s2, "node5"}},
       {china("node1"), india("node2"), china("node3"), china("node4"), india("node5")},
       "ok",
       {100, 0, 100, 100, 0}},
      {"label operators and match failures",
       {"p", "default", s1, "", {}, {}, affinity3},
       {{"a", "default", s1, "node1"},
        {"b", "default", s2, "node2"},
        {"c", "default", s1, "node3"}},
       {china("node1"), india("node2"), az1("node3")},
       "ok",
       {20, 100, 0}},
      {"symmetry: an existing pod's preferred affinity for the pod counts",
       {"p", "default", s2},
       {{"a", "default", s1, "node1", {}, {}, {stay_with_s2}},
        {"b", "default", s2, "node2", {}, {}, {stay_with_s1}}},
       {china("node1"), india("node2"), az1("node3")},
       "ok",
       {100, 0, 0}},
      {"anti-affinity: the node without matching pods scores highest",
       {"p", "default", s1, "", {}, {}, {}, {avoid_s1}},
       {{"a", "default", s1, "node1"}, {"b", "default", s2, "node2"}},
       {china("node1"), india("node2")},
       "ok",
       {0, 100}},
      {"anti-affinity symmetry: an existing pod's preferred anti-affinity counts",
       {"p", "default", s2},
       {{"a", "default", s1, "node1", {}, {}, {}, {weighted(5, Security("S2", "region"))}},
        {"b", "default", s2, "node2"}},
       {china("node1"), india("node2")},
       "ok",
       {0, 100}},
      {"existing pods' preferred terms ignored when asked and the pod has none",
       {"p", "default", s2},
       {{"a", "default", s1, "node1", {}, {}, {stay_with_s2}}},
       {china("node1"), india("node2")},
       "Skip",
       {},
       {{"ignorePreferredTermsOfExistingPods", true}}},
      {"existing pods' preferred terms still count when the pod has some",
       {"p", "default", s2, "", {}, {}, {weighted(1, Security("S3", "region"))}},
       {{"a", "default", s1, "node1", {}, {}, {stay_with_s2}}},
       {china("node1"), india("node2")},
       "ok",
       {100, 0},
       {{"ignorePreferredTermsOfExistingPods", true}}},
      {"terms that cancel out still make a score",
       {"p",
        "default",
        s1,
        "",
        {},
        {},
        {weighted(3, Security("S1", "region"))},
        {weighted(3, Security("S1", "region"))}},
       {{"a", "default", s1, "node1"}},
       {china("node1"), india("node2")},
       "ok",
       {0, 0}},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<api::PodPtr> pods;
    for (const PodSpec& e : c.existing) pods.push_back(MakePod(e));
    Harness h(c.nodes, pods, c.args);
    auto [status, scores] = h.Scores(*MakePod(c.pod));
    EXPECT_EQ(status, c.want_status);
    EXPECT_EQ(scores, c.want);
  }
}

TEST(InterPodAffinityScore, HardPodAffinityWeightScoresExistingPodsRequiredAffinity) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("node1", {{"region", "China"}}),
      MakeNode("node2", {{"region", "India"}}),
      MakeNode("node3", {{"az", "az1"}}),
  };
  const std::vector<std::shared_ptr<const api::Namespace>> namespaces = {
      Namespace("subteam1.team1", {{"team", "team1"}}),
      Namespace("subteam1.team2", {{"team", "team2"}}),
      Namespace("subteam2.team2", {{"team", "team2"}}),
  };
  const auto hard = Term(Selector({In("service", {"S1"})}), "region", {"", "subteam2.team2"},
                         Selector({In("team", {"team1"})}));
  const std::vector<api::PodPtr> pods = {
      MakePod({"a", "", {}, "node1", {hard}}),
      MakePod({"b", "", {}, "node2", {hard}}),
  };
  struct Case {
    const char* name;
    std::string ns;
    nlohmann::json args;
    std::string want_status;
    std::vector<int64_t> want;
  };
  const Case cases[] = {
      {"default weight", "", nullptr, "ok", {100, 100, 0}},
      {"zero weight", "", {{"hardPodAffinityWeight", 0}}, "Skip", {}},
      {"no matching namespace", "subteam1.team2", nullptr, "Skip", {}},
      {"matching namespaceSelector", "subteam1.team1", nullptr, "ok", {100, 100, 0}},
      {"matching namespaces",
       "subteam2.team2",
       {{"hardPodAffinityWeight", 7}},
       "ok",
       {100, 100, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Harness h(nodes, pods, c.args, namespaces);
    auto [status, scores] = h.Scores(*MakePod({"p", c.ns, {{"service", "S1"}}}));
    EXPECT_EQ(status, c.want_status);
    EXPECT_EQ(scores, c.want);
  }
}

// Scores too are shared by pods that differ only in labels no assigned pod's terms read, and
// told apart by the labels some term does read.
TEST(InterPodAffinityScore, CountsSharedAcrossIrrelevantLabels) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("node1", {{"region", "China"}}),
      MakeNode("node2", {{"region", "India"}}),
  };
  auto weighted = [](int32_t w, api::PodAffinityTerm t) {
    return api::WeightedPodAffinityTerm{w, std::move(t)};
  };
  Harness h(nodes, {MakePod({"picky",
                             "default",
                             {},
                             "node1",
                             {},
                             {},
                             {weighted(10, Term(Selector({In("pod-name", {"s9"})}), "region"))}}),
                    MakePod({"web",
                             "default",
                             {},
                             "node2",
                             {},
                             {},
                             {weighted(5, Term(Selector({In("app", {"web"})}), "region"))}})});
  auto replica = [](const std::string& name) {
    return MakePod({name, "default", {{"app", "web"}, {"pod-name", name}}});
  };
  for (int round = 0; round < 3; round++) {
    EXPECT_EQ(h.Scores(*replica("s" + std::to_string(round))),
              (std::pair<std::string, std::vector<int64_t>>{"ok", {0, 100}}))
        << round;
    EXPECT_EQ(h.Scores(*replica("s9")),
              (std::pair<std::string, std::vector<int64_t>>{"ok", {100, 0}}))
        << round;
  }
}

TEST(InterPodAffinityScore, RawScoresSumWeightsPerTopologyPair) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("node1", {{"region", "China"}}),
      MakeNode("node2", {{"region", "India"}}),
  };
  const auto req = Term(Selector({In("service", {"S1"})}), "region");
  Harness h(
      nodes,
      {MakePod({"a", "default", {}, "node1", {req}}), MakePod({"b", "default", {}, "node1", {req}}),
       MakePod({"c", "default", {}, "node2", {req}})},
      {{"hardPodAffinityWeight", 30}});
  auto pod = MakePod({"p", "default", {{"service", "S1"}}});
  framework::CycleState state;
  std::vector<const framework::NodeInfo*> all = {h.nodes()[0].get(), h.nodes()[1].get()};
  ASSERT_TRUE(h.plugin().PreScore(state, *pod, all).IsSuccess());
  int64_t s1 = 0, s2 = 0;
  ASSERT_TRUE(h.plugin().Score(state, *pod, *all[0], &s1).IsSuccess());
  ASSERT_TRUE(h.plugin().Score(state, *pod, *all[1], &s2).IsSuccess());
  EXPECT_EQ(s1, 60);
  EXPECT_EQ(s2, 30);
  framework::NodeScoreList scores = {{"node1", 60}, {"node2", 30}, {"node3", 40}};
  ASSERT_TRUE(h.plugin().NormalizeScore(state, *pod, scores).IsSuccess());
  EXPECT_EQ(scores[0].score, 100);
  EXPECT_EQ(scores[1].score, 0);
  EXPECT_EQ(scores[2].score, 33);
}

// ---- args ----

TEST(InterPodAffinityArgs, DefaultsAndValues) {
  Args defaults = ParseArgs(nullptr);
  EXPECT_EQ(defaults.hard_pod_affinity_weight, 1);
  EXPECT_FALSE(defaults.ignore_preferred_terms_of_existing_pods);
  Args set = ParseArgs({{"hardPodAffinityWeight", 100},
                        {"ignorePreferredTermsOfExistingPods", true},
                        {"apiVersion", "kubescheduler.config.k8s.io/v1"},
                        {"kind", "InterPodAffinityArgs"}});
  EXPECT_EQ(set.hard_pod_affinity_weight, 100);
  EXPECT_TRUE(set.ignore_preferred_terms_of_existing_pods);
}

TEST(InterPodAffinityArgs, BadArgsNameTheField) {
  struct Case {
    nlohmann::json args;
    std::string want;
  };
  const Case cases[] = {
      {{{"hardPodAffinityWeight", -1}},
       "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]"},
      {{{"hardPodAffinityWeight", 101}},
       "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"},
      {{{"hardPodAffinityWeight", "1"}},
       "hardPodAffinityWeight: Invalid value: \"1\": must be an integer"},
      {{{"ignorePreferredTermsOfExistingPods", 1}},
       "ignorePreferredTermsOfExistingPods: Invalid value: 1: must be a boolean"},
      {{{"hardPodAffinityWeigth", 1}}, "hardPodAffinityWeigth: unknown field"},
      {nlohmann::json::array(), "args: Invalid value: []: must be an object"},
  };
  for (const Case& c : cases) {
    try {
      ParseArgs(c.args);
      ADD_FAILURE() << "accepted " << c.args.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(e.what(), c.want);
    }
  }
  testing::FakeHandle handle;
  EXPECT_THROW(New({{"hardPodAffinityWeight", 500}}, handle), std::invalid_argument);
}

// ---- events and queueing hints ----

TEST(InterPodAffinityEvents, RegistersAssignedPodsNodesAndThePodsOwnLabels) {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<InterPodAffinity>(New(nullptr, handle));
  auto events = plugin->EventsToRegister();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kPod);
  EXPECT_EQ(events[0].event.actions,
            framework::kAdd | framework::kUpdatePodLabel | framework::kDelete);
  EXPECT_EQ(events[1].event.resource, framework::EventResource::kUnscheduledPod);
  EXPECT_EQ(events[1].event.actions, framework::kUpdatePodLabel);
  auto pod = MakePod({"p"});
  EXPECT_EQ(events[1].hint(*pod, {}), QueueingHint::kQueue);
  EXPECT_EQ(events[2].event.resource, framework::EventResource::kNode);
  EXPECT_EQ(events[2].event.actions, framework::kAdd | framework::kUpdateNodeLabel);
}

TEST(InterPodAffinityEvents, AssignedPodChangeHint) {
  const auto pod = MakePod({"p",
                            "default",
                            {{"app", "web"}},
                            "",
                            {Term(Selector({In("service", {"securityscan"})}), "region")},
                            {Term(Selector({In("service", {"db"})}), "region")}});
  auto assigned = [](std::vector<std::pair<std::string, std::string>> labels,
                     std::vector<api::PodAffinityTerm> anti = {}) {
    return MakePod({"e", "default", std::move(labels), "node1", {}, std::move(anti)});
  };
  struct Case {
    const char* name;
    api::PodPtr old_pod, new_pod;
    QueueingHint want;
  };
  const auto unassigned = MakePod({"u", "default", {{"service", "securityscan"}}});
  const Case cases[] = {
      {"an unassigned pod is skipped", nullptr, unassigned, QueueingHint::kSkip},
      {"an added pod matching the affinity", nullptr, assigned({{"service", "securityscan"}}),
       QueueingHint::kQueue},
      {"an added pod not matching the affinity", nullptr, assigned({{"service", "other"}}),
       QueueingHint::kSkip},
      {"an update to match the affinity", assigned({{"service", "other"}}),
       assigned({{"service", "securityscan"}}), QueueingHint::kQueue},
      {"an update that no longer matches the anti-affinity", assigned({{"service", "db"}}),
       assigned({{"service", "other"}}), QueueingHint::kQueue},
      {"an update that changes nothing relevant", assigned({{"service", "db"}}),
       assigned({{"service", "db"}, {"x", "y"}}), QueueingHint::kSkip},
      {"a deleted pod matching the anti-affinity", assigned({{"service", "db"}}), nullptr,
       QueueingHint::kQueue},
      {"a deleted pod whose anti-affinity matched the pod",
       assigned({}, {Term(Selector({In("app", {"web"})}), "region")}), nullptr,
       QueueingHint::kQueue},
      {"a deleted pod unrelated to the pod", assigned({{"service", "other"}}), nullptr,
       QueueingHint::kSkip},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    framework::EventObjects event;
    event.old_pod = c.old_pod;
    event.new_pod = c.new_pod;
    EXPECT_EQ(IsSchedulableAfterAssignedPodChange(*pod, event), c.want);
  }
}

TEST(InterPodAffinityEvents, NodeChangeHint) {
  const auto affinity_pod = MakePod(
      {"p", "default", {}, "", {Term(Selector({In("service", {"securityscan"})}), "zone")}});
  const auto anti_pod = MakePod(
      {"p", "default", {}, "", {}, {Term(Selector({In("service", {"securityscan"})}), "zone")}});
  const auto plain_pod = MakePod({"p"});
  const auto none = MakeNode("n", {});
  const auto z1 = MakeNode("n", {{"zone", "z1"}});
  const auto z2 = MakeNode("n", {{"zone", "z2"}});
  struct Case {
    const char* name;
    api::PodPtr pod;
    api::NodePtr old_node, new_node;
    QueueingHint want;
  };
  const Case cases[] = {
      {"affinity: an added node with the topology key", affinity_pod, nullptr, z1,
       QueueingHint::kQueue},
      {"affinity: an added node without it", affinity_pod, nullptr, none, QueueingHint::kSkip},
      {"affinity: a node gaining the key", affinity_pod, none, z1, QueueingHint::kQueue},
      {"affinity: a node changing domain", affinity_pod, z1, z2, QueueingHint::kQueue},
      {"affinity: a node losing the key", affinity_pod, z1, none, QueueingHint::kSkip},
      {"anti-affinity: any added node", anti_pod, nullptr, none, QueueingHint::kQueue},
      {"anti-affinity: a node losing the key", anti_pod, z1, none, QueueingHint::kQueue},
      {"anti-affinity: a node changing domain", anti_pod, z1, z2, QueueingHint::kQueue},
      {"anti-affinity: a node gaining the key", anti_pod, none, z1, QueueingHint::kSkip},
      {"no terms: nothing to wait for", plain_pod, nullptr, z1, QueueingHint::kSkip},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    framework::EventObjects event;
    event.old_node = c.old_node;
    event.new_node = c.new_node;
    EXPECT_EQ(IsSchedulableAfterNodeChange(*c.pod, event), c.want);
  }
}

}  // namespace
}  // namespace berth::plugins::interpodaffinity
