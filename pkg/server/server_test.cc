#include "pkg/server/server.h"

// cpprestsdk's U() macro would break gtest's templates; the name is cpprestsdk's to choose.
#define _TURN_OFF_PLATFORM_STRING  // NOLINT(bugprone-reserved-identifier)
#include <arpa/inet.h>
#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/ssl.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <thread>

#include "pkg/server/auth/delegating.h"
#include "pkg/server/certificate.h"
#include "pkg/util/clock.h"
#include "test/testing/pki.h"

namespace berth::server {
namespace {

uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "no free port: " << std::strerror(errno);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

struct Reply {
  int status = 0;
  std::string body;
};

// `ca` is a file name, or PEM text when it starts with "-----". `cert`: the certificate the
// client presents, if any.
Reply Request(const std::string& url, const std::string& method, const std::string& ca = "",
              const std::string& token = "", const testing::CertificateFiles* cert = nullptr) {
  web::http::client::http_client_config config;
  if (!ca.empty()) {
    std::optional<testing::CertificateFiles> presented;
    if (cert != nullptr) presented = *cert;
    config.set_ssl_context_callback([ca, presented](boost::asio::ssl::context& ctx) {
      if (ca.rfind("-----", 0) == 0) {
        ctx.add_certificate_authority(boost::asio::buffer(ca));
      } else {
        ctx.load_verify_file(ca);
      }
      if (presented) {
        ctx.use_certificate_chain_file(presented->cert_file);
        ctx.use_private_key_file(presented->key_file, boost::asio::ssl::context::pem);
      }
    });
  }
  web::http::client::http_client client(url, config);
  web::http::http_request request(method);
  if (!token.empty()) request.headers().add("Authorization", "Bearer " + token);
  auto response = client.request(request).get();
  return {response.status_code(), response.extract_utf8string(true).get()};
}

Reply Get(const std::string& url, const std::string& ca = "", const std::string& token = "",
          const testing::CertificateFiles* cert = nullptr) {
  return Request(url, web::http::methods::GET, ca, token, cert);
}

Options Plain(uint16_t port) {
  Options options;
  options.bind_address = "127.0.0.1:" + std::to_string(port);
  options.flag = "--port";
  return options;
}

// A TCP connection to 127.0.0.1:`port` from `source` (any 127/8 address: loopback answers them
// all), or -1.
int Connect(uint16_t port, const char* source = "127.0.0.1") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ADD_FAILURE() << "connect from " << source << ": " << std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

void Send(int fd, const std::string& data) {
  ASSERT_EQ(send(fd, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size()))
      << std::strerror(errno);
}

// What arrives on `fd` until `until` has been read, the peer closes, or 10 s pass (a failure
// bound: a healthy server answers at once).
std::string ReadUntil(int fd, const std::string& until = "\r\n\r\n") {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (out.find(until) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    std::array<char, 4096> chunk{};
    const ssize_t n = read(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
    out.append(chunk.data(), static_cast<size_t>(n));
  }
  return out;
}

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
  // cpprestsdk's client cannot resolve a bracketed literal: a raw request instead.
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

TEST(HttpServerTest, ServesHttpsWithTheGivenCertificate) {
  auto dir =
      std::filesystem::temp_directory_path() / ("berth-server-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string cert = (dir / "tls.crt").string();
  const std::string key = (dir / "tls.key").string();
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  Handlers handlers;
  handlers.metrics = [] { return std::string("up 1\n"); };
  const uint16_t port = FreePort();
  Options options = Plain(port);
  options.tls = Certificate{cert, key, "", ""};
  HttpServer server(options, handlers);
  server.Start();
  EXPECT_EQ(server.url(), "https://127.0.0.1:" + std::to_string(port));
  Reply r = Get(server.url() + "/metrics", cert);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "up 1\n");
  // A client that does not trust the certificate is refused.
  EXPECT_THROW(Get(server.url() + "/metrics"), std::exception);
  server.Stop();
  std::filesystem::remove_all(dir);
}

TEST(HttpServerTest, HalfATlsPairOrAnUnreadableFileIsRejected) {
  Options half = Plain(1);
  half.tls = Certificate{"/tmp/only-cert.pem", "", "", ""};
  EXPECT_THROW(HttpServer(half, {}), ServerError);
  Options missing = Plain(FreePort());
  missing.tls = Certificate{"/nonexistent/tls.crt", "/nonexistent/tls.key", "", ""};
  HttpServer server(missing, {});
  try {
    server.Start();
    FAIL() << "started without a certificate";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("--tls-cert-file: cannot read"), std::string::npos);
  }
}

Reply Call(const std::string& url, const web::http::method& method, const std::string& path,
           const std::string& body = "") {
  web::http::client::http_client client(url);
  web::http::http_request request(method);
  request.set_request_uri(path);
  if (method == web::http::methods::POST) request.set_body(body, "application/yaml");
  auto response = client.request(request).get();
  return {response.status_code(), response.extract_utf8string(true).get()};
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
  Reply get = Call(url, web::http::methods::GET, "/debug/pods/ns/a%20b?format=text");
  EXPECT_EQ(get.status, 201);
  EXPECT_EQ(get.body, "GET /debug/pods/ns/a b format=text; ");
  Reply post = Call(url, web::http::methods::POST, "/debug/simulate", "kind: Pod\n");
  EXPECT_EQ(post.status, 201);
  EXPECT_EQ(post.body, "POST /debug/simulate  kind: Pod\n");
  EXPECT_EQ(Call(url, web::http::methods::POST, "/debug/simulate",
                 std::string(kMaxDebugBodyBytes + 1, 'x'))
                .status,
            413);
  EXPECT_EQ(Call(url, web::http::methods::POST, "/metrics").status, 404);

  // One debug request at a time: a second one while the first runs is told to retry.
  std::thread slow([&] { Call(url, web::http::methods::GET, "/debug/slow"); });
  while (inside.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Reply busy = Call(url, web::http::methods::GET, "/debug/pods");
  EXPECT_EQ(busy.status, 429);
  release = true;
  slow.join();
  server.Stop();

  HttpServer off(Plain(FreePort()), Handlers{});
  off.Start();
  EXPECT_EQ(Call(off.url(), web::http::methods::GET, "/debug/pods").status, 404);
  off.Stop();
}

TEST(HttpServerTest, ServesTheInMemorySelfSignedCertificateForLoopbackAndLocalhost) {
  const CertificateKeyPair pair = GenerateSelfSigned("berth-test", {"localhost"}, {"127.0.0.1"});
  Handlers handlers;
  handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
  const uint16_t port = FreePort();
  Options options = Plain(port);
  options.tls = Certificate{"", "", pair.cert_pem, pair.key_pem};
  HttpServer server(options, handlers);
  server.Start();
  EXPECT_EQ(server.url(), "https://127.0.0.1:" + std::to_string(port));
  // A client that trusts exactly this certificate accepts it for both names it connects by.
  EXPECT_EQ(Get(server.url() + "/livez", pair.cert_pem).status, 200);
  EXPECT_EQ(Get("https://localhost:" + std::to_string(port) + "/livez", pair.cert_pem).status, 200);
  // Another self-signed certificate is not what is served, and one without 127.0.0.1 does not
  // verify for it: the names in the served certificate are checked.
  const CertificateKeyPair other = GenerateSelfSigned("berth-test", {"localhost"}, {"127.0.0.1"});
  EXPECT_THROW(Get(server.url() + "/livez", other.cert_pem), std::exception);
  server.Stop();

  const CertificateKeyPair elsewhere = GenerateSelfSigned("berth-test", {}, {"10.1.2.3"});
  Options wrong_ip = Plain(FreePort());
  wrong_ip.tls = Certificate{"", "", elsewhere.cert_pem, elsewhere.key_pem};
  HttpServer server2(wrong_ip, handlers);
  server2.Start();
  EXPECT_THROW(Get(server2.url() + "/livez", elsewhere.cert_pem), std::exception);
}

TEST(HttpServerTest, AKeyThatIsNotTheCertificatesFailsStart) {
  const CertificateKeyPair a = GenerateSelfSigned("h", {}, {"127.0.0.1"});
  const CertificateKeyPair b = GenerateSelfSigned("h", {}, {"127.0.0.1"});
  Options options = Plain(FreePort());
  options.tls = Certificate{"", "", a.cert_pem, b.key_pem};
  HttpServer server(options, {});
  try {
    server.Start();
    FAIL() << "started with a key of another certificate";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot load the certificate"), std::string::npos)
        << e.what();
  }
}

// "reader" may get /metrics; "admin" may do anything; every other token is invalid.
class TokensAuthenticator : public auth::TokenAuthenticator {
 public:
  std::optional<auth::UserInfo> AuthenticateToken(const std::string& token) override {
    if (token == "reader" || token == "admin") return auth::UserInfo{token, "", {}, {}};
    return std::nullopt;
  }
};
class RulesAuthorizer : public auth::Authorizer {
 public:
  auth::Decision Authorize(const auth::Attributes& a) override {
    return {a.user.name == "admin" || (a.verb == "get" && a.path == "/metrics"), ""};
  }
};

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
  EXPECT_EQ(Request(base + "/metrics", web::http::methods::TRCE, ca).status, 401);
  EXPECT_EQ(Request(base + "/metrics", web::http::methods::OPTIONS, ca).status, 401);
  EXPECT_EQ(Request(base + "/metrics", web::http::methods::PUT, ca, "reader").status, 403);
  EXPECT_EQ(Request(base + "/metrics", web::http::methods::PUT, ca, "admin").status, 405);
  EXPECT_EQ(Request(base + "/metrics", web::http::methods::HEAD, ca, "admin").status, 200);
  server.Stop();
}

// Tokens as TokensAuthenticator, counting the reviews; users "reader" and "alice" may get
// /metrics; remembers whom it was asked about last.
class CountingAuthenticator : public auth::TokenAuthenticator {
 public:
  std::optional<auth::UserInfo> AuthenticateToken(const std::string& token) override {
    reviews++;
    if (token == "reader") return auth::UserInfo{token, "", {"system:authenticated"}, {}};
    return std::nullopt;
  }
  std::atomic<int> reviews{0};
};
class RecordingAuthorizer : public auth::Authorizer {
 public:
  auth::Decision Authorize(const auth::Attributes& a) override {
    std::lock_guard lock(mu);
    last = a.user;
    return {(a.user.name == "reader" || a.user.name == "alice") && a.path == "/metrics", ""};
  }
  auth::UserInfo Last() {
    std::lock_guard lock(mu);
    return last;
  }
  std::mutex mu;
  auth::UserInfo last;
};

class ClientCertificateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = pki_.Ca("client-ca");
    other_ca_ = pki_.Ca("other-ca");
    serving_ = pki_.Server(ca_, "serving");
    ca_file_ = dir_.Write("client-ca.crt", ca_.cert_pem);
  }

