// The topology placer inside a real framework runtime whose Filter and Score plugin is
// NodeResourcesFit (with InterPodAffinity where a test asks for it), on nodes and pods whose
// amounts are near the int64 limit, and on a gang whose members must not share a node.

#include "pkg/plugins/coscheduling/topology_placement.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>

#include "pkg/framework/runtime/framework.h"
#include "pkg/plugins/coscheduling/coscheduling.h"
#include "pkg/plugins/interpodaffinity/interpodaffinity.h"
#include "pkg/plugins/noderesources/fit.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::coscheduling {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr char kRack[] = "topology.kubernetes.io/rack";

class TestBinder : public framework::BindPlugin {
 public:
  std::string_view Name() const override { return "TestBinder"; }
  framework::Status Bind(framework::CycleState&, const api::Pod&, const std::string&) override {
    return {};
  }
};

// A node of `rack` whose allocatable cpu, memory and pod slots are all `amount`.
framework::NodeInfoPtr HugeNode(const std::string& name, const std::string& rack, int64_t amount) {
  NodeBuilder b(name);
  b.Label(kRack, rack);
  auto& a = b.node().status.allocatable;
  a.milli_cpu = amount;
  a.memory = amount;
  a.pods = amount;
  b.node().status.capacity = a;
  return b.Info();
}

class TopologyPlacementTest : public ::testing::Test {
 protected:
  // `affinity` adds InterPodAffinity, whose PreFilter extension must be told of each member the
  // simulation has placed.
  void Build(std::vector<framework::NodeInfoPtr> nodes, bool affinity = false) {
    lister_ = std::make_unique<testing::FakeLister>(std::move(nodes));
    // Coscheduling is the profile's queue sort; the placement leaves its PreFilter out.
    registry_["Coscheduling"] = New;
    registry_[std::string(noderesources::kName)] = noderesources::New;
    registry_["TestBinder"] = [](const nlohmann::json&, framework::Handle&) {
      return std::make_shared<TestBinder>();
    };
    config::Profile profile;
    profile.plugins.multi_point.enabled = {
        {"Coscheduling", 0}, {std::string(noderesources::kName), 0}, {"TestBinder", 0}};
    if (affinity) {
      registry_[std::string(interpodaffinity::kName)] = interpodaffinity::New;
      profile.plugins.multi_point.enabled.push_back({std::string(interpodaffinity::kName), 0});
    }
    framework::runtime::FrameworkDeps deps;
    deps.snapshot = lister_.get();
    deps.informer_factory = &informers_;
    deps.recorder = &recorder_;
    deps.parallelizer = &parallelizer_;
    deps.nominator = &nominator_;
    deps.waiting_pods = std::make_shared<framework::runtime::WaitingPods>();
    fwk_ = std::make_unique<framework::runtime::Framework>(registry_, profile, deps);
  }

  // Places a gang of `size` pods, each requesting `amount` of cpu and of memory, in one rack.
  PlacementOutcome Place(int size, int64_t amount) {
    std::vector<api::PodPtr> pods;
    for (int i = 0; i < size; i++) {
      pods.push_back(
          PodBuilder("p-" + std::to_string(i), "ml").ContainerRequesting(amount, amount).Build());
    }
    return PlaceGang(std::move(pods));
  }

  // Places `pods`, all needed, as one gang in one rack.
  PlacementOutcome PlaceGang(std::vector<api::PodPtr> pods) {
    topology_.keys = {kRack};
    PlacementRequest request;
    request.topology = &topology_;
    request.needed = static_cast<int32_t>(pods.size());
    request.pending = std::move(pods);
    request.ignored_plugin = "Coscheduling";
    request.gang_text = "pod group \"ml/g\"";
    TopologyPlacer placer(*fwk_, PlacementWeights{});
    return placer.Place(request, lister_->List());
  }

  api::PodGroupTopology topology_;
  framework::runtime::Registry registry_;
  std::unique_ptr<testing::FakeLister> lister_;
  informer::SharedInformerFactory informers_{nullptr};
  testing::FakeRecorder recorder_;
  testing::InlineParallelizer parallelizer_;
  testing::NoNominations nominator_;
  std::unique_ptr<framework::runtime::Framework> fwk_;
};

