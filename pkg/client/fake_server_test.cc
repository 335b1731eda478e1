// Fault injection against a hand-written HTTP server: faults a real apiserver does not produce
// on demand (429 with Retry-After, 503 bursts, watch bodies split mid-line, silent streams).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/client/credentials.h"
#include "pkg/client/http_client.h"
#include "test/testing/client_test_util.h"

namespace berth::client {
namespace {

using ::berth::client::testing::FakeRequest;
using ::berth::client::testing::FakeServer;
using ::berth::client::testing::Reply;
using ::berth::client::testing::TempDir;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::string Status(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                        {"message", message}, {"reason", reason},   {"code", code}}
      .dump();
}

Config ConfigFor(const FakeServer& server) {
  Config config;
  config.server = server.url();
  config.qps = 0;
  config.timeout = std::chrono::seconds(10);
  return config;
}

// Records every observed request.
struct Observations {
  std::mutex mu;
  std::vector<std::pair<std::string, int>> calls;

  RequestObserver Observer() {
    return [this](const std::string& verb, int status, std::chrono::nanoseconds) {
      std::lock_guard<std::mutex> lock(mu);
      calls.emplace_back(verb, status);
    };
  }
  std::vector<std::pair<std::string, int>> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return calls;
  }
};

// Replies 200 with a chunked JSON body and feeds it `parts`, pausing between them so each one
// reaches the client in its own read; closes the body afterwards.
void StreamParts(FakeRequest& request, const std::vector<std::string>& parts) {
  request.StartStream(200, "application/json");
  for (const std::string& part : parts) {
    std::this_thread::sleep_for(milliseconds(200));
    request.Send(part);
  }
  std::this_thread::sleep_for(milliseconds(200));
  request.EndStream();
}

// Restores the default token refresh interval when a test is done with it.
struct TokenIntervalOverride {
  explicit TokenIntervalOverride(std::chrono::nanoseconds interval) {
    internal::SetCredentialFileRefreshIntervalForTesting(interval);
  }
  ~TokenIntervalOverride() {
    internal::SetCredentialFileRefreshIntervalForTesting(internal::kCredentialFileRefreshInterval);
  }
};

TEST(ClientFakeServerTest, RetriesTooManyRequestsAfterRetryAfter) {
  FakeServer server([](int index, FakeRequest& request) {
    if (index == 0) {
      Reply(request, 429, Status(429, "TooManyRequests", "slow down"), {{"Retry-After", "1"}});
    } else {
      Reply(request, 200, R"({"kind":"Pod"})");
    }
  });
  auto client = NewClient(ConfigFor(server));
  Observations observed;
  client->SetRequestObserver(observed.Observer());
  const auto start = steady_clock::now();
  const nlohmann::json pod = client->Get("/api/v1/namespaces/default/pods/p");
  EXPECT_GE(steady_clock::now() - start, milliseconds(1000));
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_THAT(observed.Get(), ElementsAre(Pair("GET", 429), Pair("GET", 200)));
}

TEST(ClientFakeServerTest, RetriesServiceUnavailable) {
  FakeServer server([](int index, FakeRequest& request) {
    if (index < 2) {
      Reply(request, 503, Status(503, "ServiceUnavailable", "not ready"));
    } else {
      Reply(request, 200, R"({"kind":"Node"})");
    }
  });
  auto client = NewClient(ConfigFor(server));
  EXPECT_EQ(client->Get("/api/v1/nodes/n")["kind"], "Node");
  EXPECT_EQ(server.request_count(), 3);
}

TEST(ClientFakeServerTest, NotFoundIsNotRetried) {
  FakeServer server([](int, FakeRequest& request) {
    Reply(request, 404, Status(404, "NotFound", "pods \"p\" not found"));
  });
  auto client = NewClient(ConfigFor(server));
  try {
    client->Get("/api/v1/namespaces/default/pods/p");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kNotFound);
    EXPECT_EQ(e.http_status(), 404);
    EXPECT_EQ(e.server_message(), "pods \"p\" not found");
  }
  EXPECT_EQ(server.request_count(), 1);
}

