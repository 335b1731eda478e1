#include "pkg/plugins/noderesources/fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/plugins/dynamicresources/claim_tracker.h"
#include "pkg/plugins/noderesources/balanced_allocation.h"
#include "test/testing/batch.h"
#include "test/testing/dra_builders.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::noderesources {
namespace {

using framework::Code;
using framework::QueueingHint;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::NodeBuilder;
using testing::PodBuilder;

std::shared_ptr<Fit> MakeFit(const nlohmann::json& args = nullptr) {
  // Outlives the plugins: they read its DeviceClass lister.
  static testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<Fit>(New(args, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

// The node of upstream's TestEnoughRequests: cpu 10m, memory 20, 32 pods, 5 of example.com/aaa,
// 20 of ephemeral-storage, 5 of hugepages-2Mi.
framework::NodeInfoPtr FilterNode(const std::vector<framework::PodInfoPtr>& pods = {},
                                  int64_t max_pods = 32) {
  return NodeBuilder("node")
      .Capacity("10m", "20", max_pods,
                {{"example.com/aaa", "5"}, {"ephemeral-storage", "20"}, {"hugepages-2Mi", "5"}})
      .Info(pods);
}

framework::PodInfoPtr UsedPod(const std::string& cpu, const std::string& memory,
                              std::vector<std::pair<std::string, std::string>> extra = {}) {
  return PodBuilder("used").Node("node").Container(cpu, memory, std::move(extra)).Info();
}

framework::Status RunFilter(Fit& plugin, const api::Pod& pod, const framework::NodeInfo& node) {
  framework::CycleState state;
  framework::PreFilterResult result;
  framework::Status pre_filter = plugin.PreFilter(state, pod, {}, &result);
  EXPECT_TRUE(pre_filter.IsSuccess()) << pre_filter.Message();
  EXPECT_TRUE(result.AllNodes());
  return plugin.Filter(state, pod, node);
}

std::vector<int64_t> ScoreNodes(framework::PreScorePlugin& pre_score,
                                framework::ScorePlugin& score_plugin, const api::Pod& pod,
                                const std::vector<framework::NodeInfoPtr>& nodes) {
  framework::CycleState state;
  framework::Status status = pre_score.PreScore(state, pod, testing::NodePointers(nodes));
  EXPECT_TRUE(status.IsSuccess()) << status.Message();
  std::vector<int64_t> scores;
  for (const auto& node : nodes) {
    int64_t score = -1;
    EXPECT_TRUE(score_plugin.Score(state, pod, *node, &score).IsSuccess());
    scores.push_back(score);
  }
  return scores;
}

std::vector<int64_t> FitScores(const nlohmann::json& args, const api::Pod& pod,
                               const std::vector<framework::NodeInfoPtr>& nodes) {
  auto plugin = MakeFit(args);
  return ScoreNodes(*plugin, *plugin, pod, nodes);
}

nlohmann::json Strategy(const std::string& type, nlohmann::json resources = nullptr) {
  nlohmann::json strategy = {{"type", type}};
  if (!resources.is_null()) {
    strategy["resources"] = std::move(resources);
  }
  return {{"scoringStrategy", strategy}};
}

// Upstream TestLeastAllocated/MostAllocated pod: two containers, 3000 cpus and 5000 bytes total.
api::PodPtr ThreeCpuPod() {
  return PodBuilder("pod").Container("1000", "2000").Container("2000", "3000").Build();
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A pod on `node` whose single container states these cpu and memory requests, set directly so
// that they can be any int64.
framework::PodInfoPtr PodRequesting(const std::string& name, const std::string& node,
                                    int64_t milli_cpu, int64_t memory) {
  return PodBuilder(name).ContainerRequesting(milli_cpu, memory).Node(node).Info();
}

// 4000 cpus and the largest memory an int64 holds, with `pods` on it.
framework::NodeInfoPtr HugeMemoryNode(const std::string& name,
                                      const std::vector<framework::PodInfoPtr>& pods = {}) {
  NodeBuilder b(name);
  b.Capacity("4000", "0");
  b.node().status.allocatable.memory = kMax;
  return b.Info(pods);
}

// Three nodes of HugeMemoryNode for ThreeCpuPod (3000 cpus, 5000 bytes): one empty, one with
// 2^62 bytes in use, one whose use is the whole int64 range, so that the pod's 5000 bytes take
// the node's sum past it.
std::vector<framework::NodeInfoPtr> HugeMemoryNodes() {
  return {HugeMemoryNode("empty"),
          HugeMemoryNode("half", {PodRequesting("half-used", "half", 0, int64_t{1} << 62)}),
          HugeMemoryNode("full", {PodRequesting("full-used", "full", 0, kMax)})};
}

std::string ArgsError(const nlohmann::json& args) {
  try {
    ParseFitArgs(args);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// ---- Filter ----

// An extended resource a DeviceClass serves from devices is left to DynamicResources on a node
// that does not offer it as allocatable (upstream's DRAExtendedResource); a node that offers it (a
// device plugin) is checked as always, and so is any resource no class serves.
TEST(FitFilter, ExtendedResourcesServedFromDevicesAreLeftToDynamicResources) {
  testing::FakeHandle handle;
  auto device_class = std::make_shared<api::DeviceClass>();
  device_class->meta.name = "gpu";
  device_class->extended_resource_name = "example.com/gpu";
  handle.informers().For<api::DeviceClass>().Upsert(device_class);
  auto plugin = std::dynamic_pointer_cast<Fit>(New(nullptr, handle));
  ASSERT_NE(plugin, nullptr);
  auto node = FilterNode();
  auto pod = PodBuilder("pod").Container("1m", "1", {{"example.com/gpu", "1"}}).Build();
  EXPECT_TRUE(RunFilter(*plugin, *pod, *node).IsSuccess());
  auto implicit =
      PodBuilder("pod").Container("1m", "1", {{"deviceclass.resource.kubernetes.io/gpu", "2"}});
  EXPECT_TRUE(RunFilter(*plugin, *implicit.Build(), *node).IsSuccess());
  auto unserved = PodBuilder("pod").Container("1m", "1", {{"example.com/other", "1"}}).Build();
  EXPECT_THAT(RunFilter(*plugin, *unserved, *node).reasons(),
              ElementsAre("Insufficient example.com/other"));
  auto offered = NodeBuilder("node")
                     .Capacity("10m", "20", 32, {{"example.com/gpu", "1"}})
                     .Info({UsedPod("1m", "1", {{"example.com/gpu", "1"}})});
  EXPECT_THAT(RunFilter(*plugin, *pod, *offered).reasons(),
              ElementsAre("Insufficient example.com/gpu"));
}

TEST(FitFilter, PodRequestingNothingFits) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("10m", "20")});
  EXPECT_TRUE(RunFilter(*plugin, *PodBuilder("pod").Build(), *node).IsSuccess());
}

TEST(FitFilter, InsufficientCpuAndMemoryAreBothReported) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("10m", "20")});
  framework::Status status =
      RunFilter(*plugin, *PodBuilder("pod").Container("1m", "1").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient cpu", "Insufficient memory"));
}

TEST(FitFilter, InsufficientMemoryOnly) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("5m", "19")});
  framework::Status status =
      RunFilter(*plugin, *PodBuilder("pod").Container("1m", "2").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient memory"));
}

TEST(FitFilter, EqualToFreeCapacityFits) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("5m", "19")});
  EXPECT_TRUE(
      RunFilter(*plugin, *PodBuilder("pod").Container("5m", "1").Build(), *node).IsSuccess());
}