  std::unique_ptr<HttpServer> Serve(const std::string& client_ca) {
    Handlers handlers;
    handlers.metrics = [] { return std::string("up 1\n"); };
    handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
    Options options = Plain(FreePort());
    options.tls = Certificate{serving_.cert_file, serving_.key_file, "", ""};
    options.client_ca = client_ca;
    options.filter = std::make_shared<auth::Filter>(
        authn_, authz_, auth::PathMatcher(auth::DefaultAlwaysAllowPaths()));
    auto server = std::make_unique<HttpServer>(options, handlers);
    server->Start();
    return server;
  }

  Reply Metrics(const HttpServer& server, const testing::CertificateFiles* cert,
                const std::string& token = "") {
    return Get(server.url() + "/metrics", ca_.cert_file, token, cert);
  }

  testing::Pki pki_;
  testing::TempDir dir_;
  testing::CertificateFiles ca_, other_ca_, serving_;
  std::string ca_file_;
  std::shared_ptr<CountingAuthenticator> authn_ = std::make_shared<CountingAuthenticator>();
  std::shared_ptr<RecordingAuthorizer> authz_ = std::make_shared<RecordingAuthorizer>();
};

TEST_F(ClientCertificateTest, ACertificateSignedByTheClientCaIsItsCommonNameAndOrganizations) {
  const auto alice = pki_.Client(ca_, "alice", "/O=scrapers/O=team-a/CN=alice");
  auto server = Serve(ca_file_);
  Reply scraped = Metrics(*server, &alice);
  EXPECT_EQ(scraped.status, 200) << scraped.body;
  EXPECT_EQ(scraped.body, "up 1\n");
  const auth::UserInfo user = authz_->Last();
  EXPECT_EQ(user.name, "alice");
  EXPECT_EQ(user.groups, (std::vector<std::string>{"scrapers", "team-a", "system:authenticated"}));
  ASSERT_EQ(user.extra.count("authentication.kubernetes.io/credential-id"), 1u);
  EXPECT_EQ(
      user.extra.at("authentication.kubernetes.io/credential-id").at(0).rfind("X509SHA256=", 0),
      0u);
  // The certificate wins over a token sent beside it, which is never reviewed.
  EXPECT_EQ(Metrics(*server, &alice, "reader").status, 200);
  EXPECT_EQ(authz_->Last().name, "alice");
  EXPECT_EQ(authn_->reviews.load(), 0);

  // Authorization still applies: a user the authorizer does not allow is 403, named.
  const auto bob = pki_.Client(ca_, "bob", "/CN=bob");
  Reply forbidden = Metrics(*server, &bob);
  EXPECT_EQ(forbidden.status, 403);
  EXPECT_NE(forbidden.body.find("User \\\"bob\\\" cannot get path"), std::string::npos)
      << forbidden.body;
}

