#include "pkg/plugins/podtopologyspread/podtopologyspread.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/informer/factory.h"
#include "test/testing/batch.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::podtopologyspread {
namespace {

using framework::Code;
using framework::QueueingHint;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kZone[] = "zone";

api::Requirement Exists(const std::string& key) {
  api::Requirement r;
  r.key = key;
  r.op = api::SelectorOperator::kExists;
  return r;
}

api::Requirement Equals(const std::string& key, const std::string& value) {
  api::Requirement r;
  r.key = key;
  r.op = api::SelectorOperator::kIn;
  r.values = {value};
  return r;
}

api::StringMap Set(const std::string& key, const std::string& value) {
  api::StringMap set;
  set.Set(key, value);
  return set;
}

api::LabelSelector Selector(std::vector<api::Requirement> requirements) {
  api::LabelSelector s;
  s.requirements = std::move(requirements);
  return s;
}

api::TopologySpreadConstraint Spread(int32_t max_skew, const std::string& key,
                                     api::WhenUnsatisfiable when,
                                     std::optional<api::LabelSelector> selector) {
  api::TopologySpreadConstraint c;
  c.max_skew = max_skew;
  c.topology_key = key;
  c.when_unsatisfiable = when;
  c.label_selector = std::move(selector);
  return c;
}

api::TopologySpreadConstraint Hard(int32_t max_skew, const std::string& key,
                                   std::optional<api::LabelSelector> selector) {
  return Spread(max_skew, key, api::WhenUnsatisfiable::kDoNotSchedule, std::move(selector));
}

api::TopologySpreadConstraint Soft(int32_t max_skew, const std::string& key,
                                   std::optional<api::LabelSelector> selector) {
  return Spread(max_skew, key, api::WhenUnsatisfiable::kScheduleAnyway, std::move(selector));
}

// A pod in namespace "default" labelled foo="".
testing::PodBuilder Incoming(std::vector<api::TopologySpreadConstraint> constraints) {
  testing::PodBuilder b("p", "default");
  b.Uid("uid-p").Label("foo", "");
  b.pod().spec.topology_spread_constraints = std::move(constraints);
  return b;
}

struct ExistingPod {
  std::string node;
  std::map<std::string, std::string> labels = {{"foo", ""}};
  std::string ns = "default";
  bool terminating = false;
};

struct NodeSpec {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<api::Taint> taints = {};
};

api::PodPtr MakeExisting(const ExistingPod& e, int i) {
  testing::PodBuilder b("e" + std::to_string(i), e.ns);
  b.Uid("uid-e" + std::to_string(i)).Node(e.node);
  for (const auto& [k, v] : e.labels) b.Label(k, v);
  if (e.terminating) b.pod().meta.deletion_timestamp = "2024-01-01T00:00:00Z";
  return b.Build();
}

std::vector<framework::NodeInfoPtr> MakeNodes(const std::vector<NodeSpec>& specs,
                                              const std::vector<ExistingPod>& pods) {
  std::vector<framework::NodeInfoPtr> out;
  for (const NodeSpec& spec : specs) {
    testing::NodeBuilder b(spec.name);
    for (const auto& [k, v] : spec.labels) b.Label(k, v);
    for (const auto& t : spec.taints) b.Taint(t.key, t.value, t.effect);
    auto info = b.Info();
    for (size_t i = 0; i < pods.size(); i++) {
      if (pods[i].node == spec.name) {
        info->AddPod(
            std::make_shared<framework::PodInfo>(MakeExisting(pods[i], static_cast<int>(i))));
      }
    }
    out.push_back(info);
  }
  return out;
}

// Four nodes over two zones: node-a, node-b in zone1; node-x, node-y in zone2.
std::vector<NodeSpec> FourNodes() {
  return {{"node-a", {{kZone, "zone1"}}},
          {"node-b", {{kZone, "zone1"}}},
          {"node-x", {{kZone, "zone2"}}},
          {"node-y", {{kZone, "zone2"}}}};
}

std::shared_ptr<PodTopologySpread> NewPlugin(testing::FakeHandle& handle,
                                             const json& args = nullptr) {
  auto plugin = std::dynamic_pointer_cast<PodTopologySpread>(New(args, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

// Filter's code on each node after PreFilter.
std::map<std::string, Code> FilterCodes(PodTopologySpread& plugin,
                                        const std::vector<framework::NodeInfoPtr>& nodes,
                                        const api::Pod& pod, framework::CycleState& state) {
  framework::PreFilterResult result;
  framework::Status pre = plugin.PreFilter(state, pod, nodes, &result);
  EXPECT_TRUE(pre.IsSuccess()) << pre.Message();
  testing::ExpectFilterNodesMatchesFilter(plugin, state, pod, nodes);
  std::map<std::string, Code> codes;
  for (const auto& node : nodes) codes[node->name()] = plugin.Filter(state, pod, *node).code();
  return codes;
}

struct FilterCase {
  std::string name;
  std::vector<api::TopologySpreadConstraint> constraints;
  std::vector<NodeSpec> nodes;
  std::vector<ExistingPod> pods;
  std::map<std::string, Code> want;
  std::map<std::string, std::string> node_selector = {};
  std::vector<api::Toleration> tolerations = {};
};

const api::LabelSelector kFoo = Selector({Exists("foo")});
const api::LabelSelector kBar = Selector({Exists("bar")});

TEST(Filter, SingleAndMultipleConstraints) {
  auto with_min_domains = [](api::TopologySpreadConstraint c, int32_t min_domains) {
    c.min_domains = min_domains;
    return c;
  };
  auto with_policies = [](api::TopologySpreadConstraint c, api::NodeInclusionPolicy affinity,
                          api::NodeInclusionPolicy taints) {
    c.node_affinity_policy = affinity;
    c.node_taints_policy = taints;
    return c;
  };
  const api::Taint taint{"dedicated", "x", api::TaintEffect::kNoSchedule};
  std::vector<NodeSpec> tainted_y = FourNodes();
  tainted_y[3].taints = {taint};
  const std::vector<FilterCase> cases = {
      {"no existing pods: every node fits",
       {Hard(1, kZone, kFoo)},
       FourNodes(),
       {},
       {{"node-a", Code::kSuccess},
        {"node-b", Code::kSuccess},
        {"node-x", Code::kSuccess},
        {"node-y", Code::kSuccess}}},
      {"pods in other namespaces and terminating pods do not count",
       {Hard(1, kZone, kFoo)},
       FourNodes(),
       {{"node-a", {{"foo", ""}}, "ns1"},
        {"node-a", {{"foo", ""}}, "default", true},
        {"node-x"},
        {"node-y"}},
       {{"node-a", Code::kSuccess},
        {"node-b", Code::kSuccess},
        {"node-x", Code::kUnschedulable},
        {"node-y", Code::kUnschedulable}}},
      {"a constraint without labelSelector counts no pod",
       {Hard(1, kZone, std::nullopt)},
       FourNodes(),
       {{"node-x"}, {"node-y"}},
       {{"node-a", Code::kSuccess},
        {"node-b", Code::kSuccess},
        {"node-x", Code::kSuccess},
        {"node-y", Code::kSuccess}}},
      {"an incoming pod its own selector does not match adds no skew",
       {Hard(1, kZone, kBar)},
       FourNodes(),
       {{"node-x", {{"bar", ""}}}},
       {{"node-a", Code::kSuccess},
        {"node-b", Code::kSuccess},
        {"node-x", Code::kSuccess},
        {"node-y", Code::kSuccess}}},
      {"a node without the topology key is unresolvable and its pods do not count",
       {Hard(1, kZone, kFoo)},
       {{"node-a", {{kZone, "zone1"}}},
        {"node-b", {{"zon", "zone1"}}},
        {"node-x", {{kZone, "zone2"}}},
        {"node-y", {{kZone, "zone2"}}}},
       {{"node-a"}, {"node-b"}, {"node-x"}, {"node-y"}},
       {{"node-a", Code::kSuccess},
        {"node-b", Code::kUnschedulableAndUnresolvable},
        {"node-x", Code::kUnschedulable},
        {"node-y", Code::kUnschedulable}}},
      {"pods spread 3/3 fit everywhere with maxSkew 1",
       {Hard(1, kZone, kFoo)},
       FourNodes(),
       {{"node-a"}, {"node-a"}, {"node-b"}, {"node-y"}, {"node-y"}, {"node-y"}},
       {{"node-a", Code::kSuccess},
        {"node-b", Code::kSuccess},
        {"node-x", Code::kSuccess},
        {"node-y", Code::kSuccess}}},
      {"hostname spreading: only the emptiest nodes within maxSkew",
       {Hard(1, "kubernetes.io/hostname", kFoo)},
       FourNodes(),
       {{"node-a"}, {"node-a"}, {"node-b"}, {"node-x"}, {"node-y"}},
       {{"node-a", Code::kUnschedulable},
        {"node-b", Code::kSuccess},
        {"node-x", Code::kSuccess},
        {"node-y", Code::kSuccess}}},
      {"minDomains above the domain count makes the global minimum 0",
       {with_min_domains(Hard(1, kZone, kFoo), 3)},
       FourNodes(),
       {{"node-a"}, {"node-x"}},
       {{"node-a", Code::kUnschedulable},
        {"node-b", Code::kUnschedulable},
        {"node-x", Code::kUnschedulable},
        {"node-y", Code::kUnschedulable}}},
      {"minDomains met: the least loaded domain is the minimum",
       {with_min_domains(Hard(1, kZone, kFoo), 2)},
       FourNodes(),
       {{"node-a"}, {"node-x"}},
       {{"node-a", Code::kSuccess},
        {"node-b", Code::kSuccess},
        {"node-x", Code::kSuccess},
        {"node-y", Code::kSuccess}}},
      {"two constraints: a node must satisfy both",
       {Hard(1, kZone, kFoo), Hard(1, "kubernetes.io/hostname", kFoo)},
       FourNodes(),
       {{"node-a"}, {"node-b"}, {"node-x"}},
       {{"node-a", Code::kUnschedulable},
        {"node-b", Code::kUnschedulable},
        {"node-x", Code::kUnschedulable},
        {"node-y", Code::kSuccess}}},
      {"nodeAffinityPolicy Honor leaves nodes outside the nodeSelector out of the domains",
       {Hard(1, kZone, kFoo)},
       FourNodes(),
       {{"node-a"}, {"node-b"}},
       {{"node-a", Code::kSuccess},
        {"node-b", Code::kSuccess},
        {"node-x", Code::kSuccess},
        {"node-y", Code::kSuccess}},
       {{kZone, "zone1"}}},
      {"nodeAffinityPolicy Ignore counts the domains outside the nodeSelector",
       {with_policies(Hard(1, kZone, kFoo), api::NodeInclusionPolicy::kIgnore,
                      api::NodeInclusionPolicy::kIgnore)},
       FourNodes(),
       {{"node-a"}, {"node-b"}},
       {{"node-a", Code::kUnschedulable},
        {"node-b", Code::kUnschedulable},
        {"node-x", Code::kSuccess},
        {"node-y", Code::kSuccess}},
       {{kZone, "zone1"}}},
      {"nodeTaintsPolicy Ignore counts a tainted node's domain",
       {Hard(1, "kubernetes.io/hostname", kFoo)},
       tainted_y,
       {{"node-a"}, {"node-b"}, {"node-x"}},
       {{"node-a", Code::kUnschedulable},
        {"node-b", Code::kUnschedulable},
        {"node-x", Code::kUnschedulable},
        {"node-y", Code::kSuccess}}},
      {"nodeTaintsPolicy Honor leaves an untolerated tainted node out of the domains",
       {with_policies(Hard(1, "kubernetes.io/hostname", kFoo), api::NodeInclusionPolicy::kHonor,
                      api::NodeInclusionPolicy::kHonor)},
       tainted_y,
       {{"node-a"}, {"node-b"}, {"node-x"}},
       {{"node-a", Code::kSuccess},
        {"node-b", Code::kSuccess},
        {"node-x", Code::kSuccess},
        {"node-y", Code::kSuccess}}},
      {"nodeTaintsPolicy Honor counts a tainted node the pod tolerates",
       {with_policies(Hard(1, "kubernetes.io/hostname", kFoo), api::NodeInclusionPolicy::kHonor,
                      api::NodeInclusionPolicy::kHonor)},
       tainted_y,
       {{"node-a"}, {"node-b"}, {"node-x"}},
       {{"node-a", Code::kUnschedulable},
        {"node-b", Code::kUnschedulable},
        {"node-x", Code::kUnschedulable},
        {"node-y", Code::kSuccess}},
       {},
       {{"dedicated", api::TolerationOperator::kExists, "", api::TaintEffect::kAll, std::nullopt}}},
  };
  for (const FilterCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto nodes = MakeNodes(c.nodes, c.pods);
    testing::FakeHandle handle(nodes);
    auto plugin = NewPlugin(handle);
    auto pod = Incoming(c.constraints);
    for (const auto& [k, v] : c.node_selector) pod.NodeSelector(k, v);
    for (const auto& t : c.tolerations) pod.Toleration(t);
    framework::CycleState state;
    EXPECT_EQ(FilterCodes(*plugin, nodes, *pod.Build(), state), c.want);
  }
}

TEST(Filter, ReasonsAreUpstreams) {
  auto nodes = MakeNodes({{"node-a", {{kZone, "zone1"}}},
                          {"node-b", {{"other", "x"}}},
                          {"node-x", {{kZone, "zone2"}}}},
                         {{"node-a"}, {"node-a"}});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  auto pod = Incoming({Hard(1, kZone, kFoo)}).Build();
  framework::CycleState state;
  framework::PreFilterResult result;
  ASSERT_TRUE(plugin->PreFilter(state, *pod, nodes, &result).IsSuccess());
  framework::Status a = plugin->Filter(state, *pod, *nodes[0]);
  EXPECT_EQ(a.code(), Code::kUnschedulable);
  EXPECT_EQ(a.Message(), "node(s) didn't match pod topology spread constraints");
  framework::Status b = plugin->Filter(state, *pod, *nodes[1]);
  EXPECT_EQ(b.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(b.Message(),
            "node(s) didn't match pod topology spread constraints (missing required label)");
  EXPECT_TRUE(plugin->Filter(state, *pod, *nodes[2]).IsSuccess());
}

TEST(Filter, MatchLabelKeysNarrowTheSelectorToThePodsValues) {
  // Pods of another revision do not count against this one.
  auto nodes = MakeNodes(FourNodes(), {{"node-a", {{"foo", ""}, {"rev", "1"}}},
                                       {"node-a", {{"foo", ""}, {"rev", "1"}}},
                                       {"node-x", {{"foo", ""}, {"rev", "2"}}}});
  auto constraint = Hard(1, kZone, kFoo);
  constraint.match_label_keys = {"rev", "absent"};
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  auto rev2 = Incoming({constraint}).Label("rev", "2").Build();
  framework::CycleState state;
  EXPECT_EQ(FilterCodes(*plugin, nodes, *rev2, state),
            (std::map<std::string, Code>{{"node-a", Code::kSuccess},
                                         {"node-b", Code::kSuccess},
                                         {"node-x", Code::kUnschedulable},
                                         {"node-y", Code::kUnschedulable}}));
  // Without matchLabelKeys zone1 holds 2, zone2 1: zone1 is over the skew.
  framework::CycleState plain_state;
  EXPECT_EQ(FilterCodes(*plugin, nodes, *Incoming({Hard(1, kZone, kFoo)}).Build(), plain_state),
            (std::map<std::string, Code>{{"node-a", Code::kUnschedulable},
                                         {"node-b", Code::kUnschedulable},
                                         {"node-x", Code::kSuccess},
                                         {"node-y", Code::kSuccess}}));
}

TEST(PreFilter, SkipsAPodWithoutHardConstraints) {
  auto nodes = MakeNodes(FourNodes(), {});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  framework::CycleState state;
  framework::PreFilterResult result;
  EXPECT_TRUE(
      plugin->PreFilter(state, *Incoming({Soft(1, kZone, kFoo)}).Build(), nodes, &result).IsSkip());
  EXPECT_TRUE(plugin->PreFilter(state, *Incoming({}).Build(), nodes, &result).IsSkip());
}

TEST(Filter, WithoutPreFilterStateIsAnError) {
  auto nodes = MakeNodes(FourNodes(), {});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  framework::CycleState state;
  framework::Status s = plugin->Filter(state, *Incoming({Hard(1, kZone, kFoo)}).Build(), *nodes[0]);
  EXPECT_EQ(s.code(), Code::kError);
  EXPECT_THAT(s.Message(), HasSubstr("PreFilterPodTopologySpread"));
}

TEST(Filter, CountsFollowTheSnapshotFromCycleToCycle) {
  // The index keeps counts between cycles; a node whose NodeInfo was replaced is counted again.
  auto nodes = MakeNodes(FourNodes(), {{"node-a"}, {"node-x"}});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  auto pod = Incoming({Hard(1, kZone, kFoo)}).Build();
  framework::CycleState first;
  EXPECT_EQ(FilterCodes(*plugin, nodes, *pod, first)["node-a"], Code::kSuccess);
  auto replaced = nodes[0]->Clone();
  replaced->AddPod(std::make_shared<framework::PodInfo>(MakeExisting({"node-a"}, 7)));
  nodes[0] = replaced;
  handle.lister().Set(nodes);
  framework::CycleState second;
  auto codes = FilterCodes(*plugin, nodes, *pod, second);
  EXPECT_EQ(codes["node-a"], Code::kUnschedulable);
  EXPECT_EQ(codes["node-x"], Code::kSuccess);
  // A node removed from the snapshot takes its pods with it.
  nodes.erase(nodes.begin());
  handle.lister().Set(nodes);
  framework::CycleState third;
  codes = FilterCodes(*plugin, nodes, *pod, third);
  EXPECT_EQ(codes["node-b"], Code::kSuccess);
  EXPECT_EQ(codes["node-x"], Code::kUnschedulable);
}

TEST(Filter, NodeAffinityPolicyFollowsNodeLabelsFromCycleToCycle) {
  // nodeAffinityPolicy Honor counts only the domains of nodes the pod's nodeSelector matches; the
  // index keeps those matches between cycles, so a node that gains the label must count next.
  auto nodes = MakeNodes({{"node-a", {{kZone, "zone1"}, {"pool", "yes"}}},
                          {"node-b", {{kZone, "zone3"}}},
                          {"node-x", {{kZone, "zone2"}, {"pool", "yes"}}}},
                         {{"node-a"}, {"node-x"}});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  auto pod = Incoming({Hard(1, kZone, kFoo)}).NodeSelector("pool", "yes").Build();
  framework::CycleState first;
  EXPECT_EQ(FilterCodes(*plugin, nodes, *pod, first)["node-a"], Code::kSuccess);
  nodes[1] = MakeNodes({{"node-b", {{kZone, "zone3"}, {"pool", "yes"}}}}, {})[0];
  handle.lister().Set(nodes);
  framework::CycleState second;
  EXPECT_EQ(FilterCodes(*plugin, nodes, *pod, second)["node-a"], Code::kUnschedulable);
}

TEST(PreFilterExtensions, AddPodAndRemovePodChangeTheCountsOfAClone) {
  auto nodes = MakeNodes(FourNodes(), {{"node-a"}, {"node-x"}});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  auto pod = Incoming({Hard(1, kZone, kFoo)}).Build();
  framework::CycleState state;
  framework::PreFilterResult result;
  ASSERT_TRUE(plugin->PreFilter(state, *pod, nodes, &result).IsSuccess());
  EXPECT_TRUE(plugin->Filter(state, *pod, *nodes[0]).IsSuccess());

  auto added = state.Clone();
  framework::PodInfo matching(MakeExisting({"node-a"}, 10));
  ASSERT_TRUE(plugin->AddPod(*added, *pod, matching, *nodes[0]).IsSuccess());
  // zone1 2, zone2 1: zone1 is now over the skew, zone2 still fits.
  EXPECT_EQ(plugin->Filter(*added, *pod, *nodes[0]).code(), Code::kUnschedulable);
  EXPECT_TRUE(plugin->Filter(*added, *pod, *nodes[2]).IsSuccess());
  // The original state is untouched.
  EXPECT_TRUE(plugin->Filter(state, *pod, *nodes[0]).IsSuccess());

  // A pod of another namespace or one the selector does not match changes nothing.
  framework::PodInfo other_ns(MakeExisting({"node-x", {{"foo", ""}}, "other"}, 11));
  framework::PodInfo unmatched(MakeExisting({"node-x", {{"bar", ""}}}, 12));
  ASSERT_TRUE(plugin->AddPod(*added, *pod, other_ns, *nodes[2]).IsSuccess());
  ASSERT_TRUE(plugin->AddPod(*added, *pod, unmatched, *nodes[2]).IsSuccess());
  EXPECT_TRUE(plugin->Filter(*added, *pod, *nodes[2]).IsSuccess());

  ASSERT_TRUE(plugin->RemovePod(*added, *pod, matching, *nodes[0]).IsSuccess());
  EXPECT_TRUE(plugin->Filter(*added, *pod, *nodes[0]).IsSuccess());
  auto removed = state.Clone();
  framework::PodInfo on_x(MakeExisting({"node-x"}, 13));
  ASSERT_TRUE(plugin->RemovePod(*removed, *pod, on_x, *nodes[2]).IsSuccess());
  // zone1 1, zone2 0: zone1 is over the skew.
  EXPECT_EQ(plugin->Filter(*removed, *pod, *nodes[0]).code(), Code::kUnschedulable);
  EXPECT_TRUE(plugin->Filter(*removed, *pod, *nodes[3]).IsSuccess());

  framework::CycleState empty;
  EXPECT_EQ(plugin->AddPod(empty, *pod, matching, *nodes[0]).code(), Code::kError);
}

// PreScore, Score over `nodes` and NormalizeScore; node name -> final score.
std::map<std::string, int64_t> Scores(PodTopologySpread& plugin, const api::Pod& pod,
                                      const std::vector<framework::NodeInfoPtr>& nodes,
                                      framework::Status* pre_score = nullptr) {
  framework::CycleState state;
  auto pointers = testing::NodePointers(nodes);
  framework::Status pre = plugin.PreScore(state, pod, pointers);
  if (pre_score) *pre_score = pre;
  if (!pre.IsSuccess()) return {};
  testing::ExpectScoreNodesMatchesScore(plugin, state, pod, nodes);
  framework::NodeScoreList scores;
  for (const auto& node : nodes) {
    int64_t score = 0;
    EXPECT_TRUE(plugin.Score(state, pod, *node, &score).IsSuccess());
    scores.push_back({node->name(), score});
  }
  EXPECT_TRUE(plugin.NormalizeScore(state, pod, scores).IsSuccess());
  std::map<std::string, int64_t> out;
  for (const auto& s : scores) out[std::string(s.name)] = s.score;
  return out;
}

TEST(Score, ZoneCountsWeightedByTheLogOfTheDomainCount) {
  // zone1 holds 2 matching pods, zone2 1: raw 2*ln(4) ~ 2.77 -> 3 and ln(4) ~ 1.39 -> 1,
  // normalized as 100*(max+min-s)/max.
  auto nodes =
      MakeNodes(FourNodes(), {{"node-a"}, {"node-a"}, {"node-x"}, {"node-x", {{"bar", ""}}}});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  EXPECT_EQ(Scores(*plugin, *Incoming({Soft(1, kZone, kFoo)}).Build(), nodes),
            (std::map<std::string, int64_t>{
                {"node-a", 33}, {"node-b", 33}, {"node-x", 100}, {"node-y", 100}}));
}

TEST(Score, MaxSkewAddsToEveryNode) {
  // maxSkew 5 adds 4 everywhere: raw 7 and 5 -> 100*(12-7)/7 = 71 and 100.
  auto nodes = MakeNodes(FourNodes(), {{"node-a"}, {"node-a"}, {"node-x"}});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  EXPECT_EQ(Scores(*plugin, *Incoming({Soft(5, kZone, kFoo)}).Build(), nodes),
            (std::map<std::string, int64_t>{
                {"node-a", 71}, {"node-b", 71}, {"node-x", 100}, {"node-y", 100}}));
}

TEST(Score, HostnameCountsPerNodeAndNodesWithoutAKeyScoreZero) {
  // node-c lacks the zone label: ignored, and its pod not counted. Hostname weight ln(3+2) over
  // the three scored nodes; zone weight ln(2+2).
  std::vector<NodeSpec> specs = {{"node-a", {{kZone, "zone1"}}},
                                 {"node-b", {{kZone, "zone1"}}},
                                 {"node-x", {{kZone, "zone2"}}},
                                 {"node-c", {}}};
  auto nodes = MakeNodes(specs, {{"node-a"}, {"node-a"}, {"node-c"}});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  auto pod = Incoming({Soft(1, kZone, kFoo), Soft(1, "kubernetes.io/hostname", kFoo)}).Build();
  // raw: a = 2*ln5 + 2*ln4 = 6.0 -> 6, b = 2*ln4 = 2.77 -> 3, x = 0; max 6, min 0.
  EXPECT_EQ(Scores(*plugin, *pod, nodes),
            (std::map<std::string, int64_t>{
                {"node-a", 0}, {"node-b", 50}, {"node-x", 100}, {"node-c", 0}}));
}

TEST(Score, SkipsAPodWithoutSoftConstraintsOrDefaults) {
  auto nodes = MakeNodes(FourNodes(), {});
  testing::FakeHandle handle(nodes);
  auto plugin = NewPlugin(handle);
  framework::Status pre;
  Scores(*plugin, *Incoming({Hard(1, kZone, kFoo)}).Build(), nodes, &pre);
  EXPECT_TRUE(pre.IsSkip());
  // No constraints and nothing selecting the pod: the system defaults have no selector.
  Scores(*plugin, *Incoming({}).Build(), nodes, &pre);
  EXPECT_TRUE(pre.IsSkip());
}

api::OwnerReference ControlledBy(const std::string& api_version, const std::string& kind,
                                 const std::string& name) {
  return {api_version, kind, name, "uid-" + name, true};
}

TEST(DefaultConstraints, SystemDefaultsSpreadAReplicaSetsPods) {
  std::vector<NodeSpec> specs = {{"node-a", {{std::string(kZoneKey), "z1"}}},
                                 {"node-b", {{std::string(kZoneKey), "z1"}}},
                                 {"node-x", {{std::string(kZoneKey), "z2"}}},
                                 {"node-n", {}}};
  auto nodes = MakeNodes(specs, {{"node-a", {{"app", "web"}}},
                                 {"node-a", {{"app", "web"}}},
                                 {"node-b", {{"app", "web"}}},
                                 {"node-x", {{"app", "db"}}}});
  testing::FakeHandle handle(nodes);
  auto rs = std::make_shared<api::ReplicaSet>();
  rs->meta.name = "web";
  rs->meta.namespace_ = "default";
  rs->selector = Selector({Equals("app", "web")});
  handle.informers().For<api::ReplicaSet>().Upsert(rs);
  auto plugin = NewPlugin(handle);

  testing::PodBuilder b("p", "default");
  b.Label("app", "web");
  b.pod().meta.owner_references = {ControlledBy("apps/v1", "ReplicaSet", "web")};
  auto pod = b.Build();
  // Hostname (maxSkew 3) weight ln(4+2); zone (maxSkew 5) weight ln(3+2): zone z1, z2 and the
  // empty value of node-n, which lacks the label but is not ignored under the system defaults.
  // raw: a = 2*ln6 + 2 + 3*ln5 + 4 = 14.41 -> 14; b = ln6 + 2 + 3*ln5 + 4 = 12.62 -> 13;
  // x = 2 + 0 + 4 = 6; n = 2 (no zone label, so no zone term). max 14, min 2.
  EXPECT_EQ(Scores(*plugin, *pod, nodes),
            (std::map<std::string, int64_t>{
                {"node-a", 14}, {"node-b", 21}, {"node-x", 71}, {"node-n", 100}}));
  // Without the controller nothing selects the pod.
  b.pod().meta.owner_references.clear();
  framework::Status pre;
  Scores(*plugin, *b.Build(), nodes, &pre);
  EXPECT_TRUE(pre.IsSkip());
}

TEST(DefaultConstraints, SelectorComesFromServicesAndControllers) {
  testing::FakeHandle handle;
  auto service = std::make_shared<api::Service>();
  service->meta.name = "web";
  service->meta.namespace_ = "default";
  service->selector = Set("app", "web");
  auto other = std::make_shared<api::Service>();
  other->meta.name = "other";
  other->meta.namespace_ = "default";
  other->selector = Set("app", "db");
  auto no_selector = std::make_shared<api::Service>();
  no_selector->meta.name = "headless";
  no_selector->meta.namespace_ = "default";
  auto ss = std::make_shared<api::StatefulSet>();
  ss->meta.name = "web";
  ss->meta.namespace_ = "default";
  ss->selector = Selector({Exists("tier")});
  auto rc = std::make_shared<api::ReplicationController>();
  rc->meta.name = "legacy";
  rc->meta.namespace_ = "default";
  rc->selector = Set("tier", "front");
  handle.informers().For<api::Service>().Upsert(service);
  handle.informers().For<api::Service>().Upsert(other);
  handle.informers().For<api::Service>().Upsert(no_selector);
  handle.informers().For<api::StatefulSet>().Upsert(ss);
  handle.informers().For<api::ReplicationController>().Upsert(rc);
  OwnerListers listers{handle.informers().ListerFor<api::Service>(),
                       handle.informers().ListerFor<api::ReplicationController>(),
                       handle.informers().ListerFor<api::ReplicaSet>(),
                       handle.informers().ListerFor<api::StatefulSet>()};
  testing::PodBuilder b("p", "default");
  b.Label("app", "web").Label("tier", "front");
  EXPECT_EQ(DefaultSelector(*b.Build(), listers), Selector({Equals("app", "web")}));
  b.pod().meta.owner_references = {ControlledBy("apps/v1", "StatefulSet", "web")};
  EXPECT_EQ(DefaultSelector(*b.Build(), listers), Selector({Equals("app", "web"), Exists("tier")}));
  b.pod().meta.owner_references = {ControlledBy("v1", "ReplicationController", "legacy")};
  EXPECT_EQ(DefaultSelector(*b.Build(), listers),
            Selector({Equals("app", "web"), Equals("tier", "front")}));
  // Another namespace's objects select nothing.
  testing::PodBuilder elsewhere("q", "other");
  elsewhere.Label("app", "web");
  EXPECT_TRUE(DefaultSelector(*elsewhere.Build(), listers).Empty());
}

TEST(DefaultConstraints, ListDefaultingAppliesOnlyToPodsWithoutConstraints) {
  auto nodes = MakeNodes(FourNodes(), {{"node-a", {{"app", "web"}}}});
  testing::FakeHandle handle(nodes);
  auto service = std::make_shared<api::Service>();
  service->meta.name = "web";
  service->meta.namespace_ = "default";
  service->selector = Set("app", "web");
  handle.informers().For<api::Service>().Upsert(service);
  auto plugin = NewPlugin(handle, json::parse(R"({"defaultingType": "List", "defaultConstraints":
      [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})"));
  testing::PodBuilder b("p", "default");
  b.Label("app", "web");
  framework::CycleState state;
  EXPECT_EQ(FilterCodes(*plugin, nodes, *b.Build(), state),
            (std::map<std::string, Code>{{"node-a", Code::kUnschedulable},
                                         {"node-b", Code::kUnschedulable},
                                         {"node-x", Code::kSuccess},
                                         {"node-y", Code::kSuccess}}));
  // A pod's own constraints replace the defaults entirely.
  b.pod().spec.topology_spread_constraints = {Soft(1, kZone, kFoo)};
  framework::CycleState own;
  framework::PreFilterResult result;
  EXPECT_TRUE(plugin->PreFilter(own, *b.Build(), nodes, &result).IsSkip());
}

TEST(Args, DefaultsAndErrorsNameTheField) {
  Args defaults = ParseArgs(nullptr);
  EXPECT_EQ(defaults.defaulting_type, DefaultingType::kSystem);
  EXPECT_TRUE(defaults.default_constraints.empty());
  ASSERT_EQ(SystemDefaultConstraints().size(), 2u);
  EXPECT_EQ(SystemDefaultConstraints()[0].topology_key, "kubernetes.io/hostname");
  EXPECT_EQ(SystemDefaultConstraints()[0].max_skew, 3);
  EXPECT_EQ(SystemDefaultConstraints()[1].topology_key, "topology.kubernetes.io/zone");
  EXPECT_EQ(SystemDefaultConstraints()[1].max_skew, 5);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"defaultingType": "Foo"})",
       R"(defaultingType: Unsupported value: "Foo": supported values: "System", "List")"},
      {R"({"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})",
       R"(defaultingType: Invalid value: "System": when .defaultConstraints are not empty)"},
      {R"({"defaultingType": "List", "defaultConstraints": [{"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})",
       "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"},
      {R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]})",
       "defaultConstraints[0].topologyKey: Required value: can not be empty"},
      {R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]})",
       "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty"},
      {R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]})",
       R"(defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway")"},
      {R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]})",
       "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
       "as they deduced for each pod"},
      {R"({"defaultingType": "List", "defaultConstraints": [
          {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
          {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})",
       R"(defaultConstraints[1]: Duplicate value: "{zone, DoNotSchedule}")"},
      {R"({"defaultConstraint": []})", "defaultConstraint: unknown field"},
  };
  for (const auto& [args, message] : bad) {
    SCOPED_TRACE(args);
    try {
      ParseArgs(json::parse(args));
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  testing::FakeHandle handle;
  EXPECT_THROW(New(json::parse(R"({"defaultingType": 3})"), handle), std::invalid_argument);
}

TEST(Hints, AssignedPodChanges) {
  testing::FakeHandle handle;
  auto plugin = NewPlugin(handle);
  auto pod = Incoming({Hard(1, kZone, kFoo)}).Build();
  auto assigned = [](std::map<std::string, std::string> labels, const std::string& ns = "default",
                     const std::string& node = "node-a") {
    testing::PodBuilder b("e", ns);
    if (!node.empty()) b.Node(node);
    for (const auto& [k, v] : labels) b.Label(k, v);
    return b.Build();
  };
  auto hint = [&](api::PodPtr before, api::PodPtr after) {
    framework::EventObjects event;
    event.old_pod = std::move(before);
    event.new_pod = std::move(after);
    return plugin->IsSchedulableAfterAssignedPodChange(*pod, event);
  };
  EXPECT_EQ(hint(nullptr, assigned({{"foo", ""}})), QueueingHint::kQueue);
  EXPECT_EQ(hint(nullptr, assigned({{"bar", ""}})), QueueingHint::kSkip);
  EXPECT_EQ(hint(nullptr, assigned({{"foo", ""}}, "other")), QueueingHint::kSkip);
  EXPECT_EQ(hint(nullptr, assigned({{"foo", ""}}, "default", "")), QueueingHint::kSkip);
  EXPECT_EQ(hint(assigned({{"foo", ""}}), nullptr), QueueingHint::kQueue);
  EXPECT_EQ(hint(assigned({{"bar", ""}}), nullptr), QueueingHint::kSkip);
  EXPECT_EQ(hint(assigned({{"foo", ""}}), assigned({{"bar", ""}})), QueueingHint::kQueue);
  EXPECT_EQ(hint(assigned({{"foo", ""}}), assigned({{"foo", ""}, {"x", "1"}})),
            QueueingHint::kSkip);
}

TEST(Hints, TargetPodChanges) {
  testing::FakeHandle handle;
  auto plugin = NewPlugin(handle);
  auto honour = Hard(1, kZone, kFoo);
  honour.node_taints_policy = api::NodeInclusionPolicy::kHonor;
  auto hint = [&](const api::TopologySpreadConstraint& c, bool new_toleration, bool relabel) {
    auto before = Incoming({c}).Build();
    auto after_builder = Incoming({c});
    if (new_toleration) {
      after_builder.Toleration(
          {"k", api::TolerationOperator::kExists, "", api::TaintEffect::kAll, std::nullopt});
    }
    if (relabel) after_builder.pod().meta.labels = Set("bar", "");
    framework::EventObjects event;
    event.old_pod = before;
    event.new_pod = after_builder.Build();
    return plugin->IsSchedulableAfterTargetPodChange(*event.new_pod, event);
  };
  EXPECT_EQ(hint(honour, true, false), QueueingHint::kQueue);
  EXPECT_EQ(hint(Hard(1, kZone, kFoo), true, false), QueueingHint::kSkip);
  EXPECT_EQ(hint(Hard(1, kZone, kFoo), false, true), QueueingHint::kQueue);
}

TEST(Hints, NodeChanges) {
  testing::FakeHandle handle;
  auto plugin = NewPlugin(handle);
  auto pod = Incoming({Hard(1, kZone, kFoo)}).Build();
  auto node = [](std::map<std::string, std::string> labels, bool tainted = false) {
    testing::NodeBuilder b("n");
    for (const auto& [k, v] : labels) b.Label(k, v);
    if (tainted) b.Taint("k", "v", api::TaintEffect::kNoSchedule);
    return b.Build();
  };
  auto hint = [&](api::NodePtr before, api::NodePtr after) {
    framework::EventObjects event;
    event.old_node = std::move(before);
    event.new_node = std::move(after);
    return plugin->IsSchedulableAfterNodeChange(*pod, event);
  };
  EXPECT_EQ(hint(nullptr, node({{kZone, "z1"}})), QueueingHint::kQueue);
  EXPECT_EQ(hint(nullptr, node({})), QueueingHint::kSkip);
  EXPECT_EQ(hint(node({{kZone, "z1"}}), nullptr), QueueingHint::kQueue);
  EXPECT_EQ(hint(node({}), nullptr), QueueingHint::kSkip);
  EXPECT_EQ(hint(node({}), node({{kZone, "z1"}})), QueueingHint::kQueue);
  EXPECT_EQ(hint(node({{kZone, "z1"}}), node({{kZone, "z2"}})), QueueingHint::kQueue);
  EXPECT_EQ(hint(node({{kZone, "z1"}}), node({{kZone, "z1"}, {"x", "y"}})), QueueingHint::kSkip);
  EXPECT_EQ(hint(node({{kZone, "z1"}}), node({{kZone, "z1"}}, true)), QueueingHint::kQueue);
  EXPECT_EQ(hint(node({}), node({{"x", "y"}})), QueueingHint::kSkip);
}

TEST(Events, RegistersUpstreamsEvents) {
  testing::FakeHandle handle;
  auto events = NewPlugin(handle)->EventsToRegister();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kPod);
  EXPECT_EQ(events[0].event.actions,
            framework::kAdd | framework::kUpdatePodLabel | framework::kDelete);
  EXPECT_EQ(events[1].event.resource, framework::EventResource::kUnscheduledPod);
  EXPECT_EQ(events[1].event.actions, framework::kUpdatePodTolerations | framework::kUpdatePodLabel);
  EXPECT_EQ(events[2].event.resource, framework::EventResource::kNode);
  EXPECT_EQ(events[2].event.actions, framework::kAdd | framework::kDelete |
                                         framework::kUpdateNodeLabel | framework::kUpdateNodeTaint);
  for (const auto& e : events) EXPECT_TRUE(static_cast<bool>(e.hint));
}

}  // namespace
}  // namespace berth::plugins::podtopologyspread
