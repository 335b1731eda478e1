// The client against a hand-written raw TCP fake server that sends byte-exact HTTP/1.1 replies:
// the framing edge cases and connection faults (bodies split at awkward places, keep-alive
// connections closed by the server, truncated bodies, conflicting or oversized headers, garbage)
// that a real apiserver will not produce on demand.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/client/curl_transport.h"
#include "pkg/client/http_client.h"
#include "test/testing/client_test_util.h"
#include "test/testing/proto_writer.h"

namespace berth::client {
namespace {

using ::testing::HasSubstr;

// Scripted connections: each reads requests and answers each with the bytes `respond` returns
// for (connection index, request index on it, request text); an empty answer closes the
// connection without replying, and "CLOSE:" before an answer closes it after sending it.
class RawServer {
 public:
  using Responder = std::function<std::string(int connection, int request, const std::string&)>;

  explicit RawServer(Responder respond)
      : respond_(std::move(respond)),
        listener_([this](int fd, int connection) { Serve(fd, connection); }),
        url_("http://127.0.0.1:" + std::to_string(listener_.port())) {}

  const std::string& url() const { return url_; }
  int connections() const { return listener_.connections(); }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Serve(int fd, int connection) {
    std::string in;
    for (int request = 0;; ++request) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        if (!Read(fd, &in)) return;
      }
      size_t length = 0;
      if (const size_t at = in.find("Content-Length: "); at != std::string::npos && at < end) {
        length = std::stoul(in.substr(at + 16));
      }
      while (in.size() < end + 4 + length) {
        if (!Read(fd, &in)) return;
      }
      const std::string text = in.substr(0, end + 4 + length);
      in.erase(0, end + 4 + length);
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(text);
      }
      std::string reply = respond_(connection, request, text);
      if (reply.empty()) return;
      const bool close_after = reply.rfind("CLOSE:", 0) == 0;
      if (close_after) reply.erase(0, 6);
      if (!client::testing::LoopbackTcpServer::SendAll(fd, reply) || close_after) return;
    }
  }

  static bool Read(int fd, std::string* in) {
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    in->append(buf, static_cast<size_t>(n));
    return true;
  }

  Responder respond_;
  std::mutex mu_;
  std::vector<std::string> requests_;  // Guarded by mu_.
  // Last but the URL: its handlers use everything above, and stop when it goes.
  client::testing::LoopbackTcpServer listener_;
  const std::string url_;
};

std::string Ok(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A 200 whose body is sent in chunks of `piece` bytes, then the terminating zero chunk.
std::string ChunkedOk(const std::string& body, size_t piece, const std::string& content_type = "") {
  std::string reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n";
  if (!content_type.empty()) reply += "Content-Type: " + content_type + "\r\n";
  reply += "\r\n";
  for (size_t at = 0; at < body.size(); at += piece) {
    const std::string chunk = body.substr(at, piece);
    char size[16];
    std::snprintf(size, sizeof(size), "%zx", chunk.size());
    reply += std::string(size) + "\r\n" + chunk + "\r\n";
  }
  return reply + "0\r\n\r\n";
}

Config ConfigFor(const RawServer& server) {
  Config config;
  config.server = server.url();
  config.qps = 0;
  config.timeout = std::chrono::seconds(5);
  return config;
}

TEST(RawFakeServerTest, ChunkedBodyWithExtensionsAndTrailersIsReassembled) {
  RawServer server([](int, int, const std::string&) {
    return std::string(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "4;name=value\r\n{\"ki\r\n"
        "A\r\nnd\":\"Pod\",\r\n"
        "b\r\n\"n\":12345}\n\r\n"
        "0\r\nX-Trailer: t\r\n\r\n");
  });
  auto client = NewClient(ConfigFor(server));
  const nlohmann::json reply = client->Get("/api/v1/pods/x");
  EXPECT_EQ(reply["kind"], "Pod");
  EXPECT_EQ(reply["n"], 12345);
  // The connection was kept: a second request travels on it.
  client->Get("/api/v1/pods/x");
  EXPECT_EQ(server.connections(), 1);
}

TEST(RawFakeServerTest, KeepAliveReusesOneConnectionAndHonoursConnectionClose) {
  RawServer server([](int, int request, const std::string&) {
    if (request == 1) {
      return std::string("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}");
    }
    return Ok("{}");
  });
  auto client = NewClient(ConfigFor(server));
  client->Get("/a");
  client->Get("/b");  // Second request on connection 0, which the server then closes.
  client->Get("/c");
  EXPECT_EQ(server.connections(), 2);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_THAT(requests[0], HasSubstr("GET /a HTTP/1.1\r\nHost: 127.0.0.1:"));
}

TEST(RawFakeServerTest, PostOnAReusedConnectionClosedWithoutAResponseIsNotSentAgain) {
  // Connection 0 answers once, then reads the next request and closes without a word. The server
  // may have bound the pod before it went away, so the POST must not be replayed.
  RawServer server([](int connection, int request, const std::string&) {
    if (connection == 0 && request == 1) return std::string();
    return Ok(R"({"kind":"Status","status":"Success"})");
  });
  auto client = NewClient(ConfigFor(server));
  client->Get("/version");
  try {
    client->PostRaw("/api/v1/namespaces/d/pods/p/binding", R"({"kind":"Binding"})");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTransport);
    EXPECT_THAT(e.what(), HasSubstr("not sent again"));
  }
  EXPECT_EQ(server.requests().size(), 2u) << "the POST was replayed";
}

