// The framework runtime's rules, checked with small test plugins whose behaviour each test sets.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "pkg/framework/runtime/framework.h"
#include "pkg/framework/runtime/parallelizer.h"
#include "test/testing/batch.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::framework::runtime {
namespace {

using namespace std::chrono_literals;
using testing::NodeBuilder;
using testing::PodBuilder;

// Everything a test plugin did, in order, across plugins: "A.Filter(n1)", "B.Unreserve" ...
struct Trace {
  std::mutex mu;
  std::vector<std::string> calls;
  void Add(std::string call) {
    std::lock_guard lock(mu);
    calls.push_back(std::move(call));
  }
  std::vector<std::string> Get() {
    std::lock_guard lock(mu);
    return calls;
  }
};

// A plugin at every extension point; each result is configurable per test.
class TestPlugin : public PreEnqueuePlugin,
                   public QueueSortPlugin,
                   public PreFilterPlugin,
                   public PreFilterExtensions,
                   public FilterPlugin,
                   public PostFilterPlugin,
                   public PreScorePlugin,
                   public ScorePlugin,
                   public ScoreExtensions,
                   public ReservePlugin,
                   public PermitPlugin,
                   public PreBindPlugin,
                   public BindPlugin,
                   public PostBindPlugin {
 public:
  TestPlugin(std::string name, Trace* trace) : name_(std::move(name)), trace_(trace) {}
  std::string_view Name() const override { return name_; }

  Status pre_enqueue, pre_filter, filter, post_filter, pre_score, score_status, normalize, reserve,
      permit, pre_bind, bind;
  std::optional<std::set<std::string>> pre_filter_nodes;
  std::map<std::string, int64_t> scores;  // node -> raw score
  bool has_normalize = false;
  bool has_extensions = false;  // PreFilter extensions (AddPod / RemovePod).
  std::chrono::milliseconds permit_timeout{0};
  std::string filter_only_node;                  // When set, Filter rejects every other node.
  std::map<std::string, Status> filter_by_node;  // Filter's status for these nodes.

  Status PreEnqueue(const api::Pod&) override {
    trace_->Add(name_ + ".PreEnqueue");
    return pre_enqueue;
  }
  bool Less(const QueuedPodInfo& a, const QueuedPodInfo& b) const override {
    return a.pod().spec.priority > b.pod().spec.priority;
  }
  Status PreFilter(CycleState&, const api::Pod&, const std::vector<NodeInfoPtr>&,
                   PreFilterResult* result) override {
    trace_->Add(name_ + ".PreFilter");
    result->node_names = pre_filter_nodes;
    return pre_filter;
  }
  PreFilterExtensions* Extensions() override { return has_extensions ? this : nullptr; }
  Status AddPod(CycleState&, const api::Pod&, const PodInfo&, const NodeInfo&) override {
    trace_->Add(name_ + ".AddPod");
    return {};
  }
  Status RemovePod(CycleState&, const api::Pod&, const PodInfo&, const NodeInfo&) override {
    trace_->Add(name_ + ".RemovePod");
    return {};
  }
  Status Filter(const CycleState&, const api::Pod&, const NodeInfo& node) override {
    trace_->Add(name_ + ".Filter(" + node.name() + ")");
    if (auto it = filter_by_node.find(node.name()); it != filter_by_node.end()) return it->second;
    if (!filter_only_node.empty() && node.name() != filter_only_node) {
      return Status::Unschedulable("not " + filter_only_node);
    }
    return filter;
  }
  Status PostFilter(CycleState&, const api::Pod&, const NodeToStatus&, PostFilterResult*) override {
    trace_->Add(name_ + ".PostFilter");
    return post_filter;
  }
  Status PreScore(CycleState&, const api::Pod&, std::span<const NodeInfo* const>) override {
    trace_->Add(name_ + ".PreScore");
    return pre_score;
  }
  Status Score(const CycleState&, const api::Pod&, const NodeInfo& node, int64_t* s) override {
    trace_->Add(name_ + ".Score(" + node.name() + ")");
    *s = scores.count(node.name()) ? scores.at(node.name()) : 0;
    return score_status;
  }
  Status ScoreNodes(const CycleState& state, const api::Pod& pod,
                    std::span<const NodeInfo* const> nodes, std::span<NodeScore> out) override {
    trace_->Add(name_ + ".ScoreNodes(" + std::to_string(nodes.size()) + ")");
    return ScorePlugin::ScoreNodes(state, pod, nodes, out);
  }
  ScoreExtensions* GetScoreExtensions() override { return has_normalize ? this : nullptr; }
  Status NormalizeScore(const CycleState&, const api::Pod&, NodeScoreList& list) override {
    trace_->Add(name_ + ".Normalize");
    // Halves every score: lets tests see normalization happen before weighting.
    for (auto& ns : list) ns.score /= 2;
    return normalize;
  }
  Status Reserve(CycleState&, const api::Pod&, const std::string&) override {
    trace_->Add(name_ + ".Reserve");
    return reserve;
  }
  void Unreserve(CycleState&, const api::Pod&, const std::string&) override {
    trace_->Add(name_ + ".Unreserve");
  }
  Status Permit(CycleState&, const api::Pod&, const std::string&,
                std::chrono::milliseconds* timeout) override {
    trace_->Add(name_ + ".Permit");
    *timeout = permit_timeout;
    return permit;
  }
  Status PreBind(CycleState&, const api::Pod&, const std::string&) override {
    trace_->Add(name_ + ".PreBind");
    return pre_bind;
  }
  Status Bind(CycleState&, const api::Pod&, const std::string& node) override {
    trace_->Add(name_ + ".Bind(" + node + ")");
    return bind;
  }
  void PostBind(CycleState&, const api::Pod&, const std::string&) override {
    trace_->Add(name_ + ".PostBind");
  }

 private:
  std::string name_;
  Trace* trace_;
};

class RuntimeTest : public ::testing::Test {
 protected:
  std::shared_ptr<TestPlugin> Add(const std::string& name) {
    auto p = std::make_shared<TestPlugin>(name, &trace_);
    plugins_[name] = p;
    registry_[name] = [p](const nlohmann::json&, Handle&) -> PluginPtr { return p; };
    return p;
  }

