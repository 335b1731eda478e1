#include "pkg/server/auth/delegating.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <vector>

#include "test/testing/unused_client.h"

namespace berth::server::auth {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

// Answers POSTs with `answer(path, body)` and records what was sent.
class ReviewClient : public testing::UnusedClient {
 public:
  explicit ReviewClient(std::function<json(const std::string&, const json&)> answer)
      : answer_(std::move(answer)) {}
  json Post(const std::string& path, const json& body) override {
    std::lock_guard lock(mu_);
    posts_.push_back({path, body});
    return answer_(path, body);
  }
  std::vector<std::pair<std::string, json>> posts() {
    std::lock_guard lock(mu_);
    return posts_;
  }

 private:
  std::function<json(const std::string&, const json&)> answer_;
  std::mutex mu_;
  std::vector<std::pair<std::string, json>> posts_;
};

// ---- TtlCache ----------------------------------------------------------------------------------

TEST(TtlCacheTest, ValuesExpireAfterTheirTtl) {
  util::FakeClock clock;
  TtlCache<int> cache(clock, 10);
  cache.Put("a", 1, seconds(10));
  cache.Put("b", 2, seconds(2));
  clock.Step(seconds(1));
  EXPECT_EQ(cache.Get("a"), 1);
  EXPECT_EQ(cache.Get("b"), 2);
  clock.Step(seconds(1));
  EXPECT_EQ(cache.Get("b"), std::nullopt);
  clock.Step(seconds(7));
  EXPECT_EQ(cache.Get("a"), 1);
  clock.Step(seconds(1));
  EXPECT_EQ(cache.Get("a"), std::nullopt);
  EXPECT_EQ(cache.Size(), 0u);
}

TEST(TtlCacheTest, ReplacingAKeyRestartsItsTtlAndZeroTtlStoresNothing) {
  util::FakeClock clock;
  TtlCache<int> cache(clock, 10);
  cache.Put("a", 1, seconds(2));
  clock.Step(seconds(1));
  cache.Put("a", 5, seconds(2));
  clock.Step(seconds(1));
  EXPECT_EQ(cache.Get("a"), 5);
  cache.Put("z", 1, seconds(0));
  EXPECT_EQ(cache.Get("z"), std::nullopt);
  EXPECT_EQ(cache.Size(), 1u);
}

TEST(TtlCacheTest, WhenFullExpiredEntriesGoFirstThenTheNextToExpire) {
  util::FakeClock clock;
  TtlCache<int> cache(clock, 3);
  cache.Put("short", 1, seconds(1));
  cache.Put("long", 2, seconds(100));
  cache.Put("mid", 3, seconds(50));
  clock.Step(seconds(2));  // "short" expired.
  cache.Put("new", 4, seconds(100));
  EXPECT_EQ(cache.Size(), 3u);
  EXPECT_EQ(cache.Get("long"), 2);
  EXPECT_EQ(cache.Get("mid"), 3);
  // Full of live entries: the one closest to expiry makes room.
  cache.Put("newer", 5, seconds(100));
  EXPECT_EQ(cache.Size(), 3u);
  EXPECT_EQ(cache.Get("mid"), std::nullopt);
  EXPECT_EQ(cache.Get("long"), 2);
  EXPECT_EQ(cache.Get("new"), 4);
  EXPECT_EQ(cache.Get("newer"), 5);
}

// ---- TokenReview -------------------------------------------------------------------------------

json Authenticated(const json& user) {
  return {{"kind", "TokenReview"}, {"status", {{"authenticated", true}, {"user", user}}}};
}

TEST(TokenReviewAuthenticatorTest, PostsTheTokenAndReadsTheUser) {
  auto client = std::make_shared<ReviewClient>([](const std::string&, const json&) {
    return Authenticated({{"username", "system:serviceaccount:monitoring:prometheus"},
                          {"uid", "u-1"},
                          {"groups", {"system:serviceaccounts", "system:authenticated"}},
                          {"extra", {{"authentication.kubernetes.io/pod-name", {"prom-0"}}}}});
  });
  TokenReviewAuthenticator authenticator(client);
  auto user = authenticator.AuthenticateToken("tok3n");
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->name, "system:serviceaccount:monitoring:prometheus");
  EXPECT_EQ(user->uid, "u-1");
  EXPECT_EQ(user->groups,
            (std::vector<std::string>{"system:serviceaccounts", "system:authenticated"}));
  EXPECT_EQ(user->extra.at("authentication.kubernetes.io/pod-name"),
            std::vector<std::string>{"prom-0"});
  ASSERT_EQ(client->posts().size(), 1u);
  EXPECT_EQ(client->posts()[0].first, "/apis/authentication.k8s.io/v1/tokenreviews");
  EXPECT_EQ(client->posts()[0].second, json({{"apiVersion", "authentication.k8s.io/v1"},
                                             {"kind", "TokenReview"},
                                             {"spec", {{"token", "tok3n"}}}}));
}