TEST(ClientFakeServerTest, GivesUpAfterFiveAttempts) {
  FakeServer server([](int, FakeRequest& request) {
    Reply(request, 500, Status(500, "InternalError", "etcd is sad"));
  });
  auto client = NewClient(ConfigFor(server));
  try {
    client->Get("/api/v1/nodes");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kInternalError);
    EXPECT_EQ(std::string(e.what()), "InternalError (500): etcd is sad");
  }
  EXPECT_EQ(server.request_count(), internal::kMaxAttempts);
}

TEST(ClientFakeServerTest, PostIsNotRetriedOnInternalError) {
  FakeServer server(
      [](int, FakeRequest& request) { Reply(request, 500, Status(500, "InternalError", "boom")); });
  auto client = NewClient(ConfigFor(server));
  EXPECT_THROW(client->Post("/api/v1/namespaces/d/pods/p/binding", {{"kind", "Binding"}}),
               ApiError);
  EXPECT_EQ(server.request_count(), 1);
}

TEST(ClientFakeServerTest, PostIsRetriedOnServiceUnavailable) {
  FakeServer server([](int index, FakeRequest& request) {
    if (index == 0) {
      Reply(request, 503, Status(503, "ServiceUnavailable", "later"));
    } else {
      Reply(request, 201, R"({"kind":"Binding"})");
    }
  });
  auto client = NewClient(ConfigFor(server));
  const nlohmann::json body = {{"kind", "Binding"}, {"target", {{"name", "node-1"}}}};
  EXPECT_EQ(client->Post("/api/v1/namespaces/d/pods/p/binding", body)["kind"], "Binding");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].method, "POST");
  EXPECT_EQ(requests[1].path, "/api/v1/namespaces/d/pods/p/binding");
  EXPECT_EQ(requests[1].Header("Content-Type"), "application/json");
  EXPECT_EQ(nlohmann::json::parse(requests[1].body), body);
}

TEST(ClientFakeServerTest, PostRawReturnsTheRawBody) {
  FakeServer server([](int, FakeRequest& request) {
    Reply(request, 201, R"({"kind":"Status","status":"Success"})");
  });
  auto client = NewClient(ConfigFor(server));
  EXPECT_EQ(client->PostRaw("/api/v1/namespaces/d/pods/p/binding", R"({"kind":"Binding"})"),
            R"({"kind":"Status","status":"Success"})");
  EXPECT_EQ(server.requests().at(0).body, R"({"kind":"Binding"})");
}

// Waits for the one answer of a PostRawAsync and the thread that delivered it.
struct AsyncAnswer {
  std::promise<std::pair<AsyncReply, std::thread::id>> promise;
  AsyncReplyHandler Handler() {
    return [this](AsyncReply reply) {
      promise.set_value({std::move(reply), std::this_thread::get_id()});
    };
  }
  std::pair<AsyncReply, std::thread::id> Get() {
    auto future = promise.get_future();
    EXPECT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    return future.get();
  }
};

TEST(ClientFakeServerTest, PostRawAsyncHandsTheAnswerToItsCompletionOnTheIoThread) {
  FakeServer server([](int, FakeRequest& request) {
    Reply(request, 201, R"({"kind":"Status","status":"Success"})");
  });
  auto client = NewClient(ConfigFor(server));
  Observations observed;
  client->SetRequestObserver(observed.Observer());
  AsyncAnswer answer;
  ASSERT_TRUE(client->PostRawAsync("/api/v1/namespaces/d/pods/p/binding", R"({"kind":"Binding"})",
                                   answer.Handler()));
  auto [reply, thread] = answer.Get();
  EXPECT_FALSE(reply.error.has_value());
  EXPECT_EQ(reply.body, R"({"kind":"Status","status":"Success"})");
  EXPECT_NE(thread, std::this_thread::get_id());
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/api/v1/namespaces/d/pods/p/binding");
  EXPECT_EQ(requests[0].Header("Content-Type"), "application/json");
  EXPECT_EQ(requests[0].body, R"({"kind":"Binding"})");
  EXPECT_THAT(observed.Get(), ElementsAre(Pair("POST", 201)));
}