  // A profile enabling `names` at every extension point (specific lists, in order).
  config::Profile ProfileOf(const std::vector<std::string>& names,
                            const std::map<std::string, int32_t>& weights = {}) {
    config::Profile profile;
    profile.scheduler_name = "test";
    auto& p = profile.plugins;
    p.queue_sort.enabled.push_back({names.front(), 0});
    for (auto* set : {&p.pre_enqueue, &p.pre_filter, &p.filter, &p.post_filter, &p.pre_score,
                      &p.reserve, &p.permit, &p.pre_bind, &p.bind, &p.post_bind}) {
      for (const auto& n : names) set->enabled.push_back({n, 0});
    }
    for (const auto& n : names) {
      p.score.enabled.push_back({n, weights.count(n) ? weights.at(n) : 0});
    }
    return profile;
  }

  std::unique_ptr<Framework> Build(const config::Profile& profile) {
    FrameworkDeps deps;
    deps.snapshot = &handle_.lister();
    deps.recorder = &handle_.recorder();
    deps.parallelizer = &pool_;
    deps.nominator = &nominator_;
    deps.informer_factory = &handle_.informers();
    return std::make_unique<Framework>(registry_, profile, deps);
  }

  std::vector<NodeInfoPtr> Nodes(int n) {
    std::vector<NodeInfoPtr> out;
    for (int i = 1; i <= n; i++) out.push_back(NodeBuilder("n" + std::to_string(i)).Info());
    return out;
  }

  Trace trace_;
  Registry registry_;
  std::map<std::string, std::shared_ptr<TestPlugin>> plugins_;
  testing::FakeHandle handle_;
  WorkerPool pool_{1};
  testing::NoNominations nominator_;
  api::PodPtr pod_ = PodBuilder("p").Container("100m", "1Mi").Build();
};

TEST_F(RuntimeTest, FilterRunsInOrderAndStopsAtFirstRejection) {
  Add("A");
  auto b = Add("B");
  Add("C");
  b->filter = Status::Unschedulable("B says no");
  auto fwk = Build(ProfileOf({"A", "B", "C"}));
  CycleState state;
  auto node = NodeBuilder("n1").Info();
  Status s = fwk->RunFilterPlugins(state, *pod_, *node);
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.plugin(), "B");
  EXPECT_EQ(s.Message(), "B says no");
  EXPECT_EQ(trace_.Get(), (std::vector<std::string>{"A.Filter(n1)", "B.Filter(n1)"}));
}

