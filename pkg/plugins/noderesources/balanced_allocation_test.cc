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

// Every expected score below is kube-scheduler v1.37's: the balance of the node with the pod,
// B(with), and without it, B(without), each (1 - std deviation of the capped fractions) * 100
// truncated, give 50 + (50 + B(with) - B(without)) / 2 in integers. A node the pod leaves as
// balanced as it was scores 75; one it balances better scores more, one it unbalances less.

TEST(BalancedAllocation, NothingScheduledDifferentlySizedNodes) {
  // node1: cpu 0.75, memory 0.5 -> B 87 with the pod, 100 without -> 68; node2: 0.5 and 0.5 ->
  // 100 with and without -> 75.
  auto plugin = MakePlugin();
  EXPECT_THAT(Scores(*plugin, *CpuAndMemoryPod(),
                     {NodeBuilder("node1").Capacity("4000m", "10000").Info(),
                      NodeBuilder("node2").Capacity("6000m", "10000").Info()}),
              ElementsAre(68, 75));
}

TEST(BalancedAllocation, ScheduledPodsCount) {
  // node1: cpu 0.3 -> 0.6, memory 0 -> 0.25: B 85 -> 82 -> 73;
  // node2: cpu 0.3 -> 0.6, memory 0.25 -> 0.5: B 97 -> 95 -> 74.
  auto plugin = MakePlugin();
  auto node1 = NodeBuilder("node1").Capacity("10000m", "20000").Info({CpuOnlyPod("node1", "a")});
  auto node2 = NodeBuilder("node2")
                   .Capacity("10000m", "20000")
                   .Info({std::make_shared<framework::PodInfo>(CpuAndMemoryPod("node2"))});
  EXPECT_THAT(Scores(*plugin, *CpuAndMemoryPod(), {node1, node2}), ElementsAre(73, 74));

  // A larger node2, memory 0.1 -> 0.2: B 90 -> 80 -> 70.
  auto large = NodeBuilder("node2")
                   .Capacity("10000m", "50000")
                   .Info({std::make_shared<framework::PodInfo>(CpuAndMemoryPod("node2"))});
  EXPECT_THAT(Scores(*plugin, *CpuAndMemoryPod(), {node1, large}), ElementsAre(73, 70));
}

TEST(BalancedAllocation, BalancingANodeScoresHigherThanUnbalancingOne) {
  // A memory-only pod of 5000: node1 (cpu full, memory empty) becomes balanced, B 50 -> 100 ->
  // 100; the empty node2 is unbalanced by it, B 100 -> 50 -> 50: the bounds of the score.
  auto plugin = MakePlugin();
  auto pod = PodBuilder("pod").Container("", "2000").Container("", "3000").Build();
  EXPECT_THAT(
      Scores(*plugin, *pod,
             {NodeBuilder("node1").Capacity("3000m", "5000").Info({CpuOnlyPod("node1", "a")}),
              NodeBuilder("node2").Capacity("3000m", "5000").Info()}),
      ElementsAre(100, 50));
}

TEST(BalancedAllocation, RequestsFillingANodeScoreByTheChange) {
  // A 3000m cpu-only pod fills both nodes' cpu. node1 (memory empty): B 75 -> 50 -> 62; node2
  // (memory half used): B 100 -> 75 -> 62. Scoring the node with the pod only would rank node2
  // far above node1 (75 against 50).
  auto plugin = MakePlugin();
  auto pod = PodBuilder("pod").Container("1000m", "").Container("2000m", "").Build();
  auto node1 = NodeBuilder("node1").Capacity("6000m", "10000").Info({CpuOnlyPod("node1", "a")});
  auto node2 = NodeBuilder("node2")
                   .Capacity("6000m", "10000")
                   .Info({std::make_shared<framework::PodInfo>(CpuAndMemoryPod("node2"))});
  EXPECT_THAT(Scores(*plugin, *pod, {node1, node2}), ElementsAre(62, 62));
}

TEST(BalancedAllocation, FractionsAreCappedAtOne) {
  // cpu 0.75 -> 6000/4000 capped to 1, memory 0: B 62 -> 50 -> 69 (uncapped, the with-pod
  // deviation of 0.75 would give 56).
  auto plugin = MakePlugin();
  auto pod = PodBuilder("pod").Container("1000m", "0").Container("2000m", "0").Build();
  EXPECT_THAT(
      Scores(*plugin, *pod,
             {NodeBuilder("node1").Capacity("4000m", "10000").Info({CpuOnlyPod("node1", "a")})}),
      ElementsAre(69));
}

