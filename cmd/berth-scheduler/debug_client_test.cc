#include "cmd/berth-scheduler/debug_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "pkg/server/server.h"
#include "test/testing/pki.h"
#include "test/testing/server_test_util.h"

// The explain and simulate client against the real secure port (pkg/server over TLS, with the
// test PKI and a token filter): what reaches the server, what comes back, and every way a call
// fails.

namespace berth::cmd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kToken[] = "admin";  // server_test_util's RulesAuthorizer: may do anything.

class DebugClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = pki_.Ca("debug-ca");
    other_ca_ = pki_.Ca("debug-other-ca");
    const berth::testing::CertificateFiles serving = pki_.Server(ca_, "debug-serving");
    handlers_.debug = [this](const server::DebugRequest& r) { return Debug(r); };
    server::Options options = berth::testing::Plain(berth::testing::FreePort());
    options.flag = "--secure-port";
    options.tls = server::Certificate{serving.cert_file, serving.key_file, "", ""};
    options.filter = std::make_shared<server::auth::Filter>(
        std::make_shared<berth::testing::TokensAuthenticator>(),
        std::make_shared<berth::testing::RulesAuthorizer>(),
        server::auth::PathMatcher(server::auth::DefaultAlwaysAllowPaths()));
    server_ = std::make_unique<server::HttpServer>(options, handlers_);
    server_->Start();
  }
  void TearDown() override {
    release_ = true;
    server_->Stop();
  }

  // Echoes what arrived; "/debug/huge" answers `huge_bytes_`, "/debug/slow" waits for release_.
  server::DebugResponse Debug(const server::DebugRequest& r) {
    if (r.path == "/debug/huge") return {200, std::string(huge_bytes_, 'x'), "text/plain"};
    if (r.path == "/debug/slow") {
      while (!release_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::string query;
    for (const auto& [k, v] : r.query) query.append(k).append("=").append(v).append(";");
    return {201, r.method + " " + r.path + " " + query + " " + r.content_type + " " + r.body,
            "text/plain"};
  }

  DebugServer Verified(const std::string& token = kToken) const {
    return {server_->url(), ca_.cert_file, false, token};
  }

  // The message of the runtime_error `call` throws; fails the test when it throws none.
  template <typename Call>
  static std::string Failure(Call call) {
    try {
      call();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }

  berth::testing::Pki pki_;
  berth::testing::CertificateFiles ca_;
  berth::testing::CertificateFiles other_ca_;
  server::Handlers handlers_;
  std::unique_ptr<server::HttpServer> server_;
  std::atomic<bool> release_{false};
  size_t huge_bytes_ = 0;
};

TEST_F(DebugClientTest, GetReachesTheServerDecodedWithTheTokenAndReturnsStatusAndBody) {
  const DebugResponse r = DebugCall(
      Verified(), "GET",
      "/debug/pods/" + EncodePathSegment("ns") + "/" + EncodePathSegment("a b") + "?format=text");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "GET /debug/pods/ns/a b format=text;  ");
}

// `kubectl proxy` serves a service under a path: the client puts it in front of every request's.
TEST_F(DebugClientTest, APathInTheServerUrlPrefixesEveryRequest) {
  DebugServer proxied = Verified();
  proxied.url += "/debug/proxied/";
  const DebugResponse r = DebugCall(proxied, "GET", "/pods/ns/p?format=text");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "GET /debug/proxied/pods/ns/p format=text;  ");
}

TEST_F(DebugClientTest, PostSendsItsBodyAndContentType) {
  const DebugResponse r =
      DebugCall(Verified(), "POST", "/debug/simulate", "kind: Pod\n", "application/yaml");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "POST /debug/simulate  application/yaml kind: Pod\n");
}

TEST_F(DebugClientTest, RefusalsAreReturnedWithTheirStatusNotThrown) {
  EXPECT_EQ(DebugCall(Verified(""), "GET", "/debug/pods/ns/p").status, 401);
  const DebugResponse wrong = DebugCall(Verified("not-a-token"), "GET", "/debug/pods/ns/p");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_FALSE(wrong.body.empty());
  // "reader" may get /metrics only.
  EXPECT_EQ(DebugCall(Verified("reader"), "GET", "/debug/pods/ns/p").status, 403);
}