TEST_F(ClientCertificateTest, WithoutACertificateTheTokenDecides) {
  auto server = Serve(ca_file_);
  EXPECT_EQ(Metrics(*server, nullptr).status, 401);
  EXPECT_EQ(Metrics(*server, nullptr, "reader").status, 200);
  EXPECT_EQ(authz_->Last().name, "reader");
  EXPECT_EQ(Get(server->url() + "/livez", ca_.cert_file).status, 200);
}

// kube-apiserver asks for a certificate without requiring one and verifies it per request: one
// that does not verify authenticates no one, and the request goes on to the bearer token.
TEST_F(ClientCertificateTest, AnUntrustedExpiredOrServerOnlyCertificateIsNoIdentity) {
  const auto stranger = pki_.Client(other_ca_, "stranger", "/CN=alice");
  const auto expired = pki_.Client(ca_, "expired", "/CN=alice", -1);
  const auto server_only = pki_.Server(ca_, "server-only");
  const auto nameless = pki_.Client(ca_, "nameless", "/O=scrapers");
  auto server = Serve(ca_file_);
  for (const auto* cert : {&stranger, &expired, &server_only, &nameless}) {
    EXPECT_EQ(Metrics(*server, cert).status, 401) << cert->cert_file;
    EXPECT_EQ(Metrics(*server, cert, "reader").status, 200) << cert->cert_file;
    EXPECT_EQ(authz_->Last().name, "reader") << cert->cert_file;
    // Probes answer whatever the certificate.
    EXPECT_EQ(Get(server->url() + "/healthz", ca_.cert_file, "", cert).status, 200);
  }
}