TEST(TokenReviewAuthenticatorTest, UnauthenticatedOrNamelessIsNotAUser) {
  for (const json& answer :
       {json({{"status", {{"authenticated", false}, {"error", "token expired"}}}}),
        json({{"status", {{"authenticated", true}, {"user", json::object()}}}}), json::object()}) {
    auto client =
        std::make_shared<ReviewClient>([&](const std::string&, const json&) { return answer; });
    EXPECT_EQ(TokenReviewAuthenticator(client).AuthenticateToken("t"), std::nullopt)
        << answer.dump();
  }
}

TEST(TokenReviewAuthenticatorTest, ApiErrorsPropagate) {
  auto client = std::make_shared<ReviewClient>([](const std::string&, const json&) -> json {
    throw client::ApiError(client::ErrorReason::kForbidden, 403, "cannot create tokenreviews");
  });
  EXPECT_THROW(TokenReviewAuthenticator(client).AuthenticateToken("t"), client::ApiError);
}

// Counts calls and answers from a table of tokens; "boom" throws.
class TableAuthenticator : public TokenAuthenticator {
 public:
  std::optional<UserInfo> AuthenticateToken(const std::string& token) override {
    calls++;
    if (token == "boom") throw std::runtime_error("apiserver unreachable");
    if (token == "good") return UserInfo{"alice", "", {"g"}, {}};
    return std::nullopt;
  }
  int calls = 0;
};

TEST(CachedTokenAuthenticatorTest, RemembersAnswersForTheTtlButNotErrors) {
  util::FakeClock clock;
  auto table = std::make_unique<TableAuthenticator>();
  TableAuthenticator* calls = table.get();
  CachedTokenAuthenticator cached(std::move(table), seconds(10), clock);

  EXPECT_EQ(cached.AuthenticateToken("good")->name, "alice");
  EXPECT_EQ(cached.AuthenticateToken("good")->name, "alice");
  EXPECT_EQ(cached.AuthenticateToken("bad"), std::nullopt);
  EXPECT_EQ(cached.AuthenticateToken("bad"), std::nullopt);
  EXPECT_EQ(calls->calls, 2) << "one review per distinct token within the TTL";

  EXPECT_THROW(cached.AuthenticateToken("boom"), std::runtime_error);
  EXPECT_THROW(cached.AuthenticateToken("boom"), std::runtime_error);
  EXPECT_EQ(calls->calls, 4) << "a failed review is asked again";

  clock.Step(seconds(10));
  EXPECT_EQ(cached.AuthenticateToken("good")->name, "alice");
  EXPECT_EQ(calls->calls, 5) << "asked again once the TTL passed";
}

// Valid and invalid tokens are kept apart: a client sending endless distinct bogus tokens evicts
// only other bogus ones, and the scraper's token stays answered from memory.
TEST(CachedTokenAuthenticatorTest, UniqueBogusTokensNeverEvictAValidOne) {
  util::FakeClock clock;
  auto table = std::make_unique<TableAuthenticator>();
  TableAuthenticator* calls = table.get();
  CachedTokenAuthenticator cached(std::move(table), seconds(10), clock);
  EXPECT_EQ(cached.AuthenticateToken("good")->name, "alice");
  for (size_t i = 0; i < 2 * kCacheCapacity; i++) {
    clock.Step(std::chrono::microseconds(1));
    EXPECT_EQ(cached.AuthenticateToken("bogus-" + std::to_string(i)), std::nullopt);
  }
  const int reviews = calls->calls;
  EXPECT_EQ(cached.AuthenticateToken("good")->name, "alice");
  EXPECT_EQ(calls->calls, reviews) << "the valid token was evicted by the bogus ones";
}

