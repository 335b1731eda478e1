// TLS against an HTTPS fake server whose CA and certificates are generated with the openssl CLI
// at test time.

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>

#include "pkg/client/client.h"
#include "pkg/client/credentials.h"
#include "pkg/client/curl_easy.h"
#include "pkg/client/http_client.h"
#include "test/testing/client_test_util.h"

namespace berth::client {
namespace {

using ::berth::client::testing::FakeRequest;
using ::berth::client::testing::FakeServer;
using ::berth::client::testing::LoopbackTcpServer;
using ::berth::client::testing::MakePki;
using ::berth::client::testing::Pki;
using ::berth::client::testing::Reply;
using ::berth::client::testing::ServeWith;
using ::berth::client::testing::TempDir;
using ::testing::HasSubstr;

void ReplyOk(int, FakeRequest& request) { Reply(request, 200, R"({"kind":"Ok"})"); }

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

TEST_F(TlsFakeServerTest, RotatedClientCertificateFilesAreReadAgain) {
  FakeServer server(ReplyOk, ServeWith(pki_->server_cert, pki_->server_key, pki_->ca));
  TempDir dir;
  // The files start with a certificate the server does not trust...
  Config config = ConfigFor(server);
  config.ca_pem = pki_->ca;
  config.client_cert_pem = pki_->other_ca;
  config.client_key_pem = pki_->other_ca_key;
  config.client_cert_file = dir.Write("client.crt", pki_->other_ca);
  config.client_key_file = dir.Write("client.key", pki_->other_ca_key);
  internal::SetCredentialFileRefreshIntervalForTesting(std::chrono::nanoseconds(0));
  auto client = NewClient(config);
  try {
    client->Get("/version");
    ADD_FAILURE() << "the server accepted a certificate of another CA";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kTLS) << e.what();
  }
  // ...then rotate to one it trusts: the next connection presents it.
  dir.Write("client.key", pki_->client_key);
  dir.Write("client.crt", pki_->client_cert);
  EXPECT_EQ(client->Get("/version")["kind"], "Ok");
  internal::SetCredentialFileRefreshIntervalForTesting(internal::kCredentialFileRefreshInterval);
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

// Start-up checks one pair several times and remembers pairs found good; that must never let a
// different key, a changed certificate or a bad CA bundle through.
TEST_F(TlsFakeServerTest, PairsFoundGoodAreRememberedWithoutHidingBadOnes) {
  EXPECT_EQ(internal::KeyPairProblem(pki_->client_cert, pki_->client_key), "");
  EXPECT_EQ(internal::KeyPairProblem(pki_->client_cert, pki_->client_key), "");
  EXPECT_EQ(internal::KeyPairProblem(pki_->client_cert, pki_->server_key),
            "the key does not match the certificate");
  EXPECT_THAT(internal::KeyPairProblem("nope", pki_->client_key), HasSubstr("certificate: "));
  EXPECT_EQ(internal::CertificatesProblem(pki_->ca), "");
  EXPECT_EQ(internal::CertificatesProblem(pki_->ca), "");
  EXPECT_EQ(internal::CertificatesProblem("nope"), "no PEM certificate in it");
}

// Accepts every connection and closes it at once, before any TLS byte, with an orderly close or a
// reset: what a load balancer does while none of its backends is up. The connection failed, not
// TLS, so it is retried like any dropped connection, for a POST too (nothing was sent), where a
// certificate problem is reported at once.
// GnuTLS comes in with libcurl's libldap and librtmp; its load-time initialisation costs about
// 1 MiB of resident memory. The dynamic linker must bind GnuTLS's call of the skip hook to the
// client's definition (exported by the executable), not to GnuTLS's own weak one returning 0.
TEST(GnuTlsSkipHookTest, TheExecutablesHookIsTheOneGnuTlsCalls) {
  void* gnutls = dlopen("libgnutls.so.30", RTLD_LAZY | RTLD_NOLOAD);
  if (gnutls == nullptr) GTEST_SKIP() << "this libcurl does not bring GnuTLS in";
  dlclose(gnutls);
  using Hook = int (*)();
  auto* hook = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "_gnutls_global_init_skip"));
  ASSERT_NE(hook, nullptr);
  EXPECT_EQ(hook(), 1);
}

TEST(TlsHandshakeTest, AConnectionClosedDuringTheHandshakeIsATransportErrorAndRetried) {
  for (const bool reset : {false, true}) {
    SCOPED_TRACE(reset ? "reset" : "closed");
    LoopbackTcpServer server([reset](int fd, int) {
      if (reset) {
        const linger abort{1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
      }
    });
    const std::string url = "https://127.0.0.1:" + std::to_string(server.port());
    Config config;
    config.server = url;
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
      EXPECT_THAT(e.what(), HasSubstr(url));
    }
    EXPECT_EQ(server.connections(), internal::kMaxAttempts);
  }
}

// The texts libcurl gives a connection closed or reset around the handshake, seen on the socket or
// in OpenSSL, are transport errors (retried); a TLS failure proper is not. The reset's text depends
// on when the reset lands, which the test above cannot choose: here each one is given.
TEST(TlsHandshakeTest, TextsOfAConnectionResetAroundTheHandshakeAreTransportErrors) {
  const std::string url = "https://127.0.0.1:6443";
  const std::string name = "127.0.0.1";
  const std::string none;
  const internal::FailedTransfer failed{url, name, none, true};
  for (const char* text :
       {"getpeername() failed with errno 107: Transport endpoint is not connected",
        "OpenSSL SSL_connect: Connection reset by peer in connection to 127.0.0.1:6443",
        "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:6443",
        "send failure: Broken pipe"}) {
    SCOPED_TRACE(text);
    const auto error = internal::TransferError(CURLE_SSL_CONNECT_ERROR, text, failed);
    EXPECT_EQ(error.reason(), ErrorReason::kTransport);
    EXPECT_THAT(error.what(), HasSubstr("closed during the TLS handshake"));
  }
  const auto tls = internal::TransferError(
      CURLE_SSL_CONNECT_ERROR, "error:0A00010B:SSL routines::wrong version number", failed);
  EXPECT_EQ(tls.reason(), ErrorReason::kTLS);
}

}  // namespace
}  // namespace berth::client
