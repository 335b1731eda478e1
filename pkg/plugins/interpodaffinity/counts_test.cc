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

// Recomputes only the nodes whose NodeInfo changed; keeps a signature from its second request on;
// drops one left unused.
TEST(CountsCache, KeepsRecurringSignaturesAndRecomputesChangedNodesOnly) {
  std::vector<framework::NodeInfoPtr> nodes;
  for (int i = 0; i < 3; i++) {
    auto node = std::make_shared<api::Node>();
    node->meta.name = "n" + std::to_string(i);
    node->meta.labels.Set("zone", "z" + std::to_string(i % 2));
    nodes.push_back(std::make_shared<framework::NodeInfo>(node));
  }
  int computed = 0;
  const CountsEntry::Compute compute = [&](const framework::NodeInfo& info,
                                           const CountsEntry::Emit& emit) {
    computed++;
    emit(0, "zone", *info.node()->meta.labels.Find("zone"), 1);
  };
  CountsCache cache;
  NodeListTracker tracker;
  // A new cycle each time, as the plugin syncs the tracker once per cycle.
  auto Synced = [](NodeListTracker& t,
                   const std::vector<framework::NodeInfoPtr>& list) -> NodeListTracker& {
    t.Sync(list);
    return t;
  };
  auto first = cache.Get("A", Synced(tracker, nodes), nodes, nodes, compute);
  auto second = cache.Get("A", Synced(tracker, nodes), nodes, nodes, compute);
  EXPECT_NE(first, second);
  EXPECT_EQ(computed, 6);
  EXPECT_EQ(second->maps[0].Amount("zone", "z0"), 2);

  // A replaced NodeInfo (as the snapshot replaces one on any change) is recomputed, alone.
  nodes[2] = std::make_shared<framework::NodeInfo>(*nodes[2]);
  auto third = cache.Get("A", Synced(tracker, nodes), nodes, nodes, compute);
  EXPECT_EQ(third, second);
  EXPECT_EQ(computed, 7);
  EXPECT_EQ(third->maps[0].Amount("zone", "z0"), 2);
  // A node gone takes its counts with it.
  nodes.pop_back();
  EXPECT_EQ(
      cache.Get("A", Synced(tracker, nodes), nodes, nodes, compute)->maps[0].Amount("zone", "z0"),
      1);

  for (int i = 0; i < 1100; i++) cache.Get("B", Synced(tracker, nodes), nodes, nodes, compute);
  computed = 0;
  auto again = cache.Get("A", Synced(tracker, nodes), nodes, nodes, compute);
  EXPECT_NE(again, second);
  EXPECT_EQ(computed, 2);
}

// A kept entry of a binding cache has each key bound to the tracker's column of the key, with the
// amount of every node's value at the node's id, through relabelled, added and removed nodes and
// the replacement of a column whose dictionary grew stale.
TEST(CountsCache, BoundKeysGiveEachListedNodeTheAmountOfItsValue) {
  std::vector<framework::NodeInfoPtr> nodes;
  auto make = [](const std::string& name, const std::string& zone) {
    auto node = std::make_shared<api::Node>();
    node->meta.name = name;
    node->meta.labels.Set("zone", zone);
    return std::make_shared<framework::NodeInfo>(node);
  };
  for (int i = 0; i < 4; i++)
    nodes.push_back(make("n" + std::to_string(i), "z" + std::to_string(i % 2)));
  const CountsEntry::Compute compute = [](const framework::NodeInfo& info,
                                          const CountsEntry::Emit& emit) {
    emit(0, "zone", *info.node()->meta.labels.Find("zone"), 1);
  };
  CountsCache cache(4, true);
  NodeListTracker tracker;
  auto check = [&](const std::string& when) {
    tracker.Sync(nodes);
    auto entry = cache.Get("A", tracker, nodes, nodes, compute);
    const TopologyCounts::Key& key = entry->maps[0].keys().at(0);
    ASSERT_EQ(key.column, tracker.Column("zone")) << when;
    for (size_t i = 0; i < nodes.size(); i++) {
      const std::string& zone = *nodes[i]->node()->meta.labels.Find("zone");
      EXPECT_EQ(key.AmountById(key.column->node_values[i]), entry->maps[0].Amount("zone", zone))
          << when << ", node " << i;
      EXPECT_GT(entry->maps[0].Amount("zone", zone), 0) << when << ", node " << i;
    }
  };
  // Counted once without binding; kept from the second request on.
  tracker.Sync(nodes);
  EXPECT_EQ(cache.Get("A", tracker, nodes, nodes, compute)->maps[0].keys().at(0).column, nullptr);
  check("kept");
  nodes[1] = make("n1", "z9");
  check("relabelled");
  nodes.push_back(make("n4", "z0"));
  check("added");
  nodes.erase(nodes.begin());
  check("removed");
  // Many nodes come and go under new names, so the dictionary grows stale and is replaced.
  for (int i = 0; i < 100; i++) {
    nodes.back() = make("n4", "gone" + std::to_string(i));
    check("churn " + std::to_string(i));
  }
  EXPECT_LT(tracker.Column("zone")->size(), 80u);
}

// A value the bound column does not know unbinds the key rather than leave its amounts wrong.
TEST(TopologyCounts, AddingAValueTheColumnLacksUnbindsTheKey) {
  auto column = std::make_shared<helper::KeyColumn>("zone");
  column->Intern("z0");
  TopologyCounts counts;
  counts.Add("zone", "z0", 2, 1);
  ASSERT_TRUE(counts.Bind(0, column));
  EXPECT_EQ(counts.keys()[0].AmountById(0), 2);
  counts.Add("zone", "z0", 1, 1);
  EXPECT_EQ(counts.keys()[0].AmountById(0), 3);
  counts.Add("zone", "z1", 1, 1);
  EXPECT_EQ(counts.keys()[0].column, nullptr);
  EXPECT_FALSE(counts.Bind(0, column));
}

}  // namespace
}  // namespace berth::plugins::interpodaffinity
