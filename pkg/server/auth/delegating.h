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
#include "pkg/server/auth/interface.h"
#include "pkg/server/auth/ttl_cache.h"
#include "pkg/util/clock.h"

namespace berth::server::auth {

// kube-apiserver's defaults for delegated authentication and authorization: short enough that a
// revoked token or a removed binding stops working within seconds, long enough to absorb a storm.
inline constexpr std::chrono::seconds kDefaultCacheTtl{10};
// How many distinct tokens, and distinct (user, verb, path) decisions, are remembered.
inline constexpr size_t kCacheCapacity = 4096;

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

// Remembers valid and invalid tokens for `ttl`, keyed by an HMAC-SHA256 of the token under a key
// drawn at start: the token itself is kept nowhere, and the keys mean nothing outside this
// process. Failures to get an answer are not remembered.
class CachedTokenAuthenticator : public TokenAuthenticator {
 public:
  CachedTokenAuthenticator(std::unique_ptr<TokenAuthenticator> delegate,
                           std::chrono::nanoseconds ttl, const util::Clock& clock);
  std::optional<UserInfo> AuthenticateToken(const std::string& token) override;

 private:
  std::string Key(const std::string& token) const;

  std::unique_ptr<TokenAuthenticator> delegate_;
  const std::chrono::nanoseconds ttl_;
  std::string hmac_key_;
  TtlCache<std::optional<UserInfo>> cache_;
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

// Remembers allowed decisions for `allowed_ttl` and denied ones for `denied_ttl`; failures to get
// a decision are not remembered.
class CachedAuthorizer : public Authorizer {
 public:
  CachedAuthorizer(std::unique_ptr<Authorizer> delegate, std::chrono::nanoseconds allowed_ttl,
                   std::chrono::nanoseconds denied_ttl, const util::Clock& clock);
  Decision Authorize(const Attributes& attributes) override;

 private:
  std::unique_ptr<Authorizer> delegate_;
  const std::chrono::nanoseconds allowed_ttl_;
  const std::chrono::nanoseconds denied_ttl_;
  TtlCache<Decision> cache_;
};

}  // namespace berth::server::auth

#endif  // BERTH_PKG_SERVER_AUTH_DELEGATING_H_
