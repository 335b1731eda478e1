#ifndef BERTH_PKG_SERVER_AUTH_DELEGATING_H_
#define BERTH_PKG_SERVER_AUTH_DELEGATING_H_

// Authentication and authorization delegated to kube-apiserver, as kube-scheduler does it:
// TokenReview (authentication.k8s.io/v1) for bearer tokens and SubjectAccessReview
// (authorization.k8s.io/v1) with nonResourceAttributes for each path and verb, each answer cached
// for a short while so a scrape every few seconds costs the apiserver nothing most of the time.
// The scheduler's identity needs `create` on tokenreviews and subjectaccessreviews.

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "pkg/client/client.h"
#include "pkg/server/auth/filter.h"
#include "pkg/server/auth/interface.h"
#include "pkg/server/auth/ttl_cache.h"
#include "pkg/util/clock.h"

namespace berth::server::auth {

// kube-apiserver's defaults for delegated authentication and authorization: short enough that a
// revoked token or a removed binding stops working within seconds, long enough to absorb a storm.
// kube-scheduler's --authentication-token-webhook-cache-ttl,
// --authorization-webhook-cache-authorized-ttl and --authorization-webhook-cache-unauthorized-ttl
// change them.
inline constexpr std::chrono::seconds kDefaultCacheTtl{10};
// How many valid tokens, and allowed (user, verb, path) decisions, are remembered.
inline constexpr size_t kCacheCapacity = 4096;
// How many invalid tokens, and denied decisions, are remembered: apart from the valid ones, so a
// client sending endless distinct bogus tokens (or paths) evicts only other refusals, never the
// token or decision a legitimate scraper was given.
inline constexpr size_t kNegativeCacheCapacity = 1024;

// The SubjectAccessReview's spec for these attributes (also the authorization cache's key). Bytes
// of the path or verb that are not UTF-8 become U+FFFD, as kube-scheduler's Go client sends them.
nlohmann::json SubjectAccessReviewSpec(const Attributes& attributes);

// Asks the apiserver with a TokenReview. Any authenticated answer is a user; the review's own
// error (an expired token, say) is a plain "not valid".
class TokenReviewAuthenticator : public TokenAuthenticator {
 public:
  explicit TokenReviewAuthenticator(std::shared_ptr<client::Client> client)
      : client_(std::move(client)) {}
  std::optional<UserInfo> AuthenticateToken(const std::string& token) override;

 private:
  std::shared_ptr<client::Client> client_;
};

// Remembers valid and invalid tokens for `ttl`, in caches of their own (kCacheCapacity and
// kNegativeCacheCapacity), keyed by an HMAC-SHA256 of the token under a key drawn at start: the
// token itself is kept nowhere, and the keys mean nothing outside this process. Failures to get an
// answer are not remembered.
class CachedTokenAuthenticator : public TokenAuthenticator {
 public:
  CachedTokenAuthenticator(std::unique_ptr<TokenAuthenticator> delegate,
                           std::chrono::nanoseconds ttl, const util::Clock& clock);
  std::optional<UserInfo> AuthenticateToken(const std::string& token) override;
  bool AuthenticateCached(const std::string& token, std::optional<UserInfo>* user) override;

 private:
  std::string Key(const std::string& token) const;
  bool Lookup(const std::string& key, std::optional<UserInfo>* user);

  std::unique_ptr<TokenAuthenticator> delegate_;
  const std::chrono::nanoseconds ttl_;
  std::string hmac_key_;
  TtlCache<UserInfo> valid_;
  TtlCache<bool> invalid_;  // Only the key matters.
};

// Asks the apiserver with a SubjectAccessReview for the user, uid, groups and extra the token
// named, and nonResourceAttributes {path, verb}.
class SubjectAccessReviewAuthorizer : public Authorizer {
 public:
  explicit SubjectAccessReviewAuthorizer(std::shared_ptr<client::Client> client)
      : client_(std::move(client)) {}
  Decision Authorize(const Attributes& attributes) override;

 private:
  std::shared_ptr<client::Client> client_;
};

// Remembers allowed decisions for `allowed_ttl` and denied ones for `denied_ttl`, each in a cache
// of its own (kCacheCapacity and kNegativeCacheCapacity); failures to get a decision are not
// remembered.
class CachedAuthorizer : public Authorizer {
 public:
  CachedAuthorizer(std::unique_ptr<Authorizer> delegate, std::chrono::nanoseconds allowed_ttl,
                   std::chrono::nanoseconds denied_ttl, const util::Clock& clock);
  Decision Authorize(const Attributes& attributes) override;
  bool AuthorizeCached(const Attributes& attributes, Decision* decision) override;

 private:
  bool Lookup(const std::string& key, Decision* decision);

  std::unique_ptr<Authorizer> delegate_;
  const std::chrono::nanoseconds allowed_ttl_;
  const std::chrono::nanoseconds denied_ttl_;
  TtlCache<Decision> allowed_;
  TtlCache<Decision> denied_;
};

// Where the reviews go and how long their answers are kept. A TTL of zero or less keeps none, so
// every request is reviewed (kube-apiserver caches only positive TTLs).
struct DelegatingOptions {
  // TokenReviews: kube-scheduler's --authentication-kubeconfig, else its own connection.
  std::shared_ptr<client::Client> token_review_client;
  // SubjectAccessReviews: --authorization-kubeconfig, else its own connection.
  std::shared_ptr<client::Client> subject_access_review_client;
  std::chrono::nanoseconds token_ttl = kDefaultCacheTtl;
  std::chrono::nanoseconds authorized_ttl = kDefaultCacheTtl;
  std::chrono::nanoseconds unauthorized_ttl = kDefaultCacheTtl;
};

// The secure port's filter: bearer tokens reviewed, and requests authorized, by the apiserver
// through those clients, each answer cached as the options say. `clock` must outlive the filter.
std::shared_ptr<Filter> NewDelegatingFilter(const DelegatingOptions& options,
                                            PathMatcher always_allow, const util::Clock& clock);

}  // namespace berth::server::auth

#endif  // BERTH_PKG_SERVER_AUTH_DELEGATING_H_