TEST(FitFilter, RequestAboveAllocatableIsUnresolvable) {
  auto plugin = MakeFit();
  auto node = FilterNode();
  framework::Status status =
      RunFilter(*plugin, *PodBuilder("pod").Container("11m", "1").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient cpu"));
}

TEST(FitFilter, InitContainerCountsAsMaxNotSum) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("8m", "19")});
  // max(1m, 3m) = 3m does not fit in the 2m left.
  framework::Status status = RunFilter(
      *plugin, *PodBuilder("pod").Container("1m", "1").InitContainer("3m", "1").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient cpu"));

  // max(1m, 1m) = 1m fits in the 1m left by a 9m pod.
  auto fuller = FilterNode({UsedPod("9m", "19")});
  EXPECT_TRUE(RunFilter(*plugin,
                        *PodBuilder("pod").Container("1m", "1").InitContainer("1m", "1").Build(),
                        *fuller)
                  .IsSuccess());
}

TEST(FitFilter, ExtendedResourceFitsWhenFree) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("0", "0", {{"example.com/aaa", "2"}})});
  EXPECT_TRUE(RunFilter(*plugin,
                        *PodBuilder("pod").Container("1m", "1", {{"example.com/aaa", "3"}}).Build(),
                        *node)
                  .IsSuccess());
}

TEST(FitFilter, ExtendedResourceAllocatableEnforced) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("0", "0", {{"example.com/aaa", "5"}})});
  framework::Status status = RunFilter(
      *plugin, *PodBuilder("pod").Container("1m", "1", {{"example.com/aaa", "1"}}).Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient example.com/aaa"));
}

TEST(FitFilter, ExtendedResourceCapacityEnforcedIsUnresolvable) {
  auto plugin = MakeFit();
  auto node = FilterNode();
  framework::Status status = RunFilter(
      *plugin, *PodBuilder("pod").Container("1m", "1", {{"example.com/aaa", "10"}}).Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient example.com/aaa"));

  // A resource the node does not have at all.
  status = RunFilter(
      *plugin, *PodBuilder("pod").Container("1m", "1", {{"example.com/bbb", "1"}}).Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient example.com/bbb"));
}

TEST(FitFilter, ZeroExtendedRequestIsNotChecked) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("0", "0", {{"example.com/aaa", "5"}})});
  EXPECT_TRUE(RunFilter(*plugin,
                        *PodBuilder("pod").Container("1m", "1", {{"example.com/aaa", "0"}}).Build(),
                        *node)
                  .IsSuccess());
}

TEST(FitFilter, IgnoredResourcesAreSkipped) {
  auto plugin = MakeFit({{"ignoredResources", {"example.com/bbb"}}});
  auto node = FilterNode();
  EXPECT_TRUE(RunFilter(*plugin,
                        *PodBuilder("pod").Container("1m", "1", {{"example.com/bbb", "1"}}).Build(),
                        *node)
                  .IsSuccess());
}

TEST(FitFilter, IgnoredResourceGroupsSkipOnlyExtendedResourcesOfTheGroup) {
  auto plugin = MakeFit({{"ignoredResourceGroups", {"example.com"}}});
  auto node = FilterNode();
  framework::Status status = RunFilter(
      *plugin,
      *PodBuilder("pod")
           .Container("1m", "1", {{"example.com/bbb", "1"}, {"kubernetes.io/something", "1"}})
           .Build(),
      *node);
  EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient kubernetes.io/something"));
}

TEST(FitFilter, HugePagesAreEnforcedAndCannotBeIgnored) {
  auto plugin = MakeFit({{"ignoredResources", {"hugepages-2Mi"}}});
  auto node = FilterNode({UsedPod("0", "0", {{"hugepages-2Mi", "2"}})});
  framework::Status status = RunFilter(
      *plugin, *PodBuilder("pod").Container("1m", "1", {{"hugepages-2Mi", "4"}}).Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient hugepages-2Mi"));
}

TEST(FitFilter, EphemeralStorageEnforced) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("0", "0", {{"ephemeral-storage", "15"}})});
  framework::Status status = RunFilter(
      *plugin, *PodBuilder("pod").Container("1m", "1", {{"ephemeral-storage", "6"}}).Build(),
      *node);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient ephemeral-storage"));
}

