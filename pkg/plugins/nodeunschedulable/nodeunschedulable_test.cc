#include "pkg/plugins/nodeunschedulable/nodeunschedulable.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test/testing/batch.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::nodeunschedulable {
namespace {

using framework::Code;
using framework::QueueingHint;

std::shared_ptr<NodeUnschedulable> NewPlugin() {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<NodeUnschedulable>(New(nullptr, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

api::Toleration UnschedulableToleration(api::TaintEffect effect = api::TaintEffect::kNoSchedule) {
  api::Toleration t;
  t.key = std::string(kTaintNodeUnschedulable);
  t.op = api::TolerationOperator::kExists;
  t.effect = effect;
  return t;
}

TEST(NodeUnschedulableTest, Filter) {
  struct Case {
    std::string name;
    api::PodPtr pod;
    bool unschedulable;
    bool want_success;
  };
  const Case cases[] = {
      {"schedulable node", testing::PodBuilder("p").Build(), false, true},
      {"unschedulable node, no toleration", testing::PodBuilder("p").Build(), true, false},
      {"unschedulable node, pod tolerates the taint",
       testing::PodBuilder("p").Toleration(UnschedulableToleration()).Build(), true, true},
      {"unschedulable node, toleration with empty effect",
       testing::PodBuilder("p").Toleration(UnschedulableToleration(api::TaintEffect::kAll)).Build(),
       true, true},
      {"unschedulable node, toleration for another effect",
       testing::PodBuilder("p")
           .Toleration(UnschedulableToleration(api::TaintEffect::kNoExecute))
           .Build(),
       true, false},
  };
  auto plugin = NewPlugin();
  framework::CycleState state;
  for (const Case& c : cases) {
    testing::NodeBuilder node("n1");
    if (c.unschedulable) node.Unschedulable();
    framework::Status status = plugin->Filter(state, *c.pod, *node.Info());
    if (c.want_success) {
      EXPECT_TRUE(status.IsSuccess()) << c.name;
    } else {
      EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable) << c.name;
      EXPECT_EQ(status.Message(), "node(s) were unschedulable") << c.name;
    }
  }
}

TEST(NodeUnschedulableTest, FilterNodesMatchesFilter) {
  const std::vector<framework::NodeInfoPtr> nodes = {
      testing::NodeBuilder("a").Info(), testing::NodeBuilder("b").Unschedulable().Info(),
      testing::NodeBuilder("c").Info(), testing::NodeBuilder("d").Unschedulable().Info()};
  auto plugin = NewPlugin();
  framework::CycleState state;
  for (const auto& pod : {testing::PodBuilder("p").Build(),
                          testing::PodBuilder("p").Toleration(UnschedulableToleration()).Build()}) {
    SCOPED_TRACE(pod->spec.tolerations.size());
    testing::ExpectFilterNodesMatchesFilter(*plugin, state, *pod, nodes);
  }
}

TEST(NodeUnschedulableTest, EventsToRegister) {
  auto events = NewPlugin()->EventsToRegister();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kNode);
  EXPECT_EQ(events[0].event.actions, framework::kAdd | framework::kUpdateNodeTaint |
                                         framework::kUpdateNodeSpecUnschedulable);
  EXPECT_EQ(events[1].event.resource, framework::EventResource::kUnscheduledPod);
  EXPECT_EQ(events[1].event.actions, framework::kUpdatePodTolerations);
}

TEST(NodeUnschedulableTest, NodeChangeHint) {
  api::PodPtr pod = testing::PodBuilder("p").Build();
  api::NodePtr schedulable = testing::NodeBuilder("n1").Build();
  api::NodePtr cordoned = testing::NodeBuilder("n1").Unschedulable().Build();
  struct Case {
    std::string name;
    api::NodePtr old_node;
    api::NodePtr new_node;
    QueueingHint want;
  };
  const Case cases[] = {
      {"schedulable node added", nullptr, schedulable, QueueingHint::kQueue},
      {"unschedulable node added", nullptr, cordoned, QueueingHint::kSkip},
      {"node uncordoned", cordoned, schedulable, QueueingHint::kQueue},
      {"node cordoned", schedulable, cordoned, QueueingHint::kSkip},
      {"schedulable node updated", schedulable, schedulable, QueueingHint::kSkip},
  };
  auto hint = NewPlugin()->EventsToRegister()[0].hint;
  for (const Case& c : cases) {
    framework::EventObjects event;
    event.old_node = c.old_node;
    event.new_node = c.new_node;
    EXPECT_EQ(hint(*pod, event), c.want) << c.name;
  }
}

TEST(NodeUnschedulableTest, PodTolerationChangeHint) {
  api::PodPtr pod = testing::PodBuilder("p").Uid("uid").Build();
  struct Case {
    std::string name;
    api::PodPtr new_pod;
    QueueingHint want;
  };
  const Case cases[] = {
      {"pod gained the toleration",
       testing::PodBuilder("p").Uid("uid").Toleration(UnschedulableToleration()).Build(),
       QueueingHint::kQueue},
      {"pod gained an unrelated toleration",
       testing::PodBuilder("p")
           .Uid("uid")
           .Toleration({"other", api::TolerationOperator::kExists, "",
                        api::TaintEffect::kNoSchedule, std::nullopt})
           .Build(),
       QueueingHint::kSkip},
      {"another pod gained the toleration",
       testing::PodBuilder("q").Uid("other").Toleration(UnschedulableToleration()).Build(),
       QueueingHint::kSkip},
  };
  auto hint = NewPlugin()->EventsToRegister()[1].hint;
  for (const Case& c : cases) {
    framework::EventObjects event;
    event.old_pod = pod;
    event.new_pod = c.new_pod;
    EXPECT_EQ(hint(*pod, event), c.want) << c.name;
  }
}

TEST(NodeUnschedulableTest, NameAndArgs) {
  testing::FakeHandle handle;
  EXPECT_EQ(New(nullptr, handle)->Name(), "NodeUnschedulable");
  EXPECT_THROW(New(nlohmann::json{{"x", true}}, handle), std::invalid_argument);
}

}  // namespace
}  // namespace berth::plugins::nodeunschedulable
