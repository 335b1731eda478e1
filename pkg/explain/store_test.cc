#include "pkg/explain/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <memory>
#include <string>
#include <vector>

#include "pkg/explain/groups.h"

namespace berth::explain {
namespace {

using framework::Code;
using framework::Status;

AttemptPtr Make(const std::string& pod, const std::string& uid, int seconds,
                const std::string& message = "0/3 nodes are available: 3 Insufficient cpu.") {
  auto a = std::make_shared<Attempt>();
  a->pod = pod;
  a->uid = uid;
  a->profile = "berth-scheduler";
  a->time = std::chrono::system_clock::time_point(std::chrono::seconds(seconds));
  a->message = message;
  return a;
}

std::vector<std::string> Pods(const std::vector<AttemptPtr>& attempts) {
  std::vector<std::string> out;
  for (const auto& a : attempts) out.push_back(a->pod);
  return out;
}

TEST(Store, KeepsTheLastAttemptOfEachPendingPodNewestFirst) {
  Store store;
  store.Record(Make("ns/a", "ua", 1));
  store.Record(Make("ns/b", "ub", 2));
  store.Record(Make("ns/a", "ua", 3, "second"));
  EXPECT_EQ(store.pending_count(), 2u);
  EXPECT_THAT(Pods(store.Pending()), ::testing::ElementsAre("ns/a", "ns/b"));
  ASSERT_NE(store.Find("ns/a"), nullptr);
  EXPECT_EQ(store.Find("ns/a")->message, "second");
  EXPECT_EQ(store.Find("ns/c"), nullptr);
}

TEST(Store, ForgetsDeletedPodsAndMovesBoundOnesToTheRing) {
  Store store(StoreOptions{1 << 20, 2});
  store.Record(Make("ns/a", "ua", 1));
  store.Record(Make("ns/b", "ub", 2));
  store.Forget("ua");
  EXPECT_EQ(store.Find("ns/a"), nullptr);
  auto bound = Make("ns/b", "ub", 3, "");
  store.Bound(bound);
  EXPECT_EQ(store.pending_count(), 0u);
  EXPECT_EQ(store.Find("ns/b"), bound);
  store.Bound(Make("ns/c", "uc", 4, ""));
  store.Bound(Make("ns/d", "ud", 5, ""));
  EXPECT_THAT(Pods(store.Recent()), ::testing::ElementsAre("ns/d", "ns/c"));
  EXPECT_EQ(store.Find("ns/b"), nullptr) << "the ring holds the last 2 decisions";
}

TEST(Store, ARecreatedPodIsFoundByItsNewUid) {
  Store store;
  store.Record(Make("ns/a", "old", 1, "old"));
  store.Record(Make("ns/a", "new", 2, "new"));
  store.Forget("old");
  ASSERT_NE(store.Find("ns/a"), nullptr);
  EXPECT_EQ(store.Find("ns/a")->message, "new");
}

TEST(Store, EvictsTheLeastRecentlyWrittenPastTheCap) {
  const size_t one = Make("ns/p0", "u0", 0)->ApproxBytes();
  Store store(StoreOptions{one * 20, 0});
  for (int i = 0; i < 100; i++) {
    store.Record(Make("ns/p" + std::to_string(i), "u" + std::to_string(i), i));
  }
  EXPECT_LE(store.bytes(), store.options().max_bytes);
  EXPECT_LT(store.pending_count(), 20u);
  EXPECT_GT(store.pending_count(), 0u);
  EXPECT_NE(store.Find("ns/p99"), nullptr);
  EXPECT_EQ(store.Find("ns/p0"), nullptr);
  // Writing an old record again makes it the most recent.
  const size_t kept = store.pending_count();
  store.Record(Make("ns/p" + std::to_string(100 - kept), "u" + std::to_string(100 - kept), 200));
  store.Record(Make("ns/new", "unew", 201));
  EXPECT_NE(store.Find("ns/p" + std::to_string(100 - kept)), nullptr);
}

int64_t HeapInUse() {
  struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

// Whether malloc reports through mallinfo2: the sanitizers' allocators do not.
bool HeapIsMeasurable() {
  const int64_t before = HeapInUse();
  auto block = std::make_unique<char[]>(1 << 20);
  // The compiler may drop an allocation nothing reads; this makes the block escape.
  asm volatile("" : : "r"(block.get()) : "memory");
  return HeapInUse() - before >= (1 << 20);
}

// The attempt of a pod that fits none of `nodes`, each rejected for one of 40 reasons.
Attempt WorstCaseAttempt(const std::vector<std::string>& nodes) {
  GroupBuilder b;
  std::vector<Status> verdicts;
  for (int r = 0; r < 40; r++) {
    Status s(Code::kUnschedulable,
             std::vector<std::string>{"node(s) had untolerated taint {dedicated-pool-" +
                                      std::to_string(r) + ": reserved-for-batch-workloads}"});
    s.WithPlugin("TaintToleration");
    verdicts.push_back(std::move(s));
  }
  for (size_t n = 0; n < nodes.size(); n++) b.Add(nodes[n], verdicts[n % verdicts.size()]);
  Attempt a;
  a.profile = "berth-scheduler";
  a.time = std::chrono::system_clock::now();
  a.message = "0/5000 nodes are available: " + std::string(300, 'r') + ".";
  a.num_nodes = static_cast<int>(nodes.size());
  a.evaluated = a.num_nodes;
  b.Build(&a);
  return a;
}

// The same attempt for the i-th pod, with names as long as controllers make them.
AttemptPtr ForPod(const Attempt& attempt, int i) {
  auto a = std::make_shared<Attempt>(attempt);
  a->pod = "team-analytics-production/batch-ingest-worker-7f9c8d6b5-" + std::to_string(i);
  a->uid = "6a1f0c9e-3b2d-4c5e-8f70-" + std::to_string(100000000000 + i);
  return a;
}

// Node names as long as cloud providers make them.
std::vector<std::string> CloudNodeNames(int count) {
  std::vector<std::string> nodes;
  for (int n = 0; n < count; n++) {
    nodes.push_back("ip-10-20-" + std::to_string(n / 250) + "-" + std::to_string(n % 250) +
                    ".eu-west-1.compute.internal");
  }
  return nodes;
}

TEST(Store, TenThousandPendingPodsOfAFiveThousandNodeClusterStayWithinTheBudget) {
  const Attempt worst = WorstCaseAttempt(CloudNodeNames(5000));
  // One record is bounded by the caps, not by the number of nodes.
  EXPECT_EQ(worst.groups.size(), kMaxGroups);
  EXPECT_EQ(worst.other_groups, 24 + 1) << "24 tracked beyond the kept 8, and the untracked";
  EXPECT_EQ(worst.other_nodes, 5000 - 8 * 125);
  EXPECT_LT(ForPod(worst, 0)->ApproxBytes(), 8u << 10);

  const int64_t before = HeapInUse();
  Store store;
  for (int i = 0; i < 10000; i++) store.Record(ForPod(worst, i));
  const int64_t held = HeapInUse() - before;
  EXPECT_EQ(store.pending_count(), 10000u) << "the default cap holds them all";
  EXPECT_LE(store.bytes(), store.options().max_bytes);
  EXPECT_LE(held, static_cast<int64_t>(store.options().max_bytes));
  std::printf("10,000 pending records, 5,000 nodes: %.1f MiB held (%.1f MiB charged)\n",
              static_cast<double>(held) / (1 << 20),
              static_cast<double>(store.bytes()) / (1 << 20));
}

TEST(Store, ChargedBytesMatchTheHeapTheRecordsHold) {
  if (!HeapIsMeasurable()) GTEST_SKIP() << "malloc does not report through mallinfo2 here";
  const Attempt worst = WorstCaseAttempt(CloudNodeNames(5000));
  const int64_t before = HeapInUse();
  size_t charged = 0;
  {
    Store store;
    for (int i = 0; i < 2000; i++) store.Record(ForPod(worst, i));
    charged = store.bytes();
    const int64_t held = HeapInUse() - before;
    // Within a fifth either way of what malloc reports.
    EXPECT_GT(static_cast<int64_t>(charged) * 6 / 5, held);
    EXPECT_LT(static_cast<int64_t>(charged), held * 6 / 5);
  }
  EXPECT_LT(HeapInUse() - before, static_cast<int64_t>(charged) / 10) << "records leak";
}

TEST(Store, ACapBelowTheRecordsKeepsTheHeapUnderIt) {
  if (!HeapIsMeasurable()) GTEST_SKIP() << "malloc does not report through mallinfo2 here";
  const Attempt worst = WorstCaseAttempt(CloudNodeNames(5000));
  const int64_t before = HeapInUse();
  Store store(StoreOptions{4u << 20, 16});
  for (int i = 0; i < 10000; i++) store.Record(ForPod(worst, i));
  EXPECT_LT(store.pending_count(), 10000u);
  EXPECT_LE(store.bytes(), 4u << 20);
  EXPECT_LE(HeapInUse() - before, static_cast<int64_t>(4u << 20) * 2);
}

}  // namespace
}  // namespace berth::explain