TEST(RawFakeServerTest, GetOnAReusedConnectionClosedWithoutAResponseIsSentAgain) {
  RawServer server([](int connection, int request, const std::string&) {
    if (connection == 0 && request == 1) return std::string();
    return Ok(R"({"kind":"Pod"})");
  });
  auto client = NewClient(ConfigFor(server));
  client->Get("/version");
  EXPECT_EQ(client->Get("/api/v1/namespaces/d/pods/p")["kind"], "Pod");
  EXPECT_EQ(server.connections(), 2);
}

TEST(RawFakeServerTest, PostWhoseConnectionClosesMidResponseIsNotRepeated) {
  RawServer server([](int, int, const std::string&) {
    // Promises 100 bytes, sends a few, then closes.
    return std::string("CLOSE:HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{\"kind\"");
  });
  auto client = NewClient(ConfigFor(server));
  try {
    client->PostRaw("/api/v1/namespaces/d/pods/p/binding", R"({"kind":"Binding"})");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTransport) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("ended early"));
  }
  EXPECT_EQ(server.requests().size(), 1u) << "a POST the server received must not be repeated";
}

// The status is the server's answer even when the body detailing it is cut short (Go's HTTP/2
// server resets a stream whose request body it left unread, which libcurl may see as a cut body).
TEST(RawFakeServerTest, PostWhoseErrorResponseIsCutMidBodyKeepsItsStatusAndIsNotRepeated) {
  RawServer server([](int, int, const std::string&) {
    // Promises 100 bytes, sends 10, then goes silent until the client gives up.
    return std::string("HTTP/1.1 500 Internal\r\nContent-Length: 100\r\n\r\n0123456789");
  });
  Config config = ConfigFor(server);
  config.timeout = std::chrono::milliseconds(300);
  auto client = NewClient(config);
  try {
    client->PostRaw("/api/v1/namespaces/d/pods/p/binding", "{}");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.http_status(), 500) << e.what();
  }
  EXPECT_EQ(server.requests().size(), 1u) << "a POST the server received must not be repeated";
}

TEST(RawFakeServerTest, StreamedListHandsOverTheChunkedBodyAndReusesTheConnection) {
  const std::string body = R"({"kind":"PodList","metadata":{},"items":[{"a":1},{"b":2}]})";
  RawServer server([&](int, int, const std::string&) { return ChunkedOk(body, 9); });
  auto client = NewClient(ConfigFor(server));
  std::string got;
  client->ListPageStream("/api/v1/pods", ListOptions{}, "",
                         [&](std::string_view bytes) { got.append(bytes); });
  EXPECT_EQ(got, body);
  client->ListPageStream("/api/v1/pods", ListOptions{}, "", [](std::string_view) {});
  EXPECT_EQ(server.connections(), 1);
}

