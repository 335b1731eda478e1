#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pkg/server/auth/delegating.h"
#include "pkg/server/certificate.h"
#include "pkg/server/server.h"
#include "pkg/util/clock.h"
#include "test/testing/server_test_util.h"

// The secure port's Limits: the listener's and each source's connection caps, the places of
// closed connections coming back however they ended, and each source's request rate.

namespace berth::server {
namespace {

using testing::Connect;
using testing::FreePort;
using testing::GuardedServer;
using testing::Handshakes;
using testing::Plain;
using testing::ReadUntil;
using testing::RulesAuthorizer;
using testing::Send;
using testing::SlowReviews;
using testing::TokensAuthenticator;

// One address may hold only so many connections: the next is closed at once, unanswered, while
// those already open are served.
TEST(HttpServerTest, ASourceOverItsConnectionCapIsClosedAtOnce) {
  GuardedServer s;
  std::vector<int> held;
  for (size_t i = 0; i < 64; i++) held.push_back(Connect(s.port()));
  const int over = Connect(s.port());
  Send(over, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(ReadUntil(over), "");
  close(over);
  Send(held.front(), "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(ReadUntil(held.front(), "\r\n\r\nok").rfind("HTTP/1.1 200", 0), 0u);
  for (int fd : held) close(fd);
}

// The whole answer on `fd` (its head, and a body of the length the head announces), or what came
// before the server closed the connection: "" when it closed unanswered.
std::string ReadAnswer(int fd) {
  std::string answer = ReadUntil(fd);
  const size_t head_end = answer.find("\r\n\r\n");
  if (head_end == std::string::npos) return answer;
  const std::string kLength = "Content-Length: ";
  const size_t at = answer.find(kLength);
  if (at == std::string::npos || at > head_end) return answer;
  const size_t size = head_end + 4 + std::stoul(answer.substr(at + kLength.size()));
  while (answer.size() < size) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) break;  // A failure bound, as in ReadUntil.
    std::array<char, 4096> chunk{};
    const ssize_t n = read(fd, chunk.data(), std::min(chunk.size(), size - answer.size()));
    if (n <= 0) break;
    answer.append(chunk.data(), static_cast<size_t>(n));
  }
  return answer;
}

// Sends "GET `path`" on `fd`, keeping the connection alive, and returns the whole answer; "" when
// the server closed the connection unanswered (a send that fails means the same).
std::string Ask(int fd, const std::string& path, const std::string& token = "") {
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return "";
  }
  return ReadAnswer(fd);
}

// The status code of an answer, 0 for none.
int Status(const std::string& answer) {
  if (answer.rfind("HTTP/1.1 ", 0) != 0 || answer.size() < 12) return 0;
  return std::stoi(answer.substr(9, 3));
}

std::string Loopback(int host) { return "127.0.0." + std::to_string(host); }

// A connection from `source` that the server took and answered a probe on, left open. A
// connection closed unanswered is tried again: the places of connections the test closed are
// freed once the server's threads notice, which the test cannot wait on otherwise. -1 when none
// is served within 10 s, a failure bound: a place that is freed at all is freed at once.
int OpenServed(uint16_t port, const std::string& source) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    const int fd = Connect(port, source.c_str());
    if (fd < 0) return -1;
    if (Status(Ask(fd, "/livez")) == 200) return fd;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  return -1;
}