TEST(ClientFakeServerTest, PostRawAsyncTriesOnceAndSaysWhetherARetryMayHelp) {
  struct Case {
    int code;
    const char* reason;
    ErrorReason want;
    bool retry_may_help;
  };
  for (const Case& c : {Case{503, "ServiceUnavailable", ErrorReason::kServiceUnavailable, true},
                        Case{404, "NotFound", ErrorReason::kNotFound, false}}) {
    SCOPED_TRACE(c.code);
    FakeServer server([&c](int, FakeRequest& request) {
      Reply(request, c.code, Status(c.code, c.reason, "no"));
    });
    auto client = NewClient(ConfigFor(server));
    AsyncAnswer answer;
    ASSERT_TRUE(
        client->PostRawAsync("/api/v1/namespaces/d/pods/p/binding", "{}", answer.Handler()));
    auto [reply, thread] = answer.Get();
    ASSERT_TRUE(reply.error.has_value());
    EXPECT_EQ(reply.error->reason(), c.want);
    EXPECT_EQ(reply.error->http_status(), c.code);
    EXPECT_EQ(reply.retry_may_help, c.retry_may_help);
    EXPECT_EQ(server.request_count(), 1) << "PostRawAsync tries once";
  }
}

TEST(ClientFakeServerTest, PostRawAsyncDeclinesWithoutARateLimiterToken) {
  FakeServer server([](int, FakeRequest& request) { Reply(request, 201, "{}"); });
  Config config = ConfigFor(server);
  config.qps = 0.001;
  config.burst = 1;
  auto client = NewClient(config);
  AsyncAnswer answer;
  ASSERT_TRUE(client->PostRawAsync("/api/v1/namespaces/d/pods/p/binding", "{}", answer.Handler()));
  EXPECT_FALSE(answer.Get().first.error.has_value());
  bool ran = false;
  EXPECT_FALSE(client->PostRawAsync("/api/v1/namespaces/d/pods/q/binding", "{}",
                                    [&ran](AsyncReply) { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_EQ(server.request_count(), 1);
}

TEST(ClientFakeServerTest, PostRawAsyncThatNeverReachedTheServerMayBeRetried) {
  std::string url;
  {
    FakeServer gone([](int, FakeRequest& request) { Reply(request, 200, "{}"); });
    url = gone.url();
  }
  Config config;
  config.server = url;
  config.qps = 0;
  config.timeout = std::chrono::seconds(10);
  auto client = NewClient(config);
  AsyncAnswer answer;
  ASSERT_TRUE(client->PostRawAsync("/api/v1/namespaces/d/pods/p/binding", "{}", answer.Handler()));
  auto [reply, thread] = answer.Get();
  ASSERT_TRUE(reply.error.has_value());
  EXPECT_EQ(reply.error->reason(), ErrorReason::kTransport);
  EXPECT_TRUE(reply.retry_may_help);
}

TEST(ClientFakeServerTest, TransportErrorsAreRetriedThenReportedWithStatusZero) {
  std::string url;
  {
    FakeServer gone([](int, FakeRequest& request) { Reply(request, 200, "{}"); });
    url = gone.url();
  }
  Config config;
  config.server = url;
  config.qps = 0;
  auto client = NewClient(config);
  Observations observed;
  client->SetRequestObserver(observed.Observer());
  try {
    client->Post("/api/v1/namespaces/d/events", {{"kind", "Event"}});
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTransport);
    EXPECT_EQ(e.http_status(), 0);
    EXPECT_THAT(e.what(), HasSubstr(url));
  }
  // Nothing reached a server, so even a POST is retried.
  const auto calls = observed.Get();
  EXPECT_EQ(calls.size(), static_cast<size_t>(internal::kMaxAttempts));
  for (const auto& call : calls) EXPECT_EQ(call, std::make_pair(std::string("POST"), 0));
}

TEST(ClientFakeServerTest, SendsUserAgentAcceptAndBearerToken) {
  FakeServer server([](int, FakeRequest& request) { Reply(request, 200, "{}"); });
  Config config = ConfigFor(server);
  config.bearer_token = "static-token";
  auto client = NewClient(config);
  client->Get("/version");
  const auto request = server.requests().at(0);
  EXPECT_EQ(request.Header("User-Agent"), std::string("berth-scheduler/") + BERTH_VERSION);
  EXPECT_EQ(request.Header("Accept"), "application/json");
  EXPECT_EQ(request.Header("Authorization"), "Bearer static-token");
  EXPECT_EQ(client->config().user_agent, std::string("berth-scheduler/") + BerthVersion());
}

TEST(ClientFakeServerTest, NoAuthorizationHeaderWithoutCredentials) {
  FakeServer server([](int, FakeRequest& request) { Reply(request, 200, "{}"); });
  auto client = NewClient(ConfigFor(server));
  client->Get("/version");
  EXPECT_EQ(server.requests().at(0).headers.count("Authorization"), 0u);
}

TEST(ClientFakeServerTest, RereadsTokenFileAfterItChanges) {
  FakeServer server([](int, FakeRequest& request) { Reply(request, 200, "{}"); });
  TempDir dir;
  const std::string token_file = dir.Write("token", "first-token\n");
  Config config = ConfigFor(server);
  config.bearer_token = "ignored-static-token";
  config.bearer_token_file = token_file;
  auto client = NewClient(config);

  {
    TokenIntervalOverride always(std::chrono::nanoseconds(0));
    client->Get("/version");
    dir.Write("token", "second-token\n");
    client->Get("/version");
  }
  // With the normal interval the token just read stays cached.
  dir.Write("token", "third-token\n");
  client->Get("/version");

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].Header("Authorization"), "Bearer first-token");
  EXPECT_EQ(requests[1].Header("Authorization"), "Bearer second-token");
  EXPECT_EQ(requests[2].Header("Authorization"), "Bearer second-token");
}

