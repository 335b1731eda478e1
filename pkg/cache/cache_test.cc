#include "pkg/cache/cache.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test/testing/objects.h"

namespace berth::cache {
namespace {

using namespace std::chrono_literals;
using testing::NodeBuilder;
using testing::PodBuilder;
using Names = std::vector<std::string>;

class FakeClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override { return now_.load(); }
  void Advance(std::chrono::milliseconds d) { now_.store(now_.load() + d); }

 private:
  std::atomic<std::chrono::steady_clock::time_point> now_{std::chrono::steady_clock::time_point{}};
};

api::NodePtr Node(const std::string& name, const std::string& zone = "") {
  NodeBuilder b(name);
  b.Capacity("8", "16Gi");
  if (!zone.empty()) {
    b.Label("topology.kubernetes.io/zone", zone);
  }
  return b.Build();
}

api::PodPtr Pod(const std::string& name, const std::string& node, const std::string& cpu = "1") {
  return PodBuilder(name).Container(cpu, "1Gi").Node(node).Build();
}

framework::PodInfoPtr Info(api::PodPtr pod) {
  return std::make_shared<framework::PodInfo>(std::move(pod));
}

api::PodPtr AffinityPod(const std::string& name, const std::string& node) {
  PodBuilder b(name);
  b.Container("100m", "").Node(node);
  api::Affinity affinity;
  affinity.pod_affinity = api::PodAffinity{};
  affinity.pod_affinity->required.push_back(
      api::PodAffinityTerm{api::LabelSelector{}, {}, "kubernetes.io/hostname", {}, {}, {}});
  b.pod().spec.affinity = affinity;
  return b.Build();
}

Snapshot TakeSnapshot(Cache& cache) {
  Snapshot snapshot;
  EXPECT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  return snapshot;
}

int64_t RequestedMilliCPU(const Snapshot& snapshot, const std::string& node) {
  auto info = snapshot.Get(node);
  EXPECT_NE(info, nullptr) << node;
  return info ? info->requested().milli_cpu : -1;
}

Names ListNames(const std::vector<framework::NodeInfoPtr>& infos) {
  Names names;
  names.reserve(infos.size());
  for (const auto& info : infos) {
    names.push_back(info->name());
  }
  return names;
}

TEST(CacheTest, AssumedPodIsInTheNextSnapshot) {
  Cache cache;
  cache.AddNode(Node("n1"));
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 0);

  auto pod = Pod("p1", "n1", "2");
  ASSERT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());
  EXPECT_TRUE(cache.IsAssumedPod(*pod));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 2000);
  EXPECT_EQ(snapshot.Get("n1")->requested().memory, 1LL << 30);
  EXPECT_EQ(snapshot.Get("n1")->pods().size(), 1u);
  EXPECT_EQ(cache.Size().assumed_pods, 1u);
  EXPECT_EQ(cache.GetPod(pod->meta.uid), pod);
}

TEST(CacheTest, AssumeRejectsPodsAlreadyCachedOrWithoutNode) {
  Cache cache;
  cache.AddNode(Node("n1"));
  auto pod = Pod("p1", "n1");
  ASSERT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());
  EXPECT_EQ(cache.AssumePod(Info(pod)).code(), framework::Code::kError);
  auto added = Pod("p2", "n1");
  cache.AddPod(added);
  EXPECT_EQ(cache.AssumePod(Info(added)).code(), framework::Code::kError);
  EXPECT_EQ(cache.AssumePod(Info(Pod("p3", ""))).code(), framework::Code::kError);
  EXPECT_EQ(cache.AssumePod(Info(PodBuilder("p4").Uid("").Node("n1").Build())).code(),
            framework::Code::kError);
  EXPECT_EQ(cache.Size().pods, 2u);
  EXPECT_EQ(TakeSnapshot(cache).Get("n1")->requested().milli_cpu, 2000);
}

