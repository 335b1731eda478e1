#include "pkg/plugins/imagelocality/image_locality.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "test/testing/batch.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::imagelocality {
namespace {

using ::testing::ElementsAre;
using testing::NodeBuilder;
using testing::PodBuilder;

struct Image {
  std::vector<std::string> names;
  int64_t size_mb = 0;
};

framework::NodeInfoPtr ImageNode(const std::string& name, const std::vector<Image>& images) {
  NodeBuilder builder(name);
  builder.Capacity("4", "8Gi");
  for (const auto& image : images) {
    builder.Image(image.names, image.size_mb * kMB);
  }
  return builder.Info();
}

// Upstream's test nodes.
framework::NodeInfoPtr Node40_300_2000(const std::string& name) {
  return ImageNode(name, {{{"gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"}, 40},
                          {{"gcr.io/300:latest", "gcr.io/300:v1"}, 300},
                          {{"gcr.io/2000:latest"}, 2000}});
}
framework::NodeInfoPtr Node250_10(const std::string& name) {
  return ImageNode(name,
                   {{{"gcr.io/250:latest"}, 250}, {{"gcr.io/10:latest", "gcr.io/10:v1"}, 10}});
}
framework::NodeInfoPtr Node600_40_900(const std::string& name) {
  return ImageNode(
      name,
      {{{"gcr.io/600:latest"}, 600}, {{"gcr.io/40:latest"}, 40}, {{"gcr.io/900:latest"}, 900}});
}
framework::NodeInfoPtr Node300_600_900(const std::string& name) {
  return ImageNode(
      name,
      {{{"gcr.io/300:latest"}, 300}, {{"gcr.io/600:latest"}, 600}, {{"gcr.io/900:latest"}, 900}});
}
framework::NodeInfoPtr Node4000_30(const std::string& name) {
  return ImageNode(name, {{{"gcr.io/4000:latest"}, 4000}, {{"gcr.io/30:latest"}, 30}});
}
framework::NodeInfoPtr Node20_30_40(const std::string& name) {
  return ImageNode(
      name, {{{"gcr.io/20:latest"}, 20}, {{"gcr.io/30:latest"}, 30}, {{"gcr.io/40:latest"}, 40}});
}
framework::NodeInfoPtr NodeWithoutImages(const std::string& name) { return ImageNode(name, {}); }

api::PodPtr PodWithImages(const std::vector<std::string>& images,
                          const std::vector<std::string>& init_images = {}) {
  PodBuilder builder("pod");
  for (const auto& image : images) {
    builder.Container("", "").Image(image);
  }
  for (const auto& image : init_images) {
    builder.InitContainer("", "");
    builder.pod().spec.init_containers.back().image = image;
  }
  return builder.Build();
}

// What the snapshot does: every reported name maps to the image's size and the number of nodes
// reporting that name.
void FillImageStates(const std::vector<framework::NodeInfoPtr>& nodes) {
  std::unordered_map<std::string, std::set<std::string>> nodes_by_image;
  for (const auto& info : nodes) {
    for (const auto& image : info->node()->status.images) {
      for (const auto& name : image.names) {
        nodes_by_image[name].insert(info->name());
      }
    }
  }
  for (const auto& info : nodes) {
    std::unordered_map<std::string, framework::ImageStateSummary> states;
    for (const auto& image : info->node()->status.images) {
      for (const auto& name : image.names) {
        states[name] = {image.size_bytes, static_cast<int>(nodes_by_image[name].size())};
      }
    }
    info->SetImageStates(std::move(states));
  }
}

std::vector<int64_t> Scores(const api::Pod& pod, const std::vector<framework::NodeInfoPtr>& nodes) {
  testing::FakeHandle handle(nodes);
  auto plugin = std::dynamic_pointer_cast<ImageLocality>(New(nullptr, handle));
  EXPECT_NE(plugin, nullptr);
  framework::CycleState state;
  EXPECT_TRUE(plugin->PreScore(state, pod, testing::NodePointers(nodes)).IsSuccess());
  std::vector<int64_t> scores;
  for (const auto& node : nodes) {
    int64_t score = -1;
    EXPECT_TRUE(plugin->Score(state, pod, *node, &score).IsSuccess());
    scores.push_back(score);
  }
  return scores;
}

// Each upstream case runs twice: with image states filled as the snapshot does, and without
// them (spread computed from the nodes' status).
class ImageLocalityScore : public ::testing::TestWithParam<bool> {
 protected:
  std::vector<int64_t> Run(const api::Pod& pod, const std::vector<framework::NodeInfoPtr>& nodes) {
    if (GetParam()) {
      FillImageStates(nodes);
    }
    return Scores(pod, nodes);
  }
};

TEST_P(ImageLocalityScore, PrefersTheLargerImageSpreadOnTwoNodes) {
  // node1: 40MB/2 < 23MB -> 0; node2: 100 * (250MB/2 - 23MB) / (2000MB - 23MB) = 5.
  EXPECT_THAT(Run(*PodWithImages({"gcr.io/40", "gcr.io/250"}),
                  {Node40_300_2000("node1"), Node250_10("node2")}),
              ElementsAre(0, 5));
}

TEST_P(ImageLocalityScore, PrefersTheNodeWithBothImages) {
  // node1: 100 * ((40MB + 300MB)/2 - 23MB) / (2000MB - 23MB) = 7.
  EXPECT_THAT(Run(*PodWithImages({"gcr.io/40", "gcr.io/300"}),
                  {Node40_300_2000("node1"), Node250_10("node2")}),
              ElementsAre(7, 0));
}

TEST_P(ImageLocalityScore, ClampsAtTheMaxThreshold) {
  // node1: 4000MB/2 >= 1000MB * 2 -> 100; node2: 10MB/2 < 23MB -> 0.
  EXPECT_THAT(Run(*PodWithImages({"gcr.io/10", "gcr.io/4000"}),
                  {Node4000_30("node1"), Node250_10("node2")}),
              ElementsAre(100, 0));
  // With a third node the spread drops: 100 * (4000MB/3 - 23MB) / (2000MB - 23MB) = 66.
  EXPECT_THAT(Run(*PodWithImages({"gcr.io/10", "gcr.io/4000"}),
                  {Node4000_30("node1"), Node250_10("node2"), NodeWithoutImages("node3")}),
              ElementsAre(66, 0, 0));
}

TEST_P(ImageLocalityScore, MultipleLargeImages) {
  // node1: 100 * (600MB*2/3 + 900MB*2/3 - 23MB) / (3000MB - 23MB) = 32;
  // node2: 100 * (300MB/3 + 600MB*2/3 + 900MB*2/3 - 23MB) / (3000MB - 23MB) = 36.
  EXPECT_THAT(Run(*PodWithImages({"gcr.io/300", "gcr.io/600", "gcr.io/900"}),
                  {Node600_40_900("node1"), Node300_600_900("node2"), NodeWithoutImages("node3")}),
              ElementsAre(32, 36, 0));
}

TEST_P(ImageLocalityScore, MultipleSmallImages) {
  // node1: 100 * (30MB/2 + 40MB - 23MB) / (2000MB - 23MB) = 1; node2: 30MB/2 < 23MB -> 0.
  EXPECT_THAT(Run(*PodWithImages({"gcr.io/30", "gcr.io/40"}),
                  {Node20_30_40("node1"), Node4000_30("node2")}),
              ElementsAre(1, 0));
}

TEST_P(ImageLocalityScore, IncludesInitContainers) {
  // node1: 100 * (300MB/2 - 23MB) / (2000MB - 23MB) = 6; node2: 30MB/2 < 23MB -> 0.
  EXPECT_THAT(Run(*PodWithImages({"gcr.io/30"}, {"gcr.io/300"}),
                  {Node40_300_2000("node1"), Node20_30_40("node2")}),
              ElementsAre(6, 0));
}

TEST_P(ImageLocalityScore, SmallImageOnEveryNodeScoresZero) {
  EXPECT_THAT(Run(*PodWithImages({"gcr.io/20"}), {Node20_30_40("node1"), Node20_30_40("node2")}),
              ElementsAre(0, 0));
}

TEST_P(ImageLocalityScore, LargeImageOnAllNodesBeatsLargeImageOnOneNode) {
  // Everywhere: 100 * (500MB - 23MB) / (1000MB - 23MB) = 48 on each node holding it.
  auto everywhere = [](const std::string& name) {
    return ImageNode(name, {{{"registry.io/big:v1"}, 500}});
  };
  EXPECT_THAT(
      Run(*PodWithImages({"registry.io/big:v1"}), {everywhere("node1"), everywhere("node2")}),
      ElementsAre(48, 48));
  // On one node of two: 100 * (250MB - 23MB) / (1000MB - 23MB) = 23.
  EXPECT_THAT(Run(*PodWithImages({"registry.io/big:v1"}),
                  {everywhere("node1"), NodeWithoutImages("node2")}),
              ElementsAre(23, 0));
}

TEST_P(ImageLocalityScore, ImagesOfHugeReportedSizesScoreTheMaximum) {
  // Sizes as large as an int64 holds, on every node (spread 1): each scaled size and their sum
  // are past any threshold, so the node scores 100, not a wrapped-around sum.
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  auto node = [&](const std::string& name) {
    return NodeBuilder(name)
        .Capacity("4", "8Gi")
        .Image({"registry.io/a:v1"}, kHuge)
        .Image({"registry.io/b:v1"}, kHuge - 1)
        .Image({"registry.io/c:v1"}, int64_t{6'000'000'000'000'000'000})
        .Info();
  };
  EXPECT_THAT(Run(*PodWithImages({"registry.io/a:v1"}), {node("node1"), node("node2")}),
              ElementsAre(100, 100));
  EXPECT_THAT(
      Run(*PodWithImages({"registry.io/a:v1", "registry.io/b:v1"}), {node("node1"), node("node2")}),
      ElementsAre(100, 100));
  EXPECT_THAT(
      Run(*PodWithImages({"registry.io/c:v1", "registry.io/c:v1"}), {node("node1"), node("node2")}),
      ElementsAre(100, 100));
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutSnapshotImageStates, ImageLocalityScore, ::testing::Bool());

TEST(ImageLocality, UsesSnapshotImageStatesWhenPresent) {
  // The snapshot says the image is on both nodes even though node2's status (not yet refreshed
  // in this copy) lists nothing: the snapshot is the source of truth.
  auto node1 = ImageNode("node1", {{{"gcr.io/big:latest"}, 1000}});
  auto node2 = NodeWithoutImages("node2");
  node1->SetImageStates({{"gcr.io/big:latest", {1000 * kMB, 2}}});
  node2->SetImageStates({{"gcr.io/big:latest", {1000 * kMB, 2}}});
  // 100 * (1000MB - 23MB) / (1000MB - 23MB) on both.
  EXPECT_THAT(Scores(*PodWithImages({"gcr.io/big"}), {node1, node2}), ElementsAre(100, 100));
}

TEST(ImageLocality, KnownEmptySnapshotStatesWinOverAStaleStatus) {
  // The snapshot filled image states and found the image nowhere; this copy's status still lists
  // it. The snapshot is the source of truth, so no node scores.
  auto node1 = ImageNode("node1", {{{"gcr.io/big:latest"}, 1000}});
  auto node2 = NodeWithoutImages("node2");
  node1->SetImageStates({});
  node2->SetImageStates({});
  EXPECT_THAT(Scores(*PodWithImages({"gcr.io/big"}), {node1, node2}), ElementsAre(0, 0));
}

TEST(ImageLocality, NodeImageNamesAreNormalizedWithoutSnapshotStates) {
  auto node1 = ImageNode("node1", {{{"registry.io/untagged"}, 500}});
  EXPECT_THAT(Scores(*PodWithImages({"registry.io/untagged:latest"}), {node1}), ElementsAre(48));
}

TEST(ImageLocality, ScoreWithoutPreScore) {
  std::vector<framework::NodeInfoPtr> nodes = {Node40_300_2000("node1"), Node250_10("node2")};
  testing::FakeHandle handle(nodes);
  ImageLocality plugin(handle);
  framework::CycleState state;
  int64_t score = -1;
  ASSERT_TRUE(plugin.Score(state, *PodWithImages({"gcr.io/40", "gcr.io/250"}), *nodes[1], &score)
                  .IsSuccess());
  EXPECT_EQ(score, 5);
}

TEST(ImageLocality, CalculatePriorityClamps) {
  EXPECT_EQ(CalculatePriority(0, 1), 0);
  EXPECT_EQ(CalculatePriority(kMinThreshold, 1), 0);
  EXPECT_EQ(CalculatePriority(kMaxContainerThreshold, 1), 100);
  EXPECT_EQ(CalculatePriority(5 * kMaxContainerThreshold, 2), 100);
  EXPECT_EQ(CalculatePriority(0, 0), 0);
  EXPECT_EQ(ScaledImageScore(300 * kMB, 1, 3), 100 * kMB);
  EXPECT_EQ(ScaledImageScore(300 * kMB, 1, 0), 0);
  // 2^63 - 1 is 2^63 as a double, past the int64 range: the scaled size saturates.
  EXPECT_EQ(ScaledImageScore(std::numeric_limits<int64_t>::max(), 3, 3),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(
      CalculatePriority(std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()),
      0);
}

TEST(ImageLocality, NormalizedImageName) {
  EXPECT_EQ(NormalizedImageName("root"), "root:latest");
  EXPECT_EQ(NormalizedImageName("gcr.io:5000/root"), "gcr.io:5000/root:latest");
  EXPECT_EQ(NormalizedImageName("root:tag"), "root:tag");
  const std::string digest =
      "root@sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2";
  EXPECT_EQ(NormalizedImageName(digest), digest);
}

TEST(ImageLocality, FactoryRejectsArgs) {
  testing::FakeHandle handle;
  EXPECT_NE(New(nullptr, handle), nullptr);
  EXPECT_NE(New({{"apiVersion", "kubescheduler.config.k8s.io/v1"}, {"kind", "X"}}, handle),
            nullptr);
  EXPECT_THROW(New({{"weight", 1}}, handle), std::invalid_argument);
  EXPECT_EQ(New(nullptr, handle)->Name(), "ImageLocality");
}

TEST_P(ImageLocalityScore, ScoreNodesGivesEveryNodeScoresResult) {
  std::vector<framework::NodeInfoPtr> nodes = {
      Node40_300_2000("a"), Node250_10("b"),   Node600_40_900("c"),   Node300_600_900("d"),
      Node4000_30("e"),     Node20_30_40("f"), NodeWithoutImages("g")};
  if (GetParam()) FillImageStates(nodes);
  auto pod = PodWithImages({"gcr.io/40", "gcr.io/300", "gcr.io/900"}, {"gcr.io/30"});
  testing::FakeHandle handle(nodes);
  auto plugin = std::dynamic_pointer_cast<ImageLocality>(New(nullptr, handle));
  ASSERT_NE(plugin, nullptr);
  testing::ExpectScoreNodesMatchesScoreWithAndWithoutPreScore(*plugin, *plugin, *pod, nodes);
}

}  // namespace
}  // namespace berth::plugins::imagelocality
