#include "pkg/plugins/dynamicresources/pools.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "test/testing/dra_builders.h"

namespace berth::plugins::dynamicresources {
namespace {

using namespace berth::testing::dra;  // NOLINT(google-build-using-namespace): test vocabulary.
namespace dra = berth::testing::dra;  // dra::Pool builds a pool spec; Pool is the gathered pool.

std::vector<const api::ResourceSlice*> Raw(const std::vector<api::ResourceSlicePtr>& slices) {
  std::vector<const api::ResourceSlice*> out;
  out.reserve(slices.size());
  for (const auto& s : slices) {
    out.push_back(s.get());
  }
  return out;
}

TEST(NodeMatchesTest, NameAllNodesSelectorOrNothing) {
  const api::Node node = MakeNode("node-1", "region-1");
  EXPECT_TRUE(NodeMatches(node, "node-1", false, std::nullopt));
  EXPECT_FALSE(NodeMatches(node, "node-2", false, std::nullopt));
  EXPECT_TRUE(NodeMatches(node, std::nullopt, true, std::nullopt));
  EXPECT_TRUE(NodeMatches(node, std::nullopt, false, LabelSelector("region", {"region-1"})));
  EXPECT_FALSE(NodeMatches(node, std::nullopt, false, LabelSelector("region", {"region-2"})));
  EXPECT_TRUE(NodeMatches(node, std::nullopt, false, LocalSelector("node-1")));
  // A node name wins over the other fields; no placement reaches nothing.
  EXPECT_FALSE(NodeMatches(node, "node-2", true, std::nullopt));
  EXPECT_FALSE(NodeMatches(node, std::nullopt, false, std::nullopt));
}

TEST(GatherPoolsTest, SortedByDriverAndPoolWithBindingConditionsLast) {
  const std::vector<api::ResourceSlicePtr> slices = {
      Slice("s1", "node-1", dra::Pool("pool-b"), "driver-a", {Device("d")}),
      Slice("s2", "node-1", dra::Pool("pool-a"), "driver-b", {Device("d")}),
      Slice("s3", "node-1", dra::Pool("pool-a"), "driver-a",
            {Device("d").BindingConditions({"Ready"}, {})}),
      Slice("s4", AllNodes{}, dra::Pool("pool-c"), "driver-a", {Device("d")}),
      Slice("s5", "node-2", dra::Pool("pool-d"), "driver-a", {Device("d")}),
  };
  std::vector<Pool> pools = GatherPools(Raw(slices), MakeNode("node-1", "region-1"), Raw(slices));
  std::vector<std::string> ids;
  ids.reserve(pools.size());
  for (const Pool& p : pools) {
    ids.push_back(p.id.ToString());
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"driver-a/pool-b", "driver-a/pool-c", "driver-b/pool-a",
                                           "driver-a/pool-a"}));
}

TEST(GatherPoolsTest, SlicesOfAPoolAreSearchedInNameOrder) {
  const std::vector<api::ResourceSlicePtr> slices = {
      Slice("b", "node-1", dra::Pool("p", 3), "drv", {Device("d2")}),
      Slice("c", "node-1", dra::Pool("p", 3), "drv", {Device("d3")}),
      Slice("a", "node-1", dra::Pool("p", 3), "drv", {Device("d1")}),
  };
  std::vector<Pool> pools = GatherPools(Raw(slices), MakeNode("node-1", "r"), Raw(slices));
  ASSERT_EQ(pools.size(), 1u);
  ASSERT_EQ(pools[0].slices_targeting_node.size(), 3u);
  EXPECT_EQ(pools[0].slices_targeting_node[0]->meta.name, "a");
  EXPECT_EQ(pools[0].slices_targeting_node[2]->meta.name, "c");
}

TEST(GatherPoolsTest, IncompleteInvalidAndObsoletePools) {
  const api::Node node = MakeNode("node-1", "r");
  // Still being published: one of two slices.
  const std::vector<api::ResourceSlicePtr> incomplete = {
      Slice("a", "node-1", dra::Pool("p", 2), "drv", {Device("d1")})};
  std::vector<Pool> pools = GatherPools(Raw(incomplete), node, Raw(incomplete));
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_TRUE(pools[0].incomplete);
  EXPECT_TRUE(pools[0].slices_targeting_node.empty());

  // A newer generation elsewhere makes the node's generation obsolete: the pool is left out.
  const std::vector<api::ResourceSlicePtr> obsolete = {
      Slice("a", "node-1", dra::Pool("p", 2, 1), "drv", {Device("d1")}),
      Slice("b", "node-2", dra::Pool("p", 2, 2), "drv", {Device("d2")})};
  EXPECT_TRUE(GatherPools({obsolete[0].get()}, node, Raw(obsolete)).empty());

  const std::vector<api::ResourceSlicePtr> duplicate = {
      Slice("a", "node-1", dra::Pool("p", 2), "drv", {Device("d1")}),
      Slice("b", "node-1", dra::Pool("p", 2), "drv", {Device("d1")})};
  pools = GatherPools(Raw(duplicate), node, Raw(duplicate));
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_TRUE(pools[0].invalid);
  EXPECT_EQ(pools[0].invalid_reason, "duplicate device name d1");

  const std::vector<api::ResourceSlicePtr> unknown_counter = {
      Slice("a", "node-1", dra::Pool("p", 2), "drv",
            {Device("d1").Consumes("set", {{"gpu", "1"}})}),
      SliceWithCounters("b", "node-1", dra::Pool("p", 2), "drv",
                        {CounterSet("set", {{"mem", "1"}})})};
  pools = GatherPools(Raw(unknown_counter), node, Raw(unknown_counter));
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].invalid_reason, "counter gpu not found in counter set set");
}