TEST(CacheTest, InformerAddConfirmsAssumedPodWithoutDoubleCounting) {
  Cache cache;
  cache.AddNode(Node("n1"));
  auto assumed = Pod("p1", "n1", "2");
  ASSERT_TRUE(cache.AssumePod(Info(assumed)).IsSuccess());
  cache.FinishBinding(*assumed);

  // The informer's object is a different (newer) version of the same pod.
  PodBuilder bound("p1");
  bound.Container("2", "1Gi").Node("n1");
  bound.pod().meta.resource_version = "42";
  auto informer_pod = bound.Build();
  cache.AddPod(informer_pod);

  EXPECT_FALSE(cache.IsAssumedPod(*assumed));
  EXPECT_EQ(cache.Size().pods, 1u);
  EXPECT_EQ(cache.Size().assumed_pods, 0u);
  EXPECT_EQ(cache.GetPod(assumed->meta.uid), informer_pod);
  Snapshot snapshot = TakeSnapshot(cache);
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 2000);
  ASSERT_EQ(snapshot.Get("n1")->pods().size(), 1u);
  EXPECT_EQ(snapshot.Get("n1")->pods()[0]->pod, informer_pod);
  // A confirmed pod is no longer forgettable.
  cache.ForgetPod(*assumed);
  EXPECT_EQ(cache.Size().pods, 1u);
}

TEST(CacheTest, InformerAddOnAnotherNodeMovesAssumedPod) {
  Cache cache;
  cache.AddNode(Node("n1"));
  cache.AddNode(Node("n2"));
  ASSERT_TRUE(cache.AssumePod(Info(Pod("p1", "n1", "3"))).IsSuccess());
  cache.AddPod(Pod("p1", "n2", "3"));
  Snapshot snapshot = TakeSnapshot(cache);
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 0);
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n2"), 3000);
  EXPECT_EQ(cache.Size().assumed_pods, 0u);
}

TEST(CacheTest, ForgetUndoesAssume) {
  Cache cache;
  cache.AddNode(Node("n1"));
  Snapshot snapshot;
  auto pod = Pod("p1", "n1", "2");
  ASSERT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 2000);

  cache.ForgetPod(*pod);
  EXPECT_FALSE(cache.IsAssumedPod(*pod));
  EXPECT_EQ(cache.GetPod(pod->meta.uid), nullptr);
  EXPECT_EQ(cache.Size().pods, 0u);
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 0);
  EXPECT_TRUE(snapshot.Get("n1")->pods().empty());
  // Forgetting again, or forgetting what was never assumed, changes nothing.
  cache.ForgetPod(*pod);
  cache.AddPod(Pod("p2", "n1"));
  cache.ForgetPod(*Pod("p2", "n1"));
  EXPECT_EQ(cache.Size().pods, 1u);
}

TEST(CacheTest, AssumedPodExpiresOnlyAfterFinishBinding) {
  auto clock = std::make_shared<FakeClock>();
  Cache cache(30s, clock);
  cache.AddNode(Node("n1"));
  auto pod = Pod("p1", "n1", "2");
  ASSERT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());

  // The binding is still running: however long it takes, the pod keeps its resources.
  clock->Advance(10min);
  cache.CleanupExpiredAssumedPods();
  EXPECT_TRUE(cache.IsAssumedPod(*pod));

  cache.FinishBinding(*pod);
  clock->Advance(29s);
  cache.CleanupExpiredAssumedPods();
  EXPECT_TRUE(cache.IsAssumedPod(*pod));
  EXPECT_EQ(RequestedMilliCPU(TakeSnapshot(cache), "n1"), 2000);

  clock->Advance(2s);
  cache.CleanupExpiredAssumedPods();
  EXPECT_FALSE(cache.IsAssumedPod(*pod));
  EXPECT_EQ(cache.Size().pods, 0u);
  EXPECT_EQ(RequestedMilliCPU(TakeSnapshot(cache), "n1"), 0);
}

TEST(CacheTest, ConfirmedPodNeverExpires) {
  auto clock = std::make_shared<FakeClock>();
  Cache cache(30s, clock);
  cache.AddNode(Node("n1"));
  auto pod = Pod("p1", "n1");
  ASSERT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());
  cache.FinishBinding(*pod);
  cache.AddPod(pod);
  clock->Advance(1h);
  cache.CleanupExpiredAssumedPods();
  EXPECT_EQ(cache.Size().pods, 1u);
}

