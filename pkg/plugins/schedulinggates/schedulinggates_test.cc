#include "pkg/plugins/schedulinggates/schedulinggates.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::schedulinggates {
namespace {

using framework::Code;
using framework::QueueingHint;

std::shared_ptr<SchedulingGates> NewPlugin() {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<SchedulingGates>(New(nullptr, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

TEST(SchedulingGatesTest, PreEnqueue) {
  auto plugin = NewPlugin();

  EXPECT_TRUE(plugin->PreEnqueue(*testing::PodBuilder("p").Build()).IsSuccess());

  framework::Status one =
      plugin->PreEnqueue(*testing::PodBuilder("p").SchedulingGate("foo").Build());
  EXPECT_EQ(one.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(one.Message(), "waiting for scheduling gates: [foo]");

  framework::Status two = plugin->PreEnqueue(
      *testing::PodBuilder("p").SchedulingGate("foo").SchedulingGate("bar").Build());
  EXPECT_EQ(two.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(two.Message(), "waiting for scheduling gates: [foo bar]");
}

TEST(SchedulingGatesTest, EventsToRegister) {
  auto events = NewPlugin()->EventsToRegister();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kUnscheduledPod);
  EXPECT_EQ(events[0].event.actions, framework::kUpdatePodSchedulingGatesEliminated);
  EXPECT_TRUE(events[0].hint);
}

TEST(SchedulingGatesTest, QueueingHint) {
  api::PodPtr pod = testing::PodBuilder("p").Uid("uid").SchedulingGate("foo").Build();
  auto hint = NewPlugin()->EventsToRegister()[0].hint;
  struct Case {
    std::string name;
    api::PodPtr old_pod;
    api::PodPtr new_pod;
    QueueingHint want;
  };
  const Case cases[] = {
      {"all gates removed from the pod", pod, testing::PodBuilder("p").Uid("uid").Build(),
       QueueingHint::kQueue},
      {"some gates remain",
       testing::PodBuilder("p").Uid("uid").SchedulingGate("foo").SchedulingGate("bar").Build(),
       testing::PodBuilder("p").Uid("uid").SchedulingGate("bar").Build(), QueueingHint::kSkip},
      {"another pod lost its gates",
       testing::PodBuilder("q").Uid("other").SchedulingGate("foo").Build(),
       testing::PodBuilder("q").Uid("other").Build(), QueueingHint::kSkip},
  };
  for (const Case& c : cases) {
    framework::EventObjects event;
    event.old_pod = c.old_pod;
    event.new_pod = c.new_pod;
    EXPECT_EQ(hint(*pod, event), c.want) << c.name;
  }
}

TEST(SchedulingGatesTest, NameAndArgs) {
  testing::FakeHandle handle;
  EXPECT_EQ(New(nullptr, handle)->Name(), "SchedulingGates");
  EXPECT_THROW(New(nlohmann::json{{"gates", 1}}, handle), std::invalid_argument);
}

}  // namespace
}  // namespace berth::plugins::schedulinggates