TEST(ClientFakeServerTest, ListPageRawSendsEncodedQuery) {
  FakeServer server([](int, FakeRequest& request) {
    Reply(request, 200, R"({"kind":"PodList","metadata":{"continue":"c2"},"items":[]})");
  });
  auto client = NewClient(ConfigFor(server));
  ListOptions options;
  options.label_selector = "app in (a,b)";
  options.field_selector = "spec.nodeName=";
  options.limit = 2;
  options.resource_version = "0";
  const ListPage first = client->ListPageRaw("/api/v1/pods", options, "");
  EXPECT_EQ(nlohmann::json::parse(first.body)["metadata"]["continue"], "c2");
  client->ListPageRaw("/api/v1/pods", options, "c2");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].path, "/api/v1/pods");
  EXPECT_EQ(requests[0].query,
            "limit=2&labelSelector=app%20in%20%28a%2Cb%29&fieldSelector=spec.nodeName%3D&"
            "resourceVersion=0");
  EXPECT_EQ(requests[1].query,
            "limit=2&continue=c2&labelSelector=app%20in%20%28a%2Cb%29&"
            "fieldSelector=spec.nodeName%3D");
}

TEST(ClientFakeServerTest, PatchContentTypesAndDelete) {
  FakeServer server([](int, FakeRequest& request) { Reply(request, 200, R"({"kind":"Pod"})"); });
  auto client = NewClient(ConfigFor(server));
  Observations observed;
  client->SetRequestObserver(observed.Observer());
  const nlohmann::json merge = {{"metadata", {{"labels", {{"a", "b"}}}}}};
  const nlohmann::json json_patch =
      nlohmann::json::array({{{"op", "add"}, {"path", "/metadata/labels/a"}, {"value", "b"}}});
  client->Patch("/api/v1/nodes/n", merge, PatchType::kMerge);
  client->Patch("/api/v1/nodes/n", merge, PatchType::kStrategicMerge);
  client->Patch("/api/v1/nodes/n", json_patch, PatchType::kJson);
  client->Delete("/api/v1/namespaces/d/pods/p");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].method, "PATCH");
  EXPECT_EQ(requests[0].Header("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(requests[1].Header("Content-Type"), "application/strategic-merge-patch+json");
  EXPECT_EQ(requests[2].Header("Content-Type"), "application/json-patch+json");
  EXPECT_EQ(nlohmann::json::parse(requests[0].body), merge);
  EXPECT_EQ(nlohmann::json::parse(requests[2].body), json_patch);
  EXPECT_EQ(requests[3].method, "DELETE");
  EXPECT_EQ(requests[3].path, "/api/v1/namespaces/d/pods/p");
  EXPECT_THAT(observed.Get(), ElementsAre(Pair("PATCH", 200), Pair("PATCH", 200),
                                          Pair("PATCH", 200), Pair("DELETE", 200)));
}

// A uid precondition goes as a DeleteOptions body on every attempt: a retried DELETE that finds
// the name taken by a new object gets 409 Conflict, which is final.
TEST(ClientFakeServerTest, DeleteSendsItsUidPreconditionOnEveryAttempt) {
  FakeServer server([](int index, FakeRequest& request) {
    if (index == 0) {
      Reply(request, 503, Status(503, "ServiceUnavailable", "not ready"));
    } else {
      Reply(request, 409,
            Status(409, "Conflict",
                   "Operation cannot be fulfilled on Pod \"p\": the UID in the precondition "
                   "(u-1) does not match the UID in record (u-2)"));
    }
  });
  auto client = NewClient(ConfigFor(server));
  try {
    client->Delete("/api/v1/namespaces/d/pods/p", DeleteOptions{.precondition_uid = "u-1"});
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kConflict);
  }
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  const nlohmann::json options = {
      {"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"preconditions", {{"uid", "u-1"}}}};
  for (const auto& request : requests) {
    EXPECT_EQ(request.method, "DELETE");
    EXPECT_EQ(request.Header("Content-Type"), "application/json");
    EXPECT_EQ(nlohmann::json::parse(request.body), options);
  }
}

TEST(ClientFakeServerTest, WatchYieldsEventsSplitMidLineThenEnds) {
  FakeServer server([](int, FakeRequest& request) {
    StreamParts(request, {
                             R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                             "\n"
                             R"({"type":"MODI)",
                             R"(FIED","object":{"metadata":{"name":"b"}}})"
                             "\n"
                             R"({"type":"DELETED","obj)",
                             R"(ect":{"metadata":{"name":"c"}}})"
                             "\n",
                         });
  });
  auto client = NewClient(ConfigFor(server));
  Observations observed;
  client->SetRequestObserver(observed.Observer());
  WatchOptions options;
  options.resource_version = "42";
  options.timeout_seconds = 60;
  options.label_selector = "tier=db";
  const auto start = steady_clock::now();
  auto stream = client->Watch("/api/v1/pods", options);

  WatchEvent event;
  ASSERT_TRUE(stream->Next(&event));
  // Events are handed over as they arrive (the first after ~200ms), not once the body is
  // complete (after ~800ms).
  EXPECT_LT(steady_clock::now() - start, milliseconds(600));
  EXPECT_EQ(event.type, WatchEventType::kAdded);
  EXPECT_EQ(event.object["metadata"]["name"], "a");
  ASSERT_TRUE(stream->Next(&event));
  EXPECT_EQ(event.type, WatchEventType::kModified);
  EXPECT_EQ(event.object["metadata"]["name"], "b");
  ASSERT_TRUE(stream->Next(&event));
  EXPECT_EQ(event.type, WatchEventType::kDeleted);
  EXPECT_EQ(event.object["metadata"]["name"], "c");
  EXPECT_FALSE(stream->Next(&event));
  EXPECT_FALSE(stream->Next(&event));

  const auto request = server.requests().at(0);
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.query,
            "watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=42&"
            "labelSelector=tier%3Ddb");
  EXPECT_THAT(observed.Get(), ElementsAre(Pair("WATCH", 200)));
}

