#include "pkg/plugins/defaultbinder/defaultbinder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
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

// Records every PostRaw and fails it with the next of `failures` (or with `fail_with` once they
// are used up); GET of the pod answers `current` when set. Every other verb is unexpected.
class RecordingClient : public testing::UnusedClient {
 public:
  std::vector<PostedRequest> posted;
  std::vector<client::ApiError> failures;
  std::optional<client::ApiError> fail_with;
  std::optional<json> current;
  int gets = 0;

  std::string PostRaw(const std::string& path, const std::string& body) override {
    posted.push_back({path, body});
    if (posted.size() <= failures.size()) throw failures[posted.size() - 1];
    if (fail_with) throw *fail_with;
    return "{}";
  }

  // PostRawAsync answers at once with the next of `async_replies` (a 201 when none is left),
  // or declines when `async_declines`.
  std::vector<client::AsyncReply> async_replies;
  bool async_declines = false;
  size_t async_posts = 0;

  bool PostRawAsync(const std::string& path, std::string body,
                    client::AsyncReplyHandler done) override {
    if (async_declines) return false;
    posted.push_back({path, body});
    client::AsyncReply reply;
    if (async_posts < async_replies.size()) reply = async_replies[async_posts];
    async_posts++;
    done(std::move(reply));
    return true;
  }

  json Get(const std::string& path) override {
    if (!current) return UnusedClient::Get(path);
    EXPECT_EQ(path, "/api/v1/namespaces/ns/pods/p");
    gets++;
    return *current;
  }
};

// What the apiserver answers a binding whose pod is already bound, and the pod it then holds.
client::ApiError AlreadyAssigned(const std::string& node) {
  return client::ApiError(client::ErrorReason::kConflict, 409,
                          "Operation cannot be fulfilled on pods/binding \"p\": pod p is "
                          "already assigned to node \"" +
                              node + "\"");
}
json PodOn(const std::string& node, const std::string& uid = "pod-uid") {
  return {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", uid}}},
          {"spec", {{"nodeName", node}}}};
}
client::ApiError ResponseLost() {
  return client::ApiError(client::ErrorReason::kTransport, 0,
                          "server https://127.0.0.1:6443 closed the connection before responding");
}

// Short pauses: the tests count requests, never time.
RetryPolicy QuickRetry() {
  return {std::chrono::seconds(30), std::chrono::milliseconds(1), std::chrono::milliseconds(1)};
}

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

// The outcome BindAsync hands on for `reply`; "declined" when it did not start.
std::string AsyncOutcome(RecordingClient& client) {
  testing::FakeHandle handle({}, &client);
  auto plugin = std::dynamic_pointer_cast<framework::AsyncBindPlugin>(New(nullptr, handle));
  EXPECT_NE(plugin, nullptr);
  std::optional<std::optional<framework::Status>> outcome;
  const bool started = plugin->BindAsync(*TestPod(), "node-1",
                                         [&](std::optional<framework::Status> s) { outcome = s; });
  if (!started) {
    EXPECT_FALSE(outcome.has_value()) << "done ran for a binding that did not start";
    return "declined";
  }
  if (!outcome) return "no answer";
  if (!*outcome) return "unsettled";
  return (*outcome)->IsSuccess() ? "bound" : "error: " + (*outcome)->Message();
}

client::AsyncReply Failed(client::ApiError error, bool retry_may_help = false) {
  client::AsyncReply reply;
  reply.error = std::move(error);
  reply.retry_may_help = retry_may_help;
  return reply;
}

TEST(DefaultBinderTest, BindAsyncPostsTheBindingAndSettlesABoundPod) {
  RecordingClient client;
  EXPECT_EQ(AsyncOutcome(client), "bound");
  ASSERT_EQ(client.posted.size(), 1u);
  EXPECT_EQ(client.posted[0].path, "/api/v1/namespaces/ns/pods/p/binding");
  const json body = json::parse(client.posted[0].body);
  EXPECT_EQ(body["metadata"]["uid"], "pod-uid");
  EXPECT_EQ(body["target"]["name"], "node-1");
}

TEST(DefaultBinderTest, BindAsyncLeavesWhatItsTryCannotSettleToBind) {
  // The answer lost, "already assigned" (maybe by this very binding), and a refusal the client
  // would retry: Bind settles each as it settles them on its own.
  for (client::AsyncReply reply :
       {Failed(ResponseLost(), true), Failed(AlreadyAssigned("node-1")),
        Failed(client::ApiError(client::ErrorReason::kInternalError, 500, "etcd")),
        Failed(client::ApiError(client::ErrorReason::kUnauthorized, 401, "expired"), true)}) {
    RecordingClient client;
    client.async_replies = {reply};
    EXPECT_EQ(AsyncOutcome(client), "unsettled") << reply.error->what();
    EXPECT_EQ(client.gets, 0) << "BindAsync must not wait for a GET";
  }
}