TEST(GatherPoolsTest, PoolSpanningNodesKeepsOtherNodesSlicesForCounters) {
  const std::vector<api::ResourceSlicePtr> slices = {
      SliceWithCounters("counters", "node-1", dra::Pool("p", 3), "drv",
                        {CounterSet("set", {{"c", "2"}})}),
      Slice("mine", "node-2", dra::Pool("p", 3), "drv",
            {Device("d1").Consumes("set", {{"c", "1"}})}),
      Slice("theirs", "node-3", dra::Pool("p", 3), "drv",
            {Device("d2").Consumes("set", {{"c", "1"}})})};
  std::vector<Pool> pools = GatherPools({slices[1].get()}, MakeNode("node-2", "r"), Raw(slices));
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_FALSE(pools[0].incomplete);
  EXPECT_FALSE(pools[0].invalid) << pools[0].invalid_reason;
  ASSERT_EQ(pools[0].slices_targeting_node.size(), 1u);
  ASSERT_EQ(pools[0].slices_not_targeting_node.size(), 1u);
  EXPECT_EQ(pools[0].slices_not_targeting_node[0]->meta.name, "theirs");
  EXPECT_EQ(pools[0].counter_sets.count("set"), 1u);
}

TEST(GatherPoolsTest, PerDeviceNodeSelectionReachesTheNodeThroughAnyDevice) {
  const std::vector<api::ResourceSlicePtr> slices = {Slice(
      "a", PerDevice{}, dra::Pool("p"), "drv",
      {Device("d1").OnNode("node-2"), Device("d2").OnNodes(LabelSelector("region", {"r1"}))})};
  EXPECT_EQ(GatherPools(Raw(slices), MakeNode("node-1", "r1"), Raw(slices)).size(), 1u);
  EXPECT_TRUE(GatherPools(Raw(slices), MakeNode("node-1", "r2"), Raw(slices)).empty());
}

TEST(ApplyDeviceTaintRulesTest, RulesSelectByDriverPoolAndDevice) {
  const std::vector<api::ResourceSlicePtr> slices = {
      Slice("a", "node-1", dra::Pool("p1"), "drv-a", {Device("d1"), Device("d2")}),
      Slice("b", "node-1", dra::Pool("p2"), "drv-a", {Device("d1")}),
      Slice("c", "node-1", dra::Pool("p1"), "drv-b", {Device("d1")})};
  api::DeviceTaintRule by_device;
  by_device.device_selector = api::DeviceTaintSelector{"drv-a", "p1", "d2"};
  by_device.taint = {"k1", "v1", api::DeviceTaint::Effect::kNoSchedule, std::nullopt};
  api::DeviceTaintRule by_driver;
  by_driver.device_selector = api::DeviceTaintSelector{"drv-b", std::nullopt, std::nullopt};
  by_driver.taint = {"k2", "", api::DeviceTaint::Effect::kNoExecute, "2026-01-01T00:00:00Z"};
  api::DeviceTaintRule no_selector;
  no_selector.taint = {"k3", "", api::DeviceTaint::Effect::kNoSchedule, std::nullopt};

  std::vector<api::ResourceSlicePtr> out =
      ApplyDeviceTaintRules(slices, {by_device, by_driver, no_selector});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[0]->spec.devices[0].taints.empty());
  ASSERT_EQ(out[0]->spec.devices[1].taints.size(), 1u);
  EXPECT_EQ(out[0]->spec.devices[1].taints[0].key, "k1");
  // Untouched slices are shared, not copied; the input is never modified.
  EXPECT_EQ(out[1].get(), slices[1].get());
  ASSERT_EQ(out[2]->spec.devices[0].taints.size(), 1u);
  EXPECT_EQ(out[2]->spec.devices[0].taints[0], by_driver.taint);
  EXPECT_TRUE(slices[0]->spec.devices[1].taints.empty());
  EXPECT_TRUE(slices[2]->spec.devices[0].taints.empty());
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
