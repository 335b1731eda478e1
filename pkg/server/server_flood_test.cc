// The secure port under a bounded flood on loopback: for kFloodTime, clients from one address
// churn through connections with no token or a fresh bogus one each time (every bogus token needs
// a slow review), hold connections open sending a header byte now and then (slowloris), hold
// connections that never start TLS, and stream large bodies without credentials, while an
// authorized scraper from another loopback address scrapes /metrics over a kept-alive connection.
//
// It asserts what a user sees: every authorized scrape is answered 200. It prints the scrapes'
// latency percentiles for the record (issue 44 reports p99 against 1 s) but asserts no timing:
// the machine it runs on may be loaded by anything. Labelled "stress", so `make test` runs it and
// `make unit` does not.

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pkg/server/auth/delegating.h"
#include "pkg/server/certificate.h"
#include "pkg/server/server.h"
#include "pkg/util/clock.h"
#include "test/testing/server_test_util.h"

namespace berth::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kFloodTime = std::chrono::seconds(5);
constexpr char kScraperToken[] = "scraper-token";
constexpr char kAttacker[] = "127.0.0.1";
constexpr char kScraper[] = "127.0.0.2";

// The apiserver's TokenReview, slow for tokens it has not seen, as one under load is.
class SlowTokenReview : public auth::TokenAuthenticator {
 public:
  std::optional<auth::UserInfo> AuthenticateToken(const std::string& token) override {
    std::this_thread::sleep_for(milliseconds(20));
    if (token == kScraperToken) return auth::UserInfo{"prometheus", "", {"scrapers"}, {}};
    return std::nullopt;
  }
};

class ScrapersMayGetMetrics : public auth::Authorizer {
 public:
  auth::Decision Authorize(const auth::Attributes& a) override {
    const bool scraper =
        std::find(a.user.groups.begin(), a.user.groups.end(), "scrapers") != a.user.groups.end();
    return {scraper && a.verb == "get" && a.path == "/metrics", ""};
  }
};

// An attacker's connection from `source`, with 2 s send and receive timeouts so no attacker
// thread outlives the flood by much; -1 when refused (as a flood expects some to be).
int Connect(const char* source, uint16_t port) {
  return testing::TryConnect(port, source, std::chrono::seconds(2));
}

// An attacker's TLS connection (it verifies nothing: it wants load, not secrets).
struct TlsConnection {
  TlsConnection(SSL_CTX* ctx, uint16_t port) : fd(Connect(kAttacker, port)) {
    if (fd < 0) return;
    ssl.reset(SSL_new(ctx));
    SSL_set_fd(ssl.get(), fd);
    if (SSL_connect(ssl.get()) != 1) ssl.reset();
  }
  ~TlsConnection() {
    ssl.reset();
    if (fd >= 0) close(fd);
  }
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  bool ok() const { return ssl != nullptr; }
  bool Send(const std::string& data) {
    return SSL_write(ssl.get(), data.data(), static_cast<int>(data.size())) > 0;
  }
  // The status line's code of the answer, or 0 when none came.
  int Status() {
    std::array<char, 4096> chunk{};
    const int n = SSL_read(ssl.get(), chunk.data(), static_cast<int>(chunk.size()));
    if (n < 12) return 0;
    return std::atoi(std::string(chunk.data() + 9, 3).c_str());
  }

  int fd;
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl{nullptr, SSL_free};
};

struct Tally {
  std::mutex mu;
  std::map<std::string, int> counts;
  void Add(const std::string& what) {
    std::lock_guard lock(mu);
    counts[what]++;
  }
};

