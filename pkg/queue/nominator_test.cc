#include "pkg/queue/nominator.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pkg/queue/scheduling_queue.h"
#include "pkg/util/clock.h"
#include "test/testing/objects.h"

namespace berth::queue {
namespace {

using testing::PodBuilder;

std::vector<std::string> Names(const std::vector<framework::PodInfoPtr>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(p->pod->meta.name);
  return out;
}

api::PodPtr NominatedPod(const std::string& name, const std::string& node) {
  PodBuilder b(name);
  b.pod().status.nominated_node_name = node;
  return b.Build();
}

TEST(NominatorTest, AddOverridesClearsAndFallsBackToStatus) {
  Nominator n;
  auto a = std::make_shared<framework::PodInfo>(PodBuilder("a").Build());
  n.AddNominatedPod(a, "n1");
  EXPECT_EQ(Names(n.NominatedPodsForNode("n1")), (std::vector<std::string>{"a"}));
  EXPECT_EQ(n.NominatedNodeFor(a->pod->meta.uid), "n1");

  // A new nomination replaces the old one: never two entries for one pod.
  n.AddNominatedPod(a, "n2");
  EXPECT_TRUE(n.NominatedPodsForNode("n1").empty());
  EXPECT_EQ(Names(n.NominatedPodsForNode("n2")), (std::vector<std::string>{"a"}));

  // An explicit empty node clears it.
  n.AddNominatedPod(a, "");
  EXPECT_TRUE(n.NominatedPodsForNode("n2").empty());
  EXPECT_EQ(n.NominatedNodeFor(a->pod->meta.uid), "");

  // No node given: the pod's status decides.
  n.AddNominatedPod(std::make_shared<framework::PodInfo>(NominatedPod("b", "n3")));
  EXPECT_EQ(Names(n.NominatedPodsForNode("n3")), (std::vector<std::string>{"b"}));
  n.AddNominatedPod(a);
  EXPECT_EQ(n.NominatedNodeFor(a->pod->meta.uid), "");
}

TEST(NominatorTest, BoundPodsAreNotNominated) {
  Nominator n;
  n.AddNominatedPod(std::make_shared<framework::PodInfo>(PodBuilder("a").Node("n0").Build()), "n1");
  EXPECT_TRUE(n.NominatedPodsForNode("n1").empty());
}

TEST(NominatorTest, LookupRejectsGoneBoundOrReplacedPods) {
  api::PodPtr current;
  Nominator n([&](const std::string&, const std::string&) { return current; });
  auto a = std::make_shared<framework::PodInfo>(PodBuilder("a").Build());

  n.AddNominatedPod(a, "n1");  // Gone.
  EXPECT_TRUE(n.NominatedPodsForNode("n1").empty());
  current = PodBuilder("a").Node("n0").Build();  // Bound meanwhile.
  n.AddNominatedPod(a, "n1");
  EXPECT_TRUE(n.NominatedPodsForNode("n1").empty());
  current = PodBuilder("a").Uid("another-uid").Build();  // Recreated under the same name.
  n.AddNominatedPod(a, "n1");
  EXPECT_TRUE(n.NominatedPodsForNode("n1").empty());
  current = PodBuilder("a").Build();
  n.AddNominatedPod(a, "n1");
  EXPECT_EQ(Names(n.NominatedPodsForNode("n1")), (std::vector<std::string>{"a"}));
}

TEST(NominatorTest, UpdateKeepsInMemoryNominationUntilStatusSpeaks) {
  Nominator n;
  api::PodPtr v1 = PodBuilder("a").Build();
  n.AddNominatedPod(std::make_shared<framework::PodInfo>(v1), "n1");

  // Neither version names a node: the in-memory nomination stays, with the new pod object.
  api::PodPtr v2 = PodBuilder("a").Label("k", "v").Build();
  n.UpdateNominatedPod(*v1, std::make_shared<framework::PodInfo>(v2));
  auto pods = n.NominatedPodsForNode("n1");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]->pod, v2);

  // The status now names another node: it wins.
  api::PodPtr v3 = NominatedPod("a", "n2");
  n.UpdateNominatedPod(*v2, std::make_shared<framework::PodInfo>(v3));
  EXPECT_TRUE(n.NominatedPodsForNode("n1").empty());
  EXPECT_EQ(Names(n.NominatedPodsForNode("n2")), (std::vector<std::string>{"a"}));

  // The status drops the node: the nomination is gone.
  n.UpdateNominatedPod(*v3, std::make_shared<framework::PodInfo>(v2));
  EXPECT_TRUE(n.NominatedPodsForNode("n2").empty());
}

TEST(NominatorTest, DeleteRemovesNomination) {
  Nominator n;
  api::PodPtr a = PodBuilder("a").Build();
  api::PodPtr b = PodBuilder("b").Build();
  n.AddNominatedPod(std::make_shared<framework::PodInfo>(a), "n1");
  n.AddNominatedPod(std::make_shared<framework::PodInfo>(b), "n1");
  n.DeleteNominatedPodIfExists(*a);
  EXPECT_EQ(Names(n.NominatedPodsForNode("n1")), (std::vector<std::string>{"b"}));
  n.DeleteNominatedPodIfExists(*a);  // No-op.
  n.DeleteNominatedPodIfExists(*b);
  EXPECT_TRUE(n.NominatedPodsForNode("n1").empty());
}

TEST(NominatorTest, QueueTracksNominatedNodeNameOnAddUpdateDelete) {
  SchedulingQueue q(QueueOptions{}, nullptr, nullptr, {}, std::make_shared<util::FakeClock>());
  api::PodPtr v1 = NominatedPod("a", "n1");
  q.Add(v1);
  EXPECT_EQ(Names(q.nominator().NominatedPodsForNode("n1")), (std::vector<std::string>{"a"}));

  api::PodPtr v2 = NominatedPod("a", "n2");
  q.Update(v1, v2);
  EXPECT_TRUE(q.nominator().NominatedPodsForNode("n1").empty());
  EXPECT_EQ(Names(q.nominator().NominatedPodsForNode("n2")), (std::vector<std::string>{"a"}));

  // The nomination follows the pod while it is in flight too.
  framework::QueuedPodInfoPtr pinfo = q.Pop();
  api::PodPtr v3 = NominatedPod("a", "n3");
  q.Update(v2, v3);
  EXPECT_EQ(Names(q.nominator().NominatedPodsForNode("n3")), (std::vector<std::string>{"a"}));

  q.Delete(*v3);
  EXPECT_TRUE(q.nominator().NominatedPodsForNode("n3").empty());
  q.Done(pinfo->pod().meta.uid);
}

}  // namespace
}  // namespace berth::queue