TEST(CacheTest, ZeroTtlNeverExpires) {
  auto clock = std::make_shared<FakeClock>();
  Cache cache(0ms, clock);
  cache.AddNode(Node("n1"));
  auto pod = Pod("p1", "n1");
  ASSERT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());
  cache.FinishBinding(*pod);
  clock->Advance(24h);
  cache.CleanupExpiredAssumedPods();
  EXPECT_TRUE(cache.IsAssumedPod(*pod));
}

TEST(CacheTest, BackgroundLoopExpiresAssumedPods) {
  auto clock = std::make_shared<FakeClock>();
  Cache cache(1s, clock);
  cache.AddNode(Node("n1"));
  auto pod = Pod("p1", "n1");
  ASSERT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());
  cache.FinishBinding(*pod);
  clock->Advance(2s);
  cache.Run(5ms);
  for (int i = 0; i < 400 && cache.IsAssumedPod(*pod); ++i) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_FALSE(cache.IsAssumedPod(*pod));
  cache.Stop();
  cache.Stop();
}

TEST(CacheTest, RemovePodOfAssumedPodRemovesIt) {
  Cache cache;
  cache.AddNode(Node("n1"));
  auto pod = Pod("p1", "n1", "2");
  ASSERT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());
  cache.RemovePod(*pod);
  EXPECT_FALSE(cache.IsAssumedPod(*pod));
  EXPECT_EQ(cache.Size().pods, 0u);
  EXPECT_EQ(RequestedMilliCPU(TakeSnapshot(cache), "n1"), 0);
}

TEST(CacheTest, PodArrivingBeforeItsNode) {
  Cache cache;
  cache.AddNode(Node("n0"));
  cache.AddPod(Pod("p1", "n1", "2"));
  EXPECT_EQ(cache.Size().nodes, 2u);
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  // A NodeInfo without a node is never offered to the cycle.
  EXPECT_EQ(snapshot.NumNodes(), 1u);
  EXPECT_EQ(snapshot.Get("n1"), nullptr);

  cache.AddNode(Node("n1"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.NumNodes(), 2u);
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 2000);
  EXPECT_EQ(snapshot.Get("n1")->allocatable().milli_cpu, 8000);
}

TEST(CacheTest, RemovedNodeKeepsItsPodsUntilTheyAreRemoved) {
  Cache cache;
  cache.AddNode(Node("n1"));
  cache.AddNode(Node("n2"));
  auto p1 = Pod("p1", "n1");
  auto p2 = Pod("p2", "n1");
  cache.AddPod(p1);
  cache.AddPod(p2);
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  ASSERT_EQ(snapshot.NumNodes(), 2u);

  cache.RemoveNode(*Node("n1"));
  EXPECT_EQ(cache.Size().nodes, 2u);
  auto ghost = cache.GetNodeInfo("n1");
  ASSERT_NE(ghost, nullptr);
  EXPECT_EQ(ghost->node(), nullptr);
  EXPECT_EQ(ghost->pods().size(), 2u);
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.NumNodes(), 1u);
  EXPECT_EQ(snapshot.Get("n1"), nullptr);
  EXPECT_EQ(ListNames(snapshot.List()), (Names{"n2"}));

  cache.RemovePod(*p1);
  EXPECT_EQ(cache.Size().nodes, 2u);
  cache.RemovePod(*p2);
  EXPECT_EQ(cache.Size().nodes, 1u);
  EXPECT_EQ(cache.GetNodeInfo("n1"), nullptr);
  EXPECT_EQ(cache.NodeNames(), (Names{"n2"}));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.NumNodes(), 1u);

  // The node comes back; its NodeInfo starts empty.
  cache.AddNode(Node("n1"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.NumNodes(), 2u);
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 0);
}

TEST(CacheTest, RemovedNodeWithPodsReturningKeepsThem) {
  Cache cache;
  cache.AddNode(Node("n1"));
  cache.AddPod(Pod("p1", "n1", "2"));
  cache.RemoveNode(*Node("n1"));
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.NumNodes(), 0u);
  cache.AddNode(Node("n1"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 2000);
}