TEST(RawFakeServerTest, StreamedListCutAfterItsFirstBytesIsNotRepeated) {
  RawServer server([](int, int, const std::string&) {
    // Promises 100 bytes, sends 10, then goes silent until the client gives up.
    return std::string("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"items\":[");
  });
  Config config = ConfigFor(server);
  config.timeout = std::chrono::milliseconds(300);
  auto client = NewClient(config);
  std::string got;
  try {
    client->ListPageStream("/api/v1/pods", ListOptions{}, "",
                           [&](std::string_view bytes) { got.append(bytes); });
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.reason() == ErrorReason::kTimeout || e.reason() == ErrorReason::kTransport)
        << e.what();
  }
  // A LIST is otherwise retried, but the caller has already consumed part of this body.
  EXPECT_EQ(got, R"({"items":[)");
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(RawFakeServerTest, StreamedListErrorStatusIsThrownWithoutHandingOverTheBody) {
  RawServer server([](int, int, const std::string&) {
    const std::string status =
        R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden",)"
        R"("message":"pods is forbidden","code":403})";
    return "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(status.size()) + "\r\n\r\n" + status;
  });
  auto client = NewClient(ConfigFor(server));
  bool called = false;
  try {
    client->ListPageStream("/api/v1/pods", ListOptions{}, "",
                           [&](std::string_view) { called = true; });
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.http_status(), 403);
    EXPECT_THAT(e.what(), HasSubstr("pods is forbidden"));
  }
  EXPECT_FALSE(called);
}

TEST(RawFakeServerTest, GarbageStatusLineIsATransportErrorNamingTheServer) {
  RawServer server(
      [](int, int, const std::string&) { return std::string("SSH-2.0-OpenSSH\r\n\r\n"); });
  Config config = ConfigFor(server);
  auto client = NewClient(config);
  try {
    client->Delete("/api/v1/namespaces/d/pods/p");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTransport);
    EXPECT_THAT(e.what(), HasSubstr("malformed response from " + server.url()));
  }
  // DELETE is idempotent: every attempt was made.
  EXPECT_EQ(server.requests().size(), static_cast<size_t>(internal::kMaxAttempts));
}

TEST(RawFakeServerTest, InterimContinueResponseIsSkipped) {
  RawServer server([](int, int, const std::string&) {
    return "HTTP/1.1 100 Continue\r\n\r\n" + Ok(R"({"kind":"Pod"})");
  });
  EXPECT_EQ(NewClient(ConfigFor(server))->Get("/x")["kind"], "Pod");
}

TEST(RawFakeServerTest, WatchOverChunksSplitInsideEventsAndSizes) {
  // Each event is cut across chunk boundaries; the stream then ends with the zero chunk.
  RawServer server([](int, int, const std::string&) {
    const std::string a = R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a"}}})";
    const std::string b = R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"b"}}})";
    return ChunkedOk(a + "\n" + b + "\n", 7);
  });
  auto stream = NewClient(ConfigFor(server))->Watch("/api/v1/pods", WatchOptions{});
  WatchEvent event;
  ASSERT_TRUE(stream->Next(&event));
  EXPECT_EQ(event.type, WatchEventType::kAdded);
  EXPECT_EQ(event.object["metadata"]["name"], "a");
  ASSERT_TRUE(stream->Next(&event));
  EXPECT_EQ(event.type, WatchEventType::kDeleted);
  EXPECT_EQ(event.object["metadata"]["name"], "b");
  EXPECT_FALSE(stream->Next(&event));
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_THAT(requests[0], HasSubstr("GET /api/v1/pods?watch=1&allowWatchBookmarks=true"));
}

