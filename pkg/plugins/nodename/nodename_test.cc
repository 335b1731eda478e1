#include "pkg/plugins/nodename/nodename.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test/testing/batch.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::nodename {
namespace {

using framework::Code;
using framework::QueueingHint;

std::shared_ptr<NodeName> NewPlugin() {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<NodeName>(New(nullptr, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

TEST(NodeNameTest, Filter) {
  struct Case {
    std::string name;
    api::PodPtr pod;
    bool want_success;
  };
  const Case cases[] = {
      {"no node name specified", testing::PodBuilder("p").Build(), true},
      {"node name matches", testing::PodBuilder("p").Node("foo").Build(), true},
      {"node name doesn't match", testing::PodBuilder("p").Node("bar").Build(), false},
  };
  auto plugin = NewPlugin();
  framework::CycleState state;
  auto node = testing::NodeBuilder("foo").Info();
  for (const Case& c : cases) {
    framework::Status status = plugin->Filter(state, *c.pod, *node);
    if (c.want_success) {
      EXPECT_TRUE(status.IsSuccess()) << c.name;
    } else {
      EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable) << c.name;
      EXPECT_EQ(status.Message(), "node(s) didn't match the requested node name") << c.name;
    }
  }
}

TEST(NodeNameTest, FilterNodesMatchesFilter) {
  const std::vector<framework::NodeInfoPtr> nodes = {testing::NodeBuilder("foo").Info(),
                                                     testing::NodeBuilder("bar").Info(),
                                                     testing::NodeBuilder("baz").Info()};
  auto plugin = NewPlugin();
  framework::CycleState state;
  for (const auto& pod :
       {testing::PodBuilder("p").Build(), testing::PodBuilder("p").Node("bar").Build(),
        testing::PodBuilder("p").Node("other").Build()}) {
    SCOPED_TRACE(pod->spec.node_name);
    testing::ExpectFilterNodesMatchesFilter(*plugin, state, *pod, nodes);
  }
}

TEST(NodeNameTest, EventsToRegister) {
  auto events = NewPlugin()->EventsToRegister();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kNode);
  EXPECT_TRUE(events[0].event.actions & framework::kAdd);
  EXPECT_TRUE(events[0].hint);
}

TEST(NodeNameTest, NodeChangeHint) {
  struct Case {
    std::string name;
    api::PodPtr pod;
    api::NodePtr old_node;
    QueueingHint want;
  };
  api::NodePtr foo = testing::NodeBuilder("foo").Build();
  const Case cases[] = {
      {"added node is the requested one", testing::PodBuilder("p").Node("foo").Build(), nullptr,
       QueueingHint::kQueue},
      {"added node is another one", testing::PodBuilder("p").Node("bar").Build(), nullptr,
       QueueingHint::kSkip},
      {"pod names no node", testing::PodBuilder("p").Build(), nullptr, QueueingHint::kQueue},
      {"requested node updated", testing::PodBuilder("p").Node("foo").Build(), foo,
       QueueingHint::kQueue},
      {"other node updated", testing::PodBuilder("p").Node("bar").Build(), foo,
       QueueingHint::kSkip},
  };
  auto hint = NewPlugin()->EventsToRegister()[0].hint;
  for (const Case& c : cases) {
    framework::EventObjects event;
    event.old_node = c.old_node;
    event.new_node = foo;
    EXPECT_EQ(hint(*c.pod, event), c.want) << c.name;
  }
}

TEST(NodeNameTest, NameAndArgs) {
  testing::FakeHandle handle;
  EXPECT_EQ(New(nullptr, handle)->Name(), "NodeName");
  EXPECT_NO_THROW(New(nlohmann::json::object(), handle));
  EXPECT_THROW(New(nlohmann::json{{"x", 1}}, handle), std::invalid_argument);
}

}  // namespace
}  // namespace berth::plugins::nodename