TEST(ClientFakeServerTest, WatchErrorEventAndUnterminatedLastLine) {
  FakeServer server([](int, FakeRequest& request) {
    StreamParts(request,
                {
                    R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})"
                    "\r\n\n",
                    R"({"type":"ERROR","object":)" + Status(410, "Expired", "too old") + "}",
                });
  });
  auto client = NewClient(ConfigFor(server));
  auto stream = client->Watch("/api/v1/pods", WatchOptions{});
  WatchEvent event;
  ASSERT_TRUE(stream->Next(&event));
  EXPECT_EQ(event.type, WatchEventType::kBookmark);
  EXPECT_EQ(event.object["metadata"]["resourceVersion"], "7");
  ASSERT_TRUE(stream->Next(&event));
  EXPECT_EQ(event.type, WatchEventType::kError);
  EXPECT_EQ(event.object["code"], 410);
  EXPECT_EQ(event.object["reason"], "Expired");
  EXPECT_FALSE(stream->Next(&event));
}

TEST(ClientFakeServerTest, WatchOpenFailureIsDecoded) {
  FakeServer server([](int, FakeRequest& request) {
    Reply(request, 403,
          Status(403, "Forbidden",
                 "pods is forbidden: User \"x\" cannot watch resource \"pods\" in API group \"\" "
                 "at the cluster scope"));
  });
  auto client = NewClient(ConfigFor(server));
  try {
    client->Watch("/api/v1/pods", WatchOptions{});
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kForbidden);
    EXPECT_THAT(e.what(), HasSubstr("Forbidden (403): pods is forbidden: User \"x\" cannot watch"));
  }
  EXPECT_EQ(server.request_count(), 1);
}

