// Proxies: which one the client picks (the kubeconfig's proxy-url, else the environment as
// client-go reads it), and requests through a fake CONNECT proxy written here.

#include "pkg/client/proxy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/client/http_client.h"
#include "test/testing/client_test_util.h"

namespace berth::client {
namespace {

using ::berth::client::testing::FakeRequest;
using ::berth::client::testing::FakeServer;
using ::berth::client::testing::MakePki;
using ::berth::client::testing::Pki;
using ::berth::client::testing::Reply;
using ::berth::client::testing::ScopedEnv;
using ::berth::client::testing::ServeWith;
using ::testing::HasSubstr;

// The proxy chosen for `server` with `env` as the environment.
std::string ProxyOf(const std::string& server, const std::map<std::string, std::string>& env,
                    const std::string& proxy_url = "") {
  Config config;
  config.server = server;
  return internal::ProxyFor(internal::ParseEndpoint(config), proxy_url, [&](const char* name) {
    const auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  });
}

TEST(ProxyForTest, KubeconfigProxyUrlWinsOverTheEnvironment) {
  const std::map<std::string, std::string> env = {{"HTTPS_PROXY", "http://env:1"}};
  EXPECT_EQ(ProxyOf("https://api.example:6443", env, "https://corp:3128"), "https://corp:3128");
  // Go's SOCKS5 dialer lets the proxy resolve the name; libcurl does that for socks5h.
  EXPECT_EQ(ProxyOf("https://api.example:6443", env, "socks5://corp:1080"), "socks5h://corp:1080");
  EXPECT_THROW(ProxyOf("https://api.example:6443", env, "ftp://corp:21"), ConfigError);
  EXPECT_THROW(ProxyOf("https://api.example:6443", env, "corp:3128"), ConfigError);
}

// A proxy URL libcurl could not read is refused when the configuration loads, not at every
// request: an unencoded '@' in the password (libcurl splits at the first one), a malformed host.
TEST(ProxyForTest, ProxyUrlLibcurlCannotReadIsRefused) {
  for (const char* proxy_url :
       {"http://user:p@ss@proxy:3128", "http://pro xy:3128", "http://[::1:3128", "socks5://"}) {
    EXPECT_THROW(internal::NormalizeProxyUrl(proxy_url), ConfigError) << proxy_url;
  }
  EXPECT_EQ(internal::NormalizeProxyUrl("http://user:p%40ss@proxy:3128"),
            "http://user:p%40ss@proxy:3128");
  EXPECT_EQ(internal::NormalizeProxyUrl("HTTP://[::1]:3128"), "http://[::1]:3128");
}

TEST(ProxyForTest, SchemeOfTheServerPicksTheVariableUpperCaseFirst) {
  const std::map<std::string, std::string> env = {{"HTTPS_PROXY", "http://upper:1"},
                                                  {"https_proxy", "http://lower:1"},
                                                  {"http_proxy", "plain:8080"}};
  EXPECT_EQ(ProxyOf("https://api.example:6443", env), "http://upper:1");
  // A value without a scheme is an http:// proxy.
  EXPECT_EQ(ProxyOf("http://api.example:8080", env), "http://plain:8080");
  EXPECT_EQ(ProxyOf("https://api.example:6443", {{"https_proxy", "http://lower:1"}}),
            "http://lower:1");
  // HTTP_PROXY does not cover an https server.
  EXPECT_EQ(ProxyOf("https://api.example:6443", {{"HTTP_PROXY", "http://p:1"}}), "");
  EXPECT_EQ(ProxyOf("https://api.example:6443", {}), "");
}

TEST(ProxyForTest, LoopbackIsNeverProxied) {
  const std::map<std::string, std::string> env = {{"HTTPS_PROXY", "http://p:1"}};
  EXPECT_EQ(ProxyOf("https://127.0.0.1:6443", env), "");
  EXPECT_EQ(ProxyOf("https://127.9.9.9:6443", env), "");
  EXPECT_EQ(ProxyOf("https://[::1]:6443", env), "");
  EXPECT_EQ(ProxyOf("https://localhost:6443", env), "");
  EXPECT_EQ(ProxyOf("https://10.0.0.1:6443", env), "http://p:1");
}

TEST(ProxyForTest, NoProxyEntries) {
  const auto proxied = [](const std::string& server, const std::string& no_proxy) {
    return !ProxyOf(server, {{"HTTPS_PROXY", "http://p:1"}, {"NO_PROXY", no_proxy}}).empty();
  };
  EXPECT_FALSE(proxied("https://api.example.com:6443", "*"));
  // A name matches itself and its subdomains; a leading "." or "*." only the subdomains.
  EXPECT_FALSE(proxied("https://api.example.com:6443", "example.com"));
  EXPECT_FALSE(proxied("https://example.com:6443", "example.com"));
  EXPECT_FALSE(proxied("https://api.example.com:6443", ".example.com"));
  EXPECT_TRUE(proxied("https://example.com:6443", ".example.com"));
  EXPECT_FALSE(proxied("https://api.example.com:6443", "*.example.com"));
  EXPECT_TRUE(proxied("https://notexample.com:6443", "example.com"));
  EXPECT_FALSE(proxied("https://API.Example.COM:6443", " other.org , EXAMPLE.com "));
  // Ports, addresses and CIDRs.
  EXPECT_FALSE(proxied("https://api.example.com:6443", "example.com:6443"));
  EXPECT_TRUE(proxied("https://api.example.com:443", "example.com:6443"));
  EXPECT_FALSE(proxied("https://10.1.2.3:6443", "10.1.2.3"));
  EXPECT_FALSE(proxied("https://10.1.2.3:6443", "10.0.0.0/8"));
  EXPECT_TRUE(proxied("https://11.1.2.3:6443", "10.0.0.0/8"));
  EXPECT_FALSE(proxied("https://[fd00::1]:6443", "fd00::/16"));
  EXPECT_FALSE(proxied("https://[fd00::1]:6443", "[fd00::1]:6443"));
  EXPECT_TRUE(proxied("https://[fd00::1]:443", "[fd00::1]:6443"));
  // no_proxy counts when NO_PROXY is unset.
  EXPECT_TRUE(ProxyOf("https://api.example.com:6443",
                      {{"HTTPS_PROXY", "http://p:1"}, {"no_proxy", "example.org"}})
                  .size() > 0);
  EXPECT_EQ(ProxyOf("https://api.example.com:6443",
                    {{"HTTPS_PROXY", "http://p:1"}, {"no_proxy", "example.com"}}),
            "");
}

TEST(ProxyForTest, RedactsUserInfo) {
  EXPECT_EQ(internal::RedactProxyUrl("http://user:pw@proxy:3128/x"), "http://proxy:3128/x");
  EXPECT_EQ(internal::RedactProxyUrl("http://proxy:3128"), "http://proxy:3128");
  // Text libcurl cannot read is not shown at all: who knows where its secret is.
  EXPECT_THAT(internal::RedactProxyUrl("http://user:p@ss@proxy:3128"),
              ::testing::Not(HasSubstr("ss@")));
}

// A fake HTTP CONNECT proxy on 127.0.0.1: it records each CONNECT target and tunnels every one to
// `forward_port` on 127.0.0.1, whatever it names (so that a server name that resolves nowhere can
// still be reached through it, as through a corporate proxy).
class FakeConnectProxy {
 public:
  explicit FakeConnectProxy(int forward_port)
      : forward_port_(forward_port),
        listener_([this](int fd, int) { Tunnel(fd); }),
        url_("http://127.0.0.1:" + std::to_string(listener_.port())) {}

