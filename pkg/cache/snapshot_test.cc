#include "pkg/cache/snapshot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/testing/objects.h"

namespace berth::cache {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;

api::PodPtr AntiAffinityPod(const std::string& name, const std::string& node) {
  PodBuilder b(name);
  b.Container("100m", "").Node(node);
  api::Affinity affinity;
  affinity.pod_anti_affinity = api::PodAffinity{};
  affinity.pod_anti_affinity->required.push_back(
      api::PodAffinityTerm{api::LabelSelector{}, {}, "kubernetes.io/hostname", {}, {}, {}});
  b.pod().spec.affinity = affinity;
  return b.Build();
}

std::vector<std::string> Names(const std::vector<framework::NodeInfoPtr>& infos) {
  std::vector<std::string> names;
  names.reserve(infos.size());
  for (const auto& info : infos) {
    names.push_back(info->name());
  }
  return names;
}

TEST(SnapshotTest, FromObjects) {
  const std::vector<api::NodePtr> nodes = {
      NodeBuilder("n1").Capacity("4", "8Gi").Image({"img:a", "img@sha"}, 100).Build(),
      NodeBuilder("n2").Capacity("4", "8Gi").Image({"img:a"}, 100).Image({"img:b"}, 5).Build(),
      NodeBuilder("n3").Capacity("4", "8Gi").Build(),
  };
  const std::vector<api::PodPtr> pods = {
      PodBuilder("p1").Container("1", "1Gi").Node("n1").Build(),
      PodBuilder("p2").Container("500m", "").Node("n1").Build(),
      AntiAffinityPod("p3", "n2"),
      PodBuilder("orphan").Container("1", "").Node("gone").Build(),
  };
  Snapshot snapshot(pods, nodes);

  EXPECT_EQ(snapshot.NumNodes(), 3u);
  EXPECT_EQ(Names(snapshot.List()), (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(Names(snapshot.HavePodsWithRequiredAntiAffinityList()),
            (std::vector<std::string>{"n2"}));
  EXPECT_EQ(Names(snapshot.HavePodsWithAffinityList()), (std::vector<std::string>{"n2"}));

  auto n1 = snapshot.Get("n1");
  ASSERT_NE(n1, nullptr);
  EXPECT_EQ(n1->requested().milli_cpu, 1500);
  EXPECT_EQ(n1->pods().size(), 2u);
  EXPECT_EQ(snapshot.Get("gone"), nullptr);
  EXPECT_EQ(snapshot.Get("n9"), nullptr);

  EXPECT_EQ(n1->image_states().at("img:a").num_nodes, 2);
  EXPECT_EQ(n1->image_states().at("img:a").size_bytes, 100);
  EXPECT_EQ(n1->image_states().at("img@sha").num_nodes, 1);
  EXPECT_EQ(snapshot.Get("n2")->image_states().at("img:b").num_nodes, 1);
  EXPECT_TRUE(snapshot.Get("n3")->image_states().empty());
}

TEST(SnapshotTest, EmptySnapshot) {
  Snapshot snapshot;
  EXPECT_EQ(snapshot.NumNodes(), 0u);
  EXPECT_EQ(snapshot.generation(), 0);
  EXPECT_TRUE(snapshot.List().empty());
  EXPECT_EQ(snapshot.Get("n1"), nullptr);
}

}  // namespace
}  // namespace berth::cache
