#include "pkg/plugins/noderesources/balanced_allocation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test/testing/batch.h"
#include "test/testing/dra_builders.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::noderesources {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::NodeBuilder;
using testing::PodBuilder;

std::shared_ptr<BalancedAllocation> MakePlugin(const nlohmann::json& args = nullptr) {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<BalancedAllocation>(NewBalancedAllocation(args, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

std::vector<int64_t> Scores(BalancedAllocation& plugin, const api::Pod& pod,
                            const std::vector<framework::NodeInfoPtr>& nodes) {
  framework::CycleState state;
  framework::Status status = plugin.PreScore(state, pod, testing::NodePointers(nodes));
  EXPECT_TRUE(status.IsSuccess()) << framework::CodeName(status.code());
  std::vector<int64_t> scores;
  for (const auto& node : nodes) {
    int64_t score = -1;
    EXPECT_TRUE(plugin.Score(state, pod, *node, &score).IsSuccess());
    scores.push_back(score);
  }
  return scores;
}

// Upstream's cpuAndMemory pod: 3000m cpu and 5000 bytes of memory over two containers.
api::PodPtr CpuAndMemoryPod(const std::string& node = "") {
  return PodBuilder("cpu-and-memory-" + node)
      .Node(node)
      .Container("1000m", "2000")
      .Container("2000m", "3000")
      .Build();
}

// Upstream's cpuOnly pod: 3000m cpu, memory explicitly 0.
framework::PodInfoPtr CpuOnlyPod(const std::string& node, const std::string& name) {
  return PodBuilder(name).Node(node).Container("1000m", "0").Container("2000m", "0").Info();
}

std::string ArgsError(const nlohmann::json& args) {
  try {
    ParseBalancedAllocationArgs(args);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(BalancedAllocation, NothingScheduledDifferentlySizedNodes) {
  // node1: cpu 0.75, memory 0.5 -> std 0.125 -> 87; node2: 0.5, 0.5 -> 100.
  auto plugin = MakePlugin();
  EXPECT_THAT(Scores(*plugin, *CpuAndMemoryPod(),
                     {NodeBuilder("node1").Capacity("4000m", "10000").Info(),
                      NodeBuilder("node2").Capacity("6000m", "10000").Info()}),
              ElementsAre(87, 100));
}

TEST(BalancedAllocation, ScheduledPodsCount) {
  // node1: cpu 6000/10000 = 0.6, memory 5000/20000 = 0.25 -> std 0.175 -> 82;
  // node2: cpu 0.6, memory 10000/20000 = 0.5 -> std 0.05 -> 95.
  auto plugin = MakePlugin();
  auto node1 = NodeBuilder("node1").Capacity("10000m", "20000").Info({CpuOnlyPod("node1", "a")});
  auto node2 = NodeBuilder("node2")
                   .Capacity("10000m", "20000")
                   .Info({std::make_shared<framework::PodInfo>(CpuAndMemoryPod("node2"))});
  EXPECT_THAT(Scores(*plugin, *CpuAndMemoryPod(), {node1, node2}), ElementsAre(82, 95));

  // Memory 10000/50000 = 0.2 on a larger node2 -> std 0.2 -> 80.
  auto large = NodeBuilder("node2")
                   .Capacity("10000m", "50000")
                   .Info({std::make_shared<framework::PodInfo>(CpuAndMemoryPod("node2"))});
  EXPECT_THAT(Scores(*plugin, *CpuAndMemoryPod(), {node1, large}), ElementsAre(82, 80));
}

TEST(BalancedAllocation, FractionsAreCappedAtOne) {
  // cpu 6000/4000 capped to 1, memory 0 -> std 0.5 -> 50.
  auto plugin = MakePlugin();
  auto pod = PodBuilder("pod").Container("1000m", "0").Container("2000m", "0").Build();
  EXPECT_THAT(
      Scores(*plugin, *pod,
             {NodeBuilder("node1").Capacity("4000m", "10000").Info({CpuOnlyPod("node1", "a")})}),
      ElementsAre(50));
}

TEST(BalancedAllocation, UsesPlainRequestsNotNonZeroDefaults) {
  // Memory is not requested: 0/1000Mi, not the 200Mi default. cpu 0.25 -> std 0.125 -> 87
  // (the non-zero default would have given 97).
  auto plugin = MakePlugin();
  auto pod = PodBuilder("pod").Container("1000m", "").Build();
  EXPECT_THAT(Scores(*plugin, *pod, {NodeBuilder("node1").Capacity("4000m", "1000Mi").Info()}),
              ElementsAre(87));
}

TEST(BalancedAllocation, ThreeResourcesUseTheStandardDeviation) {
  auto plugin = MakePlugin({{"resources",
                             {{{"name", "cpu"}, {"weight", 1}},
                              {{"name", "memory"}, {"weight", 1}},
                              {{"name", "abc.com/xyz"}, {"weight", 1}}}}});
  auto pod = PodBuilder("pod").Container("3000m", "5000", {{"abc.com/xyz", "2"}}).Build();
  // node1: 0.5, 0.5, 0.5 -> 100; node2: 0.5, 0.5, 0.2 -> std 0.1414 -> 85.
  EXPECT_THAT(
      Scores(
          *plugin, *pod,
          {NodeBuilder("node1").Capacity("6000m", "10000", 110, {{"abc.com/xyz", "4"}}).Info(),
           NodeBuilder("node2").Capacity("6000m", "10000", 110, {{"abc.com/xyz", "10"}}).Info()}),
      ElementsAre(100, 85));

  // Not requested, the extended resource is left out: only cpu and memory count.
  auto without = PodBuilder("pod").Container("3000m", "2000").Build();
  EXPECT_THAT(
      Scores(*plugin, *without,
             {NodeBuilder("node1").Capacity("6000m", "10000", 110, {{"abc.com/xyz", "4"}}).Info()}),
      ElementsAre(85));
}

// An extended resource a DeviceClass serves is balanced from the node's devices of the class
// (upstream's DRAExtendedResource scoring), on a node that does not offer it as allocatable.
TEST(BalancedAllocation, ExtendedResourceServedFromDevicesCountsTheNodesDevices) {
  testing::FakeHandle handle;
  const std::string driver = "gpu.example.com";
  auto gpu = testing::dra::Class("gpu", driver);
  std::const_pointer_cast<api::DeviceClass>(gpu)->extended_resource_name = "example.com/gpu";
  handle.informers().For<api::DeviceClass>().Upsert(gpu);
  // node1: 6 devices, device-0 allocated; node2: 2 devices, none allocated.
  auto& slices = handle.informers().For<api::ResourceSlice>();
  slices.Upsert(testing::dra::SliceWithDevices("node1-gpus", std::string("node1"),
                                               testing::dra::Pool("node1"), driver, 6));
  slices.Upsert(testing::dra::SliceWithDevices("node2-gpus", std::string("node2"),
                                               testing::dra::Pool("node2"), driver, 2));
  auto claim = std::make_shared<api::ResourceClaim>();
  claim->meta.name = "used";
  claim->meta.namespace_ = "ns";
  claim->meta.uid = "uid-used";
  claim->meta.resource_version = "1";
  claim->status.allocation.emplace().results.push_back(
      testing::dra::DeviceResult("gpu", driver, "node1", "device-0").result);
  handle.informers().For<api::ResourceClaim>().Upsert(claim);

  auto plugin = std::dynamic_pointer_cast<BalancedAllocation>(NewBalancedAllocation(
      {{"resources", {{{"name", "cpu"}}, {{"name", "memory"}}, {{"name", "example.com/gpu"}}}}},
      handle));
  ASSERT_NE(plugin, nullptr);
  auto pod = PodBuilder("pod").Container("3000m", "5000", {{"example.com/gpu", "1"}}).Build();
  // cpu 0.5 and memory 0.5 on both. gpu: node1 (1 + 1) / 6 -> std 0.0786 -> 92; node2 1 / 2 ->
  // 100.
  EXPECT_THAT(Scores(*plugin, *pod,
                     {NodeBuilder("node1").Capacity("6000m", "10000").Info(),
                      NodeBuilder("node2").Capacity("6000m", "10000").Info()}),
              ElementsAre(92, 100));
}

TEST(BalancedAllocation, UseAddingUpPastInt64CountsAsFull) {
  // A pod using the whole int64 range of memory, plus the scored pod's 5000 bytes: memory is
  // full (fraction 1), cpu 3/4 = 0.75 -> (1 - 0.125) * 100 = 87. On an empty node of the
  // same size memory is ~0 -> (1 - 0.375) * 100 = 62.
  auto node = [](const std::vector<framework::PodInfoPtr>& pods) {
    NodeBuilder b("node");
    b.Capacity("4", "0");
    b.node().status.allocatable.memory = std::numeric_limits<int64_t>::max();
    return b.Info(pods);
  };
  PodBuilder used("used");
  used.Node("node").Container("0", "0");
  used.pod().spec.containers.back().resources.requests.memory = std::numeric_limits<int64_t>::max();
  auto plugin = MakePlugin();
  EXPECT_THAT(Scores(*plugin, *CpuAndMemoryPod(), {node({used.Info()}), node({})}),
              ElementsAre(87, 62));
}

TEST(BalancedAllocation, BestEffortPodIsSkipped) {
  auto plugin = MakePlugin();
  framework::CycleState state;
  auto nodes =
      std::vector<framework::NodeInfoPtr>{NodeBuilder("node1").Capacity("4000m", "10000").Info()};
  EXPECT_TRUE(plugin
                  ->PreScore(state, *PodBuilder("pod").Container("", "").Build(),
                             testing::NodePointers(nodes))
                  .IsSkip());

  // Scoring without PreScore gives such a pod 0.
  int64_t score = -1;
  EXPECT_TRUE(plugin->Score(state, *PodBuilder("pod").Container("", "").Build(), *nodes[0], &score)
                  .IsSuccess());
  EXPECT_EQ(score, 0);
}

TEST(BalancedAllocation, ScoreWithoutPreScoreComputesRequests) {
  auto plugin = MakePlugin();
  framework::CycleState state;
  int64_t score = -1;
  ASSERT_TRUE(plugin
                  ->Score(state, *CpuAndMemoryPod(),
                          *NodeBuilder("node1").Capacity("4000m", "10000").Info(), &score)
                  .IsSuccess());
  EXPECT_EQ(score, 87);
}

TEST(BalancedAllocation, NameIsUpstreams) {
  EXPECT_EQ(MakePlugin()->Name(), "NodeResourcesBalancedAllocation");
}

TEST(BalancedAllocationArgs, DefaultsAndWeights) {
  EXPECT_EQ(ParseBalancedAllocationArgs(nullptr).resources, DefaultResourceSpecs());
  EXPECT_EQ(ParseBalancedAllocationArgs({{"resources", nlohmann::json::array()}}).resources,
            DefaultResourceSpecs());
  // An unset or zero weight defaults to 1.
  EXPECT_THAT(
      ParseBalancedAllocationArgs(
          {{"resources", {{{"name", "cpu"}}, {{"name", "example.com/gpu"}, {"weight", 0}}}}})
          .resources,
      ElementsAre(ResourceSpec{"cpu", 1}, ResourceSpec{"example.com/gpu", 1}));
}

TEST(BalancedAllocationArgs, ErrorsNameTheField) {
  EXPECT_THAT(ArgsError({{"resources", {{{"name", "cpu"}, {"weight", 2}}}}}),
              HasSubstr("resources[0].weight: Invalid value: 2: must be 1"));
  EXPECT_THAT(ArgsError({{"resources", {{{"name", "cpu"}}, {{"name", "cpu"}}}}}),
              HasSubstr("resources[1].name: Duplicate value: \"cpu\""));
  EXPECT_THAT(ArgsError({{"resources", {{{"weight", 1}}}}}), HasSubstr("resources[0].name"));
  EXPECT_THAT(ArgsError({{"resource", nlohmann::json::array()}}),
              HasSubstr("resource: unknown field"));
  testing::FakeHandle handle;
  EXPECT_THROW(NewBalancedAllocation({{"resources", 3}}, handle), std::invalid_argument);
}

TEST(BalancedAllocation, ScoreNodesGivesEveryNodeScoresResult) {
  // 20 nodes (more than one run of the scorer) of different sizes and loads.
  std::vector<framework::NodeInfoPtr> nodes;
  for (int i = 0; i < 20; i++) {
    const std::string name = "node" + std::to_string(i);
    std::vector<framework::PodInfoPtr> pods;
    if (i % 3 == 0) pods.push_back(CpuOnlyPod(name, "used" + std::to_string(i)));
    nodes.push_back(testing::NodeBuilder(name)
                        .Capacity(std::to_string(4 + i % 7), std::to_string(6000 + 1000 * (i % 5)))
                        .Info(pods));
  }
  auto pod = CpuAndMemoryPod();
  for (const nlohmann::json& args :
       {nlohmann::json(nullptr),
        nlohmann::json{
            {"resources",
             {{{"name", "cpu"}}, {{"name", "memory"}}, {{"name", "ephemeral-storage"}}}}}}) {
    SCOPED_TRACE(args.dump());
    auto plugin = MakePlugin(args);
    testing::ExpectScoreNodesMatchesScoreWithAndWithoutPreScore(*plugin, *plugin, *pod, nodes);
  }
  // A pod requesting nothing scores 0 everywhere without PreScore, as Score does.
  auto plugin = MakePlugin();
  auto best_effort = PodBuilder("best-effort").Container("", "").Build();
  testing::ExpectScoreNodesMatchesScore(*plugin, framework::CycleState(), *best_effort, nodes);
}

}  // namespace
}  // namespace berth::plugins::noderesources
