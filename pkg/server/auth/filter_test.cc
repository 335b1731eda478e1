#include "pkg/server/auth/filter.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/log/log.h"

namespace berth::server::auth {
namespace {

using json = nlohmann::json;

TEST(PathMatcherTest, ExactPathsAndTrailingWildcards) {
  PathMatcher matcher({"/healthz", "readyz", "/debug/*", "/metrics/slis"});
  for (const char* yes : {"/healthz", "healthz", "/readyz", "/debug/", "/debug/pprof/heap",
                          "/debug/flags/v", "/metrics/slis"}) {
    EXPECT_TRUE(matcher.Matches(yes)) << yes;
  }
  for (const char* no : {"/healthz/", "/healthzz", "/readyz/x", "/debug", "/metrics", "/", "",
                         "/livez", "/metrics/slis/x"}) {
    EXPECT_FALSE(matcher.Matches(no)) << no;
  }
}

TEST(PathMatcherTest, DefaultsAreTheThreeProbes) {
  PathMatcher matcher(DefaultAlwaysAllowPaths());
  EXPECT_TRUE(matcher.Matches("/healthz"));
  EXPECT_TRUE(matcher.Matches("/livez"));
  EXPECT_TRUE(matcher.Matches("/readyz"));
  EXPECT_FALSE(matcher.Matches("/metrics"));
  EXPECT_FALSE(matcher.Matches("/configz"));
  EXPECT_FALSE(matcher.Matches("/debug/pprof/"));
}

TEST(PathMatcherTest, StarAloneMatchesEverythingAndEmptyMatchesTheRoot) {
  EXPECT_TRUE(PathMatcher({"*"}).Matches("/anything/at/all"));
  EXPECT_TRUE(PathMatcher({"/"}).Matches("/"));
  EXPECT_FALSE(PathMatcher({"/"}).Matches("/metrics"));
  EXPECT_FALSE(PathMatcher({}).Matches("/healthz"));
}

TEST(PathMatcherTest, AStarAnywhereButTheEndIsRejected) {
  for (const char* bad : {"/debug/*/heap", "*/metrics", "/a**"}) {
    EXPECT_THROW(PathMatcher({bad}), std::invalid_argument) << bad;
  }
}

TEST(BearerTokenTest, ReadsTheTokenAsKubeApiserverDoes) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer abc"), "abc");
  EXPECT_EQ(BearerToken("BEARER abc"), "abc");
  EXPECT_EQ(BearerToken("  Bearer abc  "), "abc");
  EXPECT_EQ(BearerToken("Bearer abc extra"), "abc");
  for (const char* none :
       {"", "   ", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearerabc", "Token abc"}) {
    EXPECT_EQ(BearerToken(none), std::nullopt) << "\"" << none << "\"";
  }
}

// Tokens: "alice-token" is alice (group "scrapers"), "error" cannot be reviewed, others invalid.
class FakeAuthenticator : public TokenAuthenticator {
 public:
  std::optional<UserInfo> AuthenticateToken(const std::string& token) override {
    calls++;
    if (token == "error") throw std::runtime_error("connection refused");
    if (token == "alice-token") return UserInfo{"alice", "1", {"scrapers"}, {}};
    if (token == "bob-token") return UserInfo{"bob", "2", {}, {}};
    return std::nullopt;
  }
  int calls = 0;
};

// Allows group "scrapers" to get /metrics; "/sar-error" cannot be decided.
class FakeAuthorizer : public Authorizer {
 public:
  Decision Authorize(const Attributes& a) override {
    last = a;
    calls++;
    if (a.path == "/sar-error") throw std::runtime_error("subjectaccessreviews is forbidden");
    const bool scraper =
        std::find(a.user.groups.begin(), a.user.groups.end(), "scrapers") != a.user.groups.end();
    if (scraper && a.verb == "get" && a.path == "/metrics") return {true, ""};
    return {false, a.user.name == "bob" ? "no RBAC policy matched" : ""};
  }
  Attributes last;
  int calls = 0;
};

struct FilterFixture {
  std::shared_ptr<FakeAuthenticator> authn = std::make_shared<FakeAuthenticator>();
  std::shared_ptr<FakeAuthorizer> authz = std::make_shared<FakeAuthorizer>();
  Filter filter{authn, authz, PathMatcher(DefaultAlwaysAllowPaths())};
};

TEST(FilterTest, AlwaysAllowedPathsNeedNoTokenAndAskNothing) {
  FilterFixture f;
  for (const char* path : {"/healthz", "/livez", "/readyz"}) {
    EXPECT_EQ(f.filter.Check("GET", path, ""), std::nullopt) << path;
    EXPECT_EQ(f.filter.Check("GET", path, "Bearer garbage"), std::nullopt) << path;
  }
  EXPECT_EQ(f.authn->calls, 0);
  EXPECT_EQ(f.authz->calls, 0);
}

TEST(FilterTest, NoOrInvalidTokenIs401WithAStatusBody) {
  FilterFixture f;
  for (const char* header : {"", "Basic dXNlcjpwYXNz", "Bearer nobody", "Bearer error"}) {
    auto rejection = f.filter.Check("GET", "/metrics", header);
    ASSERT_TRUE(rejection.has_value()) << header;
    EXPECT_EQ(rejection->status, 401);
    EXPECT_EQ(rejection->content_type, "application/json");
    EXPECT_EQ(json::parse(rejection->body), json::parse(R"({"kind":"Status","apiVersion":"v1",
      "metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized",
      "code":401})"));
  }
  // Unknown paths too: whether a path exists is not told to strangers.
  EXPECT_EQ(f.filter.Check("GET", "/nope", "")->status, 401);
  EXPECT_EQ(f.filter.Check("GET", "/debug/pprof/", "")->status, 401);
  EXPECT_EQ(f.authz->calls, 0);
}

TEST(FilterTest, AVerifiedCertificateIsTheUserWithoutATokenReview) {
  FilterFixture f;
  const ClientCertificate alice{"alice", {"scrapers", "team"}, "ab01"};
  EXPECT_EQ(f.filter.Check("GET", "/metrics", "", &alice), std::nullopt);
  // The certificate comes first: a token beside it is never reviewed.
  EXPECT_EQ(f.filter.Check("GET", "/metrics", "Bearer bob-token", &alice), std::nullopt);
  EXPECT_EQ(f.authn->calls, 0);
  EXPECT_EQ(f.authz->last.user.name, "alice");
  EXPECT_EQ(f.authz->last.user.uid, "");
  EXPECT_EQ(f.authz->last.user.groups,
            (std::vector<std::string>{"scrapers", "team", "system:authenticated"}));
  EXPECT_EQ(f.authz->last.user.extra,
            (std::map<std::string, std::vector<std::string>>{
                {"authentication.kubernetes.io/credential-id", {"X509SHA256=ab01"}}}));

  // Authorization applies as to a token's user.
  const ClientCertificate bob{"bob", {"system:authenticated"}, "cd02"};
  auto rejection = f.filter.Check("GET", "/metrics", "", &bob);
  ASSERT_TRUE(rejection.has_value());
  EXPECT_EQ(rejection->status, 403);
  EXPECT_NE(rejection->body.find("User \\\"bob\\\" cannot get path"), std::string::npos)
      << rejection->body;
  EXPECT_EQ(f.authz->last.user.groups, std::vector<std::string>{"system:authenticated"});
}

TEST(FilterTest, ACertificateWithoutACommonNameFallsBackToTheToken) {
  FilterFixture f;
  const ClientCertificate nameless{"", {"scrapers"}, "ef03"};
  EXPECT_EQ(f.filter.Check("GET", "/metrics", "", &nameless)->status, 401);
  EXPECT_EQ(f.filter.Check("GET", "/metrics", "Bearer alice-token", &nameless), std::nullopt);
  EXPECT_EQ(f.authn->calls, 1);
  EXPECT_EQ(f.authz->last.user.name, "alice");
}

TEST(FilterTest, AuthorizedUserIsServedWithTheMethodAsVerb) {
  FilterFixture f;
  EXPECT_EQ(f.filter.Check("GET", "/metrics", "Bearer alice-token"), std::nullopt);
  EXPECT_EQ(f.authz->last.user.name, "alice");
  EXPECT_EQ(f.authz->last.user.uid, "1");
  EXPECT_EQ(f.authz->last.verb, "get");
  EXPECT_EQ(f.authz->last.path, "/metrics");
  f.filter.Check("PUT", "/debug/flags/v", "Bearer alice-token");
  EXPECT_EQ(f.authz->last.verb, "put");
  EXPECT_EQ(f.authz->last.path, "/debug/flags/v");
  f.filter.Check("HEAD", "/metrics", "Bearer alice-token");
  EXPECT_EQ(f.authz->last.verb, "head");
}

TEST(FilterTest, DeniedIs403WithKubeApiserversMessage) {
  FilterFixture f;
  auto rejection = f.filter.Check("GET", "/configz", "Bearer alice-token");
  ASSERT_TRUE(rejection.has_value());
  EXPECT_EQ(rejection->status, 403);
  EXPECT_EQ(json::parse(rejection->body), json::parse(R"({"kind":"Status","apiVersion":"v1",
    "metadata":{},"status":"Failure",
    "message":"forbidden: User \"alice\" cannot get path \"/configz\"",
    "reason":"Forbidden","details":{},"code":403})"));

  // The authorizer's reason follows the message; markup in the path is escaped.
  rejection = f.filter.Check("POST", "/metrics<b>", "Bearer bob-token");
  ASSERT_TRUE(rejection.has_value());
  EXPECT_EQ(json::parse(rejection->body)["message"],
            "forbidden: User \"bob\" cannot post path \"/metrics&lt;b&gt;\": no RBAC policy "
            "matched");
}

// A decoded path may hold any byte, and the method is the client's too: the message escapes the
// path as Go's %q does and the Status stays JSON (fuzz corpus auth/crash-path-not-utf8).
TEST(FilterTest, DeniedPathOrMethodNotUtf8IsStill403) {
  FilterFixture f;
  auto rejection = f.filter.Check("G\xFFT", "/metrics\xD8", "Bearer bob-token");
  ASSERT_TRUE(rejection.has_value());
  EXPECT_EQ(rejection->status, 403);
  EXPECT_EQ(f.authz->last.path, "/metrics\xD8");
  EXPECT_EQ(json::parse(rejection->body)["message"],
            "forbidden: User \"bob\" cannot g\xEF\xBF\xBDt path \"/metrics\\xd8\": no RBAC "
            "policy matched");
}

TEST(FilterTest, NoDecisionIs500) {
  FilterFixture f;
  auto rejection = f.filter.Check("GET", "/sar-error", "Bearer alice-token");
  ASSERT_TRUE(rejection.has_value());
  EXPECT_EQ(rejection->status, 500);
  EXPECT_EQ(rejection->body,
            "Internal Server Error: \"/sar-error\": subjectaccessreviews is forbidden\n");
}

TEST(FilterTest, WildcardAlwaysAllowPathsCoverDebugEndpoints) {
  auto authn = std::make_shared<FakeAuthenticator>();
  auto authz = std::make_shared<FakeAuthorizer>();
  Filter filter(authn, authz, PathMatcher({"/healthz", "/debug/*"}));
  EXPECT_EQ(filter.Check("GET", "/debug/pprof/profile", ""), std::nullopt);
  EXPECT_EQ(filter.Check("GET", "/readyz", "")->status, 401) << "no longer on the list";
  EXPECT_EQ(authn->calls, 0);
}

// The log lines `check` writes, with Berth's logger installed at V(4) in `format`.
std::vector<std::string> LoggedLines(log::Format format, const std::function<void()>& check) {
  std::ostringstream out;
  log::Setup(format, 4, std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  check();
  spdlog::default_logger()->flush();
  log::Setup(log::Format::kText, 0);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// GET /x%1Euser%1Fadmin, decoded: the bytes Berth's logger once took for its field separators.
TEST(FilterTest, ALoggedPathCannotForgeAField) {
  const std::string path =
      "/x\x1euser\x1f"
      "admin";
  FilterFixture f;
  auto invalid = [&] { EXPECT_EQ(f.filter.Check("GET", path, "Bearer nobody")->status, 401); };
  auto unreviewed = [&] { EXPECT_EQ(f.filter.Check("GET", path, "Bearer error")->status, 401); };

  std::vector<std::string> text = LoggedLines(log::Format::kText, invalid);
  ASSERT_EQ(text.size(), 1u);
  EXPECT_NE(text[0].find(" T invalid bearer token path=\"/x\\u001euser\\u001fadmin\""),
            std::string::npos)
      << text[0];
  EXPECT_EQ(text[0].find(" user="), std::string::npos) << text[0];

  for (const std::function<void()>& check :
       std::vector<std::function<void()>>{invalid, unreviewed}) {
    std::vector<std::string> lines = LoggedLines(log::Format::kJson, check);
    ASSERT_EQ(lines.size(), 1u);
    json record = json::parse(lines[0]);
    EXPECT_EQ(record["path"], path);
    EXPECT_FALSE(record.contains("user")) << lines[0];
  }
}

}  // namespace
}  // namespace berth::server::auth
