#include "pkg/plugins/defaultbinder/defaultbinder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/client/client.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"
#include "test/testing/unused_client.h"

namespace berth::plugins::defaultbinder {
namespace {

using framework::Code;
using nlohmann::json;

struct PostedRequest {
  std::string path;
  std::string body;
};

// Records every PostRaw and optionally fails it; every other verb is unexpected in these tests.
class RecordingClient : public testing::UnusedClient {
 public:
  std::vector<PostedRequest> posted;
  std::optional<client::ApiError> fail_with;

  std::string PostRaw(const std::string& path, const std::string& body) override {
    posted.push_back({path, body});
    if (fail_with) throw *fail_with;
    return "{}";
  }
};

api::PodPtr TestPod() { return testing::PodBuilder("p", "ns").Uid("pod-uid").Build(); }

TEST(DefaultBinderTest, PostsBinding) {
  RecordingClient client;
  testing::FakeHandle handle({}, &client);
  auto plugin = std::dynamic_pointer_cast<framework::BindPlugin>(New(nullptr, handle));
  ASSERT_NE(plugin, nullptr);

  framework::CycleState state;
  framework::Status status = plugin->Bind(state, *TestPod(), "node-1");
  EXPECT_TRUE(status.IsSuccess()) << status.Message();

  ASSERT_EQ(client.posted.size(), 1u);
  EXPECT_EQ(client.posted[0].path, "/api/v1/namespaces/ns/pods/p/binding");
  json body = json::parse(client.posted[0].body);
  EXPECT_EQ(body["apiVersion"], "v1");
  EXPECT_EQ(body["kind"], "Binding");
  EXPECT_EQ(body["metadata"]["name"], "p");
  EXPECT_EQ(body["metadata"]["namespace"], "ns");
  EXPECT_EQ(body["metadata"]["uid"], "pod-uid");
  EXPECT_EQ(body["target"]["kind"], "Node");
  EXPECT_EQ(body["target"]["name"], "node-1");
}

TEST(DefaultBinderTest, ApiErrorBecomesErrorStatus) {
  RecordingClient client;
  client.fail_with.emplace(client::ErrorReason::kConflict, 409,
                           "Operation cannot be fulfilled on pods/binding \"p\": pod p is "
                           "already assigned to node \"node-0\"");
  testing::FakeHandle handle({}, &client);
  auto plugin = std::dynamic_pointer_cast<framework::BindPlugin>(New(nullptr, handle));
  ASSERT_NE(plugin, nullptr);

  framework::CycleState state;
  framework::Status status = plugin->Bind(state, *TestPod(), "node-1");
  EXPECT_EQ(status.code(), Code::kError);
  EXPECT_EQ(status.Message(), client.fail_with->what());
  EXPECT_THAT(status.Message(), ::testing::HasSubstr("already assigned to node"));
  EXPECT_EQ(client.posted.size(), 1u);
}

TEST(DefaultBinderTest, NoClient) {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<framework::BindPlugin>(New(nullptr, handle));
  ASSERT_NE(plugin, nullptr);
  framework::CycleState state;
  framework::Status status = plugin->Bind(state, *TestPod(), "node-1");
  EXPECT_EQ(status.code(), Code::kError);
  EXPECT_EQ(status.Message(), "no client to bind with");
}

TEST(DefaultBinderTest, NameAndArgs) {
  testing::FakeHandle handle;
  EXPECT_EQ(New(nullptr, handle)->Name(), "DefaultBinder");
  EXPECT_NO_THROW(New(json::object(), handle));
  EXPECT_THROW(New(json{{"x", 1}}, handle), std::invalid_argument);
}

}  // namespace
}  // namespace berth::plugins::defaultbinder
