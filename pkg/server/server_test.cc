#include "pkg/server/server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <vector>

#include "pkg/server/auth/delegating.h"
#include "pkg/server/certificate.h"
#include "pkg/util/clock.h"
#include "test/testing/server_test_util.h"

namespace berth::server {
namespace {

using testing::Connect;
using testing::FreePort;
using testing::Get;
using testing::GuardedServer;
using testing::Plain;
using testing::ReadUntil;
using testing::Reply;
using testing::Request;
using testing::RulesAuthorizer;
using testing::Send;
using testing::SlowReviews;
using testing::TokensAuthenticator;

TEST(BindAddressTest, ParsesHostPortAndRejectsTheRest) {
  auto a = ParseBindAddress("0.0.0.0:10251");
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 10251);
  auto b = ParseBindAddress("[::1]:8080");
  EXPECT_EQ(b.host, "[::1]");
  EXPECT_EQ(b.port, 8080);
  for (const char* bad :
       {"", "10251", ":10251", "host:", "host:0", "host:70000", "::1:80", "host:12ab"}) {
    try {
      ParseBindAddress(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ServerError& e) {
      EXPECT_NE(std::string(e.what()).find("expected host:port"), std::string::npos);
    }
  }
}

TEST(HttpServerTest, ServesMetricsConfigzAndHealth) {
  std::atomic<bool> synced{false};
  Handlers handlers;
  handlers.metrics = [] { return std::string("berth_build_info 1\n"); };
  handlers.configz = [] { return std::string(R"({"profiles":[]})"); };
  handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
  handlers.readyz = {{"ping", [] { return std::optional<std::string>(); }},
                     {"informer-sync", [&]() -> std::optional<std::string> {
                        if (synced) return std::nullopt;
                        return "pods and nodes not listed yet";
                      }}};
  const uint16_t port = FreePort();
  HttpServer server(Plain(port), handlers);
  server.Start();
  const std::string base = server.url();
  EXPECT_EQ(base, "http://127.0.0.1:" + std::to_string(port));

  EXPECT_EQ(Get(base + "/metrics").body, "berth_build_info 1\n");
  EXPECT_EQ(Get(base + "/configz").body, R"({"profiles":[]})");
  EXPECT_EQ(Get(base + "/livez").status, 200);
  EXPECT_EQ(Get(base + "/healthz").body, "ok");

  Reply not_ready = Get(base + "/readyz");
  EXPECT_EQ(not_ready.status, 500);
  EXPECT_NE(not_ready.body.find("[-]informer-sync failed: pods and nodes not listed yet"),
            std::string::npos);
  EXPECT_NE(not_ready.body.find("[+]ping ok"), std::string::npos);
  synced = true;
  EXPECT_EQ(Get(base + "/readyz").status, 200);
  EXPECT_NE(Get(base + "/readyz?verbose").body.find("[+]informer-sync ok"), std::string::npos);
  EXPECT_EQ(Get(base + "/nope").status, 404);
  server.Stop();
}

size_t ThreadCount() {
  const auto tasks = std::filesystem::directory_iterator("/proc/self/task");
  return static_cast<size_t>(std::distance(begin(tasks), end(tasks)));
}

// Sizes the pool, serves one request and reports on stderr; for the death test below.
[[noreturn]] void ServeOnASizedPool() {
  const size_t before = ThreadCount();
  SetServerThreads(2);
  Handlers handlers;
  handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
  HttpServer server(Plain(FreePort()), handlers);
  server.Start();
  // Counted before the request: the test's own client brings a pool of its own.
  const size_t added = ThreadCount() - before;
  const bool answered = Get(server.url() + "/livez").status == 200;
  bool resize_rejected = false;
  try {
    SetServerThreads(3);
  } catch (const ServerError&) {
    resize_rejected = true;
  }
  std::fprintf(stderr, "answered=%d added=%zu resize_rejected=%d\n", answered, added,
               resize_rejected);
  std::_Exit(0);
}

// Runs in a fresh process ("threadsafe" death tests re-execute the binary): the pool can be
// sized only before any server has started. A server adds that many threads and, under a
// sanitizer, perhaps the runtime's.
TEST(HttpServerDeathTest, SetServerThreadsSizesThePoolRequestsRunOn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ServeOnASizedPool(), ::testing::ExitedWithCode(0),
              "answered=1 added=[23] resize_rejected=1");
}

TEST(HttpServerTest, ServesAnIpv6Address) {
  Handlers handlers;
  handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
  const uint16_t port = FreePort();
  Options options = Plain(port);
  options.bind_address = "[::1]:" + std::to_string(port);
  HttpServer server(options, handlers);
  try {
    server.Start();
  } catch (const ServerError& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  EXPECT_EQ(server.url(), "http://[::1]:" + std::to_string(port));
  // A raw request, so the IPv6 socket is all that is exercised.
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  addr.sin6_port = htons(port);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
      << std::strerror(errno);
  const std::string request = "GET /livez HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string response;
  std::array<char, 4096> chunk{};
  for (ssize_t n; (n = read(fd, chunk.data(), chunk.size())) > 0;) {
    response.append(chunk.data(), static_cast<size_t>(n));
  }
  close(fd);
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_EQ(response.substr(response.size() - 4), "\r\nok") << response;
}

TEST(HttpServerTest, PortInUseIsAClearError) {
  const uint16_t port = FreePort();
  HttpServer first(Plain(port), {});
  first.Start();
  HttpServer second(Plain(port), {});
  try {
    second.Start();
    FAIL() << "second listener on the same port started";
  } catch (const ServerError& e) {
    EXPECT_NE(
        std::string(e.what()).find("--port 127.0.0.1:" + std::to_string(port) + ": cannot listen"),
        std::string::npos)
        << e.what();
  }
}

Reply Call(const std::string& url, const std::string& method, const std::string& path,
           const std::string& body = "") {
  testing::HttpCallOptions options;
  options.method = method;
  if (method == "POST") {
    options.body = body;
    options.content_type = "application/yaml";
  }
  const testing::HttpResult result = testing::HttpCall(url + path, options);
  return {result.status, result.body};
}

TEST(HttpServerTest, DebugPathsGoToTheDebugHandlerOnlyWhenOneIsGiven) {
  std::atomic<bool> release{false};
  std::atomic<int> inside{0};
  Handlers handlers;
  handlers.debug = [&](const DebugRequest& r) {
    if (r.path == "/debug/slow") {
      inside++;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::string body = r.method + " " + r.path + " ";
    for (const auto& [k, v] : r.query) body.append(k).append("=").append(v).append(";");
    body.append(" ").append(r.body);
    return DebugResponse{201, body, "text/plain"};
  };
  HttpServer server(Plain(FreePort()), handlers);
  server.Start();
  const std::string url = server.url();
  Reply get = Call(url, "GET", "/debug/pods/ns/a%20b?format=text");
  EXPECT_EQ(get.status, 201);
  EXPECT_EQ(get.body, "GET /debug/pods/ns/a b format=text; ");
  Reply post = Call(url, "POST", "/debug/simulate", "kind: Pod\n");
  EXPECT_EQ(post.status, 201);
  EXPECT_EQ(post.body, "POST /debug/simulate  kind: Pod\n");
  EXPECT_EQ(Call(url, "POST", "/debug/simulate", std::string(kMaxDebugBodyBytes + 1, 'x')).status,
            413);
  EXPECT_EQ(Call(url, "POST", "/metrics").status, 404);

  // One debug request at a time: a second one while the first runs is told to retry.
  std::thread slow([&] { Call(url, "GET", "/debug/slow"); });
  while (inside.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Reply busy = Call(url, "GET", "/debug/pods");
  EXPECT_EQ(busy.status, 429);
  release = true;
  slow.join();
  server.Stop();

  HttpServer off(Plain(FreePort()), Handlers{});
  off.Start();
  EXPECT_EQ(Call(off.url(), "GET", "/debug/pods").status, 404);
  off.Stop();
}

TEST(HttpServerTest, TheFilterGuardsEveryPathButTheAlwaysAllowedOnes) {
  const CertificateKeyPair pair = GenerateSelfSigned("berth-test", {"localhost"}, {"127.0.0.1"});
  Handlers handlers;
  handlers.metrics = [] { return std::string("up 1\n"); };
  handlers.configz = [] { return std::string("{}"); };
  handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
  handlers.readyz = handlers.livez;
  handlers.debug = [](const DebugRequest& r) { return DebugResponse{200, r.path, "text/plain"}; };
  Options options = Plain(FreePort());
  options.tls = Certificate{"", "", pair.cert_pem, pair.key_pem};
  options.filter = std::make_shared<auth::Filter>(
      std::make_shared<TokensAuthenticator>(), std::make_shared<RulesAuthorizer>(),
      auth::PathMatcher(auth::DefaultAlwaysAllowPaths()));
  HttpServer server(options, handlers);
  server.Start();
  const std::string base = server.url();
  const std::string& ca = pair.cert_pem;

  for (const char* probe : {"/healthz", "/livez", "/readyz", "/readyz?verbose", "/%68ealthz"}) {
    EXPECT_EQ(Get(base + probe, ca).status, 200) << probe;
  }
  Reply anonymous = Get(base + "/metrics", ca);
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_NE(anonymous.body.find("\"reason\":\"Unauthorized\""), std::string::npos);
  EXPECT_EQ(Get(base + "/metrics", ca, "forged").status, 401);
  EXPECT_EQ(Get(base + "/configz", ca).status, 401);
  EXPECT_EQ(Get(base + "/nope", ca).status, 401);

  Reply scraped = Get(base + "/metrics", ca, "reader");
  EXPECT_EQ(scraped.status, 200);
  EXPECT_EQ(scraped.body, "up 1\n");
  Reply forbidden = Get(base + "/configz", ca, "reader");
  EXPECT_EQ(forbidden.status, 403);
  EXPECT_NE(forbidden.body.find("cannot get path \\\"/configz\\\""), std::string::npos)
      << forbidden.body;
  EXPECT_EQ(Get(base + "/configz", ca, "admin").body, "{}");
  EXPECT_EQ(Get(base + "/nope", ca, "admin").status, 404);

  // The debug endpoints reveal pod and node names: only those allowed see them.
  EXPECT_EQ(Get(base + "/debug/pods/ns/p", ca).status, 401);
  EXPECT_EQ(Get(base + "/debug/pods/ns/p", ca, "reader").status, 403);
  EXPECT_EQ(Get(base + "/debug/pods/ns/p", ca, "admin").body, "/debug/pods/ns/p");

  // Another spelling of a path is authorized as the path it is served as.
  EXPECT_EQ(Get(base + "/%6detrics", ca).status, 401);
  EXPECT_EQ(Get(base + "/%6detrics", ca, "reader").body, "up 1\n");
  EXPECT_EQ(Get(base + "/healthz/../metrics", ca).status, 401);
  EXPECT_EQ(Get(base + "/healthz/../metrics", ca, "reader").status, 403);

  // Other methods pass the filter too; TRACE is not echoed back to a stranger.
  EXPECT_EQ(Request(base + "/metrics", "TRACE", ca).status, 401);
  EXPECT_EQ(Request(base + "/metrics", "OPTIONS", ca).status, 401);
  EXPECT_EQ(Request(base + "/metrics", "PUT", ca, "reader").status, 403);
  EXPECT_EQ(Request(base + "/metrics", "PUT", ca, "admin").status, 405);
  EXPECT_EQ(Request(base + "/metrics", "HEAD", ca, "admin").status, 200);
  server.Stop();
}

std::string SimulateHead(const std::string& token, size_t length) {
  std::string head =
      "POST /debug/simulate HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\n";
  if (!token.empty()) head += "Authorization: Bearer " + token + "\r\n";
  return head + "Content-Length: " + std::to_string(length) + "\r\nExpect: 100-continue\r\n\r\n";
}

// The credentials are checked on the header block: a stranger's body is never waited for, and a
// stranger is never invited to send it.
TEST(HttpServerTest, AStrangersBodyIsNeitherContinuedNorReadBeforeTheAnswer) {
  GuardedServer s;
  for (const std::string token : {"", "forged", "reader"}) {
    const int fd = Connect(s.port());
    Send(fd, SimulateHead(token, 512 * 1024));
    const std::string answer = ReadUntil(fd);
    close(fd);
    EXPECT_EQ(answer.find("100 Continue"), std::string::npos) << token << ": " << answer;
    EXPECT_EQ(answer.rfind(token == "reader" ? "HTTP/1.1 403" : "HTTP/1.1 401", 0), 0u)
        << token << ": " << answer;
  }
  EXPECT_EQ(s.debug_calls.load(), 0);

  // An allowed caller is invited, sends the body and is served.
  const int fd = Connect(s.port());
  Send(fd, SimulateHead("admin", 10));
  EXPECT_EQ(ReadUntil(fd), "HTTP/1.1 100 Continue\r\n\r\n");
  Send(fd, "kind: Pod\n");
  const std::string served = ReadUntil(fd, "kind: Pod\n");
  close(fd);
  EXPECT_EQ(served.rfind("HTTP/1.1 200", 0), 0u) << served;
  EXPECT_EQ(s.debug_calls.load(), 1);
}

// kube-apiserver withholds why a check failed; here only a caller allowed to get the path reads
// the reasons (an informer's RBAC error, the lease's name), everyone else the status alone.
TEST(HttpServerTest, HealthReasonsAreToldOnlyToACallerAllowedThePath) {
  GuardedServer s;
  const std::string base = "http://127.0.0.1:" + std::to_string(s.port());
  for (const std::string token : {"", "forged", "reader"}) {
    for (const char* path : {"/readyz", "/readyz?verbose"}) {
      const Reply r = Get(base + path, "", token);
      EXPECT_EQ(r.status, 500) << token << " " << path;
      EXPECT_EQ(r.body, "readyz check failed\n") << token << " " << path;
    }
    const Reply live = Get(base + "/livez?verbose", "", token);
    EXPECT_EQ(live.status, 200);
    EXPECT_EQ(live.body, "ok") << token;
  }
  const Reply admin = Get(base + "/readyz", "", "admin");
  EXPECT_EQ(admin.status, 500);
  EXPECT_EQ(admin.body,
            "[+]ping ok\n[-]leader-election failed: lease kube-system/secret-lease neither held "
            "nor observed\nreadyz check failed\n");
  EXPECT_EQ(Get(base + "/livez?verbose", "", "admin").body, "[+]ping ok\nlivez check passed\n");
}

// Room for the many connections and requests one test sends from loopback.
void SetGenerousLimits(Options& options) {
  options.limits.max_connections = 1000;
  options.limits.max_connections_per_source = 1000;
  options.limits.request_burst = 1000;
}

// How many of `fds` get an answer starting with `prefix`, waiting until `want` have or 10 s pass.
size_t CountAnswers(const std::vector<int>& fds, const std::string& prefix, size_t want) {
  std::vector<pollfd> polls;
  for (int fd : fds) polls.push_back({fd, POLLIN, 0});
  size_t count = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (count < want && std::chrono::steady_clock::now() < deadline) {
    if (poll(polls.data(), polls.size(), 100) <= 0) continue;
    for (pollfd& p : polls) {
      if ((p.revents & (POLLIN | POLLHUP)) == 0) continue;
      std::array<char, 4096> chunk{};
      const ssize_t n = read(p.fd, chunk.data(), chunk.size());
      if (n > 0 && std::string(chunk.data(), static_cast<size_t>(n)).rfind(prefix, 0) == 0) {
        count++;
      }
      p.fd = -1;  // poll() skips it from now on.
    }
  }
  return count;
}

// Unique bogus tokens each need a review and fill the review queue; a token already reviewed is
// answered from memory and never queued behind them.
TEST(HttpServerTest, ACachedTokenIsServedWhileBogusTokensFillTheReviewQueue) {
  util::RealClock clock;
  auto slow = std::make_unique<SlowReviews>();
  SlowReviews* reviews = slow.get();
  GuardedServer s([&](Options& options) {
    options.filter =
        std::make_shared<auth::Filter>(std::make_shared<auth::CachedTokenAuthenticator>(
                                           std::move(slow), std::chrono::minutes(1), clock),
                                       std::make_shared<auth::CachedAuthorizer>(
                                           std::make_unique<RulesAuthorizer>(),
                                           std::chrono::minutes(1), std::chrono::minutes(1), clock),
                                       auth::PathMatcher(auth::DefaultAlwaysAllowPaths()));
    SetGenerousLimits(options);
  });
  const std::string metrics = "http://127.0.0.1:" + std::to_string(s.port()) + "/metrics";
  EXPECT_EQ(Get(metrics, "", "reader").status, 200);

  // Two reviews run, kAuthQueue wait; each one beyond is told 429 at once.
  constexpr size_t kHeld = HttpServer::kAuthWorkers + HttpServer::kAuthQueue;
  constexpr size_t kFlood = kHeld + 20;
  std::vector<int> fds;
  for (size_t i = 0; i < kFlood; i++) {
    fds.push_back(Connect(s.port()));
    Send(fds.back(), "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bogus-" +
                         std::to_string(i) + "\r\n\r\n");
  }
  // A worker may still be finishing the reader's review as the flood comes, which leaves one
  // place fewer for the flood: up to kAuthWorkers more may be refused.
  const size_t refused = CountAnswers(fds, "HTTP/1.1 429", kFlood - kHeld);
  EXPECT_GE(refused, kFlood - kHeld) << "the review queue is full";
  EXPECT_LE(refused, kFlood - kHeld + HttpServer::kAuthWorkers);

  const Reply scraped = Get(metrics, "", "reader");
  EXPECT_EQ(scraped.status, 200) << scraped.body;
  reviews->Release();
  for (int fd : fds) close(fd);
}

}  // namespace
}  // namespace berth::server