TEST(CacheTest, DeletedNodeDisappearsFromSnapshot) {
  Cache cache;
  for (const auto& name : {"n1", "n2", "n3"}) {
    cache.AddNode(Node(name));
  }
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  ASSERT_EQ(snapshot.NumNodes(), 3u);
  cache.RemoveNode(*Node("n2"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.NumNodes(), 2u);
  EXPECT_EQ(snapshot.Get("n2"), nullptr);
  EXPECT_EQ(ListNames(snapshot.List()), (Names{"n1", "n3"}));
  EXPECT_EQ(cache.Size().nodes, 2u);
  // Delete one and add another between two snapshots: the count alone does not change.
  cache.RemoveNode(*Node("n1"));
  cache.AddNode(Node("n4"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(ListNames(snapshot.List()), (Names{"n3", "n4"}));
  EXPECT_EQ(snapshot.Get("n1"), nullptr);
}

TEST(CacheTest, UpdatePodMovesItBetweenNodes) {
  Cache cache;
  cache.AddNode(Node("n1"));
  cache.AddNode(Node("n2"));
  auto old_pod = Pod("p1", "n1", "2");
  cache.AddPod(old_pod);
  auto new_pod = Pod("p1", "n2", "2");
  cache.UpdatePod(old_pod, new_pod);
  Snapshot snapshot = TakeSnapshot(cache);
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 0);
  EXPECT_TRUE(snapshot.Get("n1")->pods().empty());
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n2"), 2000);
  EXPECT_EQ(cache.GetPod(new_pod->meta.uid), new_pod);
  EXPECT_EQ(cache.Size().pods, 1u);
}

TEST(CacheTest, UpdatePodReaccountsRequests) {
  Cache cache;
  cache.AddNode(Node("n1"));
  auto old_pod = Pod("p1", "n1", "2");
  cache.AddPod(old_pod);
  cache.AddPod(Pod("p2", "n1", "1"));
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 3000);
  // An in-place resize.
  cache.UpdatePod(old_pod, Pod("p1", "n1", "500m"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 1500);
  EXPECT_EQ(snapshot.Get("n1")->pods().size(), 2u);
}

TEST(CacheTest, UpdateOfUnknownPodAddsIt) {
  Cache cache;
  cache.AddNode(Node("n1"));
  cache.UpdatePod(Pod("p1", "n1"), Pod("p1", "n1", "2"));
  EXPECT_EQ(RequestedMilliCPU(TakeSnapshot(cache), "n1"), 2000);
}

TEST(CacheTest, IncrementalSnapshotCopiesOnlyChangedNodeInfos) {
  Cache cache;
  for (const auto& name : {"n1", "n2", "n3"}) {
    cache.AddNode(Node(name));
  }
  cache.AddPod(Pod("p0", "n3"));
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  const auto n1 = snapshot.Get("n1");
  const auto n2 = snapshot.Get("n2");
  const auto n3 = snapshot.Get("n3");
  const int64_t generation = snapshot.generation();
  const Names order = ListNames(snapshot.List());

  // Nothing changed: nothing is copied.
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.Get("n1"), n1);
  EXPECT_EQ(snapshot.Get("n2"), n2);
  EXPECT_EQ(snapshot.Get("n3"), n3);
  EXPECT_EQ(snapshot.generation(), generation);

  cache.AddPod(Pod("p1", "n2", "2"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_GT(snapshot.generation(), generation);
  EXPECT_EQ(snapshot.Get("n1"), n1);
  EXPECT_EQ(snapshot.Get("n3"), n3);
  const auto n2_after = snapshot.Get("n2");
  EXPECT_NE(n2_after, n2);
  EXPECT_EQ(n2_after->requested().milli_cpu, 2000);
  // The list holds the new copy in the same place; the old copy is untouched.
  EXPECT_EQ(ListNames(snapshot.List()), order);
  for (const auto& info : snapshot.List()) {
    EXPECT_EQ(info, snapshot.Get(info->name()));
  }
  EXPECT_EQ(n2->requested().milli_cpu, 0);
}

TEST(CacheTest, SnapshotIsIndependentOfLaterCacheChanges) {
  Cache cache;
  cache.AddNode(Node("n1"));
  cache.AddPod(Pod("p1", "n1", "1"));
  Snapshot snapshot = TakeSnapshot(cache);
  const auto info = snapshot.Get("n1");
  ASSERT_EQ(info->requested().milli_cpu, 1000);

  cache.AddPod(Pod("p2", "n1", "2"));
  ASSERT_TRUE(cache.AssumePod(Info(Pod("p3", "n1", "3"))).IsSuccess());
  cache.UpdateNode(Node("n1"), NodeBuilder("n1").Capacity("1", "1Gi").Build());
  cache.RemovePod(*Pod("p1", "n1"));

  EXPECT_EQ(info->requested().milli_cpu, 1000);
  EXPECT_EQ(info->pods().size(), 1u);
  EXPECT_EQ(info->allocatable().milli_cpu, 8000);
  EXPECT_EQ(snapshot.Get("n1"), info);
  EXPECT_EQ(RequestedMilliCPU(snapshot, "n1"), 1000);
}

TEST(CacheTest, SnapshotListInterleavesZones) {
  Cache cache;
  // Zone sizes 3, 1, 2, added in a mixed order.
  cache.AddNode(Node("a1", "za"));
  cache.AddNode(Node("b1", "zb"));
  cache.AddNode(Node("a2", "za"));
  cache.AddNode(Node("c1", "zc"));
  cache.AddNode(Node("a3", "za"));
  cache.AddNode(Node("c2", "zc"));
  Snapshot snapshot = TakeSnapshot(cache);
  EXPECT_EQ(ListNames(snapshot.List()), (Names{"a1", "b1", "c1", "a2", "c2", "a3"}));
  EXPECT_EQ(cache.NodeNames(), (Names{"a1", "a2", "a3", "b1", "c1", "c2"}));
}

TEST(CacheTest, NodeUpdateChangesZone) {
  Cache cache;
  cache.AddNode(Node("a1", "za"));
  cache.AddNode(Node("b1", "zb"));
  cache.UpdateNode(Node("a1", "za"), Node("a1", "zb"));
  cache.AddNode(Node("c1", "zc"));
  Snapshot snapshot = TakeSnapshot(cache);
  EXPECT_EQ(ListNames(snapshot.List()), (Names{"b1", "c1", "a1"}));
}

TEST(CacheTest, ImageStatesCountNodesHavingEachImage) {
  Cache cache;
  cache.AddNode(NodeBuilder("n1").Image({"nginx:1", "nginx@sha256:1"}, 100).Build());
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.Get("n1")->image_states().at("nginx:1").num_nodes, 1);

  cache.AddNode(NodeBuilder("n2").Image({"nginx:1"}, 100).Image({"redis:7"}, 30).Build());
  cache.AddNode(NodeBuilder("n3").Build());
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  const auto n1 = snapshot.Get("n1");
  const auto n2 = snapshot.Get("n2");
  EXPECT_EQ(n1->image_states().at("nginx:1").num_nodes, 2);
  EXPECT_EQ(n1->image_states().at("nginx:1").size_bytes, 100);
  EXPECT_EQ(n1->image_states().at("nginx@sha256:1").num_nodes, 1);
  EXPECT_EQ(n2->image_states().at("nginx:1").num_nodes, 2);
  EXPECT_EQ(n2->image_states().at("redis:7").num_nodes, 1);
  EXPECT_EQ(n2->image_states().at("redis:7").size_bytes, 30);
  EXPECT_TRUE(snapshot.Get("n3")->image_states().empty());
  EXPECT_EQ(n2->image_states().size(), 2u);
  const auto n3 = snapshot.Get("n3");

  // n2 loses nginx: n1's count drops although n1 itself did not change.
  cache.UpdateNode(nullptr, NodeBuilder("n2").Image({"redis:7"}, 30).Build());
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.Get("n1")->image_states().at("nginx:1").num_nodes, 1);
  EXPECT_EQ(snapshot.Get("n2")->image_states().count("nginx:1"), 0u);
  EXPECT_EQ(snapshot.Get("n3"), n3);
  for (const auto& info : snapshot.List()) {
    EXPECT_EQ(info, snapshot.Get(info->name()));
  }

  cache.RemoveNode(*snapshot.Get("n2")->node());
  cache.AddNode(NodeBuilder("n4").Image({"redis:7"}, 30).Build());
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_EQ(snapshot.Get("n4")->image_states().at("redis:7").num_nodes, 1);
}

TEST(CacheTest, ImageRefreshKeepsAffinityListsConsistent) {
  Cache cache;
  cache.AddNode(NodeBuilder("n1").Image({"nginx:1"}, 100).Build());
  cache.AddNode(NodeBuilder("n2").Build());
  cache.AddPod(AffinityPod("p1", "n1"));
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  // n2 pulls the image: only n1's image count changes, and n1 is recopied for it.
  cache.UpdateNode(nullptr, NodeBuilder("n2").Image({"nginx:1"}, 100).Build());
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  ASSERT_EQ(snapshot.HavePodsWithAffinityList().size(), 1u);
  EXPECT_EQ(snapshot.HavePodsWithAffinityList()[0], snapshot.Get("n1"));
  EXPECT_EQ(snapshot.HavePodsWithAffinityList()[0]->image_states().at("nginx:1").num_nodes, 2);
}

TEST(CacheTest, AffinityListsFollowPods) {
  Cache cache;
  cache.AddNode(Node("n1"));
  cache.AddNode(Node("n2"));
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_TRUE(snapshot.HavePodsWithAffinityList().empty());

  auto pod = AffinityPod("p1", "n2");
  cache.AddPod(pod);
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  ASSERT_EQ(ListNames(snapshot.HavePodsWithAffinityList()), (Names{"n2"}));
  EXPECT_EQ(snapshot.HavePodsWithAffinityList()[0], snapshot.Get("n2"));
  EXPECT_TRUE(snapshot.HavePodsWithRequiredAntiAffinityList().empty());

  // Another change on that node: the list must hold the new copy.
  cache.AddPod(Pod("p2", "n2"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  ASSERT_EQ(snapshot.HavePodsWithAffinityList().size(), 1u);
  EXPECT_EQ(snapshot.HavePodsWithAffinityList()[0], snapshot.Get("n2"));
  EXPECT_EQ(snapshot.HavePodsWithAffinityList()[0]->pods().size(), 2u);

  cache.RemovePod(*pod);
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_TRUE(snapshot.HavePodsWithAffinityList().empty());
}

// VolumeRestrictions asks the snapshot whether any pod uses a claim: assumed and bound pods on
// any node count, a pod's ephemeral volumes do not, and the answer follows pods and nodes away.
TEST(CacheTest, ClaimUseFollowsPodsAndNodes) {
  const auto with_claim = [](const std::string& name, const std::string& node,
                             const std::string& source) {
    PodBuilder b(name);
    b.Container("100m", "").Node(node);
    api::Volume volume;
    volume.name = "data";
    volume.source = source;
    volume.claim_name = source == "persistentVolumeClaim" ? "data" : "";
    b.pod().spec.volumes = {volume, volume};
    return b.Build();
  };
  Cache cache;
  cache.AddNode(Node("n1"));
  cache.AddNode(Node("n2"));
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  const std::string key = "default/data";
  EXPECT_FALSE(snapshot.IsPVCUsedByPods(key));

  auto assumed = with_claim("p1", "n1", "persistentVolumeClaim");
  ASSERT_TRUE(cache.AssumePod(Info(assumed)).IsSuccess());
  cache.AddPod(with_claim("p2", "n2", "persistentVolumeClaim"));
  cache.AddPod(with_claim("p3", "n2", "ephemeral"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_TRUE(snapshot.IsPVCUsedByPods(key));
  EXPECT_FALSE(snapshot.IsPVCUsedByPods("default/p3-data"));
  ASSERT_EQ(snapshot.Get("n1")->pvc_ref_counts().size(), 1u);
  EXPECT_EQ(snapshot.Get("n1")->pvc_ref_counts()[0].second, 2);

  cache.ForgetPod(*assumed);
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_TRUE(snapshot.IsPVCUsedByPods(key));
  cache.RemoveNode(*Node("n2"));
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  EXPECT_FALSE(snapshot.IsPVCUsedByPods(key));
}

// Pods with affinity come and go in random order on many nodes: the lists an incrementally updated
// snapshot keeps are those a snapshot taken from scratch computes, in List() order, holding the
// snapshot's current NodeInfos.
TEST(CacheTest, AffinityListsPatchedInPlaceMatchAFreshSnapshot) {
  Cache cache;
  constexpr int kNodes = 24;
  for (int i = 0; i < kNodes; i++) cache.AddNode(Node("n" + std::to_string(i)));
  Snapshot snapshot;
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  std::mt19937 rng(3);
  std::vector<api::PodPtr> placed;
  for (int step = 0; step < 300; step++) {
    const std::string node = "n" + std::to_string(rng() % kNodes);
    const std::string name = "p" + std::to_string(step);
    switch (rng() % 4) {
      case 0:
        placed.push_back(AffinityPod(name, node));
        break;
      case 1: {
        PodBuilder b(name);
        b.Container("10m", "").Node(node);
        b.pod().spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(
            api::PodAffinityTerm{api::LabelSelector{}, {}, "kubernetes.io/hostname", {}, {}, {}});
        placed.push_back(b.Build());
        break;
      }
      case 2:
        placed.push_back(Pod(name, node, "10m"));
        break;
      default:
        if (placed.empty()) continue;
        const size_t victim = rng() % placed.size();
        cache.RemovePod(*placed[victim]);
        placed.erase(placed.begin() + static_cast<std::ptrdiff_t>(victim));
        break;
    }
    if (!placed.empty() && placed.back()->meta.name == name) cache.AddPod(placed.back());
    if (step % 3 != 0) continue;
    ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
    Snapshot fresh = TakeSnapshot(cache);
    ASSERT_EQ(ListNames(snapshot.HavePodsWithAffinityList()),
              ListNames(fresh.HavePodsWithAffinityList()))
        << step;
    ASSERT_EQ(ListNames(snapshot.HavePodsWithRequiredAntiAffinityList()),
              ListNames(fresh.HavePodsWithRequiredAntiAffinityList()))
        << step;
    for (const auto& info : snapshot.HavePodsWithAffinityList()) {
      EXPECT_EQ(info, snapshot.Get(info->name()));
    }
    for (const auto& info : snapshot.HavePodsWithRequiredAntiAffinityList()) {
      EXPECT_EQ(info, snapshot.Get(info->name()));
    }
  }
}

TEST(CacheTest, ConcurrentWritersAndSnapshots) {
  Cache cache;
  constexpr int kNodes = 20;
  constexpr int kPodsPerThread = 200;
  for (int i = 0; i < kNodes; ++i) {
    cache.AddNode(Node("n" + std::to_string(i)));
  }
  std::atomic<bool> done{false};
  std::thread informer([&] {
    for (int i = 0; i < kPodsPerThread; ++i) {
      cache.AddPod(Pod("inf" + std::to_string(i), "n" + std::to_string(i % kNodes), "10m"));
    }
  });
  std::thread scheduler([&] {
    for (int i = 0; i < kPodsPerThread; ++i) {
      auto pod = Pod("sch" + std::to_string(i), "n" + std::to_string(i % kNodes), "10m");
      EXPECT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());
      if (i % 2) {
        cache.ForgetPod(*pod);
      }
    }
    done = true;
  });
  Snapshot snapshot;
  while (!done) {
    ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  }
  informer.join();
  scheduler.join();
  ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
  int64_t total = 0;
  for (const auto& info : snapshot.List()) {
    total += info->requested().milli_cpu;
  }
  EXPECT_EQ(total, 10 * (kPodsPerThread + kPodsPerThread / 2));
  EXPECT_EQ(cache.Size().pods, static_cast<size_t>(kPodsPerThread + kPodsPerThread / 2));
}

// A pod on `node` whose single container states these cpu and memory requests, as decoded.
api::PodPtr PodRequesting(const std::string& name, const std::string& node, int64_t milli_cpu,
                          int64_t memory) {
  return PodBuilder(name).ContainerRequesting(milli_cpu, memory).Node(node).Build();
}

// Seeded, so that a failure reproduces: informer adds, updates and deletes and scheduler assumes
// and forgets of pods with extreme and ordinary requests, spread over two nodes. Every snapshot
// shows each node's exact sum saturated into int64, and once every pod has gone the sums are
// exactly zero: a huge pod leaves no trace in a node's accounting.
TEST(CacheTest, ExtremeRequestsLeaveNodeSumsExactThroughAddsAndRemoves) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr std::array<int64_t, 7> kAmounts = {
      0, 1, 1000, int64_t{1} << 40, 1'000'000'000'000'000'000, kMax - 1, kMax};
  using Exact = __int128;
  auto saturated = [](Exact value) { return value > kMax ? kMax : static_cast<int64_t>(value); };
  for (uint32_t seed = 1; seed <= 10; seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 random(seed);
    auto amount = [&] { return kAmounts[random() % kAmounts.size()]; };
    Cache cache;
    const Names nodes = {"n1", "n2"};
    for (const auto& name : nodes) cache.AddNode(Node(name));
    // uid -> (pod, assumed).
    std::map<std::string, std::pair<api::PodPtr, bool>> present;
    Snapshot snapshot;
    for (int step = 0; step < 300; step++) {
      const uint64_t action = random() % 5;
      auto pick = [&] {
        auto it = present.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(random() % present.size()));
        return it;
      };
      if (present.empty() || action <= 1) {
        auto pod = PodRequesting("p" + std::to_string(step), nodes[random() % nodes.size()],
                                 amount(), amount());
        const bool assume = action == 1;
        if (assume) {
          ASSERT_TRUE(cache.AssumePod(Info(pod)).IsSuccess());
        } else {
          cache.AddPod(pod);
        }
        present[pod->meta.uid] = {pod, assume};
      } else if (action == 2) {
        auto it = pick();
        if (it->second.second) {
          cache.ForgetPod(*it->second.first);
        } else {
          cache.RemovePod(*it->second.first);
        }
        present.erase(it);
      } else {
        auto it = pick();
        if (it->second.second) continue;
        api::PodPtr updated = PodRequesting(it->second.first->meta.name,
                                            it->second.first->spec.node_name, amount(), amount());
        cache.UpdatePod(it->second.first, updated);
        it->second.first = updated;
      }
      ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
      for (const auto& name : nodes) {
        Exact cpu = 0;
        Exact memory = 0;
        for (const auto& [uid, entry] : present) {
          if (entry.first->spec.node_name != name) continue;
          cpu += entry.first->requests.milli_cpu;
          memory += entry.first->requests.memory;
        }
        auto info = snapshot.Get(name);
        ASSERT_NE(info, nullptr);
        ASSERT_EQ(info->requested().milli_cpu, saturated(cpu)) << "step " << step << " " << name;
        ASSERT_EQ(info->requested().memory, saturated(memory)) << "step " << step << " " << name;
      }
    }
    for (const auto& [uid, entry] : present) {
      if (entry.second) {
        cache.ForgetPod(*entry.first);
      } else {
        cache.RemovePod(*entry.first);
      }
    }
    ASSERT_TRUE(cache.UpdateSnapshot(snapshot).IsSuccess());
    for (const auto& name : nodes) {
      auto info = snapshot.Get(name);
      ASSERT_NE(info, nullptr);
      EXPECT_EQ(info->requested(), api::ResourceList{}) << name;
      EXPECT_EQ(info->non_zero_milli_cpu(), 0) << name;
      EXPECT_EQ(info->non_zero_memory(), 0) << name;
    }
  }
}

}  // namespace
}  // namespace berth::cache
