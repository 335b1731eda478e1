#include "pkg/plugins/nodeports/nodeports.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::nodeports {
namespace {

using framework::Code;
using framework::QueueingHint;

struct Port {
  std::string protocol;
  std::string ip;
  int32_t port;
};

testing::PodBuilder PodWithPorts(const std::string& name, const std::vector<Port>& ports) {
  testing::PodBuilder pod(name);
  for (const Port& p : ports) pod.HostPort(p.port, p.protocol, p.ip);
  return pod;
}

std::shared_ptr<NodePorts> NewPlugin() {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<NodePorts>(New(nullptr, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

TEST(NodePortsTest, Filter) {
  struct Case {
    std::string name;
    std::vector<Port> wanted;
    std::vector<Port> in_use;
    bool want_fit;
  };
  const std::vector<Case> cases = {
      {"nothing running", {{"UDP", "127.0.0.1", 8080}}, {}, true},
      {"other port", {{"UDP", "127.0.0.1", 8080}}, {{"UDP", "127.0.0.1", 9090}}, true},
      {"same udp port", {{"UDP", "127.0.0.1", 8080}}, {{"UDP", "127.0.0.1", 8080}}, false},
      {"same tcp port", {{"TCP", "127.0.0.1", 8080}}, {{"TCP", "127.0.0.1", 8080}}, false},
      {"different host ip", {{"TCP", "127.0.0.1", 8080}}, {{"TCP", "127.0.0.2", 8080}}, true},
      {"different protocol", {{"TCP", "127.0.0.1", 8080}}, {{"UDP", "127.0.0.1", 8080}}, true},
      {"second udp port conflict",
       {{"UDP", "127.0.0.1", 8001}, {"UDP", "127.0.0.1", 8080}},
       {{"UDP", "127.0.0.1", 8000}, {"UDP", "127.0.0.1", 8080}},
       false},
      {"first tcp port conflict",
       {{"TCP", "127.0.0.1", 8001}, {"UDP", "127.0.0.1", 8080}},
       {{"TCP", "127.0.0.1", 8001}, {"UDP", "127.0.0.1", 8081}},
       false},
      {"specific ip wanted, wildcard in use",
       {{"TCP", "127.0.0.1", 8001}},
       {{"TCP", "0.0.0.0", 8001}},
       false},
      {"wildcard wanted, specific ip in use",
       {{"TCP", "0.0.0.0", 8001}},
       {{"TCP", "127.0.0.1", 8001}},
       false},
      {"empty ip means the wildcard", {{"TCP", "", 8001}}, {{"TCP", "10.0.0.1", 8001}}, false},
      {"wildcard in use, other protocol wanted",
       {{"UDP", "127.0.0.1", 8001}},
       {{"TCP", "0.0.0.0", 8001}},
       true},
      {"wildcard both sides, other protocol",
       {{"UDP", "0.0.0.0", 8001}},
       {{"TCP", "0.0.0.0", 8001}},
       true},
  };
  auto plugin = NewPlugin();
  for (const Case& c : cases) {
    api::PodPtr pod = PodWithPorts("p", c.wanted).Build();
    auto node = testing::NodeBuilder("n").Info({PodWithPorts("existing", c.in_use).Info()});
    framework::CycleState state;
    framework::PreFilterResult result;
    ASSERT_TRUE(plugin->PreFilter(state, *pod, {node}, &result).IsSuccess()) << c.name;
    EXPECT_TRUE(result.AllNodes()) << c.name;
    framework::Status status = plugin->Filter(state, *pod, *node);
    if (c.want_fit) {
      EXPECT_TRUE(status.IsSuccess()) << c.name << ": " << status.Message();
    } else {
      EXPECT_EQ(status.code(), Code::kUnschedulable) << c.name;
      EXPECT_EQ(status.Message(), "node(s) didn't have free ports for the requested pod ports")
          << c.name;
    }
  }
}

TEST(NodePortsTest, PreFilterSkipsPodsWithoutHostPorts) {
  framework::CycleState state;
  framework::PreFilterResult result;
  EXPECT_TRUE(
      NewPlugin()
          ->PreFilter(state, *testing::PodBuilder("p").Container("1", "1Gi").Build(), {}, &result)
          .IsSkip());
}

TEST(NodePortsTest, FilterWithoutPreFilterIsAnError) {
  framework::CycleState state;
  framework::Status status = NewPlugin()->Filter(
      state, *PodWithPorts("p", {{"TCP", "", 80}}).Build(), *testing::NodeBuilder("n").Info());
  EXPECT_EQ(status.code(), Code::kError);
}

TEST(NodePortsTest, EventsToRegister) {
  auto events = NewPlugin()->EventsToRegister();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kPod);
  EXPECT_EQ(events[0].event.actions, framework::kDelete);
  EXPECT_TRUE(events[0].hint);
  EXPECT_EQ(events[1].event.resource, framework::EventResource::kNode);
  EXPECT_EQ(events[1].event.actions, framework::kAdd);
}

TEST(NodePortsTest, PodDeletedHint) {
  api::PodPtr pod = PodWithPorts("p", {{"TCP", "", 8080}}).Build();
  struct Case {
    std::string name;
    api::PodPtr deleted;
    QueueingHint want;
  };
  const Case cases[] = {
      {"deleted pod held the port", PodWithPorts("d", {{"TCP", "", 8080}}).Node("n").Build(),
       QueueingHint::kQueue},
      {"deleted pod held the port on a specific ip",
       PodWithPorts("d", {{"TCP", "10.0.0.1", 8080}}).Node("n").Build(), QueueingHint::kQueue},
      {"deleted pod held the port with another protocol",
       PodWithPorts("d", {{"UDP", "", 8080}}).Node("n").Build(), QueueingHint::kSkip},
      {"deleted pod held another port", PodWithPorts("d", {{"TCP", "", 9090}}).Node("n").Build(),
       QueueingHint::kSkip},
      {"deleted pod had no host ports", testing::PodBuilder("d").Node("n").Build(),
       QueueingHint::kSkip},
      {"deleted pod was never scheduled", PodWithPorts("d", {{"TCP", "", 8080}}).Build(),
       QueueingHint::kSkip},
  };
  auto hint = NewPlugin()->EventsToRegister()[0].hint;
  for (const Case& c : cases) {
    framework::EventObjects event;
    event.old_pod = c.deleted;
    EXPECT_EQ(hint(*pod, event), c.want) << c.name;
  }
}

TEST(NodePortsTest, NameAndArgs) {
  testing::FakeHandle handle;
  EXPECT_EQ(New(nullptr, handle)->Name(), "NodePorts");
  EXPECT_THROW(New(nlohmann::json{{"x", 1}}, handle), std::invalid_argument);
}

}  // namespace
}  // namespace berth::plugins::nodeports
