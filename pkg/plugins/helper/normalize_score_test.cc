#include "pkg/plugins/helper/normalize_score.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace berth::plugins::helper {
namespace {

// NodeScore names are views; these outlive every list built here.
const std::vector<std::string>& NodeNames() {
  static const std::vector<std::string> names = {"node0", "node1", "node2", "node3", "node4",
                                                 "node5", "node6", "node7", "node8", "node9"};
  return names;
}

framework::NodeScoreList Scores(const std::vector<int64_t>& raw) {
  framework::NodeScoreList scores;
  for (size_t i = 0; i < raw.size(); i++) scores.push_back({NodeNames().at(i), raw[i]});
  return scores;
}

std::vector<int64_t> Values(const framework::NodeScoreList& scores) {
  std::vector<int64_t> out;
  for (const auto& s : scores) out.push_back(s.score);
  return out;
}

struct Case {
  std::string name;
  bool reverse;
  std::vector<int64_t> raw;
  std::vector<int64_t> want;
};

// The table of upstream's normalize_score_test.go (max priority 100).
TEST(DefaultNormalizeScoreTest, MatchesUpstreamTable) {
  const std::vector<Case> cases = {
      {"scaled", false, {1, 2, 3, 4}, {25, 50, 75, 100}},
      {"scaled reversed", true, {1, 2, 3, 4}, {75, 50, 25, 0}},
      {"integer division truncates", false, {1000, 10, 20, 30}, {100, 1, 2, 3}},
      {"integer division truncates reversed", true, {1000, 10, 20, 30}, {0, 99, 98, 97}},
      {"one node", false, {1}, {100}},
      {"one node reversed", true, {1}, {0}},
      {"all zero", false, {0, 0, 0}, {0, 0, 0}},
      {"all zero reversed", true, {0, 0, 0}, {100, 100, 100}},
      {"empty", false, {}, {}},
      {"empty reversed", true, {}, {}},
  };
  for (const Case& c : cases) {
    framework::NodeScoreList scores = Scores(c.raw);
    DefaultNormalizeScore(framework::kMaxNodeScore, c.reverse, scores);
    EXPECT_EQ(Values(scores), c.want) << c.name;
  }
}

TEST(DefaultNormalizeScoreTest, UsesGivenMaxPriority) {
  framework::NodeScoreList scores = Scores({2, 4});
  DefaultNormalizeScore(10, false, scores);
  EXPECT_EQ(Values(scores), (std::vector<int64_t>{5, 10}));
}

TEST(DefaultNormalizeScoreTest, KeepsNodeNames) {
  framework::NodeScoreList scores = Scores({3, 0});
  DefaultNormalizeScore(framework::kMaxNodeScore, true, scores);
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_EQ(scores[0].name, "node0");
  EXPECT_EQ(scores[1].name, "node1");
  EXPECT_EQ(Values(scores), (std::vector<int64_t>{0, 100}));
}

TEST(DefaultNormalizeScoreTest, RawScoresNearTheInt64LimitStayInRange) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  framework::NodeScoreList scores = Scores({kMax, kMax / 2, 0});
  DefaultNormalizeScore(framework::kMaxNodeScore, /*reverse=*/false, scores);
  EXPECT_EQ(Values(scores), (std::vector<int64_t>{100, 49, 0}));
  scores = Scores({kMax, kMax / 2, 0});
  DefaultNormalizeScore(framework::kMaxNodeScore, /*reverse=*/true, scores);
  EXPECT_EQ(Values(scores), (std::vector<int64_t>{0, 51, 100}));
}

}  // namespace
}  // namespace berth::plugins::helper