  const std::string& url() const { return url_; }
  std::vector<std::string> targets() {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }

 private:
  void Tunnel(int client) {
    using Tcp = client::testing::LoopbackTcpServer;
    std::string head;
    char buf[16384];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = recv(client, buf, sizeof(buf), 0);
      if (n <= 0) return;
      head.append(buf, static_cast<size_t>(n));
    }
    const std::string line = head.substr(0, head.find("\r\n"));
    if (line.rfind("CONNECT ", 0) != 0) {
      Tcp::SendAll(client, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      targets_.push_back(line.substr(8, line.find(' ', 8) - 8));
    }
    const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    listener_.Track(upstream);
    sockaddr_in addr = Tcp::Loopback(forward_port_);
    if (connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      Tcp::SendAll(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
      listener_.Close(upstream);
      return;
    }
    Tcp::SendAll(client, "HTTP/1.1 200 Connection established\r\n\r\n");
    pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
    for (bool open = true; open && poll(fds, 2, -1) > 0;) {
      for (int i = 0; i < 2 && open; ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const ssize_t n = recv(fds[i].fd, buf, sizeof(buf), 0);
        open = n > 0 && Tcp::SendAll(fds[1 - i].fd, std::string(buf, static_cast<size_t>(n)));
      }
    }
    listener_.Close(upstream);
  }

  const int forward_port_;
  std::mutex mu_;
  std::vector<std::string> targets_;  // Guarded by mu_.
  // Last but the URL: its handlers use everything above, and stop when it goes.
  client::testing::LoopbackTcpServer listener_;
  const std::string url_;
};

int PortOf(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

void ReplyOk(int, FakeRequest& request) { Reply(request, 200, R"({"kind":"Ok"})"); }

class ProxyFakeServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = MakePki(); }
  static void TearDownTestSuite() { pki_.reset(); }
  void SetUp() override {
    if (pki_ == nullptr) GTEST_SKIP() << "the openssl CLI could not generate certificates";
  }
  static inline std::unique_ptr<Pki> pki_;
};

TEST_F(ProxyFakeServerTest, KubeconfigProxyUrlIsTraversed) {
  FakeServer server(ReplyOk, ServeWith(pki_->server_cert, pki_->server_key));
  FakeConnectProxy proxy(PortOf(server.url()));
  ScopedEnv no_env_proxy("HTTPS_PROXY", std::nullopt);
  Config config;
  config.server = server.url();
  config.ca_pem = pki_->ca;
  config.bearer_token = "t";
  config.proxy_url = proxy.url();
  config.qps = 0;
  auto client = NewClient(config);
  EXPECT_EQ(client->Get("/version")["kind"], "Ok");
  // Loopback is exempt only from the environment's proxies, not from an explicit proxy-url.
  EXPECT_THAT(proxy.targets(), ::testing::ElementsAre(server.url().substr(8)));
  EXPECT_EQ(server.requests().at(0).Header("Authorization"), "Bearer t");
}

TEST_F(ProxyFakeServerTest, HttpsProxyFromTheEnvironmentReachesANameOnlyTheProxyResolves) {
  // berth.test resolves nowhere: only through the proxy does the request arrive.
  FakeServer server(ReplyOk, ServeWith(pki_->name_only_cert, pki_->name_only_key));
  FakeConnectProxy proxy(PortOf(server.url()));
  ScopedEnv https_proxy("HTTPS_PROXY", proxy.url().substr(7));  // Without a scheme: http://.
  ScopedEnv no_proxy("NO_PROXY", "example.org");
  Config config;
  config.server = "https://berth.test:" + std::to_string(PortOf(server.url()));
  config.ca_pem = pki_->ca;
  config.qps = 0;
  EXPECT_EQ(NewClient(config)->Get("/version")["kind"], "Ok");
  EXPECT_THAT(proxy.targets(), ::testing::ElementsAre(config.server.substr(8)));
}

TEST_F(ProxyFakeServerTest, NoProxyAndLoopbackBypassTheEnvironmentsProxy) {
  FakeServer server(ReplyOk, ServeWith(pki_->server_cert, pki_->server_key));
  FakeConnectProxy proxy(PortOf(server.url()));
  ScopedEnv https_proxy("HTTPS_PROXY", proxy.url());
  Config config;
  config.server = server.url();  // 127.0.0.1
  config.ca_pem = pki_->ca;
  config.qps = 0;
  EXPECT_EQ(NewClient(config)->Get("/version")["kind"], "Ok");
  EXPECT_TRUE(proxy.targets().empty()) << "a loopback server was reached through the proxy";

  // berth.test is exempt: the client tries to resolve it itself, and cannot.
  ScopedEnv no_proxy("NO_PROXY", ".test");
  config.server = "https://berth.test:" + std::to_string(PortOf(server.url()));
  config.timeout = std::chrono::seconds(2);
  try {
    NewClient(config)->Get("/version");
    FAIL() << "berth.test was reached although NO_PROXY exempts it";
  } catch (const ApiError& e) {
    EXPECT_THAT(e.what(), HasSubstr("berth.test"));
  }
  EXPECT_TRUE(proxy.targets().empty());
}

TEST_F(ProxyFakeServerTest, ProxyRefusingTheTunnelIsATransportErrorNamingTheServer) {
  FakeServer server(ReplyOk, ServeWith(pki_->server_cert, pki_->server_key));
  FakeConnectProxy proxy(/*forward_port=*/1);  // Nothing listens there: the proxy answers 502.
  Config config;
  config.server = server.url();
  config.ca_pem = pki_->ca;
  config.proxy_url = proxy.url();
  config.qps = 0;
  try {
    NewClient(config)->PostRaw("/api/v1/namespaces/d/pods/p/binding", "{}");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTransport);
    EXPECT_THAT(e.what(), HasSubstr(server.url()));
  }
  // Nothing reached the server, so even the POST was tried every time.
  EXPECT_EQ(proxy.targets().size(), static_cast<size_t>(internal::kMaxAttempts));
  EXPECT_EQ(server.request_count(), 0);
}

}  // namespace
}  // namespace berth::client
