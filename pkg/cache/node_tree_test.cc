#include "pkg/cache/node_tree.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/testing/objects.h"

namespace berth::cache {
namespace {

using testing::NodeBuilder;
using Names = std::vector<std::string>;

api::NodePtr ZonedNode(const std::string& name, const std::string& region,
                       const std::string& zone) {
  NodeBuilder b(name);
  if (!region.empty()) {
    b.Label("topology.kubernetes.io/region", region);
  }
  if (!zone.empty()) {
    b.Label("topology.kubernetes.io/zone", zone);
  }
  return b.Build();
}

TEST(GetZoneKeyTest, RegionAndZone) {
  EXPECT_EQ(GetZoneKey(*ZonedNode("n", "r1", "z1")), std::string("r1:\0:z1", 7));
  EXPECT_EQ(GetZoneKey(*ZonedNode("n", "", "z1")), std::string(":\0:z1", 5));
  EXPECT_EQ(GetZoneKey(*ZonedNode("n", "r1", "")), std::string("r1:\0:", 5));
  EXPECT_EQ(GetZoneKey(*ZonedNode("n", "", "")), "");
}

TEST(GetZoneKeyTest, BetaLabelsTakePrecedence) {
  auto node = NodeBuilder("n")
                  .Label("topology.kubernetes.io/zone", "ga")
                  .Label("failure-domain.beta.kubernetes.io/zone", "beta")
                  .Label("failure-domain.beta.kubernetes.io/region", "r")
                  .Build();
  EXPECT_EQ(GetZoneKey(*node), std::string("r:\0:beta", 8));
}

TEST(NodeTreeTest, InterleavesZonesOfUnevenSizes) {
  NodeTree tree;
  for (const auto& [name, zone] : std::vector<std::pair<std::string, std::string>>{
           {"a1", "za"}, {"a2", "za"}, {"b1", "zb"}, {"a3", "za"}, {"c1", "zc"}, {"c2", "zc"}}) {
    tree.AddNode(*ZonedNode(name, "r", zone));
  }
  EXPECT_EQ(tree.NumNodes(), 6u);
  EXPECT_EQ(tree.NumZones(), 3u);
  EXPECT_EQ(tree.List(), (Names{"a1", "b1", "c1", "a2", "c2", "a3"}));
}

TEST(NodeTreeTest, NodesWithoutZoneShareOneZone) {
  NodeTree tree;
  tree.AddNode(*ZonedNode("x1", "", ""));
  tree.AddNode(*ZonedNode("a1", "r", "za"));
  tree.AddNode(*ZonedNode("x2", "", ""));
  EXPECT_EQ(tree.NumZones(), 2u);
  EXPECT_EQ(tree.List(), (Names{"x1", "a1", "x2"}));
}

TEST(NodeTreeTest, DuplicateAddIsIgnored) {
  NodeTree tree;
  tree.AddNode(*ZonedNode("a1", "r", "za"));
  tree.AddNode(*ZonedNode("a1", "r", "za"));
  EXPECT_EQ(tree.NumNodes(), 1u);
  EXPECT_EQ(tree.List(), (Names{"a1"}));
}

TEST(NodeTreeTest, AddUnderAnotherZoneMovesTheNode) {
  NodeTree tree;
  tree.AddNode(*ZonedNode("a1", "r", "za"));
  tree.AddNode(*ZonedNode("b1", "r", "zb"));
  tree.AddNode(*ZonedNode("a1", "r", "zb"));
  EXPECT_EQ(tree.NumNodes(), 2u);
  EXPECT_EQ(tree.NumZones(), 1u);
  EXPECT_EQ(tree.List(), (Names{"b1", "a1"}));
  EXPECT_FALSE(tree.RemoveNode(*ZonedNode("a1", "r", "za")));
  EXPECT_TRUE(tree.RemoveNode(*ZonedNode("a1", "r", "zb")));
  EXPECT_EQ(tree.List(), (Names{"b1"}));
}

TEST(NodeTreeTest, RemoveKeepsOrderAndDropsEmptyZones) {
  NodeTree tree;
  for (const auto& name : {"a1", "a2", "a3"}) {
    tree.AddNode(*ZonedNode(name, "r", "za"));
  }
  tree.AddNode(*ZonedNode("b1", "r", "zb"));
  tree.AddNode(*ZonedNode("c1", "r", "zc"));

  EXPECT_TRUE(tree.RemoveNode(*ZonedNode("a1", "r", "za")));
  EXPECT_EQ(tree.List(), (Names{"a2", "b1", "c1", "a3"}));
  EXPECT_TRUE(tree.RemoveNode(*ZonedNode("b1", "r", "zb")));
  EXPECT_EQ(tree.NumZones(), 2u);
  EXPECT_EQ(tree.List(), (Names{"a2", "c1", "a3"}));
  EXPECT_EQ(tree.NumNodes(), 3u);
  // The node is looked up in the zone its labels name.
  EXPECT_FALSE(tree.RemoveNode(*ZonedNode("a2", "r", "zc")));
  EXPECT_FALSE(tree.RemoveNode(*ZonedNode("nope", "r", "za")));
  EXPECT_EQ(tree.NumNodes(), 3u);
}

TEST(NodeTreeTest, UpdateMovesNodeBetweenZones) {
  NodeTree tree;
  tree.AddNode(*ZonedNode("a1", "r", "za"));
  tree.AddNode(*ZonedNode("a2", "r", "za"));
  tree.AddNode(*ZonedNode("b1", "r", "zb"));
  auto old_node = ZonedNode("a1", "r", "za");
  tree.UpdateNode(old_node.get(), *ZonedNode("a1", "r", "zb"));
  EXPECT_EQ(tree.NumNodes(), 3u);
  EXPECT_EQ(tree.List(), (Names{"a2", "b1", "a1"}));
  // Same zone: nothing moves.
  tree.UpdateNode(old_node.get(), *ZonedNode("a2", "r", "za"));
  EXPECT_EQ(tree.List(), (Names{"a2", "b1", "a1"}));
  // No old node: added.
  tree.UpdateNode(nullptr, *ZonedNode("c1", "r", "zc"));
  EXPECT_EQ(tree.List(), (Names{"a2", "b1", "c1", "a1"}));
}

TEST(NodeTreeTest, EmptyTreeListsNothing) {
  NodeTree tree;
  EXPECT_TRUE(tree.List().empty());
  EXPECT_EQ(tree.NumNodes(), 0u);
}

}  // namespace
}  // namespace berth::cache
