#include "pkg/plugins/interpodaffinity/counts.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace berth::plugins::interpodaffinity {
namespace {

// Random adds and removals over a small set of values, so that probes collide and erasures move
// entries back, checked against a std::map after every step.
TEST(ValueTable, MatchesAMapThroughAddsAndRemovals) {
  ValueTable table;
  std::map<std::string, ValueTable::Cell> want;
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; step++) {
    const std::string value = "node-" + std::to_string(rng() % 300);
    const int64_t amount = static_cast<int64_t>(rng() % 3) - 1;
    const int64_t contributions = amount == 0 ? (rng() % 2 ? 1 : -1) : amount;
    table.Add(value, amount, contributions);
    ValueTable::Cell& cell = want[value];
    cell.amount += amount;
    cell.contributions += contributions;
    if (cell.amount == 0 && cell.contributions == 0) want.erase(value);

    if (step % 97 != 0) continue;
    ASSERT_EQ(table.size(), want.size()) << step;
    for (int v = 0; v < 300; v++) {
      const std::string name = "node-" + std::to_string(v);
      const ValueTable::Cell* got = table.Find(name);
      auto it = want.find(name);
      ASSERT_EQ(got != nullptr, it != want.end()) << name << " at step " << step;
      if (got != nullptr) {
        EXPECT_EQ(got->amount, it->second.amount);
        EXPECT_EQ(got->contributions, it->second.contributions);
      }
    }
  }
}

TEST(TopologyCounts, CountsPairsPresentAcrossKeys) {
  TopologyCounts counts;
  counts.Add("zone", "z1", 1, 1);
  counts.Add("zone", "z1", 1, 1);
  counts.Add("kubernetes.io/hostname", "n1", 1, 1);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts.Amount("zone", "z1"), 2);
  EXPECT_EQ(counts.Amount("zone", "z2"), 0);
  EXPECT_EQ(counts.Amount("rack", "z1"), 0);
  // Scores of opposite signs leave the pair present with a zero total.
  counts.Add("zone", "z2", 3, 1);
  counts.Add("zone", "z2", -3, 1);
  EXPECT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts.Amount("zone", "z2"), 0);
  // Taking every contribution back drops it.
  counts.Add("zone", "z2", 3, -1);
  counts.Add("zone", "z2", -3, -1);
  counts.Add("kubernetes.io/hostname", "n1", -1, -1);
  EXPECT_EQ(counts.size(), 1u);
}

}  // namespace
}  // namespace berth::plugins::interpodaffinity