TEST_F(DebugClientTest, VerificationIsOnByDefaultAndTheErrorSaysHowToTrustTheServer) {
  DebugServer system_roots = Verified();
  system_roots.ca_file.clear();
  const std::string message = Failure([&] { DebugCall(system_roots, "GET", "/debug/pods/ns/p"); });
  EXPECT_THAT(message, HasSubstr(server_->url()));
  EXPECT_THAT(message, HasSubstr("--certificate-authority FILE, or --insecure-skip-tls-verify"));
  EXPECT_THAT(message, Not(HasSubstr(kToken)));
}

TEST_F(DebugClientTest, AnotherCaIsRefused) {
  DebugServer other = Verified();
  other.ca_file = other_ca_.cert_file;
  EXPECT_THAT(Failure([&] { DebugCall(other, "GET", "/debug/pods/ns/p"); }),
              HasSubstr("verification failed"));
}

TEST_F(DebugClientTest, InsecureSkipsVerification) {
  DebugServer insecure = Verified();
  insecure.ca_file.clear();
  insecure.insecure = true;
  EXPECT_EQ(DebugCall(insecure, "GET", "/debug/pods/ns/p").status, 201);
}

TEST_F(DebugClientTest, UnreadableCaFileIsNamed) {
  DebugServer missing = Verified();
  missing.ca_file = "/nonexistent/ca.crt";
  EXPECT_THAT(Failure([&] { DebugCall(missing, "GET", "/debug/pods/ns/p"); }),
              HasSubstr("--certificate-authority: cannot read \"/nonexistent/ca.crt\""));
}

TEST_F(DebugClientTest, ServerThatIsNotAUrlIsNamed) {
  for (const std::string url : {"127.0.0.1:10259", "ftp://127.0.0.1", "https://", "https://h:x",
                                "https://127.0.0.1:10259/base?q"}) {
    EXPECT_THAT(Failure([&] {
                  DebugCall({url, "", false, kToken}, "GET", "/debug/pods/ns/p");
                }),
                StartsWith("--server: "))
        << url;
  }
}

TEST_F(DebugClientTest, UnreachableServerIsNamedWithoutTheToken) {
  const std::string url = "https://127.0.0.1:" + std::to_string(berth::testing::FreePort());
  const std::string message = Failure([&] {
    DebugCall({url, ca_.cert_file, false, kToken}, "GET", "/debug/pods/ns/p");
  });
  EXPECT_THAT(message, HasSubstr(url));
  EXPECT_THAT(message, Not(HasSubstr(kToken)));
}

TEST_F(DebugClientTest, BodyOverTheCapIsAnErrorNotUnboundedMemory) {
  huge_bytes_ = kMaxDebugResponseBytes;
  EXPECT_EQ(DebugCall(Verified(), "GET", "/debug/huge").body.size(), kMaxDebugResponseBytes);
  huge_bytes_ = kMaxDebugResponseBytes + 1;
  EXPECT_THAT(Failure([&] { DebugCall(Verified(), "GET", "/debug/huge"); }),
              HasSubstr("is over 64 MiB"));
}

TEST_F(DebugClientTest, ExchangeOutlastingTheTimeoutIsAnError) {
  DebugServer impatient = Verified();
  impatient.timeout = std::chrono::milliseconds(300);
  EXPECT_THAT(Failure([&] { DebugCall(impatient, "GET", "/debug/slow"); }), HasSubstr("timed out"));
}

TEST(EncodePathSegmentTest, EscapesAllButUnreservedCharacters) {
  EXPECT_EQ(EncodePathSegment("web-1.a_b~"), "web-1.a_b~");
  EXPECT_EQ(EncodePathSegment("a b/c?d#e%f"), "a%20b%2Fc%3Fd%23e%25f");
  EXPECT_EQ(EncodePathSegment("\xc3\xbc"), "%C3%BC");
  EXPECT_EQ(EncodePathSegment(""), "");
}

}  // namespace
}  // namespace berth::cmd
