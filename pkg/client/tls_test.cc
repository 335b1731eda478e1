// TLS against an HTTPS fake server whose CA and certificates are generated with the openssl CLI
// at test time.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "pkg/client/client.h"
#include "pkg/client/http_client.h"
#include "test/testing/client_test_util.h"
#include "test/testing/loopback.h"

namespace berth::client {
namespace {

using ::berth::client::testing::FakeServer;
using ::berth::client::testing::ReadAll;
using ::berth::client::testing::Reply;
using ::berth::client::testing::TempDir;
using ::testing::HasSubstr;

// Certificates shared by every test in the suite.
struct Pki {
  TempDir dir;
  std::string ca;           // Signs server, name-only and client.
  std::string other_ca;     // Unrelated self-signed CA.
  std::string server_cert;  // SANs 127.0.0.1 and localhost.
  std::string server_key;
  std::string name_only_cert;  // SAN DNS:berth.test only.
  std::string name_only_key;
  std::string client_cert;
  std::string client_key;
};

bool Run(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

std::unique_ptr<Pki> MakePki() {
  auto pki = std::make_unique<Pki>();
  const std::string d = pki->dir.path();
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  pki->dir.Write("server.ext",
                 "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                 "extendedKeyUsage=serverAuth\n");
  pki->dir.Write("name.ext", "subjectAltName=DNS:berth.test\nextendedKeyUsage=serverAuth\n");
  pki->dir.Write("client.ext", "extendedKeyUsage=clientAuth\n");
  const bool ok =
      Run("openssl req -x509 " + key + " -keyout " + d + "/ca.key -out " + d +
          "/ca.crt -days 2 -subj /CN=berth-test-ca") &&
      Run("openssl req -x509 " + key + " -keyout " + d + "/other.key -out " + d +
          "/other.crt -days 2 -subj /CN=berth-other-ca") &&
      Run("openssl req " + key + " -keyout " + d + "/server.key -out " + d +
          "/server.csr -subj /CN=127.0.0.1") &&
      Run("openssl x509 -req -in " + d + "/server.csr -CA " + d + "/ca.crt -CAkey " + d +
          "/ca.key -CAcreateserial -days 2 -extfile " + d + "/server.ext -out " + d +
          "/server.crt") &&
      Run("openssl req " + key + " -keyout " + d + "/name.key -out " + d +
          "/name.csr -subj /CN=berth.test") &&
      Run("openssl x509 -req -in " + d + "/name.csr -CA " + d + "/ca.crt -CAkey " + d +
          "/ca.key -CAcreateserial -days 2 -extfile " + d + "/name.ext -out " + d + "/name.crt") &&
      Run("openssl req " + key + " -keyout " + d + "/client.key -out " + d +
          "/client.csr -subj /CN=berth-client") &&
      Run("openssl x509 -req -in " + d + "/client.csr -CA " + d + "/ca.crt -CAkey " + d +
          "/ca.key -CAcreateserial -days 2 -extfile " + d + "/client.ext -out " + d +
          "/client.crt");
  if (!ok) return nullptr;
  pki->ca = ReadAll(d + "/ca.crt");
  pki->other_ca = ReadAll(d + "/other.crt");
  pki->server_cert = ReadAll(d + "/server.crt");
  pki->server_key = ReadAll(d + "/server.key");
  pki->name_only_cert = ReadAll(d + "/name.crt");
  pki->name_only_key = ReadAll(d + "/name.key");
  pki->client_cert = ReadAll(d + "/client.crt");
  pki->client_key = ReadAll(d + "/client.key");
  return pki;
}

FakeServer::SslSetup ServeWith(const std::string& cert, const std::string& key,
                               const std::string& client_ca = "") {
  return [cert, key, client_ca](boost::asio::ssl::context& ctx) {
    ctx.set_options(boost::asio::ssl::context::default_workarounds);
    ctx.use_certificate_chain(boost::asio::buffer(cert));
    ctx.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem);
    if (!client_ca.empty()) {
      ctx.add_certificate_authority(boost::asio::buffer(client_ca));
      ctx.set_verify_mode(boost::asio::ssl::verify_peer |
                          boost::asio::ssl::verify_fail_if_no_peer_cert);
    }
  };
}

void ReplyOk(int, web::http::http_request request) { Reply(request, 200, R"({"kind":"Ok"})"); }

class TlsFakeServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = MakePki(); }
  static void TearDownTestSuite() { pki_.reset(); }
  void SetUp() override {
    if (pki_ == nullptr) GTEST_SKIP() << "the openssl CLI could not generate certificates";
  }

  static Config ConfigFor(const FakeServer& server) {
    Config config;
    config.server = server.url();
    config.qps = 0;
    config.timeout = std::chrono::seconds(10);
    return config;
  }