// The listener's cap counts every source's connections: the one over it is closed at once,
// unanswered, those already open are served, and the places of closed connections come back.
TEST(HttpServerTest, AConnectionOverTheListenersCapIsClosedAtOnceAndPlacesComeBack) {
  constexpr int kCap = 8;
  GuardedServer s([](Options& options) { options.limits.max_connections = kCap; });
  // One connection from each of eight sources, far below a source's cap of 64.
  const int scraper = Connect(s.port(), "127.0.0.1");
  EXPECT_EQ(Status(Ask(scraper, "/metrics", "reader")), 200);
  std::vector<int> held;
  for (int host = 2; host <= kCap; host++)
    held.push_back(Connect(s.port(), Loopback(host).c_str()));
  // Accepted in the order they connected: the eight above hold every place.
  const int over = Connect(s.port(), Loopback(kCap + 1).c_str());
  EXPECT_EQ(Ask(over, "/livez"), "") << "over the listener's cap";
  close(over);
  const std::string again = Ask(scraper, "/metrics", "reader");
  EXPECT_EQ(Status(again), 200) << again;
  EXPECT_NE(again.find("up 1\n"), std::string::npos) << again;
  for (int fd : held) EXPECT_EQ(Status(Ask(fd, "/livez")), 200);

  // A closed connection's place is taken by the next, and the cap holds again.
  close(held.back());
  held.back() = OpenServed(s.port(), Loopback(20));
  ASSERT_GE(held.back(), 0) << "a closed connection's place was not freed";
  const int over_again = Connect(s.port(), Loopback(21).c_str());
  EXPECT_EQ(Ask(over_again, "/livez"), "") << "over the listener's cap again";
  close(over_again);

  // Every place comes back once all close.
  close(scraper);
  for (int fd : held) close(fd);
  held.clear();
  for (int host = 30; host < 30 + kCap; host++) {
    held.push_back(OpenServed(s.port(), Loopback(host)));
    ASSERT_GE(held.back(), 0) << "connection " << held.size() << " of " << kCap;
  }
  const int last_over = Connect(s.port(), Loopback(30 + kCap).c_str());
  EXPECT_EQ(Ask(last_over, "/livez"), "") << "over the listener's cap after all closed";
  close(last_over);
  for (int fd : held) close(fd);
}

// A source's places come back when its connections close: 64 open, close, 64 open again.
TEST(HttpServerTest, ASourcesConnectionPlacesComeBackWhenItsConnectionsClose) {
  GuardedServer s;
  for (int round = 1; round <= 2; round++) {
    std::vector<int> held;
    for (size_t i = 0; i < 64; i++) {
      held.push_back(OpenServed(s.port(), "127.0.0.1"));
      ASSERT_GE(held.back(), 0) << "round " << round << ", connection " << i + 1;
    }
    const int over = Connect(s.port());
    EXPECT_EQ(Ask(over, "/livez"), "") << "round " << round << ": over the source's cap";
    close(over);
    for (int fd : held) close(fd);
  }
}

// Requests that need a review, or are refused, spend a source's tokens; beyond its burst they get
// 429 until the bucket refills with time, while a caller whose token and decision are remembered,
// and a probe, are served throughout.
TEST(HttpServerTest, ReviewsBeyondASourcesBurstGet429UntilItsBucketRefills) {
  util::FakeClock clock;
  GuardedServer s([&](Options& options) {
    options.filter = std::make_shared<auth::Filter>(
        std::make_shared<auth::CachedTokenAuthenticator>(std::make_unique<TokensAuthenticator>(),
                                                         std::chrono::minutes(1), clock),
        std::make_shared<auth::CachedAuthorizer>(std::make_unique<RulesAuthorizer>(),
                                                 std::chrono::minutes(1), std::chrono::minutes(1),
                                                 clock),
        auth::PathMatcher(auth::DefaultAlwaysAllowPaths()));
    options.limits.request_burst = 3;
    options.limits.requests_per_second = 1;
    options.limits.clock = &clock;
  });
  const int fd = Connect(s.port(), "127.0.0.1");
  EXPECT_EQ(Status(Ask(fd, "/metrics", "reader")), 200);  // Reviewed: one token.
  EXPECT_EQ(Status(Ask(fd, "/metrics", "bogus-1")), 401);
  EXPECT_EQ(Status(Ask(fd, "/metrics")), 401);  // Refused without a review: a token too.
  const std::string limited = Ask(fd, "/metrics", "bogus-2");
  EXPECT_EQ(Status(limited), 429) << limited;
  EXPECT_NE(limited.find("Retry-After: 1\r\n"), std::string::npos) << limited;
  for (int i = 0; i < 5; i++) {
    const std::string cached = Ask(fd, "/metrics", "reader");
    EXPECT_EQ(Status(cached), 200) << "a remembered caller is not limited: " << cached;
  }
  EXPECT_EQ(Status(Ask(fd, "/livez")), 200);
  EXPECT_EQ(Status(Ask(fd, "/metrics", "bogus-3")), 429) << "nothing refilled without time";

  // Another source has a bucket of its own.
  const int other = Connect(s.port(), "127.0.0.2");
  EXPECT_EQ(Status(Ask(other, "/metrics", "bogus-4")), 401);
  close(other);

  // One second: one token.
  clock.Step(std::chrono::seconds(1));
  EXPECT_EQ(Status(Ask(fd, "/metrics", "bogus-5")), 401);
  EXPECT_EQ(Status(Ask(fd, "/metrics", "bogus-6")), 429);
  // A long wait refills no more than the burst.
  clock.Step(std::chrono::minutes(10));
  for (int i = 0; i < 3; i++)
    EXPECT_EQ(Status(Ask(fd, "/metrics", "bogus-x" + std::to_string(i))), 401);
  EXPECT_EQ(Status(Ask(fd, "/metrics", "bogus-7")), 429);
  close(fd);
}

