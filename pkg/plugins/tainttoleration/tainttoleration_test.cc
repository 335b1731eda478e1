#include "pkg/plugins/tainttoleration/tainttoleration.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test/testing/batch.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::tainttoleration {
namespace {

using api::TaintEffect;
using api::TolerationOperator;
using framework::Code;
using framework::QueueingHint;

std::shared_ptr<TaintToleration> NewPlugin() {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<TaintToleration>(New(nullptr, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

api::Toleration Equal(const std::string& key, const std::string& value, TaintEffect effect) {
  return {key, TolerationOperator::kEqual, value, effect, std::nullopt};
}

api::Toleration Exists(const std::string& key, TaintEffect effect) {
  return {key, TolerationOperator::kExists, "", effect, std::nullopt};
}

testing::PodBuilder PodWith(const std::vector<api::Toleration>& tolerations) {
  testing::PodBuilder pod("p");
  pod.Uid("uid");
  for (const auto& t : tolerations) pod.Toleration(t);
  return pod;
}

TEST(TaintTolerationTest, Filter) {
  struct Case {
    std::string name;
    std::vector<api::Toleration> tolerations;
    std::vector<api::Taint> taints;
    std::string want_reason;  // Empty: the node fits.
  };
  const std::vector<Case> cases = {
      {"no tolerations, NoSchedule taint",
       {},
       {{"dedicated", "user1", TaintEffect::kNoSchedule}},
       "node(s) had untolerated taint(s)"},
      {"no tolerations, NoExecute taint",
       {},
       {{"dedicated", "gpu", TaintEffect::kNoExecute}},
       "node(s) had untolerated taint(s)"},
      {"toleration matches the taint",
       {Equal("dedicated", "user1", TaintEffect::kNoSchedule)},
       {{"dedicated", "user1", TaintEffect::kNoSchedule}},
       ""},
      {"toleration for another value",
       {Equal("dedicated", "user2", TaintEffect::kNoSchedule)},
       {{"dedicated", "user1", TaintEffect::kNoSchedule}},
       "node(s) had untolerated taint(s)"},
      {"Exists toleration matches any value",
       {Exists("foo", TaintEffect::kNoSchedule)},
       {{"foo", "bar", TaintEffect::kNoSchedule}},
       ""},
      {"multiple tolerations cover multiple taints",
       {Equal("dedicated", "user2", TaintEffect::kNoSchedule),
        Exists("foo", TaintEffect::kNoSchedule)},
       {{"dedicated", "user2", TaintEffect::kNoSchedule}, {"foo", "bar", TaintEffect::kNoSchedule}},
       ""},
      {"an untolerated taint after a tolerated one rejects the node",
       {Equal("dedicated", "user2", TaintEffect::kNoSchedule)},
       {{"dedicated", "user2", TaintEffect::kNoSchedule},
        {"foo", "bar", TaintEffect::kNoExecute},
        {"zone", "a", TaintEffect::kNoSchedule}},
       "node(s) had untolerated taint(s)"},
      {"toleration effect differs from the taint's",
       {Equal("foo", "bar", TaintEffect::kPreferNoSchedule)},
       {{"foo", "bar", TaintEffect::kNoSchedule}},
       "node(s) had untolerated taint(s)"},
      {"toleration with empty effect tolerates every effect",
       {Equal("foo", "bar", TaintEffect::kAll)},
       {{"foo", "bar", TaintEffect::kNoSchedule}},
       ""},
      {"empty key with Exists tolerates everything",
       {Exists("", TaintEffect::kAll)},
       {{"foo", "bar", TaintEffect::kNoSchedule}, {"dedicated", "", TaintEffect::kNoExecute}},
       ""},
      {"PreferNoSchedule taint is ignored by Filter",
       {},
       {{"foo", "bar", TaintEffect::kPreferNoSchedule}},
       ""},
      {"taint without value",
       {},
       {{"foo", "", TaintEffect::kNoSchedule}},
       "node(s) had untolerated taint(s)"},
  };
  auto plugin = NewPlugin();
  framework::CycleState state;
  for (const Case& c : cases) {
    testing::NodeBuilder node("n1");
    for (const auto& t : c.taints) node.Taint(t.key, t.value, t.effect);
    framework::Status status = plugin->Filter(state, *PodWith(c.tolerations).Build(), *node.Info());
    if (c.want_reason.empty()) {
      EXPECT_TRUE(status.IsSuccess()) << c.name << ": " << status.Message();
    } else {
      EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable) << c.name;
      EXPECT_EQ(status.Message(), c.want_reason) << c.name;
    }
  }
}

// Runs PreScore, Score on every node and NormalizeScore, as the framework does.
std::vector<int64_t> ScoreNodes(TaintToleration& plugin, const api::Pod& pod,
                                const std::vector<framework::NodeInfoPtr>& nodes) {
  framework::CycleState state;
  EXPECT_TRUE(plugin.PreScore(state, pod, testing::NodePointers(nodes)).IsSuccess());
  framework::NodeScoreList scores;
  for (const auto& node : nodes) {
    int64_t score = -1;
    EXPECT_TRUE(plugin.Score(state, pod, *node, &score).IsSuccess());
    scores.push_back({node->name(), score});
  }
  EXPECT_TRUE(plugin.GetScoreExtensions()->NormalizeScore(state, pod, scores).IsSuccess());
  std::vector<int64_t> out;
  for (const auto& s : scores) out.push_back(s.score);
  return out;
}

TEST(TaintTolerationTest, ScoreCountsUntoleratedPreferNoScheduleTaints) {
  auto plugin = NewPlugin();
  api::PodPtr pod = PodWith({Equal("foo", "bar", TaintEffect::kPreferNoSchedule),
                             // NoSchedule tolerations do not tolerate PreferNoSchedule taints.
                             Equal("cpu", "slow", TaintEffect::kNoSchedule)})
                        .Build();
  std::vector<framework::NodeInfoPtr> nodes = {
      testing::NodeBuilder("zero")
          .Taint("foo", "bar", TaintEffect::kPreferNoSchedule)
          .Taint("hard", "x", TaintEffect::kNoSchedule)  // Not counted by Score.
          .Info(),
      testing::NodeBuilder("one").Taint("foo", "other", TaintEffect::kPreferNoSchedule).Info(),
      testing::NodeBuilder("two")
          .Taint("foo", "bar", TaintEffect::kPreferNoSchedule)
          .Taint("disk", "hdd", TaintEffect::kPreferNoSchedule)
          .Taint("cpu", "slow", TaintEffect::kPreferNoSchedule)
          .Info(),
  };

  framework::CycleState state;
  ASSERT_TRUE(plugin->PreScore(state, *pod, testing::NodePointers(nodes)).IsSuccess());
  std::vector<int64_t> raw;
  for (const auto& node : nodes) {
    int64_t score = -1;
    ASSERT_TRUE(plugin->Score(state, *pod, *node, &score).IsSuccess());
    raw.push_back(score);
  }
  EXPECT_EQ(raw, (std::vector<int64_t>{0, 1, 2}));

  EXPECT_EQ(ScoreNodes(*plugin, *pod, nodes), (std::vector<int64_t>{100, 50, 0}));
}

TEST(TaintTolerationTest, ScoreEmptyEffectTolerationCounts) {
  auto plugin = NewPlugin();
  api::PodPtr pod = PodWith({Exists("foo", TaintEffect::kAll)}).Build();
  std::vector<framework::NodeInfoPtr> nodes = {
      testing::NodeBuilder("a").Taint("foo", "bar", TaintEffect::kPreferNoSchedule).Info(),
      testing::NodeBuilder("b").Info(),
  };
  // Nothing untolerated anywhere: every node gets the maximum.
  EXPECT_EQ(ScoreNodes(*plugin, *pod, nodes), (std::vector<int64_t>{100, 100}));
}

TEST(TaintTolerationTest, ScoreWithoutPreScoreIsAnError) {
  auto plugin = NewPlugin();
  framework::CycleState state;
  int64_t score = 0;
  framework::Status status = plugin->Score(state, *testing::PodBuilder("p").Build(),
                                           *testing::NodeBuilder("n").Info(), &score);
  EXPECT_EQ(status.code(), Code::kError);
}

TEST(TaintTolerationTest, EventsToRegister) {
  auto events = NewPlugin()->EventsToRegister();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kNode);
  EXPECT_EQ(events[0].event.actions, framework::kAdd | framework::kUpdateNodeTaint);
  EXPECT_EQ(events[1].event.resource, framework::EventResource::kUnscheduledPod);
  EXPECT_EQ(events[1].event.actions, framework::kUpdatePodTolerations);
}

TEST(TaintTolerationTest, NodeChangeHint) {
  api::PodPtr pod = PodWith({Equal("foo", "bar", TaintEffect::kNoSchedule)}).Build();
  api::NodePtr untainted = testing::NodeBuilder("n").Build();
  api::NodePtr tolerated =
      testing::NodeBuilder("n").Taint("foo", "bar", TaintEffect::kNoSchedule).Build();
  api::NodePtr untolerated =
      testing::NodeBuilder("n").Taint("dedicated", "gpu", TaintEffect::kNoSchedule).Build();
  api::NodePtr prefer =
      testing::NodeBuilder("n").Taint("dedicated", "gpu", TaintEffect::kPreferNoSchedule).Build();
  struct Case {
    std::string name;
    api::NodePtr old_node;
    api::NodePtr new_node;
    QueueingHint want;
  };
  const Case cases[] = {
      {"added node without taints", nullptr, untainted, QueueingHint::kQueue},
      {"added node with a tolerated taint", nullptr, tolerated, QueueingHint::kQueue},
      {"added node with an untolerated taint", nullptr, untolerated, QueueingHint::kSkip},
      {"added node with only a PreferNoSchedule taint", nullptr, prefer, QueueingHint::kQueue},
      {"untolerated taint removed", untolerated, untainted, QueueingHint::kQueue},
      {"untolerated taint replaced by a tolerated one", untolerated, tolerated,
       QueueingHint::kQueue},
      {"taint change on a node that was already fine", tolerated, untainted, QueueingHint::kSkip},
      {"untolerated taint added", untainted, untolerated, QueueingHint::kSkip},
  };
  auto hint = NewPlugin()->EventsToRegister()[0].hint;
  for (const Case& c : cases) {
    framework::EventObjects event;
    event.old_node = c.old_node;
    event.new_node = c.new_node;
    EXPECT_EQ(hint(*pod, event), c.want) << c.name;
  }
}

TEST(TaintTolerationTest, PodTolerationChangeHint) {
  api::PodPtr pod = PodWith({}).Build();
  auto hint = NewPlugin()->EventsToRegister()[1].hint;

  framework::EventObjects same;
  same.old_pod = pod;
  same.new_pod = PodWith({Exists("foo", TaintEffect::kNoSchedule)}).Build();
  EXPECT_EQ(hint(*pod, same), QueueingHint::kQueue);

  framework::EventObjects other;
  other.old_pod = testing::PodBuilder("q").Uid("other").Build();
  other.new_pod =
      testing::PodBuilder("q").Uid("other").Toleration(Exists("foo", TaintEffect::kAll)).Build();
  EXPECT_EQ(hint(*pod, other), QueueingHint::kSkip);
}

TEST(TaintTolerationTest, NameAndArgs) {
  testing::FakeHandle handle;
  EXPECT_EQ(New(nullptr, handle)->Name(), "TaintToleration");
  EXPECT_THROW(New(nlohmann::json{{"x", 1}}, handle), std::invalid_argument);
}

TEST(TaintTolerationTest, FilterNodesAndScoreNodesMatchThePerNodeCalls) {
  std::vector<framework::NodeInfoPtr> nodes = {
      testing::NodeBuilder("plain").Info(),
      testing::NodeBuilder("tolerated")
          .Taint("dedicated", "user1", TaintEffect::kNoSchedule)
          .Info(),
      testing::NodeBuilder("untolerated")
          .Taint("dedicated", "gpu", TaintEffect::kNoSchedule)
          .Info(),
      testing::NodeBuilder("no-execute").Taint("evict", "", TaintEffect::kNoExecute).Info(),
      testing::NodeBuilder("prefer")
          .Taint("cost", "high", TaintEffect::kPreferNoSchedule)
          .Taint("zone", "far", TaintEffect::kPreferNoSchedule)
          .Info(),
      testing::NodeBuilder("prefer-tolerated")
          .Taint("cost", "low", TaintEffect::kPreferNoSchedule)
          .Info(),
  };
  auto pod = PodWith({Equal("dedicated", "user1", TaintEffect::kNoSchedule),
                      Equal("cost", "low", TaintEffect::kPreferNoSchedule)})
                 .Build();
  auto plugin = NewPlugin();
  framework::CycleState state;
  testing::ExpectFilterNodesMatchesFilter(*plugin, state, *pod, nodes);
  ASSERT_TRUE(plugin->PreScore(state, *pod, testing::NodePointers(nodes)).IsSuccess());
  testing::ExpectScoreNodesMatchesScore(*plugin, state, *pod, nodes);
  // Without PreScore, ScoreNodes fails as Score does.
  std::vector<framework::NodeScore> scores(nodes.size());
  EXPECT_EQ(plugin->ScoreNodes(framework::CycleState(), *pod, testing::NodePointers(nodes), scores)
                .code(),
            Code::kError);
}

}  // namespace
}  // namespace berth::plugins::tainttoleration