// What RunFilterPluginsOnNodes gives a run of nodes, with the per-node runner's result for each.
struct RunResult {
  std::vector<Status> statuses;
  std::vector<Status> per_node;
};

RunResult FilterRun(Framework& fwk, const CycleState& state, const api::Pod& pod,
                    const std::vector<NodeInfoPtr>& nodes) {
  RunResult result;
  result.statuses.resize(nodes.size());
  fwk.RunFilterPluginsOnNodes(state, pod, testing::NodePointers(nodes), 0, result.statuses);
  for (const auto& node : nodes) {
    result.per_node.push_back(fwk.RunFilterPluginsWithNominatedPods(state, pod, *node));
  }
  return result;
}

TEST_F(RuntimeTest, FilterOverARunShowsEachPluginOnlyTheNodesEarlierOnesPassed) {
  auto a = Add("A");
  auto b = Add("B");
  a->filter_by_node = {{"n2", Status::Unschedulable("A says no")},
                       {"n4", Status(Code::kWait, "broken")}};
  b->filter_by_node = {{"n2", Status::Unresolvable("B says no")},
                       {"n3", Status::Unresolvable("B: not n3")}};
  auto fwk = Build(ProfileOf({"A", "B"}));
  CycleState state;
  const auto nodes = Nodes(5);
  RunResult run = FilterRun(*fwk, state, *pod_, nodes);
  // Each plugin once over the run, in order; B never sees n2 (rejected) or n4 (failed).
  const std::vector<std::string> calls = trace_.Get();
  EXPECT_EQ(
      std::vector<std::string>(calls.begin(), calls.begin() + 8),
      (std::vector<std::string>{"A.Filter(n1)", "A.Filter(n2)", "A.Filter(n3)", "A.Filter(n4)",
                                "A.Filter(n5)", "B.Filter(n1)", "B.Filter(n3)", "B.Filter(n5)"}));
  EXPECT_TRUE(run.statuses[0].IsSuccess());
  EXPECT_EQ(run.statuses[1].code(), Code::kUnschedulable);
  EXPECT_EQ(run.statuses[1].plugin(), "A");
  EXPECT_EQ(run.statuses[1].Message(), "A says no");
  EXPECT_EQ(run.statuses[2].code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(run.statuses[2].plugin(), "B");
  EXPECT_EQ(run.statuses[3].code(), Code::kError);
  EXPECT_EQ(run.statuses[3].plugin(), "A");
  EXPECT_NE(run.statuses[3].Message().find("broken"), std::string::npos);
  EXPECT_TRUE(run.statuses[4].IsSuccess());
  // The same as node by node.
  for (size_t i = 0; i < nodes.size(); i++) {
    SCOPED_TRACE(i);
    EXPECT_EQ(run.statuses[i].code(), run.per_node[i].code());
    EXPECT_EQ(run.statuses[i].plugin(), run.per_node[i].plugin());
    EXPECT_EQ(run.statuses[i].Message(), run.per_node[i].Message());
  }
}

// Nominates one pod of higher priority to n2.
class NominatedToN2 : public PodNominator {
 public:
  std::vector<PodInfoPtr> NominatedPodsForNode(const std::string& node) const override {
    if (node != "n2") return {};
    return {PodBuilder("nominated").Uid("nominated").Priority(1000).Container("1", "1Mi").Info()};
  }
  bool HasNominatedPods() const override { return true; }
};

TEST_F(RuntimeTest, FilterOverARunFiltersANodeWithNominatedPodsWithAndWithoutThem) {
  Add("A");
  NominatedToN2 nominator;
  FrameworkDeps deps;
  deps.snapshot = &handle_.lister();
  deps.recorder = &handle_.recorder();
  deps.parallelizer = &pool_;
  deps.nominator = &nominator;
  deps.informer_factory = &handle_.informers();
  Framework fwk(registry_, ProfileOf({"A"}), deps);
  CycleState state;
  const auto nodes = Nodes(3);
  std::vector<Status> statuses(nodes.size());
  fwk.RunFilterPluginsOnNodes(state, *pod_, testing::NodePointers(nodes), 0, statuses);
  EXPECT_EQ(trace_.Get(), (std::vector<std::string>{"A.Filter(n1)", "A.Filter(n2)", "A.Filter(n2)",
                                                    "A.Filter(n3)"}));
}

TEST_F(RuntimeTest, ScoreCallsEachPluginOncePerRunOfNodes) {
  auto a = Add("A");
  for (int i = 1; i <= 40; i++) a->scores["n" + std::to_string(i)] = i;
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  const auto nodes = Nodes(40);
  std::vector<NodePluginScores> out;
  ASSERT_TRUE(fwk->RunScorePlugins(state, *pod_, testing::NodePointers(nodes), &out).IsSuccess());
  std::vector<std::string> runs;
  for (const auto& call : trace_.Get()) {
    if (call.starts_with("A.ScoreNodes")) runs.push_back(call);
  }
  EXPECT_EQ(runs,
            (std::vector<std::string>{"A.ScoreNodes(16)", "A.ScoreNodes(16)", "A.ScoreNodes(8)"}));
  ASSERT_EQ(out.size(), 40u);
  for (int i = 0; i < 40; i++) {
    EXPECT_EQ(out[i].name, "n" + std::to_string(i + 1));
    EXPECT_EQ(out[i].total, i + 1);
  }
}

TEST_F(RuntimeTest, FilterErrorBecomesErrorNamingPlugin) {
  Add("A")->filter = Status(Code::kWait, "odd");
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  Status s = fwk->RunFilterPlugins(state, *pod_, *NodeBuilder("n1").Info());
  EXPECT_EQ(s.code(), Code::kError);
  EXPECT_NE(s.Message().find('A'), std::string::npos);
}

TEST_F(RuntimeTest, PreFilterSkipSkipsThatPluginsFilter) {
  auto a = Add("A");
  auto b = Add("B");
  a->pre_filter = Status::Skip();
  b->filter = Status::Unschedulable("B rejects");
  a->filter = Status::Unschedulable("A would reject");
  auto fwk = Build(ProfileOf({"A", "B"}));
  CycleState state;
  PreFilterResult result;
  ASSERT_TRUE(fwk->RunPreFilterPlugins(state, *pod_, Nodes(1), &result).IsSuccess());
  Status s = fwk->RunFilterPlugins(state, *pod_, *NodeBuilder("n1").Info());
  EXPECT_EQ(s.plugin(), "B") << "A was skipped for this cycle";
}

// HasActivePreFilterExtensions says whether the extension runners would call any plugin: one with
// extensions counts until its PreFilter skips it; plugins without extensions never do.
TEST_F(RuntimeTest, PreFilterExtensionsAreActiveWhileAPluginWithThemIsNotSkipped) {
  auto a = Add("A");
  Add("B");
  a->has_extensions = true;
  auto fwk = Build(ProfileOf({"A", "B"}));
  auto to_add = std::make_shared<const PodInfo>(PodBuilder("q").Build());
  const NodeInfoPtr node = NodeBuilder("n1").Info();

  CycleState running;
  PreFilterResult result;
  ASSERT_TRUE(fwk->RunPreFilterPlugins(running, *pod_, Nodes(1), &result).IsSuccess());
  EXPECT_TRUE(fwk->HasActivePreFilterExtensions(running));
  trace_.calls.clear();
  ASSERT_TRUE(fwk->RunPreFilterExtensionAddPod(running, *pod_, *to_add, *node).IsSuccess());
  EXPECT_EQ(trace_.Get(), std::vector<std::string>{"A.AddPod"});

  a->pre_filter = Status::Skip();
  CycleState skipped;
  ASSERT_TRUE(fwk->RunPreFilterPlugins(skipped, *pod_, Nodes(1), &result).IsSuccess());
  EXPECT_FALSE(fwk->HasActivePreFilterExtensions(skipped));
  trace_.calls.clear();
  ASSERT_TRUE(fwk->RunPreFilterExtensionAddPod(skipped, *pod_, *to_add, *node).IsSuccess());
  ASSERT_TRUE(fwk->RunPreFilterExtensionRemovePod(skipped, *pod_, *to_add, *node).IsSuccess());
  EXPECT_TRUE(trace_.Get().empty());

  a->has_extensions = false;
  EXPECT_FALSE(fwk->HasActivePreFilterExtensions(running));
}

TEST_F(RuntimeTest, PreFilterResultsIntersectAndEmptyIsUnresolvable) {
  auto a = Add("A");
  auto b = Add("B");
  a->pre_filter_nodes = std::set<std::string>{"n1", "n2"};
  b->pre_filter_nodes = std::set<std::string>{"n2", "n3"};
  auto fwk = Build(ProfileOf({"A", "B"}));
  CycleState state;
  PreFilterResult result;
  ASSERT_TRUE(fwk->RunPreFilterPlugins(state, *pod_, Nodes(3), &result).IsSuccess());
  EXPECT_EQ(*result.node_names, (std::set<std::string>{"n2"}));

  b->pre_filter_nodes = std::set<std::string>{"n3"};
  CycleState state2;
  Status s = fwk->RunPreFilterPlugins(state2, *pod_, Nodes(3), &result);
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.Message(), "node(s) didn't satisfy plugin(s) [A B] simultaneously");
}

