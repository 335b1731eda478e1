#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pkg/api/requests.h"
#include "pkg/api/types.h"
#include "pkg/framework/types.h"

namespace berth::framework {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// The test's own exact arithmetic, independent of the code under test.
using Exact = __int128;
int64_t Saturated(Exact value) {
  if (value > kMax) return kMax;
  if (value < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

// Amounts a hostile or careless object can carry, next to ordinary ones.
constexpr std::array<int64_t, 9> kAmounts = {
    0, 1, 250, int64_t{1} << 30, 1'000'000'000'000'000'000, int64_t{1} << 62, kMax - 1, kMax, 7};

// A pod with one container that states these cpu, memory, ephemeral-storage and example.com/gpu
// requests; its requests and non-zero requests computed as for a decoded pod.
PodInfoPtr PodWith(const std::string& uid, int64_t milli_cpu, int64_t memory, int64_t storage,
                   int64_t gpus) {
  api::Pod pod;
  pod.meta.name = uid;
  pod.meta.namespace_ = "default";
  pod.meta.uid = uid;
  api::Container container;
  container.name = "c";
  container.resources.requests.milli_cpu = milli_cpu;
  container.resources.requests.memory = memory;
  container.resources.requests.ephemeral_storage = storage;
  if (gpus != 0) container.resources.requests.Set("example.com/gpu", gpus);
  container.resources.has_cpu_request = true;
  container.resources.has_memory_request = true;
  pod.spec.containers.push_back(std::move(container));
  api::ComputePodRequests(pod);
  return std::make_shared<PodInfo>(std::make_shared<const api::Pod>(std::move(pod)));
}

TEST(NodeInfoTest, RemovingAPodUndoesASaturatedSum) {
  NodeInfo node;
  auto first = PodWith("first", kMax, kMax, kMax, kMax);
  auto second = PodWith("second", kMax, kMax, kMax, kMax);
  node.AddPod(first);
  node.AddPod(second);
  // The sum is beyond int64: it reads as the largest int64, which no allocatable exceeds.
  EXPECT_EQ(node.requested().memory, kMax);
  EXPECT_EQ(node.non_zero_memory(), kMax);
  EXPECT_EQ(node.non_zero_milli_cpu(), kMax);

  // The second pod still asks for everything: the node must not look empty.
  ASSERT_TRUE(node.RemovePod(*first->pod));
  EXPECT_EQ(node.requested().milli_cpu, kMax);
  EXPECT_EQ(node.requested().memory, kMax);
  EXPECT_EQ(node.requested().ephemeral_storage, kMax);
  EXPECT_EQ(node.requested().Get("example.com/gpu"), kMax);
  EXPECT_EQ(node.non_zero_milli_cpu(), kMax);
  EXPECT_EQ(node.non_zero_memory(), kMax);

  ASSERT_TRUE(node.RemovePod(*second->pod));
  EXPECT_EQ(node.requested(), api::ResourceList{});
  EXPECT_EQ(node.non_zero_milli_cpu(), 0);
  EXPECT_EQ(node.non_zero_memory(), 0);
}

// Seeded, so that a failure reproduces: random adds and removes of pods with extreme and
// ordinary requests. After every step each sum reads as the exact sum of the pods present,
// saturated into int64; once every pod has gone, each sum is exactly zero again.
TEST(NodeInfoTest, RandomAddsAndRemovesOfExtremeRequestsReturnToZero) {
  for (uint32_t seed = 1; seed <= 20; seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 random(seed);
    auto amount = [&] { return kAmounts[random() % kAmounts.size()]; };
    NodeInfo node;
    std::vector<PodInfoPtr> present;
    for (int step = 0; step < 400; step++) {
      if (present.empty() || random() % 3 != 0) {
        auto pod = PodWith("pod-" + std::to_string(step), amount(), amount(), amount(), amount());
        node.AddPod(pod);
        present.push_back(pod);
      } else {
        const size_t victim = random() % present.size();
        ASSERT_TRUE(node.RemovePod(*present[victim]->pod));
        present.erase(present.begin() + static_cast<std::ptrdiff_t>(victim));
      }
      Exact cpu = 0, memory = 0, storage = 0, gpus = 0, non_zero_cpu = 0, non_zero_memory = 0;
      for (const auto& pod : present) {
        cpu += pod->pod->requests.milli_cpu;
        memory += pod->pod->requests.memory;
        storage += pod->pod->requests.ephemeral_storage;
        gpus += pod->pod->requests.Get("example.com/gpu");
        non_zero_cpu += pod->pod->non_zero_milli_cpu;
        non_zero_memory += pod->pod->non_zero_memory;
      }
      ASSERT_EQ(node.requested().milli_cpu, Saturated(cpu)) << "step " << step;
      ASSERT_EQ(node.requested().memory, Saturated(memory)) << "step " << step;
      ASSERT_EQ(node.requested().ephemeral_storage, Saturated(storage)) << "step " << step;
      ASSERT_EQ(node.requested().Get("example.com/gpu"), Saturated(gpus)) << "step " << step;
      ASSERT_EQ(node.non_zero_milli_cpu(), Saturated(non_zero_cpu)) << "step " << step;
      ASSERT_EQ(node.non_zero_memory(), Saturated(non_zero_memory)) << "step " << step;
    }
    for (const auto& pod : present) ASSERT_TRUE(node.RemovePod(*pod->pod));
    EXPECT_TRUE(node.requested().IsZero());
    EXPECT_EQ(node.requested(), api::ResourceList{});
    EXPECT_EQ(node.non_zero_milli_cpu(), 0);
    EXPECT_EQ(node.non_zero_memory(), 0);
  }
}

TEST(NodeInfoTest, ACloneKeepsTheExactSums) {
  NodeInfo node;
  auto first = PodWith("first", 1, kMax, 0, 0);
  auto second = PodWith("second", 1, kMax, 0, 0);
  node.AddPod(first);
  node.AddPod(second);
  auto clone = node.Clone();
  ASSERT_TRUE(clone->RemovePod(*first->pod));
  EXPECT_EQ(clone->requested().memory, kMax);
  EXPECT_EQ(clone->requested().milli_cpu, 1);
  // The original is untouched.
  EXPECT_EQ(node.requested().milli_cpu, 2);
}

}  // namespace
}  // namespace berth::framework
