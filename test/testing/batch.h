#ifndef BERTH_TEST_TESTING_BATCH_H_
#define BERTH_TEST_TESTING_BATCH_H_

// Checks that a plugin's run-of-nodes methods (FilterNodes, ScoreNodes), which the runtime calls
// in a scheduling cycle, give every node what the per-node methods (Filter, Score) give it.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::testing {

inline std::vector<const framework::NodeInfo*> NodePointers(
    const std::vector<framework::NodeInfoPtr>& nodes) {
  std::vector<const framework::NodeInfo*> out;
  out.reserve(nodes.size());
  for (const auto& node : nodes) out.push_back(node.get());
  return out;
}

inline void ExpectFilterNodesMatchesFilter(framework::FilterPlugin& plugin,
                                           const framework::CycleState& state, const api::Pod& pod,
                                           const std::vector<framework::NodeInfoPtr>& nodes) {
  const std::vector<const framework::NodeInfo*> pointers = NodePointers(nodes);
  std::vector<framework::Status> statuses(nodes.size());
  plugin.FilterNodes(state, pod, pointers, statuses);
  for (size_t i = 0; i < nodes.size(); i++) {
    SCOPED_TRACE(nodes[i]->name());
    const framework::Status want = plugin.Filter(state, pod, *nodes[i]);
    EXPECT_EQ(statuses[i].code(), want.code());
    EXPECT_EQ(statuses[i].reasons(), want.reasons());
  }
}

inline void ExpectScoreNodesMatchesScore(framework::ScorePlugin& plugin,
                                         const framework::CycleState& state, const api::Pod& pod,
                                         const std::vector<framework::NodeInfoPtr>& nodes) {
  const std::vector<const framework::NodeInfo*> pointers = NodePointers(nodes);
  // Filled with a value no plugin returns, so that a node the run skipped shows.
  std::vector<framework::NodeScore> scores(nodes.size(), framework::NodeScore{"", -1});
  const framework::Status status = plugin.ScoreNodes(state, pod, pointers, scores);
  ASSERT_TRUE(status.IsSuccess()) << status.Message();
  for (size_t i = 0; i < nodes.size(); i++) {
    SCOPED_TRACE(nodes[i]->name());
    int64_t want = -1;
    ASSERT_TRUE(plugin.Score(state, pod, *nodes[i], &want).IsSuccess());
    EXPECT_EQ(scores[i].score, want);
  }
}

// ExpectScoreNodesMatchesScore after the plugin's PreScore, then with no PreScore state (for
// plugins whose Score derives that state itself).
inline void ExpectScoreNodesMatchesScoreWithAndWithoutPreScore(
    framework::PreScorePlugin& pre_score, framework::ScorePlugin& plugin, const api::Pod& pod,
    const std::vector<framework::NodeInfoPtr>& nodes) {
  framework::CycleState state;
  const framework::Status status = pre_score.PreScore(state, pod, NodePointers(nodes));
  ASSERT_TRUE(status.IsSuccess()) << status.Message();
  ExpectScoreNodesMatchesScore(plugin, state, pod, nodes);
  ExpectScoreNodesMatchesScore(plugin, framework::CycleState(), pod, nodes);
}

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_BATCH_H_
