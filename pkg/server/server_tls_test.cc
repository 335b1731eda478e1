#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "pkg/server/auth/delegating.h"
#include "pkg/server/certificate.h"
#include "pkg/server/server.h"
#include "test/testing/pki.h"
#include "test/testing/server_test_util.h"
#include "test/testing/temp_dir.h"

// The secure port's TLS: the serving pair from files or memory, reloaded when its files change,
// the TLS 1.2 suites it negotiates, and client certificates verified against the client CA.

namespace berth::server {
namespace {

using testing::FreePort;
using testing::Get;
using testing::Handshakes;
using testing::Plain;
using testing::Reply;

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

// Start-up loads the TLS on another thread (LoadTls) and hands it over: Start must serve that
// context, not read the files again. Here the files are gone by then, so a Start that read them
// would fail.
TEST(HttpServerTest, TlsLoadedAheadIsServedWithoutReadingTheFilesAgain) {
  const CertificateKeyPair pair = GenerateSelfSigned("berth-test", {}, {"127.0.0.1"});
  std::optional<testing::TempDir> dir(std::in_place);
  Options options = Plain(FreePort());
  options.tls = Certificate{dir->Write("tls.crt", pair.cert_pem),
                            dir->Write("tls.key", pair.key_pem), "", ""};
  options.loaded_tls = LoadTls(options);
  ASSERT_NE(options.loaded_tls, nullptr);
  dir.reset();
  Handlers handlers;
  handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
  HttpServer server(options, handlers);
  server.Start();
  EXPECT_EQ(Get(server.url() + "/livez", pair.cert_pem).status, 200);
  server.Stop();

  // What Start would throw, LoadTls throws; a listener without TLS has nothing to load.
  Options missing = Plain(FreePort());
  missing.tls = Certificate{"/nonexistent/tls.crt", "/nonexistent/tls.key", "", ""};
  try {
    LoadTls(missing);
    FAIL() << "loaded a certificate that does not exist";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("--tls-cert-file: cannot read"), std::string::npos);
  }
  Options half = Plain(1);
  half.tls = Certificate{"/tmp/only-cert.pem", "", "", ""};
  EXPECT_THROW(LoadTls(half), ServerError);
  EXPECT_EQ(LoadTls(Plain(1)), nullptr);
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

// A client that offers the session of its last connection (curl, Java, Go with a session cache)
// still gets a handshake, a full one: a client certificate is checked on every connection.
TEST_F(ClientCertificateTest, AClientOfferingItsLastSessionGetsAFullHandshake) {
  auto server = Serve(ca_file_);
  const std::string url = server->url();
  const auto port = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  SSL_CTX_set_max_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_CLIENT);
  std::unique_ptr<SSL_SESSION, decltype(&SSL_SESSION_free)> last(nullptr, SSL_SESSION_free);
  for (int attempt = 0; attempt < 2; attempt++) {
    const int fd = testing::Connect(port);
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
    SSL_set_fd(ssl.get(), fd);
    if (last) SSL_set_session(ssl.get(), last.get());
    EXPECT_EQ(SSL_connect(ssl.get()), 1) << "attempt " << attempt;
    EXPECT_EQ(SSL_session_reused(ssl.get()), 0) << "attempt " << attempt;
    last.reset(SSL_get1_session(ssl.get()));
    SSL_shutdown(ssl.get());
    close(fd);
  }
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
  // Serves `tls` and checks which TLS 1.2 suites a client gets it to agree to.
  auto check_tls12_suites = [](const Certificate& tls, std::initializer_list<const char*> good,
                               std::initializer_list<const char*> bad,
                               const std::function<void(uint16_t)>& also = nullptr) {
    Options options = Plain(FreePort());
    options.tls = tls;
    HttpServer server(options, {});
    server.Start();
    const uint16_t port = ParseBindAddress(options.bind_address).port;
    for (const char* suite : good) EXPECT_TRUE(Handshakes(port, suite)) << suite;
    for (const char* suite : bad) EXPECT_FALSE(Handshakes(port, suite)) << suite;
    if (also) also(port);
  };
  check_tls12_suites(
      Certificate{"", "", ecdsa.cert_pem, ecdsa.key_pem},
      {"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
       "ECDHE-ECDSA-CHACHA20-POLY1305"},
      {"ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-AES128-SHA256"},
      [](uint16_t port) {
        EXPECT_TRUE(Handshakes(port, "", false)) << "TLS 1.3 with its own suites";
      });
  check_tls12_suites(
      Certificate{cert, key, "", ""},
      {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"},
      {"AES128-GCM-SHA256", "AES256-SHA", "DHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-SHA",
       "ECDHE-RSA-AES256-SHA384"});
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

}  // namespace
}  // namespace berth::server