TEST(SecurePortFloodTest, AuthorizedScrapesAreAllServedThroughAConnectionFlood) {
  const CertificateKeyPair pair = GenerateSelfSigned("berth-flood", {}, {"127.0.0.1"});
  util::RealClock clock;
  Handlers handlers;
  handlers.metrics = [] { return std::string("berth_build_info 1\n"); };
  handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
  handlers.debug = [](const DebugRequest& r) { return DebugResponse{200, r.path, "text/plain"}; };
  // A connection the server closed must fail a write, not kill the test.
  std::signal(SIGPIPE, SIG_IGN);
  Options options;
  options.bind_address = "127.0.0.1:" + std::to_string(testing::FreePort());
  options.tls = Certificate{"", "", pair.cert_pem, pair.key_pem};
  options.filter = std::make_shared<auth::Filter>(
      std::make_shared<auth::CachedTokenAuthenticator>(std::make_unique<SlowTokenReview>(),
                                                       std::chrono::minutes(1), clock),
      std::make_shared<auth::CachedAuthorizer>(std::make_unique<ScrapersMayGetMetrics>(),
                                               std::chrono::minutes(1), std::chrono::minutes(1),
                                               clock),
      auth::PathMatcher(auth::DefaultAlwaysAllowPaths()));
  HttpServer server(options, handlers);
  server.Start();
  const uint16_t port = ParseBindAddress(options.bind_address).port;

  // Loopback answers every 127/8 address; where it does not, the scraper shares the attackers'.
  const char* scraper_source = kScraper;
  if (const int probe = Connect(kScraper, port); probe >= 0) {
    close(probe);
  } else {
    scraper_source = kAttacker;
    std::printf("flood: cannot connect from %s; the scraper shares %s\n", kScraper, kAttacker);
  }

  // The scraper: one kept-alive connection, as Prometheus keeps one, opened again if it closes.
  net::io_context ioc;
  net::ssl::context scraper_tls(net::ssl::context::tls_client);
  scraper_tls.add_certificate_authority(net::buffer(pair.cert_pem));
  scraper_tls.set_verify_mode(net::ssl::verify_peer);
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> stream;
  auto connect = [&] {
    stream = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc, scraper_tls);
    auto& socket = beast::get_lowest_layer(*stream).socket();
    socket.open(net::ip::tcp::v4());
    socket.bind({net::ip::make_address(scraper_source), 0});
    beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(30));
    beast::get_lowest_layer(*stream).connect({net::ip::make_address("127.0.0.1"), port});
    stream->handshake(net::ssl::stream_base::client);
  };
  std::vector<double> latencies_ms;
  std::vector<std::string> failures;
  auto scrape = [&] {
    const auto start = Clock::now();
    try {
      if (!stream) connect();
      http::request<http::empty_body> request(http::verb::get, "/metrics", 11);
      request.set(http::field::host, "127.0.0.1");
      request.set(http::field::authorization, std::string("Bearer ") + kScraperToken);
      beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(30));
      http::write(*stream, request);
      beast::flat_buffer buffer;
      http::response<http::string_body> response;
      http::read(*stream, buffer, response);
      if (response.result_int() != 200 || response.body() != "berth_build_info 1\n") {
        failures.push_back(std::to_string(response.result_int()) + " " + response.body());
      }
      if (!response.keep_alive()) stream.reset();
    } catch (const std::exception& e) {
      failures.push_back(e.what());
      stream.reset();
    }
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  };
  scrape();  // Reviewed once; remembered from here on.

  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> attacker_tls(SSL_CTX_new(TLS_client_method()),
                                                                 SSL_CTX_free);
  std::atomic<bool> stop{false};
  Tally tally;
  std::vector<std::thread> attackers;
  // Churn: a new connection per request, no token or a fresh bogus one.
  for (int bogus = 0; bogus < 2; bogus++) {
    attackers.emplace_back([&, bogus] {
      for (int i = 0; !stop; i++) {
        TlsConnection c(attacker_tls.get(), port);
        if (!c.ok()) {
          tally.Add("churn: refused");
          continue;
        }
        std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
        if (bogus) request += "Authorization: Bearer bogus-" + std::to_string(i) + "\r\n";
        c.Send(request + "Connection: close\r\n\r\n");
        tally.Add("churn: " + std::to_string(c.Status()));
      }
    });
  }
  // Slowloris: connections held open, a header byte now and then; and some that never start TLS.
  attackers.emplace_back([&] {
    std::vector<std::unique_ptr<TlsConnection>> slow;
    std::vector<int> silent;
    while (!stop) {
      if (slow.size() < 100) {
        auto c = std::make_unique<TlsConnection>(attacker_tls.get(), port);
        if (c->ok() && c->Send("GET /metrics HTTP/1.1\r\n")) {
          slow.push_back(std::move(c));
          tally.Add("slowloris: held");
        } else {
          tally.Add("slowloris: refused");
        }
      }
      if (silent.size() < 50) {
        if (const int fd = Connect(kAttacker, port); fd >= 0) silent.push_back(fd);
      }
      for (auto& c : slow) c->Send("X");
      std::this_thread::sleep_for(milliseconds(50));
    }
    for (int fd : silent) close(fd);
  });
  // Large bodies without credentials.
  attackers.emplace_back([&] {
    const std::string chunk(64 * 1024, 'x');
    while (!stop) {
      TlsConnection c(attacker_tls.get(), port);
      if (!c.ok()) {
        tally.Add("body: refused");
        continue;
      }
      constexpr size_t kLength = 1000 * 1000;
      bool sent = c.Send(
          "POST /debug/simulate HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\n"
          "Content-Length: " +
          std::to_string(kLength) + "\r\n\r\n");
      for (size_t n = 0; sent && n < kLength && !stop; n += chunk.size()) sent = c.Send(chunk);
      tally.Add("body: " + std::to_string(c.Status()));
    }
  });

  const auto end = Clock::now() + kFloodTime;
  while (Clock::now() < end) {
    scrape();
    std::this_thread::sleep_for(milliseconds(20));
  }
  stop = true;
  for (auto& t : attackers) t.join();

  std::vector<double> sorted = latencies_ms;
  std::sort(sorted.begin(), sorted.end());
  auto percentile = [&](double p) {
    return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
  };
  std::printf(
      "flood: %zu authorized scrapes from %s, %zu failed; latency ms p50 %.1f p99 %.1f "
      "max %.1f\n",
      sorted.size(), scraper_source, failures.size(), percentile(0.5), percentile(0.99),
      sorted.back());
  for (const auto& [what, count] : tally.counts)
    std::printf("flood: %s x%d\n", what.c_str(), count);
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, the first: " << failures.front();
  EXPECT_GT(sorted.size(), 10u);
}

}  // namespace
}  // namespace berth::server