TEST(BalancedAllocation, UsesPlainRequestsNotNonZeroDefaults) {
  // Memory is not requested: 0/1000Mi, not the 200Mi default. cpu 0.25: B 100 -> 87 -> 68 (the
  // non-zero default would have given B 97 and 73).
  auto plugin = MakePlugin();
  auto pod = PodBuilder("pod").Container("1000m", "").Build();
  EXPECT_THAT(Scores(*plugin, *pod, {NodeBuilder("node1").Capacity("4000m", "1000Mi").Info()}),
              ElementsAre(68));
}

TEST(BalancedAllocation, ThreeResourcesUseTheStandardDeviation) {
  auto plugin = MakePlugin({{"resources",
                             {{{"name", "cpu"}, {"weight", 1}},
                              {{"name", "memory"}, {"weight", 1}},
                              {{"name", "abc.com/xyz"}, {"weight", 1}}}}});
  auto pod = PodBuilder("pod").Container("3000m", "5000", {{"abc.com/xyz", "2"}}).Build();
  // Empty nodes (B 100 without the pod). node1: 0.5, 0.5, 0.5 -> B 100 -> 75; node2: 0.5, 0.5,
  // 0.2 -> std 0.1414, B 85 -> 67.
  EXPECT_THAT(
      Scores(
          *plugin, *pod,
          {NodeBuilder("node1").Capacity("6000m", "10000", 110, {{"abc.com/xyz", "4"}}).Info(),
           NodeBuilder("node2").Capacity("6000m", "10000", 110, {{"abc.com/xyz", "10"}}).Info()}),
      ElementsAre(75, 67));

  // Not requested, the extended resource is left out: only cpu and memory count, 0.5 and 0.2 ->
  // B 85 -> 67.
  auto without = PodBuilder("pod").Container("3000m", "2000").Build();
  EXPECT_THAT(
      Scores(*plugin, *without,
             {NodeBuilder("node1").Capacity("6000m", "10000", 110, {{"abc.com/xyz", "4"}}).Info()}),
      ElementsAre(67));
}

TEST(BalancedAllocation, RequestedScalarResourceCountsWithAndWithoutThePod) {
  // A pod requesting one gpu only, on nodes with cpu 3000/3500 and memory 5000/40000 used.
  // node1 (3 of 8 gpus used): B 69 -> 70 -> 75; node2 (none used): B 62 -> 65 -> 76.
  auto plugin = MakePlugin({{"resources",
                             {{{"name", "cpu"}, {"weight", 1}},
                              {{"name", "memory"}, {"weight", 1}},
                              {{"name", "nvidia.com/gpu"}, {"weight", 1}}}}});
  auto pod = PodBuilder("pod").Container("0", "0", {{"nvidia.com/gpu", "1"}}).Build();
  auto node = [](const std::string& name, std::vector<framework::PodInfoPtr> pods) {
    return NodeBuilder(name).Capacity("3500m", "40000", 110, {{"nvidia.com/gpu", "8"}}).Info(pods);
  };
  auto node1 = node("node1", {PodBuilder("used-1")
                                  .Node("node1")
                                  .Container("1000m", "2000")
                                  .Container("2000m", "3000", {{"nvidia.com/gpu", "3"}})
                                  .Info()});
  auto node2 = node("node2", {std::make_shared<framework::PodInfo>(CpuAndMemoryPod("node2"))});
  EXPECT_THAT(Scores(*plugin, *pod, {node1, node2}), ElementsAre(75, 76));

  // A pod not requesting the gpu is balanced on cpu and memory only, whether or not the node
  // has gpus: 0.857 and 0.125 -> B 100 -> 63 -> 56.
  EXPECT_THAT(
      Scores(
          *plugin, *CpuAndMemoryPod(),
          {NodeBuilder("node1").Capacity("3500m", "40000", 110, {{"nvidia.com/gpu", "8"}}).Info(),
           NodeBuilder("node2").Capacity("3500m", "40000").Info()}),
      ElementsAre(56, 56));
}

// The DeviceClass "gpu" serving example.com/gpu, and `node_devices` devices of it on each named
// node; `allocated` devices of node1's are in use.
void AddGpuDevices(testing::FakeHandle& handle,
                   const std::vector<std::pair<std::string, int>>& node_devices, int allocated) {
  const std::string driver = "gpu.example.com";
  auto gpu = testing::dra::Class("gpu", driver);
  std::const_pointer_cast<api::DeviceClass>(gpu)->extended_resource_name = "example.com/gpu";
  handle.informers().For<api::DeviceClass>().Upsert(gpu);
  auto& slices = handle.informers().For<api::ResourceSlice>();
  for (const auto& [node, count] : node_devices) {
    slices.Upsert(testing::dra::SliceWithDevices(node + "-gpus", node, testing::dra::Pool(node),
                                                 driver, count));
  }
  for (int i = 0; i < allocated; i++) {
    auto claim = std::make_shared<api::ResourceClaim>();
    claim->meta.name = "used-" + std::to_string(i);
    claim->meta.namespace_ = "ns";
    claim->meta.uid = "uid-used-" + std::to_string(i);
    claim->meta.resource_version = "1";
    claim->status.allocation.emplace().results.push_back(
        testing::dra::DeviceResult("gpu", driver, "node1", "device-" + std::to_string(i)).result);
    handle.informers().For<api::ResourceClaim>().Upsert(claim);
  }
}