TEST(ClientFakeServerTest, StopUnblocksNextOnSilentStream) {
  // The head, then nothing for as long as the client keeps the connection.
  FakeServer server([](int, FakeRequest& request) {
    request.StartStream(200, "application/json");
    request.WaitForClose();
  });
  // The request timeout must not cut a quiet watch: watches use timeoutSeconds plus slack.
  Config config = ConfigFor(server);
  config.timeout = milliseconds(100);
  auto client = NewClient(config);
  auto stream = client->Watch("/api/v1/pods", WatchOptions{});

  std::promise<bool> result;
  std::future<bool> done = result.get_future();
  std::thread reader([&] {
    WatchEvent event;
    try {
      result.set_value(stream->Next(&event));
    } catch (...) {
      result.set_exception(std::current_exception());
    }
  });
  EXPECT_EQ(done.wait_for(milliseconds(600)), std::future_status::timeout)
      << "Next() returned on a silent stream";
  const auto stop_at = steady_clock::now();
  stream->Stop();
  const bool unblocked = done.wait_for(std::chrono::seconds(2)) == std::future_status::ready;
  EXPECT_TRUE(unblocked) << "Stop() did not unblock Next() within 2s";
  if (unblocked) {
    EXPECT_FALSE(done.get());
    EXPECT_LT(steady_clock::now() - stop_at, std::chrono::seconds(2));
  }
  reader.join();
}

}  // namespace
}  // namespace berth::client