// Two nodes of int64-max pod slots hold more than int64 between them: a rack of them has room for
// a gang, not none.
TEST_F(TopologyPlacementTest, AGangFitsARackWhoseNodesTogetherHoldMoreThanInt64) {
  Build({HugeNode("a1", "a", kMax), HugeNode("a2", "a", kMax),
         NodeBuilder("b1").Label(kRack, "b").Capacity("4", "16Gi").Info()});
  // Each pod takes most of one huge node: the two go to different nodes of rack "a".
  PlacementOutcome outcome = Place(2, kMax - 10);
  ASSERT_TRUE(outcome.plan.has_value()) << outcome.failure;
  EXPECT_EQ(outcome.plan->domain, "a");
  ASSERT_EQ(outcome.plan->node_of.size(), 2u);
  std::set<std::string> used;
  for (const auto& [uid, node] : outcome.plan->node_of) {
    EXPECT_TRUE(outcome.plan->nodes.contains(node)) << node;
    used.insert(node);
  }
  EXPECT_EQ(used, (std::set<std::string>{"a1", "a2"}));
}

// Three pods of near int64-max each do not fit two such nodes, whatever their sums come to.
TEST_F(TopologyPlacementTest, AGangOfHugePodsMoreThanARackHoldsIsNotReportedAsFitting) {
  Build({HugeNode("a1", "a", kMax), HugeNode("a2", "a", kMax), HugeNode("b1", "b", kMax),
         HugeNode("b2", "b", kMax)});
  PlacementOutcome outcome = Place(3, kMax - 10);
  EXPECT_FALSE(outcome.plan.has_value());
  EXPECT_NE(outcome.failure.find("fits in no single topology domain"), std::string::npos)
      << outcome.failure;
}

// Many nodes of int64-max pod slots in one rack, and a gang too large for any one node: it fits
// across the rack's nodes, never split over racks.
TEST_F(TopologyPlacementTest, AGangSpreadOverARackOfHugeNodesStaysInThatRack) {
  std::vector<framework::NodeInfoPtr> nodes;
  for (int i = 0; i < 5; i++) nodes.push_back(HugeNode("a" + std::to_string(i), "a", kMax));
  for (int i = 0; i < 3; i++) nodes.push_back(HugeNode("b" + std::to_string(i), "b", kMax));
  Build(std::move(nodes));
  // Half of int64 each: two fit a node, so rack "b" (3 nodes) holds 6 and rack "a" 10.
  PlacementOutcome outcome = Place(8, kMax / 2);
  ASSERT_TRUE(outcome.plan.has_value()) << outcome.failure;
  EXPECT_EQ(outcome.plan->domain, "a");
  ASSERT_EQ(outcome.plan->node_of.size(), 8u);
  for (const auto& [uid, node] : outcome.plan->node_of) EXPECT_EQ(node[0], 'a') << node;
}

// Members that must not share a node (required pod anti-affinity on the hostname) each see the
// members placed before them: a rack of two nodes cannot take a gang of three, a rack of three
// takes it one pod per node. Their requests are too small to tell the nodes apart by score, so a
// member that did not see the earlier ones would join them on the first node.
TEST_F(TopologyPlacementTest, AGangWhosePodsRepelEachOtherTakesOneNodeEachInOneRack) {
  std::vector<framework::NodeInfoPtr> nodes;
  for (int i = 0; i < 3; i++) {
    nodes.push_back(
        NodeBuilder("a" + std::to_string(i)).Label(kRack, "a").Capacity("64", "256Gi").Info());
  }
  // Rack "b" has less room, so it is the tighter one and tried first.
  for (int i = 0; i < 2; i++) {
    nodes.push_back(
        NodeBuilder("b" + std::to_string(i)).Label(kRack, "b").Capacity("8", "32Gi").Info());
  }
  Build(std::move(nodes), /*affinity=*/true);
  api::PodAffinityTerm apart;
  api::Requirement train;
  train.key = "app";
  train.op = api::SelectorOperator::kIn;
  train.values = {"train"};
  apart.label_selector = api::LabelSelector{{train}};
  apart.topology_key = "kubernetes.io/hostname";
  std::vector<api::PodPtr> pods;
  for (int i = 0; i < 3; i++) {
    PodBuilder b("p-" + std::to_string(i), "ml");
    b.Label("app", "train").ContainerRequesting(1, 1);
    b.pod().spec.affinity.emplace().pod_anti_affinity.emplace().required = {apart};
    pods.push_back(b.Build());
  }
  PlacementOutcome outcome = PlaceGang(std::move(pods));
  ASSERT_TRUE(outcome.plan.has_value()) << outcome.failure;
  EXPECT_EQ(outcome.plan->domain, "a");
  std::set<std::string> used;
  for (const auto& [uid, node] : outcome.plan->node_of) used.insert(node);
  EXPECT_EQ(used, (std::set<std::string>{"a0", "a1", "a2"}));
}

}  // namespace
}  // namespace berth::plugins::coscheduling