TEST(RawFakeServerTest, ProtobufWatchFramesSplitAcrossChunksThenACutFrameIsAnError) {
  const auto event = [](std::string_view type, std::string_view name) {
    const berth::testing::Proto pod =
        berth::testing::Proto().Message(1, berth::testing::Proto().Bytes(1, name));
    return berth::testing::Proto()
        .Bytes(1, type)
        .Message(2, berth::testing::Proto().Bytes(1, pod.Envelope("Pod")))
        .Frame();
  };
  RawServer server([&](int, int, const std::string&) {
    const std::string cut = event("DELETED", "c").substr(0, 9);
    return ChunkedOk(event("ADDED", "a") + event("MODIFIED", "b") + cut, 5,
                     "application/vnd.kubernetes.protobuf;stream=watch");
  });
  WatchOptions options;
  options.prefer_protobuf = true;
  auto stream = NewClient(ConfigFor(server))->Watch("/api/v1/pods", options);
  WatchEvent received;
  ASSERT_TRUE(stream->Next(&received));
  EXPECT_EQ(received.type, WatchEventType::kAdded);
  EXPECT_EQ(received.object["metadata"]["name"], "a");
  ASSERT_TRUE(stream->Next(&received));
  EXPECT_EQ(received.type, WatchEventType::kModified);
  EXPECT_EQ(received.object["metadata"]["name"], "b");
  EXPECT_THROW(stream->Next(&received), ApiError);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_THAT(requests[0],
              HasSubstr("\r\nAccept: application/vnd.kubernetes.protobuf, application/json\r\n"));
}

TEST(RawFakeServerTest, StreamedListReportsTheContentTypeBeforeTheBody) {
  RawServer server([](int, int, const std::string&) {
    return ChunkedOk("k8s-body", 3, "application/vnd.kubernetes.protobuf");
  });
  auto client = NewClient(ConfigFor(server));
  ListOptions options;
  options.prefer_protobuf = true;
  std::string content_type;
  std::vector<std::string> seen_with;
  client->ListPageStream(
      "/api/v1/pods", options, "", [&](std::string_view) { seen_with.push_back(content_type); },
      &content_type);
  ASSERT_FALSE(seen_with.empty());
  EXPECT_EQ(seen_with.front(), "application/vnd.kubernetes.protobuf");
  client->ListPageStream("/api/v1/pods", ListOptions{}, "", [](std::string_view) {});
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_THAT(requests[0],
              HasSubstr("\r\nAccept: application/vnd.kubernetes.protobuf, application/json\r\n"));
  EXPECT_THAT(requests[1], HasSubstr("\r\nAccept: application/json\r\n"));
}

TEST(RawFakeServerTest, ProtobufStatusOfAFailedListOrWatchIsDecoded) {
  const std::string forbidden = berth::testing::Proto()
                                    .Bytes(2, "Failure")
                                    .Bytes(3, "nodes is forbidden: cannot list resource \"nodes\"")
                                    .Bytes(4, "Forbidden")
                                    .Varint(6, 403)
                                    .Envelope("Status");
  std::atomic<int> served{0};
  RawServer server([&](int, int, const std::string&) {
    const std::string body = served++ < 2 ? forbidden : std::string("k8s\0garbage", 11);
    return "HTTP/1.1 403 Forbidden\r\nContent-Type: application/vnd.kubernetes.protobuf\r\n"
           "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  });
  auto client = NewClient(ConfigFor(server));
  ListOptions list;
  list.prefer_protobuf = true;
  WatchOptions watch;
  watch.prefer_protobuf = true;
  const auto error_of = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const ApiError& e) {
      return e;
    }
    return ApiError(ErrorReason::kUnknown, 0, "(no error)");
  };
  const ApiError list_error =
      error_of([&] { client->ListPageStream("/api/v1/nodes", list, "", [](std::string_view) {}); });
  EXPECT_EQ(list_error.reason(), ErrorReason::kForbidden);
  EXPECT_EQ(list_error.server_message(), "nodes is forbidden: cannot list resource \"nodes\"");
  const ApiError watch_error = error_of([&] { client->Watch("/api/v1/nodes", watch); });
  EXPECT_EQ(watch_error.reason(), ErrorReason::kForbidden);
  EXPECT_EQ(watch_error.server_message(), list_error.server_message());
  // A protobuf body that is no Status leaves the HTTP status to speak.
  const ApiError unreadable = error_of([&] { client->Watch("/api/v1/nodes", watch); });
  EXPECT_EQ(unreadable.reason(), ErrorReason::kForbidden);
  EXPECT_EQ(unreadable.server_message(), "the server responded with HTTP status 403");
}