TEST(FitFilter, TooManyPods) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("0", "0")}, /*max_pods=*/1);
  // A pod requesting nothing is still checked against the pod count.
  framework::Status status = RunFilter(*plugin, *PodBuilder("pod").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_THAT(status.reasons(), ElementsAre("Too many pods"));

  status = RunFilter(*plugin, *PodBuilder("pod").Container("11m", "1").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_THAT(status.reasons(), ElementsAre("Too many pods", "Insufficient cpu"));
}

TEST(FitFilter, ExtendedShortfallsFollowFirstClassOnesInUpstreamOrder) {
  auto plugin = MakeFit();
  auto node = FilterNode({UsedPod("10m", "0", {{"example.com/aaa", "5"}})}, /*max_pods=*/1);
  framework::Status status =
      RunFilter(*plugin,
                *PodBuilder("pod")
                     .Container("1m", "0", {{"example.com/aaa", "1"}, {"hugepages-2Mi", "6"}})
                     .Build(),
                *node);
  EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_THAT(status.reasons(),
              ElementsAre("Too many pods", "Insufficient cpu", "Insufficient example.com/aaa",
                          "Insufficient hugepages-2Mi"));
}

TEST(FitFilter, NodesShortOfTheSameFirstClassResourcesShareOneReasonList) {
  // A pod that fits nowhere is rejected by every node of every cycle: its statuses point at one
  // list made once instead of each allocating its own.
  auto plugin = MakeFit();
  auto pod = PodBuilder("pod").Container("1m", "1").Build();
  auto first = FilterNode({UsedPod("10m", "20")});
  auto second = FilterNode({UsedPod("10m", "20")});
  framework::Status a = RunFilter(*plugin, *pod, *first);
  framework::Status b = RunFilter(*plugin, *pod, *second);
  EXPECT_THAT(a.reasons(), ElementsAre("Insufficient cpu", "Insufficient memory"));
  EXPECT_EQ(&a.reasons(), &b.reasons());

  // Another combination is another list.
  framework::Status cpu_only =
      RunFilter(*plugin, *PodBuilder("pod").Container("1m", "0").Build(), *first);
  EXPECT_THAT(cpu_only.reasons(), ElementsAre("Insufficient cpu"));
  EXPECT_NE(&cpu_only.reasons(), &a.reasons());
}

TEST(FitFilter, ANodeThatAllowsNoPodsIsNotUnresolvable) {
  // Upstream never marks the pod count unresolvable: preemption may still be asked to help.
  auto plugin = MakeFit();
  auto node = FilterNode({}, /*max_pods=*/0);
  framework::Status status = RunFilter(*plugin, *PodBuilder("pod").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_THAT(status.reasons(), ElementsAre("Too many pods"));
  auto insufficient = FitsRequest(api::ResourceList{}, node->allocatable(), node->requested(), 0,
                                  IgnoredResources{});
  ASSERT_EQ(insufficient.size(), 1u);
  EXPECT_FALSE(insufficient[0].unresolvable);
}

TEST(FitFilter, FilterWithoutPreFilterIsAnError) {
  auto plugin = MakeFit();
  framework::CycleState state;
  framework::Status status = plugin->Filter(state, *PodBuilder("pod").Build(), *FilterNode());
  EXPECT_EQ(status.code(), Code::kError);
  EXPECT_THAT(status.Message(), HasSubstr("PreFilterNodeResourcesFit"));
}

TEST(FitFilter, AHugePodStillCountsAfterAnotherHugePodLeaves) {
  // Two pods that each take the whole memory of the node: their sum is past int64. Once one of
  // them is gone the other still takes it all, so nothing more fits.
  auto plugin = MakeFit();
  auto first = PodRequesting("first", "node", 0, kMax);
  auto second = PodRequesting("second", "node", 0, kMax);
  auto node = HugeMemoryNode("node", {first, second});
  ASSERT_TRUE(node->RemovePod(*first->pod));
  framework::Status status =
      RunFilter(*plugin, *PodBuilder("pod").Container("1", "1Gi").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient memory"));
}

TEST(FitFilter, NegativeAllocatableBelowAHugeUseDoesNotWrapAround) {
  // A node reporting a negative allocatable (nothing validates the status a kubelet writes)
  // with a pod using the whole int64 range: allocatable - used is below the int64 range and
  // must not wrap into a huge free amount.
  auto plugin = MakeFit();
  NodeBuilder b("node");
  b.Capacity("4000", "0");
  b.node().status.allocatable.memory = -2;
  auto node = b.Info({PodRequesting("used", "node", 0, kMax)});
  framework::Status status =
      RunFilter(*plugin, *PodBuilder("pod").Container("1", "1").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient memory"));
}

TEST(FitFilter, ARequestPastInt64NeverFitsEvenWhereTheCapacityIsPastItToo) {
  // 1E cpu is 10^21 millicores and 2^62 cpu about 4.6 * 10^21: both read as int64's maximum.
  // The request is not known to fit, so it does not; a large request that int64 holds still fits.
  auto plugin = MakeFit();
  NodeBuilder b("node");
  b.Capacity("1E", "1Gi");
  auto node = b.Info({});
  framework::Status status =
      RunFilter(*plugin, *PodBuilder("pod").Container("4611686018427387904", "1").Build(), *node);
  EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_THAT(status.reasons(), ElementsAre("Insufficient cpu"));
  EXPECT_TRUE(
      RunFilter(*plugin, *PodBuilder("pod").Container("1P", "1").Build(), *node).IsSuccess());
}

TEST(FitFilter, FitsReportsAmounts) {
  auto node = FilterNode({UsedPod("10m", "20")});
  std::vector<InsufficientResource> insufficient =
      Fits(*PodBuilder("pod").Container("1m", "1").Build(), *node);
  EXPECT_THAT(insufficient,
              ElementsAre(InsufficientResource{"cpu", "Insufficient cpu", 1, 10, 10, false},
                          InsufficientResource{"memory", "Insufficient memory", 1, 20, 20, false}));
  EXPECT_THAT(Fits(*PodBuilder("pod").Container("1m", "1").Build(), *FilterNode()), IsEmpty());
}

// ---- Score: LeastAllocated ----

TEST(FitScore, LeastAllocatedDifferentlySizedNodes) {
  // cpu (4000-3000)*100/4000 = 25, memory 50 -> 37; cpu 50, memory 50 -> 50.
  auto scores = FitScores(nullptr, *ThreeCpuPod(),
                          {NodeBuilder("node1").Capacity("4000", "10000").Info(),
                           NodeBuilder("node2").Capacity("6000", "10000").Info()});
  EXPECT_THAT(scores, ElementsAre(37, 50));
}

TEST(FitScore, LeastAllocatedWithScheduledPods) {
  // node1: cpu (10000-6000)*100/10000 = 40, memory 75 -> 57;
  // node2: cpu 40, memory (20000-10000)*100/20000 = 50 -> 45.
  auto used1 = PodBuilder("used1").Node("node1").Container("3000", "0").Info();
  auto used2 = PodBuilder("used2").Node("node2").Container("3000", "5000").Info();
  auto scores = FitScores(nullptr, *ThreeCpuPod(),
                          {NodeBuilder("node1").Capacity("10000", "20000").Info({used1}),
                           NodeBuilder("node2").Capacity("10000", "20000").Info({used2})});
  EXPECT_THAT(scores, ElementsAre(57, 45));
}

TEST(FitScore, LeastAllocatedPodWithoutContainersOnBusyNodes) {
  // node1: cpu 40, memory 100 -> 70; node2: cpu 40, memory 75 -> 57.
  auto a = PodBuilder("a").Node("node1").Container("3000", "0").Info();
  auto b = PodBuilder("b").Node("node1").Container("3000", "0").Info();
  auto c = PodBuilder("c").Node("node2").Container("3000", "0").Info();
  auto d = PodBuilder("d").Node("node2").Container("3000", "5000").Info();
  auto scores = FitScores(nullptr, *PodBuilder("pod").Build(),
                          {NodeBuilder("node1").Capacity("10000", "20000").Info({a, b}),
                           NodeBuilder("node2").Capacity("10000", "20000").Info({c, d})});
  EXPECT_THAT(scores, ElementsAre(70, 57));
}

TEST(FitScore, LeastAllocatedResourceWeights) {
  // node1: (25*1 + 50*2) / 3 = 41; node2: (50 + 100) / 3 = 50.
  auto scores = FitScores(Strategy("LeastAllocated", {{{"name", "memory"}, {"weight", 2}},
                                                      {{"name", "cpu"}, {"weight", 1}}}),
                          *ThreeCpuPod(),
                          {NodeBuilder("node1").Capacity("4000", "10000").Info(),
                           NodeBuilder("node2").Capacity("6000", "10000").Info()});
  EXPECT_THAT(scores, ElementsAre(41, 50));
}

TEST(FitScore, LeastAllocatedOverCommittedResourceScoresZero) {
  // node1: cpu 0 (6000 > 4000), memory 100 -> 50; node2: cpu 0, memory 50 -> 25.
  auto used1 = PodBuilder("used1").Node("node1").Container("3000", "0").Info();
  auto used2 = PodBuilder("used2").Node("node2").Container("3000", "5000").Info();
  auto scores = FitScores(nullptr, *PodBuilder("pod").Container("3000", "0").Build(),
                          {NodeBuilder("node1").Capacity("4000", "10000").Info({used1}),
                           NodeBuilder("node2").Capacity("4000", "10000").Info({used2})});
  EXPECT_THAT(scores, ElementsAre(50, 25));
}

TEST(FitScore, LeastAllocatedOnMemoryNearTwoToThe63IsInRange) {
  // cpu (4000-3000)*100/4000 = 25 everywhere. Memory, computed exactly: (2^63-1-5000)*100 /
  // (2^63-1) = 99 -> 62; 2^62 in use -> 49 -> 37; a sum past int64 counts as full -> 0 -> 12.
  EXPECT_THAT(FitScores(nullptr, *ThreeCpuPod(), HugeMemoryNodes()), ElementsAre(62, 37, 12));
}

TEST(FitScore, LeastAllocatedWhereInt64WouldWrapToANegativeScore) {
  // 1.5e17 of cpu (milli) and memory: (1.5e17 - request) * 100 is past int64 and wrapped to a
  // score of -22, which the framework rejects as invalid, failing the cycle of every pod. The
  // exact score is 99 for both (the pod counts its non-zero defaults, 100m and 200Mi).
  NodeBuilder b("node");
  b.Capacity("0", "0");
  b.node().status.allocatable.milli_cpu = 150'000'000'000'000'000;
  b.node().status.allocatable.memory = 150'000'000'000'000'000;
  EXPECT_THAT(FitScores(nullptr, *PodBuilder("pod").Container("", "").Build(), {b.Info()}),
              ElementsAre(99));
}

TEST(FitScore, ExtendedResourceScoredOnlyWhenRequested) {
  nlohmann::json resources = {{{"name", "cpu"}, {"weight", 1}},
                              {{"name", "memory"}, {"weight", 1}},
                              {{"name", "abc.com/xyz"}, {"weight", 1}}};
  std::vector<framework::NodeInfoPtr> nodes = {
      NodeBuilder("node1").Capacity("6000", "10000", 110, {{"abc.com/xyz", "4"}}).Info(),
      NodeBuilder("node2").Capacity("6000", "10000", 110, {{"abc.com/xyz", "10"}}).Info()};
  auto without = PodBuilder("pod").Container("3000", "5000").Build();
  auto with = PodBuilder("pod").Container("3000", "5000", {{"abc.com/xyz", "2"}}).Build();

  EXPECT_THAT(FitScores(Strategy("LeastAllocated", resources), *without, nodes),
              ElementsAre(50, 50));
  // xyz: (4-2)*100/4 = 50 and (10-2)*100/10 = 80 -> (50+50+50)/3, (50+50+80)/3.
  EXPECT_THAT(FitScores(Strategy("LeastAllocated", resources), *with, nodes), ElementsAre(50, 60));
  // xyz: 2*100/4 = 50 and 2*100/10 = 20.
  EXPECT_THAT(FitScores(Strategy("MostAllocated", resources), *with, nodes), ElementsAre(50, 40));
}

// ---- Score: extended resources served from devices ----

constexpr const char* kGpuDriver = "gpu.example.com";

// Class "gpu" serves example.com/gpu (and its implicit deviceclass.resource.kubernetes.io/gpu)
// with the devices of kGpuDriver. node1 publishes 6 of them, one allocated by a claim; node2
// publishes 2, plus 6 of another driver that the class does not select; node3 offers 4
// example.com/gpu as allocatable (a device plugin); node4 has none. cpu 4000, memory 10000 each.
class FitDeviceScoreTest : public ::testing::Test {
 protected:
  FitDeviceScoreTest() {
    auto gpu = testing::dra::Class("gpu", kGpuDriver);
    std::const_pointer_cast<api::DeviceClass>(gpu)->extended_resource_name = "example.com/gpu";
    handle_.informers().For<api::DeviceClass>().Upsert(gpu);
    auto& slices = handle_.informers().For<api::ResourceSlice>();
    slices.Upsert(testing::dra::SliceWithDevices("node1-gpus", std::string("node1"),
                                                 testing::dra::Pool("node1"), kGpuDriver, 6));
    slices.Upsert(testing::dra::SliceWithDevices("node2-gpus", std::string("node2"),
                                                 testing::dra::Pool("node2"), kGpuDriver, 2));
    slices.Upsert(testing::dra::SliceWithDevices("node2-nics", std::string("node2"),
                                                 testing::dra::Pool("node2-nics"),
                                                 "nic.example.com", 6));
    handle_.informers().For<api::ResourceClaim>().Upsert(
        AllocatedClaim("used", "node1", {"device-0"}));
    nodes_ = {
        NodeBuilder("node1").Capacity("4000", "10000").Info(),
        NodeBuilder("node2").Capacity("4000", "10000").Info(),
        NodeBuilder("node3").Capacity("4000", "10000", 110, {{"example.com/gpu", "4"}}).Info(),
        NodeBuilder("node4").Capacity("4000", "10000").Info()};
  }

  // A claim whose allocation holds these devices of kGpuDriver's pool `pool`.
  static api::ResourceClaimPtr AllocatedClaim(const std::string& name, const std::string& pool,
                                              const std::vector<std::string>& devices) {
    auto claim = std::make_shared<api::ResourceClaim>();
    claim->meta.name = name;
    claim->meta.namespace_ = "ns";
    claim->meta.uid = "uid-" + name;
    claim->meta.resource_version = "1";
    api::AllocationResult& allocation = claim->status.allocation.emplace();
    for (const std::string& device : devices) {
      allocation.results.push_back(
          testing::dra::DeviceResult("gpu", kGpuDriver, pool, device).result);
    }
    return claim;
  }

  std::vector<int64_t> Scores(const nlohmann::json& args, const api::Pod& pod) {
    auto plugin = std::dynamic_pointer_cast<Fit>(New(args, handle_));
    EXPECT_NE(plugin, nullptr);
    return ScoreNodes(*plugin, *plugin, pod, nodes_);
  }

  testing::FakeHandle handle_;
  std::vector<framework::NodeInfoPtr> nodes_;
};

// Upstream's DRAExtendedResource scoring: on a node without the resource as allocatable, the
// node's devices the class selects are its allocatable and the allocated ones among them its use.
TEST_F(FitDeviceScoreTest, LeastAllocatedCountsTheNodesDevicesOfTheClass) {
  nlohmann::json resources = {
      {{"name", "cpu"}}, {{"name", "memory"}}, {{"name", "example.com/gpu"}}};
  auto pod = PodBuilder("pod").Container("2000", "5000", {{"example.com/gpu", "1"}}).Build();
  // cpu 50 and memory 50 everywhere. gpu: node1 (6 - (1 + 1)) * 100 / 6 = 66 -> 55; node2
  // (2 - 1) * 100 / 2 = 50 (the other driver's devices are not the class's) -> 50; node3 from its
  // allocatable, (4 - 1) * 100 / 4 = 75 -> 58; node4 has no gpu, which is left out -> 50.
  EXPECT_THAT(Scores(Strategy("LeastAllocated", resources), *pod), ElementsAre(55, 50, 58, 50));
  // A pod that does not request the resource is scored on cpu and memory alone.
  auto without = PodBuilder("pod").Container("2000", "5000").Build();
  EXPECT_THAT(Scores(Strategy("LeastAllocated", resources), *without), ElementsAre(50, 50, 50, 50));
}

TEST_F(FitDeviceScoreTest, MostAllocatedCountsTheImplicitName) {
  const std::string implicit = "deviceclass.resource.kubernetes.io/gpu";
  nlohmann::json resources = {{{"name", "cpu"}}, {{"name", "memory"}}, {{"name", implicit}}};
  auto pod = PodBuilder("pod").Container("2000", "5000", {{implicit, "1"}}).Build();
  // gpu: node1 (1 + 1) * 100 / 6 = 33 -> 44; node2 1 * 100 / 2 = 50; node3 does not offer the
  // implicit name as allocatable and has no devices; nor has node4.
  EXPECT_THAT(Scores(Strategy("MostAllocated", resources), *pod), ElementsAre(44, 50, 50, 50));
}

// Allocations Reserve decided but has not written yet take devices too.
TEST_F(FitDeviceScoreTest, InFlightAllocationsCount) {
  // Held, as DynamicResources holds it: the tracker is the scheduler's while someone uses it.
  std::shared_ptr<dynamicresources::ClaimTracker> tracker =
      dynamicresources::ClaimTracker::For(handle_.informers());
  tracker->SignalPendingAllocation("uid-pending",
                                   AllocatedClaim("pending", "node2", {"device-0", "device-1"}));
  nlohmann::json resources = {
      {{"name", "cpu"}}, {{"name", "memory"}}, {{"name", "example.com/gpu"}}};
  auto pod = PodBuilder("pod").Container("2000", "5000", {{"example.com/gpu", "1"}}).Build();
  // node2: both devices taken, so 2 + 1 of 2 scores 0 -> (50 + 50 + 0) / 3.
  EXPECT_THAT(Scores(Strategy("LeastAllocated", resources), *pod), ElementsAre(55, 33, 58, 50));
}

// Only a strategy that names a resource a DeviceClass may serve reads devices: the default one
// (cpu and memory) starts no informer for slices or claims.
TEST(FitScore, OnlyStrategiesNamingSuchAResourceWatchDevices) {
  auto watches = [](testing::FakeHandle& handle, const std::string& resource) {
    for (const auto& state : handle.informers().States()) {
      if (state.resource.find(resource) != std::string::npos) return true;
    }
    return false;
  };
  testing::FakeHandle defaults;
  ASSERT_NE(New(nullptr, defaults), nullptr);
  ASSERT_NE(NewBalancedAllocation(nullptr, defaults), nullptr);
  EXPECT_FALSE(watches(defaults, "resourceslices"));
  EXPECT_FALSE(watches(defaults, "resourceclaims"));

  testing::FakeHandle devices;
  ASSERT_NE(New(Strategy("LeastAllocated", {{{"name", "example.com/gpu"}}}), devices), nullptr);
  EXPECT_TRUE(watches(devices, "resourceslices"));
  EXPECT_TRUE(watches(devices, "resourceclaims"));
}

TEST(FitScore, LongResourceListsScoreEveryRequestedResource) {
  // Ten resources, more than the scorer keeps on the stack; the last one decides between nodes.
  nlohmann::json resources = {{{"name", "cpu"}}, {{"name", "memory"}}};
  std::vector<std::pair<std::string, std::string>> node1_extended, node2_extended;
  for (int i = 0; i < 8; i++) {
    const std::string name = "example.com/r" + std::to_string(i);
    resources.push_back({{"name", name}});
    node1_extended.emplace_back(name, "10");
    node2_extended.emplace_back(name, i == 7 ? "4" : "10");
  }
  auto pod = PodBuilder("pod")
                 .Container("2000", "5000", {{"example.com/r0", "5"}, {"example.com/r7", "2"}})
                 .Build();
  std::vector<framework::NodeInfoPtr> nodes = {
      NodeBuilder("node1").Capacity("4000", "10000", 110, node1_extended).Info(),
      NodeBuilder("node2").Capacity("4000", "10000", 110, node2_extended).Info()};
  // cpu 50, memory 50, r0 50, r7 80 or 50; resources the pod does not request are left out.
  EXPECT_THAT(FitScores(Strategy("LeastAllocated", resources), *pod, nodes), ElementsAre(57, 50));
  // cpu 50, memory 50, r0 50, r7 20 or 50.
  EXPECT_THAT(FitScores(Strategy("MostAllocated", resources), *pod, nodes), ElementsAre(42, 50));
}

TEST(FitScore, ScoreWithoutPreScoreComputesRequests) {
  auto plugin = MakeFit();
  framework::CycleState state;
  int64_t score = -1;
  ASSERT_TRUE(plugin
                  ->Score(state, *ThreeCpuPod(),
                          *NodeBuilder("node1").Capacity("4000", "10000").Info(), &score)
                  .IsSuccess());
  EXPECT_EQ(score, 37);
}

// ---- Score: MostAllocated ----

TEST(FitScore, MostAllocatedDifferentlySizedNodes) {
  // node1: cpu 75, memory 50 -> 62; node2: 50, 50 -> 50.
  auto scores = FitScores(Strategy("MostAllocated"), *ThreeCpuPod(),
                          {NodeBuilder("node1").Capacity("4000", "10000").Info(),
                           NodeBuilder("node2").Capacity("6000", "10000").Info()});
  EXPECT_THAT(scores, ElementsAre(62, 50));
}

TEST(FitScore, MostAllocatedRequestsEqualToCapacity) {
  // node1: cpu 100, memory 90 -> 95; node2: cpu 50, memory 100 -> 75.
  auto pod = PodBuilder("pod").Container("2000", "4000").Container("3000", "5000").Build();
  auto scores = FitScores(Strategy("MostAllocated"), *pod,
                          {NodeBuilder("node1").Capacity("5000", "10000").Info(),
                           NodeBuilder("node2").Capacity("10000", "9000").Info()});
  EXPECT_THAT(scores, ElementsAre(95, 75));
}

TEST(FitScore, MostAllocatedUsesNonZeroRequestsCappedAtCapacity) {
  // Containers without requests count 100m / 200Mi. node1: cpu 300m capped to 250m -> 100,
  // memory 600Mi/1000Mi -> 60 => 80. node2: cpu 100m/250m -> 40, memory 20 => 30.
  auto a = PodBuilder("a").Node("node1").Container("", "").Info();
  auto b = PodBuilder("b").Node("node1").Container("", "").Info();
  auto scores = FitScores(Strategy("MostAllocated"), *PodBuilder("pod").Container("", "").Build(),
                          {NodeBuilder("node1").Capacity("250m", "1000Mi").Info({a, b}),
                           NodeBuilder("node2").Capacity("250m", "1000Mi").Info()});
  EXPECT_THAT(scores, ElementsAre(80, 30));
}

TEST(FitScore, MostAllocatedResourceWeights) {
  // node1: (75*1 + 50*2) / 3 = 58; node2: 50.
  auto scores = FitScores(Strategy("MostAllocated", {{{"name", "memory"}, {"weight", 2}},
                                                     {{"name", "cpu"}, {"weight", 1}}}),
                          *ThreeCpuPod(),
                          {NodeBuilder("node1").Capacity("4000", "10000").Info(),
                           NodeBuilder("node2").Capacity("6000", "10000").Info()});
  EXPECT_THAT(scores, ElementsAre(58, 50));
}

TEST(FitScore, MostAllocatedOnMemoryNearTwoToThe63IsInRange) {
  // cpu 75 everywhere; memory 0, 50 and 100 -> 37, 62, 87.
  EXPECT_THAT(FitScores(Strategy("MostAllocated"), *ThreeCpuPod(), HugeMemoryNodes()),
              ElementsAre(37, 62, 87));
}

// ---- Score: RequestedToCapacityRatio ----

nlohmann::json RatioArgs(nlohmann::json shape, nlohmann::json resources = nullptr) {
  nlohmann::json args = Strategy("RequestedToCapacityRatio", std::move(resources));
  args["scoringStrategy"]["requestedToCapacityRatio"] = {{"shape", std::move(shape)}};
  return args;
}

TEST(FitScore, RequestedToCapacityRatioFavoursLeastRequested) {
  nlohmann::json args =
      RatioArgs({{{"utilization", 0}, {"score", 10}}, {{"utilization", 100}, {"score", 0}}});
  auto empty1 = PodBuilder("e1").Node("node1").Info();
  auto empty2 = PodBuilder("e2").Node("node1").Info();
  std::vector<framework::NodeInfoPtr> nodes = {
      NodeBuilder("node1").Capacity("4000", "10000").Info({empty1, empty2}),
      NodeBuilder("node2").Capacity("6000", "10000").Info()};
  EXPECT_THAT(FitScores(args, *PodBuilder("pod").Build(), nodes), ElementsAre(100, 100));
  // node1: cpu 75% -> 25, memory 50% -> 50: round(37.5) = 38. node2: 50, 50 -> 50.
  EXPECT_THAT(FitScores(args, *ThreeCpuPod(), nodes), ElementsAre(38, 50));
}

TEST(FitScore, RequestedToCapacityRatioSingleExtendedResource) {
  nlohmann::json args =
      RatioArgs({{{"utilization", 0}, {"score", 0}}, {{"utilization", 100}, {"score", 1}}},
                {{{"name", "intel.com/foo"}, {"weight", 1}}});
  auto pod = PodBuilder("pod").Container("", "", {{"intel.com/foo", "2"}}).Build();
  auto used = PodBuilder("used").Node("node2").Container("", "", {{"intel.com/foo", "2"}}).Info();
  auto node1 = NodeBuilder("node1").Capacity("4", "10000Mi", 110, {{"intel.com/foo", "8"}});
  auto node2 = NodeBuilder("node2").Capacity("4", "10000Mi", 110, {{"intel.com/foo", "4"}});

  // Not requested: the only resource is left out, so every node scores 0.
  EXPECT_THAT(FitScores(args, *PodBuilder("pod").Build(), {node1.Info(), node2.Info()}),
              ElementsAre(0, 0));
  // 2/8 = 25% -> 2 (scaled shape 0..10); 2/4 = 50% -> 5.
  EXPECT_THAT(FitScores(args, *pod, {node1.Info(), node2.Info()}), ElementsAre(2, 5));
  // node2 already has 2 in use: 4/4 = 100% -> 10.
  EXPECT_THAT(FitScores(args, *pod, {node1.Info(), node2.Info({used})}), ElementsAre(2, 10));
}

TEST(FitScore, RequestedToCapacityRatioMultipleExtendedResources) {
  nlohmann::json args = RatioArgs(
      {{{"utilization", 0}, {"score", 0}}, {{"utilization", 100}, {"score", 1}}},
      {{{"name", "intel.com/foo"}, {"weight", 3}}, {{"name", "intel.com/bar"}, {"weight", 5}}});
  auto pod =
      PodBuilder("pod").Container("", "", {{"intel.com/foo", "2"}, {"intel.com/bar", "2"}}).Build();
  // node1: foo 2/8 -> 2, bar 2/4 -> 5: round((2*3 + 5*5) / 8) = 4;
  // node2: foo 2/4 -> 5, bar 2/8 -> 2: round((5*3 + 2*5) / 8) = 3.
  auto scores = FitScores(
      args, *pod,
      {NodeBuilder("node1")
           .Capacity("4", "10000Mi", 110, {{"intel.com/foo", "8"}, {"intel.com/bar", "4"}})
           .Info(),
       NodeBuilder("node2")
           .Capacity("4", "10000Mi", 110, {{"intel.com/foo", "4"}, {"intel.com/bar", "8"}})
           .Info()});
  EXPECT_THAT(scores, ElementsAre(4, 3));
}

TEST(FitScore, RequestedToCapacityRatioLeavesZeroScoresOutOfTheAverage) {
  nlohmann::json args =
      RatioArgs({{{"utilization", 0}, {"score", 0}}, {{"utilization", 100}, {"score", 10}}});
  // cpu 50% -> 50; memory 0% -> 0 and is left out, so the node scores 50 rather than 25.
  auto scores = FitScores(args, *PodBuilder("pod").Container("2", "0").Build(),
                          {NodeBuilder("node1").Capacity("4", "10Gi").Info()});
  EXPECT_THAT(scores, ElementsAre(50));
}

TEST(FitScore, RequestedToCapacityRatioOnMemoryNearTwoToThe63IsInRange) {
  nlohmann::json args =
      RatioArgs({{{"utilization", 0}, {"score", 0}}, {{"utilization", 100}, {"score", 10}}});
  // cpu 75% -> 75 everywhere. Memory 0% scores 0 and is left out -> 75; 50% -> round(62.5) =
  // 63; past int64 -> 100% -> round(87.5) = 88.
  EXPECT_THAT(FitScores(args, *ThreeCpuPod(), HugeMemoryNodes()), ElementsAre(75, 63, 88));
}

// Seeded, so that a failure reproduces: per-resource scores for extreme and ordinary amounts
// equal the exact value of upstream's formulas, which is always in [0, 100] for amounts that are
// not negative.
TEST(ResourceScores, ExactForAnyAmountsUpToTwoToThe63) {
  using Exact = __int128;
  std::mt19937_64 random(44);
  auto amount = [&]() -> int64_t {
    switch (random() % 4) {
      case 0:
        return kMax - static_cast<int64_t>(random() % 1000);
      case 1:
        return static_cast<int64_t>(random() >> 1);
      case 2:
        return static_cast<int64_t>(random() % 1'000'000);
      default:
        return int64_t{1'000'000'000'000'000'000} + static_cast<int64_t>(random() % 1000);
    }
  };
  for (int i = 0; i < 20000; i++) {
    const int64_t capacity = std::max<int64_t>(amount(), 1);
    const int64_t requested = amount();
    SCOPED_TRACE(std::to_string(requested) + " of " + std::to_string(capacity));
    const int64_t least =
        requested > capacity ? 0
                             : static_cast<int64_t>((Exact{capacity} - requested) * 100 / capacity);
    const int64_t most =
        static_cast<int64_t>(Exact{std::min(requested, capacity)} * 100 / capacity);
    ASSERT_EQ(LeastRequestedScore(requested, capacity), least);
    ASSERT_EQ(MostRequestedScore(requested, capacity), most);
    ASSERT_GE(least, 0);
    ASSERT_LE(least, 100);
    ASSERT_GE(most, 0);
    ASSERT_LE(most, 100);
  }
}

TEST(BrokenLinearFunction, MatchesUpstreamPoints) {
  std::vector<UtilizationShapePoint> rising = {{10, 1}, {90, 9}};
  std::vector<std::pair<int64_t, int64_t>> rising_cases = {{-10, 1}, {0, 1},  {9, 1},   {10, 1},
                                                           {15, 1},  {19, 1}, {20, 2},  {89, 8},
                                                           {90, 9},  {99, 9}, {100, 9}, {110, 9}};
  for (auto [p, want] : rising_cases) {
    EXPECT_EQ(BrokenLinearFunction(rising, p), want) << p;
  }

  std::vector<UtilizationShapePoint> peak = {{0, 2}, {40, 10}, {100, 0}};
  std::vector<std::pair<int64_t, int64_t>> peak_cases = {{-10, 2}, {0, 2},  {20, 6},  {30, 8},
                                                         {40, 10}, {70, 5}, {100, 0}, {110, 0}};
  for (auto [p, want] : peak_cases) {
    EXPECT_EQ(BrokenLinearFunction(peak, p), want) << p;
  }
}

// ---- Args ----

TEST(FitArgs, NullMeansLeastAllocatedOnCpuAndMemory) {
  FitArgs args = ParseFitArgs(nullptr);
  EXPECT_EQ(args.scoring_strategy.type, ScoringStrategyType::kLeastAllocated);
  EXPECT_EQ(args.scoring_strategy.resources, DefaultResourceSpecs());
  EXPECT_THAT(args.ignored_resources, IsEmpty());
}

TEST(FitArgs, ParsesEveryField) {
  FitArgs args = ParseFitArgs(
      {{"apiVersion", "kubescheduler.config.k8s.io/v1"},
       {"kind", "NodeResourcesFitArgs"},
       {"ignoredResources", {"example.com/foo"}},
       {"ignoredResourceGroups", {"example.org"}},
       {"scoringStrategy",
        {{"type", "RequestedToCapacityRatio"},
         {"resources", {{{"name", "cpu"}}, {{"name", "memory"}, {"weight", 3}}}},
         {"requestedToCapacityRatio",
          {{"shape",
            {{{"utilization", 0}, {"score", 0}}, {{"utilization", 100}, {"score", 10}}}}}}}}});
  EXPECT_THAT(args.ignored_resources, ElementsAre("example.com/foo"));
  EXPECT_THAT(args.ignored_resource_groups, ElementsAre("example.org"));
  EXPECT_EQ(args.scoring_strategy.type, ScoringStrategyType::kRequestedToCapacityRatio);
  // An unset weight defaults to 1.
  EXPECT_THAT(args.scoring_strategy.resources,
              ElementsAre(ResourceSpec{"cpu", 1}, ResourceSpec{"memory", 3}));
  EXPECT_THAT(args.scoring_strategy.shape,
              ElementsAre(UtilizationShapePoint{0, 0}, UtilizationShapePoint{100, 10}));
}

TEST(FitArgs, UnsupportedTypeNamesFieldAndAllowedValues) {
  std::string error = ArgsError({{"scoringStrategy", {{"type", "Fancy"}}}});
  EXPECT_THAT(error, HasSubstr("scoringStrategy.type"));
  EXPECT_THAT(error, HasSubstr("\"Fancy\""));
  EXPECT_THAT(error,
              HasSubstr("\"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""));
}

TEST(FitArgs, WeightsOutOfRangeNameTheEntry) {
  EXPECT_THAT(ArgsError(Strategy("LeastAllocated", {{{"name", "memory"}, {"weight", -1}},
                                                    {{"name", "cpu"}, {"weight", 1}}})),
              HasSubstr("scoringStrategy.resources[0].weight"));
  EXPECT_THAT(ArgsError(Strategy("MostAllocated", {{{"name", "memory"}, {"weight", 1}},
                                                   {{"name", "cpu"}, {"weight", 101}}})),
              HasSubstr("scoringStrategy.resources[1].weight"));
}

// A null point is the zero point, as kube-scheduler decodes it.
TEST(FitArgs, ANullShapePointIsTheZeroPoint) {
  const FitArgs args = ParseFitArgs(RatioArgs(nlohmann::json::array({nullptr})));
  ASSERT_EQ(args.scoring_strategy.shape.size(), 1u);
  EXPECT_EQ(args.scoring_strategy.shape[0].utilization, 0);
  EXPECT_EQ(args.scoring_strategy.shape[0].score, 0);
}

TEST(FitArgs, ShapeErrorsNameTheField) {
  EXPECT_EQ(ArgsError(Strategy("RequestedToCapacityRatio")),
            "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type "
            "is RequestedToCapacityRatio");
  EXPECT_THAT(ArgsError(RatioArgs({})),
              HasSubstr("scoringStrategy.requestedToCapacityRatio.shape: Required value"));
  EXPECT_EQ(
      ArgsError(
          {{"scoringStrategy",
            {{"type", "MostAllocated"},
             {"requestedToCapacityRatio", {{"shape", {{{"utilization", 0}, {"score", 1}}}}}}}}}),
      "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not "
      "RequestedToCapacityRatio");
  EXPECT_THAT(ArgsError(RatioArgs(
                  {{{"utilization", 50}, {"score", 1}}, {{"utilization", 10}, {"score", 2}}})),
              HasSubstr("shape[1].utilization"));
  EXPECT_THAT(ArgsError(RatioArgs({{{"utilization", 0}, {"score", 11}}})),
              HasSubstr("shape[0].score: Invalid value: 11: not in valid range [0, 10]"));
  EXPECT_THAT(ArgsError(RatioArgs({{{"utilization", 101}, {"score", 1}}})),
              HasSubstr("shape[0].utilization: Invalid value: 101"));
}

TEST(FitArgs, IgnoredResourceErrorsNameTheEntry) {
  EXPECT_THAT(ArgsError({{"ignoredResourceGroups", {"example.com/foo"}}}),
              HasSubstr("ignoredResourceGroups[0]: Invalid value: \"example.com/foo\": resource "
                        "group name can't contain '/'"));
  EXPECT_THAT(ArgsError({{"ignoredResources", {"ok.io/x", "not a name"}}}),
              HasSubstr("ignoredResources[1]"));
}

TEST(FitArgs, UnknownFieldsAndWrongTypesAreRejected) {
  EXPECT_THAT(ArgsError({{"scoringStrategies", nlohmann::json::object()}}),
              HasSubstr("scoringStrategies: unknown field"));
  EXPECT_THAT(ArgsError({{"scoringStrategy", {{"type", "LeastAllocated"}, {"shape", 1}}}}),
              HasSubstr("scoringStrategy.shape: unknown field"));
  EXPECT_THAT(ArgsError(nlohmann::json::array()), HasSubstr("must be an object"));
  // Several problems are reported together.
  std::string error = ArgsError({{"ignoredResources", "x"}, {"scoringStrategy", {{"type", 1}}}});
  EXPECT_THAT(error, HasSubstr("ignoredResources: Invalid value"));
  EXPECT_THAT(error, HasSubstr("scoringStrategy.type: Unsupported value: 1"));
}

TEST(FitArgs, FactoryThrowsOnBadArgs) {
  testing::FakeHandle handle;
  EXPECT_THROW(New({{"scoringStrategy", {{"type", "Nope"}}}}, handle), std::invalid_argument);
}

// ---- Queueing hints ----

const framework::ClusterEventWithHint& Registration(
    const std::vector<framework::ClusterEventWithHint>& events, framework::EventResource resource) {
  for (const auto& event : events) {
    if (event.event.resource == resource) {
      return event;
    }
  }
  ADD_FAILURE() << "no registration for the resource";
  return events.front();
}

TEST(FitQueueingHints, RegistersPodDeleteAndNodeAddOrAllocatable) {
  auto events = MakeFit()->EventsToRegister();
  ASSERT_EQ(events.size(), 2u);
  const auto& pod = Registration(events, framework::EventResource::kPod);
  EXPECT_EQ(pod.event.actions, framework::kDelete | framework::kUpdatePodScaleDown);
  const auto& node = Registration(events, framework::EventResource::kNode);
  EXPECT_EQ(node.event.actions, framework::kAdd | framework::kUpdateNodeAllocatable);
  EXPECT_TRUE(pod.hint);
  EXPECT_TRUE(node.hint);
}

TEST(FitQueueingHints, PodDeletion) {
  auto events = MakeFit()->EventsToRegister();
  const auto& hint = Registration(events, framework::EventResource::kPod).hint;
  auto pending = PodBuilder("pending").Container("1", "1Gi").Build();

  framework::EventObjects deleted_bound;
  deleted_bound.old_pod = PodBuilder("bound").Node("node1").Container("1", "1Gi").Build();
  EXPECT_EQ(hint(*pending, deleted_bound), QueueingHint::kQueue);

  framework::EventObjects deleted_unbound;
  deleted_unbound.old_pod = PodBuilder("unbound").Container("1", "1Gi").Build();
  EXPECT_EQ(hint(*pending, deleted_unbound), QueueingHint::kSkip);

  PodBuilder nominated("nominated");
  nominated.pod().status.nominated_node_name = "node1";
  framework::EventObjects deleted_nominated;
  deleted_nominated.old_pod = nominated.Container("1", "1Gi").Build();
  EXPECT_EQ(hint(*pending, deleted_nominated), QueueingHint::kQueue);
}

TEST(FitQueueingHints, PodScaleDown) {
  auto events = MakeFit()->EventsToRegister();
  const auto& hint = Registration(events, framework::EventResource::kPod).hint;
  // Requests cpu only.
  auto pending = PodBuilder("pending").Container("1", "").Build();

  framework::EventObjects cpu_freed;
  cpu_freed.old_pod = PodBuilder("other").Node("node1").Container("2", "1Gi").Build();
  cpu_freed.new_pod = PodBuilder("other").Node("node1").Container("1", "1Gi").Build();
  EXPECT_EQ(hint(*pending, cpu_freed), QueueingHint::kQueue);

  framework::EventObjects memory_freed;
  memory_freed.old_pod = PodBuilder("other").Node("node1").Container("2", "2Gi").Build();
  memory_freed.new_pod = PodBuilder("other").Node("node1").Container("2", "1Gi").Build();
  EXPECT_EQ(hint(*pending, memory_freed), QueueingHint::kSkip);

  framework::EventObjects unscheduled;
  unscheduled.old_pod = PodBuilder("other").Container("2", "1Gi").Build();
  unscheduled.new_pod = PodBuilder("other").Container("1", "1Gi").Build();
  EXPECT_EQ(hint(*pending, unscheduled), QueueingHint::kSkip);

  framework::EventObjects itself;
  itself.old_pod = PodBuilder("pending").Container("2", "").Build();
  itself.new_pod = pending;
  EXPECT_EQ(hint(*pending, itself), QueueingHint::kQueue);
}

TEST(FitQueueingHints, NodeAddedOrAllocatableChanged) {
  auto events = MakeFit()->EventsToRegister();
  const auto& hint = Registration(events, framework::EventResource::kNode).hint;
  auto pending = PodBuilder("pending").Container("2", "1Gi").Build();

  framework::EventObjects added_big;
  added_big.new_node = NodeBuilder("node1").Capacity("4", "8Gi").Build();
  EXPECT_EQ(hint(*pending, added_big), QueueingHint::kQueue);

  framework::EventObjects added_small;
  added_small.new_node = NodeBuilder("node1").Capacity("1", "8Gi").Build();
  EXPECT_EQ(hint(*pending, added_small), QueueingHint::kSkip);

  framework::EventObjects grown;
  grown.old_node = NodeBuilder("node1").Capacity("1", "8Gi").Build();
  grown.new_node = NodeBuilder("node1").Capacity("4", "8Gi").Build();
  EXPECT_EQ(hint(*pending, grown), QueueingHint::kQueue);

  framework::EventObjects unchanged;
  unchanged.old_node = NodeBuilder("node1").Capacity("4", "8Gi").Build();
  unchanged.new_node = NodeBuilder("node1").Capacity("4", "8Gi").Label("zone", "a").Build();
  EXPECT_EQ(hint(*pending, unchanged), QueueingHint::kSkip);

  framework::EventObjects more_pods;
  more_pods.old_node = NodeBuilder("node1").Capacity("4", "8Gi", 10).Build();
  more_pods.new_node = NodeBuilder("node1").Capacity("4", "8Gi", 20).Build();
  EXPECT_EQ(hint(*pending, more_pods), QueueingHint::kQueue);

  framework::EventObjects shrunk_but_fits;
  shrunk_but_fits.old_node = NodeBuilder("node1").Capacity("8", "8Gi").Build();
  shrunk_but_fits.new_node = NodeBuilder("node1").Capacity("4", "8Gi").Build();
  EXPECT_EQ(hint(*pending, shrunk_but_fits), QueueingHint::kSkip);
}

TEST(FitQueueingHints, NodeChangeHonoursIgnoredResources) {
  auto pending = PodBuilder("pending").Container("1", "1Gi", {{"example.com/foo", "1"}}).Build();
  framework::EventObjects added;
  added.new_node = NodeBuilder("node1").Capacity("4", "8Gi").Build();

  auto strict = MakeFit()->EventsToRegister();
  EXPECT_EQ(Registration(strict, framework::EventResource::kNode).hint(*pending, added),
            QueueingHint::kSkip);
  auto ignoring = MakeFit({{"ignoredResources", {"example.com/foo"}}})->EventsToRegister();
  EXPECT_EQ(Registration(ignoring, framework::EventResource::kNode).hint(*pending, added),
            QueueingHint::kQueue);
}

// ---- Resource names ----

TEST(ResourceNames, ClassifiesLikeUpstream) {
  EXPECT_TRUE(IsExtendedResourceName("example.com/aaa"));
  EXPECT_FALSE(IsExtendedResourceName("kubernetes.io/something"));
  EXPECT_FALSE(IsExtendedResourceName("subdomain.kubernetes.io/something"));
  EXPECT_FALSE(IsExtendedResourceName("hugepages-2Mi"));
  EXPECT_FALSE(IsExtendedResourceName("cpu"));
  EXPECT_FALSE(IsExtendedResourceName("requests.example.com/aaa"));
  EXPECT_FALSE(IsExtendedResourceName("example.com/a/b"));
  EXPECT_TRUE(IsScalarResourceName("example.com/aaa"));
  EXPECT_TRUE(IsScalarResourceName("hugepages-1Gi"));
  EXPECT_TRUE(IsScalarResourceName("kubernetes.io/something"));
  EXPECT_TRUE(IsScalarResourceName("attachable-volumes-aws-ebs"));
  EXPECT_FALSE(IsScalarResourceName("memory"));
  EXPECT_FALSE(IsScalarResourceName("ephemeral-storage"));
}

// ---- FilterNodes and ScoreNodes, which the runtime calls ----

// 20 nodes (more than one run of the scorer) of different sizes and loads; the pod below fits
// some of them, for lack of cpu, memory or pod slots it does not fit others (the last among them).
std::vector<framework::NodeInfoPtr> MixedNodes(
    const std::vector<std::pair<std::string, std::string>>& extended = {}) {
  std::vector<framework::NodeInfoPtr> nodes;
  for (int i = 0; i < 20; i++) {
    const std::string name = "node" + std::to_string(i);
    std::vector<framework::PodInfoPtr> pods;
    if (i % 3 == 0) {
      pods.push_back(
          PodBuilder("used" + std::to_string(i)).Node(name).Container("1", "1Gi").Info());
    }
    nodes.push_back(NodeBuilder(name)
                        .Capacity(i == 19 ? "1" : std::to_string(1 + i % 7),
                                  std::to_string(2 + i % 5) + "Gi", i == 9 ? 1 : 110, extended)
                        .Info(pods));
  }
  return nodes;
}

TEST(FitBatch, FilterNodesGivesEveryNodeFiltersStatus) {
  auto plugin = MakeFit();
  auto pod = PodBuilder("pod").Container("2", "3Gi").Build();
  const auto nodes = MixedNodes();
  framework::CycleState state;
  framework::PreFilterResult result;
  ASSERT_TRUE(plugin->PreFilter(state, *pod, nodes, &result).IsSuccess());
  int fits = 0;
  for (const auto& node : nodes) fits += plugin->Filter(state, *pod, *node).IsSuccess() ? 1 : 0;
  ASSERT_GT(fits, 0);
  ASSERT_LT(fits, 20);
  testing::ExpectFilterNodesMatchesFilter(*plugin, state, *pod, nodes);
  // Without PreFilter, every node gets Filter's error.
  testing::ExpectFilterNodesMatchesFilter(*plugin, framework::CycleState(), *pod, nodes);
}

TEST(FitBatch, ScoreNodesGivesEveryNodeScoresResult) {
  nlohmann::json resources = {{{"name", "cpu"}}, {{"name", "memory"}}};
  std::vector<std::pair<std::string, std::string>> extended;
  for (int i = 0; i < 8; i++) {
    const std::string name = "example.com/r" + std::to_string(i);
    resources.push_back({{"name", name}, {"weight", 1 + i % 3}});
    extended.emplace_back(name, std::to_string(4 + i));
  }
  auto pod = PodBuilder("pod")
                 .Container("2", "3Gi", {{"example.com/r0", "1"}, {"example.com/r7", "2"}})
                 .Build();
  const auto nodes = MixedNodes(extended);
  const nlohmann::json shape = {{{"utilization", 0}, {"score", 0}},
                                {{"utilization", 100}, {"score", 10}}};
  // Two resources (the default) and ten (past the scorer's stack buffers), for every strategy.
  for (const nlohmann::json& args :
       {nlohmann::json(nullptr), Strategy("LeastAllocated", resources),
        Strategy("MostAllocated", resources),
        nlohmann::json{{"scoringStrategy",
                        {{"type", "RequestedToCapacityRatio"},
                         {"resources", resources},
                         {"requestedToCapacityRatio", {{"shape", shape}}}}}}}) {
    SCOPED_TRACE(args.dump());
    auto plugin = MakeFit(args);
    // Without PreScore the requests are computed from the pod, as Score does.
    testing::ExpectScoreNodesMatchesScoreWithAndWithoutPreScore(*plugin, *plugin, *pod, nodes);
  }
}

TEST(HumanAmount, WritesAmountsAsPodSpecsDoRoundedUp) {
  int64_t rounded = 0;
  EXPECT_EQ(HumanAmount("cpu", 300, &rounded), "300m");
  EXPECT_EQ(rounded, 300);
  EXPECT_EQ(HumanAmount("cpu", 2000, &rounded), "2");
  EXPECT_EQ(HumanAmount("cpu", 1500, &rounded), "1.5");
  EXPECT_EQ(HumanAmount("cpu", 52300, &rounded), "52.3");
  EXPECT_EQ(HumanAmount("cpu", 1025, &rounded), "1.025");
  EXPECT_EQ(rounded, 1025);
  EXPECT_EQ(HumanAmount("memory", int64_t{512} << 20, &rounded), "512Mi");
  EXPECT_EQ(HumanAmount("memory", int64_t{3} << 30, &rounded), "3Gi");
  EXPECT_EQ(HumanAmount("memory", 123456789, &rounded), "118Mi");
  EXPECT_EQ(rounded, int64_t{118} << 20);
  EXPECT_EQ(HumanAmount("ephemeral-storage", 5000, &rounded), "5Ki");
  EXPECT_EQ(rounded, 5120);
  EXPECT_EQ(HumanAmount("example.com/gpu", 2, &rounded), "2");
}

}  // namespace
}  // namespace berth::plugins::noderesources