TEST_F(RuntimeTest, PreFilterUnresolvableStopsButUnschedulableLetsOthersRun) {
  auto a = Add("A");
  Add("B");
  a->pre_filter = Status::Unschedulable("soft");
  auto fwk = Build(ProfileOf({"A", "B"}));
  CycleState state;
  PreFilterResult result;
  Status s = fwk->RunPreFilterPlugins(state, *pod_, Nodes(1), &result);
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(trace_.Get(), (std::vector<std::string>{"A.PreFilter", "B.PreFilter"}));

  a->pre_filter = Status::Unresolvable("hard");
  CycleState state2;
  Status s2 = fwk->RunPreFilterPlugins(state2, *pod_, Nodes(1), &result);
  EXPECT_EQ(s2.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(trace_.Get().back(), "A.PreFilter");
}

TEST_F(RuntimeTest, ScoresAreNormalizedThenWeightedAndSummed) {
  auto a = Add("A");
  auto b = Add("B");
  a->scores = {{"n1", 100}, {"n2", 40}};
  a->has_normalize = true;  // -> 50, 20
  b->scores = {{"n1", 10}, {"n2", 30}};
  auto fwk = Build(ProfileOf({"A", "B"}, {{"A", 2}, {"B", 3}}));
  CycleState state;
  std::vector<NodePluginScores> out;
  // Kept: the results' node names are views of the scored nodes.
  const auto nodes = Nodes(2);
  ASSERT_TRUE(fwk->RunScorePlugins(state, *pod_, testing::NodePointers(nodes), &out).IsSuccess());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "n1");
  EXPECT_EQ(out[0].total, 50 * 2 + 10 * 3);
  EXPECT_EQ(out[1].total, 20 * 2 + 30 * 3);
  EXPECT_EQ(out[0].scores[0].plugin, "A");
  EXPECT_EQ(out[0].scores[0].score, 100);
}