std::shared_ptr<BalancedAllocation> MakeGpuPlugin(testing::FakeHandle& handle) {
  auto plugin = std::dynamic_pointer_cast<BalancedAllocation>(NewBalancedAllocation(
      {{"resources", {{{"name", "cpu"}}, {{"name", "memory"}}, {{"name", "example.com/gpu"}}}}},
      handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

// An extended resource a DeviceClass serves is balanced from the node's devices of the class
// (upstream's DRAExtendedResource scoring), on a node that does not offer it as allocatable.
TEST(BalancedAllocation, ExtendedResourceServedFromDevicesCountsTheNodesDevices) {
  testing::FakeHandle handle;
  // node1: 6 devices, device-0 allocated; node2: 2 devices, none allocated.
  AddGpuDevices(handle, {{"node1", 6}, {"node2", 2}}, 1);
  auto plugin = MakeGpuPlugin(handle);
  ASSERT_NE(plugin, nullptr);
  auto pod = PodBuilder("pod").Container("3000m", "5000", {{"example.com/gpu", "1"}}).Build();
  // cpu 0 -> 0.5 and memory 0 -> 0.5 on both. gpu: node1 1/6 -> 2/6, B 92 -> 92 -> 75 (without
  // its allocated device, B 100 -> 92 would give 71); node2 0 -> 1/2, B 100 -> 100 -> 75.
  EXPECT_THAT(Scores(*plugin, *pod,
                     {NodeBuilder("node1").Capacity("6000m", "10000").Info(),
                      NodeBuilder("node2").Capacity("6000m", "10000").Info()}),
              ElementsAre(75, 75));
}

TEST(BalancedAllocation, NodeWithoutDevicesOfTheClassIsBalancedOnTheOtherResources) {
  testing::FakeHandle handle;
  AddGpuDevices(handle, {{"node1", 8}}, 0);
  auto plugin = MakeGpuPlugin(handle);
  ASSERT_NE(plugin, nullptr);
  auto pod = PodBuilder("pod").Container("", "", {{"example.com/gpu", "1"}}).Build();
  // node1: cpu 0.857, memory 0, gpu 0 -> 1/8: B 59 -> 62 -> 76; node2 has no such devices, so
  // cpu 0.857 and memory 0.125 alone: B 63 -> 63 -> 75.
  auto node1 = NodeBuilder("node1").Capacity("3500m", "40000").Info({CpuOnlyPod("node1", "a")});
  auto node2 = NodeBuilder("node2")
                   .Capacity("3500m", "40000")
                   .Info({std::make_shared<framework::PodInfo>(CpuAndMemoryPod("node2"))});
  EXPECT_THAT(Scores(*plugin, *pod, {node1, node2}), ElementsAre(76, 75));
  // The same without PreScore.
  framework::CycleState state;
  int64_t score = -1;
  ASSERT_TRUE(plugin->Score(state, *pod, *node1, &score).IsSuccess());
  EXPECT_EQ(score, 76);
}

TEST(BalancedAllocation, UseAddingUpPastInt64CountsAsFull) {
  // A pod using the whole int64 range of memory, plus the scored pod's 5000 bytes: memory is
  // full (fraction 1) with and without the pod, cpu 0 -> 0.75: B 50 -> 87 -> 93. On an empty
  // node of the same size memory is ~0: B 100 -> 62 -> 56.
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
              ElementsAre(93, 56));
}

TEST(BalancedAllocation, NegativeAllocatableKeepsTheScoreInRange) {
  // cpu and memory allocatable both negative (a kubelet's status is not validated). Without the
  // pod cpu is -0 and memory 10^6 / -1000 = -1000: B 0 once clamped. The pod's cpu brings cpu to
  // -1000 as well: B 100. 50 + (50 + 100 - 0) / 2 = 125 is past the largest score the framework
  // accepts, and would fail the whole cycle; the score is the largest valid one.
  NodeBuilder b("node");
  b.Capacity("0", "0");
  b.node().status.allocatable.milli_cpu = -1000;
  b.node().status.allocatable.memory = -1000;
  auto node = b.Info({PodBuilder("used").Node("node").Container("", "1000000").Info()});
  auto plugin = MakePlugin();
  EXPECT_THAT(Scores(*plugin, *PodBuilder("pod").Container("1000", "").Build(), {node}),
              ElementsAre(100));
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
  EXPECT_EQ(score, 68);
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