TEST_F(ClientCertificateTest, WithoutAClientCaACertificateIsNotAskedFor) {
  const auto alice = pki_.Client(ca_, "alice", "/CN=alice");
  auto server = Serve("");
  EXPECT_EQ(Metrics(*server, &alice).status, 401);
}

TEST_F(ClientCertificateTest, TheCaFileIsReadAgainForEveryConnection) {
  const auto alice = pki_.Client(other_ca_, "alice", "/CN=alice");
  auto server = Serve(ca_file_);
  EXPECT_EQ(Metrics(*server, &alice).status, 401);
  dir_.Write("client-ca.crt", ca_.cert_pem + other_ca_.cert_pem);
  EXPECT_EQ(Metrics(*server, &alice).status, 200);
  EXPECT_EQ(authz_->Last().name, "alice");
}

TEST_F(ClientCertificateTest, AnUnusableCaFileFailsStartNamingTheFlagAndFile) {
  const std::string not_pem = dir_.Write("not-pem.crt", "hello\n");
  for (const std::string& path : {std::string("/nonexistent/ca.crt"), not_pem}) {
    try {
      Serve(path);
      ADD_FAILURE() << "started with " << path;
    } catch (const ServerError& e) {
      EXPECT_NE(std::string(e.what()).find("--client-ca-file"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  Options plain = Plain(1);
  plain.client_ca = ca_file_;
  EXPECT_THROW(HttpServer(plain, {}), ServerError);
}

// A plain listener guarded like the secure port: "reader" may get /metrics, "admin" anything.
// The debug handler echoes the body and counts its calls.
struct GuardedServer {
  explicit GuardedServer(std::function<void(Options&)> adjust = nullptr) {
    handlers.metrics = [] { return std::string("up 1\n"); };
    handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
    handlers.readyz = {{"ping", [] { return std::optional<std::string>(); }},
                       {"leader-election", [] {
                          return std::optional<std::string>(
                              "lease kube-system/secret-lease neither held nor observed");
                        }}};
    handlers.debug = [this](const DebugRequest& r) {
      debug_calls++;
      return DebugResponse{200, r.body, "text/plain"};
    };
    options = Plain(FreePort());
    options.filter = std::make_shared<auth::Filter>(
        std::make_shared<TokensAuthenticator>(), std::make_shared<RulesAuthorizer>(),
        auth::PathMatcher(auth::DefaultAlwaysAllowPaths()));
    if (adjust) adjust(options);
    server = std::make_unique<HttpServer>(options, handlers);
    server->Start();
  }
  uint16_t port() const { return ParseBindAddress(options.bind_address).port; }

  Handlers handlers;
  Options options;
  std::atomic<int> debug_calls{0};
  std::unique_ptr<HttpServer> server;
};

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

// Connects, handshakes TLS 1.2 (or any version, with `tls12` false) offering only `ciphers`, and
// says whether the handshake succeeded.
bool Handshakes(uint16_t port, const char* ciphers, bool tls12 = true) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  if (tls12) {
    SSL_CTX_set_max_proto_version(ctx.get(), TLS1_2_VERSION);
    // Security level 0: the client offers what it is told, so the server alone decides.
    SSL_CTX_set_security_level(ctx.get(), 0);
    if (SSL_CTX_set_cipher_list(ctx.get(), ciphers) != 1) {
      ADD_FAILURE() << "this OpenSSL does not know " << ciphers;
      return false;
    }
  }
  const int fd = Connect(port);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  SSL_set_fd(ssl.get(), fd);
  const bool ok = SSL_connect(ssl.get()) == 1;
  close(fd);
  return ok;
}

TEST(HttpServerTest, Tls12NegotiatesOnlyEcdheWithAnAeadCipher) {
  // An ECDSA certificate (the self-signed one) and an RSA one.
  const CertificateKeyPair ecdsa = GenerateSelfSigned("berth-test", {}, {"127.0.0.1"});
  testing::TempDir dir;
  const std::string cert = dir.Join("rsa.crt");
  const std::string key = dir.Join("rsa.key");
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                         "-keyout " +
                         key + " -out " + cert + " >/dev/null 2>&1")
                            .c_str()),
            0);
  Options ec = Plain(FreePort());
  ec.tls = Certificate{"", "", ecdsa.cert_pem, ecdsa.key_pem};
  HttpServer ec_server(ec, {});
  ec_server.Start();
  const uint16_t ec_port = ParseBindAddress(ec.bind_address).port;
  for (const char* good : {"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                           "ECDHE-ECDSA-CHACHA20-POLY1305"}) {
    EXPECT_TRUE(Handshakes(ec_port, good)) << good;
  }
  for (const char* bad :
       {"ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-AES128-SHA256"}) {
    EXPECT_FALSE(Handshakes(ec_port, bad)) << bad;
  }
  EXPECT_TRUE(Handshakes(ec_port, "", false)) << "TLS 1.3 with its own suites";

  Options rsa = Plain(FreePort());
  rsa.tls = Certificate{cert, key, "", ""};
  HttpServer rsa_server(rsa, {});
  rsa_server.Start();
  const uint16_t rsa_port = ParseBindAddress(rsa.bind_address).port;
  for (const char* good : {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384",
                           "ECDHE-RSA-CHACHA20-POLY1305"}) {
    EXPECT_TRUE(Handshakes(rsa_port, good)) << good;
  }
  for (const char* bad : {"AES128-GCM-SHA256", "AES256-SHA", "DHE-RSA-AES128-GCM-SHA256",
                          "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384"}) {
    EXPECT_FALSE(Handshakes(rsa_port, bad)) << bad;
  }
}

// A review that waits until released, for tokens starting "bogus"; "reader" is a user at once.
class SlowReviews : public auth::TokenAuthenticator {
 public:
  std::optional<auth::UserInfo> AuthenticateToken(const std::string& token) override {
    if (token == "reader") return auth::UserInfo{token, "", {}, {}};
    std::unique_lock lock(mu);
    waiting++;
    cv.wait(lock, [&] { return released; });
    return std::nullopt;
  }
  void Release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  int waiting = 0;
  bool released = false;
};

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
  const size_t refused = CountAnswers(fds, "HTTP/1.1 429", kFlood - kHeld);
  EXPECT_EQ(refused, kFlood - kHeld) << "the review queue is full";

  const Reply scraped = Get(metrics, "", "reader");
  EXPECT_EQ(scraped.status, 200) << scraped.body;
  reviews->Release();
  for (int fd : fds) close(fd);
}

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