TEST_F(RuntimeTest, ScoreOutOfRangeAfterNormalizeIsAnError) {
  Add("A")->scores = {{"n1", 101}};
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  std::vector<NodePluginScores> out;
  Status s = fwk->RunScorePlugins(state, *pod_, testing::NodePointers(Nodes(1)), &out);
  EXPECT_EQ(s.code(), Code::kError);
  EXPECT_NE(s.Message().find("invalid score 101"), std::string::npos) << s.Message();

  plugins_["A"]->scores = {{"n1", -1}};
  EXPECT_EQ(fwk->RunScorePlugins(state, *pod_, testing::NodePointers(Nodes(1)), &out).code(),
            Code::kError);
  plugins_["A"]->scores = {{"n1", 200}};
  plugins_["A"]->has_normalize = true;  // 200 / 2 = 100: in range after normalizing.
  EXPECT_TRUE(
      fwk->RunScorePlugins(state, *pod_, testing::NodePointers(Nodes(1)), &out).IsSuccess());
}

TEST_F(RuntimeTest, PreScoreSkipSkipsScore) {
  auto a = Add("A");
  auto b = Add("B");
  a->pre_score = Status::Skip();
  a->scores = {{"n1", 100}};
  b->scores = {{"n1", 7}};
  auto fwk = Build(ProfileOf({"A", "B"}));
  CycleState state;
  ASSERT_TRUE(fwk->RunPreScorePlugins(state, *pod_, testing::NodePointers(Nodes(1))).IsSuccess());
  std::vector<NodePluginScores> out;
  ASSERT_TRUE(
      fwk->RunScorePlugins(state, *pod_, testing::NodePointers(Nodes(1)), &out).IsSuccess());
  EXPECT_EQ(out[0].total, 7);
  for (const auto& call : trace_.Get()) EXPECT_NE(call, "A.Score(n1)");
}