TEST(RawFakeServerTest, ServerUrlWithPathOrBadPortIsAConfigError) {
  Config config;
  config.server = "https://127.0.0.1:6443/prefix";
  EXPECT_THROW(NewClient(config), ConfigError);
  config.server = "https://127.0.0.1:99999";
  EXPECT_THROW(NewClient(config), ConfigError);
  config.server = "https://[::1";
  EXPECT_THROW(NewClient(config), ConfigError);
  config.server = "https://[::1]:6443/";
  EXPECT_NO_THROW(NewClient(config));
}

// A refused server URL is named in the error without its userinfo, which is a credential.
TEST(RawFakeServerTest, ServerUrlRefusalDoesNotShowUserinfo) {
  Config config;
  config.server = "https://admin:secret@127.0.0.1:6443";
  EXPECT_THAT(
      [&] { internal::ParseEndpoint(config); },
      ::testing::ThrowsMessage<ConfigError>(::testing::Not(::testing::HasSubstr("secret"))));
}

TEST(RawFakeServerTest, ServerUrlIsReadAsLibcurlReadsIt) {
  Config config;
  config.server = "HTTPS://[::1]:6443";
  const internal::Endpoint endpoint = internal::ParseEndpoint(config);
  EXPECT_TRUE(endpoint.tls);
  EXPECT_EQ(endpoint.host, "::1");
  EXPECT_EQ(endpoint.port, "6443");
  EXPECT_EQ(endpoint.authority, "[::1]:6443");
  config.server = "https://[zzz]:6443";
  EXPECT_THROW(internal::ParseEndpoint(config), ConfigError);
  config.server = "https://127.0.0.1:0";
  EXPECT_THROW(internal::ParseEndpoint(config), ConfigError);
  config.server = "https://127.0.0.1:6443?x";
  EXPECT_THROW(internal::ParseEndpoint(config), ConfigError);
}