// The serving pair is loaded once and again only when its files change: a renewed pair is served
// to the next connection, and files caught half-written leave the last good pair in use.
TEST_F(ClientCertificateTest, TheServingPairIsReloadedWhenItsFilesChange) {
  const auto renewed = pki_.Server(other_ca_, "renewed");
  const std::string cert = dir_.Write("tls.crt", serving_.cert_pem);
  const std::string key = dir_.Write("tls.key", serving_.key_pem);
  Handlers handlers;
  handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
  Options options = Plain(FreePort());
  options.tls = Certificate{cert, key, "", ""};
  HttpServer server(options, handlers);
  server.Start();
  const std::string livez = server.url() + "/livez";
  EXPECT_EQ(Get(livez, ca_.cert_file).status, 200);
  dir_.Write("tls.key", "-----BEGIN PRIVATE KEY-----\ntruncat");
  EXPECT_EQ(Get(livez, ca_.cert_file).status, 200) << "the last good pair is still served";
  dir_.Write("tls.crt", renewed.cert_pem);
  dir_.Write("tls.key", renewed.key_pem);
  EXPECT_EQ(Get(livez, other_ca_.cert_file).status, 200) << "the renewed pair is served";
  EXPECT_THROW(Get(livez, ca_.cert_file), std::exception);
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