TEST_F(RuntimeTest, UnreserveRunsInReverseOrder) {
  Add("A");
  Add("B");
  Add("C");
  auto fwk = Build(ProfileOf({"A", "B", "C"}));
  CycleState state;
  fwk->RunReservePluginsUnreserve(state, *pod_, "n1");
  EXPECT_EQ(trace_.Get(), (std::vector<std::string>{"C.Unreserve", "B.Unreserve", "A.Unreserve"}));
}

TEST_F(RuntimeTest, ReserveStopsAtFirstFailure) {
  Add("A");
  Add("B")->reserve = Status::Unschedulable("full");
  Add("C");
  auto fwk = Build(ProfileOf({"A", "B", "C"}));
  CycleState state;
  Status s = fwk->RunReservePluginsReserve(state, *pod_, "n1");
  EXPECT_EQ(s.plugin(), "B");
  EXPECT_EQ(trace_.Get(), (std::vector<std::string>{"A.Reserve", "B.Reserve"}));
}

TEST_F(RuntimeTest, FirstBindPluginThatDoesNotSkipDecides) {
  Add("A")->bind = Status::Skip();
  Add("B");
  Add("C");
  auto fwk = Build(ProfileOf({"A", "B", "C"}));
  CycleState state;
  EXPECT_TRUE(fwk->RunBindPlugins(state, *pod_, "n1").IsSuccess());
  EXPECT_EQ(trace_.Get(), (std::vector<std::string>{"A.Bind(n1)", "B.Bind(n1)"}));
}

TEST_F(RuntimeTest, AllBindPluginsSkippingIsSkip) {
  Add("A")->bind = Status::Skip();
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  EXPECT_TRUE(fwk->RunBindPlugins(state, *pod_, "n1").IsSkip());
}

TEST_F(RuntimeTest, PermitWaitThenAllowFromAnotherThread) {
  auto a = Add("A");
  a->permit = Status::Wait();
  a->permit_timeout = 10s;
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  ASSERT_TRUE(fwk->RunPermitPlugins(state, *pod_, "n1").IsWait());
  auto waiting = fwk->GetWaitingPod(pod_->meta.uid);
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(waiting->GetPendingPlugins(), (std::vector<std::string>{"A"}));
  std::thread allower([&] {
    std::this_thread::sleep_for(20ms);
    fwk->GetWaitingPod(pod_->meta.uid)->Allow("A");
  });
  EXPECT_TRUE(fwk->WaitOnPermit(*pod_).IsSuccess());
  allower.join();
  EXPECT_EQ(fwk->GetWaitingPod(pod_->meta.uid), nullptr);
}

TEST_F(RuntimeTest, PermitWaitNeedsEveryWaitingPluginToAllow) {
  for (const char* name : {"A", "B"}) {
    auto p = Add(name);
    p->permit = Status::Wait();
    p->permit_timeout = 10s;
  }
  auto fwk = Build(ProfileOf({"A", "B"}));
  CycleState state;
  ASSERT_TRUE(fwk->RunPermitPlugins(state, *pod_, "n1").IsWait());
  fwk->GetWaitingPod(pod_->meta.uid)->Allow("A");
  EXPECT_EQ(fwk->GetWaitingPod(pod_->meta.uid)->GetPendingPlugins(),
            (std::vector<std::string>{"B"}));
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    fwk->IterateOverWaitingPods([](WaitingPod& wp) { wp.Allow("B"); });
  });
  EXPECT_TRUE(fwk->WaitOnPermit(*pod_).IsSuccess());
  t.join();
}