TEST(DefaultBinderTest, BindAsyncReportsARefusalForGood) {
  const client::ApiError gone(client::ErrorReason::kNotFound, 404, "pods \"p\" not found");
  RecordingClient client;
  client.async_replies = {Failed(gone)};
  EXPECT_EQ(AsyncOutcome(client), std::string("error: ") + gone.what());
}

TEST(DefaultBinderTest, BindAsyncDeclinesWhenTheClientCannotSendAtOnce) {
  RecordingClient client;
  client.async_declines = true;
  EXPECT_EQ(AsyncOutcome(client), "declined");
  EXPECT_TRUE(client.posted.empty());
}

TEST(DefaultBinderTest, AlreadyAssignedElsewhereIsAnError) {
  RecordingClient client;
  client.fail_with = AlreadyAssigned("node-0");
  client.current = PodOn("node-0");
  testing::FakeHandle handle({}, &client);
  auto plugin = std::dynamic_pointer_cast<framework::BindPlugin>(New(nullptr, handle));
  ASSERT_NE(plugin, nullptr);

  framework::CycleState state;
  framework::Status status = plugin->Bind(state, *TestPod(), "node-1");
  EXPECT_EQ(status.code(), Code::kError);
  EXPECT_EQ(status.Message(), client.fail_with->what());
  EXPECT_THAT(status.Message(), ::testing::HasSubstr("already assigned to node"));
  EXPECT_EQ(client.posted.size(), 1u);
  EXPECT_EQ(client.gets, 1);
}

TEST(DefaultBinderTest, AnErrorThatSettlesTheOutcomeIsNotRetried) {
  RecordingClient client;
  client.fail_with.emplace(client::ErrorReason::kForbidden, 403, "pods/binding is forbidden");
  testing::FakeHandle handle({}, &client);
  DefaultBinder plugin(handle, QuickRetry());
  framework::CycleState state;
  framework::Status status = plugin.Bind(state, *TestPod(), "node-1");
  EXPECT_EQ(status.code(), Code::kError);
  EXPECT_THAT(status.Message(), ::testing::HasSubstr("forbidden"));
  EXPECT_EQ(client.posted.size(), 1u);
}

// The connection broke before the answer came: the binding is sent again, and applied.
TEST(DefaultBinderTest, ALostResponseIsSentAgain) {
  RecordingClient client;
  client.failures = {ResponseLost(),
                     client::ApiError(client::ErrorReason::kServiceUnavailable, 503, "restarting")};
  testing::FakeHandle handle({}, &client);
  DefaultBinder plugin(handle, QuickRetry());
  framework::CycleState state;
  framework::Status status = plugin.Bind(state, *TestPod(), "node-1");
  EXPECT_TRUE(status.IsSuccess()) << status.Message();
  ASSERT_EQ(client.posted.size(), 3u);
  EXPECT_EQ(client.posted[2].body, client.posted[0].body);
}

// The first binding was applied but its answer lost: the second finds the pod on this node,
// which is the success the first one was.
TEST(DefaultBinderTest, ALostResponseOfAnAppliedBindingIsASuccess) {
  RecordingClient client;
  client.failures = {ResponseLost(), AlreadyAssigned("node-1")};
  client.current = PodOn("node-1");
  testing::FakeHandle handle({}, &client);
  DefaultBinder plugin(handle, QuickRetry());
  framework::CycleState state;
  framework::Status status = plugin.Bind(state, *TestPod(), "node-1");
  EXPECT_TRUE(status.IsSuccess()) << status.Message();
  EXPECT_EQ(client.posted.size(), 2u);
  EXPECT_EQ(client.gets, 1);
}

// A pod of the same name but another uid is not the pod this cycle placed.
TEST(DefaultBinderTest, ARecreatedPodOnTheNodeIsNotThisBinding) {
  RecordingClient client;
  client.fail_with = AlreadyAssigned("node-1");
  client.current = PodOn("node-1", "other-uid");
  testing::FakeHandle handle({}, &client);
  DefaultBinder plugin(handle, QuickRetry());
  framework::CycleState state;
  EXPECT_EQ(plugin.Bind(state, *TestPod(), "node-1").code(), Code::kError);
}

TEST(DefaultBinderTest, AnUnknownOutcomeEndsAtTheBudgetOrAtShutdown) {
  RecordingClient client;
  client.fail_with = ResponseLost();
  testing::FakeHandle handle({}, &client);
  framework::CycleState state;

  DefaultBinder no_budget(handle, {std::chrono::milliseconds(0), std::chrono::milliseconds(1),
                                   std::chrono::milliseconds(1)});
  framework::Status status = no_budget.Bind(state, *TestPod(), "node-1");
  EXPECT_EQ(status.code(), Code::kError);
  EXPECT_THAT(status.Message(), ::testing::HasSubstr("closed the connection"));
  EXPECT_EQ(client.posted.size(), 1u);

  client.posted.clear();
  handle.set_stopping(true);
  DefaultBinder stopping(handle, QuickRetry());
  EXPECT_EQ(stopping.Bind(state, *TestPod(), "node-1").code(), Code::kError);
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