// ---- SubjectAccessReview -----------------------------------------------------------------------

Attributes Prometheus() {
  return {{"system:serviceaccount:monitoring:prometheus",
           "u-1",
           {"system:serviceaccounts", "system:authenticated"},
           {{"authentication.kubernetes.io/pod-name", {"prom-0"}}}},
          "get",
          "/metrics"};
}

TEST(SubjectAccessReviewAuthorizerTest, PostsTheUserAndNonResourceAttributes) {
  auto client = std::make_shared<ReviewClient>([](const std::string&, const json&) {
    return json(
        {{"status", {{"allowed", true}, {"reason", "RBAC: allowed by ClusterRoleBinding"}}}});
  });
  Decision decision = SubjectAccessReviewAuthorizer(client).Authorize(Prometheus());
  EXPECT_TRUE(decision.allowed);
  EXPECT_EQ(decision.reason, "RBAC: allowed by ClusterRoleBinding");
  ASSERT_EQ(client->posts().size(), 1u);
  EXPECT_EQ(client->posts()[0].first, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
  EXPECT_EQ(client->posts()[0].second, json::parse(R"({
    "apiVersion": "authorization.k8s.io/v1",
    "kind": "SubjectAccessReview",
    "spec": {
      "user": "system:serviceaccount:monitoring:prometheus",
      "uid": "u-1",
      "groups": ["system:serviceaccounts", "system:authenticated"],
      "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]},
      "nonResourceAttributes": {"path": "/metrics", "verb": "get"}
    }})"));
}

TEST(SubjectAccessReviewAuthorizerTest, DeniedUnlessAllowedAndNotDenied) {
  struct Case {
    json status;
    bool allowed;
  };
  for (const Case& c : {Case{json::object(), false}, Case{{{"allowed", false}}, false},
                        Case{{{"allowed", true}, {"denied", true}}, false},
                        Case{{{"allowed", false}, {"denied", true}, {"reason", "no"}}, false},
                        Case{{{"allowed", true}}, true}}) {
    auto client = std::make_shared<ReviewClient>([&](const std::string&, const json&) {
      return json({{"status", c.status}});
    });
    EXPECT_EQ(SubjectAccessReviewAuthorizer(client).Authorize(Prometheus()).allowed, c.allowed)
        << c.status.dump();
  }
}

// The client encodes a review with nlohmann's dump, which throws on bytes that are not UTF-8; a
// request's path, method and token may hold any (fuzz corpus auth/crash-path-not-utf8).
TEST(SubjectAccessReviewAuthorizerTest, BytesThatAreNotUtf8AreSentAsU_FFFD) {
  auto client = std::make_shared<ReviewClient>([](const std::string&, const json& body) {
    body.dump();
    return json({{"status",
                  {{"authenticated", true}, {"user", {{"username", "jane"}}}, {"allowed", true}}}});
  });
  util::FakeClock clock;
  CachedAuthorizer authorizer(std::make_unique<SubjectAccessReviewAuthorizer>(client), seconds(10),
                              seconds(10), clock);
  const Attributes attributes{{"jane", "", {}, {}}, "g\xC0t", "/metrics\xFF\xD8x"};
  EXPECT_TRUE(authorizer.Authorize(attributes).allowed);
  EXPECT_EQ(client->posts().at(0).second["spec"]["nonResourceAttributes"],
            json::parse(R"({"path": "/metrics\ufffd\ufffdx", "verb": "g\ufffdt"})"));

  CachedTokenAuthenticator authenticator(std::make_unique<TokenReviewAuthenticator>(client),
                                         seconds(10), clock);
  EXPECT_EQ(authenticator.AuthenticateToken(std::string("a\xFF") + "b")->name, "jane");
  EXPECT_EQ(client->posts().at(1).second["spec"]["token"], std::string("a\xEF\xBF\xBD") + "b");
}

// Allows alice to get "/metrics", nothing else; "/boom" throws. Counts calls.
class TableAuthorizer : public Authorizer {
 public:
  Decision Authorize(const Attributes& a) override {
    calls++;
    if (a.path == "/boom") throw std::runtime_error("apiserver unreachable");
    return {a.user.name == "alice" && a.verb == "get" && a.path == "/metrics", "table"};
  }
  int calls = 0;
};

TEST(CachedAuthorizerTest, AllowedAndDeniedHaveTheirOwnTtlsErrorsNone) {
  util::FakeClock clock;
  auto table = std::make_unique<TableAuthorizer>();
  TableAuthorizer* calls = table.get();
  CachedAuthorizer cached(std::move(table), seconds(10), seconds(3), clock);
  const Attributes alice{{"alice", "", {}, {}}, "get", "/metrics"};
  const Attributes bob{{"bob", "", {}, {}}, "get", "/metrics"};
  EXPECT_TRUE(cached.Authorize(alice).allowed);
  EXPECT_FALSE(cached.Authorize(bob).allowed);
  EXPECT_TRUE(cached.Authorize(alice).allowed);
  EXPECT_FALSE(cached.Authorize(bob).allowed);
  EXPECT_EQ(calls->calls, 2);

  // Every attribute is part of the key: another verb, path or group is a new question.
  Attributes alice_put = alice;
  alice_put.verb = "put";
  EXPECT_FALSE(cached.Authorize(alice_put).allowed);
  Attributes alice_grouped = alice;
  alice_grouped.user.groups = {"admins"};
  EXPECT_TRUE(cached.Authorize(alice_grouped).allowed);
  EXPECT_EQ(calls->calls, 4);

  clock.Step(seconds(3));
  EXPECT_FALSE(cached.Authorize(bob).allowed);
  EXPECT_TRUE(cached.Authorize(alice).allowed);
  EXPECT_EQ(calls->calls, 5) << "the denial expired, the allowance did not";

  const Attributes boom{{"alice", "", {}, {}}, "get", "/boom"};
  EXPECT_THROW(cached.Authorize(boom), std::runtime_error);
  EXPECT_THROW(cached.Authorize(boom), std::runtime_error);
  EXPECT_EQ(calls->calls, 7);
}

// A user asking about endless distinct paths fills only the cache of denials.
TEST(CachedAuthorizerTest, DenialsNeverEvictAnAllowance) {
  util::FakeClock clock;
  auto table = std::make_unique<TableAuthorizer>();
  TableAuthorizer* calls = table.get();
  CachedAuthorizer cached(std::move(table), seconds(10), seconds(10), clock);
  const Attributes alice{{"alice", "", {}, {}}, "get", "/metrics"};
  EXPECT_TRUE(cached.Authorize(alice).allowed);
  for (size_t i = 0; i < 2 * kCacheCapacity; i++) {
    clock.Step(std::chrono::microseconds(1));
    EXPECT_FALSE(cached.Authorize({alice.user, "get", "/x" + std::to_string(i)}).allowed);
  }
  const int reviews = calls->calls;
  EXPECT_TRUE(cached.Authorize(alice).allowed);
  EXPECT_EQ(calls->calls, reviews) << "the allowance was evicted by the denials";
}

// ---- NewDelegatingFilter -----------------------------------------------------------------------

// An apiserver that knows one token, alice's, and allows her to get /metrics only.
json Review(const std::string& path, const json& body) {
  if (path == "/apis/authentication.k8s.io/v1/tokenreviews") {
    if (body["spec"]["token"] != "alice-token") return json({{"status", json::object()}});
    return Authenticated({{"username", "alice"}});
  }
  return json(
      {{"status", {{"allowed", body["spec"]["nonResourceAttributes"]["path"] == "/metrics"}}}});
}

size_t PostsTo(ReviewClient& client, const std::string& path) {
  const auto posts = client.posts();
  return std::count_if(posts.begin(), posts.end(),
                       [&](const auto& post) { return post.first == path; });
}

constexpr char kTokenReviews[] = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr char kSubjectAccessReviews[] = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

TEST(NewDelegatingFilterTest, EachReviewGoesThroughItsOwnClient) {
  auto authn = std::make_shared<ReviewClient>(Review);
  auto authz = std::make_shared<ReviewClient>(Review);
  util::FakeClock clock;
  auto filter = NewDelegatingFilter({authn, authz}, PathMatcher(DefaultAlwaysAllowPaths()), clock);
  EXPECT_EQ(filter->Check("GET", "/metrics", "Bearer alice-token"), std::nullopt);
  EXPECT_EQ(filter->Check("GET", "/configz", "Bearer alice-token")->status, 403);
  EXPECT_EQ(filter->Check("GET", "/metrics", "Bearer mallory")->status, 401);
  EXPECT_EQ(filter->Check("GET", "/healthz", ""), std::nullopt);
  EXPECT_EQ(PostsTo(*authn, kTokenReviews), 2u);
  EXPECT_EQ(authn->posts().size(), 2u);
  EXPECT_EQ(PostsTo(*authz, kSubjectAccessReviews), 2u);
  EXPECT_EQ(authz->posts().size(), 2u);
}

TEST(NewDelegatingFilterTest, DefaultTtlsAreTenSeconds) {
  auto client = std::make_shared<ReviewClient>(Review);
  util::FakeClock clock;
  auto filter = NewDelegatingFilter({client, client}, PathMatcher({}), clock);
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 3; i++) {
      EXPECT_EQ(filter->Check("GET", "/metrics", "Bearer alice-token"), std::nullopt);
      EXPECT_EQ(filter->Check("GET", "/configz", "Bearer alice-token")->status, 403);
      EXPECT_EQ(filter->Check("GET", "/metrics", "Bearer mallory")->status, 401);
    }
    EXPECT_EQ(PostsTo(*client, kTokenReviews), 2u * (round + 1));
    EXPECT_EQ(PostsTo(*client, kSubjectAccessReviews), 2u * (round + 1));
    clock.Step(kDefaultCacheTtl);
  }
}