class AllowEveryone : public auth::Authorizer {
 public:
  auth::Decision Authorize(const auth::Attributes& /*attributes*/) override { return {true, ""}; }
};

// A connection's place is freed however it ends: a client gone mid-header, mid-body (its request
// admitted, so the body is read), or while its review runs.
TEST(HttpServerTest, AConnectionsPlaceIsFreedWhenThePeerLeavesMidRequest) {
  auto slow = std::make_shared<SlowReviews>();
  GuardedServer s([&](Options& options) {
    options.filter =
        std::make_shared<auth::Filter>(slow, std::make_shared<AllowEveryone>(),
                                       auth::PathMatcher(auth::DefaultAlwaysAllowPaths()));
    options.limits.max_connections_per_source = 2;
  });
  // Destroyed before the server, whose destruction waits for the reviews in flight: a failed
  // assertion below must not leave them waiting forever.
  const std::unique_ptr<SlowReviews, void (*)(SlowReviews*)> release(
      slow.get(), [](SlowReviews* reviews) { reviews->Release(); });
  for (int i = 0; i < 3; i++) {
    int fd = OpenServed(s.port(), "127.0.0.1");
    ASSERT_GE(fd, 0);
    Send(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthor");  // Half a header.
    close(fd);

    fd = OpenServed(s.port(), "127.0.0.1");
    ASSERT_GE(fd, 0);
    Send(fd,
         "POST /debug/simulate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer reader\r\n"
         "Content-Length: 100\r\n\r\nkind: P");  // Part of a body.
    close(fd);
  }
  // Two held by reviews that run on after their clients left.
  for (int i = 0; i < 2; i++) {
    const int fd = OpenServed(s.port(), "127.0.0.1");
    ASSERT_GE(fd, 0);
    Send(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bogus-" +
                 std::to_string(i) + "\r\n\r\n");
    close(fd);
  }
  const int held = Connect(s.port());
  EXPECT_EQ(Ask(held, "/livez"), "") << "both places held by the reviews in flight";
  close(held);
  slow->Release();
  std::vector<int> fds;
  for (int i = 0; i < 2; i++) {
    fds.push_back(OpenServed(s.port(), "127.0.0.1"));
    EXPECT_GE(fds.back(), 0) << "place " << i + 1 << " not freed";
  }
  for (int fd : fds) close(fd);
}

// A connection whose TLS handshake fails, or whose client leaves mid-handshake, frees its place.
TEST(HttpServerTest, AFailedTlsHandshakeFreesItsPlace) {
  const CertificateKeyPair pair = GenerateSelfSigned("berth-test", {}, {"127.0.0.1"});
  Options options = Plain(FreePort());
  options.tls = Certificate{"", "", pair.cert_pem, pair.key_pem};
  options.limits.max_connections_per_source = 2;
  // OpenSSL writes a ClientHello with write(): on a connection the server closed unanswered, for
  // want of a place, SIGPIPE would end the test binary instead of failing the handshake.
  struct IgnoreSigpipe {
    IgnoreSigpipe() : previous(std::signal(SIGPIPE, SIG_IGN)) {}
    ~IgnoreSigpipe() { std::signal(SIGPIPE, previous); }
    void (*previous)(int);
  } ignore_sigpipe;
  HttpServer server(options, {});
  server.Start();
  const uint16_t port = ParseBindAddress(options.bind_address).port;
  for (int i = 0; i < 3; i++) {
    EXPECT_FALSE(Handshakes(port, "AES256-SHA")) << "no suite in common";
    const int plain = Connect(port);
    Send(plain, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n");  // Not a ClientHello.
    ReadUntil(plain);
    close(plain);
    close(Connect(port));  // Gone before its ClientHello.
  }
  // Places come back only as the server notices; a handshake refused for want of one is retried.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool handshook = false;
  while (!handshook && std::chrono::steady_clock::now() < deadline) {
    handshook = Handshakes(port, "", false);
    if (!handshook) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(handshook) << "a failed handshake's place was not freed";
}

}  // namespace
}  // namespace berth::server