TEST_F(RuntimeTest, PermitWaitThenReject) {
  auto a = Add("A");
  a->permit = Status::Wait();
  a->permit_timeout = 10s;
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  ASSERT_TRUE(fwk->RunPermitPlugins(state, *pod_, "n1").IsWait());
  std::thread rejecter([&] {
    std::this_thread::sleep_for(20ms);
    fwk->GetWaitingPod(pod_->meta.uid)->Reject("A", "gang incomplete");
  });
  Status s = fwk->WaitOnPermit(*pod_);
  rejecter.join();
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.plugin(), "A");
  EXPECT_EQ(s.Message(), "gang incomplete");
}

TEST_F(RuntimeTest, PermitWaitTimesOutAsRejection) {
  auto a = Add("A");
  a->permit = Status::Wait();
  a->permit_timeout = 50ms;
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  ASSERT_TRUE(fwk->RunPermitPlugins(state, *pod_, "n1").IsWait());
  Status s = fwk->WaitOnPermit(*pod_);
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.plugin(), "A");
  EXPECT_NE(s.Message().find("rejected due to timeout after waiting"), std::string::npos)
      << s.Message();
}

TEST_F(RuntimeTest, PermitDecisionRunsTheContinuationWithoutAnyoneWaiting) {
  auto a = Add("A");
  a->permit = Status::Wait();
  a->permit_timeout = 10s;
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  ASSERT_TRUE(fwk->RunPermitPlugins(state, *pod_, "n1").IsWait());
  std::atomic<int> runs{0};
  fwk->WhenPermitDecided(*pod_, [&] { runs++; });
  EXPECT_EQ(runs.load(), 0) << "ran before the pod was decided";
  fwk->GetWaitingPod(pod_->meta.uid)->Allow("A");
  EXPECT_EQ(runs.load(), 1) << "Allow decides the pod on its caller's thread";
  fwk->GetWaitingPod(pod_->meta.uid)->Reject("A", "too late");
  EXPECT_EQ(runs.load(), 1);
  EXPECT_TRUE(fwk->WaitOnPermit(*pod_).IsSuccess()) << "the first decision stands";
  EXPECT_EQ(fwk->GetWaitingPod(pod_->meta.uid), nullptr);
}

TEST_F(RuntimeTest, PermitTimeoutRunsTheContinuationWithoutAnyoneWaiting) {
  auto a = Add("A");
  a->permit = Status::Wait();
  a->permit_timeout = 50ms;
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  ASSERT_TRUE(fwk->RunPermitPlugins(state, *pod_, "n1").IsWait());
  std::mutex mu;
  std::condition_variable cv;
  bool decided = false;
  fwk->WhenPermitDecided(*pod_, [&] {
    std::lock_guard lock(mu);
    decided = true;
    cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return decided; }))
        << "nothing timed the pod out while no thread waited on it";
  }
  Status s = fwk->WaitOnPermit(*pod_);
  EXPECT_EQ(s.plugin(), "A");
  EXPECT_NE(s.Message().find("rejected due to timeout after waiting 50ms at plugin A"),
            std::string::npos)
      << s.Message();
}

TEST_F(RuntimeTest, PermitContinuationOfAPodNotParkedRunsAtOnce) {
  Add("A");
  auto fwk = Build(ProfileOf({"A"}));
  CycleState state;
  ASSERT_TRUE(fwk->RunPermitPlugins(state, *pod_, "n1").IsSuccess());
  int runs = 0;
  fwk->WhenPermitDecided(*pod_, [&] { runs++; });
  EXPECT_EQ(runs, 1);
}

TEST_F(RuntimeTest, PermitRejectionReturnsAtOnce) {
  Add("A")->permit = Status::Unschedulable("no");
  Add("B");
  auto fwk = Build(ProfileOf({"A", "B"}));
  CycleState state;
  Status s = fwk->RunPermitPlugins(state, *pod_, "n1");
  EXPECT_EQ(s.plugin(), "A");
  EXPECT_EQ(trace_.Get(), (std::vector<std::string>{"A.Permit"}));
}

