#include "pkg/server/server.h"

// cpprestsdk's U() macro would break gtest's templates; the name is cpprestsdk's to choose.
#define _TURN_OFF_PLATFORM_STRING  // NOLINT(bugprone-reserved-identifier)
#include <arpa/inet.h>
#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/ssl.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <thread>

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

Reply Get(const std::string& url, const std::string& ca_file = "") {
  web::http::client::http_client_config config;
  if (!ca_file.empty()) {
    config.set_ssl_context_callback(
        [ca_file](boost::asio::ssl::context& ctx) { ctx.load_verify_file(ca_file); });
  }
  web::http::client::http_client client(url, config);
  auto response = client.request(web::http::methods::GET).get();
  return {response.status_code(), response.extract_utf8string(true).get()};
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
      EXPECT_NE(std::string(e.what()).find("--bind-address"), std::string::npos);
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
  HttpServer server({"127.0.0.1:" + std::to_string(port), "", ""}, handlers);
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
  HttpServer server({"127.0.0.1:" + std::to_string(FreePort()), "", ""}, handlers);
  server.Start();
  const bool answered = Get(server.url() + "/livez").status == 200;
  const size_t added = ThreadCount() - before;
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
// sized only before anything in the process has used it. The default pool would add 40 threads;
// a sized one adds its own and, under a sanitizer, perhaps the runtime's.
TEST(HttpServerDeathTest, SetServerThreadsSizesThePoolRequestsRunOn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ServeOnASizedPool(), ::testing::ExitedWithCode(0),
              "answered=1 added=[0-9] resize_rejected=1");
}

TEST(HttpServerTest, PortInUseIsAClearError) {
  const uint16_t port = FreePort();
  HttpServer first({"127.0.0.1:" + std::to_string(port), "", ""}, {});
  first.Start();
  HttpServer second({"127.0.0.1:" + std::to_string(port), "", ""}, {});
  try {
    second.Start();
    FAIL() << "second listener on the same port started";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen"), std::string::npos) << e.what();
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
  HttpServer server({"127.0.0.1:" + std::to_string(port), cert, key}, handlers);
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
  EXPECT_THROW(HttpServer({"127.0.0.1:1", "/tmp/only-cert.pem", ""}, {}), ServerError);
  HttpServer server(
      {"127.0.0.1:" + std::to_string(FreePort()), "/nonexistent/tls.crt", "/nonexistent/tls.key"},
      {});
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
    std::string query;
    for (const auto& [k, v] : r.query) query += k + "=" + v + ";";
    return DebugResponse{201, r.method + " " + r.path + " " + query + " " + r.body, "text/plain"};
  };
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  HttpServer server({address, "", ""}, handlers);
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
  EXPECT_EQ(Call(url, web::http::methods::POST, "/metrics").status, 405);

  // One debug request at a time: a second one while the first runs is told to retry.
  std::thread slow([&] { Call(url, web::http::methods::GET, "/debug/slow"); });
  while (inside.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Reply busy = Call(url, web::http::methods::GET, "/debug/pods");
  EXPECT_EQ(busy.status, 429);
  release = true;
  slow.join();
  server.Stop();

  HttpServer off({"127.0.0.1:" + std::to_string(FreePort()), "", ""}, Handlers{});
  off.Start();
  EXPECT_EQ(Call(off.url(), web::http::methods::GET, "/debug/pods").status, 404);
  off.Stop();
}

}  // namespace
}  // namespace berth::server