// The error of a GET answered with `reply` (a request of each kind is retried, so the server
// sees several).
ApiError ErrorOfGet(const std::string& reply) {
  RawServer server([&](int, int, const std::string&) { return reply; });
  try {
    NewClient(ConfigFor(server))->Get("/api/v1/pods");
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(ErrorReason::kUnknown, 0, "(no error)");
}

TEST(RawFakeServerTest, ConflictingContentLengthsAreRejected) {
  const ApiError error =
      ErrorOfGet("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x");
  EXPECT_EQ(error.reason(), ErrorReason::kTransport);
  EXPECT_THAT(error.what(), HasSubstr("malformed response"));
}

TEST(RawFakeServerTest, ContentLengthBesideTransferEncodingIsRejected) {
  const ApiError error = ErrorOfGet(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: "
      "2\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
  EXPECT_EQ(error.reason(), ErrorReason::kTransport);
  EXPECT_THAT(error.what(), HasSubstr("both Transfer-Encoding and Content-Length"));
}

TEST(RawFakeServerTest, TransferEncodingIsATokenNotASubstring) {
  const ApiError error =
      ErrorOfGet("HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
  EXPECT_EQ(error.reason(), ErrorReason::kTransport);
  EXPECT_THAT(error.what(), HasSubstr("malformed response"));
}

TEST(RawFakeServerTest, FourDigitStatusIsRejectedNotReadAsItsFirstThree) {
  const ApiError error = ErrorOfGet("HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_EQ(error.reason(), ErrorReason::kTransport);
  EXPECT_EQ(error.http_status(), 0);
  EXPECT_THAT(error.what(), HasSubstr("malformed response"));
}

TEST(RawFakeServerTest, EndlessHeadersAreAnErrorNotUnboundedMemory) {
  std::string reply = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; reply.size() <= internal::kMaxResponseHeaderBytes; ++i) {
    reply += "X-Filler-" + std::to_string(i) + ": " + std::string(100, 'x') + "\r\n";
  }
  reply += "Content-Length: 2\r\n\r\n{}";
  const ApiError error = ErrorOfGet(reply);
  EXPECT_EQ(error.reason(), ErrorReason::kTransport);
  EXPECT_THAT(error.what(), HasSubstr("malformed response"));
  EXPECT_THAT(error.what(), HasSubstr("response headers over 256 KiB"));
}

TEST(RawFakeServerTest, AnnouncedBodyOverTheCapIsRefusedBeforeAnyOfItArrives) {
  const ApiError error = ErrorOfGet(
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(internal::kMaxResponseBodyBytes + 1) +
      "\r\n\r\n{}");
  EXPECT_EQ(error.reason(), ErrorReason::kTransport);
  EXPECT_THAT(error.what(), HasSubstr("over the"));
}

TEST(RawFakeServerTest, WatchLineOverTheCapIsAnErrorNotUnboundedMemory) {
  // 1 MiB pieces of one line that never ends, past the cap.
  const std::string piece(size_t{1} << 20, 'x');
  RawServer server([&](int, int, const std::string&) {
    std::string reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    char size[16];
    std::snprintf(size, sizeof(size), "%zx", piece.size());
    for (size_t sent = 0; sent <= internal::kMaxWatchLineBytes; sent += piece.size()) {
      reply += std::string(size) + "\r\n" + piece + "\r\n";
    }
    return reply + "0\r\n\r\n";
  });
  auto stream = NewClient(ConfigFor(server))->Watch("/api/v1/pods", WatchOptions{});
  WatchEvent event;
  try {
    stream->Next(&event);
    FAIL() << "an endless line was accepted";
  } catch (const ApiError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a line of more than 64 MiB"));
  }
}

TEST(RawFakeServerTest, SlowReaderOfALargeStreamedListGetsEveryByteInOrder) {
  // Four times the stream buffer: the transfer pauses while the reader dawdles, then resumes.
  std::string body;
  body.reserve(internal::kStreamBufferBytes * 4);
  for (int i = 0; body.size() < internal::kStreamBufferBytes * 4; ++i) {
    body += std::to_string(i) + ",";
  }
  RawServer server([&](int, int, const std::string&) { return ChunkedOk(body, 1 << 16); });
  auto client = NewClient(ConfigFor(server));
  std::string got;
  int calls = 0;
  client->ListPageStream("/api/v1/pods", ListOptions{}, "", [&](std::string_view bytes) {
    if (++calls < 4) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    got.append(bytes);
  });
  EXPECT_EQ(got.size(), body.size());
  EXPECT_TRUE(got == body) << "the streamed body was reordered or corrupted";
}

TEST(RawFakeServerTest, ConnectDeadlineIsHonouredWhenTheServerNeverAccepts) {
  // A listener whose accept queue is full drops further SYNs: connecting hangs.
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 0), 0);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &length);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    // Non-blocking: completes (or is dropped) in the background.
    static_cast<void>(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  Config config;
  config.server = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  config.qps = 0;
  config.timeout = std::chrono::milliseconds(300);
  auto client = NewClient(config);
  std::vector<std::chrono::nanoseconds> attempts;
  client->SetRequestObserver(
      [&](const std::string&, int, std::chrono::nanoseconds took) { attempts.push_back(took); });
  try {
    client->PostRaw("/api/v1/namespaces/d/pods/p/binding", "{}");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTimeout) << e.what();
  }
  // The connection was never made, so even a POST is tried again, each time within its deadline.
  EXPECT_EQ(attempts.size(), static_cast<size_t>(internal::kMaxAttempts));
  for (const auto took : attempts) EXPECT_LT(took, std::chrono::milliseconds(1000));
  for (const int fd : fillers) close(fd);
  close(listener);
}

TEST(RawFakeServerTest, NameResolutionFailureIsATransportErrorWithinTheDeadline) {
  Config config;
  config.server = "http://berth-client-test.invalid:8080";
  config.qps = 0;
  config.timeout = std::chrono::milliseconds(500);
  auto client = NewClient(config);
  std::vector<std::chrono::nanoseconds> attempts;
  client->SetRequestObserver(
      [&](const std::string&, int, std::chrono::nanoseconds took) { attempts.push_back(took); });
  try {
    client->Get("/version");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.reason() == ErrorReason::kTransport || e.reason() == ErrorReason::kTimeout)
        << e.what();
    EXPECT_THAT(e.what(), HasSubstr("berth-client-test.invalid"));
  }
  for (const auto took : attempts) EXPECT_LT(took, std::chrono::milliseconds(1500));
}

}  // namespace
}  // namespace berth::client