TEST_F(RuntimeTest, PreEnqueueRejectionNamesPlugin) {
  Add("A");
  Add("B")->pre_enqueue = Status::Unresolvable("gated");
  auto fwk = Build(ProfileOf({"A", "B"}));
  Status s = fwk->RunPreEnqueuePlugins(*pod_);
  EXPECT_EQ(s.plugin(), "B");
  EXPECT_TRUE(s.IsRejected());
}

TEST_F(RuntimeTest, MultiPointExpandsWithSpecificOverridesFirst) {
  Add("A");
  Add("B");
  Add("C");
  config::Profile profile;
  profile.scheduler_name = "test";
  profile.plugins.multi_point.enabled = {{"A", 0}, {"B", 5}, {"C", 0}};
  profile.plugins.filter.enabled = {{"C", 0}};  // explicit: comes first
  profile.plugins.score.disabled = {{"A", 0}};  // A not scored
  profile.plugins.queue_sort.disabled = {{"*", 0}};
  profile.plugins.queue_sort.enabled = {{"B", 0}};
  auto fwk = Build(profile);
  auto lists = fwk->ListPlugins();
  EXPECT_EQ(lists["Filter"], (std::vector<std::string>{"C", "A", "B"}));
  EXPECT_EQ(lists["Score"], (std::vector<std::string>{"B (weight 5)", "C (weight 1)"}));
  EXPECT_EQ(lists["QueueSort"], (std::vector<std::string>{"B"}));
}

// Config merging keeps a plugin the file lists twice (upstream's MergePluginSet); the framework is
// where such a profile is refused, unless every extension point lists or disables the plugin
// itself.
TEST_F(RuntimeTest, APluginListedTwiceIsRefusedUnlessEveryPointListsOrDisablesIt) {
  Add("A");
  Add("B");
  config::Profile twice = ProfileOf({"A"});
  twice.plugins.multi_point.enabled = {{"B", 3}, {"B", 0}};
  try {
    Build(twice);
    FAIL() << "a plugin twice in multiPoint accepted";
  } catch (const FrameworkError& e) {
    EXPECT_NE(std::string(e.what()).find("plugin \"B\" already registered as"), std::string::npos)
        << e.what();
  }

  config::Profile twice_in_filter = ProfileOf({"A"});
  twice_in_filter.plugins.filter.enabled.push_back({"A", 0});
  try {
    Build(twice_in_filter);
    FAIL() << "a plugin twice in filter accepted";
  } catch (const FrameworkError& e) {
    EXPECT_NE(std::string(e.what()).find("plugins.filter: plugin \"A\" is enabled twice"),
              std::string::npos)
        << e.what();
  }

  config::Profile overridden = ProfileOf({"A", "B"}, {{"B", 2}});
  overridden.plugins.multi_point.enabled = {{"B", 3}, {"B", 0}};
  overridden.plugins.queue_sort.disabled = {{"B", 0}};
  EXPECT_EQ(Build(overridden)->ListPlugins()["Score"],
            (std::vector<std::string>{"B (weight 2)", "A (weight 1)"}));
}

TEST_F(RuntimeTest, MissingQueueSortOrBindIsAnError) {
  Add("A");
  config::Profile profile;
  profile.scheduler_name = "test";
  profile.plugins.filter.enabled = {{"A", 0}};
  EXPECT_THROW(Build(profile), FrameworkError);
  profile.plugins.queue_sort.enabled = {{"A", 0}};
  try {
    Build(profile);
    FAIL() << "no bind plugin accepted";
  } catch (const FrameworkError& e) {
    EXPECT_NE(std::string(e.what()).find("bind plugin"), std::string::npos);
  }
}

TEST_F(RuntimeTest, UnknownPluginIsAnError) {
  config::Profile profile = ProfileOf({"A"});
  Add("A");
  profile.plugins.filter.enabled.push_back({"Nope", 0});
  EXPECT_THROW(Build(profile), FrameworkError);
}

TEST_F(RuntimeTest, PluginWithoutEnqueueExtensionsGetsWildcardEvents) {
  Add("A");
  auto fwk = Build(ProfileOf({"A"}));
  auto events = fwk->EnqueueExtensionEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].first, "A");
  EXPECT_EQ(events[0].second.event.resource, EventResource::kWildcard);
}

}  // namespace
}  // namespace berth::framework::runtime