  static inline std::unique_ptr<Pki> pki_;
};

TEST_F(TlsFakeServerTest, RightCaSucceeds) {
  FakeServer server(ReplyOk, ServeWith(pki_->server_cert, pki_->server_key));
  ASSERT_EQ(server.url().rfind("https://127.0.0.1:", 0), 0u);
  Config config = ConfigFor(server);
  config.ca_pem = pki_->ca;
  config.bearer_token = "t";
  auto client = NewClient(config);
  EXPECT_EQ(client->Get("/version")["kind"], "Ok");
  EXPECT_EQ(server.requests().at(0).Header("Authorization"), "Bearer t");
}

TEST_F(TlsFakeServerTest, WrongCaFailsFastWithTlsError) {
  FakeServer server(ReplyOk, ServeWith(pki_->server_cert, pki_->server_key));
  Config config = ConfigFor(server);
  config.ca_pem = pki_->other_ca;
  auto client = NewClient(config);
  int observed = 0;
  client->SetRequestObserver([&](const std::string&, int status, std::chrono::nanoseconds) {
    ++observed;
    EXPECT_EQ(status, 0);
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    client->Get("/version");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTLS);
    EXPECT_THAT(e.what(), HasSubstr("certificate verification failed"));
    EXPECT_THAT(e.what(), HasSubstr(server.url()));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(observed, 1) << "TLS failures must not be retried";
  EXPECT_EQ(server.request_count(), 0);
}

TEST_F(TlsFakeServerTest, VerificationIsOnByDefault) {
  // No CA configured: the system roots do not know the test CA.
  FakeServer server(ReplyOk, ServeWith(pki_->server_cert, pki_->server_key));
  auto client = NewClient(ConfigFor(server));
  try {
    client->Get("/version");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTLS);
  }
}

TEST_F(TlsFakeServerTest, InsecureSkipTlsVerifySucceeds) {
  FakeServer server(ReplyOk, ServeWith(pki_->server_cert, pki_->server_key));
  Config config = ConfigFor(server);
  config.insecure_skip_tls_verify = true;
  EXPECT_EQ(NewClient(config)->Get("/version")["kind"], "Ok");
}

TEST_F(TlsFakeServerTest, TlsServerNameOverridesTheCheckedHost) {
  // The certificate names only berth.test, not the 127.0.0.1 in the URL.
  FakeServer server(ReplyOk, ServeWith(pki_->name_only_cert, pki_->name_only_key));
  Config config = ConfigFor(server);
  config.ca_pem = pki_->ca;
  try {
    NewClient(config)->Get("/version");
    FAIL() << "expected a host name mismatch";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTLS);
  }
  config.tls_server_name = "berth.test";
  EXPECT_EQ(NewClient(config)->Get("/version")["kind"], "Ok");
  config.tls_server_name = "wrong.test";
  EXPECT_THROW(NewClient(config)->Get("/version"), ApiError);
}

TEST_F(TlsFakeServerTest, ClientCertificateIsPresented) {
  FakeServer server(ReplyOk, ServeWith(pki_->server_cert, pki_->server_key, pki_->ca));
  Config config = ConfigFor(server);
  config.ca_pem = pki_->ca;
  config.client_cert_pem = pki_->client_cert;
  config.client_key_pem = pki_->client_key;
  EXPECT_EQ(NewClient(config)->Get("/version")["kind"], "Ok");

  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  try {
    NewClient(config)->Get("/version");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    // TLS 1.3 reports the server's "certificate required" alert on the first read.
    EXPECT_EQ(e.reason(), ErrorReason::kTLS);
    EXPECT_THAT(e.what(), HasSubstr("certificate required"));
  }
}

TEST_F(TlsFakeServerTest, UnusableKeyMaterialIsAConfigError) {
  Config config;
  config.server = "https://127.0.0.1:1";
  config.ca_pem = "-----BEGIN CERTIFICATE-----\nbm9wZQ==\n-----END CERTIFICATE-----\n";
  EXPECT_THROW(NewClient(config), ConfigError);

  config.ca_pem = pki_->ca;
  config.client_cert_pem = pki_->client_cert;
  config.client_key_pem = pki_->server_key;  // Does not match the certificate.
  EXPECT_THROW(NewClient(config), ConfigError);

  config.server = "ftp://127.0.0.1:1";
  config.client_key_pem = pki_->client_key;
  EXPECT_THROW(NewClient(config), ConfigError);
}

// Accepts every connection and closes it at once, before any TLS byte, with an orderly close or
// a reset: what a load balancer does while none of its backends is up.
class DroppingServer {
 public:
  explicit DroppingServer(bool reset) {
    const berth::testing::LoopbackListener listener =
        berth::testing::ListenOnLoopback("DroppingServer");
    listen_fd_ = listener.fd;
    url_ = "https://127.0.0.1:" + std::to_string(listener.port);
    acceptor_ = std::thread([this, reset] {
      for (;;) {
        const int fd = accept(listen_fd_, nullptr, nullptr);
        if (fd < 0) return;
        accepted_++;
        if (reset) {
          const linger abort{1, 0};
          setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
        }
        close(fd);
      }
    });
  }
  ~DroppingServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    close(listen_fd_);
  }

  const std::string& url() const { return url_; }
  int accepted() const { return accepted_.load(); }

 private:
  int listen_fd_ = -1;
  std::string url_;
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
};

// The connection failed, not TLS: retried like any dropped connection, for a POST too (nothing
// was sent), where a certificate problem is reported at once.
TEST(TlsHandshakeTest, AConnectionClosedDuringTheHandshakeIsATransportErrorAndRetried) {
  for (const bool reset : {false, true}) {
    SCOPED_TRACE(reset ? "reset" : "closed");
    DroppingServer server(reset);
    Config config;
    config.server = server.url();
    config.qps = 0;
    config.timeout = std::chrono::seconds(10);
    auto client = NewClient(config);
    try {
      client->Post("/api/v1/namespaces/ns/pods/p/binding", {{"kind", "Binding"}});
      FAIL() << "expected ApiError";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.reason(), ErrorReason::kTransport) << e.what();
      EXPECT_TRUE(e.Transient());
      // A reset may already fail the connect, before the handshake starts.
      if (!reset) {
        EXPECT_THAT(e.what(), HasSubstr("closed during the TLS handshake"));
      }
      EXPECT_THAT(e.what(), HasSubstr(server.url()));
    }
    EXPECT_EQ(server.accepted(), internal::kMaxAttempts);
  }
}

}  // namespace
}  // namespace berth::client
