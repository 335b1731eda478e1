#include "pkg/plugins/helper/node_list_tracker.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace berth::plugins::helper {
namespace {

framework::NodeInfoPtr Node(const std::string& name, const std::string& zone) {
  auto node = std::make_shared<api::Node>();
  node->meta.name = name;
  if (!zone.empty()) node->meta.labels.Set("zone", zone);
  return std::make_shared<framework::NodeInfo>(node);
}

void List(std::vector<framework::NodeInfoPtr>& nodes) {
  for (size_t i = 0; i < nodes.size(); i++) nodes[i]->set_list_index(static_cast<uint32_t>(i));
}

// The zone each position's id in the column stands for ("" for none).
std::vector<std::string> Zones(const KeyColumn& column) {
  std::vector<std::string> out;
  for (int32_t id : column.node_values) out.push_back(id < 0 ? "" : column.value(id));
  return out;
}

TEST(NodeListTracker, ReportsChangedPositionsAndKeepsColumnsInStep) {
  std::vector<framework::NodeInfoPtr> nodes = {Node("a", "z1"), Node("b", ""), Node("c", "z2")};
  List(nodes);
  NodeListTracker tracker;
  tracker.Sync(nodes);
  EXPECT_EQ(tracker.changed_now(), (std::vector<size_t>{0, 1, 2}));
  const auto column = tracker.Column("zone");
  EXPECT_EQ(Zones(*column), (std::vector<std::string>{"z1", "", "z2"}));
  EXPECT_TRUE(tracker.Listed(*nodes[1]));

  // The snapshot replaces a changed node's NodeInfo; the copy still carries the old position.
  auto relabelled = Node("b", "z2");
  relabelled->set_list_index(1);
  const framework::NodeInfoPtr copy = nodes[0]->Clone();
  nodes[1] = relabelled;
  tracker.Sync(nodes);
  EXPECT_EQ(tracker.changed_now(), (std::vector<size_t>{1}));
  EXPECT_EQ(tracker.Column("zone"), column);
  EXPECT_EQ(Zones(*column), (std::vector<std::string>{"z1", "z2", "z2"}));
  EXPECT_TRUE(tracker.Listed(*relabelled));
  EXPECT_FALSE(tracker.Listed(*copy)) << "a copy is not the listed NodeInfo";

  nodes.erase(nodes.begin());
  List(nodes);
  tracker.Sync(nodes);
  EXPECT_EQ(Zones(*tracker.Column("zone")), (std::vector<std::string>{"z2", "z2"}));
  framework::NodeInfo unlisted;
  EXPECT_FALSE(tracker.Listed(unlisted));
}

}  // namespace
}  // namespace berth::plugins::helper