// --authentication-token-webhook-cache-ttl, --authorization-webhook-cache-authorized-ttl and
// --authorization-webhook-cache-unauthorized-ttl: zero (or less, as upstream) remembers nothing.
TEST(NewDelegatingFilterTest, AZeroTtlSendsEveryRequestForReview) {
  struct Case {
    std::chrono::nanoseconds token, authorized, unauthorized;
    size_t token_reviews, allowed_reviews, denied_reviews;
  };
  const std::chrono::nanoseconds zero{0}, ten = seconds(10), negative = -seconds(1);
  for (const Case& c :
       {Case{zero, ten, ten, 6, 1, 1}, Case{ten, zero, ten, 3, 2, 1}, Case{ten, ten, zero, 3, 1, 2},
        Case{negative, negative, negative, 6, 2, 2}, Case{ten, ten, ten, 3, 1, 1}}) {
    auto authn = std::make_shared<ReviewClient>(Review);
    auto allowed = std::make_shared<ReviewClient>(Review);
    auto denied = std::make_shared<ReviewClient>(Review);
    util::FakeClock clock;
    DelegatingOptions options{authn, allowed, c.token, c.authorized, c.unauthorized};
    auto filter = NewDelegatingFilter(options, PathMatcher({}), clock);
    for (int i = 0; i < 2; i++) {
      EXPECT_EQ(filter->Check("GET", "/metrics", "Bearer alice-token"), std::nullopt);
      EXPECT_EQ(filter->Check("GET", "/metrics", "Bearer mallory")->status, 401);
    }
    options.subject_access_review_client = denied;
    auto denying = NewDelegatingFilter(options, PathMatcher({}), clock);
    for (int i = 0; i < 2; i++) {
      EXPECT_EQ(denying->Check("GET", "/configz", "Bearer alice-token")->status, 403);
    }
    const std::string ttls = std::to_string(c.token.count()) + "/" +
                             std::to_string(c.authorized.count()) + "/" +
                             std::to_string(c.unauthorized.count());
    EXPECT_EQ(PostsTo(*authn, kTokenReviews), c.token_reviews) << ttls;
    EXPECT_EQ(PostsTo(*allowed, kSubjectAccessReviews), c.allowed_reviews) << ttls;
    EXPECT_EQ(PostsTo(*denied, kSubjectAccessReviews), c.denied_reviews) << ttls;
  }
}

}  // namespace
}  // namespace berth::server::auth
